"""The alert and recording rules in alerts/: promtool, naming and annotation conventions, runbook
coverage, and that every metric and label they query exists in the exporter's catalog.

Owns the PromQL name extraction the dashboard tests reuse (``metric_selectors``, ``known_metrics``).
Does not run the rules against live data: tests/test_e2e_prometheus.py does.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.metrics import selfmetrics
from exporter.metrics.catalog import KINDS, label_names

ROOT = Path(__file__).resolve().parents[1]
ALERTS = ROOT / "alerts"
RULE_FILES = sorted(p for p in ALERTS.glob("*.yaml") if "groups" in yaml.safe_load(p.read_text()))
TEST_FILES = sorted((ALERTS / "tests").glob("*.yaml"))
RUNBOOK = ROOT / "docs" / "runbook.md"
RUNBOOK_PREFIX = "https://github.com/fleet-status-exporter/fleet-status-exporter/blob/main/docs/runbook.md#"
PROMTOOL = shutil.which("promtool")
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
    for fam in selfmetrics.FAMILIES:
        out[fam.name] = set(fam.labels)
    return out


def rules() -> list[dict[str, Any]]:
    return [rule for path in RULE_FILES for group in yaml.safe_load(path.read_text())["groups"]
            for rule in group["rules"]]


def alerts() -> list[dict[str, Any]]:
    return [r for r in rules() if "alert" in r]


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
    assert set(ann) == {"summary", "description", "runbook_url"}
    assert "{{" not in ann["summary"] and ann["summary"][0].isupper() and ann["summary"].endswith(".")
    if "absent(" not in rule["expr"]:  # absent() has no labels to name
        assert re.search(r"\{\{ \$labels\.(name|cluster_name|instance|resource) \}\}", ann["description"]), \
            "the description names the object"
    assert ann["runbook_url"] == RUNBOOK_PREFIX + name.lower()
    compared = re.search(r"(==|!=|>=|<=|>|<)\s*[\d.]+\s*(\)|$)", rule["expr"], re.MULTILINE)
    assert compared or "absent(" in rule["expr"], "an alert expression ends in a comparison"
    assert "$value" not in str(rule.get("labels")), "$value in labels resets for"


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


def test_promtool_unit_tests_cover_every_alert_at_for_and_before() -> None:
    covered: dict[str, set[str]] = {}
    for path in TEST_FILES:
        doc = yaml.safe_load(path.read_text())
        assert "groups" not in doc, "test files must not look like rule files to the chart sync script"
        for test in doc["tests"]:
            for check in test.get("alert_rule_test", []):
                covered.setdefault(check["alertname"], set()).add(
                    "fires" if check.get("exp_alerts") else "silent")
    for rule in alerts():
        assert covered.get(rule["alert"]) == {"fires", "silent"}, rule["alert"]


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
