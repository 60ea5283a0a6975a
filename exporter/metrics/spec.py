"""The shapes of the catalog: a family declared as data, a kind's identity, what extractors read.

Owns ``FamilySpec`` (name, help, type, labels, source, extractor), ``KindSpec`` (which families
an object of one kind has and which identity labels prefix them), ``Subject`` (one object with
its Result and effective conditions, built once per render) and the effective-condition rule.
Owns no family list (``capi``, ``ocm``, ``catalog``) and no text formatting (``exposition``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, Generic, Literal, TypeVar

from exporter.engine.model import Base, Condition, Result
from exporter.metrics.exposition import Sample

MetricType = Literal["gauge", "info", "stateset", "counter"]
Reads = Literal["object", "result", "conditions", "both"]
"""What a family's extractor reads besides the identity labels: the projection, the Result (and
the effective conditions built from it), only the effective conditions (each one's condition and
whether it is computed: part of the Result), or both projection and Result. The renderer skips
families whose input did not change; tests/test_family_reads.py holds every family to its
declaration."""
P = TypeVar("P", bound=Base)

# The text format 0.0.4 knows gauge and counter only; info and state sets are gauges there.
EXPOSITION_TYPE: dict[str, str] = {
    "gauge": "gauge", "info": "gauge", "stateset": "gauge", "counter": "counter",
}


class Effective:
    """The condition a type carries in the metrics: reported, else computed.

    A plain class, not a frozen dataclass: a rendering builds one per condition type of the
    object (~12 per Machine), and compiled, this ``__init__`` is compiled too where the one
    dataclasses generates is not (~5x slower). ``Final`` keeps the attributes read-only for mypy.
    """

    __slots__ = ("computed", "condition", "mismatch")

    def __init__(self, condition: Condition, computed: bool, mismatch: bool | None) -> None:
        self.condition: Final = condition
        self.computed: Final = computed  # True when the controller reports no condition of this type
        # reported and computed status differ; None when only one side exists
        self.mismatch: Final = mismatch

    def __repr__(self) -> str:
        return f"Effective({self.condition!r}, computed={self.computed}, mismatch={self.mismatch})"


class Subject(Generic[P]):
    """One object as the extractors see it.

    Its effective conditions are built on first use: an update of the projection alone renders
    only families that read the projection, which never need them.
    """

    __slots__ = ("_effective", "obj", "result")

    def __init__(self, obj: P, result: Result, effective: tuple[Effective, ...] | None = None) -> None:
        self.obj = obj
        self.result = result
        self._effective = effective

    @property
    def effective(self) -> tuple[Effective, ...]:
        found = self._effective
        if found is None:
            found = self._effective = effective_conditions(self.result)
        return found


Extractor = Callable[[Subject[Any]], Iterable[Sample]]


@dataclass(frozen=True, slots=True)
class FamilySpec:
    """One metric family. ``labels`` follow the kind's identity labels unless ``identity`` is False."""

    name: str
    help: str
    type: MetricType
    labels: tuple[str, ...]
    source: str  # where the value comes from, for the reference docs
    extract: Extractor
    compat: bool = False  # same name and labels as the kube-state-metrics config Cluster API ships
    identity: bool = True
    reads: Reads = "both"
    # For a family that reads the object: the projection's attributes its extractor reads
    # ("meta.creation_timestamp" for one of the metadata). While they and the identity labels are
    # unchanged (and, for one that reads both, the Result is the same) its lines are too, and the
    # renderer skips it; empty: rendered whenever the object changed.
    fields: tuple[str, ...] = ()
    # Non-empty ("label", "annotation"): besides ``labels``, each object brings label names of its
    # own, prefixed so (``label_env``); a sample's values alternate those names and their values.
    free_labels: str = ""

    @property
    def exposition_type(self) -> str:
        return EXPOSITION_TYPE[self.type]


@dataclass(frozen=True, slots=True)
class KindSpec:
    """The families one kind of object is rendered into."""

    kind: str
    prefix: str
    identity: tuple[str, ...]
    families: tuple[FamilySpec, ...]


_LEAN: set[str] = set()


def lean(name: str) -> str:
    """Marks a family, at its declaration, as one the shipped alert rules or dashboards read:
    ``--metric-allowlist`` with every such family keeps them working (``selection.LEAN``)."""
    _LEAN.add(name)
    return name


def is_lean(name: str) -> bool:
    return name in _LEAN


_IDENTITY_READERS: dict[str, Callable[[Base], str]] = {
    "kind": lambda obj: obj.meta.kind,
    "name": lambda obj: obj.meta.name,
    "namespace": lambda obj: obj.meta.namespace,
    "uid": lambda obj: obj.meta.uid,
    "cluster_name": lambda obj: obj.cluster_name,
}


def identity_values(spec: KindSpec, obj: Base) -> tuple[str, ...]:
    return tuple([_IDENTITY_READERS[label](obj) for label in spec.identity])


def same_effective_conditions(old: Result, new: Result) -> bool:
    """Whether two Results of one object have the very same effective conditions, cheaply.

    What families reading "conditions" see: each effective condition and whether it is computed.
    Decided from the inputs of ``effective_conditions`` without building either: the reported
    conditions are the same tuple (an owner's projection, untouched while its Machines change),
    and position by position the computed conditions have the same types and are the very same
    objects (a computed condition that did not change is the one evaluated last time), except
    where the controller reports that type: there the reported one is effective. Anything else,
    conditions equal but rebuilt included, counts as a change (their families are rendered again).
    """
    if old.reported is not new.reported or old.layout != new.layout:
        return False
    if len(old.computed) != len(new.computed):
        return False
    shadowed: set[str] | None = None
    for a, b in zip(old.computed, new.computed, strict=True):
        if a is b:
            continue
        if a.type != b.type or new.layout == "v1beta1":
            return False
        if shadowed is None:
            shadowed = {c.type for c in new.reported}
        if a.type not in shadowed:
            return False
    return True


def effective_conditions(result: Result) -> tuple[Effective, ...]:
    """Every condition type of the object once: the controller's v1beta2 one, else the engine's.

    v1beta1 conditions never appear here: their meanings differ from the v1beta2 types of the
    same name (a v1beta1 Machine ``Ready`` is not a v1beta2 one), and the kube-state-metrics
    configuration these families mirror reads v1beta2 conditions only.
    """
    out: list[Effective] = []
    # reversed: the first computed condition of a type wins, as the first reported one does
    computed_by_type = {c.type: c for c in reversed(result.computed)}
    seen: set[str] = set()
    if result.layout != "v1beta1":
        for reported in result.reported:
            type_ = reported.type
            if type_ in seen:
                continue
            seen.add(type_)
            computed = computed_by_type.get(type_)
            mismatch = None if computed is None else computed.status is not reported.status
            out.append(Effective(reported, False, mismatch))
    for computed in result.computed:
        if computed.type not in seen:
            seen.add(computed.type)
            out.append(Effective(computed, True, None))
    return tuple(out)


def family(
    name: str,
    help_text: str,
    type_: MetricType,
    labels: Iterable[str],
    source: str,
    extract: Extractor,
    *,
    compat: bool = False,
    identity: bool = True,
    reads: Reads = "both",
    fields: Iterable[str] = (),
    free_labels: str = "",
) -> FamilySpec:
    return FamilySpec(name, help_text, type_, tuple(labels), source, extract, compat, identity, reads,
                      tuple(fields), free_labels)
