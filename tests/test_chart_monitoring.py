"""The chart's Prometheus operator objects and Grafana dashboards.

kubernetes-validate has no schemas for CRDs, so the ServiceMonitor, PodMonitor and PrometheusRule
are checked against the constraints of the prometheus-operator CRDs (monitoring.coreos.com/v1):
ServiceMonitor requires `spec`, `spec.selector` and `spec.endpoints`, durations match the
operator's duration pattern and relabel actions its enum; PrometheusRule requires `spec`, every
group a non-empty unique `name`, every rule an `expr`, one of `alert`/`record`, and string-valued
`labels` and `annotations`. Embedding is tested on a chart copy with fixture files (independent
of what alerts/ and dashboards/ hold today) and on the real bundled copies.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.chart.harness import (
    CHART,
    DEFAULT_RUNBOOK_BASE,
    Manifest,
    RenderError,
    by_kind,
    chart_copies,
    chart_copy,
    container,
    one,
    render,
    workload,
)

MONITORING = CHART / "ci" / "03-monitoring-values.yaml"
CUSTOM_BASE = "https://wiki.example.com/fleet/runbook"
DURATION = re.compile(
    r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"
)
RELABEL_ACTIONS = {
    "replace", "keep", "drop", "hashmod", "labelmap", "labeldrop", "labelkeep",
    "lowercase", "uppercase", "keepequal", "dropequal",
}  # fmt: skip
RELABEL_CASED = {
    "hashmod": "HashMod", "labelmap": "LabelMap", "labeldrop": "LabelDrop", "labelkeep": "LabelKeep",
    "keepequal": "KeepEqual", "dropequal": "DropEqual",
}  # fmt: skip

RULE_FILE = f"""\
# A fixture rule file in the format of alerts/*.yaml.
groups:
  - name: fixture-capi
    rules:
      - alert: CAPIFixtureClusterNotReady
        expr: capi_cluster_status_condition{{type="Ready",status="False"}} == 1
        for: 15m
        labels:
          severity: warning
        annotations:
          summary: Cluster is not ready.
          description: >-
            Cluster {{{{ $labels.namespace }}}}/{{{{ $labels.name }}}} is not ready ({{{{ $value }}}}).
          runbook_url: {DEFAULT_RUNBOOK_BASE}#capifixtureclusternotready
      - record: namespace:capi_cluster_info:count
        expr: count by (namespace) (capi_cluster_info)
"""
SECOND_RULE_FILE = """\
groups:
  - name: fixture-ocm
    rules:
      - alert: OCMFixtureUnavailable
        expr: ocm_managedcluster_status_condition{type="ManagedClusterConditionAvailable",status="true"} == 0
        for: 10m
        labels: {severity: critical}
        annotations: {summary: Managed cluster is unavailable., description: '{{ $labels.name }} is down.'}
