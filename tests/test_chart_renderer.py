"""The Go renderer in tests/chart/render behaves like `helm template` where the chart tests rely on it.

A tiny fixture chart exercises values merging (later files win, null deletes a default), Helm's
numbers-as-float64 typing, include/tpl/required/toYaml/fromYaml/toJson, .Files with .helmignore,
.Capabilities, .Release and .Chart, and NOTES.txt handling. If these drift from Helm, the chart
tests would assert against a different rendering than users get.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from tests.chart.harness import RenderError, render, render_text

TEMPLATE = """\
{{- define "t.greeting" -}}hello {{ .Values.name }}{{- end -}}
kind: Probe
release: {{ .Release.Name }}/{{ .Release.Namespace }}/{{ .Release.Service }}
chart: {{ .Chart.Name }}-{{ .Chart.Version }}-{{ .Chart.AppVersion }}
template: {{ .Template.Name }}
include: {{ include "t.greeting" . }}
tpl: {{ tpl .Values.templated . }}
replicasKind: {{ kindOf .Values.replicas }}
replicas: {{ .Values.replicas }}
hasKept: {{ hasKey .Values.nested "kept" }}
hasDropped: {{ hasKey .Values.nested "dropped" }}
list: {{ .Values.list | toJson }}
monitoring: {{ .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" }}
apps: {{ .Capabilities.APIVersions.Has "apps/v1" }}
fromYaml: {{ (fromYaml (.Files.Get "files/data.yaml")).answer }}
files: "{{ range $path, $_ := .Files.Glob "files/*" }}{{ $path }};{{ end }}"
nested:
  {{- toYaml .Values.nested | nindent 2 }}
config:
  {{- (.Files.Glob "files/data.yaml").AsConfig | nindent 2 }}
missing: "{{ .Values.absent }}"
"""


@pytest.fixture
def chart(tmp_path: Path) -> Path:
    root = tmp_path / "probe"
    (root / "templates").mkdir(parents=True)
    (root / "files").mkdir()
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: probe\nversion: 1.2.3\nappVersion: '4.5'\n")
    (root / "values.yaml").write_text(
        textwrap.dedent(
            """\
            name: world
            templated: "{{ .Values.name }}!"
            replicas: 2
            list: [a, b]
            nested: {kept: 1, dropped: 2, inner: {x: 1}}
            needed: ""
            """
        )
    )
    (root / "templates" / "probe.yaml").write_text(TEMPLATE)
    (root / "templates" / "needs.yaml").write_text('{{ required "needed is required" .Values.needed }}\n')
    (root / "templates" / "NOTES.txt").write_text("Notes for {{ .Release.Name }}\n")
    (root / "files" / "data.yaml").write_text("answer: 42\n")
    (root / "files" / "scratch.bak").write_text("ignored\n")
    (root / ".helmignore").write_text("*.bak\n")
    return root


def probe(chart: Path, tmp_path: Path, *overrides: dict[str, object]) -> dict[str, object]:
    files = []
    for n, override in enumerate(overrides):
        path = tmp_path / f"override-{n}.yaml"
        path.write_text(yaml.safe_dump(override))
        files.append(path)
    docs = render({"needed": "yes"}, files, chart=chart, release="rel", namespace="ns")
    (doc,) = [d for d in docs if isinstance(d, dict) and d.get("kind") == "Probe"]
    return doc


def test_builtins(chart: Path, tmp_path: Path) -> None:
    doc = probe(chart, tmp_path)
    assert doc["release"] == "rel/ns/Helm"
    assert doc["chart"] == "probe-1.2.3-4.5"
    assert doc["template"] == "probe/templates/probe.yaml"
    assert doc["include"] == "hello world"
    assert doc["tpl"] == "world!"
    assert doc["list"] == ["a", "b"]
    assert doc["fromYaml"] == 42
    assert doc["missing"] == ""


def test_numbers_are_float64_as_in_helm(chart: Path, tmp_path: Path) -> None:
    # Helm decodes values through JSON; templates comparing with int literals must cope.
    doc = probe(chart, tmp_path)
    assert doc["replicasKind"] == "float64"
    assert doc["replicas"] == 2
    assert doc["nested"] == {"kept": 1, "dropped": 2, "inner": {"x": 1}}


def test_later_values_win_and_null_deletes(chart: Path, tmp_path: Path) -> None:
    first = {"name": "a", "nested": {"inner": {"y": 2}}}
    doc = probe(chart, tmp_path, first, {"name": "b", "nested": {"dropped": None}})
    assert doc["include"] == "hello b"
    assert doc["hasKept"] is True
    assert doc["hasDropped"] is False
    assert doc["nested"] == {"kept": 1, "inner": {"x": 1, "y": 2}}


def test_files_respect_helmignore_and_as_config_keeps_content(chart: Path, tmp_path: Path) -> None:
    doc = probe(chart, tmp_path)
    assert doc["files"] == "files/data.yaml;"
    assert doc["config"] == {"data.yaml": "answer: 42\n"}


def test_capabilities(chart: Path, tmp_path: Path) -> None:
    doc = probe(chart, tmp_path)
    assert doc["apps"] is True
    assert doc["monitoring"] is False


def test_required_fails_the_render(chart: Path) -> None:
    with pytest.raises(RenderError, match="needed is required"):
        render(chart=chart)


def test_notes_are_rendered_only_on_request(chart: Path) -> None:
    assert "Notes for" not in render_text({"needed": "x"}, chart=chart)
    assert render_text({"needed": "x"}, chart=chart, notes=True, release="r1") == "Notes for r1\n"
