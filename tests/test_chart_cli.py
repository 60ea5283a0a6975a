"""The container arguments the chart renders are accepted by the exporter's own command line.

Parses the rendered `args` of every scenario with ``exporter.cli`` and checks the resulting
Config, so a renamed flag, a changed value set (log levels, formats, kinds) or a different
default port breaks the chart tests rather than a deployment. Also ties the schema's enums to
the CLI's. The pod environment is simulated (POD_NAME for --shard auto).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exporter import cli
from exporter.config import DEFAULT_LISTEN, Config
from exporter.logging_setup import FORMAT_ALIASES, FORMATS, LEVEL_ALIASES, LEVELS
from tests.chart.harness import CHART, ci_values_files, container, render

SCHEMA = json.loads((CHART / "values.schema.json").read_text())


def parsed(values: dict[str, object] | None = None, values_files: list[Path] | None = None) -> Config:
    args = container(render(values, values_files or []))["args"]
    assert args[0] == "serve"
    return cli.parse(args)


@pytest.mark.parametrize("values_file", [None, *ci_values_files()], ids=lambda p: p.name if p else "default")
def test_every_scenario_parses(values_file: Path | None, monkeypatch: pytest.MonkeyPatch,
                               tmp_path: Path) -> None:
    monkeypatch.setenv("POD_NAME", "fse-fleet-status-exporter-0")
    files = [] if values_file is None else [values_file]
    with_kubeconfig = values_file is not None and "kubeconfig" in values_file.name
    # The Secret is mounted at kubeconfig.mountPath; reproduce that path under tmp_path.
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    config = parsed({"kubeconfig": {"mountPath": str(tmp_path)}} if with_kubeconfig else None, files)
    assert config.command == "serve"
    assert config.listen_port == 9842
    assert config.from_files is None
    if with_kubeconfig:
        assert config.kubeconfig == tmp_path / "kubeconfig"
    else:
        assert config.kubeconfig is None, "in-cluster by default"


def test_default_port_is_the_cli_default() -> None:
    assert DEFAULT_LISTEN == ":9842"
    assert parsed().listen_port == 9842


def test_namespaced_scenario() -> None:
    config = parsed(values_files=[CHART / "ci" / "01-namespaced-values.yaml"])
    assert config.namespaces == ("fleet-a", "fleet-b")
    assert config.exclude_resources == ("MachineHealthCheck",)
    assert (config.log_level, config.log_format) == ("debug", "logfmt")


def test_shard_auto_reads_the_statefulset_ordinal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POD_NAME", "fse-fleet-status-exporter-2")
    config = parsed(values_files=[CHART / "ci" / "02-sharded-values.yaml"])
    assert (config.shard, config.total_shards) == (2, 3)


def test_web_config_flag_points_at_the_mounted_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # The Secret is mounted at webConfig.mountPath; reproduce that path under tmp_path.
    mount = tmp_path / "web"
    mount.mkdir()
    (mount / "web-config.yml").write_text("basic_auth_users: {}\n")
    config = parsed({"webConfig": {"existingSecret": "web", "mountPath": str(mount)}})
    assert config.web_config_file == mount / "web-config.yml"


@pytest.mark.parametrize("level", [*LEVELS, *LEVEL_ALIASES])
def test_every_log_level_the_schema_allows_is_accepted(level: str) -> None:
    assert parsed({"logLevel": level}).log_level == LEVEL_ALIASES.get(level, level)


@pytest.mark.parametrize("fmt", [*FORMATS, *FORMAT_ALIASES])
def test_every_log_format_the_schema_allows_is_accepted(fmt: str) -> None:
    assert parsed({"logFormat": fmt}).log_format == FORMAT_ALIASES.get(fmt, fmt)


def test_schema_enums_match_the_cli() -> None:
    # The aliases stay valid so that values written for earlier versions still install.
    assert tuple(SCHEMA["properties"]["logLevel"]["enum"]) == (*LEVELS, *LEVEL_ALIASES)
    assert tuple(SCHEMA["properties"]["logFormat"]["enum"]) == (*FORMATS, *FORMAT_ALIASES)


def test_telemetry_path_value_reaches_the_flag() -> None:
    assert parsed({"telemetryPath": "/fleet/metrics"}).telemetry_path == "/fleet/metrics"
    assert parsed().telemetry_path == "/metrics"


def test_metric_selection_scenarios_reach_the_exporter_as_written() -> None:
    denied = parsed(values_files=[CHART / "ci" / "06-selection-values.yaml"])
    assert denied.metric_denylist == (".*_status_condition_last_transition_time", "capi_machine_addresses")
    assert denied.metric_allowlist == ()
    assert denied.metric_labels_allowlist == (("Cluster", ("environment", "region")),
                                              ("MachineDeployment", ("*",)))
    assert denied.metric_annotations_allowlist == (("Cluster", ("cluster.x-k8s.io/managed-by",)),)
    allowed = parsed(values_files=[CHART / "ci" / "07-podmonitor-values.yaml"])
    assert allowed.metric_allowlist == (
        "capi_.*_status_condition", "capi_.*_(spec|status)_replicas.*", "fleet_status_exporter_.*")
