#!/usr/bin/env python3
"""List the metrics a Grafana dashboard queries, and check them against a scrape.

Usage:
  dashboard_metrics.py DASHBOARD.json                   print queried metric names, one per line
  dashboard_metrics.py DASHBOARD.json --check SCRAPE    exit 1 listing queried metrics absent from
                                                        SCRAPE (a /metrics text dump; "-" = stdin),
                                                        except those tensorgate exports only after
                                                        their event (listed, not failed)
  dashboard_metrics.py DASHBOARD.json --check SCRAPE --strict
                                                        those too must be there (scripts/check-metrics.sh
                                                        makes every event happen first)
  dashboard_metrics.py DASHBOARD.json --syntax          also parse every expression with the
                                                        promql-parser package (pip install
                                                        promql-parser) and fail on syntax errors
  dashboard_metrics.py --self-test                      run the built-in tests

Names are printed as queried (a histogram's `x_bucket`, `x_sum`, `x_count`). In --check a name is
present when the scrape has samples of that exact name, or when it names a histogram `x` (declared
by `# TYPE x histogram`) and `x_bucket` samples exist. A family declared by a `# TYPE` line but
without samples counts as absent: most tensorgate metrics carry labels and appear only after the
first request that sets them, so take the scrape after sending traffic. A few appear only after
an event an ordinary run may never have (AFTER_EVENT: a rule violation, a shadow copy): without
--strict their absence is reported and tolerated.

Only the standard library is needed; --syntax needs promql-parser.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from typing import Iterable, Iterator

# PromQL words that look like metric names but are not.
KEYWORDS = {
    "and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
    "group_left", "group_right", "inf", "nan", "atan2", "start", "end",
}
HIST_SUFFIXES = ("_bucket", "_sum", "_count")

# tensorgate series that exist only after their event: their labels name what happened (a rule
# broken on a tensor, a shadow backend's outcome), and a gateway without that event, or without
# a shadow at all, has no label values to export zeros under. Dashboards show "no data" there.
AFTER_EVENT = {
    "tensorgate_rule_violations_total": "the first request a tensor rule refuses",
    "tensorgate_shadow_requests_total": "the first shadow copy (a route with `shadow`)",
    "tensorgate_shadow_duration_seconds": "the first shadow copy (a route with `shadow`)",
    "tensorgate_auth_failures_total": "the first refused credentials",
    "tensorgate_authenticated_requests_total": "the first request with a key",
    "tensorgate_rate_limited_total": "the first request over a rate limit",
}


def after_event(name: str) -> str | None:
    """The event after which `name` (or the histogram it is a series of) appears, if any."""
    base = next((name[: -len(s)] for s in HIST_SUFFIXES if name.endswith(s)), name)
    return AFTER_EVENT.get(name) or AFTER_EVENT.get(base)

_STRING = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`')
_NAME_MATCHER = re.compile(r'__name__\s*=\s*"((?:\\.|[^"\\])*)"')
_BRACES = re.compile(r"\{[^{}]*\}")
_BRACKETS = re.compile(r"\[[^\[\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_OFFSET = re.compile(r"\boffset\s+-?[0-9A-Za-z_$.]+")
_AT = re.compile(r"@\s*(?:start\(\s*\)|end\(\s*\)|[0-9.eE+-]+)")
_NUMBER = re.compile(
    r"(?<![\w:$])(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(?![\w:])")
_IDENT = re.compile(r"(?<![\w:$])[A-Za-z_:][A-Za-z0-9_:]*")
_GRAFANA_VAR = re.compile(r"\$\{[^}]*\}|\$\w+|\[\[[^\]]*\]\]")
_LABEL_VALUES = re.compile(r"^\s*label_values\s*\((.*)\)\s*$", re.S)
_QUERY_RESULT = re.compile(r"^\s*query_result\s*\((.*)\)\s*$", re.S)


# ----------------------------------------------------------------------------- extraction

def _strip_strings(expr: str) -> str:
    return _STRING.sub('""', expr)


def metric_names(expr: str) -> set[str]:
    """Metric names selected by one PromQL expression (Grafana variables allowed)."""
    names = set(_NAME_MATCHER.findall(expr))
    text = _strip_strings(expr)
    text = _BRACES.sub(" ", text)       # label matchers (strings already emptied)
    text = _BRACKETS.sub(" ", text)     # ranges, subqueries
    text = _GROUPING.sub(" ", text)     # by (...), on (...), group_left (...)
    text = _OFFSET.sub(" ", text)
    text = _AT.sub(" ", text)
    text = _NUMBER.sub(" ", text)
    for m in _IDENT.finditer(text):
        word = m.group(0)
        if word.lower() in KEYWORDS:
            continue
        rest = text[m.end():].lstrip()
        if rest.startswith("("):        # function or aggregation call
            continue
        names.add(word)
    return names


def variable_query_exprs(query: str) -> list[str]:
    """The PromQL inside a Grafana Prometheus variable query, if any."""
    m = _QUERY_RESULT.match(query)
    if m:
        return [m.group(1)]
    m = _LABEL_VALUES.match(query)
    if m:
        # Blank out string contents (same length) so commas inside them do not count.
        inner = _STRING.sub(lambda s: s.group(0)[0] + " " * (len(s.group(0)) - 2) + s.group(0)[-1],
                            m.group(1))
        # label_values(label) has no metric; label_values(selector, label) has one.
        depth, split = 0, None
        for i, ch in enumerate(inner):
            if ch in "({[":
                depth += 1
            elif ch in ")}]":
                depth -= 1
            elif ch == "," and depth == 0:
                split = i
        if split is not None:
            return [m.group(1)[:split]]
    return []


def _panels(panels: Iterable[dict]) -> Iterator[dict]:
    for panel in panels or []:
        yield panel
        yield from _panels(panel.get("panels", []))  # collapsed rows nest their panels


def dashboard_exprs(dash: dict) -> list[tuple[str, str]]:
    """(where, expr) for every PromQL expression in a dashboard."""
    out = []
    for panel in _panels(dash.get("panels", [])):
        for target in panel.get("targets", []) or []:
            expr = target.get("expr")
            if isinstance(expr, str) and expr.strip():
                out.append((f'panel {panel.get("id")} "{panel.get("title", "")}" '
                            f'ref {target.get("refId", "?")}', expr))
    for var in (dash.get("templating") or {}).get("list", []):
        if var.get("type") != "query":
            continue
        query = var.get("query")
        if isinstance(query, dict):
            query = query.get("query", "")
        if isinstance(query, str):
            for expr in variable_query_exprs(query):
                out.append((f'variable "{var.get("name")}"', expr))
    return out


def dashboard_metric_names(dash: dict) -> set[str]:
    names: set[str] = set()
    for _, expr in dashboard_exprs(dash):
        names |= metric_names(expr)
    return names


# ----------------------------------------------------------------------------- PromQL syntax

def _substitute_grafana_vars(expr: str) -> str:
    """Make a Grafana expression plain PromQL: variables in ranges become 5m, in strings stay
    as text, elsewhere become the number 1."""
    expr = _BRACKETS.sub(
        lambda m: "[" + _GRAFANA_VAR.sub("5m", m.group(0)[1:-1]) + "]", expr)
    pieces, last = [], 0
    for m in _STRING.finditer(expr):
        pieces.append(_GRAFANA_VAR.sub("1", expr[last:m.start()]))
        pieces.append(m.group(0))
        last = m.end()
    pieces.append(_GRAFANA_VAR.sub("1", expr[last:]))
    return "".join(pieces)


def parser_metric_names(expr: str) -> set[str]:
    """Metric names per promql-parser's AST; raises ValueError on a syntax error."""
    import promql_parser  # type: ignore[import-not-found]

    ast = promql_parser.parse(_substitute_grafana_vars(expr))
    names: set[str] = set()

    def visit(node):
        if isinstance(node, promql_parser.VectorSelector):
            if node.name:
                names.add(node.name)
            for matcher in node.matchers.matchers:
                if matcher.name == "__name__" and matcher.op == promql_parser.MatchOp.Equal:
                    names.add(matcher.value)
        return True

    promql_parser.walk(ast, visit)
    return names


