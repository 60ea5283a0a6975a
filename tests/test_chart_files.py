"""The chart's copies of the alert rule files, alerts/alertmanager.yaml and the dashboards equal
their sources in alerts/ and dashboards/.

alerts/ and dashboards/ are the single source; Helm can only embed files inside the chart, so
charts/fleet-status-exporter/sync-files.sh copies them to files/. These tests compare whatever
the source directories hold, byte for byte, and exercise the sync script on a scratch tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.chart.harness import (
    CHART,
    REPO,
    alertmanager_sources,
    chart_copies,
    dashboard_sources,
    rule_file_sources,
)

SYNC = CHART / "sync-files.sh"
FIX = "run charts/fleet-status-exporter/sync-files.sh"


@pytest.mark.parametrize(
    ("kind", "sources"),
    [
        ("alerts", rule_file_sources),
        ("alertmanager", alertmanager_sources),
        ("dashboards", dashboard_sources),
    ],
)
def test_chart_copies_equal_their_sources(kind: str, sources: Callable[[], list[Path]]) -> None:
    wanted = {p.name: p.read_bytes() for p in sources()}
    copies = {p.name: p.read_bytes() for p in chart_copies(kind)}
    assert sorted(copies) == sorted(wanted), FIX
    for name, data in wanted.items():
        assert copies[name] == data, f"{kind}/{name} differs from the chart's copy; {FIX}"


def test_sync_script_check_passes_on_the_repository() -> None:
    result = subprocess.run(["sh", str(SYNC), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A repository-shaped tree with the chart and its own alerts/ and dashboards/."""
    chart = tmp_path / "charts" / CHART.name
    shutil.copytree(CHART, chart, ignore=shutil.ignore_patterns("files"))
    (tmp_path / "alerts").mkdir()
    (tmp_path / "dashboards").mkdir()
    (tmp_path / "alerts" / "capi.yaml").write_text("groups:\n  - name: capi\n    rules: []\n")
    (tmp_path / "alerts" / "ocm.yml").write_text("# OCM\ngroups: []\n")
    # A promtool unit-test file is not a rule file and must not be embedded.
    (tmp_path / "alerts" / "capi_test.yaml").write_text("rule_files: [capi.yaml]\ntests: []\n")
    (tmp_path / "dashboards" / "overview.json").write_text('{"title": "Overview"}\n')
    # The Alertmanager routes: not a rule file, copied to files/alertmanager/.
    (tmp_path / "alerts" / "alertmanager.yaml").write_text("route:\n  receiver: default\n")
    return tmp_path


def sync(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script = root / "charts" / CHART.name / "sync-files.sh"
    env = {k: v for k, v in os.environ.items() if k != "REPO_ROOT"}
    return subprocess.run(["sh", str(script), *args], capture_output=True, text=True, env=env)


def test_sync_copies_rule_files_and_dashboards_only(scratch: Path) -> None:
    assert sync(scratch, "--check").returncode == 1
    assert sync(scratch).returncode == 0
    files = scratch / "charts" / CHART.name / "files"
    assert sorted(p.name for p in (files / "alerts").iterdir()) == ["capi.yaml", "ocm.yml"]
    assert (files / "dashboards" / "overview.json").read_bytes() == b'{"title": "Overview"}\n'
    assert [p.name for p in (files / "alertmanager").iterdir()] == ["alertmanager.yaml"]
    assert (files / "alertmanager" / "alertmanager.yaml").read_text() == "route:\n  receiver: default\n"
    assert [p.name for p in rule_file_sources(scratch)] == ["capi.yaml", "ocm.yml"]
    assert alertmanager_sources(scratch) == [scratch / "alerts" / "alertmanager.yaml"]
    assert sync(scratch, "--check").returncode == 0


def test_sync_check_reports_drift_and_sync_removes_stale_copies(scratch: Path) -> None:
    sync(scratch)
    files = scratch / "charts" / CHART.name / "files"
    (scratch / "alerts" / "capi.yaml").write_text("groups:\n  - name: capi-v2\n    rules: []\n")
    (scratch / "dashboards" / "overview.json").unlink()
    (scratch / "alerts" / "alertmanager.yaml").write_text("route:\n  receiver: pager\n")
    check = sync(scratch, "--check")
    assert check.returncode == 1
    assert "out of date" in check.stderr and "capi.yaml" in check.stderr
    assert "stale" in check.stderr and "overview.json" in check.stderr
    assert "alertmanager/alertmanager.yaml" in check.stderr
    assert sync(scratch).returncode == 0
    assert (files / "alertmanager" / "alertmanager.yaml").read_text() == "route:\n  receiver: pager\n"
    (scratch / "alerts" / "alertmanager.yaml").unlink()
    assert "stale" in sync(scratch, "--check").stderr
    assert sync(scratch).returncode == 0
    assert list((files / "alertmanager").iterdir()) == []
    assert (files / "alerts" / "capi.yaml").read_text().endswith("capi-v2\n    rules: []\n")
    assert list((files / "dashboards").iterdir()) == []


def test_sources_are_the_repository_directories() -> None:
    assert all(p.parent == REPO / "alerts" for p in rule_file_sources())
    assert all(p == REPO / "alerts" / "alertmanager.yaml" for p in alertmanager_sources())
    assert all(p.parent == REPO / "dashboards" for p in dashboard_sources())
