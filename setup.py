"""Build of fleet-status-exporter: the per-event modules compiled to C extensions with mypyc.

Everything else about the package is declared in pyproject.toml; this file only adds the
extension modules. The engine (projection and condition rules) and the metrics (rendering and
the exposition buckets) run for every watch event; compiled, they cost ~30 % less CPU per event
(docs/performance.md), with the same source and the same results. The compiled modules are the
ones the strict mypy check already covers; mypyc enforces their type annotations at run time.

Set FLEET_STATUS_EXPORTER_PURE_PYTHON=1 to build without compiling (a platform without a C
compiler): the package is then plain Python and behaves the same, only slower.
"""

from __future__ import annotations

import os
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).parent

# Run as entry points with ``python -m`` (the compression worker, the docs generator), which an
# extension module cannot be, or once per round of rebuilds (the publisher, which hands batches to
# a thread); none is on the per-event path.
NOT_COMPILED = {"exporter/metrics/members.py", "exporter/metrics/docs.py", "exporter/metrics/__init__.py",
                "exporter/metrics/publisher.py"}
COMPILED_PACKAGES = ("exporter/engine", "exporter/metrics")


def compiled_modules() -> list[str]:
    found = (p.relative_to(ROOT).as_posix() for pkg in COMPILED_PACKAGES for p in (ROOT / pkg).glob("*.py"))
    return sorted(p for p in found if p not in NOT_COMPILED)


def extensions() -> list[object]:
    if os.environ.get("FLEET_STATUS_EXPORTER_PURE_PYTHON") == "1":
        return []
    from mypyc.build import mypycify

    # The build environment has only the build requirements: the runtime dependencies the
    # compiled modules reach through their imports (isal) are typed as Any there.
    return list(mypycify(["--ignore-missing-imports", *compiled_modules()], opt_level="3"))


setup(ext_modules=extensions())