def check_syntax(dash: dict) -> list[str]:
    errors = []
    for where, expr in dashboard_exprs(dash):
        try:
            from_ast = parser_metric_names(expr)
        except ValueError as exc:
            errors.append(f"{where}: PromQL syntax error: {exc}\n    {expr}")
            continue
        from_regex = metric_names(expr)
        if from_ast != from_regex:
            errors.append(f"{where}: name extraction disagrees with the parser: "
                          f"regex {sorted(from_regex)} vs parser {sorted(from_ast)}\n    {expr}")
    return errors


# ----------------------------------------------------------------------------- scrape check

def parse_scrape(text: str) -> tuple[dict[str, str], set[str]]:
    """(# TYPE declarations, names that have samples) of Prometheus/OpenMetrics text."""
    types: dict[str, str] = {}
    samples: set[str] = set()
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 4 and parts[1] == "TYPE":
                types[parts[2]] = parts[3].strip()
            continue
        m = re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line)
        if m:
            samples.add(m.group(0))
    return types, samples


def missing_metrics(queried: Iterable[str], scrape_text: str) -> list[tuple[str, str]]:
    """(name, why) for each queried metric the scrape does not provide."""
    types, samples = parse_scrape(scrape_text)
    missing = []
    for name in sorted(set(queried)):
        if name in samples:
            continue
        if types.get(name) in ("histogram", "gaugehistogram") and f"{name}_bucket" in samples:
            continue
        base = next((name[: -len(s)] for s in HIST_SUFFIXES if name.endswith(s)), None)
        if name in types or (base is not None and base in types):
            declared = name if name in types else base
            why = f"# TYPE {declared} {types[declared]} declared, but no {name} samples"
        else:
            why = "not in the scrape"
        missing.append((name, why))
    return missing


