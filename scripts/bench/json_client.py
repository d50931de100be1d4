"""A V2 JSON client for scripts/bench-proxy.sh: the same FP32 request to a
Triton directly and through tensorgate, alternating, with keep-alive
connections (http.client), timing each request until the whole reply is read.

    python json_client.py --target direct=http://127.0.0.1:P1 \
        --target gateway=http://127.0.0.1:P2 --model identity_fp32 \
        --sizes 256=40,16384=20,1048576=4 --rounds 3 --out lat.tsv

A --binary-target gets the same values in Triton's binary tensor data
extension instead, as tritonclient sends them by default (a JSON header with
`binary_data_size`, the raw little-endian floats after it, and
`binary_data_output`), so that nothing needs converting on the way: sent
through tensorgate, it measures the hop without the conversions.

Size by size (smallest first), each round sends K requests to each target
in turn, starting one target further on each round. Every
reply is parsed as JSON after its timing and checked (output name, shape,
datatype, element count); the first reply of each target and size is also
checked value for value against the request, as FP32. Writes one line per
request to --out: size, target, round, sequence, latency in ms, reply bytes;
and each request body's size to OUT.bodies.
Bounded: a socket timeout per request and a deadline for the whole run.
Only loopback URLs are accepted.
"""

import argparse
import http.client
import json
import random
import struct
import sys
import time
import urllib.parse

WARMUP = 5  # requests per target before timing (one for sizes over 64K elements)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", action="append", required=True, help="NAME=URL")
    p.add_argument("--binary-target", action="append", default=[], help="NAME=URL, sent binary")
    p.add_argument("--model", default="identity_fp32")
    p.add_argument("--input", default="INPUT0")
    p.add_argument("--output", default="OUTPUT0")
    p.add_argument("--sizes", required=True, help="N=K,... (elements=requests per round)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--timeout", type=float, default=120.0, help="socket timeout, s")
    p.add_argument("--deadline", type=float, default=1800.0, help="whole run, s")
    p.add_argument("--out", required=True)
    return p.parse_args()


def loopback_target(spec):
    name, _, url = spec.partition("=")
    u = urllib.parse.urlsplit(url)
    if u.scheme != "http" or u.hostname not in ("127.0.0.1", "localhost", "::1"):
        sys.exit(f"json_client: {spec!r}: only http://127.0.0.1:PORT targets")
    return name, u.hostname, u.port


def request_body(n, input_name):
    """FP32 values as a numpy client sends them: json.dumps(a.tolist()) of a
    float32 array, i.e. each float widened to double and printed with repr."""
    rng = random.Random(n)
    raw = struct.pack(f"<{n}f", *(rng.uniform(-1.0, 1.0) for _ in range(n)))
    values = struct.unpack(f"<{n}f", raw)
    doc = {"inputs": [{"name": input_name, "shape": [n], "datatype": "FP32", "data": list(values)}]}
    return json.dumps(doc).encode(), raw


def binary_request(n, input_name, raw):
    """The same values in Triton's binary extension, binary output asked
    for: (body, headers), as tritonclient.http writes them by default."""
    header = json.dumps({
        "inputs": [{"name": input_name, "shape": [n], "datatype": "FP32",
                    "parameters": {"binary_data_size": len(raw)}}],
        "parameters": {"binary_data_output": True},
    }).encode()
    return header + raw, {"Content-Type": "application/octet-stream",
                          "Inference-Header-Content-Length": str(len(header))}


class Target:
    def __init__(self, name, host, port, timeout, binary=False):
        self.name, self.host, self.port, self.timeout = name, host, port, timeout
        self.binary = binary
        self.conn = None

    def request(self, n, bodies, args):
        """This target's request for N elements: (body, headers)."""
        body, raw = bodies[n]
        if self.binary:
            return binary_request(n, args.input, raw)
        return body, {"Content-Type": "application/json"}

    def post(self, path, body, headers):
        """Returns (seconds to the last byte of the reply, status, reply)."""
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            start = time.perf_counter()
            try:
                self.conn.request("POST", path, body=body, headers=headers)
                resp = self.conn.getresponse()
                reply = resp.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                # A keep-alive connection the server closed: one new connection.
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
                continue
            elapsed = time.perf_counter() - start
            if resp.getheader("Connection", "").lower() == "close":
                self.conn.close()
                self.conn = None
            return elapsed, resp.status, resp.getheader("Inference-Header-Content-Length"), reply
        raise AssertionError("unreachable")


