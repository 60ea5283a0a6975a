"""The alert and recording rules in alerts/: promtool, naming and annotation conventions, runbook
and promtool-test coverage, dashboard links, the labels Alertmanager groups and inhibits on, and
that every metric and label they query exists in the exporter's catalog; alerts/alertmanager.yaml
passes `amtool check-config` and names only alerts that exist.

Owns the PromQL name extraction the dashboard tests reuse (``metric_selectors``, ``known_metrics``).
Does not run the rules against live data: tests/test_e2e_prometheus.py does, and
tests/test_alerting_e2e.py through a real Alertmanager.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.metrics import process, selfmetrics
from exporter.metrics.catalog import KINDS, label_names

ROOT = Path(__file__).resolve().parents[1]
ALERTS = ROOT / "alerts"
RULE_FILES = sorted(p for p in ALERTS.glob("*.yaml") if "groups" in yaml.safe_load(p.read_text()))
TEST_FILES = sorted((ALERTS / "tests").glob("*.yaml"))
ALERTMANAGER_CONFIG = ALERTS / "alertmanager.yaml"
RUNBOOK = ROOT / "docs" / "runbook.md"
RUNBOOK_PREFIX = "https://github.com/fleet-status-exporter/fleet-status-exporter/blob/main/docs/runbook.md#"
# The default prefix of every dashboard_url (the Helm chart replaces it), followed by a dashboard UID
# and its variables filled from the alert's labels.
DASHBOARD_PREFIX = "https://grafana.example.com/d/"
DASHBOARD_URL = re.compile(re.escape(DASHBOARD_PREFIX) + r"([a-z0-9-]+)(?:\?(.*))?")
DASHBOARDS = ROOT / "dashboards"
PROMTOOL = shutil.which("promtool")
AMTOOL = shutil.which("amtool")
# mixtool's alert name rule; the prefix says which system the alert is about.
NAME = re.compile(r"^(CAPI|OCM|FleetStatusExporter)([A-Z]+[a-z0-9]+)+$")
# Series Prometheus itself provides, with their labels.
BUILTIN = {"up": {"job", "instance"}, "ALERTS": {"alertname", "alertstate", "severity", "job", "instance",
                                                 "namespace", "name", "cluster_name"}}
TARGET_LABELS = {"job", "instance"}

_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
             "offset", "inf", "nan"}


def catalog() -> dict[str, set[str]]:
    """Every family the exporter serves, with its labels (object families and self-metrics)."""
    out: dict[str, set[str]] = {}
    for spec in KINDS:
        for fam in spec.families:
            out.setdefault(fam.name, set()).update(label_names(spec, fam))
    for fam in (*selfmetrics.FAMILIES, *process.FAMILIES):
        out[fam.name] = set(fam.labels)
    return out


def rules() -> list[dict[str, Any]]:
    return [rule for path in RULE_FILES for group in yaml.safe_load(path.read_text())["groups"]
            for rule in group["rules"]]


def alerts() -> list[dict[str, Any]]:
    return [r for r in rules() if "alert" in r]


def dashboards() -> dict[str, set[str]]:
    """Dashboard UID -> its template variable names, over dashboards/*.json."""
    out: dict[str, set[str]] = {}
    for path in DASHBOARDS.glob("*.json"):
        board = json.loads(path.read_text())
        out[board["uid"]] = {v["name"] for v in board.get("templating", {}).get("list", [])}
    return out


def dashboard_link(url: str) -> tuple[str, dict[str, str]]:
    """(dashboard UID, {variable: value}) of a dashboard_url, template or rendered."""
    match = DASHBOARD_URL.fullmatch(url)
    assert match, f"{url} does not start with {DASHBOARD_PREFIX} and a dashboard UID"
    params: dict[str, str] = {}
    for pair in (match[2] or "").split("&") if match[2] else []:
        key, _, value = pair.partition("=")
        assert key.startswith("var-"), f"{url}: {key} is not a dashboard variable"
        params[key[len("var-"):]] = value
    return match[1], params


def expected_alerts() -> dict[str, list[dict[str, str]]]:
    """Alert name -> the labels of every alert the promtool tests expect it to raise."""
    out: dict[str, list[dict[str, str]]] = {}
    for path in TEST_FILES:
        for test in yaml.safe_load(path.read_text())["tests"]:
            for check in test.get("alert_rule_test", []):
                for exp in check.get("exp_alerts") or []:
                    out.setdefault(check["alertname"], []).append(exp.get("exp_labels", {}))
    return out


def alertmanager_config() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(ALERTMANAGER_CONFIG.read_text())
    return config


def matcher_names(matchers: list[str]) -> list[str]:
    """The alert names an alertname matcher lists (its regex alternatives that are plain names)."""
    names = []
    for matcher in matchers:
        label, _, value = re.match(r'\s*(\w+)\s*(=~|=)\s*"(.*)"\s*$', matcher).groups()  # type: ignore[union-attr]
        if label == "alertname":
            names += [n for n in value.split("|") if re.fullmatch(r"\w+", n)]
    return names


def matches(matchers: list[str], labels: dict[str, str]) -> bool:
    """Whether labels satisfy Alertmanager matchers (only = and =~ are used in alerts/)."""
    for matcher in matchers:
        label, op, value = re.match(r'\s*(\w+)\s*(=~|=)\s*"(.*)"\s*$', matcher).groups()  # type: ignore[union-attr]
        have = labels.get(label, "")
        if not (have == value if op == "=" else re.fullmatch(value, have)):
            return False
    return True


def known_metrics() -> dict[str, set[str] | None]:
    """Catalog families, Prometheus builtins and recorded series (labels of the latter unchecked)."""
    known: dict[str, set[str] | None] = {name: labels | TARGET_LABELS for name, labels in catalog().items()}
    known.update(BUILTIN)
    known.update({r["record"]: None for r in rules() if "record" in r})
    return known


def metric_selectors(expr: str) -> list[tuple[str, set[str]]]:
    """(metric, label names in its matcher) for every series selector of a PromQL expression."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals hold no names
    text = re.sub(r"\[[^\]]*\]", "", text)  # range and subquery durations
    out: list[tuple[str, set[str]]] = []
    pos = 0
    token = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
    while (m := token.search(text, pos)) is not None:
        name, pos = m.group(), m.end()
        rest = text[pos:].lstrip()
        if rest.startswith("(") or re.match(r"(by|without)\s*\(", rest):
            # a function, an aggregation (maybe with its grouping first) or a grouping label list
            if name in {"by", "without", "on", "ignoring", "group_left", "group_right"}:
                pos = text.index(")", pos) + 1
            continue
        if name.lower() in _KEYWORDS or re.fullmatch(r"\d+[smhdwy]", name):
            continue
        labels: set[str] = set()
        if rest.startswith("{"):
            start = text.index("{", pos)
            end = text.index("}", start)
            labels = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)", text[start + 1:end]))
            pos = end + 1
        out.append((name, labels))
    return out


def unknown_names(expr: str, known: dict[str, set[str] | None]) -> list[str]:
    problems = []
    for metric, labels in metric_selectors(expr):
        if metric not in known:
            problems.append(f"unknown metric {metric}")
            continue
        allowed = known[metric]
        if allowed is not None and labels - allowed:
            problems.append(f"{metric} has no label {sorted(labels - allowed)}")
    return problems


def test_selector_extraction_sees_metrics_and_matchers_only() -> None:
    expr = ('max without (type) (capi_x{type="A",status="True"} == 0) unless on (namespace, name) '
            'rate(y_total{a=~"b"}[5m]) > 0.01 and label_replace(z, "c", "$1", "name", "(.+)")')
    assert metric_selectors(expr) == [("capi_x", {"type", "status"}), ("y_total", {"a"}), ("z", set())]
    assert unknown_names("capi_cluster_info{nope=\"1\"} or no_such_metric", known_metrics()) == [
        "capi_cluster_info has no label ['nope']", "unknown metric no_such_metric"]


@pytest.mark.parametrize("rule", rules(), ids=lambda r: r.get("alert") or r["record"])
def test_rule_queries_only_catalog_metrics_and_labels(rule: dict[str, Any]) -> None:
    assert unknown_names(rule["expr"], known_metrics()) == []


@pytest.mark.parametrize("rule", alerts(), ids=lambda r: r["alert"])
def test_alert_follows_the_conventions(rule: dict[str, Any]) -> None:
    name = rule["alert"]
    assert NAME.match(name) and len(name) <= 40, name
    assert rule["labels"]["severity"] in {"critical", "warning", "info"}
    ann = rule["annotations"]
    assert set(ann) == {"summary", "description", "runbook_url", "dashboard_url"}
    assert "{{" not in ann["summary"] and ann["summary"][0].isupper() and ann["summary"].endswith(".")
    if "absent(" not in rule["expr"]:  # absent() has no labels to name
        assert re.search(r"\{\{ \$labels\.(name|cluster_name|instance|resource) \}\}", ann["description"]), \
            "the description names the object"
    assert ann["runbook_url"] == RUNBOOK_PREFIX + name.lower()
    compared = re.search(r"(==|!=|>=|<=|>|<)\s*[\d.]+\s*(\)|$)", rule["expr"], re.MULTILINE)
    assert compared or "absent(" in rule["expr"], "an alert expression ends in a comparison"
    assert "$value" not in str(rule.get("labels")), "$value in labels resets for"


@pytest.mark.parametrize("rule", alerts(), ids=lambda r: r["alert"])
def test_dashboard_url_names_an_existing_dashboard_and_its_variables(rule: dict[str, Any]) -> None:
    uid, params = dashboard_link(rule["annotations"]["dashboard_url"])
    boards = dashboards()
    assert uid in boards, f"no dashboard with UID {uid} in dashboards/"
    assert set(params) <= boards[uid], f"{uid} has no variable {sorted(set(params) - boards[uid])}"
    used = set()
    for value in params.values():
        label = re.fullmatch(r"\{\{ \$labels\.(\w+) \}\}", value)
        assert label, f"{value}: a variable is filled with one label of the alert"
        used.add(label[1])
    for labels in expected_alerts().get(rule["alert"], []):
        assert used <= set(labels), f"{rule['alert']}: no label {sorted(used - set(labels))} to fill the link"


@pytest.mark.parametrize("rule", alerts(), ids=lambda r: r["alert"])
def test_alert_carries_the_labels_alertmanager_groups_it_by(rule: dict[str, Any]) -> None:
    """CAPI alerts name the workload cluster, MWRS alerts the MWRS (what the promtool tests expect)."""
    name = rule["alert"]
    if name.startswith("CAPI"):
        needed = {"namespace", "cluster_name"}
    elif name.startswith(("OCMManifestWorkReplicaSet", "OCMManagedClusterAddOn")):
        needed = {"namespace", "name"}
    elif name.startswith("OCMManagedCluster"):
        needed = {"name"}
    else:
        needed = {"job"}
    seen = expected_alerts().get(name, [])
    assert seen, f"{name}: no promtool test expects it to fire"
    for labels in seen:
        assert needed <= set(labels), f"{name} fires without {sorted(needed - set(labels))}: {labels}"
        assert all(labels[k] for k in needed), f"{name} fires with an empty {sorted(needed)}: {labels}"


def _clauses(expr: str, keyword: str) -> list[set[str]]:
    return [{x.strip() for x in m.split(",") if x.strip()}
            for m in re.findall(rf"\b{keyword}\s*\(([^)]*)\)", expr)]


@pytest.mark.parametrize("rule", rules(), ids=lambda r: r.get("alert") or r["record"])
def test_joins_and_aggregations_keep_the_labels_that_tell_exporters_apart(rule: dict[str, Any]) -> None:
    """Several management clusters (or shards) in one Prometheus: a join or an aggregation over
    object labels also keeps `job` and `instance`, so it never mixes two exporters' objects."""
    objects = {"namespace", "name", "cluster_name"}
    for keyword in ("on", "by"):
        for labels in _clauses(rule["expr"], keyword):
            if labels & objects:
                assert {"job", "instance"} <= labels, f"{keyword} ({', '.join(sorted(labels))})"
    assert not re.search(r"\bignoring\s*\(", rule["expr"]), "ignoring() joins: use on() with object labels"


def test_alert_names_are_unique_and_groups_small() -> None:
    names = [r["alert"] for r in alerts()]
    assert len(names) == len(set(names))
    for path in RULE_FILES:
        for group in yaml.safe_load(path.read_text())["groups"]:
            assert len(group["rules"]) <= 20 and len(group["name"]) <= 40
            assert group["name"] == group["name"].lower()


def test_recording_rule_names_follow_level_metric_operation() -> None:
    for rule in rules():
        if "record" in rule:
            level, metric, op = rule["record"].split(":")
            assert level and op in {"count", "ratio", "sum"}
            assert metric.startswith(("capi_", "ocm_")), rule["record"]


def test_runbook_has_a_section_per_alert_with_the_four_parts() -> None:
    text = RUNBOOK.read_text()
    sections = dict(re.findall(r"^## (\w+)\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL))
    for rule in alerts():
        body = sections.get(rule["alert"])
        assert body is not None, f"no runbook section for {rule['alert']}"
        for part in ("Meaning", "Impact", "Diagnosis", "Mitigation"):
            assert f"**{part}**" in body, f"{rule['alert']}: runbook misses {part}"
        assert rule.get("for", "0s") in body, f"{rule['alert']}: runbook does not justify its for"


def _seconds(duration: str) -> int:
    total = 0
    for number, unit in re.findall(r"(\d+)([smhd])", duration):
        total += int(number) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
    return total


def test_promtool_unit_tests_cover_every_alert_at_for_and_before() -> None:
    """Every alert has a promtool test in which it is silent one interval before it fires (the
    test names say at its `for`), and one with a negative case (silent)."""
    at_for: set[str] = set()
    silent: set[str] = set()
    for path in TEST_FILES:
        doc = yaml.safe_load(path.read_text())
        assert "groups" not in doc, "test files must not look like rule files to the chart sync script"
        for test in doc["tests"]:
            interval = _seconds(str(test.get("interval", doc.get("evaluation_interval", "1m"))))
            checks = [(c["alertname"], _seconds(str(c["eval_time"])), bool(c.get("exp_alerts")))
                      for c in test.get("alert_rule_test", [])]
            quiet = {(name, when) for name, when, fires in checks if not fires}
            silent |= {name for name, _ in quiet}
            at_for |= {name for name, when, fires in checks if fires and (name, when - interval) in quiet}
    for rule in alerts():
        assert rule["alert"] in at_for, f"{rule['alert']}: no promtool test fires one interval after silence"
        assert rule["alert"] in silent, f"no promtool test of {rule['alert']} expects it silent"


@pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian package prometheus)")
def test_promtool_check_rules() -> None:
    run = subprocess.run([str(PROMTOOL), "check", "rules", *map(str, RULE_FILES)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian package prometheus)")
def test_promtool_test_rules() -> None:
    run = subprocess.run([str(PROMTOOL), "test", "rules", *(p.name for p in TEST_FILES)],
                         cwd=ALERTS / "tests", capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_chart_copies_are_in_sync() -> None:
    run = subprocess.run([str(ROOT / "charts" / "fleet-status-exporter" / "sync-files.sh"), "--check"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_alertmanager_config_names_only_existing_alerts_and_routes_every_alert() -> None:
    config = alertmanager_config()
    names = {r["alert"] for r in alerts()}
    for rule in config["inhibit_rules"]:
        for side in ("source_matchers", "target_matchers"):
            listed = matcher_names(rule[side])
            assert set(listed) <= names, f"{side} names unknown alerts {sorted(set(listed) - names)}"
            assert any(matches(rule[side], {"alertname": n}) for n in names), f"{rule[side]} matches no alert"
        for name in names:
            if matches(rule["source_matchers"], {"alertname": name}):
                assert not matches(rule["target_matchers"], {"alertname": name}), f"{name} inhibits itself"
    fleet = [r for r in config["route"]["routes"] if r["receiver"] == "fleet-status"]
    assert len(fleet) == 1
    for name in names:
        assert matches(fleet[0]["matchers"], {"alertname": name}), f"{name} is not routed to fleet-status"
        children = [r for r in fleet[0]["routes"] if matches(r["matchers"], {"alertname": name})]
        assert children, f"{name} matches no grouping route"


def test_inhibit_rules_match_on_labels_their_alerts_carry() -> None:
    """Every label an inhibit rule's `equal` names is carried by its source and target alerts (job
    and instance come from the scrape and are not in every unit test)."""
    expected = expected_alerts()
    for rule in alertmanager_config()["inhibit_rules"]:
        equal = set(rule["equal"]) - {"job", "instance"}
        for side in ("source_matchers", "target_matchers"):
            for name in (r["alert"] for r in alerts()):
                if not matches(rule[side], {"alertname": name}):
                    continue
                for labels in expected.get(name, []):
                    assert equal <= set(labels), f"{name} ({side}) lacks {sorted(equal - set(labels))}"
    fleet = next(r for r in alertmanager_config()["route"]["routes"] if r["receiver"] == "fleet-status")
    for route in fleet["routes"]:
        for name in (r["alert"] for r in alerts()):
            if name != "FleetStatusExporterDown" and matches(route["matchers"], {"alertname": name}):
                for labels in expected.get(name, []):
                    needed = set(route["group_by"]) - {"job", "instance"}
                    assert needed <= set(labels), f"{name} lacks group_by {sorted(needed - set(labels))}"


@pytest.mark.skipif(AMTOOL is None, reason="amtool is not installed (Debian package prometheus-alertmanager)")
def test_amtool_check_config() -> None:
    run = subprocess.run([str(AMTOOL), "check-config", str(ALERTMANAGER_CONFIG)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SUCCESS" in run.stdout
