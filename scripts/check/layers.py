#!/usr/bin/env python3
"""The layering check: every module of the gateway crate imports only from
its own floor or the floors below it, as docs/ARCHITECTURE.md lists them,
and no two modules import each other, at the top level or among the
children of one module.

    python3 scripts/check/layers.py [--root DIR]

The floors are the lines of the fenced block after the heading "## Floors"
in docs/ARCHITECTURE.md, lowest first; each line names the top-level
modules of one floor. A top-level module no floor names is an error too,
so a new module must be placed.

How it reads the sources (Python stdlib only, no Rust toolchain):

- Each crate (crates/codec/src/lib.rs, crates/demo/src/lib.rs,
  src/lib.rs, and the binary src/main.rs) is walked from its root along
  its `mod x;` declarations (`#[path]` and `include!` followed), so every
  module is known with its path, and a file no module declares is
  reported rather than skipped.
- The floors are those of the gateway crate (src/) and of the codec
  crate, whose top-level modules src/ re-exports at its root. The demo
  crate (crates/demo) sits beside the codec crate, below the gateway and
  on none of its floors: its modules are checked for importing each other
  only, and a path into it from src/ (`tensorgate_demo::serve`) is another
  crate's, like a dependency's, not an import of a module of the gateway.
- Each file is tokenized: comments (line, doc, nested block comments) are
  dropped, and string, raw string, byte string and char literals are one
  opaque token each (a lifetime is not a char literal), so neither a `//`
  inside a string nor a path inside a comment or a string is misread.
- Inline modules (`mod x { ... }`) are modules of their own, with their own
  `self` and `super`.
- Every `use` (groups `{a, b::{c}}`, `self`, `super`, `crate`, `as`
  aliases, globs) and every `crate::` / `self::` / `super::` path in code
  is resolved to the module that defines the item it names: through the
  `use` declarations of the modules it passes (a `pub use sub::Item`
  re-export, a private `use` a descendant sees, a glob `pub use sub::*`,
  transitively), through a path starting with a name a `use` binds to a
  module (`use crate::infer as core; core::Item`), and across the crates
  (`crate::codec` in src/ is the codec crate's `codec`). So importing
  `crate::infer::Foo`, where infer/mod.rs says `pub use backend::Foo`, is
  importing `infer::backend`.

An import from module `a::x::p` of an item of `a::y::q` is the edge
`x -> y` among the children of `a`; importing an ancestor or a descendant
is no edge (a child importing its parent through `super` is not a cycle).
Test modules (`#[cfg(test)]`) are checked like every other module: a test
sits in the module it tests, on its floor, and the one freedom it needs,
`use super::*`, is an import of an ancestor, which is never an edge.

Not seen: paths a macro builds, and paths named in strings
(`#[serde(with = "...")]`); a name is looked up in one namespace (a module
and a function of the same name are taken for the module).

It fails (exit 1) with one line per offending import,
`src/infer/x.rs:12: infer imports gateway (floor 13 is above floor 11)`, one line
per top-level module on no floor, and one line per group of modules that
import each other, with where each of their imports is.
"""
import argparse
import bisect
import collections
import os
import re
import sys

# One token of Rust source. Comments are matched so they can be dropped;
# `/*` starts a block comment whose nesting is followed by hand. Literal
# alternatives come before identifiers (`r"`, `b"`, `b'` start with a
# letter) and the char literal before the lifetime (`'a'` vs `'a`).
TOKEN = re.compile(
    r"""
      (?P<ws>\s+)
    | (?P<lc>//[^\n]*)
    | (?P<bc>/\*)
    | (?P<rs>(?:br|cr|r)(?P<hashes>\#*)"[\s\S]*?"(?P=hashes))
    | (?P<s>[bc]?"(?:[^"\\]|\\[\s\S])*")
    | (?P<ch>b?'(?:[^'\\\n]|\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F_]{1,8}\}|[^\n]))')
    | (?P<lt>'(?:r\#)?[A-Za-z_]\w*)
    | (?P<id>(?:r\#)?[A-Za-z_]\w*)
    | (?P<num>\d\w*(?:\.\d\w*)?)
    | (?P<p>::|[^\s\w])
    """,
    re.X,
)

# Opening and closing delimiters.
PAIRS = {"{": "}", "(": ")", "[": "]"}

# Items whose name the next identifier is (at a module's own level).
ITEM_KEYWORDS = {"fn", "struct", "enum", "trait", "type", "const", "static", "union"}

# Identifiers that start no path worth resolving.
KEYWORDS = {
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
    "pub", "ref", "return", "static", "struct", "trait", "true", "type", "unsafe", "use",
    "where", "while", "Self",
}


