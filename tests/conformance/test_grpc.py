"""gRPC against a real Triton 2.51, directly and through tensorgate, with the
official clients:

- ``tritonclient.grpc`` through tensorgate in front of Triton's HTTP port
  (gRPC in, binary HTTP out: column ``grpc→http``) and in front of Triton's
  gRPC port (``grpc→grpc``), compared with the same client talking to
  Triton's gRPC port directly: every datatype with raw contents and with
  typed ``InferTensorContents`` (FP16/BF16 have none: raw only, as the
  protocol says), requested outputs, a message above tonic's default 4 MiB,
  the error statuses, the metadata calls and ``ModelStreamInfer``;
- ``tritonclient.http`` JSON and binary clients through tensorgate in front
  of Triton's gRPC port (``http→grpc``), compared with the same client
  talking to Triton's HTTP port directly;
- ``grpcio-health-checking``'s stub against the gateway's
  ``grpc.health.v1.Health``.

Needs ``TENSORGATE_TRITON_URL`` and ``TENSORGATE_TRITON_GRPC`` (host:port of
Triton's gRPC port; scripts/test.sh and scripts/conformance.sh start Triton
with both).
"""
import os
import queue

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from grpc_health.v1 import health_pb2, health_pb2_grpc
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException

from test_tritonclient import VALUES, check_identity, same_array
from tg_gateway import Gateway

SUITE = "grpc"
AREAS = {
    "test_identity": "tritonclient.grpc datatypes",
    "test_large_message": "tritonclient.grpc messages above 4 MiB",
    "test_requested_outputs": "tritonclient.grpc output selection (simple)",
    "test_errors": "tritonclient.grpc error statuses",
    "test_metadata": "tritonclient.grpc metadata and health",
    "test_stream": "tritonclient.grpc ModelStreamInfer",
    "test_http_client_to_grpc_backend": "tritonclient.http through tensorgate to Triton's gRPC port",
    "test_health": "grpcio-health-checking against the gateway",
}

DTYPES = list(VALUES)
# The gateway's backend protocol toward Triton.
VIA = ["grpc→http", "grpc→grpc"]
# What every typed field holds.
TYPED_FIELD = {
    "BOOL": "bool_contents",
    "UINT8": "uint_contents",
    "UINT16": "uint_contents",
    "UINT32": "uint_contents",
    "UINT64": "uint64_contents",
    "INT8": "int_contents",
    "INT16": "int_contents",
    "INT32": "int_contents",
    "INT64": "int64_contents",
    "FP32": "fp32_contents",
    "FP64": "fp64_contents",
    "BYTES": "bytes_contents",
}


@pytest.fixture(scope="module")
def triton_grpc(triton_url):
    address = os.environ.get("TENSORGATE_TRITON_GRPC", "")
    if address:
        return address
    if os.environ.get("CI") and os.environ.get("TENSORGATE_CONFORMANCE_SKIP") != "1":
        pytest.fail("TENSORGATE_TRITON_GRPC is not set and CI is", pytrace=False)
    pytest.skip("SKIPPED: TENSORGATE_TRITON_GRPC is not set (Triton's gRPC port)")


@pytest.fixture(scope="module")
def grpc_gateway(triton_grpc):
    """A gateway whose backend is Triton's gRPC port."""
    log_dir = os.environ.get("TENSORGATE_CONFORMANCE_DIR")
    gw = Gateway(triton_url=f"grpc://{triton_grpc}", log_dir=log_dir).start()
    yield gw
    gw.stop()


@pytest.fixture(scope="module")
def direct(triton_grpc):
    c = grpcclient.InferenceServerClient(url=triton_grpc)
    yield c
    c.close()


@pytest.fixture(scope="module")
def clients(gateway, grpc_gateway):
    """``tritonclient.grpc`` to the gateway, by backend protocol."""
    cs = {
        "grpc→http": grpcclient.InferenceServerClient(url=gateway.hostport),
        "grpc→grpc": grpcclient.InferenceServerClient(url=grpc_gateway.hostport),
    }
    yield cs
    for c in cs.values():
        c.close()


@pytest.fixture(scope="module")
def stubs(direct, gateway, grpc_gateway, triton_grpc):
    """Raw stubs, for what tritonclient cannot send (typed contents)."""
    channels = {
        "direct": grpc.insecure_channel(triton_grpc),
        "grpc→http": grpc.insecure_channel(gateway.hostport),
        "grpc→grpc": grpc.insecure_channel(grpc_gateway.hostport),
    }
    yield {k: service_pb2_grpc.GRPCInferenceServiceStub(c) for k, c in channels.items()}
    for c in channels.values():
        c.close()


