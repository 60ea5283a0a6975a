"""Random damage to the example fleet never breaks evaluation, and malformed fields become findings.

Objects of the example fleet are mutated at random (fields removed, replaced by values of the
wrong type, unknown condition statuses, huge strings) and the whole fleet is projected and
evaluated: nothing may raise, and every other object keeps being evaluated.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.engine.evaluate import MALFORMED_FIELD, evaluate_all
from exporter.engine.parse import project

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOW = 1_795_176_000.0  # 2026-11-20T12:00:00Z


def load_examples() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict))
    return docs


FLEET = load_examples()

WRONG_VALUES = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=True),
    st.booleans(),
    st.text(max_size=20),
    st.just("x" * 200_000),  # a huge string
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.sampled_from(["Maybe", "true", "TRUE", "", "Unknown", "False"]),  # unknown statuses
)


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            found.extend(paths(v, (*prefix, k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found.extend(paths(v, (*prefix, i)))
    return found


def mutate(obj: dict[str, Any], path: tuple[Any, ...], value: Any, delete: bool) -> None:
    parent: Any = obj
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if delete and isinstance(parent, dict):
        parent.pop(last, None)
    else:
        parent[last] = value


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), count=st.integers(min_value=1, max_value=6))
def test_random_mutations_never_break_evaluation(data: st.DataObject, count: int) -> None:
    fleet = copy.deepcopy(FLEET)
    for _ in range(count):
        target = fleet[data.draw(st.integers(0, len(fleet) - 1), label="object")]
        candidates = paths(target)
        path = candidates[data.draw(st.integers(0, len(candidates) - 1), label="path")]
        mutate(target, path, data.draw(WRONG_VALUES, label="value"), data.draw(st.booleans(), label="delete"))
    projections = [p for p in (project(raw) for raw in fleet) if p is not None]
    results = evaluate_all(projections, NOW)
    # Objects that kept their identity are all still evaluated (PlacementDecisions are inputs
    # only and get no result of their own).
    evaluated = {r.key for r in results}
    inputs_only = {"PlacementDecision"}
    assert {p.key for p in projections if p.meta.kind not in inputs_only} <= evaluated


def test_malformed_field_is_a_finding_and_the_rest_of_the_fleet_is_evaluated() -> None:
    fleet = copy.deepcopy(FLEET)
    victim = next(o for o in fleet if o["kind"] == "MachineDeployment")
    victim["spec"]["replicas"] = "three"
    projections = [p for p in (project(raw) for raw in fleet) if p is not None]
    results = {r.key: r for r in evaluate_all(projections, NOW)}
    key = ("MachineDeployment", victim["metadata"]["namespace"], victim["metadata"]["name"])
    codes = [f.code for f in results[key].findings]
    assert MALFORMED_FIELD in codes
    message = next(f.message for f in results[key].findings if f.code == MALFORMED_FIELD)
    assert "replicas" in message
    evaluated_kinds = [p for p in projections if p.meta.kind != "PlacementDecision"]
    assert len(results) == len(evaluated_kinds)
