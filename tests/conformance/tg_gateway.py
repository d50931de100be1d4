"""A tensorgate process for the Python conformance suites.

Starts the built binary (``$TENSORGATE_BIN``, else the newer of
``target/release/tensorgate`` and ``target/debug/tensorgate``) with a
generated configuration whose data and admin ports are free ports on
127.0.0.1, waits until ``/readyz`` answers 200, and stops it by PID (TERM,
then KILL). Routes send the binary tensor format: the default route to
Triton (``$TENSORGATE_TRITON_URL``), and a ``kserve`` route for the KServe
test models (``$TENSORGATE_KSERVE_URL``), each when its URL is set.

Plain Python (no pytest), so the kserve-client script in the KServe venv
can use it too.
"""
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KSERVE_MODELS = ["kserve_simple", "kserve_identity"]


def find_binary():
    explicit = os.environ.get("TENSORGATE_BIN")
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise RuntimeError(f"TENSORGATE_BIN={explicit} is not an executable")
        return explicit
    built = [REPO / "target" / p / "tensorgate" for p in ("release", "debug")]
    built = [p for p in built if p.is_file()]
    if not built:
        raise RuntimeError(
            "no tensorgate binary: run `cargo build --release` or set TENSORGATE_BIN"
        )
    return str(max(built, key=lambda p: p.stat().st_mtime))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def hostport(url):
    """``http://127.0.0.1:8000/`` -> ``127.0.0.1:8000`` (what tritonclient wants)."""
    return url.split("://", 1)[-1].rstrip("/")


def config_text(port, admin_port, triton_url=None, kserve_url=None):
    lines = [
        "[server]",
        f'listen = "127.0.0.1:{port}"',
        f'admin_listen = "127.0.0.1:{admin_port}"',
        'shutdown_grace = "2s"',
    ]
    if triton_url:
        lines += ["[backends.triton]", f'url = "{triton_url}"', 'request_timeout = "30s"']
    if kserve_url:
        lines += ["[backends.kserve]", f'url = "{kserve_url}"', 'request_timeout = "30s"']
        models = ", ".join(f'"{m}"' for m in KSERVE_MODELS)
        lines += [
            "[[routes]]",
            'name = "kserve"',
            f"models = [{models}]",
            'backend = "kserve"',
            'backend_format = "binary"',
        ]
    if triton_url:
        lines += [
            "[[routes]]",
            'name = "triton"',
            "default = true",
            'backend = "triton"',
            'backend_format = "binary"',
            # The repository index is compared with Triton's; it needs
            # allow_control like load and unload.
            'allow_control = ["repository"]',
        ]
    return "\n".join(lines) + "\n"


class Gateway:
    """One tensorgate process; use as a context manager or call start/stop."""

    def __init__(self, triton_url=None, kserve_url=None, log_dir=None):
        self.port = free_port()
        self.admin_port = free_port()
        self.dir = Path(log_dir or tempfile.mkdtemp(prefix="tensorgate-conformance-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config = self.dir / f"tensorgate-{self.port}.toml"
        self.config.write_text(config_text(self.port, self.admin_port, triton_url, kserve_url))
        self.log = self.dir / f"tensorgate-{self.port}.log"
        self.proc = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def hostport(self):
        return f"127.0.0.1:{self.port}"

    def start(self, timeout=20.0):
        binary = find_binary()
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [binary, "--config", str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        ready = f"http://127.0.0.1:{self.admin_port}/readyz"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"tensorgate exited with {self.proc.returncode}:\n{self.log.read_text()}"
                )
            try:
                with urllib.request.urlopen(ready, timeout=1) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"tensorgate not ready after {timeout}s:\n{self.log.read_text()}")

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