@pytest.fixture(scope="module")
def http_clients(triton_url, grpc_gateway):
    """``tritonclient.http``: to Triton's HTTP port, and to the gateway in
    front of its gRPC port."""
    direct = httpclient.InferenceServerClient(url=triton_url.split("://", 1)[-1], network_timeout=30.0)
    via = httpclient.InferenceServerClient(url=grpc_gateway.hostport, network_timeout=30.0)
    yield direct, via
    direct.close()
    via.close()


def same_response(d, v):
    """Model, version, id and every output's name, datatype and shape."""
    dr, vr = d.get_response(), v.get_response()
    assert (dr.model_name, dr.model_version, dr.id) == (vr.model_name, vr.model_version, vr.id)
    strip = lambda r: [(o.name, o.datatype, list(o.shape)) for o in r.outputs]  # noqa: E731
    assert strip(dr) == strip(vr)


def raw_infer(c, dtype, data, request_id):
    inp = grpcclient.InferInput("INPUT0", list(data.shape), dtype)
    inp.set_data_from_numpy(data)
    out = grpcclient.InferRequestedOutput("OUTPUT0")
    return c.infer(f"identity_{dtype.lower()}", [inp], outputs=[out], request_id=request_id)


def typed_request(dtype, data, request_id):
    contents = service_pb2.InferTensorContents()
    values = data.flatten().tolist()
    getattr(contents, TYPED_FIELD[dtype]).extend(values)
    return service_pb2.ModelInferRequest(
        model_name=f"identity_{dtype.lower()}",
        id=request_id,
        inputs=[
            service_pb2.ModelInferRequest.InferInputTensor(
                name="INPUT0", datatype=dtype, shape=list(data.shape), contents=contents
            )
        ],
    )


@pytest.mark.parametrize("contents", ["raw", "typed"])
@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("dtype", DTYPES)
def test_identity(direct, clients, stubs, dtype, via, contents):
    data = VALUES[dtype]
    if contents == "raw":
        d = raw_infer(direct, dtype, data, f"{dtype}-raw")
        v = raw_infer(clients[via], dtype, data, f"{dtype}-raw")
        same_response(d, v)
        assert same_array(d.as_numpy("OUTPUT0"), v.as_numpy("OUTPUT0"))
        assert same_array(v.as_numpy("OUTPUT0"), data)
        return
    if dtype in ("FP16", "BF16"):
        # No typed field: Triton refuses the tensor without raw contents,
        # and so does tensorgate, with the same code.
        req = service_pb2.ModelInferRequest(
            model_name=f"identity_{dtype.lower()}",
            inputs=[service_pb2.ModelInferRequest.InferInputTensor(name="INPUT0", datatype=dtype, shape=[1])],
        )
        codes = []
        for who in ("direct", via):
            with pytest.raises(grpc.RpcError) as e:
                stubs[who].ModelInfer(req, timeout=30)
            codes.append(e.value.code())
        assert codes[0] == codes[1] == grpc.StatusCode.INVALID_ARGUMENT, codes
        return
    req = typed_request(dtype, data, f"{dtype}-typed")
    d = stubs["direct"].ModelInfer(req, timeout=30)
    v = stubs[via].ModelInfer(req, timeout=30)
    assert (d.model_name, d.id) == (v.model_name, v.id)
    assert [(o.name, o.datatype, list(o.shape)) for o in d.outputs] == [
        (o.name, o.datatype, list(o.shape)) for o in v.outputs
    ]
    assert list(d.raw_output_contents) == list(v.raw_output_contents)


@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("elements", [1 << 20, 3 << 20])
def test_large_message(direct, clients, elements, via):
    data = np.arange(elements, dtype=np.float32) * np.float32(0.5)
    d = raw_infer(direct, "FP32", data, "large")
    v = raw_infer(clients[via], "FP32", data, "large")
    same_response(d, v)
    assert same_array(v.as_numpy("OUTPUT0"), data)


SELECTIONS = {"all (none listed)": None, "OUTPUT0": ["OUTPUT0"], "OUTPUT1": ["OUTPUT1"], "both": ["OUTPUT1", "OUTPUT0"]}


