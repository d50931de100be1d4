#!/usr/bin/env python3
"""The layering check's self-test: tiny crates in a temporary directory,
each with a planted violation the check must report, or with something it
must not mistake for an import.

    python3 scripts/check/test_layers.py

Exit status 0 when every case passes (stdlib unittest).
"""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import layers  # noqa: E402

# Two floors: `low` below `high`; `a` and `b` share the lowest.
FLOORS = """\
# Architecture

## Floors

```
low a b
high
```
"""


def problems(files, floors=FLOORS):
    """The check's problems on a crate made of `files` (path -> text)."""
    with tempfile.TemporaryDirectory() as root:
        write(root, files, floors)
        found, _ = layers.run(root)
        return found


def write(root, files, floors):
    os.makedirs(os.path.join(root, "docs"))
    with open(os.path.join(root, "docs", "ARCHITECTURE.md"), "w", encoding="utf-8") as f:
        f.write(floors)
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text).lstrip("\n"))


# A crate with `low` and `high`, where high defines what low must not use.
LIB = "pub mod high;\npub mod low;\n"
HIGH = """
pub struct H;
pub fn h() {}
"""


def low_crate(low):
    return {"src/lib.rs": LIB, "src/high.rs": HIGH, "src/low.rs": low}


class CaughtTest(unittest.TestCase):
    """Violations the check must report."""

    def assertFloor(self, found, line):
        self.assertIn(f"src/low.rs:{line}: low imports high (floor 1 is above floor 0)", found)

    def test_plain_import_from_a_floor_above(self):
        self.assertFloor(problems(low_crate("use crate::high::H;\n")), 1)

    def test_import_in_an_inline_module(self):
        found = problems(low_crate("""
            pub fn f() {}
            mod inner {
                pub mod deeper {
                    use crate::high::H;
                }
            }
            """))
        self.assertFloor(found, 4)

    def test_import_in_an_inline_test_module_is_checked_too(self):
        found = problems(low_crate("""
            pub fn f() {}
            #[cfg(test)]
            mod tests {
                use super::*;
                use crate::high::h;
            }
            """))
        self.assertEqual(found, ["src/low.rs:5: low imports high (floor 1 is above floor 0)"])

    def test_import_after_a_string_holding_slashes(self):
        self.assertFloor(problems(low_crate("""
            pub fn f() -> &'static str {
                let u = "http://x"; use crate::high::H;
                u
            }
            """)), 2)
        self.assertFloor(problems(low_crate("""
            pub fn f() {
                let u = "http://x"; crate::high::h(); let _ = u;
            }
            """)), 2)

    def test_import_after_a_char_literal_quote_and_lifetimes(self):
        # `'"'` is a char, not the start of a string; `'a` is a lifetime,
        # not the start of a char literal.
        self.assertFloor(problems(low_crate("""
            pub fn f<'a>(_x: &'a str) -> (char, &'a str) {
                let q = '"'; crate::high::h(); let s = "x";
                (q, s)
            }
            """)), 2)
        self.assertFloor(problems(low_crate("""
            pub fn f<'a, 'b>(x: &'a str, _y: &'b str) -> &'a str { x }
            pub fn g() { crate::high::h() }
            """)), 2)

    def test_import_after_a_raw_string_and_a_closed_nested_comment(self):
        self.assertFloor(problems(low_crate(
            'const S: &str = r#"a "quoted" // no comment"#; /* a /* b */ c */ use crate::high::H;\n'
        )), 1)

    def test_import_through_a_group_self_super_and_an_alias(self):
        found = problems({
            "src/lib.rs": LIB,
            "src/high.rs": "pub mod deep;\n",
            "src/high/deep.rs": HIGH,
            "src/low.rs": """
                pub mod child;
                """,
            "src/low/child.rs": """
                use std::fmt;
                use super::super::{self as root, high::{self as up}};
                pub fn f() { up::deep::h(); let _ = fmt::Error; }
                """,
        })
        self.assertIn("src/low/child.rs:2: low imports high (floor 1 is above floor 0)", found)

    def test_cycle_through_a_pub_use_reexport(self):
        found = problems({
            "src/lib.rs": "pub mod a;\n",
            "src/a/mod.rs": """
                pub mod x;
                pub mod y;
                pub use x::Thing;
                """,
            "src/a/x.rs": """
                use super::y::Other;
                pub struct Thing(pub Other);
                """,
            "src/a/y.rs": """
                use super::Thing;
                pub struct Other;
                pub fn make(t: Thing) -> Thing { t }
                """,
        })
        self.assertEqual(found, ["a::x, a::y import each other (src/a/x.rs:1; src/a/y.rs:1)"])

    def test_cycle_through_reexports_of_reexports_and_globs(self):
        # `crate::a::Thing` is `a::facade`'s glob re-export of `a::facade::x`'s
        # `pub use`, made by `a::x`; `use crate::a as core` is an alias.
        found = problems({
            "src/lib.rs": "pub mod a;\n",
            "src/a/mod.rs": """
                pub mod facade;
                pub mod x;
                pub mod y;
                pub(crate) use facade::*;
                """,
            "src/a/facade.rs": "pub use super::x::{Thing, Unused};\n",
            "src/a/x.rs": """
                pub struct Thing;
                pub struct Unused;
                pub fn f() { super::y::g() }
                """,
            "src/a/y.rs": """
                use crate::a as core;
                pub fn g() { let _ = core::Thing; }
                """,
        })
        self.assertEqual(
            found, ["a::x, a::y import each other (src/a/x.rs:3; src/a/y.rs:2)"]
        )

    def test_cycle_between_siblings_inside_a_nested_module(self):
        found = problems({
            "src/lib.rs": "pub mod a;\n",
            "src/a/mod.rs": "pub mod inner;\n",
            "src/a/inner/mod.rs": "pub mod p;\npub mod q;\n",
            "src/a/inner/p.rs": "use super::q::Q;\npub struct P(Q);\n",
            "src/a/inner/q.rs": """
                pub struct Q;
                impl Q { pub fn p(self) -> crate::a::inner::p::P { todo!() } }
                """,
        })
        self.assertEqual(
            found,
            ["a::inner::p, a::inner::q import each other (src/a/inner/p.rs:1; src/a/inner/q.rs:2)"],
        )

    def test_cycle_between_inline_modules(self):
        found = problems({
            "src/lib.rs": "pub mod a;\n",
            "src/a.rs": """
                mod m {
                    mod p {
                        use super::q::Q;
                        pub struct P;
                    }
                    mod q {
                        pub struct Q;
                        fn f() -> super::p::P { todo!() }
                    }
                }
                """,
        })
        self.assertEqual(found, ["a::m::p, a::m::q import each other (src/a.rs:3; src/a.rs:8)"])

    def test_cycle_at_the_top_level(self):
        found = problems({
            "src/lib.rs": "pub mod a;\npub mod b;\n",
            "src/a.rs": "use crate::b::B;\npub struct A;\n",
            "src/b.rs": "pub struct B;\npub fn f(_: crate::a::A) {}\n",
        })
        self.assertEqual(found, ["a, b import each other (src/a.rs:1; src/b.rs:2)"])

    def test_module_on_no_floor(self):
        found = problems({
            "src/lib.rs": "pub mod low;\n\npub mod nowhere;\n",
            "src/low.rs": "",
            "src/nowhere.rs": "",
        })
        self.assertEqual(
            found, ["src/lib.rs:3: module `nowhere` is on no floor of docs/ARCHITECTURE.md"]
        )

    def test_file_no_module_declares(self):
        found = problems({
            "src/lib.rs": "pub mod low;\n",
            "src/low.rs": "",
            "src/stray.rs": "use crate::high::H;\n",
        })
        self.assertEqual(
            found, ["src/stray.rs: no `mod` declares it (nor `include!`), so it is not checked"]
        )

    def test_codec_crate_is_read_through_the_reexport(self):
        # src/ re-exports the codec crate's modules: `crate::wire` there is
        # the codec crate's `wire`, on its floor; the codec crate is checked
        # on its own.
        floors = FLOORS.replace("low a b\n", "wire\nlow a b\n")
        found = problems({
            "crates/codec/Cargo.toml": '[package]\nname = "the-codec"\n',
            "crates/codec/src/lib.rs": "pub mod wire;\n",
            "crates/codec/src/wire.rs": "pub struct W;\n",
            "src/lib.rs": "pub use the_codec::wire;\n" + LIB,
            "src/high.rs": "pub fn h(_: crate::wire::W) {}\n",
            "src/low.rs": "pub fn l(_: ::the_codec::wire::W) {}\n",
        }, floors)
        self.assertEqual(found, [])
        found = problems({
            "crates/codec/Cargo.toml": '[package]\nname = "the-codec"\n',
            "crates/codec/src/lib.rs": "pub mod wire;\n",
            "crates/codec/src/wire.rs": "pub struct W;\n",
            "src/lib.rs": "pub use the_codec::wire;\n" + LIB,
            "src/high.rs": "",
            "src/low.rs": "",
        }, FLOORS.replace("low a b\n", "low a b\nwire\n"))
        self.assertEqual(found, [])


    def test_demo_crate_modules_importing_each_other(self):
        # The demo crate is on no floor, but its modules are checked for
        # importing each other, at the top level and below.
        found = problems(dict(low_crate(""), **{
            "crates/demo/Cargo.toml": '[package]\nname = "the-demo"\n',
            "crates/demo/src/lib.rs": "mod catalog;\nmod routes;\npub mod grpc;\n",
            "crates/demo/src/catalog.rs": "pub struct M;\npub fn f(_: crate::routes::R) {}\n",
            "crates/demo/src/routes.rs": "use super::catalog::M;\npub struct R(M);\n",
            "crates/demo/src/grpc/mod.rs": "mod a;\nmod b;\n",
            "crates/demo/src/grpc/a.rs": "use super::b::B;\npub struct A;\n",
            "crates/demo/src/grpc/b.rs": "pub struct B(crate::grpc::a::A);\n",
            "crates/demo/src/stray.rs": "",
        }))
        self.assertEqual(found, [
            "catalog, routes import each other (crates/demo/src/catalog.rs:2; "
            "crates/demo/src/routes.rs:1)",
            "grpc::a, grpc::b import each other (crates/demo/src/grpc/a.rs:1; "
            "crates/demo/src/grpc/b.rs:1)",
            "crates/demo/src/stray.rs: no `mod` declares it (nor `include!`), so it is not checked",
        ])


