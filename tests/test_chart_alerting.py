"""The chart's alerting options: the AlertmanagerConfig translated from alerts/alertmanager.yaml,
the PrometheusRule settings named after kube-prometheus-stack's `defaultRules` (per-alert disable,
per-group switch, additional labels and annotations globally and per group, the job selector, the
Grafana prefix of dashboard_url, additional rule files), and the failures a malformed rule file or
Alertmanager configuration in the values cause, each naming its source.

The translation is checked against an independent one written here (`translate`), on fixtures in a
chart copy and on the real bundled file. That the API server accepts the objects is
tests/test_realcluster_chart.py's part.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

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
    lint,
    one,
    render,
)
from tests.test_chart_monitoring import DURATION, check_prometheus_rule

ALERTING = CHART / "ci" / "05-alerting-values.yaml"
BUNDLED_AM = CHART / "files" / "alertmanager" / "alertmanager.yaml"
DEFAULT_DASHBOARD_BASE = "https://grafana.example.com/d/"
DEFAULT_JOB = 'job="fleet-status-exporter"'
MATCH_TYPES = {"=", "!=", "=~", "!~"}

# ---- the AlertmanagerConfig ----

AM_FIXTURE = r"""
# Every form the translation supports.
route:
  receiver: default
  group_by: [job]
  routes:
    - receiver: fleet-status
      matchers:
        - alertname =~ "(CAPI|OCM).+"
        - severity!="info"
        - team=platform
        - 'summary!~"a \"quoted\" \\ value"'
      group_wait: 30s
      group_interval: 5m
      repeat_interval: 4h
      continue: true
      routes:
        - match: {severity: critical}
          match_re: {alertname: "CAPI.+"}
          group_by: ['...']
        - matchers: ['alertname="OCMManagedClusterUnavailable"']
          receiver: pager
inhibit_rules:
  - source_matchers: [alertname = "FleetStatusExporterDown"]
    target_matchers: [alertname =~ "(CAPI|OCM).+"]
    equal: [job]
  - source_match: {severity: critical}
    target_match_re: {severity: "warning|info"}
    equal: [namespace, cluster_name]
receivers:
  - name: default
  - name: fleet-status