@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("selection", list(SELECTIONS))
def test_requested_outputs(direct, clients, selection, via):
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.full((1, 16), 3, dtype=np.int32)

    def run(c):
        inputs = [grpcclient.InferInput("INPUT0", [1, 16], "INT32"), grpcclient.InferInput("INPUT1", [1, 16], "INT32")]
        inputs[0].set_data_from_numpy(a)
        inputs[1].set_data_from_numpy(b)
        names = SELECTIONS[selection]
        outputs = None if names is None else [grpcclient.InferRequestedOutput(n) for n in names]
        return c.infer("simple", inputs, outputs=outputs, request_id="sel")

    d, v = run(direct), run(clients[via])
    same_response(d, v)
    names = [o.name for o in d.get_response().outputs]
    for n in names:
        assert same_array(d.as_numpy(n), v.as_numpy(n)), n
    if "OUTPUT0" in names:
        assert np.array_equal(v.as_numpy("OUTPUT0"), a + b)
    if "OUTPUT1" in names:
        assert np.array_equal(v.as_numpy("OUTPUT1"), a - b)


def fault_request(kind):
    i32 = np.arange(16, dtype=np.int32).tobytes()
    tensor = service_pb2.ModelInferRequest.InferInputTensor
    model, inputs, raw = "simple", [tensor(name="INPUT0", datatype="INT32", shape=[1, 16]), tensor(name="INPUT1", datatype="INT32", shape=[1, 16])], [i32, i32]
    if kind == "unknown model":
        model = "no_such_model"
    elif kind == "wrong shape":
        inputs[0].shape[:] = [1, 8]
        raw[0] = i32[:32]
    elif kind == "wrong datatype":
        inputs[0].datatype = "FP32"
    elif kind == "unknown input":
        inputs[1].name = "INPUT9"
    elif kind == "missing input":
        inputs, raw = inputs[:1], raw[:1]
    elif kind == "raw size disagrees with shape":
        raw[1] = i32[:20]
    elif kind == "more raw contents than inputs":
        raw.append(i32)
    elif kind == "unknown output":
        return service_pb2.ModelInferRequest(
            model_name=model, inputs=inputs, raw_input_contents=raw,
            outputs=[service_pb2.ModelInferRequest.InferRequestedOutputTensor(name="OUTPUT9")],
        )
    return service_pb2.ModelInferRequest(model_name=model, inputs=inputs, raw_input_contents=raw)


FAULTS = [
    "unknown model",
    "wrong shape",
    "wrong datatype",
    "unknown input",
    "missing input",
    "raw size disagrees with shape",
    "more raw contents than inputs",
    "unknown output",
]


@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("fault", FAULTS)
def test_errors(stubs, fault, via):
    req = fault_request(fault)
    if fault == "more raw contents than inputs":
        # Triton 2.51 ignores the extra entry; tensorgate refuses a request
        # whose bytes it cannot place (a documented difference).
        assert stubs["direct"].ModelInfer(req, timeout=30).model_name == "simple"
        with pytest.raises(grpc.RpcError) as e:
            stubs[via].ModelInfer(req, timeout=30)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "3 raw_input_contents entries for 2 inputs" in e.value.details()
        return
    seen = {}
    for who in ("direct", via):
        with pytest.raises(grpc.RpcError) as e:
            stubs[who].ModelInfer(req, timeout=30)
        seen[who] = (e.value.code(), e.value.details())
    (dc, dm), (vc, vm) = seen["direct"], seen[via]
    assert dc == vc, seen
    # The message names what Triton's names: the model or the tensor.
    for name in ("no_such_model", "INPUT0", "INPUT1", "INPUT9", "OUTPUT9"):
        if name in dm:
            assert name in vm, seen


@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize(
    "call",
    ["server live", "server ready", "model ready", "server metadata", "model metadata", "model config", "model statistics", "repository index", "unknown model's metadata"],
)
def test_metadata(direct, clients, call, via):
    v = clients[via]
    if call == "server live":
        assert direct.is_server_live() and v.is_server_live()
    elif call == "server ready":
        assert direct.is_server_ready() and v.is_server_ready()
    elif call == "model ready":
        assert direct.is_model_ready("simple") and v.is_model_ready("simple")
        assert not direct.is_model_ready("no_such_model")
        assert not v.is_model_ready("no_such_model")
    elif call == "server metadata":
        d, g = direct.get_server_metadata(as_json=True), v.get_server_metadata(as_json=True)
        assert d == g
    elif call == "model metadata":
        for model in ("simple", "identity_bytes", "decoupled_repeat"):
            assert direct.get_model_metadata(model, as_json=True) == v.get_model_metadata(model, as_json=True)
    elif call == "model config":
        for model in ("simple", "decoupled_repeat"):
            d = direct.get_model_config(model, as_json=True)["config"]
            g = v.get_model_config(model, as_json=True)["config"]
            for key in ("name", "backend", "max_batch_size", "input", "output", "model_transaction_policy"):
                assert d.get(key) == g.get(key), (model, key, d.get(key), g.get(key))
    elif call == "model statistics":
        d = direct.get_inference_statistics("simple", as_json=True)
        g = v.get_inference_statistics("simple", as_json=True)
        assert [s["name"] for s in d["model_stats"]] == [s["name"] for s in g["model_stats"]] == ["simple"]
        assert set(g["model_stats"][0]["inference_stats"]) == set(d["model_stats"][0]["inference_stats"])
    elif call == "repository index":
        # As its HTTP twin: a repository control call (the conformance
        # gateway's default route allows it, see tg_gateway.py).
        index = lambda c: sorted(  # noqa: E731
            (m["name"], m.get("state"), m.get("version")) for m in c.get_model_repository_index(as_json=True)["models"]
        )
        assert index(direct) == index(v)
        assert {"simple", "decoupled_repeat"} <= {name for name, _, _ in index(v)}
    elif call == "unknown model's metadata":
        codes = []
        for c in (direct, v):
            with pytest.raises(InferenceServerException) as e:
                c.get_model_metadata("no_such_model")
            codes.append(e.value.status())
        assert codes[0] == codes[1], codes


