"""The ``__init__``, ``__eq__`` and ``__hash__`` written out on the hot value types (the model's,
``Computed`` and ``Participant``) mean what dataclasses' would.

``model.py`` writes them by hand (compiled, they are compiled too), so a field added to one of
these classes and left out of its ``__eq__`` would make two different objects equal: the store
and the renderer would then skip a real change. For each class, two instances differ in every
compared field; changing any one field of the first to the second's value must make them unequal.
Left out of ``__init__``, a field would keep no value at all. A ``Condition`` keeps six of its
arguments in a shared shape: its arguments are what it must keep and compare.
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any

import pytest

from exporter.engine.conditions import Participant
from exporter.engine.evaluate_types import Computed
from exporter.engine.model import (
    Condition,
    ConditionShape,
    Gate,
    Machine,
    Meta,
    OwnerRef,
    Ref,
    Result,
    Status,
)


def _conditions(reason: str) -> tuple[Condition, ...]:
    return (Condition("Ready", Status.TRUE, reason),)


A_META = Meta("Machine", "cluster.x-k8s.io/v1beta2", "ns", "m1", uid="u1", resource_version="1",
              generation=1, creation_timestamp=1.0, deletion_timestamp=None,
              labels=MappingProxyType({"a": "1"}), annotations=MappingProxyType({}),
              owner_refs=(OwnerRef("MachineSet", "ms1"),), exported_labels=MappingProxyType({"env": "a"}),
              exported_annotations=MappingProxyType({}))
B_META = Meta("Cluster", "cluster.x-k8s.io/v1beta1", "other", "m2", uid="u2", resource_version="2",
              generation=2, creation_timestamp=2.0, deletion_timestamp=3.0,
              labels=MappingProxyType({"b": "2"}), annotations=MappingProxyType({"x": "y"}),
              owner_refs=(), exported_labels=MappingProxyType({}),
              exported_annotations=MappingProxyType({"team": "b"}))

# A Condition's arguments and their defaults: what it reads back as attributes.
CONDITION_ARGUMENTS: dict[str, Any] = {"type": dataclasses.MISSING, "status": dataclasses.MISSING,
                                       "reason": "", "message": "", "last_transition_time": None,
                                       "observed_generation": None, "severity": ""}


def _arguments(cls: type) -> dict[str, Any]:
    """Each constructor argument that is kept as a field, with its default (MISSING: required)."""
    if cls is Condition:
        return CONDITION_ARGUMENTS
    return {f.name: f.default if f.default_factory is dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
            for f in dataclasses.fields(cls) if f.init}


def _replace(obj: Any, **changes: Any) -> Any:
    if type(obj) is Condition:
        return Condition(**{name: changes.get(name, getattr(obj, name)) for name in CONDITION_ARGUMENTS})
    return dataclasses.replace(obj, **changes)


PAIRS: dict[type, tuple[Any, Any]] = {
    Condition: (
        Condition("Ready", Status.TRUE, "A", "a", 1.0, 1, ""),
        Condition("Available", Status.FALSE, "B", "b", 2.0, 2, "Error"),
    ),
    ConditionShape: (ConditionShape("Ready", Status.TRUE, "A", "a", 1, ""),
                     ConditionShape("Available", Status.FALSE, "B", "b", 2, "Error")),
    Ref: (Ref("DockerMachine", "a", "infrastructure.cluster.x-k8s.io", "ns"),
          Ref("KubeadmConfig", "b", "bootstrap.cluster.x-k8s.io", "other")),
    Meta: (A_META, B_META),
    Machine: (
        Machine(A_META, "c1", _conditions("A"), _conditions("A"), "v1beta2", 1, False, (),
                False, "", "md", "ms", "", "v1.30.0", "docker:///a", "fd1", 0, (), None,
                Ref("DockerMachine", "a"), True, True, "node-a", MappingProxyType({"osImage": "x"}),
                (("InternalIP", "10.0.0.1"),), "Running", 1.0, None, "", "", False),
        Machine(B_META, "c2", _conditions("B"), (), "v1beta1", 2, True, ("spec.x",),
                True, "kcp", "md2", "ms2", "mp", "v1.31.0", "docker:///b", "fd2", 5,
                (Gate("Custom"),), Ref("KubeadmConfig", "b"), None, False, None, "node-b",
                MappingProxyType({}), (), "Provisioning", None, 2.0, "Failed", "boom", True),
    ),
    Computed: (
        Computed(_conditions("A"), MappingProxyType({"replicas": 1}), "Running", ()),
        Computed(_conditions("B"), MappingProxyType({"replicas": 2}), None, ()),
    ),
    Participant: (
        Participant("Machine", "m1", Condition("Ready", Status.TRUE, "A"), False),
        Participant("MachineSet", "ms1", None, True),
    ),
    Result: (
        Result(("Machine", "ns", "a"), "cluster.x-k8s.io/v1beta2", "u1", "c1", _conditions("A"),
               _conditions("A"), {"replicas": 1}, "Running", (), "v1beta2"),
        Result(("Machine", "ns", "b"), "cluster.x-k8s.io/v1beta1", "u2", "c2", (),
               _conditions("B"), {"replicas": 2}, None, (), "v1beta1"),
    ),
}


@pytest.mark.parametrize("cls", list(PAIRS), ids=lambda c: c.__name__)
def test_every_field_is_set_from_its_argument(cls: type) -> None:
    _, b = PAIRS[cls]
    given = {name: getattr(b, name) for name in _arguments(cls)}
    by_keyword, by_position = cls(**given), cls(*given.values())
    assert all(_same(getattr(by_keyword, name), value) for name, value in given.items())
    assert by_position == by_keyword


def _same(kept: Any, given: Any) -> bool:
    # A time kept in a float field (Condition.when) is a new float object at each read, compiled.
    return kept is given or (type(given) is float and kept == given)


@pytest.mark.parametrize("cls", list(PAIRS), ids=lambda c: c.__name__)
def test_defaults_are_the_fields_defaults(cls: type) -> None:
    a, _ = PAIRS[cls]
    arguments = _arguments(cls)
    required = {name: getattr(a, name) for name, default in arguments.items()
                if default is dataclasses.MISSING}
    built = cls(**required)
    for name, default in arguments.items():
        if name not in required:
            assert getattr(built, name) == default, name


def _compared(cls: type) -> list[str]:
    if cls is Condition:
        return list(CONDITION_ARGUMENTS)
    return [f.name for f in dataclasses.fields(cls) if f.compare]


@pytest.mark.parametrize("cls", list(PAIRS), ids=lambda c: c.__name__)
def test_the_pair_differs_in_every_compared_field(cls: type) -> None:
    a, b = PAIRS[cls]
    # A new field left at its default in both would slip through the test below.
    same = [name for name in _compared(cls) if name != "findings" and getattr(a, name) == getattr(b, name)]
    assert same == []


@pytest.mark.parametrize("cls", list(PAIRS), ids=lambda c: c.__name__)
def test_every_compared_field_is_compared(cls: type) -> None:
    a, b = PAIRS[cls]
    assert a == _replace(a)
    for name in _compared(cls):
        if name == "findings":  # Findings are covered by their own class; none in the pair
            changed = dataclasses.replace(a, findings=(*a.findings, *_finding()))
        else:
            changed = _replace(a, **{name: getattr(b, name)})
        assert a != changed, name
        assert changed != a, name


def _finding() -> tuple[Any, ...]:
    from exporter.engine.model import Finding

    return (Finding("Code", "message"),)


@pytest.mark.parametrize("cls", [Condition, ConditionShape, Ref], ids=lambda c: c.__name__)
def test_equal_values_hash_alike(cls: type) -> None:
    a, b = PAIRS[cls]
    assert hash(a) == hash(_replace(a))
    assert len({a, _replace(a), b}) == 2


def test_conditions_without_a_time_are_equal_and_hash_alike() -> None:
    """A condition with no transition time keeps NaN, which is not equal to itself."""
    a = Condition("Ready", Status.TRUE, "A", "a")
    b = Condition("Ready", Status.TRUE, "A", "a")
    assert a.last_transition_time is None
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b, a.at(0.0)}) == 2
    assert a != a.at(0.0) and a.at(0.0) != a
    assert a.at(0.0).at(None) == a


@pytest.mark.parametrize("cls", [Meta, Machine, Result], ids=lambda c: c.__name__)
def test_values_holding_mappings_are_not_hashable(cls: type) -> None:
    """Their fields include mappings (labels, annotations, counters): no hash could be honest."""
    with pytest.raises(TypeError, match="unhashable"):
        hash(PAIRS[cls][0])


def test_other_types_are_never_equal() -> None:
    condition = PAIRS[Condition][0]
    assert condition != (condition.type, condition.status)
    assert PAIRS[Ref][0] != PAIRS[Condition][0]
    # A Machine and a projection of another kind with the same fields are different objects.
    assert PAIRS[Machine][0] != PAIRS[Meta][0]

