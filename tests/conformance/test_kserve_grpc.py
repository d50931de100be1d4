"""gRPC against KServe 0.21's own gRPC server (its ``ModelServer`` with
``grpc_port``, bound to loopback by tests/kserve/server.py), directly and
through tensorgate, with the official clients:

- ``tritonclient.grpc`` through tensorgate in front of KServe's gRPC port
  (``grpc→grpc``) and in front of its HTTP port (``grpc→http``, binary out),
  compared with the same client talking to KServe's gRPC port directly:
  every datatype KServe serves, ``kserve_simple``'s two outputs, the error
  statuses and the metadata calls;
- ``tritonclient.http`` (binary) through tensorgate in front of KServe's
  gRPC port (``http→grpc``), compared with the same client talking to its
  HTTP port directly.

Needs ``TENSORGATE_KSERVE_URL`` and ``TENSORGATE_KSERVE_GRPC`` (host:port of
KServe's gRPC port; scripts/test.sh and scripts/conformance.sh start KServe
with both).
"""
import os

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from test_kserve_tritonclient import VALUES, as_list
from tg_gateway import Gateway

SUITE = "kserve-grpc"
AREAS = {
    "test_identity": "tritonclient.grpc to KServe's gRPC (kserve_identity)",
    "test_simple": "tritonclient.grpc to KServe's gRPC (kserve_simple)",
    "test_errors": "tritonclient.grpc to KServe's gRPC: error statuses",
    "test_metadata": "tritonclient.grpc to KServe's gRPC: metadata and health",
    "test_http_client_to_grpc_backend": "tritonclient.http through tensorgate to KServe's gRPC port",
}
VIA = ["grpc→grpc", "grpc→http"]


@pytest.fixture(scope="module")
def kserve_grpc(kserve_url):
    address = os.environ.get("TENSORGATE_KSERVE_GRPC", "")
    if address:
        return address
    if os.environ.get("CI") and os.environ.get("TENSORGATE_CONFORMANCE_SKIP") != "1":
        pytest.fail("TENSORGATE_KSERVE_GRPC is not set and CI is", pytrace=False)
    pytest.skip("SKIPPED: TENSORGATE_KSERVE_GRPC is not set (KServe's gRPC port)")


@pytest.fixture(scope="module")
def grpc_gateway(kserve_grpc):
    """A gateway whose routes (the kserve route, and the default route that
    server-level calls such as ServerLive go to) reach KServe's gRPC port."""
    log_dir = os.environ.get("TENSORGATE_CONFORMANCE_DIR")
    url = f"grpc://{kserve_grpc}"
    gw = Gateway(triton_url=url, kserve_url=url, log_dir=log_dir).start()
    yield gw
    gw.stop()


@pytest.fixture(scope="module")
def http_gateway(kserve_url):
    """The same, with KServe's HTTP port as the backend."""
    log_dir = os.environ.get("TENSORGATE_CONFORMANCE_DIR")
    gw = Gateway(triton_url=kserve_url, kserve_url=kserve_url, log_dir=log_dir).start()
    yield gw
    gw.stop()


@pytest.fixture(scope="module")
def clients(kserve_grpc, grpc_gateway, http_gateway):
    cs = {
        "direct": grpcclient.InferenceServerClient(url=kserve_grpc),
        "grpc→grpc": grpcclient.InferenceServerClient(url=grpc_gateway.hostport),
        "grpc→http": grpcclient.InferenceServerClient(url=http_gateway.hostport),
    }
    yield cs
    for c in cs.values():
        c.close()


def identity(c, dtype):
    data = VALUES[dtype]
    inp = grpcclient.InferInput("INPUT0", list(data.shape), dtype)
    inp.set_data_from_numpy(data)
    return c.infer("kserve_identity", [inp], request_id="k1")


@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("dtype", list(VALUES))
def test_identity(clients, dtype, via):
    d = identity(clients["direct"], dtype)
    v = identity(clients[via], dtype)
    dv, vv = d.as_numpy("OUTPUT0"), v.as_numpy("OUTPUT0")
    assert as_list(vv) == as_list(VALUES[dtype])
    assert as_list(dv) == as_list(vv)
    assert dv.dtype == vv.dtype
    dr, vr = d.get_response(), v.get_response()
    assert vr.model_name == dr.model_name == "kserve_identity"
    assert [(o.name, o.datatype, list(o.shape)) for o in vr.outputs] == [
        (o.name, o.datatype, list(o.shape)) for o in dr.outputs
    ]