class Tokens:
    """A file's tokens, comments dropped: parallel lists of kinds, texts and
    offsets, the index of each delimiter's partner, and the file's line
    starts (for line numbers)."""

    def __init__(self, path, src):
        self.path = path
        kinds, texts, offs = [], [], []
        pos, n = 0, len(src)
        while pos < n:
            for m in TOKEN.finditer(src, pos):
                kind = m.lastgroup
                if kind in ("ws", "lc"):
                    continue
                if kind == "bc":
                    pos = _block_comment_end(src, m.start())
                    break
                text = m.group()
                if kind == "id" and text.startswith("r#"):
                    text = text[2:]
                kinds.append(kind)
                texts.append(text)
                offs.append(m.start())
            else:
                pos = n
        self.kinds, self.texts, self.offs = kinds, texts, offs
        self.partner = [-1] * len(texts)
        stack = []
        for i, t in enumerate(texts):
            if kinds[i] != "p":
                continue
            if t in PAIRS:
                stack.append(i)
            elif t in ("}", ")", "]") and stack:
                j = stack.pop()
                self.partner[i], self.partner[j] = j, i
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", src)]

    def line(self, i):
        return bisect.bisect_right(self.line_starts, self.offs[i])

    def __len__(self):
        return len(self.texts)


def _block_comment_end(src, start):
    """The offset just past the block comment opening at `start`; block
    comments nest."""
    depth, i, n = 0, start, len(src)
    while i < n:
        if src.startswith("/*", i):
            depth += 1
            i += 2
        elif src.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    return n


def string_value(token):
    """The contents of a plain or raw string literal token (no escapes
    undone but `\\\\` and `\\"`: enough for a file path)."""
    m = re.match(r'^[bc]?r?(#*)"([\s\S]*)"\1$', token)
    if not m:
        return None
    return m.group(2).replace('\\"', '"').replace("\\\\", "\\")


class Module:
    def __init__(self, path, parent, declared=None):
        self.path = path  # a tuple of names from the crate root
        self.parent = parent
        self.declared = declared  # (file, line) of its `mod`
        self.children = {}
        self.items = set()  # names of items defined at the module's own level
        self.uses = {}  # name -> path, for the `use` bindings at the module's own level
        self.globs = []  # paths of the glob `use`s at the module's own level
        self.refs = []  # (tokens, token index, path, kind): every import to resolve


class Crate:
    def __init__(self, name, root_file, library, siblings):
        self.name = name
        self.root_file = root_file
        self.library = library  # floors apply (not to a binary, above them all, nor the demo)
        self.siblings = siblings  # names of the other crates checked here
        self.files = set()
        self.root = Module((), None)
        self.modules = [self.root]


