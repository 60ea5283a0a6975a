"""Renders charts/fleet-status-exporter for the chart tests and selects the bundled files.

Owns: building the Go renderer in ``tests/chart/render`` once per test process, running it with
values overrides, parsing its multi-document output, and the rule that decides which files of
``alerts/`` and ``dashboards/`` the chart embeds (the same rule as ``sync-files.sh``).
Does not own: any assertion about the rendered manifests (the ``tests/test_chart*.py`` modules).
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "fleet-status-exporter"
RENDER_SRC = Path(__file__).resolve().parent / "render"
GOPATH = "/usr/share/gocode"
# The alert files use this prefix in runbook_url; prometheusRule.runbookUrlBase replaces it.
DEFAULT_RUNBOOK_BASE = "https://github.com/fleet-status-exporter/fleet-status-exporter/blob/main/docs/runbook.md"

Manifest = dict[str, Any]


class RenderError(Exception):
    """The renderer exited non-zero (a template error, a `required` or `fail` call)."""


@functools.cache
def renderer() -> Path:
    """Builds the renderer once per process (go build takes seconds, a render milliseconds)."""
    if shutil.which("go") is None:
        pytest.skip("the Go toolchain is not installed (Debian package golang-go; `make system-deps`)")
    out_dir = Path(tempfile.mkdtemp(prefix="chart-render-"))
    atexit.register(shutil.rmtree, out_dir, True)
    binary = out_dir / "render"
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": GOPATH, "GOFLAGS": ""}
    if not os.access(Path.home(), os.W_OK):
        env["GOCACHE"] = str(out_dir / "gocache")
    result = subprocess.run(
        ["go", "build", "-o", str(binary), "."], cwd=RENDER_SRC, env=env, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise RuntimeError(f"building the chart renderer failed:\n{result.stderr}")
    return binary


def render_text(
    values: Mapping[str, Any] | None = None,
    values_files: Iterable[Path] = (),
    *,
    chart: Path = CHART,
    release: str = "fse",
    namespace: str = "monitoring",
    notes: bool = False,
    tmp_dir: Path | None = None,
) -> str:
    """Renders the chart like `helm template`; later values win, `values` last."""
    args = [str(renderer()), "-chart", str(chart), "-name", release, "-namespace", namespace]
    for path in values_files:
        args += ["-f", str(path)]
    with tempfile.TemporaryDirectory(dir=tmp_dir) as scratch:
        if values is not None:
            override = Path(scratch) / "override.yaml"
            override.write_text(yaml.safe_dump(dict(values)))
            args += ["-f", str(override)]
        if notes:
            args.append("-notes")
        result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        raise RenderError(result.stderr.strip())
    return result.stdout


def render(
    values: Mapping[str, Any] | None = None, values_files: Iterable[Path] = (), **kwargs: Any
) -> list[Manifest]:
    """Renders the chart and returns its non-empty YAML documents."""
    text = render_text(values, values_files, **kwargs)
    return [doc for doc in yaml.safe_load_all(text) if doc]


def by_kind(manifests: Iterable[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if m.get("kind") == kind]


def one(manifests: Iterable[Manifest], kind: str) -> Manifest:
    found = by_kind(manifests, kind)
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def workload(manifests: Iterable[Manifest]) -> Manifest:
    """The Deployment or the StatefulSet, whichever the values selected."""
    found = [m for m in manifests if m.get("kind") in ("Deployment", "StatefulSet")]
    assert len(found) == 1, f"expected one workload, got {[m['kind'] for m in found]}"
    return found[0]


def container(manifests: Iterable[Manifest]) -> dict[str, Any]:
    containers = workload(manifests)["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def ci_values_files() -> list[Path]:
    return sorted((CHART / "ci").glob("*-values.yaml"))


def rule_file_sources(repo: Path = REPO) -> list[Path]:
    """Top-level alerts/*.yaml|*.yml that are Prometheus rule files (a `groups:` key)."""
    found = []
    for path in sorted([*repo.glob("alerts/*.yaml"), *repo.glob("alerts/*.yml")]):
        doc = yaml.safe_load(path.read_text())
        if isinstance(doc, dict) and "groups" in doc:
            found.append(path)
    return found


def dashboard_sources(repo: Path = REPO) -> list[Path]:
    return sorted(repo.glob("dashboards/*.json"))


def chart_copies(kind: str, chart: Path = CHART) -> list[Path]:
    """The chart's copies under files/<kind>/ (alerts or dashboards)."""
    directory = chart / "files" / kind
    return sorted(p for p in directory.glob("*") if p.is_file()) if directory.is_dir() else []


def chart_copy(
    dest: Path, alerts: Mapping[str, str] | None = None, dashboards: Mapping[str, str] | None = None
) -> Path:
    """A copy of the chart whose files/ holds exactly the given rule files and dashboards."""
    chart = dest / CHART.name
    shutil.copytree(CHART, chart, ignore=shutil.ignore_patterns("files"))
    for kind, files in (("alerts", alerts), ("dashboards", dashboards)):
        (chart / "files" / kind).mkdir(parents=True)
        for name, text in (files or {}).items():
            (chart / "files" / kind / name).write_text(text)
    return chart
