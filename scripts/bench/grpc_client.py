"""tritonclient.grpc for scripts/bench-grpc.sh: the same FP32 identity
request to several gRPC targets (a Triton directly, and tensorgate in front
of it), alternating, timing each call until its reply is decoded.

    python grpc_client.py --target direct=127.0.0.1:P1 \
        --target via-http=127.0.0.1:P2 --target via-grpc=127.0.0.1:P3 \
        --model identity_fp32 --sizes 256=100,16384=40,1048576=6 \
        --rounds 3 --out grpc.tsv

Each round sends, for each size, K calls to each target in turn (inputs as
raw_input_contents, as tritonclient sends numpy arrays). The first reply of
each target and size is checked value for value against the request; every
reply's shape and datatype is checked. Writes one line per call to --out:
size, target, round, sequence, latency in ms. Bounded: a client timeout per
call and a deadline for the whole run. Only loopback targets are accepted.
"""

import argparse
import sys
import time

import numpy as np
import tritonclient.grpc as grpcclient

WARMUP = 5  # calls per target before timing (one for sizes over 64K elements)
MAX_MESSAGE = 256 << 20


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", action="append", required=True, help="NAME=HOST:PORT")
    p.add_argument("--model", default="identity_fp32")
    p.add_argument("--sizes", required=True, help="N=K,... (elements=calls per round)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--timeout", type=float, default=120.0, help="per call, s")
    p.add_argument("--deadline", type=float, default=1800.0, help="whole run, s")
    p.add_argument("--out", required=True)
    return p.parse_args()


def loopback_target(spec):
    name, _, addr = spec.partition("=")
    host, _, port = addr.rpartition(":")
    if host not in ("127.0.0.1", "localhost", "[::1]") or not port.isdigit():
        sys.exit(f"grpc_client: {spec!r}: only 127.0.0.1:PORT targets")
    options = [
        ("grpc.max_send_message_length", MAX_MESSAGE),
        ("grpc.max_receive_message_length", MAX_MESSAGE),
    ]
    return name, grpcclient.InferenceServerClient(addr, channel_args=options)


def call(client, model, values, timeout):
    inp = grpcclient.InferInput("INPUT0", list(values.shape), "FP32")
    inp.set_data_from_numpy(values)
    out = grpcclient.InferRequestedOutput("OUTPUT0")
    start = time.perf_counter()
    result = client.infer(model, [inp], outputs=[out], client_timeout=timeout)
    got = result.as_numpy("OUTPUT0")
    return time.perf_counter() - start, got


def main():
    args = parse_args()
    deadline = time.monotonic() + args.deadline
    targets = [loopback_target(t) for t in args.target]
    sizes = [tuple(int(x) for x in s.split("=")) for s in args.sizes.split(",")]
    rng = np.random.default_rng(7)
    arrays = {n: rng.uniform(-1.0, 1.0, n).astype(np.float32) for n, _ in sizes}
    for n, _ in sizes:  # warm-up (channels, caches), and the value-for-value check
        for name, client in targets:
            for i in range(WARMUP if n <= 65536 else 1):
                _, got = call(client, args.model, arrays[n], args.timeout)
                if got is None or got.dtype != np.float32 or got.shape != (n,):
                    sys.exit(f"grpc_client: {name}, N={n}: reply is {got!r:.200}")
                if i == 0 and not np.array_equal(got, arrays[n]):
                    sys.exit(f"grpc_client: {name}, N={n}: output values differ from the input")
    with open(args.out, "w") as out:
        for rnd in range(1, args.rounds + 1):
            for n, k in sizes:
                for name, client in targets:
                    for seq in range(1, k + 1):
                        if time.monotonic() > deadline:
                            sys.exit(f"grpc_client: deadline of {args.deadline:.0f} s passed")
                        elapsed, got = call(client, args.model, arrays[n], args.timeout)
                        if got.shape != (n,):
                            sys.exit(f"grpc_client: {name}, N={n}: shape {got.shape}")
                        out.write(f"{n}\t{name}\t{rnd}\t{seq}\t{elapsed * 1000:.3f}\n")
                    out.flush()
            print(f"grpc_client: round {rnd}/{args.rounds} done", file=sys.stderr)


if __name__ == "__main__":
    main()
