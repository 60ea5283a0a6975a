"""`helm lint --strict` passes on the chart with the default values and every ci/ scenario.

Lint renders every template (NOTES.txt included), validates the values against
values.schema.json, checks Chart.yaml and the rendered objects (names, deprecated APIs), and
with --strict fails on warnings too. The broken values files and chart copies below show that
lint and template do fail, so a pass means something.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chart.harness import CHART, LintError, RenderError, chart_copy, ci_values_files, lint, render

SCENARIOS: list[Path | None] = [None, *ci_values_files()]
BROKEN_VALUES = {
    # A wrong type, caught by values.schema.json.
    "string-replicas": ('replicas: "3"\n', "at '/replicas'"),
    # A misspelt top-level key: the schema allows no additional properties.
    "unknown-key": ("replica: 2\n", "additional properties 'replica' not allowed"),
    # A wrong shape deeper down.
    "namespaces-not-a-list": ("namespaces: fleet-a\n", "at '/namespaces'"),
    # Not YAML at all.
    "malformed-yaml": ("replicas: [1\n", "failed to parse"),
}


def scenario_id(path: Path | None) -> str:
    return "default" if path is None else path.name.removesuffix("-values.yaml")


@pytest.mark.parametrize("values_file", SCENARIOS, ids=scenario_id)
def test_lint_strict_passes(values_file: Path | None) -> None:
    output = lint(values_files=[] if values_file is None else [values_file])
    assert "1 chart(s) linted, 0 chart(s) failed" in output
    assert "[WARNING]" not in output and "[ERROR]" not in output, output


@pytest.mark.parametrize(("text", "message"), BROKEN_VALUES.values(), ids=BROKEN_VALUES.keys())
def test_broken_values_fail_lint_and_template(tmp_path: Path, text: str, message: str) -> None:
    broken = tmp_path / "broken-values.yaml"
    broken.write_text(text)
    with pytest.raises(LintError) as lint_error:
        lint(values_files=[broken])
    assert message in str(lint_error.value)
    with pytest.raises(RenderError) as render_error:
        render(values_files=[broken])
    assert message in str(render_error.value)


def test_strict_lint_fails_on_warnings(tmp_path: Path) -> None:
    # --strict turns warnings into failures: here Helm's deprecation check on a removed API,
    # which a plain lint only reports.
    chart = chart_copy(tmp_path)
    pdb = chart / "templates" / "pdb.yaml"
    pdb.write_text(pdb.read_text().replace("apiVersion: policy/v1\n", "apiVersion: policy/v1beta1\n"))
    assert "policy/v1beta1" in pdb.read_text()
    values = {"podDisruptionBudget": {"enabled": True}}
    with pytest.raises(LintError, match=r"\[WARNING\].*policy/v1beta1 PodDisruptionBudget is deprecated"):
        lint(values, chart=chart)
    assert "[WARNING]" in lint(values, chart=chart, strict=False)


def test_lint_checks_the_chart_metadata(tmp_path: Path) -> None:
    chart = chart_copy(tmp_path)
    metadata = chart / "Chart.yaml"
    metadata.write_text(metadata.read_text().replace("version: 0.1.0\n", "version: not-semver\n"))
    with pytest.raises(LintError, match="version"):
        lint(chart=chart)


def test_ci_scenarios_are_left_out_of_the_package() -> None:
    # lint reads ci/ only through --values; .helmignore keeps the files out of the chart itself.
    assert (CHART / "ci").is_dir()
    assert "ci/" in (CHART / ".helmignore").read_text().split()
