"""The catalog: every metric family the exporter serves, as data.

Owns the list of kinds and their families (assembled from ``capi`` and ``ocm``), the lookup of
a projection's kind spec, the self-metric family declarations (``selfmetrics`` renders them) and
the invariants a family table must hold (unique names, label names valid and not repeated).
docs/metrics.md is generated from here (``python -m exporter.metrics.docs``). Owns no rendering.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

from exporter.engine.model import Base, BootstrapConfig, InfraMachinePool, InfraObject
from exporter.metrics import capi, ocm
from exporter.metrics.providers import BOOTSTRAP_CONFIG, INFRA_OBJECT
from exporter.metrics.spec import FamilySpec, KindSpec

KINDS: Final[tuple[KindSpec, ...]] = (*capi.KINDS, INFRA_OBJECT, BOOTSTRAP_CONFIG, *ocm.KINDS)
_BY_TYPE: Final[dict[type[Any], KindSpec]] = {
    **capi.PROJECTIONS,
    # Provider machine pools follow the same contract fields as the other infrastructure objects.
    InfraObject: INFRA_OBJECT,
    InfraMachinePool: INFRA_OBJECT,
    BootstrapConfig: BOOTSTRAP_CONFIG,
    **ocm.PROJECTIONS,
}

_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def kind_spec(obj: Base) -> KindSpec | None:
    """The families an object is rendered into; None for kinds the metrics ignore (PlacementDecision)."""
    return _BY_TYPE.get(type(obj))


def object_families() -> tuple[FamilySpec, ...]:
    """Every object family once, in catalog order (a family shared by kinds appears at its first kind)."""
    seen: dict[str, FamilySpec] = {}
    for spec in KINDS:
        for fam in spec.families:
            seen.setdefault(fam.name, fam)
    return tuple(seen.values())


def label_names(spec: KindSpec, fam: FamilySpec) -> tuple[str, ...]:
    return (*spec.identity, *fam.labels) if fam.identity else fam.labels


def check(kinds: Iterable[KindSpec]) -> list[str]:
    """Problems with a family table; empty when it is sound (asserted at import and in tests)."""
    problems: list[str] = []
    declared: dict[str, FamilySpec] = {}
    for spec in kinds:
        for fam in spec.families:
            other = declared.setdefault(fam.name, fam)
            if other is not fam:
                problems.append(f"{fam.name}: declared twice with different specs")
            if not _NAME.match(fam.name):
                problems.append(f"{fam.name}: invalid metric name")
            labels = label_names(spec, fam)
            if len(set(labels)) != len(labels):
                problems.append(f"{fam.name}: repeated label in {labels} for {spec.kind}")
            bad = [label for label in labels if not _LABEL.match(label)]
            problems.extend(f"{fam.name}: invalid label {label!r}" for label in bad)
            if fam.name.endswith("_total") != (fam.type == "counter"):
                problems.append(f"{fam.name}: only counters end in _total")
    return problems


_PROBLEMS = check(KINDS)
if _PROBLEMS:  # a broken table is a programming error: fail at import, not at the first scrape
    raise RuntimeError("metric catalog: " + "; ".join(_PROBLEMS))
