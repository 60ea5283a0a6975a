"""What this build is: version, revision, branch, build date, Python, compiled or pure.

Owns ``BuildInfo`` and where its values come from. The container image sets them at build time:
the Dockerfile's build arguments become the environment variables ``REVISION_ENV``,
``BRANCH_ENV`` and ``BUILD_DATE_ENV``. Run from a source checkout without them, the revision
and branch are read from git when it is there, else they, like the build date, are "unknown".
The version is the package's. Serves ``--version`` (as Prometheus' ``version.Print`` prints
it), ``fleet_status_exporter_build_info`` and the landing page. Owns no flag and no rendering.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from exporter import __version__, implementation

REVISION_ENV: Final = "FLEET_STATUS_EXPORTER_REVISION"
BRANCH_ENV: Final = "FLEET_STATUS_EXPORTER_BRANCH"
BUILD_DATE_ENV: Final = "FLEET_STATUS_EXPORTER_BUILD_DATE"
UNKNOWN: Final = "unknown"
NAME: Final = "fleet-status-exporter"
_CHECKOUT: Final = Path(__file__).resolve().parent.parent  # the directory holding exporter/


@dataclass(frozen=True, slots=True)
class BuildInfo:
    version: str
    revision: str
    branch: str
    build_date: str
    python_version: str
    implementation: str  # "compiled" (mypyc extensions) or "pure Python"

    def text(self) -> str:
        """The ``--version`` output."""
        return (
            f"{NAME}, version {self.version} (branch: {self.branch}, revision: {self.revision})\n"
            f"  build date:       {self.build_date}\n"
            f"  python version:   {self.python_version}\n"
            f"  build:            {self.implementation}\n"
            f"  platform:         {platform.system().lower()}/{platform.machine()}\n"
        )


def _git(*args: str) -> str | None:
    if not (_CHECKOUT / ".git").exists():  # a directory, or a file in a worktree
        return None
    try:
        done = subprocess.run(["git", "-C", str(_CHECKOUT), *args], capture_output=True, text=True,
                              timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out and out.isprintable() else None


def read(env: Mapping[str, str]) -> BuildInfo:
    """The build as ``env`` and, where it says nothing, git describe it."""
    revision = env.get(REVISION_ENV) or _git("rev-parse", "HEAD") or UNKNOWN
    branch = env.get(BRANCH_ENV) or _git("rev-parse", "--abbrev-ref", "HEAD") or UNKNOWN
    return BuildInfo(
        version=__version__,
        revision=revision,
        branch=branch,
        build_date=env.get(BUILD_DATE_ENV) or UNKNOWN,
        python_version=platform.python_version(),
        implementation=implementation(),
    )


@functools.cache
def current() -> BuildInfo:
    """This process's build (read once)."""
    return read(os.environ)
