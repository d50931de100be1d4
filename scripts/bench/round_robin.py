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
import http.client
import os
import statistics
import sys
import time
import urllib.parse

from json_client import binary_request, request_body

WARMUP = 20


def parse_target(spec):
    name, _, rest = spec.partition("=")
    parts = rest.split(",")
    u = urllib.parse.urlsplit(parts[0])
    ok = (len(parts) in (3, 4) and u.scheme == "http" and u.hostname in ("127.0.0.1", "localhost", "::1")
          and parts[2] in ("json", "binary") and (len(parts) == 3 or parts[3].isdigit()))
    if not ok:
        sys.exit(f"round_robin: {spec!r}: NAME=http://127.0.0.1:PORT,MODEL,json|binary[,PID]")
    return name, u.hostname, u.port, parts[1], parts[2], int(parts[3]) if len(parts) == 4 else None


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
    body, raw = request_body(args.n, args.input)
    targets = []
    for spec in args.target:
        name, host, port, model, kind, pid = parse_target(spec)
        if kind == "binary":
            b, h = binary_request(args.n, args.input, raw)
        else:
            b, h = body, {"Content-Type": "application/json"}
        conn = http.client.HTTPConnection(host, port, timeout=30)
        targets.append(dict(name=name, conn=conn, path=f"/v2/models/{model}/infer", body=b, headers=h, pid=pid, lat=[]))
    for i in range(WARMUP + args.requests):
        if i == WARMUP:
            for t in targets:
                t["ticks"] = cpu_ticks(t["pid"]) if t["pid"] else None
        for t in targets:
            start = time.perf_counter()
            t["conn"].request("POST", t["path"], t["body"], t["headers"])
            resp = t["conn"].getresponse()
            reply = resp.read()
            if resp.status != 200:
                sys.exit(f"round_robin: {t['name']}: HTTP {resp.status}: {reply[:200]!r}")
            if i >= WARMUP:
                t["lat"].append(time.perf_counter() - start)
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
