"""The link order of the gateway's hot functions (link/symbol-order.txt),
from callgrind dumps of the gateway serving requests.

    python3 scripts/bench/symbol_order.py REQUESTS DUMP... > link/symbol-order.txt
    python3 scripts/bench/symbol_order.py --check BINARY link/symbol-order.txt [MIN_PERCENT]

The dumps are what `scripts/bench/instructions.sh --mangled --keep DIR`
writes (callgrind with --demangle=no, so the names are the linker's). First
the functions whose own cost in a dump's window is at least REQUESTS / 2
instructions, those that ran in (nearly) every request; then every other
function that ran in a window (a connection's start and end, timers, the
allocator's refills). Within each group, each dump's functions by their own
cost, the first dump's first; each name once. Only functions of the
gateway's own binary are listed.

build.rs hands the list to the linker (lld's --symbol-ordering-file), which
places those functions next to each other: the code a request runs then
sits on about half as many pages (`instructions.sh --lines`), which a
request on a cold core pays for.

The names are rustc's default (legacy) symbol names, the only form lld
matches (exactly: no patterns, no demangled names). They stay the same
from build to build, and in a checkout in any folder, while the code they
name, Cargo.lock and the toolchain stay the same: a hash in each name
covers the crate's dependencies and the compiler, and a `.llvm.N` suffix
(a local function that ThinLTO made global) the code of its crate. So a
refactor of the request path, a dependency update or a new toolchain
renames some or all of them, and the linker skips a name the binary no
longer has. --check (scripts/test.sh, after the release build) fails when
fewer than MIN_PERCENT (default 90) of the listed names are symbols of
BINARY, or when the listed functions that are there are not laid out in
the listed order (the linker did not apply it; at least 95 % of
consecutive pairs must be): then run
scripts/bench/symbol_order.sh to write the list again.
"""

import subprocess
import sys

from callgrind import own_costs


def program_costs(path):
    """{function: own cost} for the functions of the profiled program."""
    costs = {}
    for program, obj, fn, _, cost in own_costs(path):
        if obj == program:
            costs[fn] = costs.get(fn, 0) + cost
    return costs


def order(requests, dumps):
    """The functions of every request first, then the others that ran."""
    costs = [program_costs(dump) for dump in dumps]
    listed, seen = [], set()
    for every_request in (True, False):
        for dump_costs in costs:
            for fn, cost in sorted(dump_costs.items(), key=lambda kv: (-kv[1], kv[0])):
                if cost > 0 and (cost >= requests / 2) == every_request and fn not in seen:
                    seen.add(fn)
                    listed.append(fn)
    return listed


def symbols(binary):
    """{name: address} of the symbols BINARY defines (its symbol table)."""
    out = subprocess.run(["nm", "--defined-only", binary], check=True, capture_output=True, text=True).stdout
    addresses = {}
    for parts in (line.split() for line in out.splitlines()):
        if len(parts) == 3:
            addresses.setdefault(parts[2], int(parts[0], 16))
    return addresses


def check(binary, listing, least):
    """Exit status 0 when at least `least` % of the listed names are symbols
    of `binary`, laid out in the listed order; prints what it found."""
    names = list(dict.fromkeys(n.strip() for n in open(listing) if n.strip()))
    addresses = symbols(binary)
    present = [n for n in names if n in addresses]
    missing = [n for n in names if n not in addresses]
    placed = [addresses[n] for n in present]
    # (Two names may share an address: functions LLVM merged into one.)
    in_order = sum(1 for a, b in zip(placed, placed[1:]) if b >= a)
    share = 100 * len(present) / len(names) if names else 0
    print(
        f"symbol order: {len(present)} of the {len(names)} functions listed in {listing} "
        f"({share:.1f} %) are symbols of {binary}; {in_order} of {max(len(placed) - 1, 0)} "
        "consecutive pairs of them in the listed order"
    )
    failed = []
    if share < least:
        failed.append(
            f"fewer than {least:g} % of the listed functions are in the binary: "
            "write the list again with bash scripts/bench/symbol_order.sh"
        )
    # lld places the listed functions first, in the listed order, so every
    # pair but a stray one (a C function sharing its section) is in order;
    # a binary linked without the list has about half of them.
    if len(placed) > 1 and in_order < 0.95 * (len(placed) - 1):
        failed.append(
            "the listed functions are not in the listed order: the list was not given to lld "
            "(build.rs gives it for x86_64 Linux with rustc 1.90 or later; TENSORGATE_SYMBOL_ORDER=off "
            "skips this check in scripts/test.sh), or the binary was linked with another list"
        )
    if not failed:
        return 0
    for name in missing[:10]:
        print(f"  not in the binary: {name}")
    if len(missing) > 10:
        print(f"  ... and {len(missing) - 10} more")
    for reason in failed:
        print(f"symbol order: {reason}")
    return 1


def main(argv):
    if len(argv) in (3, 4) and argv[0] == "--check":
        return check(argv[1], argv[2], float(argv[3]) if len(argv) == 4 else 90.0)
    if len(argv) < 2 or not argv[0].isdigit():
        sys.exit(__doc__.split("\n\n")[1])
    for name in order(int(argv[0]), argv[1:]):
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