def stream_run(c, model, requests):
    """Sends the requests on one stream; every response (or error) back."""
    got = queue.Queue()
    c.start_stream(callback=lambda result, error: got.put((result, error)))
    try:
        for inputs, params in requests:
            c.async_stream_infer(model, inputs, parameters=params, enable_empty_final_response=True)
        out = []
        while True:
            result, error = got.get(timeout=30)
            out.append((result, error))
            if error is not None:
                break
            final = result.get_response().parameters.get("triton_final_response")
            if final is not None and final.bool_param:
                requests = requests[1:]
                if not requests:
                    break
    finally:
        c.stop_stream()
    return out


def repeat_inputs(text, count):
    t = grpcclient.InferInput("text_input", [1], "BYTES")
    t.set_data_from_numpy(np.array([text.encode()], dtype=np.object_))
    n = grpcclient.InferInput("count", [1], "INT32")
    n.set_data_from_numpy(np.array([count], dtype=np.int32))
    return [t, n]


def simple_inputs(k):
    inputs = [grpcclient.InferInput("INPUT0", [1, 16], "INT32"), grpcclient.InferInput("INPUT1", [1, 16], "INT32")]
    inputs[0].set_data_from_numpy(np.arange(16, dtype=np.int32).reshape(1, 16) * k)
    inputs[1].set_data_from_numpy(np.ones((1, 16), dtype=np.int32))
    return inputs


@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("model", ["decoupled_repeat", "simple"])
def test_stream(direct, clients, model, via):
    if model == "decoupled_repeat":
        requests = [(repeat_inputs("hello", 3), None), (repeat_inputs("again", 2), None)]
    else:
        requests = [(simple_inputs(k), None) for k in (1, 2, 3)]
    d = stream_run(direct, model, requests)
    assert all(e is None for _, e in d), d
    if model == "decoupled_repeat" and via == "grpc→http":
        # Triton's HTTP port cannot stream a decoupled model's responses:
        # the stream ends UNIMPLEMENTED, saying so.
        v = stream_run(clients[via], model, requests)
        error = v[-1][1]
        assert error is not None and "UNIMPLEMENTED" in str(error.status()), v
        assert "grpc://" in str(error), error
        return
    v = stream_run(clients[via], model, requests)
    assert all(e is None for _, e in v), v
    flat = lambda rs: [  # noqa: E731
        {o.name: r.as_numpy(o.name).tolist() for o in r.get_response().outputs} for r, _ in rs
    ]
    assert flat(d) == flat(v)


HTTP_MODES = ["binary", "json", "binary_data_output"]


@pytest.mark.parametrize("mode", HTTP_MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_http_client_to_grpc_backend(http_clients, dtype, mode):
    direct, via = http_clients
    check_identity(direct, via, dtype, mode)


@pytest.mark.parametrize("service", ["gateway", "route", "unknown"])
def test_health(gateway, service):
    with grpc.insecure_channel(gateway.hostport) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        name = {"gateway": "", "route": "triton", "unknown": "no-such-route"}[service]
        req = health_pb2.HealthCheckRequest(service=name)
        if service == "unknown":
            with pytest.raises(grpc.RpcError) as e:
                stub.Check(req, timeout=10)
            assert e.value.code() == grpc.StatusCode.NOT_FOUND
            return
        assert stub.Check(req, timeout=10).status == health_pb2.HealthCheckResponse.SERVING
        first = next(iter(stub.Watch(req, timeout=5)))
        assert first.status == health_pb2.HealthCheckResponse.SERVING
