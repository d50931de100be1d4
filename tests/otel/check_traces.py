"""tensorgate's OpenTelemetry traces against a real OTLP/HTTP receiver
(receiver.py: protobuf decoded with the official `opentelemetry-proto`):

  - a request with a W3C traceparent: its server span is the caller's
    child, named `POST route`, with route, model, frontend, status, bytes
    and element counts; the request id (response, access log) is the trace
    id; the conversions and each upstream attempt are its children, and the
    backend receives the attempt's context in `traceparent`;
  - a shadow copy in its own span, with its own attempt under it, whose
    context reaches the shadow backend;
  - one trace across a retry: a replica refusing connections, then the
    other, two attempt spans of one server span;
  - the configuration reloaded to sample_ratio = 0: nothing exported for
    new traces or a caller's unsampled one, a caller's sampled one still
    recorded (parent-based);
  - `--otel-endpoint http://HOST:PORT` alone: spans at /v1/traces,
    parent-based at ratio 1.0.

Usage: python tests/otel/check_traces.py   (TENSORGATE_BIN, default
target/release/tensorgate). Every server listens on 127.0.0.1; processes
are stopped at the end. Prints one line per check and `N passed, N failed`.
"""
import http.server
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from receiver import Receiver  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("TENSORGATE_BIN", os.path.join(ROOT, "target/release/tensorgate"))
results = {"passed": 0, "failed": 0}


def check(name, fn):
    try:
        fn()
        results["passed"] += 1
        print(f"ok   {name}", flush=True)
    except Exception as e:  # every check runs; each failure is reported
        results["failed"] += 1
        print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Backend:
    """A V2 backend speaking JSON: model `echo` returns its inputs as
    OUTPUTi; every request's headers are kept."""

    def __init__(self):
        self.seen = []
        backend = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                backend.seen.append((self.path, dict(self.headers.items())))
                self._answer(200, b"{}")

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                backend.seen.append((self.path, dict(self.headers.items())))
                outputs = [
                    {"name": f"OUTPUT{i}", "datatype": t["datatype"], "shape": t["shape"], "data": t["data"]}
                    for i, t in enumerate(body.get("inputs", []))
                ]
                self._answer(200, json.dumps({"model_name": "echo", "outputs": outputs}).encode())

            def _answer(self, status, body):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def infers(self):
        return [h for p, h in self.seen if p.endswith("/infer")]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Gateway:
    def __init__(self, args, work, name):
        self.data, self.admin = free_port(), free_port()
        self.log_path = os.path.join(work, f"{name}.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [BIN, *args, "--listen", f"127.0.0.1:{self.data}", "--admin-listen", f"127.0.0.1:{self.admin}",
             "--log-format", "json"],
            stdout=subprocess.DEVNULL, stderr=self.log,
        )
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.admin}/healthz", timeout=1)
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"{name}: no /healthz; log:\n" + open(self.log_path).read())

    def infer(self, model="echo", headers=None):
        body = json.dumps({"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 4], "data": [1, 2, 3, 4]}]})
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.data}/v2/models/{model}/infer", data=body.encode(),
            headers={"Content-Type": "application/json", **(headers or {})}, method="POST")
        with urllib.request.urlopen(req, timeout=10) as resp:
            resp.read()
            return resp.status, resp.headers

    def get(self, headers=None):
        req = urllib.request.Request(f"http://127.0.0.1:{self.data}/v2/models/echo", headers=headers or {})
        with urllib.request.urlopen(req, timeout=10) as resp:
            resp.read()
            return resp.status, resp.headers

    def access_lines(self):
        out = []
        for line in open(self.log_path):
            try:
                j = json.loads(line)
            except ValueError:
                continue
            if j.get("target") == "tensorgate::access" or "request_id" in j and "route" in j:
                out.append(j)
        return out

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def wait_for(what, fn, seconds=10):
    deadline = time.time() + seconds
    while True:
        got = fn()
        if got:
            return got
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def traceparent(trace_id, span_id, sampled=True):
    return f"00-{trace_id}-{span_id}-{'01' if sampled else '00'}"


def eq(got, want, what):
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


CONFIG = """
[tracing]
endpoint = "{endpoint}"
sample_ratio = {ratio}
batch_delay = "100ms"

[backends.main]
urls = ["http://127.0.0.1:{dead}", "{live}"]
health_checks = false
eject_after = 1000
max_retries = 1
min_retries_per_second = 1000

[backends.shadow]
url = "{shadow}"

[[routes]]
name = "echo"
models = ["echo"]
backend = "main"
backend_format = "json"
shadow = {{ backend = "shadow" }}
"""


