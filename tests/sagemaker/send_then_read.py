"""Clients that send their whole request before reading a byte of the reply,
as Python's http.client and boto3 do, against the demo gateway (``tensorgate``
with no arguments; model ``rowsum``, whose JSON Lines reply echoes every
record's features next to its score, so the reply outgrows the request):

- a CSV of more than 16 MB (500,000 records of 8 features) and
- a CSV of 1,000,000 records (3 features),

each posted to ``/invocations`` with http.client and to the Runtime API path
with boto3's ``invoke_endpoint``, both with ``Accept: application/jsonlines``.
Every record's score must come back, in order, within the time limit (a
gateway that stopped reading while the client sends would never answer).
Each case runs on a fresh gateway; its peak RSS (``VmHWM``) is printed.

    TENSORGATE_BIN=target/release/tensorgate \\
        scripts/sagemaker/client.sh python tests/sagemaker/send_then_read.py
"""

import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import boto3
import botocore.config

LIMIT = 300  # seconds a case may take


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gateway():
    port, admin = free_port(), free_port()
    log = tempfile.TemporaryFile()
    cmd = [os.environ["TENSORGATE_BIN"], "--listen", f"127.0.0.1:{port}", "--admin-listen", f"127.0.0.1:{admin}"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=log)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"gateway did not start: {cmd}")


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def csv_of(rows, features):
    """Row i holds i, then 0.5 repeated: its sum is i + 0.5 * (features - 1)."""
    tail = ",0.5" * (features - 1)
    return "".join(f"{i}{tail}\n" for i in range(rows)).encode()


def check_lines(text, rows, features, where):
    lines = text.splitlines()
    assert len(lines) == rows, f"{where}: {len(lines)} lines for {rows} records"
    extra = 0.5 * (features - 1)
    for i in (0, 1, rows // 2, rows - 1):
        got = json.loads(lines[i])["score"]
        assert abs(got - (i + extra)) <= 1e-6 * max(1.0, i), f"{where}: record {i} scored {got}"


def with_http_client(port, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=LIMIT)
    # Sends the head and the whole body, then reads: the pattern of the issue.
    conn.request("POST", "/invocations", body=body, headers={"Content-Type": "text/csv", "Accept": "application/jsonlines"})
    resp = conn.getresponse()
    data = resp.read()
    assert resp.status == 200, f"http.client: {resp.status} {data[:300]!r}"
    conn.close()
    return data.decode()


def with_boto3(port, body):
    rt = boto3.client(
        "sagemaker-runtime",
        endpoint_url=f"http://127.0.0.1:{port}",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="y",
        config=botocore.config.Config(read_timeout=LIMIT, retries={"max_attempts": 1}),
    )
    resp = rt.invoke_endpoint(EndpointName="rowsum", Body=body, ContentType="text/csv", Accept="application/jsonlines")
    return resp["Body"].read().decode()


def main():
    cases = [("16 MB CSV", 500_000, 8), ("1M-row CSV", 1_000_000, 3)]
    clients = [("http.client", with_http_client), ("boto3", with_boto3)]
    failed = False
    for name, rows, features in cases:
        body = csv_of(rows, features)
        for client, call in clients:
            proc, port = start_gateway()
            try:
                base = status_kib(proc.pid, "VmRSS")
                started = time.time()
                text = call(port, body)
                took = time.time() - started
                check_lines(text, rows, features, f"{client} {name}")
                peak = status_kib(proc.pid, "VmHWM")
                print(
                    f"ok {client:11} {name:11}: {len(body) / 1e6:.1f} MB sent, {len(text) / 1e6:.1f} MB of JSON Lines "
                    f"back in {took:.1f} s; gateway RSS {base / 1024:.1f} MB at start, peak {peak / 1024:.1f} MB"
                )
            except Exception as e:  # noqa: BLE001
                print(f"FAIL {client} {name}: {e!r}")
                failed = True
            finally:
                proc.kill()
                proc.wait()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
