#!/usr/bin/env python3
"""Re-check the Triton facts in docs/TRITON-FACTS.md against a running server.

Usage:
    eval "$(scripts/triton-backend.sh start)"
    "$TENSORGATE_CACHE_DIR/venv-triton/bin/python" scripts/backends/probe_triton.py "$TENSORGATE_TRITON_URL"
    scripts/triton-backend.sh stop

    probe_triton.py URL --sagemaker SAGEMAKER_URL   also probes the SageMaker
    front end; scripts/backends/probe_sagemaker.sh runs that inside a private
    network namespace (the SageMaker listener binds 0.0.0.0, no address flag).

Needs numpy (the venv-triton python has it). Talks plain HTTP/1.1 through
http.client so every header and byte is visible. Only loopback URLs accepted.
Prints, for each probe: the request, the status, all response headers in
order and the body (JSON text; binary tails as hex; gzip/deflate bodies are
shown decompressed as well).
"""
import gzip
import http.client
import json
import struct
import sys
import time
import urllib.parse
import zlib
from decimal import Decimal

import numpy as np

URL = None


def request(method, path, body=b"", headers=None, read_timeout=30.0):
    u = urllib.parse.urlsplit(URL)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=read_timeout)
    conn.putrequest(method, path, skip_accept_encoding=True)
    hdrs = dict(headers or {})
    if body is not None and "Transfer-Encoding" not in hdrs:
        hdrs.setdefault("Content-Length", str(len(body)))
    for k, v in hdrs.items():
        conn.putheader(k, v)
    conn.endheaders()
    if body:
        if hdrs.get("Transfer-Encoding") == "chunked":
            for i in range(0, len(body), 7):
                piece = body[i : i + 7]
                conn.send(b"%x\r\n%s\r\n" % (len(piece), piece))
            conn.send(b"0\r\n\r\n")
        else:
            conn.send(body)
    resp = conn.getresponse()
    data = resp.read()
    out = (resp.status, resp.reason, resp.getheaders(), data)
    conn.close()
    return out


def hexs(b, limit=96):
    h = b[:limit].hex()
    return h + ("..." if len(b) > limit else "")


def show_body(headers, data):
    hd = {k.lower(): v for k, v in headers}
    enc = hd.get("content-encoding")
    if enc == "gzip":
        print(f"  body (gzip, {len(data)} bytes compressed) decompressed:")
        data = gzip.decompress(data)
    elif enc == "deflate":
        print(f"  body (deflate, {len(data)} bytes compressed, zlib-wrapped="
              f"{data[:1] == b'x'}) decompressed:")
        try:
            data = zlib.decompress(data)
        except zlib.error:
            data = zlib.decompress(data, -15)
    ihcl = hd.get("inference-header-content-length")
    if ihcl is not None:
        n = int(ihcl)
        print(f"  json header ({n} bytes): {data[:n].decode('utf-8', 'replace')}")
        print(f"  binary tail ({len(data) - n} bytes): {hexs(data[n:])}")
        return
    try:
        print(f"  body: {data.decode('utf-8')}")
    except UnicodeDecodeError:
        print(f"  body (not UTF-8, {len(data)} bytes): {hexs(data, 400)}")


def probe(title, method, path, body=b"", headers=None, note=None):
    print(f"\n### {title}")
    if note:
        print(f"  note: {note}")
    shown = body if isinstance(body, bytes) else b""
    print(f"  > {method} {path} headers={headers or {}}")
    if shown:
        try:
            print(f"  > body: {shown.decode('utf-8')[:600]}")
        except UnicodeDecodeError:
            print(f"  > body ({len(shown)} bytes): {hexs(shown, 200)}")
    status, reason, hdrs, data = request(method, path, body, headers)
    print(f"  < {status} {reason}")
    for k, v in hdrs:
        print(f"  < {k}: {v}")
    show_body(hdrs, data)
    return status, hdrs, data


def jdump(obj):
    return json.dumps(obj, separators=(",", ":")).encode()


def binary_request(header_obj, *blobs, extra_headers=None):
    hdr = jdump(header_obj)
    h = {"Inference-Header-Content-Length": str(len(hdr)),
         "Content-Type": "application/octet-stream"}
    h.update(extra_headers or {})
    return hdr + b"".join(blobs), h


def bytes_elems(*items):
    return b"".join(struct.pack("<I", len(x)) + x for x in items)


SIMPLE_IN = {
    "inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16},
    ]
}


def section(name):
    print(f"\n\n======== {name} ========")


def _digits(text):
    sign, digs, exp = Decimal(text).normalize().as_tuple()
    return sign, digs, exp + len(digs)