class Reader:
    """Reads a crate's module tree from its root file."""

    def __init__(self, crate, problems, base):
        self.crate = crate
        self.problems = problems
        self.base = base

    def read_file(self, path, module, child_dir):
        path = os.path.normpath(path)
        if path in self.crate.files:
            return
        self.crate.files.add(path)
        with open(path, encoding="utf-8") as f:
            toks = Tokens(path, f.read())
        self.items(toks, 0, len(toks), module, child_dir, os.path.dirname(path))

    def items(self, toks, i, end, module, child_dir, file_dir):
        """The items of `module` in toks[i:end]. `child_dir` is where its
        `mod x;` files are; `file_dir` the directory of the file the tokens
        are in (for `include!`)."""
        kinds, texts, partner = toks.kinds, toks.texts, toks.partner
        depth = 0
        attrs = []  # the outer attributes of the item about to start, as token ranges
        while i < end:
            t, k = texts[i], kinds[i]
            if k == "p":
                if t == "#":
                    inner = i + 1 < end and texts[i + 1] == "!"
                    j = i + 2 if inner else i + 1
                    if j < end and texts[j] == "[" and partner[j] > j:
                        if not inner:
                            attrs.append((j + 1, partner[j]))
                        self.code_paths(toks, j + 1, partner[j], module)
                        i = partner[j] + 1
                        continue
                elif t == "{":
                    depth += 1
                elif t == "}":
                    depth -= 1
                attrs = []
                i += 1
                continue
            if k != "id":
                attrs = []
                i += 1
                continue
            nxt = texts[i + 1] if i + 1 < end else ""
            if t == "pub":
                # `pub`, `pub(crate)`, `pub(in crate::x)`: a visibility, no import.
                i = partner[i + 1] + 1 if nxt == "(" and partner[i + 1] > i else i + 1
                continue
            if t == "use":
                i = self.use_decl(toks, i + 1, end, module, depth == 0)
                attrs = []
                continue
            if t == "mod" and i + 2 < end and kinds[i + 1] == "id" and texts[i + 2] in (";", "{"):
                name = nxt
                child = Module(module.path + (name,), module, (toks.path, toks.line(i)))
                module.children[name] = child
                self.crate.modules.append(child)
                path_attr = _path_attribute(toks, attrs)
                if texts[i + 2] == ";":
                    self.file_module(toks, i, child, child_dir, path_attr)
                    i += 3
                else:
                    close = partner[i + 2]
                    inner_dir = os.path.join(child_dir, path_attr or name)
                    self.items(toks, i + 3, close, child, inner_dir, file_dir)
                    i = close + 1
                attrs = []
                continue
            if (
                t == "include" and nxt == "!" and i + 3 < end
                and texts[i + 2] == "(" and kinds[i + 3] in ("s", "rs")
            ):
                value = string_value(texts[i + 3])
                if value is not None:
                    self.read_file(os.path.join(file_dir, value), module, child_dir)
                i = partner[i + 2] + 1 if partner[i + 2] > 0 else i + 4
                attrs = []
                continue
            if depth == 0 and t in ITEM_KEYWORDS:
                j = i + 1
                while j < end and texts[j] in ("mut", "unsafe", "async", "const", "extern"):
                    j += 1
                name = texts[j] if j < end and kinds[j] == "id" else "_"
                if name not in ITEM_KEYWORDS and name != "_":
                    module.items.add(name)
            attrs = []
            if nxt == "::" and (i == 0 or texts[i - 1] not in ("::", ".", "'")):
                i = self.code_path(toks, i, module)
                continue
            i += 1

    def file_module(self, toks, at, child, child_dir, path_attr):
        name = child.path[-1]
        if path_attr:
            # Relative to the file's directory, or inside an inline module to
            # the module's own.
            candidates = [
                os.path.join(os.path.dirname(toks.path), path_attr),
                os.path.join(child_dir, path_attr),
            ]
        else:
            candidates = [
                os.path.join(child_dir, name + ".rs"),
                os.path.join(child_dir, name, "mod.rs"),
            ]
        for c in candidates:
            if os.path.isfile(c):
                below = os.path.dirname(c) if os.path.basename(c) == "mod.rs" else c[:-3]
                self.read_file(c, child, below)
                return
        rel = os.path.relpath(toks.path, self.base)
        tried = ", ".join(os.path.relpath(c, self.base) for c in candidates)
        self.problems.append(f"{rel}:{toks.line(at)}: `mod {name};` names no file ({tried})")

    def use_decl(self, toks, i, end, module, own_level):
        """Reads the use tree from toks[i] to its `;`; returns the index past it."""
        leaves = []
        i = _use_tree(toks, i, [], leaves)
        if not leaves:
            return i  # not a use declaration (`impl Trait + use<'a>`)
        for at, path, binding, glob in leaves:
            module.refs.append((toks, at, path, "use"))
            if own_level:
                if glob:
                    module.globs.append(path)
                elif binding and binding != "_":
                    module.uses.setdefault(binding, path)
        return i + 1 if i < end and toks.texts[i] == ";" else i

    def code_path(self, toks, i, module):
        """Reads the path `a::b::c` starting at toks[i]; returns the index past it."""
        texts, kinds = toks.texts, toks.kinds
        start = i
        path = [texts[i]]
        i += 1
        while i + 1 < len(texts) and texts[i] == "::" and kinds[i + 1] == "id":
            path.append(texts[i + 1])
            i += 2
        head = path[0]
        if head in ("crate", "self", "super"):
            module.refs.append((toks, start, path, "path"))
        elif head not in KEYWORDS:
            module.refs.append((toks, start, path, "alias"))
        return i

    def code_paths(self, toks, i, end, module):
        """The `crate::` / `super::` / `self::` paths in toks[i:end] (an attribute)."""
        texts = toks.texts
        while i < end:
            if texts[i] in ("crate", "self", "super") and i + 1 < end and texts[i + 1] == "::":
                i = self.code_path(toks, i, module)
            else:
                i += 1