"""
DASHBOARD = json.dumps(
    {
        "uid": "fixture-overview",
        "title": "Fixture / Overview",
        "panels": [
            {"type": "timeseries", "targets": [{"expr": "up", "legendFormat": "{{namespace}}/{{name}}"}]}
        ],
    },
    indent=2,
)


def check_service_monitor(sm: Manifest) -> None:
    assert sm["apiVersion"] == "monitoring.coreos.com/v1"
    spec = sm["spec"]
    assert isinstance(spec["selector"], dict)
    assert isinstance(spec["endpoints"], list)
    assert spec["endpoints"]
    for endpoint in spec["endpoints"]:
        for field in ("interval", "scrapeTimeout"):
            if field in endpoint:
                assert DURATION.match(endpoint[field]), endpoint[field]
        assert isinstance(endpoint.get("honorLabels", False), bool)
        assert endpoint.get("scheme", "http").lower() in ("http", "https")
        for relabel in [*endpoint.get("relabelings", []), *endpoint.get("metricRelabelings", [])]:
            action = relabel.get("action", "replace")
            assert action.lower() in RELABEL_ACTIONS
            assert action in (action.lower(), action.capitalize(), RELABEL_CASED.get(action.lower()))


def check_prometheus_rule(pr: Manifest) -> None:
    assert pr["apiVersion"] == "monitoring.coreos.com/v1"
    groups = pr["spec"]["groups"]
    names = [g["name"] for g in groups]
    assert all(isinstance(n, str) and n for n in names)
    assert len(set(names)) == len(names), "group names are the list-map key"
    for group in groups:
        for rule in group["rules"]:
            assert isinstance(rule["expr"], (str, int))
            assert ("alert" in rule) != ("record" in rule), rule
            if "for" in rule:
                assert DURATION.match(rule["for"]), rule["for"]
            for field in ("labels", "annotations"):
                assert all(isinstance(v, str) for v in rule.get(field, {}).values()), rule


@pytest.fixture(scope="module")
def monitoring() -> list[Manifest]:
    return render(values_files=[MONITORING])


def test_service_monitor_satisfies_the_crd(monitoring: list[Manifest]) -> None:
    check_service_monitor(one(monitoring, "ServiceMonitor"))


def test_service_monitor_selects_the_service_port(monitoring: list[Manifest]) -> None:
    sm, service = one(monitoring, "ServiceMonitor"), one(monitoring, "Service")
    assert sm["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert sm["spec"]["namespaceSelector"] == {"matchNames": [service["metadata"]["namespace"]]}
    (endpoint,) = sm["spec"]["endpoints"]
    assert endpoint["port"] in [p["name"] for p in service["spec"]["ports"]]
    assert endpoint["path"] == "/metrics"
    # job="fleet-status-exporter": the label the jobLabel names must be on the Service.
    assert service["metadata"]["labels"][sm["spec"]["jobLabel"]] == "fleet-status-exporter"


def test_service_monitor_keeps_exported_labels_and_scrape_settings(monitoring: list[Manifest]) -> None:
    sm = one(monitoring, "ServiceMonitor")
    (endpoint,) = sm["spec"]["endpoints"]
    assert endpoint["honorLabels"] is True
    assert endpoint["interval"] == "30s"
    assert endpoint["scrapeTimeout"] == "25s"
    assert endpoint["relabelings"][0]["targetLabel"] == "node"
    assert endpoint["metricRelabelings"][0]["action"] == "drop"
    assert sm["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_service_monitor_basic_auth_and_tls_pass_through() -> None:
    secret = {"name": "scrape-credentials", "key": "username"}
    monitor = {"enabled": True, "scheme": "https", "tlsConfig": {"insecureSkipVerify": True},
               "basicAuth": {"username": secret, "password": {**secret, "key": "password"}}}  # fmt: skip
    (endpoint,) = one(render({"prometheus": {"monitor": monitor}}), "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}
    assert endpoint["basicAuth"] == monitor["basicAuth"]


def test_service_monitor_scrapes_the_telemetry_path_the_exporter_is_given() -> None:
    values = {"prometheus": {"monitor": {"enabled": True}}, "telemetryPath": "/fleet/metrics"}
    manifests = render(values)
    (endpoint,) = one(manifests, "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["path"] == "/fleet/metrics"
    assert "--web.telemetry-path=/fleet/metrics" in container(manifests)["args"]
    # Without the value, the flag is left to its default, which the ServiceMonitor names.
    assert not any(a.startswith("--web.telemetry-path") for a in container(render())["args"])


def test_service_monitor_is_off_by_default() -> None:
    assert by_kind(render(), "ServiceMonitor") == []


def test_crd_checks_reject_a_broken_object() -> None:
    # The checks above must be able to fail.
    sm = one(render({"prometheus": {"monitor": {"enabled": True}}}), "ServiceMonitor")
    del sm["spec"]["selector"]
    with pytest.raises(KeyError):
        check_service_monitor(sm)
    broken = {"apiVersion": "monitoring.coreos.com/v1", "spec": {"groups": [{"name": "a", "rules": [{}]}]}}
    with pytest.raises(KeyError):
        check_prometheus_rule(broken)


def check_pod_monitor(pm: Manifest) -> None:
    """The PodMonitor CRD's constraints: spec.selector and podMetricsEndpoints, as for endpoints."""
    assert pm["apiVersion"] == "monitoring.coreos.com/v1"
    spec = pm["spec"]
    assert isinstance(spec["selector"]["matchLabels"], dict)
    for endpoint in spec["podMetricsEndpoints"]:
        for field in ("interval", "scrapeTimeout"):
            if field in endpoint:
                assert DURATION.match(endpoint[field]), endpoint[field]
        assert isinstance(endpoint.get("honorLabels", False), bool)
        for relabel in [*endpoint.get("relabelings", []), *endpoint.get("metricRelabelings", [])]:
            assert relabel.get("action", "replace").lower() in RELABEL_ACTIONS


