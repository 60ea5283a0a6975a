"""The fast paths of parsing read exactly what the general readers read, and their caches are bounded."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, fields
from typing import Any

import pytest

from exporter.engine import parse_fields
from exporter.engine.model import Condition, Machine, Meta, Ref, Status
from exporter.engine.parse import project
from exporter.engine.parse_fields import Fields, parse_time
from tests.engine.test_parse_sharing import machine_raw

T0 = "2024-05-01T10:00:00Z"


def test_condition_constructor_sets_every_field() -> None:
    values: dict[str, Any] = {"type": "Ready", "status": Status.FALSE, "reason": "R", "message": "m",
                              "last_transition_time": 1.5, "observed_generation": 3, "severity": "Warning"}
    built = Condition(*values.values())
    assert {name: getattr(built, name) for name in values} == values
    assert built == Condition(**values)
    assert hash(built) == hash(Condition(**values))
    with pytest.raises(FrozenInstanceError):
        built.when = 2.0  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):  # shared by every condition with these fields
        built.shape.reason = "other"  # type: ignore[misc]


def _every_field(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


def test_projections_are_what_their_fields_make() -> None:
    machine = project(machine_raw("m-1"))
    assert isinstance(machine, Machine)
    meta = machine.meta
    assert Meta(**{k: v for k, v in _every_field(meta).items() if k != "key"}) == meta
    assert Machine(**_every_field(machine)) == machine
    assert machine.bootstrap_ref is not None
    assert Ref(**_every_field(machine.bootstrap_ref)) == machine.bootstrap_ref


ITEMS: list[dict[str, Any]] = [
    {"type": "Ready", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": T0,
     "observedGeneration": 4},
    {"type": "Ready", "status": "False", "severity": "Error", "lastTransitionTime": T0},
    {"type": "Ready", "status": "Unknown"},
    {"type": "Ready", "status": True, "reason": None, "message": 3},
    {"type": "Ready", "status": "Maybe", "lastTransitionTime": "yesterday", "observedGeneration": 1.0},
    {"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00"},
    {"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00+02:00"},
    {"type": "Ready", "status": "True", "lastTransitionTime": "2024"},
    {"type": "Ready", "status": "True", "message": "x" * (parse_fields.MAX_STRING + 1)},
    {"type": "R" * 400, "status": "True", "observedGeneration": True},
    {"type": "Ready", "status": None, "severity": ["Error"], "lastTransitionTime": 17},
]


@pytest.mark.parametrize("item", ITEMS)
def test_condition_list_reads_each_item_as_the_general_reader(item: dict[str, Any]) -> None:
    fast, slow = Fields(), Fields()
    (read,) = fast.conditions({"status": {"conditions": [item]}}, "status.conditions")
    assert read == slow._condition(item, "status.conditions", item["type"])
    assert fast.problems == slow.problems


def test_condition_list_keeps_the_first_of_each_type_and_reports_odd_entries() -> None:
    f = Fields()
    items = [None, {"status": "True"}, {"type": "A", "status": "True"}, {"type": "A", "status": "False"},
             {"type": "B", "status": "False", "observedGeneration": 2}]
    read = f.conditions({"c": items}, "c")
    assert [(c.type, c.status, c.observed_generation) for c in read] == [
        ("A", Status.TRUE, None), ("B", Status.FALSE, 2)]
    assert f.problems == ["c[]: expected object, got NoneType", "c[].type: expected string, got NoneType"]


@pytest.fixture
def small_time_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_fields, "MAX_TIMES", 4)
    monkeypatch.setattr(parse_fields, "_times", {})


@pytest.mark.pure_python
@pytest.mark.usefixtures("small_time_table")
def test_time_table_is_bounded_and_changes_no_value() -> None:
    texts = [f"2024-05-01T10:00:{s:02d}Z" for s in range(20)]
    first = [parse_time(t) for t in texts]
    assert len(parse_fields._times) <= 4
    assert first == [parse_time(t) for t in texts] == [1714557600.0 + s for s in range(20)]
    assert parse_time("2024-05-01T10:00:00") is None  # no zone: unreadable, and not remembered
    assert "2024-05-01T10:00:00" not in parse_fields._times


@pytest.mark.usefixtures("small_time_table")
def test_projection_is_the_same_with_a_cold_time_table() -> None:
    raw = machine_raw("m-1")
    warm = project(json.loads(json.dumps(raw)))
    parse_fields._times.clear()
    assert project(json.loads(json.dumps(raw))) == warm