def simple_inputs(a, b, dtype="INT32"):
    ins = [grpcclient.InferInput(n, list(a.shape), dtype) for n in ("INPUT0", "INPUT1")]
    ins[0].set_data_from_numpy(a)
    ins[1].set_data_from_numpy(b)
    return ins


@pytest.mark.parametrize("via", VIA)
def test_simple(clients, via):
    a = np.arange(-8, 8, dtype=np.int32).reshape(2, 8)
    b = np.full((2, 8), 3, dtype=np.int32)
    for c in (clients["direct"], clients[via]):
        r = c.infer("kserve_simple", simple_inputs(a, b))
        assert (r.as_numpy("OUTPUT0") == a + b).all()
        assert (r.as_numpy("OUTPUT1") == a - b).all()
    # One requested output.
    only = [grpcclient.InferRequestedOutput("OUTPUT1")]
    d = clients["direct"].infer("kserve_simple", simple_inputs(a, b), outputs=only)
    v = clients[via].infer("kserve_simple", simple_inputs(a, b), outputs=only)
    names = [o.name for o in v.get_response().outputs]
    if via == "grpc→grpc":
        # KServe's gRPC server answers every output, requested or not; the
        # gateway passes its answer on as it is.
        assert names == [o.name for o in d.get_response().outputs] == ["OUTPUT0", "OUTPUT1"]
    else:
        # Its HTTP server honours the selection (tests/kserve/server.py).
        assert names == ["OUTPUT1"]
    assert (v.as_numpy("OUTPUT1") == a - b).all()


def status_of(c, model, inputs):
    with pytest.raises(InferenceServerException) as e:
        c.infer(model, inputs)
    return e.value.status(), e.value.message()


FAULTS = {
    # The model refuses the datatype (kserve.errors.InvalidInput).
    "wrong datatype": ("kserve_simple", lambda: simple_inputs(
        np.zeros((1, 4), np.float32), np.zeros((1, 4), np.float32), "FP32")),
    "unknown model": ("nope", lambda: simple_inputs(
        np.zeros((1, 4), np.int32), np.zeros((1, 4), np.int32))),
}


@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("fault", list(FAULTS))
def test_errors(clients, fault, via):
    model, inputs = FAULTS[fault]
    d_code, d_message = status_of(clients["direct"], model, inputs())
    v_code, v_message = status_of(clients[via], model, inputs())
    if fault == "unknown model":
        # The gateway knows the kserve route's models and refuses the name
        # itself, as KServe does.
        assert d_code == v_code == "StatusCode.NOT_FOUND", (d_message, v_message)
        assert "nope" in v_message
    else:
        assert d_code == v_code == "StatusCode.INVALID_ARGUMENT", (d_message, v_message)
        assert "INT32" in v_message, v_message


@pytest.mark.parametrize("via", VIA)
def test_metadata(clients, via):
    d, v = clients["direct"], clients[via]
    assert v.is_server_live() and v.is_server_ready()
    assert v.is_model_ready("kserve_simple") == d.is_model_ready("kserve_simple") is True
    dm = d.get_model_metadata("kserve_identity", as_json=True)
    vm = v.get_model_metadata("kserve_identity", as_json=True)
    assert vm["name"] == dm["name"] == "kserve_identity"
    assert vm.get("inputs", []) == dm.get("inputs", [])
    assert vm.get("outputs", []) == dm.get("outputs", [])
    assert v.get_server_metadata(as_json=True)["name"]


@pytest.mark.parametrize("dtype", list(VALUES))
def test_http_client_to_grpc_backend(kserve_url, grpc_gateway, dtype):
    data = VALUES[dtype]
    results = []
    for url in (kserve_url.split("://", 1)[-1], grpc_gateway.hostport):
        c = httpclient.InferenceServerClient(url=url, network_timeout=30.0)
        try:
            i = httpclient.InferInput("INPUT0", list(data.shape), dtype)
            i.set_data_from_numpy(data, binary_data=True)
            o = httpclient.InferRequestedOutput("OUTPUT0", binary_data=True)
            results.append(c.infer("kserve_identity", [i], outputs=[o]).as_numpy("OUTPUT0"))
        finally:
            c.close()
    direct, via = results
    assert as_list(via) == as_list(data)
    assert as_list(direct) == as_list(via)
    assert direct.dtype == via.dtype
