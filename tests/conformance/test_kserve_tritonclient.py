"""The real ``tritonclient.http`` client against KServe 0.21 directly and
through tensorgate (route ``kserve``, binary format).

KServe takes a JSON body without ``Content-Type: application/json`` for a
binary one, and tritonclient sends its JSON requests without one: they fail
against KServe directly (400) and work through tensorgate, which always
labels the body it sends. Binary requests work both ways with the same
results. KServe does not decompress request bodies; tensorgate does.
"""
import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

SUITE = "tritonclient-kserve"
AREAS = {
    "test_kserve_identity": "tritonclient against KServe (kserve_identity)",
}

VALUES = {
    "BOOL": np.array([True, False], dtype=np.bool_),
    "UINT8": np.array([0, 255], dtype=np.uint8),
    "INT32": np.array([-(2**31), 2**31 - 1], dtype=np.int32),
    "INT64": np.array([-(2**63), 2**63 - 1], dtype=np.int64),
    "UINT64": np.array([0, 2**64 - 1], dtype=np.uint64),
    "FP32": np.array([0.1, -0.0, 3.4028235e38], dtype=np.float32),
    "FP64": np.array([0.1, 5e-324, 1e300], dtype=np.float64),
    "BYTES": np.array([b"hello", "h\u00e9".encode()], dtype=np.object_),
}
# (how the client frames the request, does KServe accept it directly)
MODES = {
    "binary": True,
    "json": False,  # no Content-Type: KServe reads it as binary
    "gzip-request": False,  # KServe does not decompress
    "gzip-response": True,
}


@pytest.fixture(scope="module")
def direct(kserve_url):
    c = httpclient.InferenceServerClient(url=kserve_url.split("://", 1)[-1])
    yield c
    c.close()


@pytest.fixture(scope="module")
def via(gateway, kserve_url):
    c = httpclient.InferenceServerClient(url=gateway.hostport)
    yield c
    c.close()


def infer(c, dtype, mode):
    data = VALUES[dtype]
    binary = mode != "json"
    i = httpclient.InferInput("INPUT0", list(data.shape), dtype)
    i.set_data_from_numpy(data, binary_data=binary)
    o = httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary)
    kwargs = {}
    if mode == "gzip-request":
        kwargs["request_compression_algorithm"] = "gzip"
    if mode == "gzip-response":
        kwargs["response_compression_algorithm"] = "gzip"
    return c.infer("kserve_identity", [i], outputs=[o], **kwargs)


def as_list(a):
    return [x if isinstance(x, bytes) else (x.encode() if isinstance(x, str) else x) for x in a.tolist()]


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("dtype", list(VALUES))
def test_kserve_identity(direct, via, dtype, mode):
    v = infer(via, dtype, mode).as_numpy("OUTPUT0")
    assert as_list(v) == as_list(VALUES[dtype])
    if MODES[mode]:
        d = infer(direct, dtype, mode).as_numpy("OUTPUT0")
        assert as_list(d) == as_list(v)
        assert d.dtype == v.dtype
    else:
        with pytest.raises(InferenceServerException):
            infer(direct, dtype, mode).as_numpy("OUTPUT0")
