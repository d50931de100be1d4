"""An OTLP/HTTP trace receiver on 127.0.0.1 that decodes what it gets with
the official `opentelemetry-proto` definitions (protobuf), for tests.

    from receiver import Receiver
    r = Receiver()            # listening on 127.0.0.1:<free port>
    r.endpoint                # "http://127.0.0.1:PORT" (spans go to /v1/traces)
    r.spans()                 # every span received so far, as Span objects
    r.close()

Run alone (`python tests/otel/receiver.py [PORT]`) it prints one line per
span it receives, to look at what a gateway sends.

Only `POST /v1/traces` with `Content-Type: application/x-protobuf` is taken;
anything else is counted in `rejected` and answered 404 or 415, so a test
sees an exporter that posts elsewhere.
"""
import http.server
import sys
import threading

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan, Status as PbStatus

KINDS = {
    PbSpan.SPAN_KIND_INTERNAL: "internal",
    PbSpan.SPAN_KIND_SERVER: "server",
    PbSpan.SPAN_KIND_CLIENT: "client",
    PbSpan.SPAN_KIND_PRODUCER: "producer",
    PbSpan.SPAN_KIND_CONSUMER: "consumer",
}


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


class Span:
    """One decoded span: ids as lower-case hex, attributes as a dict."""

    def __init__(self, pb, resource):
        self.trace_id = pb.trace_id.hex()
        self.span_id = pb.span_id.hex()
        self.parent_span_id = pb.parent_span_id.hex()
        self.name = pb.name
        self.kind = KINDS.get(pb.kind, "unspecified")
        self.attributes = {a.key: value(a.value) for a in pb.attributes}
        self.error = pb.status.code == PbStatus.STATUS_CODE_ERROR
        self.status_message = pb.status.message
        self.start_ns = pb.start_time_unix_nano
        self.end_ns = pb.end_time_unix_nano
        self.resource = resource

    def __repr__(self):
        parent = self.parent_span_id or "-"
        return f"<{self.kind} {self.name!r} {self.trace_id}/{self.span_id} parent {parent} {self.attributes}>"


class Receiver:
    def __init__(self, port=0):
        self._lock = threading.Lock()
        self._spans = []
        self.posts = 0
        self.rejected = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if 0 < length <= 64 << 20 else b""
                kind = (self.headers.get("Content-Type") or "").split(";")[0].strip()
                if self.path != "/v1/traces":
                    receiver.rejected.append(("path", self.path))
                    return self._answer(404, b"", "text/plain")
                if kind != "application/x-protobuf":
                    receiver.rejected.append(("content-type", kind))
                    return self._answer(415, b"", "text/plain")
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                decoded = []
                for rs in request.resource_spans:
                    resource = {a.key: value(a.value) for a in rs.resource.attributes}
                    for ss in rs.scope_spans:
                        decoded.extend(Span(s, resource) for s in ss.spans)
                with receiver._lock:
                    receiver.posts += 1
                    receiver._spans.extend(decoded)
                self._answer(200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")

            def _answer(self, status, body, kind):
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self._server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def spans(self):
        with self._lock:
            return list(self._spans)

    def close(self):
        self._server.shutdown()
        self._server.server_close()


if __name__ == "__main__":
    r = Receiver(int(sys.argv[1]) if len(sys.argv) > 1 else 4318)
    print(f"OTLP/HTTP receiver on {r.endpoint}/v1/traces", flush=True)
    seen = 0
    try:
        while True:
            threading.Event().wait(0.5)
            spans = r.spans()
            for s in spans[seen:]:
                print(s, flush=True)
            seen = len(spans)
    except KeyboardInterrupt:
        r.close()