# ----------------------------------------------------------------------------- self-test

_SELF_TEST_DASHBOARD = {
    "panels": [
        {"id": 1, "type": "timeseries", "targets": [
            {"refId": "A", "expr": 'sum by (route) (rate(gw_requests_total{route=~"$route",code=~"5.."}[$__rate_interval]))'
                                   ' / on (route) group_left sum by (route) (rate(gw_requests_total[5m] offset 1h))'},
            {"refId": "B", "expr": 'histogram_quantile(0.99, sum by (le) (rate(gw_duration_seconds_bucket{job="rate(fake_in_string[5m])"}[$__rate_interval])))'},
            {"refId": "C", "expr": 'gw_duration_seconds_sum / gw_duration_seconds_count > 1e3'},
            {"refId": "D", "expr": ''},
        ]},
        {"id": 2, "type": "row", "collapsed": True, "panels": [
            {"id": 3, "type": "stat", "targets": [
                {"refId": "A", "expr": 'process_open_fds * on (job, instance) group_left (version) gw_build_info'},
                {"refId": "B", "expr": '{__name__="gw_only_by_name"} and ignoring(x) absent(gw_absent_ok)'},
                {"refId": "C", "expr": 'topk(5, max_over_time(gw_inflight[$__range:1m]) unless gw_inflight @ end())'},
            ]},
        ]},
    ],
    "templating": {"list": [
        {"name": "datasource", "type": "datasource", "query": "prometheus"},
        {"name": "route", "type": "query",
         "query": {"query": "label_values(gw_route_info{env=\"prod\"}, route)", "refId": "X"}},
        {"name": "code", "type": "query", "query": "label_values(code)"},
    ]},
}

_SELF_TEST_EXPECTED = {
    "gw_requests_total", "gw_duration_seconds_bucket", "gw_duration_seconds_sum",
    "gw_duration_seconds_count", "process_open_fds", "gw_build_info", "gw_only_by_name",
    "gw_absent_ok", "gw_inflight", "gw_route_info",
}

_SELF_TEST_SCRAPE = """\
# HELP gw_requests_total Requests.
# TYPE gw_requests_total counter
gw_requests_total{route="a",code="200"} 3
# TYPE gw_duration_seconds histogram
gw_duration_seconds_bucket{le="0.1"} 1
gw_duration_seconds_bucket{le="+Inf"} 2
gw_duration_seconds_sum 0.3
gw_duration_seconds_count 2
# TYPE process_open_fds gauge
process_open_fds 12
# TYPE gw_build_info gauge
gw_build_info{version="0.1.0"} 1
gw_only_by_name 1
gw_absent_ok 0
gw_inflight{route="a"} 0
gw_route_info{route="a"} 1
"""


