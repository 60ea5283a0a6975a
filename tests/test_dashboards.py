"""Grafana dashboards in dashboards/: the conventions of the bundle (uid, a single `datasource`
variable and no hard-coded datasource, `$__rate_interval`, variables refreshed on time range change,
titles, provisioning-friendly fields), that every query names catalog metrics and labels only, and
that every series selector is confined to the management cluster picked with the `job` and
`instance` variables (several exporters in one Prometheus or Thanos never mix in a panel).

Does not evaluate the queries: tests/test_e2e_prometheus.py runs each against a real Prometheus.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_alerts import known_metrics, unknown_names

ROOT = Path(__file__).resolve().parents[1]
DASHBOARDS = sorted((ROOT / "dashboards").glob("*.json"))
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
JOB_MATCHER = 'job=~"$job"'
INSTANCE_MATCHER = 'instance=~"$instance"'
# The management-cluster selector: the exporter's job, then its instances (one per shard or replica).
JOB_VARIABLE = {"name": "job", "query": "label_values(fleet_status_exporter_build_info, job)",
                "includeAll": False, "multi": False}
INSTANCE_VARIABLE = {
    "name": "instance",
    "query": 'label_values(fleet_status_exporter_build_info{job=~"$job"}, instance)',
    "includeAll": True, "multi": True, "allValue": ".*",
}  # fmt: skip


def load(path: Path) -> dict[str, Any]:
    board: dict[str, Any] = json.loads(path.read_text())
    return board


def panels(board: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in board["panels"]:
        yield panel
        yield from panel.get("panels", [])


def datasources(node: Any) -> Iterator[Any]:
    """Every value of a `datasource` key anywhere in the JSON."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "datasource":
                yield value
            yield from datasources(value)
    elif isinstance(node, list):
        for item in node:
            yield from datasources(item)


def queries(board: dict[str, Any]) -> Iterator[str]:
    for var in board["templating"]["list"]:
        if var["type"] == "query":
            match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", var["query"]["query"])
            assert match, var["name"]
            yield match[1]
    for panel in panels(board):
        for target in panel.get("targets", []):
            yield target["expr"]


def test_the_issue_asks_for_five_dashboards() -> None:
    assert {p.name for p in DASHBOARDS} >= {"fleet-overview.json", "cluster-detail.json", "rollouts.json",
                                           "mwrs-rollouts.json", "exporter-health.json"}


def test_uids_and_titles_are_unique() -> None:
    boards = [load(p) for p in DASHBOARDS]
    assert len({b["uid"] for b in boards}) == len(boards)
    assert len({b["title"] for b in boards}) == len(boards)


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_dashboard_model(path: Path) -> None:
    board = load(path)
    assert re.fullmatch(r"[a-z0-9-]{1,40}", board["uid"])
    assert board["id"] is None and board["editable"] is False
    assert board["title"].startswith("Fleet Status / ")
    assert 39 <= board["schemaVersion"] <= 41
    assert "fleet-status-exporter" in board["tags"]
    ids = [p["id"] for p in panels(board)]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_one_datasource_variable_and_nothing_hard_coded(path: Path) -> None:
    board = load(path)
    variables = board["templating"]["list"]
    ds = [v for v in variables if v["type"] == "datasource"]
    assert len(ds) == 1 and ds[0]["name"] == "datasource" and ds[0]["query"] == "prometheus"
    assert ds[0]["label"] == "Data source"
    assert all(value == DATASOURCE for value in datasources(board)), "every datasource is ${datasource}"
    for var in variables:
        if var["type"] == "query":
            assert var["datasource"] == DATASOURCE and var["refresh"] == 2, var["name"]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_every_panel_has_a_title_and_prometheus_targets(path: Path) -> None:
    for panel in panels(load(path)):
        assert panel.get("title"), panel["id"]
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == DATASOURCE
        assert panel["targets"], panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE and target["expr"].strip()


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_range_functions_use_the_rate_interval(path: Path) -> None:
    for expr in queries(load(path)):
        ranged = re.findall(r"\b(rate|irate|increase|changes|delta|deriv)\s*\([^\[]*\[([^\]]+)\]", expr)
        for fn, window in ranged:
            assert window == "$__rate_interval", f"{fn}[{window}] in {expr}"


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_queries_name_catalog_metrics_and_labels_only(path: Path) -> None:
    known = known_metrics()
    problems = [(expr, unknown_names(expr, known)) for expr in queries(load(path))]
    assert [p for p in problems if p[1]] == []


