"""A gRPC backend's refusals reach `tritonclient.grpc` through tensorgate
with the backend's own status code and message.

A scripted backend (a grpcio server on 127.0.0.1 answering
`inference.GRPCInferenceService` with raw messages) refuses every
`ModelInfer` with FAILED_PRECONDITION, OUT_OF_RANGE, ALREADY_EXISTS or
CANCELLED in turn; tensorgate runs in front of it (`--backend grpc://...`);
tritonclient.grpc's `infer` must raise with that same code and message,
unary and on a stream (`async_stream_infer`: the stream's error message
for the request, as Triton sends a failed request's error on a stream).

Usage (the venv of scripts/triton-backend.sh, which has tritonclient[grpc]):

    python tests/grpc/check_refusals.py

TENSORGATE_BIN names the binary (default target/release/tensorgate).
Prints one line per check and `N passed, N failed`; exits non-zero on any
failure.
"""
import os
import queue
import socket
import subprocess
import sys
import time
from concurrent import futures

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2
from tritonclient.utils import InferenceServerException

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVICE = "inference.GRPCInferenceService"
CODES = [
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.OUT_OF_RANGE,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.CANCELLED,
]
results = {"passed": 0, "failed": 0}


def check(name, fn):
    try:
        fn()
        results["passed"] += 1
        print(f"ok   {name}")
    except Exception as e:  # any failure is reported, then the next check runs
        results["failed"] += 1
        print(f"FAIL {name}: {type(e).__name__}: {e}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Script:
    """What the scripted backend answers ModelInfer with next."""

    code = CODES[0]


def backend(port):
    """A gRPC server that is ready and refuses every infer with `Script.code`."""

    def ready(request, context):
        return service_pb2.ServerReadyResponse(ready=True).SerializeToString()

    def model_ready(request, context):
        return service_pb2.ModelReadyResponse(ready=True).SerializeToString()

    def infer(request, context):
        context.abort(Script.code, f"the model says {Script.code.name}")

    def stream(requests, context):
        for _ in requests:
            context.abort(Script.code, f"the model says {Script.code.name}")
        return iter(())

    raw = dict(request_deserializer=None, response_serializer=None)
    handlers = {
        "ServerReady": grpc.unary_unary_rpc_method_handler(ready, **raw),
        "ModelReady": grpc.unary_unary_rpc_method_handler(model_ready, **raw),
        "ModelInfer": grpc.unary_unary_rpc_method_handler(infer, **raw),
        "ModelStreamInfer": grpc.stream_stream_rpc_method_handler(stream, **raw),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(SERVICE, handlers)])
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    return server


def start_gateway(backend_port):
    binary = os.environ.get("TENSORGATE_BIN", os.path.join(ROOT, "target/release/tensorgate"))
    port, admin = free_port(), free_port()
    proc = subprocess.Popen(
        [binary, "--backend", f"grpc://127.0.0.1:{backend_port}",
         "--listen", f"127.0.0.1:{port}", "--admin-listen", f"127.0.0.1:{admin}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    address = f"127.0.0.1:{port}"
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, address
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("tensorgate did not start")


def inputs():
    a = grpcclient.InferInput("INPUT0", [1, 16], "INT32")
    a.set_data_from_numpy(np.arange(16, dtype=np.int32).reshape(1, 16))
    return [a]


def unary(client, code):
    def run():
        Script.code = code
        try:
            client.infer("simple", inputs())
        except InferenceServerException as e:
            if e.status() != str(code):
                raise AssertionError(f"status {e.status()}, expected {code}")
            if f"the model says {code.name}" not in e.message():
                raise AssertionError(f"message {e.message()!r}")
            return
        raise AssertionError("the call succeeded")
    return run


def streamed(client, code):
    def run():
        Script.code = code
        got = queue.Queue()
        client.start_stream(callback=lambda result, error: got.put((result, error)))
        try:
            client.async_stream_infer("simple", inputs())
            result, error = got.get(timeout=10)
        finally:
            client.stop_stream()
        if error is None:
            raise AssertionError(f"no error, got {result}")
        if f"the model says {code.name}" not in str(error):
            raise AssertionError(f"error {error}")
    return run


def main():
    backend_port = free_port()
    server = backend(backend_port)
    proc, address = start_gateway(backend_port)
    try:
        client = grpcclient.InferenceServerClient(address)
        for code in CODES:
            check(f"ModelInfer refused with {code.name} arrives as {code.name}", unary(client, code))
        for code in CODES:
            check(f"a stream's request refused with {code.name} arrives with its message", streamed(client, code))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        server.stop(0)
    print(f"{results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
