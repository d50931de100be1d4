"""Code footprint of a callgrind dump written with --dump-instr=yes: the
distinct 64-byte lines (and 4 KiB pages) of machine code that executed in
the dump's window, per object file and in all.

    python3 scripts/bench/code_lines.py DUMP [REQUESTS]

Requests that repeat one path execute the same code, so the distinct lines
over a window of many requests are what one request touches: the code a
cold request must bring into the instruction cache (and the pages into the
TLB) again after the core ran something else. With REQUESTS (the requests
in the window), a line counts only if one of its instructions ran at least
REQUESTS / 2 times: the code of (nearly) every request, without what ran
now and then in the window (timers, allocator refills, the background
tasks). Cost lines are read only
where callgrind gives their address (every line with --dump-instr=yes and
--compress-pos=no); the cost lines of calls (after `calls=`) are the
callee's inclusive cost at the call's address, already counted.
"""

import collections
import sys

from callgrind import own_costs


def footprint(path, least=1):
    """{object: set of 64-byte line numbers} of the instructions that ran at
    least `least` times."""
    lines = collections.defaultdict(set)
    for _, obj, _, positions, cost in own_costs(path):
        if cost >= least and positions[0].startswith("0x"):
            lines[obj].add(int(positions[0], 16) >> 6)
    return lines


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.split("\n\n")[1])
    lines = footprint(sys.argv[1], max(1, int(sys.argv[2]) // 2) if len(sys.argv) == 3 else 1)
    every = set().union(*lines.values()) if lines else set()
    pages = {line >> 6 for line in every}
    print(f"{len(every)} code lines of 64 bytes ({len(every) * 64 // 1024} KiB) in {len(pages)} pages of 4 KiB", end="")
    top = sorted(lines.items(), key=lambda kv: -len(kv[1]))[:3]
    print(": " + ", ".join(f"{obj.rsplit('/', 1)[-1]} {len(s)}" for obj, s in top))


if __name__ == "__main__":
    main()
