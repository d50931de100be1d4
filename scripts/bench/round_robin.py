"""A sequential client that goes round robin over V2 targets, one request
each in turn: every request then finds the servers' cores as the other
targets left them (cold), which is how a gateway in front of a busy
backend sees its requests at c=1. Prints each target's median and p90
latency and, for targets given a PID, the CPU that process spent per round
(one request to each target; user+system from /proc, all its threads): its
CPU per request when it serves that target alone.

    python3 scripts/bench/round_robin.py --n 256 --requests 2500 \
        --target direct-binary=http://127.0.0.1:P1,identity_fp32,binary \
        --target before=http://127.0.0.1:P2,identity_fp32,json,PID2 \
        --target after=http://127.0.0.1:P3,identity_fp32,json,PID3

TARGET is NAME=URL,MODEL,json|binary[,PID]. The request holds N FP32 values
as json_client.py writes them (JSON, or Triton's binary extension with
binary output). Used for the link-order measurements of docs/PERFORMANCE.md
(issue 25, the seventh look). Loopback only; every request has a timeout.
"""

import argparse
import os
import statistics
import sys

from json_client import Target, loopback_target, request_body

WARMUP = 20


def parse_target(spec):
    """NAME=URL,MODEL,json|binary[,PID]: (Target, MODEL, PID or None)."""
    name, _, rest = spec.partition("=")
    parts = rest.split(",")
    if len(parts) not in (3, 4) or parts[2] not in ("json", "binary") or not (len(parts) == 3 or parts[3].isdigit()):
        sys.exit(f"round_robin: {spec!r}: NAME=http://127.0.0.1:PORT,MODEL,json|binary[,PID]")
    target = Target(*loopback_target(f"{name}={parts[0]}"), 30, binary=parts[2] == "binary")
    return target, parts[1], int(parts[3]) if len(parts) == 4 else None


def cpu_ticks(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", action="append", required=True)
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--requests", type=int, default=1000)
    p.add_argument("--input", default="INPUT0")
    args = p.parse_args()
    bodies = {args.n: request_body(args.n, args.input)}
    targets = []
    for spec in args.target:
        target, model, pid = parse_target(spec)
        body, headers = target.request(args.n, bodies, args)
        targets.append(dict(name=target.name, target=target, path=f"/v2/models/{model}/infer", body=body,
                            headers=headers, pid=pid, lat=[]))
    for i in range(WARMUP + args.requests):
        if i == WARMUP:
            for t in targets:
                t["ticks"] = cpu_ticks(t["pid"]) if t["pid"] else None
        for t in targets:
            elapsed, status, _, reply = t["target"].post(t["path"], t["body"], t["headers"])
            if status != 200:
                sys.exit(f"round_robin: {t['name']}: HTTP {status}: {reply[:200]!r}")
            if i >= WARMUP:
                t["lat"].append(elapsed)
    hz = os.sysconf("SC_CLK_TCK")
    for t in targets:
        lat = sorted(t["lat"])
        line = f"{t['name']:16s} p50 {statistics.median(lat) * 1e6:6.0f} us  p90 {lat[int(0.9 * len(lat))] * 1e6:6.0f} us"
        if t["pid"]:
            used = (cpu_ticks(t["pid"]) - t["ticks"]) / hz
            line += f"  its process's CPU per round {used * 1e6 / args.requests:5.0f} us"
        print(line)


if __name__ == "__main__":
    main()