"""


def parse_matcher(text: str) -> dict[str, str]:
    m = re.fullmatch(r'\s*([a-zA-Z_]\w*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|[^\s"{},=!~]*)\s*', text)
    assert m, text
    value = json.loads(m[3]) if m[3].startswith('"') else m[3]
    return {"name": m[1], "matchType": m[2], "value": value}


def matchers(
    strings: list[str] | None, match: dict[str, str] | None, match_re: dict[str, str] | None
) -> list:
    out = [parse_matcher(s) for s in strings or []]
    out += [{"name": k, "matchType": "=", "value": v} for k, v in sorted((match or {}).items())]
    out += [{"name": k, "matchType": "=~", "value": v} for k, v in sorted((match_re or {}).items())]
    return out


def translate_route(route: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    names = {
        "receiver": "receiver",
        "group_by": "groupBy",
        "group_wait": "groupWait",
        "group_interval": "groupInterval",
        "repeat_interval": "repeatInterval",
        "continue": "continue",
    }
    for key, field in names.items():
        if key in route:
            out[field] = route[key]
    found = matchers(route.get("matchers"), route.get("match"), route.get("match_re"))
    if found:
        out["matchers"] = found
    if route.get("routes"):
        out["routes"] = [translate_route(r) for r in route["routes"]]
    return out


def receiver_names(route: dict[str, Any]) -> set[str]:
    names = {route["receiver"]} if "receiver" in route else set()
    for child in route.get("routes", []):
        names |= receiver_names(child)
    return names


def translate(config: dict[str, Any], receivers: list[dict[str, Any]] = ()) -> dict[str, Any]:
    """The AlertmanagerConfig spec the chart must render for an Alertmanager configuration."""
    given = {r["name"]: r for r in receivers}
    names = receiver_names(config["route"]) | {r["name"] for r in config.get("receivers", [])} | set(given)
    spec: dict[str, Any] = {
        "route": translate_route(config["route"]),
        "receivers": [given.get(n, {"name": n}) for n in sorted(names)],
    }
    rules = []
    for rule in config.get("inhibit_rules", []):
        out: dict[str, Any] = {}
        for side in ("source", "target"):
            found = matchers(
                rule.get(f"{side}_matchers"), rule.get(f"{side}_match"), rule.get(f"{side}_match_re")
            )
            if found:
                out[f"{side}Match"] = found
        if rule.get("equal"):
            out["equal"] = rule["equal"]
        rules.append(out)
    if rules:
        spec["inhibitRules"] = rules
    return spec


def check_alertmanager_config(amc: Manifest) -> None:
    """The constraints of the v1alpha1 CRD and of the operator's validation that the API server
    does not check: matchers typed, durations valid, every receiver a route names defined."""
    assert amc["apiVersion"] == "monitoring.coreos.com/v1alpha1"
    spec = amc["spec"]
    defined = [r["name"] for r in spec["receivers"]]
    assert len(defined) == len(set(defined))
    assert spec["route"]["receiver"], "the top-level route needs a receiver"

    def walk(route: dict[str, Any]) -> None:
        assert set(route) <= {
            "receiver",
            "groupBy",
            "groupWait",
            "groupInterval",
            "repeatInterval",
            "continue",
            "matchers",
            "routes",
        }, route
        assert route.get("receiver", defined[0]) in defined
        for field in ("groupWait", "groupInterval", "repeatInterval"):
            if field in route:
                assert DURATION.match(route[field]), route[field]
        for m in route.get("matchers", []):
            assert set(m) == {"name", "value", "matchType"} and m["matchType"] in MATCH_TYPES and m["name"]
        for child in route.get("routes", []):
            walk(child)

    walk(spec["route"])
    for rule in spec.get("inhibitRules", []):
        assert set(rule) <= {"sourceMatch", "targetMatch", "equal"}
        for m in [*rule.get("sourceMatch", []), *rule.get("targetMatch", [])]:
            assert set(m) == {"name", "value", "matchType"} and m["matchType"] in MATCH_TYPES


def amc(values: dict[str, Any] | None = None, **kwargs: Any) -> Manifest:
    merged = {"alertmanagerConfig": {"enabled": True, **((values or {}).get("alertmanagerConfig", {}))}}
    return one(render({**(values or {}), **merged}, **kwargs), "AlertmanagerConfig")


@pytest.fixture
def am_chart(tmp_path: Path) -> Path:
    return chart_copy(tmp_path, alertmanager=AM_FIXTURE)


def test_alertmanager_config_is_off_by_default() -> None:
    assert by_kind(render(), "AlertmanagerConfig") == []


def test_every_supported_form_is_translated(am_chart: Path) -> None:
    got = amc(chart=am_chart)
    check_alertmanager_config(got)
    assert got["spec"] == translate(yaml.safe_load(AM_FIXTURE))
    # Spot checks of the oracle itself.
    (child,) = got["spec"]["route"]["routes"]
    assert child["matchers"][3] == {"name": "summary", "matchType": "!~", "value": 'a "quoted" \\ value'}
    assert child["matchers"][2] == {"name": "team", "matchType": "=", "value": "platform"}
    assert child["continue"] is True and child["groupWait"] == "30s"
    assert child["routes"][0]["matchers"] == [
        {"name": "severity", "matchType": "=", "value": "critical"},
        {"name": "alertname", "matchType": "=~", "value": "CAPI.+"},
    ]
    assert got["spec"]["receivers"] == [{"name": "default"}, {"name": "fleet-status"}, {"name": "pager"}]
    assert got["spec"]["inhibitRules"][1]["targetMatch"] == [
        {"name": "severity", "matchType": "=~", "value": "warning|info"}
    ]


def test_the_bundled_routes_and_inhibitions_are_translated() -> None:
    (bundled,) = chart_copies("alertmanager")
    assert bundled == BUNDLED_AM
    receivers = [{"name": "fleet-status", "webhookConfigs": [{"url": "http://alert-router:8080/"}]}]
    got = amc({"alertmanagerConfig": {"receivers": receivers}})
    check_alertmanager_config(got)
    config = yaml.safe_load(BUNDLED_AM.read_text())
    assert got["spec"] == translate(config, receivers)
    assert len(got["spec"].get("inhibitRules", [])) == len(config.get("inhibit_rules", []))
    assert got["metadata"]["name"] == "fse-fleet-status-exporter"
    assert got["metadata"]["namespace"] == "monitoring"


def test_metadata_and_receivers_from_the_values(am_chart: Path) -> None:
    pager = {"name": "pager", "pagerdutyConfigs": [{"routingKey": {"name": "pd", "key": "key"}}]}
    extra = {"name": "unused", "webhookConfigs": [{"url": "http://x/"}]}
    values = {
        "alertmanagerConfig": {
            "namespace": "alerting",
            "additionalLabels": {"alertmanagerConfig": "fleet"},
            "annotations": {"a": "b"},
            "receivers": [pager, extra],
        }
    }
    got = amc(values, chart=am_chart)
    assert got["metadata"]["namespace"] == "alerting"
    assert got["metadata"]["labels"]["alertmanagerConfig"] == "fleet"
    assert got["metadata"]["annotations"] == {"a": "b"}
    assert got["spec"]["receivers"] == [{"name": "default"}, {"name": "fleet-status"}, pager, extra]


@pytest.mark.parametrize("form", ["map", "text"])
def test_a_configuration_in_the_values_replaces_the_bundled_one(form: str) -> None:
    config = {
        "route": {"receiver": "ops", "routes": [{"matchers": ['severity="critical"'], "receiver": "pager"}]}
    }
    value = config if form == "map" else yaml.safe_dump(config)
    got = amc({"alertmanagerConfig": {"config": value}})
    check_alertmanager_config(got)
    assert got["spec"] == translate(config)


def test_without_the_bundled_file_the_chart_says_so(tmp_path: Path) -> None:
    chart = chart_copy(tmp_path)
    with pytest.raises(RenderError, match=r"files/alertmanager/alertmanager.yaml is missing .*sync-files.sh"):
        render({"alertmanagerConfig": {"enabled": True}}, chart=chart)


BAD_AM = {
    "not-yaml": ("route: [receiver: x\n", r"alertmanagerConfig.config: not valid YAML"),
    "not-a-map": (
        "- route\n",
        r"alertmanagerConfig.config: not valid YAML|not an Alertmanager configuration",
    ),
    "no-route": ("inhibit_rules: []\n", r"alertmanagerConfig.config: `route` is missing"),
    "no-receiver": ("route: {group_by: [job]}\n", r"alertmanagerConfig.config: route.receiver is missing"),
    "bad-matcher": (
        "route:\n  receiver: a\n  routes:\n    - matchers: ['severity is critical']\n",
        r"alertmanagerConfig.config: route.routes\[0\].matchers\[0\]: matcher \"severity is critical\"",
    ),
    "two-matchers-in-one": (
        'route: {receiver: a, matchers: [\'a="1",b="2"\']}\n',
        r"route.matchers\[0\]: matcher .*one matcher per item",
    ),
    "unknown-route-key": (
        "route: {receiver: a, group_by_typo: [job]}\n",
        r"alertmanagerConfig.config: route: unknown route key \"group_by_typo\"",
    ),
    "bad-duration": ("route: {receiver: a, group_wait: soon}\n", r"route.group_wait: soon is not a duration"),
    "time-intervals": (
        "route: {receiver: a, mute_time_intervals: [night]}\n",
        r"route.mute_time_intervals: time intervals are not translated",
    ),
    "global": ("global: {resolve_timeout: 5m}\nroute: {receiver: a}\n", r"\"global\" is not translated"),
    "receiver-integrations": (
        "route: {receiver: a}\nreceivers: [{name: a, webhook_configs: [{url: 'http://x'}]}]\n",
        r"receivers\[0\] \(a\): integrations are not translated",
    ),
    "bad-inhibit": (
        "route: {receiver: a}\ninhibit_rules: [{source_matchers: [x], equal: [job]}]\n",
        r"inhibit_rules\[0\].source_matchers\[0\]: matcher \"x\"",
    ),
    "bad-equal": (
        "route: {receiver: a}\ninhibit_rules: [{equal: ['not a label']}]\n",
        r"inhibit_rules\[0\]: equal: not a label is not a label name",
    ),
}


@pytest.mark.parametrize(("text", "message"), BAD_AM.values(), ids=BAD_AM.keys())
def test_a_malformed_alertmanager_configuration_fails_naming_it(text: str, message: str) -> None:
    with pytest.raises(RenderError, match=message):
        render({"alertmanagerConfig": {"enabled": True, "config": text}})


def test_a_malformed_bundled_file_fails_naming_it(tmp_path: Path) -> None:
    chart = chart_copy(tmp_path, alertmanager="route:\n  receiver: a\n  routes: {}\n")
    with pytest.raises(
        RenderError, match=r"files/alertmanager/alertmanager.yaml: route.routes: must be a list"
    ):
        render({"alertmanagerConfig": {"enabled": True}}, chart=chart)


def test_receivers_in_the_values_are_checked_by_the_schema() -> None:
    with pytest.raises(RenderError, match="alertmanagerConfig/receivers/0"):
        render({"alertmanagerConfig": {"enabled": True, "receivers": [{"webhookConfigs": []}]}})
    with pytest.raises(RenderError, match='receiver "x" is listed twice'):
        render({"alertmanagerConfig": {"enabled": True, "receivers": [{"name": "x"}, {"name": "x"}]}})


# ---- the PrometheusRule settings ----

RULES = f"""\
groups:
  - name: capi-cluster
    rules:
      - alert: CAPIFixtureNotAvailable
        expr: capi_cluster_status_condition{{type="Available",status="True"}} == 0
        for: 15m
        labels:
          severity: warning
          team: capi
        annotations:
          summary: Cluster is not Available.
          description: Cluster {{{{ $labels.namespace }}}}/{{{{ $labels.name }}}} is not Available.
          runbook_url: {DEFAULT_RUNBOOK_BASE}#capifixturenotavailable
          dashboard_url: {DEFAULT_DASHBOARD_BASE}fleet-status-cluster?var-cluster={{{{ $labels.name }}}}
      - alert: CAPIFixturePaused
        expr: capi_cluster_status_condition{{type="Paused",status="True"}} == 1
        labels: {{severity: info}}
        annotations: {{summary: Cluster is paused., description: '{{{{ $labels.name }}}} is paused.'}}
      - record: namespace:capi_cluster_info:count
        expr: count by (namespace) (capi_cluster_info)
  - name: fleet-status-exporter
    rules:
      - alert: FleetStatusExporterFixtureDown
        expr: absent(up{{{DEFAULT_JOB}}} == 1) or up{{{DEFAULT_JOB}}} == 0
        for: 15m
        labels: {{severity: critical}}
        annotations: {{summary: Exporter down., description: Down.}}
