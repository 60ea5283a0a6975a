"""The Makefile's install order: whatever targets run together, the compiled install comes last.

The development tools are installed with the package as Python sources (``deps``); the compiled
build (``build``) installs it again with its extensions, whose shared module sits at the checkout's
root and is found only through the compiled install's mapping. A sources install after it leaves
the extensions in place without that mapping, and the ``fleet-status-exporter`` command then fails
to import them.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def installs(*targets: str) -> list[str]:
    """The ``pip install`` lines of the package that ``make`` would run, in order, all out of date."""
    done = subprocess.run(
        ["make", "--dry-run", "--always-make", "--no-print-directory", *targets],
        cwd=ROOT, check=True, capture_output=True, text=True,
    )
    return [line for line in done.stdout.splitlines() if "pip install" in line and "-e " in line]


@pytest.mark.parametrize(
    "targets",
    [("run",), ("build", "tools"), ("build", "deps"), ("build", "ksm-tool"), ("pytest",), ("bench",)],
    ids=" ".join,
)
def test_the_compiled_install_comes_after_the_sources_install(targets: tuple[str, ...]) -> None:
    lines = installs(*targets)
    assert lines, f"make {' '.join(targets)} installs nothing"
    assert "FLEET_STATUS_EXPORTER_PURE_PYTHON=1" not in lines[-1], lines