PODMONITOR = CHART / "ci" / "07-podmonitor-values.yaml"


def test_pod_monitor_selects_the_pods_port_with_the_job_the_rules_expect() -> None:
    manifests = render(values_files=[PODMONITOR])
    pm = one(manifests, "PodMonitor")
    check_pod_monitor(pm)
    assert by_kind(manifests, "ServiceMonitor") == []
    pod = workload(manifests)["spec"]["template"]
    assert pm["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert pm["spec"]["namespaceSelector"] == {"matchNames": ["monitoring"]}
    (endpoint,) = pm["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] in [p["name"] for p in pod["spec"]["containers"][0]["ports"]]
    assert endpoint["path"] == "/metrics"
    assert endpoint["honorLabels"] is True
    assert (endpoint["interval"], endpoint["scrapeTimeout"]) == ("30s", "25s")
    assert endpoint["metricRelabelings"][0]["action"] == "drop"
    assert pm["spec"]["podTargetLabels"] == ["app.kubernetes.io/instance"]
    assert pm["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    # job="fleet-status-exporter", as with the ServiceMonitor: the pod label jobLabel names.
    assert pod["metadata"]["labels"][pm["spec"]["jobLabel"]] == "fleet-status-exporter"


def test_pod_monitor_basic_auth_and_tls_pass_through() -> None:
    secret = {"name": "scrape-credentials", "key": "username"}
    monitor = {"enabled": True, "scheme": "https", "tlsConfig": {"insecureSkipVerify": True},
               "basicAuth": {"username": secret, "password": {**secret, "key": "password"}}}  # fmt: skip
    pm = one(render({"prometheus": {"podMonitor": monitor}}), "PodMonitor")
    (endpoint,) = pm["spec"]["podMetricsEndpoints"]
    assert endpoint["scheme"] == "https"
    assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}
    assert endpoint["basicAuth"] == monitor["basicAuth"]


def test_pod_monitor_and_service_monitor_together_fail() -> None:
    both = "prometheus.monitor.enabled and prometheus.podMonitor.enabled are both true"
    with pytest.raises(RenderError, match=both):
        render({"prometheus": {"monitor": {"enabled": True}, "podMonitor": {"enabled": True}}})
    assert by_kind(render(), "PodMonitor") == []


@pytest.fixture
def fixture_chart(tmp_path: Path) -> Path:
    return chart_copy(
        tmp_path,
        alerts={"capi_alerts.yaml": RULE_FILE, "ocm-alerts.yaml": SECOND_RULE_FILE},
        dashboards={"Fleet_Overview.json": DASHBOARD},
    )


def test_one_prometheus_rule_per_rule_file(fixture_chart: Path) -> None:
    rules = by_kind(render(values_files=[MONITORING], chart=fixture_chart), "PrometheusRule")
    assert [r["metadata"]["name"] for r in rules] == [
        "fse-fleet-status-exporter-capi-alerts",
        "fse-fleet-status-exporter-ocm-alerts",
    ]
    for rule in rules:
        check_prometheus_rule(rule)
        assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
        assert rule["metadata"]["namespace"] == "monitoring"


def test_rule_files_are_embedded_unchanged_except_the_runbook_base(fixture_chart: Path) -> None:
    rules = by_kind(render({"prometheusRule": {"enabled": True}}, chart=fixture_chart), "PrometheusRule")
    assert rules[0]["spec"] == yaml.safe_load(RULE_FILE)
    assert rules[1]["spec"] == yaml.safe_load(SECOND_RULE_FILE)
    annotations = rules[0]["spec"]["groups"][0]["rules"][0]["annotations"]
    # Prometheus templates are not Helm templates: they must reach the operator untouched.
    description = "Cluster {{ $labels.namespace }}/{{ $labels.name }} is not ready ({{ $value }})."
    assert annotations["description"] == description


def test_runbook_url_base_is_replaced(fixture_chart: Path) -> None:
    rules = by_kind(render(values_files=[MONITORING], chart=fixture_chart), "PrometheusRule")
    alert = rules[0]["spec"]["groups"][0]["rules"][0]
    assert alert["annotations"]["runbook_url"] == f"{CUSTOM_BASE}#capifixtureclusternotready"
    assert rules[0]["spec"] == yaml.safe_load(RULE_FILE.replace(DEFAULT_RUNBOOK_BASE, CUSTOM_BASE))


def test_dashboards_become_labelled_config_maps_with_the_json_unchanged(fixture_chart: Path) -> None:
    manifests = render(values_files=[MONITORING], chart=fixture_chart)
    (cm,) = by_kind(manifests, "ConfigMap")
    assert cm["metadata"]["name"] == "fse-fleet-status-exporter-dashboard-fleet-overview"
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["annotations"] == {"grafana_folder": "Fleet"}
    assert cm["data"] == {"Fleet_Overview.json": DASHBOARD}
    kubernetes_validate.validate(cm, "1.31.0", strict=True)


def test_dashboard_label_and_namespace_are_configurable(fixture_chart: Path) -> None:
    values: dict[str, Any] = {"dashboards": {"enabled": True, "namespace": "grafana", "labelValue": "fleet"}}
    (cm,) = by_kind(render(values, chart=fixture_chart), "ConfigMap")
    assert cm["metadata"]["namespace"] == "grafana"
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "fleet"


def test_rules_and_dashboards_are_off_by_default(fixture_chart: Path) -> None:
    kinds = {m["kind"] for m in render(chart=fixture_chart)}
    assert not kinds & {"PrometheusRule", "ConfigMap"}


def resource_suffix(path: Path) -> str:
    """The chart's fileSuffix helper: files/alerts/CAPI_alerts.yaml -> capi-alerts."""
    return re.sub(r"[^a-z0-9-]+", "-", path.stem.lower()).strip("-")


def test_bundled_rule_files_each_become_a_prometheus_rule(monitoring: list[Manifest]) -> None:
    rules = {r["metadata"]["name"]: r for r in by_kind(monitoring, "PrometheusRule")}
    copies = {f"fse-fleet-status-exporter-{resource_suffix(p)}": p for p in chart_copies("alerts")}
    assert rules.keys() == copies.keys()
    for name, path in copies.items():
        check_prometheus_rule(rules[name])
        expected = yaml.safe_load(path.read_text().replace(DEFAULT_RUNBOOK_BASE, CUSTOM_BASE))
        assert rules[name]["spec"] == expected


def test_bundled_dashboards_each_become_a_config_map(monitoring: list[Manifest]) -> None:
    maps = {m["metadata"]["name"]: m for m in by_kind(monitoring, "ConfigMap")}
    prefix = "fse-fleet-status-exporter-dashboard"
    copies = {f"{prefix}-{resource_suffix(p)}": p for p in chart_copies("dashboards")}
    assert maps.keys() == copies.keys()
    for name, path in copies.items():
        assert maps[name]["data"] == {path.name: path.read_text()}
        assert len(path.read_bytes()) < 1024 * 1024, "a ConfigMap holds at most 1 MiB"
