"""The effective condition of a type: the controller's v1beta2 one, else the engine's; of two
conditions of one type, the first wins, as upstream's ``conditions.Get`` (``meta.FindStatusCondition``)
reads a list. The parser keeps only the first of each type, but projections built any other way
(and the rules' own views) must agree with it, so every reader is checked on the same duplicate.
"""

from __future__ import annotations

from exporter.cli_output import effective_conditions as table_conditions
from exporter.engine.evaluate import evaluate_group
from exporter.engine.grouping import group_projections
from exporter.engine.model import Status
from exporter.engine.vocabulary import NODE_HEALTHY, READY
from exporter.metrics.spec import effective_conditions
from tests.engine.builders import NOW, capi_view, cond, healthy_machine_conditions, machine


def _duplicated() -> tuple[object, ...]:
    first = cond(NODE_HEALTHY, Status.FALSE, "NodeNotHealthy", "first")
    second = cond(NODE_HEALTHY, Status.TRUE, "NodeHealthy", "second")
    others = tuple(c for c in healthy_machine_conditions() if c.type != NODE_HEALTHY)
    return (*others, first, second)


def test_the_rules_view_takes_the_first_of_two_conditions_of_a_type() -> None:
    m = machine("m1", _duplicated())
    view = capi_view(m)
    found = view.effective(m.key, NODE_HEALTHY)
    assert found is not None and found.message == "first"
    reported = view.as_reported(m.key, NODE_HEALTHY)
    assert reported is not None and reported.message == "first"


def test_results_metrics_and_the_table_take_the_first_too() -> None:
    m = machine("m1", _duplicated())
    (group,) = group_projections([m])
    (result,) = evaluate_group(group, {}, NOW)
    metric = [e.condition for e in effective_conditions(result) if e.condition.type == NODE_HEALTHY]
    assert [c.message for c in metric] == ["first"]
    table = [c for c in table_conditions(result) if c.type == NODE_HEALTHY]
    assert [c.message for c in table] == ["first"]
    # The Ready the engine computes summarises the Machine's NodeHealthy: the first one, False.
    ready = next(c for c in result.computed if c.type == READY)
    assert ready.status is Status.FALSE


def test_a_single_condition_of_a_type_is_read_as_it_is() -> None:
    m = machine("m1", healthy_machine_conditions())
    c = capi_view(m).effective(m.key, NODE_HEALTHY)
    assert c is not None and c.status is Status.TRUE