class NotCaughtTest(unittest.TestCase):
    """Things the check must not take for imports or cycles."""

    def test_slashes_in_a_string_with_no_import_after(self):
        self.assertEqual(problems(low_crate("""
            pub const URL: &str = "http://crate::high::H/"; // crate::high::H
            pub fn f() -> &'static str { URL }
            """)), [])

    def test_imports_in_comments_and_strings(self):
        self.assertEqual(problems(low_crate('''
            //! See [`crate::high::H`]; use crate::high::H;
            /** use crate::high::H; */
            /* outer /* nested */ use crate::high::H; */
            /// use crate::high::H;
            pub fn f() -> (&'static str, &'static [u8], &'static str, char) {
                // use crate::high::H;
                ("use crate::high::H;", b"crate::high::h()", r#"crate::high::H "x" "#, '\\'')
            }
            ''')), [])

    def test_a_test_module_using_super_star(self):
        self.assertEqual(problems({
            "src/lib.rs": "pub mod a;\n",
            "src/a/mod.rs": """
                mod x;
                mod y;
                pub use x::X;
                pub fn f() -> X { y::g() }
                #[cfg(test)]
                mod tests {
                    use super::*;
                    #[test]
                    fn t() { let _ = f(); }
                }
                """,
            "src/a/x.rs": """
                pub struct X;
                #[cfg(test)]
                mod tests {
                    use super::*;
                    use crate::a::f;
                    fn t() -> X { f() }
                }
                """,
            "src/a/y.rs": """
                use super::X;
                pub fn g() -> X { X }
                """,
        }), [])

    def test_parent_and_child_importing_each_other(self):
        self.assertEqual(problems({
            "src/lib.rs": "pub mod a;\n",
            "src/a/mod.rs": "mod c;\npub struct P;\npub use c::C;\n",
            "src/a/c.rs": "use super::P;\npub struct C(P);\n",
        }), [])

    def test_visibility_paths_are_no_imports(self):
        self.assertEqual(problems(low_crate("""
            pub(crate) struct L;
            pub(in crate::low) fn f() {}
            mod inner { pub(super) fn g() {} pub(in super::super::low) fn h() {} }
            """)), [])


    def test_demo_crate_is_on_no_floor_and_another_crate_from_src(self):
        # The demo crate's modules need no floor; a path into it from src/
        # is not an import of a gateway module (not `routes`, not `serve`),
        # and its paths into the codec crate are not followed either.
        self.assertEqual(problems({
            "crates/codec/Cargo.toml": '[package]\nname = "the-codec"\n',
            "crates/codec/src/lib.rs": "pub mod wire;\n",
            "crates/codec/src/wire.rs": "pub struct W;\n",
            "crates/demo/Cargo.toml": '[package]\nname = "the-demo"\n',
            "crates/demo/src/lib.rs": "mod routes;\npub use routes::serve;\n",
            "crates/demo/src/routes.rs": "use the_codec::wire::W;\npub fn serve(_: W) {}\n",
            "src/lib.rs": "pub use the_codec::wire;\n" + LIB,
            "src/high.rs": "",
            "src/low.rs": "use the_demo::serve;\npub fn l() { the_demo::routes(); }\n",
            "src/main.rs": "fn main() { the_demo::serve(); }\n",
        }, FLOORS.replace("low a b\n", "wire\nlow a b\n")), [])


