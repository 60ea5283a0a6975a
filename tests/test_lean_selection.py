"""The lean selection is exactly the object families the shipped rules and dashboards read.

Owns the static half of the proof (tests/test_e2e_prometheus.py runs every rule and dashboard
query against the exporter started with the lean selection): every series selector of every rule
expression (alerts/*.rules.yaml, recording rules included) and of every dashboard query and
variable (dashboards/*.json) names a family ``LEAN`` holds, or a self-metric or process family
(never filtered), or a recorded series or Prometheus builtin; and ``LEAN`` holds nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable

from exporter.metrics import process, selfmetrics
from exporter.metrics.catalog import object_families
from exporter.metrics.docs import generate
from exporter.metrics.selection import LEAN, Selection
from tests.test_alerts import metric_selectors, rules
from tests.test_dashboards import DASHBOARDS, load, queries


def expressions() -> list[str]:
    out = [rule["expr"] for rule in rules()]
    out += [expr for path in DASHBOARDS for expr in queries(load(path))]
    return out


def families_read(exprs: Iterable[str]) -> set[str]:
    """The object families (catalog names) the expressions select."""
    catalog = {f.name for f in object_families()}
    return {name for expr in exprs for name, _ in metric_selectors(expr) if name in catalog}


def missing_from(lean: Iterable[str], exprs: Iterable[str]) -> list[str]:
    return sorted(families_read(exprs) - set(lean))


def test_every_family_a_rule_or_dashboard_reads_is_in_the_lean_selection() -> None:
    exprs = expressions()
    assert len(exprs) > 100 and len(DASHBOARDS) >= 5
    assert missing_from(LEAN, exprs) == [], "add these to exporter.metrics.selection.LEAN"


def test_the_lean_selection_holds_nothing_the_rules_and_dashboards_do_not_read() -> None:
    assert sorted(set(LEAN) - families_read(expressions())) == []
    assert len(set(LEAN)) == len(LEAN)


def test_the_check_fails_when_a_family_is_left_out() -> None:
    exprs = expressions()
    for dropped in ("capi_machine_status_condition", "ocm_manifestworkreplicaset_status_phase", LEAN[-1]):
        assert missing_from([n for n in LEAN if n != dropped], exprs) == [dropped]


def test_names_outside_the_catalog_are_self_metrics_records_or_builtins() -> None:
    catalog = {f.name for f in object_families()}
    records = {rule["record"] for rule in rules() if "record" in rule}
    selfs = {f.name for f in (*selfmetrics.FAMILIES, *process.FAMILIES)}
    others = {name for expr in expressions() for name, _ in metric_selectors(expr)} - catalog
    assert others - records - selfs <= {"up", "ALERTS", "ALERTS_FOR_STATE"}


def test_the_lean_value_selects_exactly_the_lean_families_and_is_in_the_docs() -> None:
    value = ",".join(LEAN)
    assert [f.name for f in Selection(allow=tuple(value.split(","))).families()] == list(LEAN)
    assert f"--metric-allowlist={value}" in generate()
