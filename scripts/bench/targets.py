"""The targets a benchmark result is held against, and the smoke run's line
(half a target) for scripts/bench/report.py. A Check only judges numbers it
is given; it never measures or rounds them.

Half a target: a floor of T fails the smoke run below T/2; a ceiling of T
(a ratio or a latency) fails it above 2T.
"""

import statistics

from fmt import span, value


class Check:
    """One target: NAME, the run's VALUE (a ratio of medians, or a
    difference of medians in µs), TARGET, OP (">=" a floor, "<=" a
    ceiling; None when the run gave nothing to judge, which fails the smoke
    run), UNIT ("x" or "µs"), the per-round values, and how the smoke
    run judges it: "median" (VALUE) or "best" (the best round, when noise
    only ever pushes one way: then only every round past the line fails).
    SMOKE False: reported, not judged."""

    def __init__(self, name, val, target, op, unit, rounds, judge="median", smoke=True):
        assert op in (">=", "<=") and unit in ("x", "µs") and judge in ("median", "best")
        self.name, self.value, self.target, self.op, self.unit = name, val, target, op, unit
        self.rounds, self.judge, self.smoke = list(rounds), judge, smoke

    def met(self):
        if self.value is None:
            return False
        return self.value >= self.target if self.op == ">=" else self.value <= self.target

    def line(self):
        """The smoke run's line: half the target."""
        return self.target / 2 if self.op == ">=" else self.target * 2

    def past(self, v):
        return v < self.line() if self.op == ">=" else v > self.line()

    def judged(self):
        """The value the smoke run judges."""
        if self.judge == "best" and self.rounds:
            return max(self.rounds) if self.op == ">=" else min(self.rounds)
        return self.value

    def smoke_failed(self):
        return self.smoke and (self.value is None or self.past(self.judged()))

    def state(self):
        if self.met():
            return "met"
        if self.value is None:
            return "no value: a target served no request"
        if not self.smoke:
            return "missed; not checked by --smoke"
        return "missed, past the --smoke line" if self.past(self.judged()) else "missed"

    def row(self):
        past = ">" if self.op == "<=" else "<"
        smoke = f"{past} {value(self.line(), self.unit)}" + (" in every round" if self.judge == "best" else "")
        if not self.smoke:
            smoke = "not checked"
        result = "-" if self.value is None else value(self.value, self.unit)
        return (f"| {self.name} | {self.op} {value(self.target, self.unit)} | {result} | "
                f"{span(self.rounds, self.unit)} | {'met' if self.met() else '**missed**'} | {smoke} |")

    def failure(self):
        if self.value is None:
            return f"{self.name}: no value (a target served no request)"
        side = "below" if self.op == ">=" else "above"
        judged = "its best round " if self.judge == "best" else ""
        return (f"{self.name}: {judged}{value(self.judged(), self.unit)}, {side} "
                f"{value(self.line(), self.unit)} (half the target)")


def table(checks):
    out = ["| target | aim | result | per-round range | | `--smoke` fails when |",
           "| --- | --- | --- | --- | --- | --- |"]
    return out + [c.row() for c in checks]


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None
