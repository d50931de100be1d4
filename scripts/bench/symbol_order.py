"""The link order of the gateway's hot functions (link/symbol-order.txt),
from callgrind dumps of the gateway serving requests.

    python3 scripts/bench/symbol_order.py REQUESTS DUMP... > link/symbol-order.txt
    python3 scripts/bench/symbol_order.py --coverage BINARY link/symbol-order.txt

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
request on a cold core pays for. A name the binary no longer has is skipped
by the linker; --coverage says how many of the listed names a binary has.
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


def coverage(binary, listing):
    names = {n.strip() for n in open(listing) if n.strip()}
    out = subprocess.run(["nm", "--defined-only", binary], check=True, capture_output=True, text=True).stdout
    present = {parts[2] for parts in (line.split() for line in out.splitlines()) if len(parts) == 3}
    return len(names & present), len(names)


def main(argv):
    if len(argv) == 3 and argv[0] == "--coverage":
        have, listed = coverage(argv[1], argv[2])
        print(f"{have} of the {listed} functions listed in {argv[2]} are in {argv[1]}")
        return 0
    if len(argv) < 2 or not argv[0].isdigit():
        sys.exit(__doc__.split("\n\n")[1])
    for name in order(int(argv[0]), argv[1:]):
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
