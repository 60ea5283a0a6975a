"""Small constructors for engine projections, shared by the engine tests (append-only).

Each builder takes only what a test varies; everything else has the value of a healthy object.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType

from exporter.engine.evaluate_types import MwrsGroup, MwrsView
from exporter.engine.model import (
    Condition,
    ManagedCluster,
    ManifestWork,
    ManifestWorkReplicaSet,
    Meta,
    Placement,
    PlacementRef,
    PlacementSummary,
    RolloutSummary,
    Status,
)

T, F, U = Status.TRUE, Status.FALSE, Status.UNKNOWN


def cond(type_: str, status: Status, reason: str = "", message: str = "", og: int | None = None) -> Condition:
    return Condition(type=type_, status=status, reason=reason, message=message, observed_generation=og)


# ---- Open Cluster Management ------------------------------------------------------------------

OCM_WORK_V1ALPHA1 = "work.open-cluster-management.io/v1alpha1"
OWNER_LABEL = "work.open-cluster-management.io/manifestworkreplicaset"
PLACEMENT_LABEL = "work.open-cluster-management.io/placementname"
TEMPLATE = "template-hash-1"


def summary(total: int = 0, applied: int = 0, available: int = 0, progressing: int = 0,
            degraded: int = 0) -> RolloutSummary:
    return RolloutSummary(total=total, applied=applied, available=available, progressing=progressing,
                          degraded=degraded)


def placement_summary(
    name: str, s: RolloutSummary, selected: int | None, groups: int = 1
) -> PlacementSummary:
    """A placementSummary item as the controller writes it (text and parsed numbers agree)."""
    text = f"{groups} ({s.total} / {selected} clusters applied)" if selected is not None else ""
    return PlacementSummary(
        name=name,
        available_decision_groups=text,
        summary=s,
        decision_groups=groups if selected is not None else None,
        applied_clusters=s.total if selected is not None else None,
        selected_clusters=selected,
    )


def mwrs(
    s: RolloutSummary | None = None,
    *,
    selected: dict[str, int | None] | None = None,
    per_placement: dict[str, RolloutSummary] | None = None,
    conditions: Iterable[Condition] = (),
    rollout_type: str = "Progressive",
    name: str = "hello",
    namespace: str = "default",
    progressing_rule: bool | None = True,
    spec_hash: str = TEMPLATE,
    status_reported: bool = True,
    legacy: bool = False,
) -> ManifestWorkReplicaSet:
    """An MWRS with one placement ``p`` by default; ``selected`` maps placement → selected clusters.

    Placement summaries default to the top-level summary for a single placement; pass
    ``per_placement`` to give each its own, or an empty dict for none.
    """
    s = RolloutSummary() if s is None else s
    selected = {"p": s.total} if selected is None else selected
    if per_placement is None:
        per_placement = {next(iter(selected)): s} if len(selected) == 1 else {}
    return ManifestWorkReplicaSet(
        meta=Meta(kind="ManifestWorkReplicaSet", api_version=OCM_WORK_V1ALPHA1, namespace=namespace,
                  name=name, generation=1),
        conditions=tuple(conditions),
        placement_refs=tuple(PlacementRef(name=p, rollout_type=rollout_type) for p in selected),
        summary=s,
        placement_summaries=tuple(
            placement_summary(p, ps, selected.get(p)) for p, ps in per_placement.items()
        ),
        uses_legacy_applied_key=legacy,
        template_has_progressing_rule=progressing_rule,
        spec_hash=spec_hash,
        status_reported=status_reported,
    )


def manifest_work(
    cluster: str,
    conditions: Iterable[Condition] = (),
    *,
    owner: str = "default.hello",
    placement: str = "p",
    generation: int = 1,
    spec_hash: str = TEMPLATE,
    deleting: bool = False,
    name: str = "hello",
) -> ManifestWork:
    return ManifestWork(
        meta=Meta(
            kind="ManifestWork", api_version="work.open-cluster-management.io/v1", namespace=cluster,
            name=name, generation=generation, deletion_timestamp=1.0 if deleting else None,
            labels=MappingProxyType({OWNER_LABEL: owner, PLACEMENT_LABEL: placement}),
        ),
        cluster_name=cluster,
        conditions=tuple(conditions),
        owner=owner,
        placement_name=placement,
        spec_hash=spec_hash,
    )


def work_conditions(applied: Status | None = T, progressing: Status | None = F, degraded: Status | None = F,
                    available: Status | None = T, og: int = 1) -> tuple[Condition, ...]:
    """A ManifestWork's conditions; None leaves a condition out."""
    pairs = (("Applied", applied), ("Available", available), ("Progressing", progressing),
             ("Degraded", degraded))
    return tuple(cond(t, s, og=og) for t, s in pairs if s is not None)


def managed_cluster(name: str, available: Status | None = T, reason: str = "") -> ManagedCluster:
    conditions = () if available is None else (cond("ManagedClusterConditionAvailable", available, reason),)
    return ManagedCluster(
        meta=Meta(kind="ManagedCluster", api_version="cluster.open-cluster-management.io/v1", namespace="",
                  name=name),
        cluster_name=name,
        conditions=conditions,
    )


def placement(name: str, selected: int | None, groups: int = 1, namespace: str = "default") -> Placement:
    return Placement(
        meta=Meta(kind="Placement", api_version="cluster.open-cluster-management.io/v1beta1",
                  namespace=namespace, name=name),
        number_of_selected_clusters=selected,
        decision_groups=groups,
    )


def mwrs_view(
    obj: ManifestWorkReplicaSet | None,
    works: Iterable[ManifestWork] = (),
    placements: Iterable[Placement] = (),
    clusters: Iterable[ManagedCluster] = (),
) -> MwrsView:
    return MwrsView(
        MwrsGroup(
            mwrs=obj,
            manifest_works=tuple(works),
            placements={p.meta.name: p for p in placements},
            managed_clusters={c.meta.name: c for c in clusters},
        )
    )
