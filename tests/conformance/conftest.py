"""Fixtures for the Python conformance suites (pytest, in the Triton venv).

- ``triton_url`` / ``kserve_url``: the real backends, from
  ``TENSORGATE_TRITON_URL`` / ``TENSORGATE_KSERVE_URL`` (``scripts/conformance.sh``
  starts them). Missing: the tests skip loudly, or fail when ``CI`` is set
  (unless ``TENSORGATE_CONFORMANCE_SKIP=1``).
- ``gateway``: one tensorgate process for the session (``tg_gateway.Gateway``),
  stopped by PID at teardown.

Every test's outcome is appended to ``$TENSORGATE_CONFORMANCE_RESULTS`` (JSON
lines: suite, area, row, col, ok) for ``scripts/conformance_report.py``:
the area is the module's ``AREAS[test function]``, the row the first
parameter, the column the others.
"""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tg_gateway import Gateway  # noqa: E402


def _backend(var, script):
    url = os.environ.get(var, "").rstrip("/")
    if url:
        return url
    if os.environ.get("CI") and os.environ.get("TENSORGATE_CONFORMANCE_SKIP") != "1":
        pytest.fail(
            f"{var} is not set and CI is: run `bash scripts/conformance.sh`", pytrace=False
        )
    if os.environ.get("TENSORGATE_SKIP_LOG"):
        with open(os.environ["TENSORGATE_SKIP_LOG"], "a") as log:
            log.write(f"tests/conformance ({var} fixture): {var} is not set" + "\n")
    pytest.skip(f"SKIPPED: {var} is not set; run `eval \"$({script} start)\"` first")


@pytest.fixture(scope="session")
def triton_url():
    return _backend("TENSORGATE_TRITON_URL", "scripts/triton-backend.sh")


@pytest.fixture(scope="session")
def kserve_url():
    return _backend("TENSORGATE_KSERVE_URL", "scripts/kserve-backend.sh")


@pytest.fixture(scope="session")
def gateway():
    triton = os.environ.get("TENSORGATE_TRITON_URL") or None
    kserve = os.environ.get("TENSORGATE_KSERVE_URL") or None
    if not triton and not kserve:
        _backend("TENSORGATE_TRITON_URL", "scripts/triton-backend.sh")
    log_dir = os.environ.get("TENSORGATE_CONFORMANCE_DIR")
    gw = Gateway(triton_url=triton, kserve_url=kserve, log_dir=log_dir).start()
    yield gw
    gw.stop()


def _case(item):
    module = item.module
    areas = getattr(module, "AREAS", {})
    area = areas.get(item.originalname, item.originalname)
    suite = getattr(module, "SUITE", "python")
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return suite, area, item.originalname, "-"
    values = list(callspec.params.values())
    ids = [str(v) for v in values]
    return suite, area, ids[0], " ".join(ids[1:]) or "-"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    path = os.environ.get("TENSORGATE_CONFORMANCE_RESULTS")
    if not path:
        return
    if rep.when != "call" and not (rep.when == "setup" and not rep.passed):
        return
    suite, area, row, col = _case(item)
    detail = ""
    if rep.failed:
        detail = str(rep.longrepr)[-800:]
    elif rep.skipped:
        detail = str(rep.longrepr[-1]) if isinstance(rep.longrepr, tuple) else "skipped"
    line = {
        "suite": suite,
        "area": area,
        "row": row,
        "col": col,
        "ok": None if rep.skipped else rep.passed,
        "detail": detail,
    }
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(line, ensure_ascii=False) + "\n")