def check_binary_reply(where, n, ihcl, reply, args, raw):
    """A binary reply: the header's one output, FP32 [n], its
    binary_data_size bytes right after the header and nothing else."""
    if ihcl is None or not ihcl.isdigit() or int(ihcl) > len(reply):
        sys.exit(f"json_client: {where}: a binary reply needs Inference-Header-Content-Length, got {ihcl!r}")
    doc = json.loads(reply[:int(ihcl)])
    outs = [o for o in doc.get("outputs", []) if o.get("name") == args.output]
    if len(outs) != 1:
        sys.exit(f"json_client: {where}: no output {args.output!r} in the reply")
    out, data = outs[0], reply[int(ihcl):]
    size = out.get("parameters", {}).get("binary_data_size")
    if out.get("shape") != [n] or out.get("datatype") != "FP32" or size != 4 * n or len(data) != 4 * n:
        sys.exit(f"json_client: {where}: output is {out.get('datatype')} {out.get('shape')} with "
                 f"binary_data_size {size} and {len(data)} bytes, expected FP32 [{n}] in {4 * n}")
    if raw is not None and data != raw:
        sys.exit(f"json_client: {where}: output values differ from the input")


def check_reply(target, n, status, ihcl, reply, args, raw=None):
    where = f"{target.name}, N={n}"
    if status != 200:
        sys.exit(f"json_client: {where}: HTTP {status}: {reply[:300]!r}")
    if target.binary:
        return check_binary_reply(where, n, ihcl, reply, args, raw)
    doc = json.loads(reply)
    outs = [o for o in doc.get("outputs", []) if o.get("name") == args.output]
    if len(outs) != 1:
        sys.exit(f"json_client: {where}: no output {args.output!r} in the reply")
    out = outs[0]
    if out.get("shape") != [n] or out.get("datatype") != "FP32" or len(out.get("data", [])) != n:
        sys.exit(f"json_client: {where}: output is {out.get('datatype')} {out.get('shape')} "
                 f"with {len(out.get('data', []))} values, expected FP32 [{n}]")
    if raw is not None and struct.pack(f"<{n}f", *out["data"]) != raw:
        sys.exit(f"json_client: {where}: output values differ from the input")


def main():
    args = parse_args()
    deadline = time.monotonic() + args.deadline
    targets = [Target(*loopback_target(t), args.timeout) for t in args.target]
    targets += [Target(*loopback_target(t), args.timeout, binary=True) for t in args.binary_target]
    sizes = sorted(tuple(int(x) for x in s.split("=")) for s in args.sizes.split(","))
    path = f"/v2/models/{args.model}/infer"
    bodies = {n: request_body(n, args.input) for n, _ in sizes}
    with open(args.out + ".bodies", "w") as f:
        f.writelines(f"{n}\t{len(body)}\n" for n, (body, _) in bodies.items())
    # Size by size, smallest first: a size's rounds run before any larger
    # request, so what a large request leaves behind (in the backend and on
    # the machine) cannot weigh on a small size's rounds. Each round starts
    # at the next target, so no target always follows the same one.
    with open(args.out, "w") as out:
        for n, k in sizes:
            for t in targets:  # warm-up (connections, caches), and the value-for-value check
                body, headers = t.request(n, bodies, args)
                for i in range(WARMUP if n <= 65536 else 1):
                    _, status, ihcl, reply = t.post(path, body, headers)
                    check_reply(t, n, status, ihcl, reply, args, raw=None if i else bodies[n][1])
            for rnd in range(1, args.rounds + 1):
                first = (rnd - 1) % len(targets)
                for t in targets[first:] + targets[:first]:
                    body, headers = t.request(n, bodies, args)
                    for seq in range(1, k + 1):
                        if time.monotonic() > deadline:
                            sys.exit(f"json_client: deadline of {args.deadline:.0f} s passed")
                        elapsed, status, ihcl, reply = t.post(path, body, headers)
                        check_reply(t, n, status, ihcl, reply, args)
                        out.write(f"{n}\t{t.name}\t{rnd}\t{seq}\t{elapsed * 1000:.3f}\t{len(reply)}\n")
                    out.flush()
                print(f"json_client: N={n}: round {rnd}/{args.rounds} done", file=sys.stderr)


if __name__ == "__main__":
    main()
