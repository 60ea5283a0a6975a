"""Where the build's revision, branch and date come from: the image's environment, else git, else unknown."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from exporter import buildinfo
from exporter.buildinfo import BRANCH_ENV, BUILD_DATE_ENV, REVISION_ENV, UNKNOWN


def test_the_image_environment_wins():
    info = buildinfo.read({REVISION_ENV: "0123abc", BRANCH_ENV: "release-1.0", BUILD_DATE_ENV: "2026-11-25"})
    assert (info.revision, info.branch, info.build_date) == ("0123abc", "release-1.0", "2026-11-25")
    assert info.version == buildinfo.__version__
    assert info.implementation in ("compiled", "pure Python")


def test_without_environment_or_git_everything_is_unknown(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setattr(buildinfo, "_CHECKOUT", tmp_path)  # no .git there
    info = buildinfo.read({})
    assert (info.revision, info.branch, info.build_date) == (UNKNOWN, UNKNOWN, UNKNOWN)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_source_checkout_reads_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    repo = tmp_path / "checkout"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "release-2"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    done = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True)
    head = done.stdout.strip()
    monkeypatch.setattr(buildinfo, "_CHECKOUT", repo)
    info = buildinfo.read({})
    assert (info.revision, info.branch, info.build_date) == (head, "release-2", UNKNOWN)
    assert buildinfo.read({REVISION_ENV: "fromimage"}).revision == "fromimage"


def test_version_text_is_prometheus_shaped():
    info = buildinfo.BuildInfo("0.1.0", "abc", "main", "2026-11-25", "3.11.7", "compiled")
    first, *rest = info.text().splitlines()
    assert first == "fleet-status-exporter, version 0.1.0 (branch: main, revision: abc)"
    assert rest[:3] == ["  build date:       2026-11-25", "  python version:   3.11.7",
                        "  build:            compiled"]
