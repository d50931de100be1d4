"""The demo backend's gRPC port against the official clients:
`tritonclient.grpc` (infer with every datatype, requested outputs, the
decoupled model over a stream, metadata, config, statistics, index, the
error statuses) and `grpcio-health-checking`'s health stub.

Usage (the venv of scripts/triton-backend.sh):

    python tests/grpc/check_demo.py [--triton HOST:PORT]

Without an address it starts `tensorgate demo-backend --grpc-listen` itself
(the binary from TENSORGATE_BIN, default target/release/tensorgate) on free
127.0.0.1 ports and stops it at the end. With --triton, the faults are also
sent to that real Triton (started with tests/models and gRPC allowed), and
the demo's status code and message must equal Triton's for each.

Prints one line per check and `N passed, N failed`; exits non-zero on any
failure.
"""
import argparse
import os
import queue
import socket
import subprocess
import sys
import time

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
from grpc_health.v1 import health_pb2, health_pb2_grpc
from tritonclient.utils import InferenceServerException

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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


def start_demo():
    binary = os.environ.get("TENSORGATE_BIN", os.path.join(ROOT, "target/release/tensorgate"))
    http_port, grpc_port = free_port(), free_port()
    proc = subprocess.Popen(
        [binary, "demo-backend", "--listen", f"127.0.0.1:{http_port}", "--grpc-listen", f"127.0.0.1:{grpc_port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    address = f"127.0.0.1:{grpc_port}"
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            if grpcclient.InferenceServerClient(address).is_server_live():
                return proc, address
        except Exception:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the demo backend did not start")


def expect(a, b):
    if not np.array_equal(a, b) if isinstance(a, np.ndarray) else a != b:
        raise AssertionError(f"{a!r} != {b!r}")


ARRAYS = {
    "BOOL": np.array([True, False, True]),
    "INT8": np.array([-128, 0, 127], dtype=np.int8),
    "INT16": np.array([-32768, 7, 32767], dtype=np.int16),
    "INT32": np.array([[-1, 2], [3, -4]], dtype=np.int32),
    "INT64": np.array([np.iinfo(np.int64).min, 5], dtype=np.int64),
    "UINT8": np.array([0, 255], dtype=np.uint8),
    "UINT16": np.array([65535], dtype=np.uint16),
    "UINT32": np.array([4294967295, 1], dtype=np.uint32),
    "UINT64": np.array([18446744073709551615], dtype=np.uint64),
    "FP16": np.array([1.5, -np.inf], dtype=np.float16),
    "FP32": np.array([[0.5, np.float32(3.4028235e38)]], dtype=np.float32),
    "FP64": np.array([1e-300, -2.25], dtype=np.float64),
    "BYTES": np.array([b"", b"h\xc3\xa9", b"\x00\xff"], dtype=np.object_),
}


def run_checks(client, address):
    def simple():
        a = np.arange(16, dtype=np.int32).reshape(1, 16)
        b = np.ones((1, 16), dtype=np.int32)
        inputs = [grpcclient.InferInput("INPUT0", [1, 16], "INT32"), grpcclient.InferInput("INPUT1", [1, 16], "INT32")]
        inputs[0].set_data_from_numpy(a)
        inputs[1].set_data_from_numpy(b)
        r = client.infer("simple", inputs, request_id="py-1")
        expect(r.as_numpy("OUTPUT0"), a + b)
        expect(r.as_numpy("OUTPUT1"), a - b)
        expect(r.get_response().id, "py-1")
        r = client.infer("simple", inputs, outputs=[grpcclient.InferRequestedOutput("OUTPUT1")])
        expect([o.name for o in r.get_response().outputs], ["OUTPUT1"])
        expect(r.as_numpy("OUTPUT0"), None)

    def identity_every_datatype():
        inputs = []
        for dtype, array in ARRAYS.items():
            i = grpcclient.InferInput(f"IN_{dtype}", list(array.shape), dtype)
            i.set_data_from_numpy(array)
            inputs.append(i)
        r = client.infer("identity", inputs)
        for n, (dtype, array) in enumerate(ARRAYS.items()):
            out = r.as_numpy(f"OUTPUT{n}")
            expect(out.shape, array.shape)
            if dtype == "BYTES":
                expect(list(out.reshape(-1)), list(array.reshape(-1)))
            else:
                expect(out.tobytes(), array.tobytes())

    def large_message():
        array = np.arange(3_000_000, dtype=np.float32)  # 12 MB, past gRPC's 4 MiB default
        i = grpcclient.InferInput("X", list(array.shape), "FP32")
        i.set_data_from_numpy(array)
        expect(client.infer("identity", [i]).as_numpy("OUTPUT0").tobytes(), array.tobytes())

    def stream_decoupled():
        got = queue.Queue()
        client.start_stream(callback=lambda result, error: got.put((result, error)))
        try:
            text = grpcclient.InferInput("text_input", [1], "BYTES")
            text.set_data_from_numpy(np.array([b"hi"], dtype=np.object_))
            count = grpcclient.InferInput("count", [1], "INT32")
            count.set_data_from_numpy(np.array([3], dtype=np.int32))
            delay = grpcclient.InferInput("delay_ms", [1], "INT32")
            delay.set_data_from_numpy(np.array([10], dtype=np.int32))
            client.async_stream_infer("repeat", [text, count, delay], request_id="s1")
            outs = [got.get(timeout=10) for _ in range(3)]
        finally:
            client.stop_stream()
        for n, (result, error) in enumerate(outs):
            expect(error, None)
            expect(list(result.as_numpy("text_output")), [f"hi{n}".encode()])
            expect(list(result.as_numpy("index")), [n])
            expect(result.get_response().parameters["triton_final_response"].bool_param, n == 2)

    def metadata():
        expect(client.is_server_live(), True)
        expect(client.is_server_ready(), True)
        expect(client.is_model_ready("simple"), True)
        expect(client.is_model_ready("nope"), False)
        m = client.get_server_metadata(as_json=True)
        expect(m["name"], "tensorgate-demo")
        mm = client.get_model_metadata("simple", as_json=True)
        expect(mm["inputs"][0], {"name": "INPUT0", "datatype": "INT32", "shape": ["-1", "16"]})
        c = client.get_model_config("repeat", as_json=True)["config"]
        expect(c["model_transaction_policy"], {"decoupled": True})
        expect(c["input"][0]["data_type"], "TYPE_STRING")
        s = client.get_inference_statistics("simple", as_json=True)
        expect(s["model_stats"][0]["name"], "simple")
        index = client.get_model_repository_index(as_json=True)
        expect([m["name"] for m in index["models"]], ["simple", "identity", "repeat", "ramp", "rowsum"])

    def health():
        stub = health_pb2_grpc.HealthStub(grpc.insecure_channel(address))
        expect(stub.Check(health_pb2.HealthCheckRequest()).status, health_pb2.HealthCheckResponse.SERVING)
        expect(stub.Check(health_pb2.HealthCheckRequest(service="inference.GRPCInferenceService")).status,
               health_pb2.HealthCheckResponse.SERVING)
        try:
            stub.Check(health_pb2.HealthCheckRequest(service="nope"))
            raise AssertionError("unknown service answered")
        except grpc.RpcError as e:
            expect(e.code(), grpc.StatusCode.NOT_FOUND)
        first = next(stub.Watch(health_pb2.HealthCheckRequest(), timeout=5))
        expect(first.status, health_pb2.HealthCheckResponse.SERVING)

    check("simple: sum and difference, request id, requested outputs", simple)
    check("identity: every datatype, raw", identity_every_datatype)
    check("identity: a 12 MB message", large_message)
    check("stream: decoupled repeat, 3 responses, final flag", stream_decoupled)
    check("metadata, config, statistics, index, readiness", metadata)
    check("grpc.health.v1 Check and Watch", health)


def faults():
    """(name, model, inputs as (name, dtype, shape, array)) for the errors."""
    i32 = lambda *shape: np.zeros(shape, dtype=np.int32)
    return [
        ("unknown model", "nope", [("INPUT0", "INT32", i32(1, 16))]),
        ("bad shape", "simple", [("INPUT0", "INT32", i32(1, 16)), ("INPUT1", "INT32", i32(1, 8))]),
        ("wrong datatype", "simple", [("INPUT0", "INT32", i32(1, 16)), ("INPUT1", "FP32", np.zeros((1, 16), np.float32))]),
        ("missing input", "simple", [("INPUT0", "INT32", i32(1, 16))]),
        ("batch too large", "simple", [("INPUT0", "INT32", i32(9, 16)), ("INPUT1", "INT32", i32(9, 16))]),
    ]


def fault_status(client, model, spec):
    inputs = []
    for name, dtype, array in spec:
        i = grpcclient.InferInput(name, list(array.shape), dtype)
        i.set_data_from_numpy(array)
        inputs.append(i)
    try:
        client.infer(model, inputs)
    except InferenceServerException as e:
        return e.status(), e.message()
    return None


def run_fault_checks(client, triton):
    expected_codes = {"unknown model": "StatusCode.NOT_FOUND"}
    for name, model, spec in faults():
        def one(name=name, model=model, spec=spec):
            got = fault_status(client, model, spec)
            if got is None:
                raise AssertionError("no error")
            if triton is not None:
                expect(got, fault_status(triton, model, spec))
            else:
                expect(got[0], expected_codes.get(name, "StatusCode.INVALID_ARGUMENT"))
        check(f"fault: {name}" + (" (same as Triton)" if triton else ""), one)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--triton", help="a real Triton's gRPC address, to compare the faults with")
    args = parser.parse_args()
    proc, address = start_demo()
    try:
        client = grpcclient.InferenceServerClient(address)
        run_checks(client, address)
        triton = grpcclient.InferenceServerClient(args.triton) if args.triton else None
        run_fault_checks(client, triton)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    print(f"{results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