def main():
    receiver = Receiver()
    live, shadow = Backend(), Backend()
    dead = free_port()  # nothing listens there: connections are refused
    work = tempfile.mkdtemp(prefix="tensorgate-otel-")
    config = os.path.join(work, "tracing.toml")

    def write_config(ratio):
        with open(config + ".tmp", "w") as f:
            f.write(CONFIG.format(endpoint=receiver.endpoint, ratio=ratio, dead=dead, live=live.url, shadow=shadow.url))
        os.replace(config + ".tmp", config)

    write_config("1.0")
    gw = Gateway(["serve", "--config", config], work, "gateway")
    gateways = [gw]
    try:
        run_checks(gw, receiver, live, shadow, write_config, work, gateways)
    finally:
        for g in gateways:
            g.stop()
        live.close()
        shadow.close()
        receiver.close()
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


def run_checks(gw, receiver, live, shadow, write_config, work, gateways):
    trace_id, caller = secrets.token_hex(16), secrets.token_hex(8)
    state = {}

    def traced_request():
        before = len(live.infers())
        status, headers = gw.infer(headers={"traceparent": traceparent(trace_id, caller), "x-request-id": "mine"})
        eq(status, 200, "status")
        eq(headers["x-request-id"], trace_id, "the response's request id is the trace id")
        spans = wait_for("the server span", lambda: [s for s in receiver.spans() if s.trace_id == trace_id and s.kind == "server"])
        state["server"] = spans[0]
        state["sent"] = live.infers()[before:]
        wait_for("the shadow's attempt", lambda: [s for s in receiver.spans() if s.trace_id == trace_id and s.name == "upstream shadow"])
        state["spans"] = [s for s in receiver.spans() if s.trace_id == trace_id]

    check("a request with a traceparent is traced, its request id the trace id", traced_request)

    def server_span():
        s = state["server"]
        eq(s.parent_span_id, caller, "the server span's parent is the caller's span")
        eq(s.name, "POST echo", "name")
        a = s.attributes
        for key, want in [("tensorgate.route", "echo"), ("tensorgate.model", "echo"), ("tensorgate.frontend", "v2"),
                          ("http.response.status_code", 200), ("http.request.method", "POST"),
                          ("url.path", "/v2/models/echo/infer"), ("tensorgate.backend", "main"),
                          # The JSON reply of a JSON backend reaches a JSON
                          # client as it is: no response tensor translated.
                          ("tensorgate.elements.request", 4), ("tensorgate.elements.response", 0),
                          ("tensorgate.client_request_id", "mine"), ("tensorgate.completed", True)]:
            eq(a.get(key), want, key)
        for key in ["tensorgate.client.bytes_in", "tensorgate.client.bytes_out", "tensorgate.backend.bytes_out", "tensorgate.backend.bytes_in"]:
            if not (isinstance(a.get(key), int) and a[key] > 0):
                raise AssertionError(f"{key}: {a.get(key)!r}")
        eq(s.error, False, "a 200 is not an error")
        eq(s.resource.get("service.name"), "tensorgate", "service.name")

    check("the server span: route, model, frontend, status, bytes, element counts", server_span)

    def children():
        s = state["server"]
        spans = state["spans"]
        by_id = {x.span_id: x for x in spans}
        attempts = [x for x in spans if x.name == "upstream main"]
        if not attempts:
            raise AssertionError(f"no attempt span: {spans}")
        for a in attempts:
            eq(a.kind, "client", "attempt kind")
            eq(a.parent_span_id, s.span_id, "an attempt's parent is the server span")
            eq(a.attributes.get("tensorgate.backend"), "main", "backend")
        ok = [a for a in attempts if a.attributes.get("http.response.status_code") == 200]
        eq(len(ok), 1, "one attempt answered 200")
        eq(ok[0].attributes.get("tensorgate.replica"), live.url, "replica")
        converts = sorted(x.name for x in spans if x.name.startswith("convert"))
        if "convert request" not in converts:
            raise AssertionError(f"no conversion span: {converts}")
        for c in (x for x in spans if x.name.startswith("convert")):
            eq(c.parent_span_id, s.span_id, "a conversion's parent is the server span")
        # The backend got the answering attempt's context.
        sent = [h.get("traceparent") or h.get("Traceparent") for h in state["sent"]]
        eq(sent, [traceparent(trace_id, ok[0].span_id)], "traceparent sent to the replica")
        eq([h.get("X-Request-Id") or h.get("x-request-id") for h in state["sent"]], [trace_id], "x-request-id sent")
        del by_id

    check("conversions and the upstream attempt are children; the replica gets the attempt's traceparent", children)

    def shadow_span():
        s = state["server"]
        spans = state["spans"]
        sh = [x for x in spans if x.name == "shadow shadow"]
        eq(len(sh), 1, "one shadow span")
        eq(sh[0].parent_span_id, s.span_id, "the shadow span's parent is the server span")
        eq(sh[0].attributes.get("tensorgate.shadow.outcome"), "ok", "outcome")
        att = [x for x in spans if x.name == "upstream shadow"]
        eq(len(att), 1, "one shadow attempt")
        eq(att[0].parent_span_id, sh[0].span_id, "the shadow attempt's parent is the shadow span")
        got = wait_for("the shadow request", lambda: shadow.infers())
        tp = got[-1].get("traceparent") or got[-1].get("Traceparent")
        eq(tp, traceparent(trace_id, att[0].span_id), "traceparent sent to the shadow")

    check("a shadow copy in its own span, its attempt under it", shadow_span)

    def access_log():
        line = wait_for("the access line", lambda: [j for j in gw.access_lines() if j.get("request_id") == trace_id])
        eq(line[0].get("route"), "echo", "access line route")

    check("the access log's request id is the trace id", access_log)

    def retry():
        # Either replica may be picked first; the refusing one is tried
        # first in about half the requests.
        for _ in range(30):
            tid = secrets.token_hex(16)
            status, _ = gw.infer(headers={"traceparent": traceparent(tid, secrets.token_hex(8))})
            eq(status, 200, "status")
            server = wait_for("server span", lambda: [s for s in receiver.spans() if s.trace_id == tid and s.kind == "server"])[0]
            attempts = wait_for("attempts", lambda: [s for s in receiver.spans() if s.trace_id == tid and s.name == "upstream main"])
            if len(attempts) < 2:
                continue
            attempts.sort(key=lambda a: a.attributes["tensorgate.attempt"])
            eq([a.attributes["tensorgate.attempt"] for a in attempts], [0, 1], "attempt numbers")
            eq({a.parent_span_id for a in attempts}, {server.span_id}, "both attempts under the one server span")
            first, second = attempts
            eq(first.error, True, "the refused attempt failed")
            eq(first.attributes.get("error.type"), "refused", "error.type")
            eq(first.attributes.get("tensorgate.replica"), f"http://127.0.0.1:{dead_port(first)}", "first replica")
            eq(second.attributes.get("http.response.status_code"), 200, "the retry answered")
            eq(second.attributes.get("http.request.resend_count"), 1, "resend count")
            return
        raise AssertionError("no request went to the refusing replica first in 30 tries")

    def dead_port(span):
        return span.attributes["tensorgate.replica"].rsplit(":", 1)[1]

    check("one trace across a retry: two attempts under one server span", retry)

    def unsampled():
        write_config("0.0")
        # The reload is seen within the one-second poll.
        wait_for("the reload", lambda: any("configuration reloaded" in l for l in open(gw.log_path)), 10)
        time.sleep(0.5)  # spans of earlier requests still in the batch
        before = len(receiver.spans())
        for _ in range(5):
            gw.infer()
        not_sampled = secrets.token_hex(16)
        gw.infer(headers={"traceparent": traceparent(not_sampled, secrets.token_hex(8), sampled=False)})
        sampled = secrets.token_hex(16)
        gw.infer(headers={"traceparent": traceparent(sampled, secrets.token_hex(8))})
        wait_for("the caller-sampled trace", lambda: [s for s in receiver.spans() if s.trace_id == sampled and s.kind == "server"])
        time.sleep(0.5)
        new = receiver.spans()[before:]
        others = [s for s in new if s.trace_id != sampled]
        eq(others, [], "spans of traces sampling said no to")
        # The unsampled caller's context still reached the backend.
        tp = [h.get("traceparent") or h.get("Traceparent") for h in live.infers()]
        if not any(t and t.startswith(f"00-{not_sampled}-") and t.endswith("-00") for t in tp):
            raise AssertionError("the unsampled context was not passed on")

    check("sample_ratio = 0 after a reload: nothing exported but a caller-sampled trace (parent-based)", unsampled)

    def flag_alone():
        g = Gateway(["--backend", live.url, "--otel-endpoint", receiver.endpoint], work, "flag")
        gateways.append(g)
        # The default route of --backend sends the binary format, which
        # this backend does not speak: metadata GETs (passed through) here.
        tid = secrets.token_hex(16)
        status, headers = g.get(headers={"traceparent": traceparent(tid, secrets.token_hex(8))})
        eq(status, 200, "status")
        server = wait_for("its server span", lambda: [s for s in receiver.spans() if s.trace_id == tid and s.kind == "server"], 15)
        eq(server[0].attributes.get("tensorgate.route"), "default", "route")
        eq(server[0].name, "GET default", "name")
        before = len(receiver.spans())
        no = secrets.token_hex(16)
        g.get(headers={"traceparent": traceparent(no, secrets.token_hex(8), sampled=False)})
        # A new trace (no traceparent) is recorded at ratio 1.0.
        _, h = g.get()
        new_id = h["x-request-id"]
        wait_for("the new trace", lambda: [s for s in receiver.spans() if s.trace_id == new_id and s.kind == "server"], 15)
        eq([s for s in receiver.spans()[before:] if s.trace_id == no], [], "the caller's unsampled trace")
        eq(receiver.rejected, [], "posts the receiver refused")

    check("--otel-endpoint alone: OTLP/HTTP protobuf to /v1/traces, parent-based at ratio 1.0", flag_alone)


if __name__ == "__main__":
    sys.exit(main())
