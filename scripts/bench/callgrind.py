"""Reading callgrind dumps, for scripts/bench/code_lines.py and
symbol_order.py: each cost line that is a function's own cost (not a
call's inclusive cost), with its object, function and positions.

Dumps as scripts/bench/instructions.sh writes them: --compress-strings=no
and --compress-pos=no, so names and positions are written out in full.
The `positions:` header says what a cost line starts with: `line`
(the default) or `instr line` (--dump-instr=yes); the cost follows.
"""


def own_costs(path):
    """Yields (program, object, function, positions, cost) for every own
    cost line of the dump; `positions` is the tuple of the line's position
    fields (strings: `0x...` for an address, a number for a source line)."""
    npos, program, obj, fn, after_call = 1, None, None, None, False
    with open(path) as f:
        for line in f:
            if line.startswith("positions:"):
                npos = len(line.split()) - 1
            elif line.startswith("cmd:"):
                program = line.split()[1].rsplit("/", 1)[-1]
            elif line.startswith("ob="):
                obj = line[3:].strip().rsplit("/", 1)[-1]
            elif line.startswith("fn="):
                fn = line[3:].strip()
            elif line.startswith("calls="):
                after_call = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                fields = line.split()
                if len(fields) <= npos:
                    continue
                if after_call:  # a call's inclusive cost, not the caller's own
                    after_call = False
                    continue
                if fn is not None:
                    yield program, obj, fn, tuple(fields[:npos]), int(fields[npos])
