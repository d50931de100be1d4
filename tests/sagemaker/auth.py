"""boto3 (and the SageMaker SDK's Predictor) against a tensorgate route with
API keys and SigV4: the key's name is the access key id and the key the
secret access key. A right key works; a wrong secret, an unknown access key,
a stale clock and no signature at all each raise what boto3 raises against
AWS for them; over a rate limit boto3 raises ``ThrottlingException``.

    TENSORGATE_BIN=target/release/tensorgate \\
        scripts/sagemaker/client.sh python tests/sagemaker/auth.py

The gateway runs ``serve --config`` in front of ``tensorgate demo-backend``
(model ``rowsum``), both on 127.0.0.1.
"""

import datetime
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")

import boto3  # noqa: E402
import botocore  # noqa: E402
from botocore.config import Config  # noqa: E402
from clients import free_port, start_gateway  # noqa: E402

SECRET = "carol-secret-0123456789"
CSV = b"1.5,2\n4,-5\n"
SCORES = [3.5, -1.0]

CONFIG = """
[server]
shutdown_grace = "2s"
[backends.demo]
url = "http://127.0.0.1:{backend}"
[[routes]]
name = "rows"
default = true
backend = "demo"
[routes.sagemaker]
default_model = "rowsum"
[routes.auth]
keys_file = "keys"
{extra}
"""


def start_backend():
    port = free_port()
    log = tempfile.TemporaryFile()
    cmd = [os.environ["TENSORGATE_BIN"], "demo-backend", "--listen", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=log)
    time.sleep(0.3)
    return proc, port


def keyed_gateway(workdir, backend, extra=""):
    (workdir / "keys").write_text(f"# test key\ncarol:{SECRET}\n")
    config = workdir / "tensorgate.toml"
    config.write_text(CONFIG.format(backend=backend, extra=extra))
    return start_gateway(["serve", "--config", str(config)])


def runtime(url, key_id="carol", secret=SECRET, **config):
    config.setdefault("retries", {"max_attempts": 1})
    return boto3.client(
        "sagemaker-runtime",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
        config=Config(**config),
    )


def invoke(rt):
    resp = rt.invoke_endpoint(EndpointName="rowsum", Body=CSV, ContentType="text/csv", Accept="application/json")
    import json

    return [p["score"] for p in json.loads(resp["Body"].read())["predictions"]]


def raised(fn):
    """What boto3 raised: (exception class, error code, message, HTTP status)."""
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        err = e.response["Error"]
        return type(e).__name__, err.get("Code"), err.get("Message", ""), e.response["ResponseMetadata"]["HTTPStatusCode"]
    raise AssertionError("no error raised")


def expect(fn, code, status, fragment):
    got = raised(fn)
    print(f"     boto3 raised {got[0]} code={got[1]} status={got[3]}: {got[2]}")
    assert got[1] == code and got[3] == status, f"expected {code} {status}, got {got}"
    assert fragment in got[2], f"{fragment!r} not in {got[2]!r}"


def test_keys_and_signatures(url):
    assert invoke(runtime(url)) == SCORES
    print("ok   the right key id and secret")
    expect(lambda: invoke(runtime(url, secret="not-carols-secret-99")), "InvalidSignatureException", 403,
           "does not match the signature you provided")
    print("ok   a wrong secret")
    expect(lambda: invoke(runtime(url, key_id="dave")), "UnrecognizedClientException", 403,
           "access key id is not the name of one of the route's keys")
    print("ok   an unknown access key id")
    stale = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - datetime.timedelta(minutes=20)
    with mock.patch("botocore.auth.get_current_datetime", return_value=stale):
        expect(lambda: invoke(runtime(url)), "InvalidSignatureException", 403, "Signature expired")
    print("ok   a signature 20 minutes old")
    expect(lambda: invoke(runtime(url, signature_version=botocore.UNSIGNED)), "MissingAuthenticationTokenException",
           403, "no API key")
    print("ok   no signature")


def test_predictor(url):
    from sagemaker.deserializers import JSONDeserializer
    from sagemaker.predictor import Predictor
    from sagemaker.serializers import CSVSerializer
    from sagemaker.session import Session

    session = Session(
        boto_session=boto3.Session(region_name="us-east-1", aws_access_key_id="carol", aws_secret_access_key=SECRET),
        sagemaker_runtime_client=runtime(url),
    )
    p = Predictor("rowsum", sagemaker_session=session, serializer=CSVSerializer(), deserializer=JSONDeserializer())
    got = [r["score"] for r in p.predict([[1.5, 2], [4, -5]])["predictions"]]
    assert got == SCORES, got
    print("ok   the SageMaker SDK's Predictor")


def test_throttling(url):
    assert invoke(runtime(url)) == SCORES
    expect(lambda: invoke(runtime(url)), "ThrottlingException", 400, "over the route's limit")
    print("ok   over the rate limit (no retries)")
    # With boto3's default retries (standard mode, 3 attempts) the refusal
    # is retried with backoff, then raised.
    started = time.time()
    expect(lambda: invoke(runtime(url, retries={"mode": "standard"})), "ThrottlingException", 400,
           "over the route's limit")
    print(f"ok   over the rate limit with standard retries ({time.time() - started:.1f}s)")


def run(name, test, extra=""):
    backend, port = start_backend()
    with tempfile.TemporaryDirectory() as d:
        proc, url = keyed_gateway(Path(d), port, extra)
        try:
            test(url)
        except Exception as e:  # noqa: BLE001
            print(f"FAIL {name}: {e!r}")
            return False
        finally:
            proc.kill()
            backend.kill()
    return True


def main():
    ok = run("keys", test_keys_and_signatures)
    ok &= run("predictor", test_predictor)
    ok &= run("throttling", test_throttling, "[routes.rate_limit]\nrequests_per_second = 0.0166\nburst = 1\n")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
