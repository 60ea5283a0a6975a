"""Suite-wide setup: which build of the exporter the tests run against.

The suite runs twice (``make pytest``): against the compiled build (the mypyc extensions that
ship, see setup.py) and against the Python sources (FLEET_STATUS_EXPORTER_PURE_PYTHON=1). Tests
marked ``pure_python`` reach inside modules in ways compiled code does not allow (replacing a
module's constant or function, handing in test doubles of the wrong type), so they run only in
the second pass. A compiled module older than its source would test stale code: the session
stops and says how to rebuild.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from exporter import PURE_PYTHON_ENV, implementation

COMPILED = implementation() == "compiled"
ROOT = Path(__file__).resolve().parent.parent


def stale_extensions() -> list[str]:
    """Compiled modules whose source changed after they were built."""
    stale = []
    for ext in (ROOT / "exporter").rglob("*.so"):
        source = ext.with_name(ext.name.split(".", 1)[0] + ".py")
        if source.exists() and source.stat().st_mtime > ext.stat().st_mtime:
            stale.append(str(source.relative_to(ROOT)))
    return sorted(stale)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--capi", action="store_true",
                     help="also run the tests against the live Cluster API controllers (marker capi; "
                          "`make test-capi` builds the managers and runs them)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "pure_python: reaches inside modules (patched constants, test doubles); runs against the "
        f"Python sources only ({PURE_PYTHON_ENV}=1)",
    )
    config.addinivalue_line(
        "markers",
        "realcluster: runs against a real kube-apiserver and etcd (tests/realcluster); runs once, "
        f"in the pass without {PURE_PYTHON_ENV}=1 (the compiled build in `make pytest`)",
    )
    config.addinivalue_line(
        "markers",
        "capi: runs the Cluster API managers (tests/realcluster/controllers.py) on a real API server; "
        "skipped unless pytest runs with --capi (`make test-capi`)",
    )
    if COMPILED:
        stale = stale_extensions()
        if stale:
            pytest.exit(
                f"compiled modules are older than their sources ({', '.join(stale[:5])}"
                f"{', ...' if len(stale) > 5 else ''}): rebuild them with `make build`, or run "
                f"the sources with {PURE_PYTHON_ENV}=1",
                returncode=4,
            )


def pytest_report_header() -> str:
    return f"fleet-status-exporter build under test: {implementation()}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--capi"):
        capi = pytest.mark.skip(reason="runs the Cluster API managers: `make test-capi` (pytest --capi)")
        for item in items:
            if item.get_closest_marker("capi") is not None:
                item.add_marker(capi)
    if os.environ.get(PURE_PYTHON_ENV) == "1":
        once = pytest.mark.skip(reason=f"real-cluster tests run once, in the pass without {PURE_PYTHON_ENV}")
        for item in items:
            if item.get_closest_marker("realcluster") is not None:
                item.add_marker(once)
    if not COMPILED:
        return
    skip = pytest.mark.skip(reason=f"reaches inside modules: runs with {PURE_PYTHON_ENV}=1")
    for item in items:
        if item.get_closest_marker("pure_python") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _root_logger_restored() -> Iterator[None]:
    """Put back the root logger a test's ``serve`` or ``evaluate`` configured (``logging_setup.setup``).

    Left in place, its handler writes to the test's captured stderr, closed once the test ends:
    every later record then prints "--- Logging error ---" in the middle of the run's output.
    """
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.captureWarnings(False)