class CommandLineTest(unittest.TestCase):
    def run_check(self, files):
        with tempfile.TemporaryDirectory() as root:
            write(root, files, FLOORS)
            return subprocess.run(
                [sys.executable, os.path.join(HERE, "layers.py"), "--root", root],
                capture_output=True,
                text=True,
            )

    def test_failure_exits_1_and_names_the_line(self):
        r = self.run_check(low_crate("pub struct L;\nuse crate::high::H;\n"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("  src/low.rs:2: low imports high (floor 1 is above floor 0)\n", r.stderr)

    def test_success_exits_0(self):
        r = self.run_check(low_crate("pub struct L;\n"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("layering check: 4 modules on 2 floors", r.stdout)


class TokensTest(unittest.TestCase):
    def texts(self, src):
        return layers.Tokens("x.rs", src).texts

    def test_literals_are_one_token_and_comments_none(self):
        self.assertEqual(
            self.texts('a /* x /* y */ z */ "s//t" r##"q"#"## b\'"\' \'c\' \'l // c\nd'),
            ["a", '"s//t"', 'r##"q"#"##', "b'\"'", "'c'", "'l", "d"],
        )

    def test_lines(self):
        t = layers.Tokens("x.rs", 'a\n"two\nlines"\nb')
        self.assertEqual([t.line(i) for i in range(len(t))], [1, 2, 4])


if __name__ == "__main__":
    unittest.main()
