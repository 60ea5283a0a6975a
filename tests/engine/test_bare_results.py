"""Bare Results: what the engine gives an object it computes nothing for, made again from the object.

The pipeline and the renderer keep no such Result (``model.bare_result``): these tests pin that
the one made again is the one ``evaluate`` gives, and that nothing else passes for bare.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.engine.evaluate import evaluate_all, finish
from exporter.engine.evaluate_types import Computed
from exporter.engine.model import Base, Condition, Finding, Result, Status, bare_result, is_bare
from exporter.engine.parse import project

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOW = 1_795_176_000.0


def _examples() -> list[Base]:
    docs: list[dict[str, Any]] = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict))
    return [o for o in (project(d) for d in docs) if o is not None]


FLEET = _examples()


def test_a_bare_result_is_what_evaluation_gives_an_object_with_nothing_computed() -> None:
    by_key = {o.key: o for o in FLEET}
    bare = [r for r in evaluate_all(FLEET, NOW) if is_bare(r)]
    # The example fleet has provider objects, ClusterClasses and kinds read as reported.
    assert {r.kind for r in bare} >= {"AWSMachine", "KubeadmConfig", "ClusterClass"}
    for result in bare:
        assert bare_result(by_key[result.key]) == result, result.key


def test_a_bare_result_is_finish_of_nothing_for_every_object_without_a_parse_problem() -> None:
    for obj in FLEET:
        if not obj.problems:
            made = finish(obj, Computed(), None, NOW)
            assert is_bare(made) and made == bare_result(obj), obj.key


CONDITION = Condition("Ready", Status.TRUE, last_transition_time=NOW)


@pytest.mark.parametrize("changes", [
    {"computed": (CONDITION,)},
    {"findings": (Finding("Code", "message"),)},
    {"counters": {"replicas": 1}},
    {"phase": "Running"},
], ids=["computed", "findings", "counters", "phase"])
def test_a_result_with_anything_computed_found_or_counted_is_not_bare(changes: dict[str, Any]) -> None:
    arguments: dict[str, Any] = {"key": ("AWSMachine", "ns", "m"), "api_version": "x/v1", "uid": "u",
                                 "cluster_name": "c", "reported": (CONDITION,)}
    assert is_bare(Result(**arguments))
    assert not is_bare(Result(**arguments, **changes))