def _use_tree(toks, i, prefix, leaves):
    """Reads one use tree at toks[i] under `prefix`, appending
    (token index, path, binding, glob) leaves; returns the index past it."""
    texts, kinds = toks.texts, toks.kinds
    path = list(prefix)
    start = i
    if texts[i] == "::" and not path:
        path.append("")  # `use ::x`: an extern crate
        i += 1
    while i < len(texts):
        t = texts[i]
        if t == "{":
            close = toks.partner[i]
            i += 1
            while i < close:
                if texts[i] == ",":
                    i += 1
                    continue
                i = _use_tree(toks, i, path, leaves)
            return close + 1
        if t == "*":
            leaves.append((start, path, None, True))
            return i + 1
        if kinds[i] != "id":
            return i
        if t == "self" and prefix and len(path) == len(prefix):
            binding = path[-1]  # `a::{self}` binds `a`
        else:
            path.append(t)
            binding = t
        i += 1
        if i < len(texts) and texts[i] == "::":
            i += 1
            continue
        if i + 1 < len(texts) and texts[i] == "as":
            binding = texts[i + 1]
            i += 2
        leaves.append((start, path, binding, False))
        return i
    return i


def _path_attribute(toks, attrs):
    for a, b in attrs:
        if toks.texts[a] == "path" and b - a == 3 and toks.texts[a + 1] == "=":
            return string_value(toks.texts[a + 2])
    return None


class Resolver:
    """Resolves paths to the module that defines what they name."""

    def __init__(self, crate):
        self.crate = crate
        self.memo = {}

    def resolve(self, module, path):
        """(module path, leftover names, Module or None) for `path` as
        written in `module`, or None for what is outside the crates checked
        (std, dependencies) or not found. The leftover names are the item
        and what follows it; with no leftover the path names a module."""
        head = path[0]
        if head == "":
            return self.extern(path[1:])
        if head == "crate":
            return self.walk(self.crate.root, path[1:])
        if head == "self":
            return self.walk(module, path[1:])
        if head == "super":
            cur, rest = module, path
            while rest and rest[0] == "super":
                cur = cur.parent
                if cur is None:
                    return None
                rest = rest[1:]
            return self.walk(cur, rest)
        found = self.lookup(module, head)
        if found is None:
            if head in module.items:
                return (module.path, tuple(path), module)
            return self.extern(path)
        mpath, left, node = found
        if left or node is None:
            return (mpath, left + tuple(path[1:]), node)
        return self.walk(node, path[1:])

    def extern(self, path):
        # A path into another crate checked here (`tensorgate_codec::codec`
        # in src/, `tensorgate::cli` in src/main.rs) is that crate's
        # top-level module, which src/ re-exports under the same name.
        if len(path) > 1 and path[0] in self.crate.siblings:
            return ((path[1],), tuple(path[2:]), None)
        return None

    def walk(self, cur, rest):
        rest = tuple(rest)
        while rest:
            found = self.lookup(cur, rest[0])
            if found is None:
                return (cur.path, rest, cur)  # an item `cur` defines
            mpath, left, node = found
            if left or node is None:
                return (mpath, left + rest[1:], node)
            cur, rest = node, rest[1:]
        return (cur.path, (), cur)

    def lookup(self, module, name):
        """What `name` is in `module`'s namespace: a child module, or what a
        `use` there binds to it (named, then glob); None for an item it
        defines itself or for a name it does not know."""
        key = (id(module), name)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = None  # a `use` cycle resolves to nothing
        found = None
        if name in module.children:
            child = module.children[name]
            found = (child.path, (), child)
        elif name in module.items:
            found = None
        elif name in module.uses:
            found = self.resolve(module, module.uses[name])
        else:
            for glob in module.globs:
                src = self.resolve(module, glob)
                if not src or src[1] or src[2] is None or src[2] is module:
                    continue
                node = src[2]
                if name in node.items:
                    found = (node.path, (name,), node)
                    break
                found = self.lookup(node, name)
                if found is not None:
                    break
        self.memo[key] = found
        return found


def read_crate(base, crate, problems):
    reader = Reader(crate, problems, base)
    root_dir = os.path.dirname(crate.root_file)
    reader.read_file(crate.root_file, crate.root, root_dir)
    return crate


def imports(crate):
    """Yields (file, line, importing module path, imported module path)."""
    resolver = Resolver(crate)
    for module in crate.modules:
        for toks, at, path, kind in module.refs:
            if kind == "alias":
                # `core::Item` after `use crate::infer as core`: only a name a
                # `use` binds to a module is followed (`Type::method` is not).
                found = resolver.lookup(module, path[0])
                if found is None or found[1]:
                    continue
            target = resolver.resolve(module, path)
            if target is None:
                continue
            yield toks.path, toks.line(at), module.path, target[0]


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