def float_digit_stats(n=20000):
    """Compare Triton's JSON number text with the shortest round-trip text
    (Python repr, same as Ryu) for random FP32/FP64 values."""
    print("\n### JSON float text vs shortest round-trip (random values, binary in -> JSON out)")
    rng = np.random.default_rng(1)
    cases = [
        ("FP32", (rng.standard_normal(n) * 10.0 ** rng.integers(-10, 10, n)).astype(np.float32)),
        ("FP64", rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)),
    ]
    for dt, arr in cases:
        body, h = binary_request({"inputs": [{"name": "INPUT0", "datatype": dt, "shape": [arr.size],
                                              "parameters": {"binary_data_size": arr.nbytes}}]}, arr.tobytes())
        status, _, _, data = request("POST", f"/v2/models/identity_{dt.lower()}/infer", body, h)
        toks = json.loads(data, parse_float=str)["outputs"][0]["data"]
        exact = sum(1 for t, v in zip(toks, arr) if float(t) == float(v))
        diff = [(t, repr(float(v))) for t, v in zip(toks, arr) if _digits(t) != _digits(repr(float(v)))]
        longer = sum(1 for t, r in diff if len(_digits(t)[1]) > len(_digits(r)[1]))
        print(f"  {dt}: {len(toks)} values, {exact} parse back to the exact value, "
              f"{len(diff)} have other digits than the shortest round-trip text "
              f"({longer} of them longer); examples (triton, shortest): {diff[:3]}")


def sagemaker_probes(sm_body, hlen):
    """SageMaker front end (tritonserver --allow-sagemaker=true, env
    SAGEMAKER_TRITON_DEFAULT_MODEL_NAME=simple). It binds 0.0.0.0 with no
    address flag, so only run it inside a private network namespace."""
    global URL
    main_url, URL = URL, SAGEMAKER_URL
    try:
        section("SageMaker front end (/invocations, default model 'simple')")
        probe("GET /ping", "GET", "/ping", None)
        sm = "application/vnd.sagemaker-triton.binary+json;json-header-size=%d"
        probe("/invocations JSON", "POST", "/invocations", jdump(SIMPLE_IN), {"Content-Type": "application/json"})
        probe("/invocations binary input, sagemaker content type", "POST", "/invocations", sm_body,
              {"Content-Type": sm % hlen})
        probe("/invocations binary input, IHCL header instead", "POST", "/invocations", sm_body,
              {"Inference-Header-Content-Length": str(hlen)})
        probe("/invocations binary outputs requested", "POST", "/invocations",
              jdump({**SIMPLE_IN, "parameters": {"binary_data_output": True}}), {"Content-Type": "application/json"})
        probe("/invocations binary outputs, Accept-Encoding gzip", "POST", "/invocations",
              jdump({**SIMPLE_IN, "parameters": {"binary_data_output": True}}), {"Accept-Encoding": "gzip"})
        probe("/invocations json-header-size > body", "POST", "/invocations", sm_body,
              {"Content-Type": sm % (len(sm_body) + 5)})
        probe("/invocations sagemaker content type with spaces", "POST", "/invocations", sm_body,
              {"Content-Type": "application/vnd.sagemaker-triton.binary+json; json-header-size=%d" % hlen})
        probe("/invocations error (wrong dtype)", "POST", "/invocations",
              jdump({"inputs": [{**i, "datatype": "INT64"} for i in SIMPLE_IN["inputs"]]}))
        probe("GET /v2 on the sagemaker port", "GET", "/v2", None)
        probe("/v2/models/simple/infer on the sagemaker port", "POST", "/v2/models/simple/infer", jdump(SIMPLE_IN))
    finally:
        URL = main_url


SAGEMAKER_URL = None


