"""The tables of scripts/bench-grpc.sh, in markdown, from its work folder:

    python3 grpc_report.py WORK CONNECTIONS STREAMS DURATION

passthrough.tsv (one line per h2load run: case, target, round, calls/s,
mean ms, calls, failed, CPU ticks of the target's processes, reply data
bytes), grpc.tsv (one line per tritonclient.grpc call: elements, target,
round, sequence, ms) and json.tsv (the same for the V2 JSON client, with
the reply's bytes). Medians throughout; every ratio is of two medians from
the same run.
"""

import os
import statistics
import sys
from collections import defaultdict

TICK = os.sysconf("SC_CLK_TCK")


def rows(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def median(values):
    return statistics.median(values) if values else float("nan")


def passthrough(work, conns, streams, duration):
    runs = rows(os.path.join(work, "passthrough.tsv"))
    if not runs:
        return
    by = defaultdict(list)
    for case, target, _rnd, rps, mean, calls, failed, ticks, data in runs:
        if int(failed):
            sys.exit(f"grpc_report: {target} {case}: h2load counted {failed} failed calls")
        by[(case, target)].append(
            (float(rps), float(mean), int(ticks) / TICK / int(calls) * 1e6, int(data) / int(calls))
        )
    print(f"#### gRPC passthrough: h2load, {conns} connections x {streams} streams, "
          f"{duration} s per run, medians of {len(runs) // max(1, len(by))} rounds\n")
    print("| call | target | calls/s | mean latency | CPU per call | reply bytes per call |")
    print("|---|---|---:|---:|---:|---:|")
    cpu = {}
    for (case, target), v in sorted(by.items()):
        rps, mean, us, data = (median([r[i] for r in v]) for i in range(4))
        cpu[(case, target)] = us
        shown = f"{us:.1f} µs" if target != "direct" else "(backend)"
        name = {"infer": "ModelInfer `simple`", "ready": "ServerReady"}[case]
        print(f"| {name} | {target} | {rps:,.0f} | {mean:.3f} ms | {shown} | {data:.0f} |")
    print()
    for case in ("infer", "ready"):
        t, n = cpu.get((case, "tensorgate")), cpu.get((case, "nginx"))
        if t and n:
            print(f"- {case}: tensorgate's CPU per call is {t / n:.2f}x nginx grpc_pass's")
    print()


def latency_table(title, data, baseline, unit_note):
    by = defaultdict(list)
    for n, target, *_rest in data:
        by[(int(n), target)].append(float(_rest[2]))
    sizes = sorted({n for n, _ in by})
    targets = sorted({t for _, t in by}, key=lambda t: (t != baseline, t))
    print(f"#### {title}\n")
    print("| elements | " + " | ".join(targets) + " | " +
          " | ".join(f"{t} / {baseline}" for t in targets if t != baseline) + " |")
    print("|---:|" + "---:|" * (2 * len(targets) - 1))
    for n in sizes:
        med = {t: median(by[(n, t)]) for t in targets}
        cells = [f"{med[t]:.3f} ms" for t in targets]
        ratios = [f"{med[t] / med[baseline]:.2f}x (+{med[t] - med[baseline]:.3f} ms)"
                  for t in targets if t != baseline]
        print(f"| {n:,} | " + " | ".join(cells + ratios) + " |")
    print(f"\n{unit_note}\n")


def main():
    work, conns, streams, duration = sys.argv[1:5]
    with open(os.path.join(work, "meta.txt")) as f:
        for line in f:
            print(f"- {line.strip()}")
    print()
    passthrough(work, conns, streams, duration)
    grpc = rows(os.path.join(work, "grpc.tsv"))
    if grpc:
        latency_table(
            "tritonclient.grpc to Triton: direct, through tensorgate to its HTTP port "
            "(via-http) and to its gRPC port (via-grpc)",
            grpc, "direct",
            "Median time per call until the reply is decoded, FP32 identity_fp32, "
            "raw contents, sequential calls on one channel per target.")
    json_rows = rows(os.path.join(work, "json.tsv"))
    if json_rows:
        latency_table(
            "V2 JSON client (http.client) to Triton: direct to its HTTP port, through "
            "tensorgate to its HTTP port (via-http, binary out) and to its gRPC port (via-grpc)",
            json_rows, "direct-http",
            "Median time per request until the last reply byte, keep-alive connections.")


if __name__ == "__main__":
    main()
