#!/usr/bin/env python3
"""Prints the conformance matrix of the last `scripts/conformance.sh` run and
rewrites the generated section of docs/CONFORMANCE.md (between the
`<!-- conformance:begin -->` and `<!-- conformance:end -->` markers).

Inputs (all written by scripts/conformance.sh under target/conformance/):
  --results  JSON lines, one per case: suite, area, row, col, ok (true,
             false, or null for skipped), detail. Written by the Rust
             harness (tests/it/harness), pytest (conftest.py) and
             tests/conformance/kserve_rest_client.py.
  --rust-log cargo test output: test functions that failed without
             recording a case still count as failures.
  --junit    pytest's JUnit XML: errors outside any case count too.
  --doc      the Markdown file to update (omit to only print).

Exit status: 0 when every case passed, 1 when any failed or none ran.
Standard library only.
"""
import argparse
import json
import re
import sys
import xml.etree.ElementTree as ET
from collections import OrderedDict

BEGIN = "<!-- conformance:begin -->"
END = "<!-- conformance:end -->"
SUITES = OrderedDict(
    [
        ("rust-triton", "Rust, raw HTTP: Triton direct vs through tensorgate (tests/it/conformance_triton.rs)"),
        ("rust-kserve", "Rust, raw HTTP: KServe direct vs through tensorgate (tests/it/conformance_kserve.rs)"),
        ("tritonclient", "tritonclient.http: Triton direct vs through tensorgate (tests/conformance/test_tritonclient.py)"),
        ("tritonclient-kserve", "tritonclient.http: KServe direct vs through tensorgate (tests/conformance/test_kserve_tritonclient.py)"),
        ("kserve-client", "kserve InferenceRESTClient: direct vs through tensorgate (tests/conformance/kserve_rest_client.py)"),
        ("grpc", "gRPC: tritonclient.grpc and tritonclient.http, Triton direct vs through tensorgate by frontend→backend protocol (tests/conformance/test_grpc.py)"),
        ("kserve-grpc", "gRPC: tritonclient.grpc and tritonclient.http, KServe 0.21's gRPC server direct vs through tensorgate by frontend→backend protocol (tests/conformance/test_kserve_grpc.py)"),
    ]
)


def load(path):
    cases = []
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if line:
                    try:
                        cases.append(json.loads(line))
                    except ValueError:
                        print(f"{path}:{n}: not JSON, ignored", file=sys.stderr)
    except FileNotFoundError:
        pass
    return cases


def rust_failures(path):
    """Test functions cargo reported FAILED."""
    if not path:
        return []
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except FileNotFoundError:
        return ["(no cargo test output)"]
    return re.findall(r"^test (\S+) \.\.\. FAILED", text, flags=re.M)


def junit_errors(path):
    """pytest errors (collection, fixtures) that are not a recorded case."""
    if not path:
        return []
    try:
        root = ET.parse(path).getroot()
    except (FileNotFoundError, ET.ParseError):
        return ["(no pytest JUnit XML)"]
    out = []
    for case in root.iter("testcase"):
        if case.find("error") is not None:
            out.append(f"{case.get('classname')}::{case.get('name')}")
    return out


def mark(ok):
    return "pass" if ok is True else ("skip" if ok is None else "**FAIL**")


def cell(cases):
    if not cases:
        return ""
    if any(c["ok"] is False for c in cases):
        return "**FAIL**"
    if all(c["ok"] is None for c in cases):
        return "skip"
    return "pass"


def esc(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def render(cases, extra_failures):
    total = len(cases)
    passed = sum(1 for c in cases if c["ok"] is True)
    failed = sum(1 for c in cases if c["ok"] is False)
    skipped = total - passed - failed
    lines = [
        f"**{total} cases: {passed} passed, {failed} failed, {skipped} skipped.**",
        "",
    ]
    by_suite = OrderedDict()
    for c in cases:
        by_suite.setdefault(c["suite"], OrderedDict()).setdefault(c["area"], []).append(c)
    order = [s for s in SUITES if s in by_suite] + [s for s in by_suite if s not in SUITES]
    for suite in order:
        # Tests run in parallel: sort areas so the document is stable.
        areas = OrderedDict(sorted(by_suite[suite].items()))
        n = sum(len(v) for v in areas.values())
        ok = sum(1 for v in areas.values() for c in v if c["ok"] is True)
        lines += [f"### {SUITES.get(suite, suite)}", "", f"{ok} of {n} cases passed.", ""]
        for area, items in areas.items():
            rows = list(OrderedDict.fromkeys(c["row"] for c in items))
            cols = list(OrderedDict.fromkeys(c["col"] for c in items))
            lines += [f"#### {area}", ""]
            if len(cols) > 1 and len(rows) > 1:
                # Wide tables read better turned a quarter.
                flip = len(cols) > 8 and len(rows) < len(cols)
                down, across = (cols, rows) if flip else (rows, cols)

                def at(r, col):
                    if flip:
                        r, col = col, r
                    return cell([c for c in items if c["row"] == r and c["col"] == col])

                lines.append("| | " + " | ".join(esc(c) for c in across) + " |")
                lines.append("|---" * (len(across) + 1) + "|")
                for r in down:
                    lines.append(f"| {esc(r)} | " + " | ".join(at(r, col) for col in across) + " |")
            else:
                lines.append("| case | result |")
                lines.append("|---|---|")
                for c in items:
                    name = c["row"] if c["col"] in ("-", "") else f"{c['row']} — {c['col']}"
                    lines.append(f"| {esc(name)} | {mark(c['ok'])} |")
            lines.append("")
    fails = [c for c in cases if c["ok"] is False]
    if fails or extra_failures:
        lines += ["### Failures", ""]
        for c in fails:
            lines.append(f"- `{c['suite']}` {esc(c['area'])} / {esc(c['row'])} / {esc(c['col'])}: {esc(c['detail'])[:300]}")
        for f in extra_failures:
            lines.append(f"- {esc(f)}")
        lines.append("")
    return "\n".join(lines), total, failed


def update_doc(path, body):
    text = open(path, encoding="utf-8").read()
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        print(f"{path}: markers {BEGIN} / {END} not found; not updated", file=sys.stderr)
        return False
    new = text[: start + len(BEGIN)] + "\n" + body.rstrip() + "\n" + text[end:]
    if new != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
    return True


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", default="target/conformance/results.jsonl")
    p.add_argument("--rust-log")
    p.add_argument("--junit")
    p.add_argument("--doc")
    args = p.parse_args(argv)
    cases = load(args.results)
    extra = [f"cargo test: {t} FAILED" for t in rust_failures(args.rust_log)]
    extra += [f"pytest error: {t}" for t in junit_errors(args.junit)]
    body, total, failed = render(cases, extra)
    print(body)
    if args.doc:
        update_doc(args.doc, body)
    if total == 0:
        print("conformance: no case ran", file=sys.stderr)
        return 1
    return 1 if failed or extra else 0


if __name__ == "__main__":
    sys.exit(main())
