"""The real Helm renders the way the chart tests rely on, and the harness passes it through faithfully.

A tiny fixture chart exercises values merging (later files win, null deletes a default), Helm's
numbers-as-float64 typing, include/tpl/required/toYaml/fromYaml/toJson, .Files with .helmignore,
.Capabilities, .Release and .Chart, NOTES.txt (which `helm template` does not print: the harness
renders it from a chart copy) and the errors. If a Helm upgrade changed one of these, the chart
templates that depend on it would need a look, not only the test expectations.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.chart import harness
from tests.chart.harness import RenderError, render, render_text
from tests.realcluster import build

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
    # Helm parses every rendered document as a Kubernetes object head: a bare scalar is an error.
    needs = 'kind: Needs\nvalue: {{ required "needed is required" .Values.needed }}\n'
    (root / "templates" / "needs.yaml").write_text(needs)
    (root / "templates" / "NOTES.txt").write_text("Notes for {{ .Release.Name }}\n")
    (root / "files" / "data.yaml").write_text("answer: 42\n")
    (root / "files" / "scratch.bak").write_text("ignored\n")
    (root / ".helmignore").write_text("*.bak\n")
    return root


def probe(chart: Path, tmp_path: Path, *overrides: Mapping[str, object]) -> dict[str, object]:
    files = []
    for n, override in enumerate(overrides):
        path = tmp_path / f"override-{n}.json"  # JSON quotes every string (see the YAML 1.1 test)
        path.write_text(json.dumps(override))
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


def test_values_files_are_read_as_yaml_1_1(chart: Path, tmp_path: Path) -> None:
    # Unlike PyYAML (and yaml.v3), Helm's YAML reader takes a plain y/n/on/off for a boolean, so a
    # values file must quote such strings; the harness writes its overrides as JSON for this reason.
    path = tmp_path / "plain.yaml"
    path.write_text("nested:\n  inner:\n    y: 2\n    on: 3\n")
    doc = render({"needed": "yes"}, [path], chart=chart)
    (probe_doc,) = [d for d in doc if d.get("kind") == "Probe"]
    assert probe_doc["nested"]["inner"] == {"x": 1, "true": 3}


def test_required_fails_the_render_with_helms_message(chart: Path) -> None:
    error = r"execution error at \(probe/templates/needs\.yaml:2:\d+\): needed is required"
    with pytest.raises(RenderError, match=error):
        render(chart=chart)


def test_a_document_that_is_not_an_object_fails_the_render(chart: Path) -> None:
    (chart / "templates" / "scalar.yaml").write_text("just text\n")
    with pytest.raises(RenderError, match=r"YAML parse error on probe/templates/scalar\.yaml"):
        render({"needed": "x"}, chart=chart)


def test_notes_are_rendered_only_on_request(chart: Path) -> None:
    assert "Notes for" not in render_text({"needed": "x"}, chart=chart)
    assert render_text({"needed": "x"}, chart=chart, notes=True, release="r1") == "Notes for r1\n"


def test_notes_keep_their_whitespace_and_see_the_values(chart: Path) -> None:
    (chart / "templates" / "NOTES.txt").write_text(
        "  indented {{ .Values.name }}\n{{- /* trimmed */}}\n\n{{ .Release.Namespace }}\n\n"
    )
    assert render_text({"needed": "x"}, chart=chart, notes=True) == "  indented world\n\nmonitoring\n\n"


def test_notes_errors_name_notes_txt(chart: Path) -> None:
    (chart / "templates" / "NOTES.txt").write_text('first line\n{{ fail "no notes for you" }}\n')
    with pytest.raises(RenderError, match=r"at \(probe/templates/NOTES.txt\): no notes for you"):
        render_text({"needed": "x"}, chart=chart, notes=True)
    (chart / "templates" / "NOTES.txt").write_text("first line\n{{ nosuchfunction }}\n")
    with pytest.raises(RenderError, match=r"probe/templates/NOTES.txt:2\b") as error:
        render_text({"needed": "x"}, chart=chart, notes=True)
    assert "NOTES.txt.yaml" not in str(error.value)


def test_a_chart_without_notes_has_empty_notes(chart: Path) -> None:
    (chart / "templates" / "NOTES.txt").unlink()
    assert render_text({"needed": "x"}, chart=chart, notes=True) == ""


def test_notes_render_the_whole_chart_as_install_does(chart: Path) -> None:
    # An error in another template fails the notes too: `helm install` renders everything.
    with pytest.raises(RenderError, match="needed is required"):
        render_text(chart=chart, notes=True)


def test_missing_helm_fails_with_the_build_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Not a skip: the chart tests error out and say how to build the pinned Helm.
    monkeypatch.setenv("FSE_TOOLS_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(build.Missing, match="helm is not built"):
        harness.helm.__wrapped__()
