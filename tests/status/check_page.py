"""The status page in a real browser: headless Chromium (Debian's
`chromium`) loads `http://ADMIN/` from a gateway in front of two demo
replicas, its script fills the page from `/status`, and the DOM it leaves
is read back (`--dump-dom`): both replicas ready; then one replica is
killed, and the page must show that one ejected and the other ready. A
screenshot of the page (after the kill) is saved as
target/status-page.png (TENSORGATE_SCREENSHOT overrides the path).

Usage: python3 tests/status/check_page.py   (TENSORGATE_BIN, default
target/release/tensorgate; CHROMIUM, default chromium). Every server
listens on 127.0.0.1; processes are stopped at the end. Prints one line per
check and `N passed, N failed`.
"""
import html.parser
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("TENSORGATE_BIN", os.path.join(ROOT, "target/release/tensorgate"))
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
SHOT = os.environ.get("TENSORGATE_SCREENSHOT", os.path.join(ROOT, "target/status-page.png"))
results = {"passed": 0, "failed": 0}


def check(name, fn):
    try:
        fn()
        results["passed"] += 1
        print(f"ok   {name}", flush=True)
    except Exception as e:  # every check runs; each failure is reported
        results["failed"] += 1
        print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                return r.read()
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"no answer from {url}")


class Rows(html.parser.HTMLParser):
    """The replica rows of the page: (backend, url, state attribute, the
    text of the state cell)."""

    def __init__(self):
        super().__init__()
        self.rows, self.routes = [], []
        self._row, self._cell, self._text = None, None, ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and a.get("class") == "replica":
            self._row = {"backend": a.get("data-backend"), "url": a.get("data-url"), "state": a.get("data-state")}
        elif tag == "tr" and a.get("class") == "route":
            self.routes.append(a.get("data-name"))
        elif tag == "td" and self._row is not None and "state" in (a.get("class") or "").split():
            self._cell, self._text = "state", ""

    def handle_data(self, data):
        if self._cell:
            self._text += data

    def handle_endtag(self, tag):
        if tag == "td" and self._cell:
            self._row["shown"] = self._text.strip()
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None


def chromium(profile, *args):
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--virtual-time-budget=5000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def page_rows(admin, profile):
    out = chromium(profile, "--dump-dom", f"http://127.0.0.1:{admin}/")
    if out.returncode != 0:
        raise RuntimeError(f"chromium exited {out.returncode}: {out.stderr[-2000:]}")
    p = Rows()
    p.feed(out.stdout)
    return p


def infer(data_port, n):
    body = json.dumps({"inputs": [
        {"name": "INPUT0", "datatype": "INT32", "shape": [1, 16], "data": list(range(16))},
        {"name": "INPUT1", "datatype": "INT32", "shape": [1, 16], "data": [1] * 16}]}).encode()
    codes = []
    for _ in range(n):
        req = urllib.request.Request(f"http://127.0.0.1:{data_port}/v2/models/simple/infer", data=body,
                                     headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                r.read()
                codes.append(r.status)
        except urllib.error.HTTPError as e:
            codes.append(e.code)
    return codes


def main():
    if not CHROMIUM:
        print("FAIL no chromium (scripts/setup.sh installs Debian's package)")
        return 1
    work = tempfile.mkdtemp(prefix="tensorgate-status-")
    procs = []

    def start(name, *args):
        log = open(os.path.join(work, name + ".log"), "w")
        p = subprocess.Popen([BIN, *args], stdout=log, stderr=subprocess.STDOUT)
        procs.append(p)
        return p

    r1, r2, data, admin = free_port(), free_port(), free_port(), free_port()
    a = start("replica-a", "demo-backend", "--listen", f"127.0.0.1:{r1}")
    b = start("replica-b", "demo-backend", "--listen", f"127.0.0.1:{r2}")
    url_a, url_b = f"http://127.0.0.1:{r1}", f"http://127.0.0.1:{r2}"
    config = os.path.join(work, "pair.toml")
    with open(config, "w") as f:
        f.write(f"""
[server]
listen = "127.0.0.1:{data}"
admin_listen = "127.0.0.1:{admin}"

[backends.pair]
urls = ["{url_a}", "{url_b}"]
health_interval = "1s"
health_timeout = "500ms"
unhealthy_threshold = 1

[[routes]]
name = "simple"
models = ["simple"]
backend = "pair"
""")
    try:
        wait_http(url_a + "/v2/health/ready")
        wait_http(url_b + "/v2/health/ready")
        start("gateway", "serve", "--config", config)
        wait_http(f"http://127.0.0.1:{admin}/healthz")
        run(data, admin, url_a, url_b, b, work)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


def run(data, admin, url_a, url_b, b, work):
    profile = os.path.join(work, "chromium")

    def page_is_embedded():
        with urllib.request.urlopen(f"http://127.0.0.1:{admin}/", timeout=5) as r:
            text = r.read().decode()
            kind = r.headers["Content-Type"]
        if not kind.startswith("text/html"):
            raise AssertionError(f"Content-Type {kind}")
        for external in ("src=\"http", "href=\"http", "src='http", "@import", "//cdn"):
            if external in text:
                raise AssertionError(f"external asset: {external}")

    check("GET / on the admin port is the page, with no external assets", page_is_embedded)

    def both_ready():
        codes = infer(data, 20)
        if set(codes) != {200}:
            raise AssertionError(f"infer statuses {codes}")
        p = page_rows(admin, profile)
        if p.routes != ["simple"]:
            raise AssertionError(f"routes shown: {p.routes}")
        got = sorted((r["url"], r["state"], r.get("shown")) for r in p.rows)
        want = sorted([(url_a, "ready", "ready"), (url_b, "ready", "ready")])
        if got != want:
            raise AssertionError(f"replicas shown: {got}")

    check("the page, filled by its script in Chromium, shows both replicas ready", both_ready)

    def killed_is_ejected():
        b.send_signal(signal.SIGKILL)
        b.wait(10)
        deadline = time.time() + 30
        while True:
            infer(data, 5)  # requests to the dead one fail over and count against it
            p = page_rows(admin, profile)
            states = {r["url"]: (r["state"], r.get("shown")) for r in p.rows}
            if states.get(url_b) == ("ejected", "ejected") and states.get(url_a) == ("ready", "ready"):
                break
            if time.time() > deadline:
                raise AssertionError(f"replicas shown: {states}")
            time.sleep(1)
        os.makedirs(os.path.dirname(SHOT), exist_ok=True)
        shot = chromium(profile, f"--screenshot={SHOT}", "--window-size=1280,720", "--hide-scrollbars",
                        f"http://127.0.0.1:{admin}/")
        if shot.returncode != 0 or not os.path.getsize(SHOT):
            raise AssertionError(f"no screenshot: {shot.stderr[-2000:]}")
        print(f"     screenshot: {SHOT}")

    check("replica killed: the page shows it ejected, the other ready (screenshot saved)", killed_is_ejected)


if __name__ == "__main__":
    sys.exit(main())
