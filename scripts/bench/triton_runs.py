"""The JSON-client comparison of scripts/bench-proxy.sh as tables and
checks: reads json_client.py's per-request lines (size, target, round,
sequence, latency ms, reply bytes) and gives medians and speedups (direct
latency over through-tensorgate latency, and over through-nginx latency when
nginx forwarded the same requests as they are). Reads numbers only; never runs
anything.
"""

import statistics

from fmt import ms, ratio, size, span
from targets import Check

# Issue 25's target 5: through tensorgate at least this much faster.
TARGET = {256: 0.9, 16384: 2.5, 1048576: 5.0}


def label(n):
    return {256: "256", 16384: "16K", 1048576: "1M"}.get(n, str(n))


class Triton:
    def __init__(self, rows):
        self.reqs = [dict(n=int(r[0]), target=r[1], round=int(r[2]), ms=float(r[4]), reply=int(r[5]))
                     for r in rows]
        self.sizes = sorted({r["n"] for r in self.reqs})
        self.rounds = sorted({r["round"] for r in self.reqs})

    def lat(self, n, target, rnd=None):
        return [r["ms"] for r in self.reqs if r["n"] == n and r["target"] == target
                and (rnd is None or r["round"] == rnd)]

    def speedup(self, n, rnd=None):
        return self.ratio(n, "gateway", rnd)

    def has(self, target):
        return any(r["target"] == target for r in self.reqs)

    def ratio(self, n, over, rnd=None):
        """direct's median latency over `over`'s: above 1 when `over` is faster."""
        return statistics.median(self.lat(n, "direct", rnd)) / statistics.median(self.lat(n, over, rnd))

    def tables(self, meta):
        nginx = self.has("nginx")
        head = ("| N (FP32) | JSON request | requests | direct median | through tensorgate median | "
                "speedup: direct / through tensorgate (per-round range) |")
        rule = "| --- | --- | --- | --- | --- | --- |"
        if nginx:
            head += " through nginx median | direct / through nginx (per-round range) |"
            rule += " --- | --- |"
        out = [head, rule]
        for n in self.sizes:
            d, g = self.lat(n, "direct"), self.lat(n, "gateway")
            per_round = [self.speedup(n, r) for r in self.rounds]
            line = (f"| {label(n)} | {size(int(meta.get(f'body_{n}', 0)))} | {len(d)} + {len(g)} | "
                    f"{ms(statistics.median(d))} | {ms(statistics.median(g))} | "
                    f"{ratio(self.speedup(n))} ({span(per_round)}) |")
            if nginx:
                x = [self.ratio(n, "nginx", r) for r in self.rounds]
                line += (f" {ms(statistics.median(self.lat(n, 'nginx')))} | "
                         f"{ratio(self.ratio(n, 'nginx'))} ({span(x)}) |")
            out.append(line)
        return out

    def binary_table(self):
        """Where the time through tensorgate goes, when the client also sent
        the values binary (json_client's --binary-target): Triton's own
        binary speed, the hop alone (a binary client through tensorgate:
        nothing converted) and the conversions (JSON through tensorgate
        minus binary through tensorgate). Empty without those targets."""
        if not (self.has("direct-binary") and self.has("gateway-binary")):
            return []
        out = ["The same values sent binary as well (Triton's binary extension both ways, as tritonclient "
               "sends by default), directly and through tensorgate, which then converts nothing: the hop "
               "costs the difference of the two binary medians, and tensorgate's two conversions the "
               "difference of its JSON and binary medians.", "",
               "| N (FP32) | direct, JSON | direct, binary | through tensorgate, JSON | through tensorgate, "
               "binary | the hop (binary through tensorgate - binary direct) | the conversions (JSON "
               "through tensorgate - binary through tensorgate) |",
               "| --- | --- | --- | --- | --- | --- | --- |"]
        for n in self.sizes:
            d, db, g, gb = (statistics.median(self.lat(n, t))
                            for t in ("direct", "direct-binary", "gateway", "gateway-binary"))
            out.append(f"| {label(n)} | {ms(d)} | {ms(db)} | {ms(g)} | {ms(gb)} | {ms(gb - db)} | {ms(g - gb)} |")
        return out

    def checks(self):
        return [Check(f"5. JSON client to Triton, N={label(n)}: speedup through tensorgate", self.speedup(n),
                      TARGET[n], ">=", "x", [self.speedup(n, r) for r in self.rounds])
                for n in self.sizes if n in TARGET]

    def raw(self):
        nginx = self.has("nginx")
        out = ["| round | N | direct median | gateway median | speedup |"
               + (" nginx median | direct / nginx |" if nginx else ""),
               "| --- | --- | --- | --- | --- |" + (" --- | --- |" if nginx else "")]
        for rnd in self.rounds:
            for n in self.sizes:
                d, g = statistics.median(self.lat(n, "direct", rnd)), statistics.median(self.lat(n, "gateway", rnd))
                line = f"| {rnd} | {label(n)} | {d:.2f} ms | {g:.2f} ms | {d / g:.2f}x |"
                if nginx:
                    x = statistics.median(self.lat(n, "nginx", rnd))
                    line += f" {x:.2f} ms | {d / x:.2f}x |"
                out.append(line)
        return out


def per_round(requests):
    """"256=40,16384=20" as "40 requests of 256 elements, 20 of 16K"."""
    parts = [tuple(int(x) for x in p.split("=")) for p in requests.split(",")]
    text = [f"{k} {'requests ' if i == 0 else ''}of {label(n)}" + (" elements" if i == 0 else "")
            for i, (n, k) in enumerate(parts)]
    return ", ".join(text)