def main():
    global URL, SAGEMAKER_URL
    args = sys.argv[1:]
    if len(args) == 3 and args[1] == "--sagemaker":
        SAGEMAKER_URL = args[2].rstrip("/")
        args = args[:1]
    if len(args) != 1:
        print(__doc__)
        return 64
    URL = args[0].rstrip("/")
    for u in (URL, SAGEMAKER_URL):
        if u and urllib.parse.urlsplit(u).hostname not in ("127.0.0.1", "localhost", "::1"):
            print("refusing non-loopback URL", file=sys.stderr)
            return 64
    J = {"Content-Type": "application/json"}

    section("server")
    probe("server metadata", "GET", "/v2")
    probe("model metadata simple", "GET", "/v2/models/simple")
    probe("model config simple", "GET", "/v2/models/simple/config")
    probe("model ready (unknown model)", "GET", "/v2/models/nope/ready")

    section("simple: JSON and binary response shapes")
    probe("simple JSON in/out, with id", "POST", "/v2/models/simple/infer",
          jdump({"id": "req-42", **SIMPLE_IN}), J)
    probe("simple JSON in/out, no id, no Content-Type", "POST", "/v2/models/simple/infer",
          jdump(SIMPLE_IN))
    probe("simple versioned path", "POST", "/v2/models/simple/versions/1/infer", jdump(SIMPLE_IN))
    probe("simple unknown version", "POST", "/v2/models/simple/versions/7/infer", jdump(SIMPLE_IN))
    probe("simple request-level binary_data_output=true", "POST", "/v2/models/simple/infer",
          jdump({"id": "b1", **SIMPLE_IN, "parameters": {"binary_data_output": True}}))
    probe("simple outputs listed, OUTPUT0 binary, OUTPUT1 JSON", "POST", "/v2/models/simple/infer",
          jdump({**SIMPLE_IN, "outputs": [
              {"name": "OUTPUT0", "parameters": {"binary_data": True}},
              {"name": "OUTPUT1", "parameters": {"binary_data": False}}]}))
    probe("binary_data_output=true + OUTPUT1 listed without binary_data", "POST",
          "/v2/models/simple/infer",
          jdump({**SIMPLE_IN, "parameters": {"binary_data_output": True},
                 "outputs": [{"name": "OUTPUT1"}]}))
    probe("binary_data_output=true + OUTPUT0 listed binary_data=false", "POST",
          "/v2/models/simple/infer",
          jdump({**SIMPLE_IN, "parameters": {"binary_data_output": True},
                 "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": False}}]}))
    probe("binary_data_output=false + OUTPUT1 listed binary_data=true", "POST",
          "/v2/models/simple/infer",
          jdump({**SIMPLE_IN, "parameters": {"binary_data_output": False},
                 "outputs": [{"name": "OUTPUT1", "parameters": {"binary_data": True}}]}))
    probe("outputs listed in reverse order (OUTPUT1, OUTPUT0)", "POST", "/v2/models/simple/infer",
          jdump({**SIMPLE_IN, "outputs": [{"name": "OUTPUT1"}, {"name": "OUTPUT0"}]}))
    probe("same output listed twice", "POST", "/v2/models/simple/infer",
          jdump({**SIMPLE_IN, "outputs": [{"name": "OUTPUT0"}, {"name": "OUTPUT0"}]}))
    probe("unknown output requested", "POST", "/v2/models/simple/infer",
          jdump({**SIMPLE_IN, "outputs": [{"name": "NOPE"}]}))
    probe("request parameters + output parameters (echo?)", "POST", "/v2/models/simple/infer",
          jdump({"id": "p", **SIMPLE_IN, "parameters": {"foo": "bar", "n": 3},
                 "outputs": [{"name": "OUTPUT0", "parameters": {"x": 1}}]}))
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.int32)
    body, h = binary_request({"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "parameters": {"binary_data_size": 64}},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "parameters": {"binary_data_size": 64}}],
        "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}},
                    {"name": "OUTPUT1", "parameters": {"binary_data": True}}]},
        a.tobytes(), b.tobytes())
    probe("simple binary in, binary out", "POST", "/v2/models/simple/infer", body, h)
    probe("simple binary in, binary out, chunked request body", "POST", "/v2/models/simple/infer",
          body, {**h, "Transfer-Encoding": "chunked"})
    probe("simple nested JSON data [[...]]", "POST", "/v2/models/simple/infer",
          jdump({"inputs": [
              {"name": "INPUT0", "datatype": "INT32", "shape": [2, 16],
               "data": [list(range(16)), list(range(16))]},
              {"name": "INPUT1", "datatype": "INT32", "shape": [2, 16],
               "data": [[1] * 16, [2] * 16]}]}))

    section("compression")
    probe("JSON response, Accept-Encoding: gzip", "POST", "/v2/models/simple/infer",
          jdump(SIMPLE_IN), {"Accept-Encoding": "gzip"})
    probe("binary response, Accept-Encoding: gzip", "POST", "/v2/models/simple/infer",
          jdump({**SIMPLE_IN, "parameters": {"binary_data_output": True}}), {"Accept-Encoding": "gzip"})
    probe("JSON response, Accept-Encoding: deflate", "POST", "/v2/models/simple/infer",
          jdump(SIMPLE_IN), {"Accept-Encoding": "deflate"})
    probe("binary response, Accept-Encoding: deflate", "POST", "/v2/models/simple/infer",
          jdump({**SIMPLE_IN, "parameters": {"binary_data_output": True}}), {"Accept-Encoding": "deflate"})
    probe("Accept-Encoding: gzip;q=0, deflate", "POST", "/v2/models/simple/infer",
          jdump(SIMPLE_IN), {"Accept-Encoding": "gzip;q=0, deflate"})
    probe("Accept-Encoding: br", "POST", "/v2/models/simple/infer",
          jdump(SIMPLE_IN), {"Accept-Encoding": "br"})
    probe("gzip-compressed JSON request (Content-Encoding: gzip)", "POST", "/v2/models/simple/infer",
          gzip.compress(jdump(SIMPLE_IN), mtime=0), {"Content-Encoding": "gzip"})
    probe("deflate (zlib) JSON request (Content-Encoding: deflate)", "POST", "/v2/models/simple/infer",
          zlib.compress(jdump(SIMPLE_IN)), {"Content-Encoding": "deflate"})
    raw = zlib.compressobj(wbits=-15)
    probe("raw-deflate JSON request (Content-Encoding: deflate)", "POST", "/v2/models/simple/infer",
          raw.compress(jdump(SIMPLE_IN)) + raw.flush(), {"Content-Encoding": "deflate"})
    gz_body, gz_h = binary_request({"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "parameters": {"binary_data_size": 64}},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "parameters": {"binary_data_size": 64}}]},
        a.tobytes(), b.tobytes())
    probe("gzip-compressed binary request (IHCL = uncompressed header length)", "POST",
          "/v2/models/simple/infer", gzip.compress(gz_body, mtime=0), {**gz_h, "Content-Encoding": "gzip"})
    probe("Content-Encoding: br request", "POST", "/v2/models/simple/infer",
          jdump(SIMPLE_IN), {"Content-Encoding": "br"})
    probe("Content-Encoding: gzip but body not gzip", "POST", "/v2/models/simple/infer",
          jdump(SIMPLE_IN), {"Content-Encoding": "gzip"})

    section("float formatting in JSON outputs")
    f32 = np.array([np.nan, np.inf, -np.inf, -0.0, 0.1, 1.5, 3.4028235e38, 1e-45, 16777217, 1e10, 123456.789],
                   dtype=np.float32)
    body, h = binary_request({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [f32.size],
                                          "parameters": {"binary_data_size": f32.nbytes}}],
                              "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": False}}]},
                             f32.tobytes())
    probe("identity_fp32 binary in [nan,inf,-inf,-0.0,0.1,1.5,max,1e-45,16777217,1e10,123456.789] -> JSON",
          "POST", "/v2/models/identity_fp32/infer", body, h)
    f64 = np.array([np.nan, np.inf, -np.inf, -0.0, 0.1, 1.5, 1e300, 5e-324, 2.0**53 + 1, 1e21, 1e-7],
                   dtype=np.float64)
    body, h = binary_request({"inputs": [{"name": "INPUT0", "datatype": "FP64", "shape": [f64.size],
                                          "parameters": {"binary_data_size": f64.nbytes}}]}, f64.tobytes())
    probe("identity_fp64 binary in [nan,inf,-inf,-0.0,0.1,1.5,1e300,5e-324,2^53+1,1e21,1e-7] -> JSON "
          "(no outputs listed, no binary_data_output)", "POST", "/v2/models/identity_fp64/infer", body, h)
    f64b = np.array([1e20, 1e-6, 1.5e-7, 1.23e27, 0.000123, -1e21, 5e-7, 1e16, 1.7976931348623157e308,
                     0.3, 100.0, 12345678.9], dtype=np.float64)
    body, h = binary_request({"inputs": [{"name": "INPUT0", "datatype": "FP64", "shape": [f64b.size],
                                          "parameters": {"binary_data_size": f64b.nbytes}}]}, f64b.tobytes())
    probe("identity_fp64 number formatting [1e20,1e-6,1.5e-7,1.23e27,0.000123,-1e21,5e-7,1e16,max,0.3,100,"
          "12345678.9]", "POST", "/v2/models/identity_fp64/infer", body, h)
    bits = np.array([0xFFC00000, 0x7F800001, 0x7FC00001, 0x3E99999A, 0x00000001], dtype=np.uint32)
    body, h = binary_request({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [bits.size],
                                          "parameters": {"binary_data_size": bits.nbytes}}]}, bits.tobytes())
    probe("identity_fp32 bit patterns [-nan ffc00000, snan 7f800001, nan-payload 7fc00001, 0.3f, denorm]",
          "POST", "/v2/models/identity_fp32/infer", body, h)
    probe("identity_fp32 JSON in Infinity, -Infinity literals", "POST", "/v2/models/identity_fp32/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[2],"data":[Infinity,-Infinity]}]}')
    probe("identity_fp32 JSON in Inf literal", "POST", "/v2/models/identity_fp32/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1],"data":[Inf]}]}')
    probe("identity_fp32 JSON in [0.1, 1e39, -0.0, 1, 16777217]", "POST", "/v2/models/identity_fp32/infer",
          jdump({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [5],
                             "data": [0.1, 1e39, -0.0, 1, 16777217]}]}))
    probe("identity_fp32 JSON in NaN literal", "POST", "/v2/models/identity_fp32/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1],"data":[NaN]}]}')
    probe("identity_fp32 JSON in \"NaN\" string", "POST", "/v2/models/identity_fp32/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1],"data":["NaN"]}]}')
    probe("identity_fp64 JSON in [0.1, 1e308, 2^53+1]", "POST", "/v2/models/identity_fp64/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"FP64","shape":[3],"data":[0.1,1e308,9007199254740993]}]}')
    probe("two_outputs JSON in [1.4, 2.5, -0.6]", "POST", "/v2/models/two_outputs/infer",
          jdump({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [3], "data": [1.4, 2.5, -0.6]}]}))

    float_digit_stats()

    section("integer / bool JSON inputs")
    probe("identity_bool JSON [true,false]", "POST", "/v2/models/identity_bool/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"BOOL","shape":[2],"data":[true,false]}]}')
    probe("identity_bool JSON [0,1]", "POST", "/v2/models/identity_bool/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"BOOL","shape":[2],"data":[0,1]}]}')
    body, h = binary_request({"inputs": [{"name": "INPUT0", "datatype": "BOOL", "shape": [3],
                                          "parameters": {"binary_data_size": 3}}]}, b"\x00\x01\x02")
    probe("identity_bool binary [0,1,2] -> JSON", "POST", "/v2/models/identity_bool/infer", body, h)
    probe("identity_int32 JSON [1.0]", "POST", "/v2/models/identity_int32/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1],"data":[1.0]}]}')
    probe("identity_int32 JSON [1e2]", "POST", "/v2/models/identity_int32/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1],"data":[1e2]}]}')
    probe("identity_int32 JSON [2147483648]", "POST", "/v2/models/identity_int32/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1],"data":[2147483648]}]}')
    probe("identity_int32 JSON [true]", "POST", "/v2/models/identity_int32/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1],"data":[true]}]}')
    probe("identity_uint8 JSON [300]", "POST", "/v2/models/identity_uint8/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"UINT8","shape":[1],"data":[300]}]}')
    probe("identity_uint8 JSON [-1]", "POST", "/v2/models/identity_uint8/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"UINT8","shape":[1],"data":[-1]}]}')
    probe("identity_int8 JSON [200]", "POST", "/v2/models/identity_int8/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"INT8","shape":[1],"data":[200]}]}')
    probe("identity_int64 JSON [9223372036854775807, -9223372036854775808]", "POST",
          "/v2/models/identity_int64/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"INT64","shape":[2],"data":[9223372036854775807,-9223372036854775808]}]}')
    probe("identity_uint64 JSON [18446744073709551615]", "POST", "/v2/models/identity_uint64/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"UINT64","shape":[1],"data":[18446744073709551615]}]}')
    probe("identity_uint64 JSON [18446744073709551616]", "POST", "/v2/models/identity_uint64/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"UINT64","shape":[1],"data":[18446744073709551616]}]}')
    probe("identity_fp32 JSON [\"1.5\"]", "POST", "/v2/models/identity_fp32/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1],"data":["1.5"]}]}')
    probe("identity_fp32 JSON [null]", "POST", "/v2/models/identity_fp32/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1],"data":[null]}]}')
    probe("identity_fp32 JSON data empty, shape [0]", "POST", "/v2/models/identity_fp32/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[0],"data":[]}]}')
    for dt in ("fp16", "bf16"):
        probe(f"identity_{dt} JSON", "POST", f"/v2/models/identity_{dt}/infer",
              ('{"inputs":[{"name":"INPUT0","datatype":"%s","shape":[1],"data":[1.0]}]}' % dt.upper()).encode())
    for dt, np_dt in (("UINT16", np.uint16), ("UINT32", np.uint32), ("INT16", np.int16),
                      ("UINT64", np.uint64), ("INT64", np.int64), ("INT8", np.int8), ("UINT8", np.uint8)):
        info = np.iinfo(np_dt)
        arr = np.array([info.min, info.max, 1], dtype=np_dt)
        body, h = binary_request({"inputs": [{"name": "INPUT0", "datatype": dt, "shape": [3],
                                              "parameters": {"binary_data_size": arr.nbytes}}]}, arr.tobytes())
        probe(f"identity_{dt.lower()} binary [min,max,1] -> JSON", "POST",
              f"/v2/models/identity_{dt.lower()}/infer", body, h)

    section("FP16 / BF16 binary round trip")
    bf = np.array([0x3F80, 0xC000, 0x7FC0, 0x7F80, 0x0001, 0x8000, 0x1234, 0xFFFF], dtype=np.uint16)
    body, h = binary_request({"inputs": [{"name": "INPUT0", "datatype": "BF16", "shape": [bf.size],
                                          "parameters": {"binary_data_size": bf.nbytes}}],
                              "parameters": {"binary_data_output": True}}, bf.tobytes())
    st, hd, data = probe("identity_bf16 binary echo (raw u16 3f80 c000 7fc0 7f80 0001 8000 1234 ffff)",
                         "POST", "/v2/models/identity_bf16/infer", body, h)
    n = int(dict((k.lower(), v) for k, v in hd)["inference-header-content-length"])
    print(f"  BF16 echo exact: {data[n:] == bf.tobytes()}")
    body, h = binary_request({"inputs": [{"name": "INPUT0", "datatype": "BF16", "shape": [bf.size],
                                          "parameters": {"binary_data_size": bf.nbytes}}]}, bf.tobytes())
    probe("identity_bf16 binary in, JSON out requested by default", "POST",
          "/v2/models/identity_bf16/infer", body, h)
    fp16 = np.array([1.0, -2.0, np.nan, np.inf, 0.1], dtype=np.float16)
    body, h = binary_request({"inputs": [{"name": "INPUT0", "datatype": "FP16", "shape": [fp16.size],
                                          "parameters": {"binary_data_size": fp16.nbytes}}]}, fp16.tobytes())
    probe("identity_fp16 binary in, JSON out requested by default", "POST",
          "/v2/models/identity_fp16/infer", body, h)

    section("BYTES")
    probe("identity_bytes JSON strings", "POST", "/v2/models/identity_bytes/infer",
          jdump({"inputs": [{"name": "INPUT0", "datatype": "BYTES", "shape": [3],
                             "data": ["abc", "", "h\u00e9\u2603 \"q\" \\ \n\u0001"]}]}))
    probe("identity_bytes JSON non-string element [1]", "POST", "/v2/models/identity_bytes/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"BYTES","shape":[1],"data":[1]}]}')
    elems = bytes_elems(b"\xff\xfe\x00bin", b"ok", b"\xc3\x28")
    body, h = binary_request({"inputs": [{"name": "INPUT0", "datatype": "BYTES", "shape": [3],
                                          "parameters": {"binary_data_size": len(elems)}}]}, elems)
    probe("identity_bytes binary non-UTF-8 in, JSON out", "POST", "/v2/models/identity_bytes/infer", body, h)
    body, h = binary_request({"inputs": [{"name": "INPUT0", "datatype": "BYTES", "shape": [3],
                                          "parameters": {"binary_data_size": len(elems)}}],
                              "parameters": {"binary_data_output": True}}, elems)
    st, hd, data = probe("identity_bytes binary non-UTF-8 in, binary out", "POST",
                         "/v2/models/identity_bytes/infer", body, h)
    n = int(dict((k.lower(), v) for k, v in hd)["inference-header-content-length"])
    print(f"  BYTES echo exact: {data[n:] == elems}")
    bad = struct.pack("<I", 100) + b"abc"
    body, h = binary_request({"inputs": [{"name": "INPUT0", "datatype": "BYTES", "shape": [1],
                                          "parameters": {"binary_data_size": len(bad)}}]}, bad)
    probe("identity_bytes binary element length past its data", "POST", "/v2/models/identity_bytes/infer",
          body, h)

    section("errors")
    probe("unknown model", "POST", "/v2/models/nope/infer", jdump(SIMPLE_IN))
    probe("unknown model, binary request", "POST", "/v2/models/nope/infer", *binary_request(
        {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1], "parameters": {"binary_data_size": 4}}]},
        b"\0\0\0\0"))
    probe("wrong shape (simple [16] without batch dim)", "POST", "/v2/models/simple/infer",
          jdump({"inputs": [{**i, "shape": [16]} for i in SIMPLE_IN["inputs"]]}))
    probe("wrong shape (simple [1,8])", "POST", "/v2/models/simple/infer",
          jdump({"inputs": [{**i, "shape": [1, 8], "data": i["data"][:8]} for i in SIMPLE_IN["inputs"]]}))
    probe("batch too large (simple [9,16])", "POST", "/v2/models/simple/infer",
          jdump({"inputs": [{**i, "shape": [9, 16], "data": i["data"] * 9} for i in SIMPLE_IN["inputs"]]}))
    probe("wrong dtype (simple INT64)", "POST", "/v2/models/simple/infer",
          jdump({"inputs": [{**i, "datatype": "INT64"} for i in SIMPLE_IN["inputs"]]}))
    probe("wrong dtype with id \"abc\"", "POST", "/v2/models/simple/infer",
          jdump({"id": "abc", "inputs": [{**i, "datatype": "INT64"} for i in SIMPLE_IN["inputs"]]}))
    probe("error response with Accept-Encoding: gzip", "POST", "/v2/models/simple/infer",
          jdump({"inputs": [{**i, "datatype": "INT64"} for i in SIMPLE_IN["inputs"]]}), {"Accept-Encoding": "gzip"})
    probe("unknown dtype string", "POST", "/v2/models/simple/infer",
          jdump({"inputs": [{**i, "datatype": "FLOAT"} for i in SIMPLE_IN["inputs"]]}))
    probe("missing input INPUT1", "POST", "/v2/models/simple/infer",
          jdump({"inputs": SIMPLE_IN["inputs"][:1]}))
    probe("unexpected extra input", "POST", "/v2/models/simple/infer",
          jdump({"inputs": SIMPLE_IN["inputs"] + [{**SIMPLE_IN["inputs"][0], "name": "INPUT9"}]}))
    probe("duplicate input", "POST", "/v2/models/simple/infer",
          jdump({"inputs": SIMPLE_IN["inputs"] + [SIMPLE_IN["inputs"][0]]}))
    probe("JSON element count (15) != shape [1,16]", "POST", "/v2/models/simple/infer",
          jdump({"inputs": [{**i, "data": i["data"][:15]} for i in SIMPLE_IN["inputs"]]}))
    probe("JSON element count (17) != shape [1,16]", "POST", "/v2/models/simple/infer",
          jdump({"inputs": [{**i, "data": i["data"] + [0]} for i in SIMPLE_IN["inputs"]]}))
    probe("input without data and without binary_data_size", "POST", "/v2/models/simple/infer",
          jdump({"inputs": [{k: v for k, v in i.items() if k != "data"} for i in SIMPLE_IN["inputs"]]}))
    probe("no inputs key", "POST", "/v2/models/simple/infer", b'{"id":"x"}')
    hdr = jdump({"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "parameters": {"binary_data_size": 64}},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "parameters": {"binary_data_size": 64}}]})
    H = {"Inference-Header-Content-Length": str(len(hdr))}
    probe("binary_data_size sum past body (body has 64+60 bytes)", "POST", "/v2/models/simple/infer",
          hdr + bytes(124), H)
    probe("trailing bytes after binary data (+3)", "POST", "/v2/models/simple/infer", hdr + bytes(131), H)
    probe("binary_data_size != shape*4 (both 60, body 120)", "POST", "/v2/models/simple/infer",
          hdr.replace(b'"binary_data_size":64', b'"binary_data_size":60') + bytes(120),
          {"Inference-Header-Content-Length": str(len(hdr))})
    probe("IHCL > body length", "POST", "/v2/models/simple/infer", hdr + bytes(128),
          {"Inference-Header-Content-Length": str(len(hdr) + 128 + 10)})
    probe("IHCL == body length (no binary part, inputs expect binary)", "POST", "/v2/models/simple/infer",
          hdr, {"Inference-Header-Content-Length": str(len(hdr))})
    probe("IHCL shorter than JSON header (cuts JSON)", "POST", "/v2/models/simple/infer", hdr + bytes(128),
          {"Inference-Header-Content-Length": str(len(hdr) - 5)})
    probe("IHCL non-numeric", "POST", "/v2/models/simple/infer", hdr + bytes(128),
          {"Inference-Header-Content-Length": "abc"})
    probe("IHCL negative", "POST", "/v2/models/simple/infer", hdr + bytes(128),
          {"Inference-Header-Content-Length": "-1"})
    probe("binary_data_size present but no IHCL header", "POST", "/v2/models/simple/infer", hdr + bytes(128))
    probe("JSON followed by trailing garbage, no IHCL", "POST", "/v2/models/simple/infer",
          jdump(SIMPLE_IN) + b"xyz\x00\xff")
    probe("JSON body with Content-Type: application/octet-stream, no IHCL", "POST",
          "/v2/models/simple/infer", jdump(SIMPLE_IN), {"Content-Type": "application/octet-stream"})
    probe("numeric id", "POST", "/v2/models/simple/infer", jdump({"id": 5, **SIMPLE_IN}))
    probe("input with both data and binary_data_size", "POST", "/v2/models/identity_fp32/infer",
          *binary_request({"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1], "data": [1.0],
                                       "parameters": {"binary_data_size": 4}}]}, bytes(4)))
    probe("classification extension on OUTPUT0 (class_count 2)", "POST", "/v2/models/simple/infer",
          jdump({**SIMPLE_IN, "outputs": [{"name": "OUTPUT0", "parameters": {"classification": 2}}]}))
    probe("malformed JSON", "POST", "/v2/models/simple/infer", b'{"inputs":[', J)
    probe("empty body", "POST", "/v2/models/simple/infer", b"", J)
    probe("JSON body is an array", "POST", "/v2/models/simple/infer", b"[]", J)
    probe("shape with negative dim", "POST", "/v2/models/identity_fp32/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[-1],"data":[1]}]}')
    probe("FP16 in JSON", "POST", "/v2/models/identity_fp16/infer",
          b'{"inputs":[{"name":"INPUT0","datatype":"FP16","shape":[1],"data":[1.0]}]}')
    f = np.array([1.0, 2.5, -0.0], dtype=np.float32)
    probe("raw binary request (IHCL 0) to identity_fp32, 12 bytes", "POST", "/v2/models/identity_fp32/infer",
          f.tobytes(), {"Inference-Header-Content-Length": "0"})
    probe("raw binary request (IHCL 0) to identity_fp32, 10 bytes (not multiple of 4)", "POST",
          "/v2/models/identity_fp32/infer", bytes(10), {"Inference-Header-Content-Length": "0"})
    probe("IHCL 'abc' to identity_fp32 (4 raw bytes)", "POST", "/v2/models/identity_fp32/infer",
          np.array([1.0], dtype=np.float32).tobytes(), {"Inference-Header-Content-Length": "abc"})
    probe("raw binary request (IHCL 0), Accept-Encoding gzip", "POST", "/v2/models/identity_fp32/infer",
          f.tobytes(), {"Inference-Header-Content-Length": "0", "Accept-Encoding": "gzip"})
    probe("raw binary request (IHCL 0) to identity_bytes", "POST", "/v2/models/identity_bytes/infer",
          b"\xffraw", {"Inference-Header-Content-Length": "0"})
    probe("raw binary request (IHCL 0) to simple (two inputs)", "POST", "/v2/models/simple/infer",
          bytes(128), {"Inference-Header-Content-Length": "0"})
    probe("GET on /infer", "GET", "/v2/models/simple/infer", None)
    probe("PUT on /infer", "PUT", "/v2/models/simple/infer", jdump(SIMPLE_IN))
    probe("/infer on decoupled model", "POST", "/v2/models/decoupled_repeat/infer",
          b'{"inputs":[{"name":"text_input","datatype":"BYTES","shape":[1],"data":["x"]}]}')
    probe("unknown path", "GET", "/v2/nope", None)
    probe("model error raised by python model (decoupled bad count type)", "POST",
          "/v2/models/decoupled_repeat/generate", b'{"text_input":"x","count":"zz"}')

    section("SageMaker content type")
    sm_body, _ = binary_request({"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "parameters": {"binary_data_size": 64}},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "parameters": {"binary_data_size": 64}}]},
        a.tobytes(), b.tobytes())
    hlen = len(sm_body) - 128
    probe("vnd.sagemaker-triton.binary+json;json-header-size=N on /v2/.../infer", "POST",
          "/v2/models/simple/infer", sm_body,
          {"Content-Type": f"application/vnd.sagemaker-triton.binary+json;json-header-size={hlen}"})
    probe("POST /invocations on the HTTP port", "POST", "/invocations", sm_body,
          {"Content-Type": f"application/vnd.sagemaker-triton.binary+json;json-header-size={hlen}"})

    if SAGEMAKER_URL:
        sagemaker_probes(sm_body, hlen)

    section("generate / generate_stream (decoupled_repeat)")
    probe("generate_stream count=3 (200 ms apart)", "POST", "/v2/models/decoupled_repeat/generate_stream",
          b'{"text_input":"hi","count":3}')
    probe("generate count=1", "POST", "/v2/models/decoupled_repeat/generate", b'{"text_input":"hi","count":1}')
    probe("generate count=2", "POST", "/v2/models/decoupled_repeat/generate",
          b'{"text_input":"hi","count":2,"delay_ms":0}')
    probe("generate_stream with id", "POST", "/v2/models/decoupled_repeat/generate_stream",
          b'{"id":"q1","text_input":"hi","count":1}')
    probe("generate_stream, Accept-Encoding gzip", "POST", "/v2/models/decoupled_repeat/generate_stream",
          b'{"text_input":"hi","count":2,"delay_ms":0}', {"Accept-Encoding": "gzip"})
    probe("generate_stream count=0", "POST", "/v2/models/decoupled_repeat/generate_stream",
          b'{"text_input":"hi","count":0}')
    probe("generate_stream missing text_input", "POST", "/v2/models/decoupled_repeat/generate_stream",
          b'{"count":2}')
    probe("generate on non-decoupled identity_fp32", "POST", "/v2/models/identity_fp32/generate",
          b'{"INPUT0":[1.5,2]}')
    # Timing of SSE events as they arrive.
    u = urllib.parse.urlsplit(URL)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    t0 = time.monotonic()
    conn.request("POST", "/v2/models/decoupled_repeat/generate_stream", b'{"text_input":"hi","count":3}')
    resp = conn.getresponse()
    print("\n### generate_stream event arrival times")
    for line in resp:
        if line.strip():
            print(f"  +{time.monotonic() - t0:.3f}s {line.decode().rstrip()}")
    conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
