"""Triton 2.51's own OpenTelemetry spans in tensorgate's trace.

A Triton of the pytriton build (scripts/triton-backend.sh) is started with
`--trace-config mode=opentelemetry` (rate 1), exporting to a catcher on
127.0.0.1; a gateway in front of it exports to the protobuf receiver
(receiver.py). One V2 JSON infer with a caller's `traceparent` must give:

  - tensorgate's server span under the caller's span, its attempt span
    under it;
  - Triton's `InferRequest` span in the same trace, its parent the
    attempt span (the `traceparent` the gateway sent), and Triton's model
    and `compute` spans under it.

Triton 2.51's exporter (opentelemetry-cpp) posts OTLP/HTTP **JSON**, not
protobuf; the catcher decodes it into the official `opentelemetry-proto`
messages (OTLP/JSON writes ids as hex where the protobuf JSON mapping
expects base64; they are turned back first).

Usage: scripts/otel.sh python tests/otel/check_triton.py (TENSORGATE_BIN,
default target/release/tensorgate). Exit 0 when every check passes, 1
when one fails, 2 when Triton could not be started.
"""
import base64
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from receiver import Receiver  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("TENSORGATE_BIN", os.path.join(ROOT, "target/release/tensorgate"))
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
ID_KEYS = ("traceId", "spanId", "parentSpanId")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def hex_ids_to_base64(node):
    """OTLP/JSON ids are hex; protobuf's JSON mapping of bytes is base64."""
    if isinstance(node, dict):
        return {
            k: base64.b64encode(bytes.fromhex(v)).decode() if k in ID_KEYS and isinstance(v, str) else hex_ids_to_base64(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [hex_ids_to_base64(v) for v in node]
    return node


class JsonCatcher:
    """OTLP/HTTP JSON at /v1/traces, decoded with opentelemetry-proto."""

    def __init__(self):
        self.spans = []
        self.lock = threading.Lock()
        catcher = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(min(length, 16 << 20))
                ok = self.path == "/v1/traces" and (self.headers.get("Content-Type") or "").startswith("application/json")
                if ok:
                    msg = json_format.Parse(json.dumps(hex_ids_to_base64(json.loads(body))), ExportTraceServiceRequest(),
                                            ignore_unknown_fields=True)
                    with catcher.lock:
                        for rs in msg.resource_spans:
                            for ss in rs.scope_spans:
                                catcher.spans.extend(ss.spans)
                self.send_response(200 if ok else 415)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def wait_for(what, fn, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = fn()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def main():
    catcher, receiver = JsonCatcher(), Receiver()
    work = tempfile.mkdtemp(prefix="tg-otel-triton-")
    env = dict(
        os.environ,
        TENSORGATE_RUN_DIR=os.path.join(work, "run"),
        TENSORGATE_TRITON_ARGS=" ".join([
            "--trace-config mode=opentelemetry",
            "--trace-config rate=1",
            "--trace-config level=TIMESTAMPS",
            f"--trace-config opentelemetry,url=127.0.0.1:{catcher.port}/v1/traces",
            "--trace-config opentelemetry,bsp_schedule_delay=200",
        ]),
    )
    triton = os.path.join(ROOT, "scripts/triton-backend.sh")
    started = subprocess.run(["bash", triton, "start"], env=env, capture_output=True, text=True, timeout=180)
    if started.returncode != 0:
        print(f"Triton did not start: {started.stderr.strip()[-500:]}")
        return 2
    url = started.stdout.strip().split("=", 1)[1]
    data, admin = free_port(), free_port()
    log = open(os.path.join(work, "gateway.log"), "w")
    gw = subprocess.Popen(
        [BIN, "--backend", url, "--listen", f"127.0.0.1:{data}", "--admin-listen", f"127.0.0.1:{admin}",
         "--otel-endpoint", receiver.endpoint],
        stdout=subprocess.DEVNULL, stderr=log,
    )
    passed = failed = 0
    try:
        wait_for("the gateway", lambda: _up(admin))
        body = json.dumps({"inputs": [
            {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32", "data": list(range(16))},
            {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32", "data": [1] * 16},
        ]}).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{data}/v2/models/simple/infer", body,
            {"Content-Type": "application/json", "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert resp.status == 200, resp.status
        ours = wait_for("tensorgate's spans", lambda: _named(receiver.spans(), "POST default", "upstream default"))
        server, attempt = ours["POST default"], ours["upstream default"]
        theirs = wait_for("Triton's spans", lambda: _named(
            [_Pb(s) for s in catcher.spans], "InferRequest", "simple", "compute"))
        checks = [
            ("tensorgate's server span is the caller's child",
             server.trace_id == CALLER_TRACE and server.parent_span_id == CALLER_SPAN),
            ("the attempt span is the server span's child", attempt.parent_span_id == server.span_id),
            ("Triton's spans share tensorgate's trace id",
             all(s.trace_id == CALLER_TRACE for s in theirs.values())),
            ("Triton's InferRequest is the attempt span's child",
             theirs["InferRequest"].parent_span_id == attempt.span_id),
            ("Triton's model span is under its InferRequest",
             theirs["simple"].parent_span_id == theirs["InferRequest"].span_id),
            ("Triton's compute span is under its model span",
             theirs["compute"].parent_span_id == theirs["simple"].span_id),
        ]
        for name, ok in checks:
            print(f"{'ok  ' if ok else 'FAIL'} {name}")
            passed += ok
            failed += not ok
        if failed:
            print("tensorgate:", ours, "\nTriton:", theirs)
    except Exception as e:  # reported, then everything is stopped
        print(f"FAIL {type(e).__name__}: {e}")
        failed += 1
    finally:
        gw.terminate()
        gw.wait(10)
        subprocess.run(["bash", triton, "stop"], env=env, capture_output=True, timeout=60)
        receiver.close()
        catcher.close()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


class _Pb:
    """A protobuf span with the receiver's field names."""

    def __init__(self, pb):
        self.name = pb.name
        self.trace_id = pb.trace_id.hex()
        self.span_id = pb.span_id.hex()
        self.parent_span_id = pb.parent_span_id.hex()

    def __repr__(self):
        return f"<{self.name!r} {self.trace_id}/{self.span_id} parent {self.parent_span_id or '-'}>"


def _named(spans, *names):
    by = {s.name: s for s in spans if s.name in names}
    return by if len(by) == len(names) else None


def _up(admin):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{admin}/healthz", timeout=1)
        return True
    except OSError:
        return False


if __name__ == "__main__":
    sys.exit(main())
