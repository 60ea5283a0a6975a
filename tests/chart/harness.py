"""Renders and lints charts/fleet-status-exporter with the real Helm for the chart tests.

Owns: running the pinned Helm (``tests.realcluster.build.binary("helm")``, built from
tests/realcluster/helm/go.mod) as ``helm template`` and ``helm lint`` with values overrides in an
environment of its own (no user Helm configuration, no kubeconfig), parsing the multi-document
output, rendering NOTES.txt without a cluster (see ``render_text``), and the rule that decides
which files of ``alerts/`` and ``dashboards/`` the chart embeds (the same rule as
``sync-files.sh``: rule files, ``alerts/alertmanager.yaml`` and dashboards).
Does not own: building Helm (``tests.realcluster.build``; a missing binary raises its ``Missing``
with the command that builds it, so the chart tests fail rather than skip), or any assertion
about the rendered manifests (the ``tests/test_chart*.py`` modules).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from tests.realcluster import build

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "fleet-status-exporter"
# The alert files use this prefix in runbook_url; prometheusRule.runbookUrlBase replaces it.
DEFAULT_RUNBOOK_BASE = "https://github.com/fleet-status-exporter/fleet-status-exporter/blob/main/docs/runbook.md"
# .Capabilities.KubeVersion for every render and lint. Helm built with `go build` (no release
# ldflags) defaults to v1.20.0, which the chart's kubeVersion (>=1.25.0-0) refuses; the tests
# validate the manifests against the schemas of this version too.
KUBE_VERSION = "1.31.0"
# NOTES.txt is rendered as this template of a chart copy (see render_text).
NOTES_TEMPLATE = "templates/NOTES.txt.yaml"
NOTES_DEFINE = "fleet-status-exporter-tests.notes"

Manifest = dict[str, Any]


class RenderError(Exception):
    """Helm exited non-zero: a template error, a `required` or `fail` call, a schema violation.

    The message is Helm's standard error output.
    """


class LintError(RenderError):
    """`helm lint` reported the chart as failed; the message is its whole output."""


@functools.cache
def helm() -> Path:
    """The pinned Helm binary; raises build.Missing (with the build command) when it is not built."""
    return build.binary("helm")


@functools.cache
def helm_env() -> dict[str, str]:
    """The environment Helm runs in: no HELM_* settings or kubeconfig of the user, scratch homes."""
    home = Path(tempfile.mkdtemp(prefix="chart-helm-"))
    atexit.register(shutil.rmtree, home, True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HELM_") and k != "KUBECONFIG"}
    env.update(
        HELM_CACHE_HOME=str(home / "cache"),
        HELM_CONFIG_HOME=str(home / "config"),
        HELM_DATA_HOME=str(home / "data"),
        # No cluster: `helm template` does not contact one; a path that does not exist makes sure.
        KUBECONFIG=str(home / "no-kubeconfig"),
    )
    return env


def run_helm(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(helm()), *args], capture_output=True, text=True, env=helm_env())


def _values_args(values: Mapping[str, Any] | None, values_files: Iterable[Path], scratch: Path) -> list[str]:
    args: list[str] = []
    for path in values_files:
        args += ["--values", str(path)]
    if values is not None:
        # JSON (a subset of YAML) quotes every string: Helm reads values as YAML 1.1, where a plain
        # `y`, `n`, `on` or `off` is a boolean, and PyYAML would write `y` unquoted.
        override = scratch / "override.json"
        override.write_text(json.dumps(dict(values)))
        args += ["--values", str(override)]
    return args


def _notes_chart(chart: Path, scratch: Path) -> tuple[Path, int] | None:
    """A copy of the chart whose NOTES.txt is a manifest template, and the line of its `include`.

    None when the chart has no NOTES.txt. The copy defines the text of NOTES.txt as a named
    template starting on the file's first line (so parse errors keep NOTES.txt's line numbers)
    and renders it into one YAML document with `include`.
    """
    notes = chart / "templates" / "NOTES.txt"
    if not notes.is_file():
        return None
    copy = scratch / chart.name
    shutil.copytree(chart, copy)
    (copy / "templates" / "NOTES.txt").unlink()
    wrapper = f'{{{{- define "{NOTES_DEFINE}" }}}}{notes.read_text()}{{{{ end -}}}}\n'
    include_line = wrapper.count("\n") + 1
    wrapper += f'notes: {{{{ include "{NOTES_DEFINE}" . | toJson }}}}\n'
    (copy / NOTES_TEMPLATE).write_text(wrapper)
    return copy, include_line


def _notes_error(message: str, include_line: int) -> str:
    """Helm's error with the wrapper's positions turned into NOTES.txt's.

    Helm reports an execution error (`fail`, a nil pointer) at the outermost call, here the
    wrapper's `include`: that position becomes plain NOTES.txt. Other lines are NOTES.txt's own;
    columns are dropped (the first line is shifted by the `define`).
    """

    def position(match: re.Match[str]) -> str:
        line = int(match[1])
        return "templates/NOTES.txt" if line == include_line else f"templates/NOTES.txt:{line}"

    return re.sub(rf"{re.escape(NOTES_TEMPLATE)}:(\d+)(?::\d+)?", position, message)


def render_text(
    values: Mapping[str, Any] | None = None,
    values_files: Iterable[Path] = (),
    *,
    chart: Path = CHART,
    release: str = "fse",
    namespace: str = "monitoring",
    notes: bool = False,
    kube_version: str = KUBE_VERSION,
    api_versions: Iterable[str] = (),
    tmp_dir: Path | None = None,
) -> str:
    """`helm template` output; later values files win, `values` last.

    With ``notes``, the rendered NOTES.txt instead (what `helm install` prints under NOTES:).
    Helm 3.22 prints notes only from `helm install`/`upgrade`, and even `--dry-run=client` needs a
    reachable cluster (only `helm template` runs client-only, and it drops NOTES.txt: `--show-only
    templates/NOTES.txt` finds no such template). So the notes are rendered by `helm template` from
    a copy of the chart in which NOTES.txt is wrapped into a manifest template: the same text,
    values, release and capabilities, with the rest of the chart rendered alongside as on install.
    """
    with tempfile.TemporaryDirectory(dir=tmp_dir) as scratch_dir:
        scratch = Path(scratch_dir)
        args = ["template", release, str(chart), "--namespace", namespace, "--kube-version", kube_version]
        for api in api_versions:
            args += ["--api-versions", api]
        args += _values_args(values, values_files, scratch)
        include_line = 0
        if notes:
            notes_chart = _notes_chart(chart, scratch)
            if notes_chart is None:
                return ""
            args[2] = str(notes_chart[0])
            include_line = notes_chart[1]
            args += ["--show-only", NOTES_TEMPLATE]
        result = run_helm(args)
    if result.returncode != 0:
        message = result.stderr.strip()
        raise RenderError(_notes_error(message, include_line) if notes else message)
    if not notes:
        return result.stdout
    (doc,) = [d for d in yaml.safe_load_all(result.stdout) if d]
    text = doc["notes"]
    assert isinstance(text, str)
    return text


def render(
    values: Mapping[str, Any] | None = None, values_files: Iterable[Path] = (), **kwargs: Any
) -> list[Manifest]:
    """Renders the chart and returns its non-empty YAML documents."""
    text = render_text(values, values_files, **kwargs)
    return [doc for doc in yaml.safe_load_all(text) if doc]


def lint(
    values: Mapping[str, Any] | None = None,
    values_files: Iterable[Path] = (),
    *,
    chart: Path = CHART,
    strict: bool = True,
    kube_version: str = KUBE_VERSION,
    tmp_dir: Path | None = None,
) -> str:
    """`helm lint` (``--strict`` by default: warnings fail too); returns its output, raises LintError."""
    with tempfile.TemporaryDirectory(dir=tmp_dir) as scratch_dir:
        args = ["lint", str(chart), "--kube-version", kube_version]
        if strict:
            args.append("--strict")
        args += _values_args(values, values_files, Path(scratch_dir))
        result = run_helm(args)
    output = (result.stdout + result.stderr).strip()
    if result.returncode != 0:
        raise LintError(output)
    return output


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


def alertmanager_sources(repo: Path = REPO) -> list[Path]:
    """alerts/alertmanager.yaml, the routes and inhibit rules the AlertmanagerConfig translates."""
    path = repo / "alerts" / "alertmanager.yaml"
    return [path] if path.is_file() else []


def dashboard_sources(repo: Path = REPO) -> list[Path]:
    return sorted(repo.glob("dashboards/*.json"))


def chart_copies(kind: str, chart: Path = CHART) -> list[Path]:
    """The chart's copies under files/<kind>/ (alerts, alertmanager or dashboards)."""
    directory = chart / "files" / kind
    return sorted(p for p in directory.glob("*") if p.is_file()) if directory.is_dir() else []


def chart_copy(
    dest: Path,
    alerts: Mapping[str, str] | None = None,
    dashboards: Mapping[str, str] | None = None,
    alertmanager: str | None = None,
) -> Path:
    """A copy of the chart whose files/ holds exactly the given rule files, dashboards and
    Alertmanager configuration (files/alertmanager/alertmanager.yaml, absent when None)."""
    chart = dest / CHART.name
    shutil.copytree(CHART, chart, ignore=shutil.ignore_patterns("files"))
    if alertmanager is not None:
        (chart / "files" / "alertmanager").mkdir(parents=True)
        (chart / "files" / "alertmanager" / "alertmanager.yaml").write_text(alertmanager)
    for kind, files in (("alerts", alerts), ("dashboards", dashboards)):
        (chart / "files" / kind).mkdir(parents=True)
        for name, text in (files or {}).items():
            (chart / "files" / kind / name).write_text(text)
    return chart
