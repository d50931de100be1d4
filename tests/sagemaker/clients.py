"""The real SageMaker Python SDK and boto3 against tensorgate's SageMaker
frontend: request bodies from the SDK's serializers, sent with boto3's
``sagemaker-runtime`` ``invoke_endpoint`` (``endpoint_url`` aimed at the
gateway) and with the SDK's ``Predictor``, replies read by the SDK's own
deserializers; errors raised by boto3 as ``ValidationError`` / ``ModelError``.

Targets: the embedded demo (``tensorgate`` with no arguments; model
``rowsum``) and, when ``TENSORGATE_TRITON_URL`` is set, a real Triton 2.51
(``tensorgate --backend URL``; model ``rowsum`` of tests/models). Without
Triton the second target is SKIPPED loudly (a failure when ``CI`` is set).

    TENSORGATE_BIN=target/release/tensorgate \\
        scripts/sagemaker/client.sh python tests/sagemaker/clients.py
"""

import io
import os
import socket
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")

import boto3  # noqa: E402
import botocore  # noqa: E402
import numpy as np  # noqa: E402
from sagemaker.amazon.common import RecordSerializer  # noqa: E402
from sagemaker.deserializers import (  # noqa: E402
    CSVDeserializer,
    JSONDeserializer,
    JSONLinesDeserializer,
)
from sagemaker.serializers import (  # noqa: E402
    CSVSerializer,
    JSONLinesSerializer,
    JSONSerializer,
)

DATA = np.array([[1.5, 2.0, 3.0], [4.0, -5.0, 0.25], [1e-5, 1.5e20, -0.0]], dtype=np.float32)
SCORES = DATA.astype(np.float64).sum(axis=1).astype(np.float32)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gateway(args):
    port, admin = free_port(), free_port()
    log = tempfile.TemporaryFile()
    cmd = [os.environ["TENSORGATE_BIN"], *args, "--listen", f"127.0.0.1:{port}", "--admin-listen", f"127.0.0.1:{admin}"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=log)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"gateway did not start: {cmd}")


def runtime(url):
    return boto3.client(
        "sagemaker-runtime",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="y",
        config=botocore.config.Config(retries={"max_attempts": 1}),
    )


def invoke(rt, body, content_type, accept, endpoint="rowsum"):
    if isinstance(body, io.BytesIO):
        body = body.getvalue()
    resp = rt.invoke_endpoint(EndpointName=endpoint, Body=body, ContentType=content_type, Accept=accept)
    return resp["Body"], resp["ContentType"]


def check_scores(scores, where):
    got = np.array(scores, dtype=np.float32)
    assert got.shape == SCORES.shape and np.array_equal(got, SCORES), f"{where}: {got} != {SCORES}"


def each_request():
    """(name, body, content type) for every serializer."""
    yield "csv ndarray", CSVSerializer().serialize(DATA), "text/csv"
    yield "csv list", CSVSerializer().serialize(DATA.tolist()), "text/csv"
    yield "json instances", JSONSerializer().serialize({"instances": [{"features": r} for r in DATA.tolist()]}), "application/json"
    yield "json ndarray", JSONSerializer().serialize(DATA), "application/json"
    yield "jsonlines", JSONLinesSerializer().serialize([{"features": r} for r in DATA.tolist()]), "application/jsonlines"
    yield "recordio", RecordSerializer().serialize(DATA), "application/x-recordio-protobuf"


def test_every_format_and_accept(url):
    rt = runtime(url)
    for name, body, ct in each_request():
        stream, rct = invoke(rt, body, ct, "application/json")
        out = JSONDeserializer().deserialize(stream, rct)
        check_scores([p["score"] for p in out["predictions"]], f"{name} -> json")
        rows = np.array([p["OUTPUT0"] for p in out["predictions"]], dtype=np.float32)
        assert np.array_equal(rows, DATA), f"{name}: rows {rows}"
        stream, rct = invoke(rt, body, ct, "application/jsonlines")
        out = JSONLinesDeserializer().deserialize(stream, rct)
        check_scores([p["score"] for p in out], f"{name} -> jsonlines")
        stream, rct = invoke(rt, body, ct, "text/csv")
        out = CSVDeserializer().deserialize(stream, rct)
        check_scores([float(r[0]) for r in out], f"{name} -> csv")
        assert [len(r) for r in out] == [4, 4, 4], f"{name} csv rows {out}"


def test_predictor(url):
    from sagemaker.predictor import Predictor
    from sagemaker.session import Session

    session = Session(
        boto_session=boto3.Session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"),
        sagemaker_runtime_client=runtime(url),
    )
    p = Predictor("rowsum", sagemaker_session=session, serializer=CSVSerializer(), deserializer=JSONDeserializer())
    check_scores([r["score"] for r in p.predict(DATA)["predictions"]], "Predictor")


def expect_client_error(fn, code, fragment):
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        got = e.response["Error"]["Code"]
        message = e.response["Error"].get("Message", "")
        assert got == code, f"expected {code}, got {got}: {e.response}"
        assert fragment in message, f"{fragment!r} not in {message!r}"
        return e
    raise AssertionError(f"expected {code}")


def test_errors(url, model_error_endpoint):
    rt = runtime(url)
    expect_client_error(lambda: invoke(rt, b"1,2\n3\n", "text/csv", "application/json"), "ValidationError", "line 2")
    expect_client_error(lambda: invoke(rt, b"1,x\n", "text/csv", "application/json"), "ValidationError", "feature 1")
    if model_error_endpoint:
        e = expect_client_error(
            lambda: invoke(rt, b"1,2\n", "text/csv", "application/json", endpoint=model_error_endpoint),
            "ModelError",
            "from model",
        )
        assert e.response["OriginalStatusCode"] == 400, e.response


def run(name, url, model_error_endpoint):
    for test in (test_every_format_and_accept, test_predictor):
        test(url)
        print(f"ok   {name}: {test.__name__}")
    test_errors(url, model_error_endpoint)
    print(f"ok   {name}: test_errors")


def main():
    failed = False
    proc, url = start_gateway([])
    try:
        # The demo's "ramp" takes COUNT INT64 [1]: two-feature records are a
        # shape the backend refuses, which is the model's error.
        run("demo", url, "ramp")
    except Exception as e:  # noqa: BLE001
        print(f"FAIL demo: {e!r}")
        failed = True
    finally:
        proc.kill()
    triton = os.environ.get("TENSORGATE_TRITON_URL")
    if not triton:
        print("\n*** SKIPPED: TENSORGATE_TRITON_URL is not set: no real Triton for the SageMaker clients. ***\n")
        if os.environ.get("TENSORGATE_SKIP_LOG"):
            with open(os.environ["TENSORGATE_SKIP_LOG"], "a") as log:
                log.write("tests/sagemaker/clients.py (real Triton target): TENSORGATE_TRITON_URL is not set" + "\n")
        failed |= bool(os.environ.get("CI"))
    else:
        proc, url = start_gateway(["--backend", triton])
        try:
            run("triton", url, "identity_fp32")
        except Exception as e:  # noqa: BLE001
            print(f"FAIL triton: {e!r}")
            failed = True
        finally:
            proc.kill()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
