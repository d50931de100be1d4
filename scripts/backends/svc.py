#!/usr/bin/env python3
"""Small stdlib-only helpers for scripts/*-backend.sh (no third-party imports);
free ports and port checks are scripts/lib.sh's.

  svc.py wait-ready URL TIMEOUT_S PID
      poll URL until it answers HTTP 200; exit 0 when it does, 1 on timeout,
      2 as soon as process PID is gone
  svc.py probe URL
      exit 0 if URL answers HTTP 200 within 2 s, 1 otherwise
"""
import os
import sys
import time
import urllib.error
import urllib.request


def answers_200(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still "exists": look at /proc where available.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def wait_ready(url: str, timeout: float, pid: int) -> int:
    deadline = time.monotonic() + timeout
    while True:
        if not alive(pid):
            return 2
        if answers_200(url):
            return 0
        if time.monotonic() >= deadline:
            return 1
        time.sleep(0.2)


def main(argv) -> int:
    if len(argv) == 5 and argv[1] == "wait-ready":
        return wait_ready(argv[2], float(argv[3]), int(argv[4]))
    if len(argv) == 3 and argv[1] == "probe":
        return 0 if answers_200(argv[2]) else 1
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv))
