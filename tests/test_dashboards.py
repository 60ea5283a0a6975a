"""Grafana dashboards in dashboards/: the conventions of the bundle (uid, a single `datasource`
variable and no hard-coded datasource, `$__rate_interval`, variables refreshed on time range change,
titles, provisioning-friendly fields) and that every query names catalog metrics and labels only.

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
    assert {p.name for p in DASHBOARDS} == {"fleet-overview.json", "cluster-detail.json", "rollouts.json",
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
