#!/usr/bin/env python3
"""Getting started: a V2 (KServe / Triton) JSON inference request, standard library only.

    cargo run --release                               # the gateway and its demo backend
    python3 examples/v2_client.py                     # another terminal
    python3 examples/v2_client.py --url http://127.0.0.1:8000 --key KEY   # a route with API keys

Sends the demo's `simple` model two [1, 16] INT32 inputs as JSON; the gateway
converts them to Triton's binary tensor format for the backend and the reply
back to JSON. Prints the outputs and exits 1 unless they are the sum and the
difference. Then sends one request that breaks the route's rules (a [1, 8]
input) and prints the gateway's 400, which names the route, input and rule.
"""

import argparse
import json
import sys
import urllib.error
import urllib.request


def infer(url, model, body, key=None):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(f"{url}/v2/models/{model}/infer", data=json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000", help="the gateway's data port")
    ap.add_argument("--key", help="an API key, for a route with [routes.auth]")
    args = ap.parse_args()
    url = args.url.rstrip("/")
    a, b = list(range(1, 17)), [1] * 16
    body = {"inputs": [
        {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": a},
        {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": b},
    ]}
    status, reply = infer(url, "simple", body, args.key)
    if status != 200:
        print(f"infer: HTTP {status}: {reply}", file=sys.stderr)
        return 1
    outputs = {o["name"]: o["data"] for o in reply["outputs"]}
    for name, data in sorted(outputs.items()):
        print(f"{name}: {data}")
    if outputs.get("OUTPUT0") != [x + y for x, y in zip(a, b)] or outputs.get("OUTPUT1") != [x - y for x, y in zip(a, b)]:
        print("unexpected outputs", file=sys.stderr)
        return 1

    # A request the route's rules refuse before the backend sees it.
    body["inputs"][0].update(shape=[1, 8], data=a[:8])
    status, reply = infer(url, "simple", body, args.key)
    print(f"a [1, 8] INPUT0: HTTP {status}: {reply.get('error')}")
    return 0 if status == 400 else 1


if __name__ == "__main__":
    sys.exit(main())
