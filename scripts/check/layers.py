#!/usr/bin/env python3
"""The layering check: every module of the gateway crate imports only from
its own floor or the floors below it, as docs/ARCHITECTURE.md lists them,
and no two modules import each other, at the top level or among the
children of one module.

    python3 scripts/check/layers.py [--root DIR]

Reads every `crate::a::b` and `super::...` path in src/ (comments left
out), resolves `super::` against the file's own module, and fails (exit 1)
with one line per offending import: `src/x.rs:12: infer imports gateway
(floor 11 > floor 9)`. The floors are the lines of the fenced block after
the heading "## Floors" in docs/ARCHITECTURE.md, lowest first; each line
names the top-level modules of one floor. A module no floor names is an
error too, so a new module must be placed.
"""
import argparse
import collections
import os
import re
import sys

PATH = re.compile(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)*)(::\{)?")


def floors_from(architecture):
    text = open(architecture, encoding="utf-8").read()
    m = re.search(r"^## Floors\n.*?^```[a-z]*\n(.*?)^```", text, re.M | re.S)
    if not m:
        sys.exit(f"{architecture}: no fenced block after '## Floors'")
    floor_of = {}
    for i, line in enumerate(l for l in m.group(1).splitlines() if l.strip()):
        for name in line.split("#")[0].split():
            floor_of[name] = i
    return floor_of


def module_of(root, path):
    parts = os.path.relpath(path, root)[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return parts


def strip_comments(src):
    # Line comments only: doc links in `//!` and `///` are not imports.
    return re.sub(r"//[^\n]*", "", src)


def imports(root):
    """Yields (file, line, importing module path, imported module path)."""
    for d, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith(".rs"):
                continue
            path = os.path.join(d, f)
            mod = module_of(root, path)
            if not mod:
                continue  # lib.rs / main.rs: the crate root declares, it does not sit on a floor
            src = strip_comments(open(path, encoding="utf-8").read())
            # `mod tests { use super::*; }` and other inline modules: a
            # `super` inside an inline module means the file's own module,
            # so resolve `super` only outside them (tests are never a floor
            # problem: they import their own module).
            inline = [(m.start(), _block_end(src, m.end() - 1))
                      for m in re.finditer(r"\bmod\s+[a-z_0-9]+\s*\{", src)]
            for m in PATH.finditer(src):
                if any(a <= m.start() < b for a, b in inline):
                    continue
                head, tail = m.group(1), [p for p in m.group(2).split("::") if p]
                line = src.count("\n", 0, m.start()) + 1
                if head == "crate":
                    prefix = tail
                else:
                    # `super::super::x` from module a::b::c (file c.rs) is a::x.
                    ups = 1
                    rest = tail
                    while rest and rest[0] == "super":
                        ups += 1
                        rest = rest[1:]
                    prefix = mod[: len(mod) - ups] + rest
                if m.group(3):
                    # `path::{a::x, b, self}`: one import per item.
                    for item in _group_items(src, m.end() - 1):
                        yield path, line, mod, prefix + item
                else:
                    yield path, line, mod, prefix


def _group_items(src, open_brace):
    """The leading path of each item of the `{...}` group at `open_brace`
    (nested groups give their own prefix; `self` adds nothing)."""
    end = _block_end(src, open_brace)
    body = src[open_brace + 1 : end]
    items, depth, cur = [], 0, ""
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    out = []
    for it in items:
        it = it.strip()
        if not it:
            continue
        parts = []
        for p in re.split(r"::", it):
            p = p.strip()
            m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", p)
            if not m or m.group(0) == "self":
                break
            parts.append(m.group(0))
            if p.startswith("{"):
                break
        out.append(parts)
    return out


def _block_end(src, open_brace):
    depth = 0
    for i in range(open_brace, len(src)):
        if src[i] == "{":
            depth += 1
        elif src[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return len(src)


def cycles(edges):
    """The strongly connected components of more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def check(base, root, floor_of, problems):
    """Checks the crate whose sources are under `root` (paths shown from
    `base`)."""
    edges = collections.defaultdict(lambda: collections.defaultdict(set))
    where = {}
    unplaced = set()
    for path, line, mod, target in imports(root):
        if not target:
            continue
        rel = os.path.relpath(path, base)
        a, b = mod[0], target[0]
        for name in (a, b):
            if name not in floor_of and name not in unplaced:
                unplaced.add(name)
                problems.append(f"{rel}:{line}: module `{name}` is on no floor of docs/ARCHITECTURE.md")
        fa, fb = floor_of.get(a, -1), floor_of.get(b, -1)
        if a != b and fb > fa >= 0:
            problems.append(f"{rel}:{line}: {a} imports {b} (floor {fb} is above floor {fa})")
        # Where the two paths part: `a::x::p` importing `a::y::q` is an edge
        # x -> y among the children of `a`.
        k = 0
        while k < len(mod) and k < len(target) and mod[k] == target[k]:
            k += 1
        if k < len(mod) and k < len(target):
            parent = "::".join(mod[:k]) or "crate"
            edges[parent][mod[k]].add(target[k])
            where.setdefault((parent, mod[k], target[k]), f"{rel}:{line}")
    for parent in sorted(edges):
        for comp in cycles(edges[parent]):
            names = [n if parent == "crate" else f"{parent}::{n}" for n in comp]
            seen = [where[(parent, x, y)] for x in comp for y in comp if (parent, x, y) in where]
            problems.append(f"{', '.join(names)} import each other ({'; '.join(seen)})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    floor_of = floors_from(os.path.join(root, "docs", "ARCHITECTURE.md"))
    problems = []
    for crate in ("crates/codec/src", "src"):
        check(root, os.path.join(root, crate), floor_of, problems)
    if problems:
        print("layering check failed:", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        sys.exit(1)
    print(
        f"layering check: {len(floor_of)} modules on {max(floor_of.values()) + 1} floors, "
        "no import from a floor above, no modules importing each other"
    )


if __name__ == "__main__":
    main()