"""


@pytest.fixture
def rules_chart(tmp_path: Path) -> Path:
    return chart_copy(tmp_path, alerts={"fixture.rules.yaml": RULES})


def spec_of(manifests: list[Manifest], suffix: str = "fixture-rules") -> dict[str, Any]:
    (rule,) = [r for r in by_kind(manifests, "PrometheusRule") if r["metadata"]["name"].endswith(suffix)]
    check_prometheus_rule(rule)
    spec: dict[str, Any] = rule["spec"]
    return spec


def rules_by_name(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r.get("alert") or r["record"]: r for g in spec["groups"] for r in g["rules"]}


def test_defaults_keep_the_file_as_it_is(rules_chart: Path) -> None:
    spec = spec_of(render({"prometheusRule": {"enabled": True}}, chart=rules_chart))
    assert spec == yaml.safe_load(RULES)


def test_dashboard_url_base_is_replaced(rules_chart: Path) -> None:
    values = {
        "prometheusRule": {
            "enabled": True,
            "dashboardUrlBase": "https://grafana.internal/d/",
            "runbookUrlBase": "https://wiki/runbook",
        }
    }
    alert = rules_by_name(spec_of(render(values, chart=rules_chart)))["CAPIFixtureNotAvailable"]
    assert alert["annotations"]["dashboard_url"] == (
        "https://grafana.internal/d/fleet-status-cluster?var-cluster={{ $labels.name }}"
    )
    assert alert["annotations"]["runbook_url"] == "https://wiki/runbook#capifixturenotavailable"


def test_job_selector_replaces_the_default_job_in_expressions(rules_chart: Path) -> None:
    selector = 'job="fse",cluster="hub-eu"'
    spec = spec_of(render({"prometheusRule": {"enabled": True, "jobSelector": selector}}, chart=rules_chart))
    expr = rules_by_name(spec)["FleetStatusExporterFixtureDown"]["expr"]
    assert expr == f"absent(up{{{selector}}} == 1) or up{{{selector}}} == 0"
    # Without jobSelector it follows nameOverride, as the ServiceMonitor's job does.
    spec = spec_of(render({"prometheusRule": {"enabled": True}, "nameOverride": "fleet"}, chart=rules_chart))
    assert rules_by_name(spec)["FleetStatusExporterFixtureDown"]["expr"].count('up{job="fleet"}') == 2


def test_the_bundled_rules_use_the_job_selector() -> None:
    manifests = render({"prometheusRule": {"enabled": True, "jobSelector": 'job="other"'}})
    exprs = [
        r["expr"]
        for pr in by_kind(manifests, "PrometheusRule")
        for g in pr["spec"]["groups"]
        for r in g["rules"]
    ]
    assert not any(DEFAULT_JOB in e for e in exprs)
    originals = [
        r["expr"]
        for p in chart_copies("alerts")
        for g in yaml.safe_load(p.read_text())["groups"]
        for r in g["rules"]
    ]
    assert sum(e.count('job="other"') for e in exprs) == sum(e.count(DEFAULT_JOB) for e in originals) > 0


def test_disabled_alerts_and_switched_off_groups_are_left_out(rules_chart: Path) -> None:
    values = {
        "prometheusRule": {
            "enabled": True,
            "disabled": {"CAPIFixturePaused": True},
            "rules": {"fleet-status-exporter": False, "capi-cluster": True},
        }
    }
    spec = spec_of(render(values, chart=rules_chart))
    assert [g["name"] for g in spec["groups"]] == ["capi-cluster"]
    assert list(rules_by_name(spec)) == ["CAPIFixtureNotAvailable", "namespace:capi_cluster_info:count"]
    # `false` keeps the alert; a file left without groups has no PrometheusRule.
    values = {
        "prometheusRule": {
            "enabled": True,
            "disabled": {"CAPIFixturePaused": False},
            "rules": {"fleet-status-exporter": False, "capi-cluster": False},
        }
    }
    assert by_kind(render(values, chart=rules_chart), "PrometheusRule") == []


def test_additional_labels_and_annotations_go_to_alerts_group_values_first(rules_chart: Path) -> None:
    values = {
        "prometheusRule": {
            "enabled": True,
            "additionalRuleLabels": {"team": "platform", "hub": "eu"},
            "additionalRuleAnnotations": {"summary": "Overridden.", "note": "global"},
            "additionalRuleGroupLabels": {"capi-cluster": {"hub": "eu-capi"}},
            "additionalRuleGroupAnnotations": {"fleet-status-exporter": {"note": "exporter"}},
        }
    }
    by_name = rules_by_name(spec_of(render(values, chart=rules_chart)))
    assert by_name["CAPIFixtureNotAvailable"]["labels"] == {
        "severity": "warning",
        "team": "platform",
        "hub": "eu-capi",
    }
    assert by_name["FleetStatusExporterFixtureDown"]["labels"] == {
        "severity": "critical",
        "team": "platform",
        "hub": "eu",
    }
    assert by_name["FleetStatusExporterFixtureDown"]["annotations"] == {
        "summary": "Overridden.",
        "description": "Down.",
        "note": "exporter",
    }
    assert by_name["CAPIFixturePaused"]["annotations"]["note"] == "global"
    # Recording rules are untouched: labels would change the recorded series.
    assert by_name["namespace:capi_cluster_info:count"] == yaml.safe_load(RULES)["groups"][0]["rules"][2]


UNKNOWN_NAMES = {
    "disabled": (
        {"disabled": {"NoSuchAlert": True}},
        r"prometheusRule.disabled.NoSuchAlert: no bundled alert",
    ),
    "rules": (
        {"rules": {"no-such-group": False}},
        r"prometheusRule.rules.no-such-group: no bundled rule group",
    ),
    "group-labels": (
        {"additionalRuleGroupLabels": {"capi": {"a": "b"}}},
        r"prometheusRule.additionalRuleGroupLabels.capi: no bundled rule group .*capi-cluster",
    ),
    "group-annotations": (
        {"additionalRuleGroupAnnotations": {"capi": {"a": "b"}}},
        r"prometheusRule.additionalRuleGroupAnnotations.capi: no bundled rule group",
    ),
}


@pytest.mark.parametrize(("values", "message"), UNKNOWN_NAMES.values(), ids=UNKNOWN_NAMES.keys())
def test_a_name_that_matches_nothing_fails(rules_chart: Path, values: dict[str, Any], message: str) -> None:
    with pytest.raises(RenderError, match=message):
        render({"prometheusRule": {"enabled": True, **values}}, chart=rules_chart)


TEAM_RULES = {
    "groups": [
        {
            "name": "team",
            "rules": [
                {
                    "alert": "TeamAlert",
                    "expr": "vector(1) > 0",
                    "for": "5m",
                    "labels": {"severity": "info"},
                    "annotations": {"summary": "Team.", "description": "{{ $labels.x }}"},
                },
                {"record": "team:up:sum", "expr": "sum(up)"},
            ],
        }
    ]
}


@pytest.mark.parametrize("form", ["map", "text"])
def test_additional_rule_files_become_prometheus_rules(rules_chart: Path, form: str) -> None:
    value = TEAM_RULES if form == "map" else yaml.safe_dump(TEAM_RULES)
    values = {
        "prometheusRule": {
            "enabled": True,
            "additionalPrometheusRulesMap": {"Team_Rules": value},
            "additionalLabels": {"release": "kps"},
        }
    }
    manifests = render(values, chart=rules_chart)
    (team,) = [
        r
        for r in by_kind(manifests, "PrometheusRule")
        if r["metadata"]["name"] == "fse-fleet-status-exporter-team-rules"
    ]
    assert team["spec"] == TEAM_RULES
    assert team["metadata"]["labels"]["release"] == "kps"
    check_prometheus_rule(team)


def bad_rules(**rule: Any) -> dict[str, Any]:
    return {"groups": [{"name": "g", "rules": [{"alert": "A", "expr": "up == 0", **rule}]}]}


BAD_RULES = {
    "not-yaml": ("groups: [name: x\n", r"additionalPrometheusRulesMap.team: not valid YAML"),
    "no-groups": ({"rules": []}, r"additionalPrometheusRulesMap.team: unknown key \"rules\""),
    "empty-groups": ({"groups": []}, r"team: `groups` must be a non-empty list"),
    "group-without-name": (
        {"groups": [{"rules": []}]},
        r"team: groups\[0\]: `name` must be a non-empty string",
    ),
    "duplicate-group": (
        {"groups": [{"name": "g", "rules": []}, {"name": "g", "rules": []}]},
        r"team: groups\[1\] \(g\): the group name is used twice",
    ),
    "rules-not-a-list": (
        {"groups": [{"name": "g", "rules": {}}]},
        r"groups\[0\] \(g\): `rules` must be a list",
    ),
    "alert-and-record": (
        bad_rules(record="x:y"),
        r"groups\[0\] \(g\).rules\[0\]: a rule needs exactly one of",
    ),
    "no-expr": (
        {"groups": [{"name": "g", "rules": [{"alert": "A"}]}]},
        r"rules\[0\] \(alert A\): `expr` must be",
    ),
    "bad-for": (
        bad_rules(**{"for": "5 minutes"}),
        r"rules\[0\] \(alert A\): `for` \"5 minutes\" is not a duration",
    ),
    "unknown-rule-key": (bad_rules(severity="x"), r"rules\[0\] \(alert A\): unknown key \"severity\""),
    "number-label": (bad_rules(labels={"priority": 1}), r"labels.priority must be a string \(quote it\)"),
    "bad-label-name": (bad_rules(labels={"a-b": "c"}), r"labels: \"a-b\" is not a valid label name"),
    "record-with-for": (
        {"groups": [{"name": "g", "rules": [{"record": "a:b", "expr": "up", "for": "1m"}]}]},
        r"rules\[0\] \(record a:b\): a recording rule cannot have `for`",
    ),
    "bad-record-name": (
        {"groups": [{"name": "g", "rules": [{"record": "a-b", "expr": "up"}]}]},
        r"rules\[0\]: `record` must be a metric name",
    ),
}


@pytest.mark.parametrize(("value", "message"), BAD_RULES.values(), ids=BAD_RULES.keys())
def test_a_malformed_rule_file_in_the_values_fails_naming_it(value: Any, message: str) -> None:
    values = {"prometheusRule": {"enabled": True, "additionalPrometheusRulesMap": {"team": value}}}
    with pytest.raises(RenderError, match=message):
        render(values)


def test_an_additional_rule_file_cannot_take_a_bundled_name(rules_chart: Path) -> None:
    values = {
        "prometheusRule": {"enabled": True, "additionalPrometheusRulesMap": {"Fixture.Rules": TEAM_RULES}}
    }
    with pytest.raises(
        RenderError,
        match=r"Fixture.Rules: its PrometheusRule would be named like the one of files/alerts/fixture",
    ):
        render(values, chart=rules_chart)


def test_a_malformed_bundled_rule_file_fails_naming_it(tmp_path: Path) -> None:
    chart = chart_copy(
        tmp_path, alerts={"broken.rules.yaml": "groups:\n  - name: g\n    rules:\n      - alert: A\n"}
    )
    with pytest.raises(
        RenderError, match=r"files/alerts/broken.rules.yaml: groups\[0\] \(g\).rules\[0\] \(alert A\)"
    ):
        render({"prometheusRule": {"enabled": True}}, chart=chart)


def test_the_schema_types_the_new_values() -> None:
    with pytest.raises(RenderError, match="prometheusRule/disabled/A"):
        render({"prometheusRule": {"enabled": True, "disabled": {"A": "yes"}}})
    with pytest.raises(RenderError, match="invalid propertyName 'a-b'"):
        render({"prometheusRule": {"enabled": True, "additionalRuleLabels": {"a-b": "c"}}})


# ---- the alerting scenario end to end through lint and template ----


def test_alerting_scenario_lints_and_renders() -> None:
    assert "0 chart(s) failed" in lint(values_files=[ALERTING])
    manifests = render(values_files=[ALERTING])
    check_alertmanager_config(one(manifests, "AlertmanagerConfig"))
    rules = by_kind(manifests, "PrometheusRule")
    for rule in rules:
        check_prometheus_rule(rule)
    names = [r["metadata"]["name"] for r in rules]
    assert "fse-fleet-status-exporter-team-extra" in names
    alerts = {r["alert"]: r for pr in rules for g in pr["spec"]["groups"] for r in g["rules"] if "alert" in r}
    assert "CAPIClusterPaused" not in alerts
    for alert in alerts.values():
        if alert["alert"] != "FleetTeamClusterCountLow":  # additional files are embedded as given
            assert alert["labels"]["team"] == (
                "observability" if alert["alert"].startswith("FleetStatus") else "platform"
            )
            assert alert["annotations"]["hub"] == "hub-eu"
        for url in (alert["annotations"].get("runbook_url"), alert["annotations"].get("dashboard_url")):
            assert url is None or not url.startswith((DEFAULT_RUNBOOK_BASE, DEFAULT_DASHBOARD_BASE)), url
        assert DEFAULT_JOB not in alert["expr"].replace('job="fleet-status-exporter",cluster="hub-eu"', "")