def selectors(expr: str) -> list[tuple[str, str]]:
    """(metric, text between its braces) for every series selector of a PromQL expression.

    The same walk as tests.test_alerts.metric_selectors, on a copy of the expression in which string
    literals and durations are blanked out without changing its length, so that the matcher text
    is read from the original.
    """
    text = re.sub(r'"(?:[^"\\]|\\.)*"', lambda m: '"' + " " * (len(m[0]) - 2) + '"', expr)
    text = re.sub(r"\[[^\]]*\]", lambda m: " " * len(m[0]), text)
    keywords = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                "offset", "inf", "nan"}
    out: list[tuple[str, str]] = []
    pos = 0
    token = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
    while (m := token.search(text, pos)) is not None:
        name, pos = m.group(), m.end()
        rest = text[pos:].lstrip()
        if rest.startswith("(") or re.match(r"(by|without)\s*\(", rest):
            if name in {"by", "without", "on", "ignoring", "group_left", "group_right"}:
                pos = text.index(")", pos) + 1
            continue
        if name.lower() in keywords or re.fullmatch(r"\d+[smhdwy]", name):
            continue
        matchers = ""
        if rest.startswith("{"):
            start = text.index("{", pos)
            end = text.index("}", start)
            matchers, pos = expr[start + 1:end], end + 1
        out.append((name, matchers))
    return out


def matcher_list(matchers: str) -> list[str]:
    found = re.findall(r'[A-Za-z_][A-Za-z0-9_]*\s*(?:=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"', matchers)
    return [m.strip() for m in found]


def test_selector_walk_reads_matchers_from_the_original_expression() -> None:
    expr = ('max by (type) (a{job=~"$job",x="b}c"} == 0) unless on (name) rate(b_total{instance=~"$i"}[5m]) '
            'or label_replace(c, "d", "$1", "name", "(.+)") or vector(0)')
    assert selectors(expr) == [("a", 'job=~"$job",x="b}c"'), ("b_total", 'instance=~"$i"'), ("c", "")]
    assert matcher_list('job=~"$job", x="b}c"') == ['job=~"$job"', 'x="b}c"']


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_job_and_instance_variables_select_one_management_cluster(path: Path) -> None:
    variables = load(path)["templating"]["list"]
    names = [v["name"] for v in variables]
    # After the data source and before every variable that depends on them.
    assert names[:3] == ["datasource", "job", "instance"], names
    for expected, var in zip((JOB_VARIABLE, INSTANCE_VARIABLE), variables[1:3], strict=True):
        assert var["type"] == "query" and var["query"]["query"] == var["definition"] == expected["query"]
        settings = {k: v for k, v in expected.items() if k != "query"}
        assert {k: var.get(k) for k in settings} == settings
        assert var["refresh"] == 2 and var["hide"] == 0


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_every_selector_uses_the_job_and_instance_variables(path: Path) -> None:
    """Every series selector of every panel query and of every variable after `instance` carries
    job=~"$job" and instance=~"$instance" (the `instance` variable itself only the first): a
    recording rule that aggregates these labels away cannot be used, its expression is inlined."""
    board = load(path)
    checked: list[tuple[str, str]] = []
    for var in board["templating"]["list"]:
        if var["type"] != "query" or var["name"] == "job":
            continue
        match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", var["query"]["query"])
        assert match, var["name"]
        wanted = [JOB_MATCHER] if var["name"] == "instance" else [JOB_MATCHER, INSTANCE_MATCHER]
        checked += [(f"variable {var['name']}", match[1])]
        for metric, matchers in selectors(match[1]):
            where = f"variable {var['name']}: {metric}{{{matchers}}}"
            assert set(wanted) <= set(matcher_list(matchers)), where
    for panel in panels(board):
        for target in panel.get("targets", []):
            found = selectors(target["expr"])
            assert found, target["expr"]
            checked.append((panel["title"], target["expr"]))
            for metric, matchers in found:
                got = matcher_list(matchers)
                where = f"{panel['title']}: {metric}{{{matchers}}}"
                assert {JOB_MATCHER, INSTANCE_MATCHER} <= set(got), where
                # No other matcher on job or instance could widen or contradict the selection.
                assert [m for m in got if re.match(r"(job|instance)\b", m)] == [JOB_MATCHER, INSTANCE_MATCHER]
    assert checked


def test_the_job_and_instance_check_can_fail() -> None:
    assert selectors("sum(up)") == [("up", "")]
    assert matcher_list('job="fleet-status-exporter"') == ['job="fleet-status-exporter"']
    assert JOB_MATCHER not in matcher_list(selectors('x{instance=~"$instance"}')[0][1])