def check(base, crate, floor_of, problems):
    """Checks one crate read by `read_crate` (paths shown from `base`)."""
    edges = collections.defaultdict(lambda: collections.defaultdict(set))
    where = {}
    unplaced = set()
    found = []

    def place(name, rel, line):
        if crate.library and name not in floor_of and name not in unplaced:
            unplaced.add(name)
            found.append((rel, line, f"module `{name}` is on no floor of docs/ARCHITECTURE.md"))

    for name, child in crate.root.children.items():
        place(name, os.path.relpath(child.declared[0], base), child.declared[1])
    for path, line, mod, target in imports(crate):
        rel = os.path.relpath(path, base)
        if not mod or not target:
            continue  # the crate root declares and re-exports; it sits on no floor
        a, b = mod[0], target[0]
        place(b, rel, line)
        fa, fb = floor_of.get(a, -1), floor_of.get(b, -1)
        if crate.library and a != b and fb > fa >= 0:
            found.append((rel, line, f"{a} imports {b} (floor {fb} is above floor {fa})"))
        # Where the two paths part: `a::x::p` importing `a::y::q` is an edge
        # x -> y among the children of `a`.
        k = 0
        while k < len(mod) and k < len(target) and mod[k] == target[k]:
            k += 1
        if k < len(mod) and k < len(target):
            parent = "::".join(mod[:k]) or "crate"
            edges[parent][mod[k]].add(target[k])
            where.setdefault((parent, mod[k], target[k]), f"{rel}:{line}")
    for rel, line, text in sorted(set(found)):
        problems.append(f"{rel}:{line}: {text}")
    for parent in sorted(edges):
        for comp in cycles(edges[parent]):
            names = [n if parent == "crate" else f"{parent}::{n}" for n in comp]
            seen = [where[(parent, x, y)] for x in comp for y in comp if (parent, x, y) in where]
            problems.append(f"{', '.join(names)} import each other ({'; '.join(seen)})")


def floors_from(architecture):
    with open(architecture, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^## Floors\n.*?^```[a-z]*\n(.*?)^```", text, re.M | re.S)
    if not m:
        sys.exit(f"{architecture}: no fenced block after '## Floors'")
    floor_of = {}
    for i, line in enumerate(l for l in m.group(1).splitlines() if l.strip()):
        for name in line.split("#")[0].split():
            floor_of[name] = i
    return floor_of


def crate_name(src_dir):
    """The crate name (`tensorgate_codec`) from the Cargo.toml beside `src_dir`."""
    m = None
    try:
        with open(os.path.join(os.path.dirname(src_dir), "Cargo.toml"), encoding="utf-8") as f:
            package = re.search(r"^\[package\]\n(.*?)(?=^\[|\Z)", f.read(), re.M | re.S)
        if package:
            m = re.search(r'^name\s*=\s*"([^"]+)"', package.group(1), re.M)
    except OSError:
        pass
    return m.group(1).replace("-", "_") if m else os.path.basename(os.path.dirname(src_dir))


# The crates checked, by source folder, and whether the floors apply to
# them. The codec crate's top-level modules are on the lowest floors (src/
# re-exports them under the same names); the demo crate is on no floor:
# only its modules importing each other are looked for, and paths into it
# from the floored crates, or out of it, are not followed.
CRATES = (("crates/codec/src", True), ("crates/demo/src", False), ("src", True))


def run(root):
    """The problems of the tree at `root`, and the floors."""
    floor_of = floors_from(os.path.join(root, "docs", "ARCHITECTURE.md"))
    problems = []
    dirs = [(d, f) for d, f in CRATES if os.path.isdir(os.path.join(root, d))]
    names = {d: crate_name(os.path.join(root, d)) for d, _ in dirs}
    floored = {names[d] for d, f in dirs if f}
    crates = []
    for d, on_floors in dirs:
        src = os.path.join(root, d)
        others = {n for e, n in names.items() if e != d and n in floored} if on_floors else set()
        for root_name, library in (("lib.rs", True), ("main.rs", False)):
            root_file = os.path.join(src, root_name)
            if os.path.isfile(root_file):
                own = set() if library or not on_floors else {names[d]}
                crate = Crate(names[d], root_file, library and on_floors, others | own)
                crates.append((src, crate))
    reached = collections.defaultdict(set)
    for src, crate in crates:
        read_crate(root, crate, problems)
        check(root, crate, floor_of, problems)
        reached[src] |= crate.files
    for src, files in reached.items():
        for d, _, fs in os.walk(src):
            for f in sorted(fs):
                path = os.path.normpath(os.path.join(d, f))
                if f.endswith(".rs") and path not in files:
                    problems.append(
                        f"{os.path.relpath(path, root)}: "
                        "no `mod` declares it (nor `include!`), so it is not checked"
                    )
    return problems, floor_of


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    args = ap.parse_args()
    problems, floor_of = run(os.path.abspath(args.root))
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
