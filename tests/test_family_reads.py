"""Every family reads what its ``reads`` and ``fields`` declare, so the renderer may skip it when that held.

Each family's extractor runs over every object of the example fleet (and a benchmark-fleet
sample) with what it claims not to read (the object, the Result, whether an effective condition
mismatches, the object's other fields) replaced by a tripwire: touching it fails the test, and the
samples must be those of a normal extraction. And the renderer's cheap test of unchanged effective
conditions never holds when they changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from exporter.engine.evaluate import evaluate_all
from exporter.engine.model import Condition, Status
from exporter.engine.parse import project
from exporter.metrics.catalog import kind_spec, object_families
from exporter.metrics.spec import (
    Effective,
    FamilySpec,
    Subject,
    effective_conditions,
    same_effective_conditions,
)
from exporter.sources.files import load
from tests.benchmark.fleet import generate

ROOT = Path(__file__).resolve().parents[1]
NOW = 1_795_392_000.0


class Tripwire:
    """Stands in for what a family must not read: any use fails."""

    def __init__(self, what: str) -> None:
        self._what = what

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"reads {self._what}.{name}")

    def __iter__(self) -> Any:
        raise AssertionError(f"iterates {self._what}")

    def __len__(self) -> int:
        raise AssertionError(f"measures {self._what}")

    def __bool__(self) -> bool:
        raise AssertionError(f"tests {self._what}")


def fleet() -> list[tuple[Any, Any]]:
    objects = list(load(ROOT / "examples").projections)
    objects += [p for p in (project(o) for o in generate(1, 3)) if p is not None]
    results = {r.key: r for r in evaluate_all(objects, NOW)}
    return [(o, results[o.key]) for o in objects if o.key in results and kind_spec(o) is not None]


PAIRS = fleet()


class ConditionOnly:
    """An effective condition whose ``mismatch`` (derived from the rest of the Result) trips."""

    __slots__ = ("computed", "condition")

    def __init__(self, eff: Effective) -> None:
        self.condition, self.computed = eff.condition, eff.computed

    @property
    def mismatch(self) -> Any:
        raise AssertionError("reads effective[].mismatch")


def test_declarations_cover_every_kind_of_input() -> None:
    reads = {f.reads for f in object_families()}
    assert reads == {"object", "result", "conditions", "both"}


Blind = Callable[[Any, Any, tuple[Effective, ...], FamilySpec], "Subject[Any]"]


def check_blind(
    select: Callable[[FamilySpec], bool], blind: Blind, declared: Callable[[FamilySpec], str]
) -> int:
    """Extract every selected family of every object with ``blind``'s subject, which trips on what
    the family declares it does not read: the samples must be the normal ones. Returns how many."""
    checked = 0
    for obj, result in PAIRS:
        spec = kind_spec(obj)
        assert spec is not None
        effective = effective_conditions(result)
        normal: Subject[Any] = Subject(obj, result, effective)
        for fam in spec.families:
            if not select(fam):
                continue
            try:
                got = list(fam.extract(blind(obj, result, effective, fam)))
            except AssertionError as exc:
                raise AssertionError(f"{fam.name} declares {declared(fam)} but {exc}") from None
            assert got == list(fam.extract(normal)), fam.name
            checked += 1
    return checked


@pytest.mark.pure_python
def test_families_reading_conditions_read_nothing_else() -> None:
    def blind(obj: Any, result: Any, effective: tuple[Effective, ...], fam: FamilySpec) -> Subject[Any]:
        return Subject(Tripwire("object"), Tripwire("result"),  # type: ignore[arg-type]
                       tuple(ConditionOnly(e) for e in effective))  # type: ignore[misc]

    assert check_blind(lambda f: f.reads == "conditions", blind, lambda f: "reads='conditions'") > 100


@pytest.mark.pure_python
@pytest.mark.parametrize("side", ["object", "result"])
def test_families_read_only_their_side(side: str) -> None:
    def blind(obj: Any, result: Any, effective: tuple[Effective, ...], fam: FamilySpec) -> Subject[Any]:
        if side == "result":  # a family declared to read the Result never sees the object
            return Subject(Tripwire("object"), result, effective)  # type: ignore[arg-type]
        return Subject(obj, Tripwire("result"), Tripwire("effective"))  # type: ignore[arg-type]

    # Reading conditions is reading part of the Result.
    def select(fam: FamilySpec) -> bool:
        return fam.reads == side or (side == "result" and fam.reads == "conditions")

    assert check_blind(select, blind, lambda f: f"reads={f.reads!r}") > 100


def test_same_effective_conditions_holds_only_when_the_effective_conditions_are_the_same() -> None:
    # Variants of every Result: a computed condition rebuilt with another status, one after
    # another; the same reported conditions in a new tuple; a computed condition appended.
    agreed = 0
    for _, result in PAIRS:
        variants = [replace(result, reported=tuple(result.reported)),
                    replace(result, computed=(*result.computed, Condition("Extra", Status.TRUE)))]
        for i, c in enumerate(result.computed):
            flipped = Condition(c.type, Status.FALSE if c.status is Status.TRUE else Status.TRUE, c.reason,
                                c.message, c.last_transition_time, c.observed_generation, c.severity)
            computed = (*result.computed[:i], flipped, *result.computed[i + 1:])
            variants.append(replace(result, computed=computed))
        before = [(e.condition, e.computed) for e in effective_conditions(result)]
        for variant in variants:
            if same_effective_conditions(result, variant):
                after = [(e.condition, e.computed) for e in effective_conditions(variant)]
                assert len(after) == len(before)
                assert all(a[0] is b[0] and a[1] == b[1] for a, b in zip(before, after, strict=True))
                agreed += 1
    assert agreed > 100, "owners' computed conditions behind reported ones are recognised"


class FieldsOnly:
    """An object that lets through only the declared attributes ("meta.x": x of ``meta``)."""

    def __init__(self, obj: Any, fields: tuple[str, ...], what: str = "object") -> None:
        self._obj, self._what = obj, what
        self._own = {f for f in fields if "." not in f}
        self._nested: dict[str, tuple[str, ...]] = {}
        for f in fields:
            if "." in f:
                head, rest = f.split(".", 1)
                self._nested[head] = (*self._nested.get(head, ()), rest)

    def __getattr__(self, name: str) -> Any:
        if name in self._own:
            return getattr(self._obj, name)
        if name in self._nested:
            return FieldsOnly(getattr(self._obj, name), self._nested[name], f"{self._what}.{name}")
        raise AssertionError(f"reads {self._what}.{name}")


@pytest.mark.pure_python
def test_families_read_only_the_fields_they_declare() -> None:
    declared = [f for f in object_families() if f.fields]
    assert all(f.reads in ("object", "both") for f in declared), "fields are for families reading the object"
    assert any(f.reads == "both" for f in declared)

    def blind(obj: Any, result: Any, effective: tuple[Effective, ...], fam: FamilySpec) -> Subject[Any]:
        if fam.reads == "both":  # the Result as it is: such a family is kept only while it is the same
            return Subject(FieldsOnly(obj, fam.fields), result, effective)  # type: ignore[arg-type]
        return Subject(FieldsOnly(obj, fam.fields), Tripwire("result"),  # type: ignore[arg-type]
                       Tripwire("effective"))  # type: ignore[arg-type]

    assert check_blind(lambda f: bool(f.fields), blind, lambda f: f"fields={f.fields}") > 100
