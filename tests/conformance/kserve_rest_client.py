#!/usr/bin/env python3
"""The real kserve ``InferenceRESTClient`` (V2 protocol), run in the KServe
venv (no pytest there): the same requests to KServe and to Triton directly
and through tensorgate, ``as_numpy()`` of every output compared.

Usage: kserve_rest_client.py  (needs TENSORGATE_KSERVE_URL and
TENSORGATE_TRITON_URL; appends cases to $TENSORGATE_CONFORMANCE_RESULTS;
exit status 1 if any case failed, 0 with a SKIPPED line when no backend URL
is set outside CI).
"""
import asyncio
import json
import os
import sys
import traceback

import numpy as np
from kserve import InferenceRESTClient, InferInput, InferRequest, RESTConfig
from kserve.protocol.infer_type import RequestedOutput

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tg_gateway import Gateway  # noqa: E402

SUITE = "kserve-client"
AREA = "kserve InferenceRESTClient"

A = np.array([[1, 2, -3, 2**31 - 1]], dtype=np.int32)
B = np.array([[1, 1, 1, 1]], dtype=np.int32)
IDENTITY = {
    "INT32": np.array([-(2**31), 2**31 - 1], dtype=np.int32),
    "INT64": np.array([-(2**63), 2**63 - 1], dtype=np.int64),
    "FP32": np.array([0.1, -0.0, 3.4028235e38], dtype=np.float32),
    "FP64": np.array([0.1, 5e-324], dtype=np.float64),
    "UINT8": np.array([0, 255], dtype=np.uint8),
    "BOOL": np.array([True, False], dtype=np.bool_),
    "BYTES": np.array([b"hello", "h\u00e9".encode()], dtype=np.object_),
}


def request(model, arrays, binary, outputs=None):
    inputs = []
    for name, (dtype, arr) in arrays.items():
        i = InferInput(name=name, shape=list(arr.shape), datatype=dtype)
        i.set_data_from_numpy(arr, binary_data=binary)
        inputs.append(i)
    outs = None
    if outputs:
        outs = [RequestedOutput(n, parameters={"binary_data": binary}) for n in outputs]
    return InferRequest(model_name=model, infer_inputs=inputs, request_id="kc", request_outputs=outs)


def arrays_of(resp):
    return {o.name: o.as_numpy() for o in resp.outputs}


def same(a, b):
    if set(a) != set(b):
        return False
    for k in a:
        x, y = a[k], b[k]
        if x.dtype == np.object_ or y.dtype == np.object_:
            norm = lambda v: [e if isinstance(e, bytes) else str(e).encode() for e in v.flat]  # noqa: E731
            if norm(x) != norm(y):
                return False
        elif x.shape != y.shape or x.tobytes() != y.tobytes():
            return False
    return True


async def run(client, url, req, model):
    return arrays_of(await client.infer(url, req, model_name=model))


async def main():
    kserve = os.environ.get("TENSORGATE_KSERVE_URL", "").rstrip("/")
    triton = os.environ.get("TENSORGATE_TRITON_URL", "").rstrip("/")
    if not kserve or not triton:
        if os.environ.get("CI") and os.environ.get("TENSORGATE_CONFORMANCE_SKIP") != "1":
            print("TENSORGATE_KSERVE_URL / TENSORGATE_TRITON_URL not set and CI is", file=sys.stderr)
            return 1
        print("*** SKIPPED: kserve client conformance needs TENSORGATE_KSERVE_URL and TENSORGATE_TRITON_URL ***")
        if os.environ.get("TENSORGATE_SKIP_LOG"):
            with open(os.environ["TENSORGATE_SKIP_LOG"], "a") as log:
                log.write("tests/conformance/kserve_rest_client.py: TENSORGATE_KSERVE_URL or TENSORGATE_TRITON_URL is not set" + "\n")
        return 0
    results = os.environ.get("TENSORGATE_CONFORMANCE_RESULTS")
    failed = 0
    cases = []
    for binary in (True, False):
        form = "binary" if binary else "JSON"
        simple = {"INPUT0": ("INT32", A), "INPUT1": ("INT32", B)}
        cases.append(("kserve_simple", form, kserve, "kserve_simple", request("kserve_simple", simple, binary)))
        cases.append((
            "kserve_simple, OUTPUT1 only", form, kserve, "kserve_simple",
            request("kserve_simple", simple, binary, outputs=["OUTPUT1"]),
        ))
        for dtype, arr in IDENTITY.items():
            cases.append((f"kserve_identity {dtype}", form, kserve, "kserve_identity",
                          request("kserve_identity", {"INPUT0": (dtype, arr)}, binary)))
        triton_simple = {"INPUT0": ("INT32", np.arange(16, dtype=np.int32).reshape(1, 16)),
                         "INPUT1": ("INT32", np.ones((1, 16), dtype=np.int32))}
        cases.append(("Triton simple", form, triton, "simple", request("simple", triton_simple, binary)))
        cases.append(("Triton identity_fp32", form, triton, "identity_fp32",
                      request("identity_fp32", {"INPUT0": ("FP32", IDENTITY["FP32"])}, binary)))
    client = InferenceRESTClient(RESTConfig(protocol="v2", retries=0, timeout=30))
    log_dir = os.environ.get("TENSORGATE_CONFORMANCE_DIR")
    with Gateway(triton_url=triton, kserve_url=kserve, log_dir=log_dir) as gw:
        for row, col, backend, model, req in cases:
            ok, detail = True, ""
            try:
                d = await run(client, backend, req, model)
                v = await run(client, gw.url, req, model)
                if not same(d, v):
                    ok, detail = False, f"direct {d} != gateway {v}"
            except Exception:  # a failing case is recorded, not fatal
                ok, detail = False, traceback.format_exc(limit=3)[-800:]
            failed += not ok
            print(f"[{SUITE}] {row}/{col}: {'pass' if ok else 'FAIL ' + detail}")
            if results:
                with open(results, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"suite": SUITE, "area": AREA, "row": row, "col": col,
                                        "ok": ok, "detail": detail}) + "\n")
    print(f"{len(cases) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