def self_test() -> int:
    failures = []

    def expect(cond: bool, what: str) -> None:
        if not cond:
            failures.append(what)

    got = dashboard_metric_names(_SELF_TEST_DASHBOARD)
    expect(got == _SELF_TEST_EXPECTED,
           f"extraction: extra {sorted(got - _SELF_TEST_EXPECTED)}, "
           f"missing {sorted(_SELF_TEST_EXPECTED - got)}")
    expect(metric_names("sum(rate(x[5m]))") == {"x"}, "simple rate")
    expect(metric_names('x{a="b{c}"} + y offset 5m') == {"x", "y"}, "strings, offset")
    expect(metric_names("vector(1) * on() group_left() z") == {"z"}, "empty grouping")
    expect(metric_names("sum without (instance) (a) or b bool") == {"a", "b"}, "without, bool")

    expect(missing_metrics(got, _SELF_TEST_SCRAPE) == [], "complete scrape must pass")
    expect(after_event("tensorgate_shadow_duration_seconds_bucket") is not None, "event histogram")
    expect(after_event("tensorgate_requests_total") is None, "always-present metric")
    # A histogram counts as present through its _bucket series.
    expect(missing_metrics({"gw_duration_seconds"}, _SELF_TEST_SCRAPE) == [], "histogram base name")
    # Remove the buckets and the inflight gauge: both must be reported.
    partial = "\n".join(line for line in _SELF_TEST_SCRAPE.splitlines()
                        if not line.startswith(("gw_duration_seconds_bucket", "gw_inflight")))
    missing = [name for name, _ in missing_metrics(got | {"gw_duration_seconds"}, partial)]
    expect(missing == ["gw_duration_seconds", "gw_duration_seconds_bucket", "gw_inflight"],
           f"partial scrape: got {missing}")
    # Declared but sample-less families are absent.
    declared_only = "# TYPE lonely counter\n"
    expect([n for n, _ in missing_metrics({"lonely"}, declared_only)] == ["lonely"],
           "TYPE without samples")

    if importlib.util.find_spec("promql_parser") is None:
        print("self-test: promql-parser not installed, syntax checks skipped", file=sys.stderr)
    else:
        errors = check_syntax(_SELF_TEST_DASHBOARD)
        expect(errors == [], f"syntax check of the test dashboard: {errors}")
        bad = {"panels": [{"id": 9, "targets": [{"refId": "A", "expr": "sum(rate(x[5m])"}]}]}
        expect(len(check_syntax(bad)) == 1, "syntax error must be reported")

    for failure in failures:
        print(f"self-test FAILED: {failure}", file=sys.stderr)
    if failures:
        return 1
    print("dashboard_metrics self-test: ok")
    return 0


# ----------------------------------------------------------------------------- CLI

def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        description="List (and check) the metrics a Grafana dashboard's PromQL queries.")
    ap.add_argument("dashboard", nargs="?", help="Grafana dashboard JSON")
    ap.add_argument("--check", metavar="SCRAPE",
                    help="a /metrics scrape (text format); '-' reads stdin")
    ap.add_argument("--strict", action="store_true",
                    help="with --check: metrics that appear only after their event must be there too")
    ap.add_argument("--syntax", action="store_true",
                    help="parse every expression with promql-parser; fail on errors")
    ap.add_argument("--self-test", action="store_true", help="run the built-in tests")
    args = ap.parse_args(argv)

    if args.self_test:
        return self_test()
    if not args.dashboard:
        ap.error("a dashboard file is required (or --self-test)")

    try:
        with open(args.dashboard, encoding="utf-8") as f:
            dash = json.load(f)
    except (OSError, ValueError) as exc:
        print(f"error: cannot read {args.dashboard}: {exc}", file=sys.stderr)
        return 2

    names = dashboard_metric_names(dash)
    if not names:
        print(f"error: no PromQL expressions found in {args.dashboard}", file=sys.stderr)
        return 2

    if args.syntax:
        try:
            errors = check_syntax(dash)
        except ImportError:
            print("error: --syntax needs the promql-parser package", file=sys.stderr)
            return 2
        for error in errors:
            print(f"error: {error}", file=sys.stderr)
        if errors:
            return 1

    if args.check:
        try:
            if args.check == "-":
                text = sys.stdin.read()
            else:
                with open(args.check, encoding="utf-8") as f:
                    text = f.read()
        except OSError as exc:
            print(f"error: cannot read {args.check}: {exc}", file=sys.stderr)
            return 2
        missing = missing_metrics(names, text)
        waiting = [] if args.strict else [(n, after_event(n)) for n, _ in missing if after_event(n)]
        missing = [(n, why) for n, why in missing if args.strict or not after_event(n)]
        for name, event in waiting:
            print(f"not yet: {name} (appears after {event})")
        for name, why in missing:
            print(f"missing: {name} ({why})")
        if missing:
            print(f"{len(missing)} of {len(names)} queried metrics absent from {args.check}",
                  file=sys.stderr)
            return 1
        print(f"{len(names) - len(waiting)} of {len(names)} queried metrics present in {args.check}"
              + (f", {len(waiting)} not yet (they appear after their event)" if waiting else ""),
              file=sys.stderr)
        return 0

    for name in sorted(names):
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
