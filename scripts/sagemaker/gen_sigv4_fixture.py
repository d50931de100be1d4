"""Writes tests/fixtures/sagemaker/sigv4/*.json: requests exactly as boto3's
``sagemaker-runtime`` ``invoke_endpoint`` sends them (captured on a loopback
socket), signed by botocore with a fixed clock, for the Rust SigV4 tests.

    scripts/sagemaker/client.sh python scripts/sagemaker/gen_sigv4_fixture.py tests/fixtures/sagemaker/sigv4

The credentials are test values (the key's name is the access key id, the
key the secret); they protect nothing.
"""

import datetime
import json
import socket
import sys
import threading
from pathlib import Path
from unittest import mock

import boto3
import botocore

ACCESS_KEY = "alice"
SECRET = "tg-test-secret-0123456789"
NOW = datetime.datetime(2026, 1, 15, 9, 30, 0)

CASES = [
    # name, endpoint, body, content type, accept, extra kwargs
    ("csv", "rowsum", b"1.5,2,3\n4,-5,0.25\n", "text/csv", "application/json", {}),
    ("json_target_model", "my-ep", b'{"instances": [{"features": [1, 2]}]}', "application/json",
     "application/jsonlines", {"TargetModel": "rowsum", "CustomAttributes": "a=1; b = 2"}),
    ("empty_body", "rowsum", b"", "text/csv", "text/csv", {}),
]


def capture_one(sock, out):
    conn, _ = sock.accept()
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = [tuple(line.split(": ", 1)) for line in lines[1:]]
    length = int(dict((k.lower(), v) for k, v in headers).get("content-length", "0"))
    while len(body) < length:
        body += conn.recv(65536)
    out.update(method=method, target=target, headers=headers, body=body)
    reply = b'{"ok": true}'
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(reply), reply))
    conn.close()


def main(outdir):
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    for name, endpoint, body, ct, accept, extra in CASES:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        port = sock.getsockname()[1]
        got = {}
        t = threading.Thread(target=capture_one, args=(sock, got))
        t.start()
        rt = boto3.client(
            "sagemaker-runtime",
            endpoint_url=f"http://127.0.0.1:{port}",
            region_name="us-east-1",
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET,
            config=botocore.config.Config(retries={"max_attempts": 1}),
        )
        with mock.patch("botocore.auth.get_current_datetime", return_value=NOW):
            rt.invoke_endpoint(EndpointName=endpoint, Body=body, ContentType=ct, Accept=accept, **extra)
        t.join()
        sock.close()
        path, _, query = got["target"].partition("?")
        fixture = {
            "about": "captured from boto3 " + boto3.__version__ + " / botocore " + botocore.__version__
            + " invoke_endpoint, signed with a fixed clock; regenerate with scripts/sagemaker/gen_sigv4_fixture.py",
            "access_key": ACCESS_KEY,
            "secret": SECRET,
            "now": int(NOW.replace(tzinfo=datetime.timezone.utc).timestamp()),
            "method": got["method"],
            "path": path,
            "query": query,
            "headers": [list(h) for h in got["headers"]],
            "body": got["body"].decode("utf-8"),
        }
        (outdir / f"{name}.json").write_text(json.dumps(fixture, indent=1) + "\n")
        print(f"wrote {outdir / (name + '.json')}")


if __name__ == "__main__":
    main(sys.argv[1])
