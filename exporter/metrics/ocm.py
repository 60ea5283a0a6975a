"""The Open Cluster Management families: ManifestWorkReplicaSets in full, and what users need of
ManifestWorks, ManagedClusters and Placements without a series per manifest resource.

Owns which families each OCM kind has and how each is read from a projection and its Result.
Owns no formatting, no caching and no condition logic. Every label is bounded: ManifestWorks are
described by their work-level conditions only, never by ``status.resourceStatus``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from exporter.engine.model import (
    ManagedCluster,
    ManifestWork,
    ManifestWorkReplicaSet,
    Placement,
    PlacementSummary,
)
from exporter.metrics.common import (
    condition_families,
    counter_family,
    field_family,
    findings_family,
    info_family,
    metadata_families,
    phase_family,
)
from exporter.metrics.exposition import Sample
from exporter.metrics.spec import FamilySpec, KindSpec, Subject, family

P_MWRS = "ocm_manifestworkreplicaset"
IDENTITY = ("name", "namespace", "uid")
CLUSTER_IDENTITY = ("name", "uid")  # ManagedClusters are cluster-scoped

MWRS_PHASES: Final = ("Pending", "Progressing", "Ready", "Failed", "Unknown")
# The rollout status of one cluster's ManifestWork, as the OCM rollout library names it.
ROLLOUT_STATUSES: Final = ("ToApply", "Progressing", "Succeeded", "Failed", "TimeOut", "Skip")
DESIRED_CLUSTERS_KEY: Final = "desiredClusters"
ROLLOUT_KEY_PREFIX: Final = "rollout."

_SUMMARY_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("clusters", "total", "The number of clusters with an up-to-date ManifestWork (summary.total)"),
    ("applied", "applied", "The number of clusters whose ManifestWork is Applied (summary.applied)"),
    ("available", "available", "The number of clusters whose ManifestWork is Available (summary.available)"),
    ("progressing", "progressing", "The number of clusters whose ManifestWork is Progressing"),
    ("degraded", "degraded", "The number of clusters whose ManifestWork is Degraded (summary.degraded)"),
)


def _summary_family(suffix: str, attr: str, text: str) -> FamilySpec:
    def read(o: ManifestWorkReplicaSet) -> float | None:
        value: int = getattr(o.summary, attr)
        return float(value) if o.status_reported else None

    return field_family(f"{P_MWRS}_status_summary_{suffix}", f"{text}.", f"status.summary.{attr}", read)


def _placement_family(suffix: str, attr: str, text: str) -> FamilySpec:
    def extract(s: Subject[ManifestWorkReplicaSet]) -> Iterable[Sample]:
        return [((p.name,), float(getattr(p.summary, attr))) for p in _placements(s.obj)]

    return family(
        f"{P_MWRS}_placement_summary_{suffix}", f"{text}, per placement.", "gauge", ("placement",),
        f"status.placementSummary[].summary.{attr}", extract,
    )


def _placements(o: ManifestWorkReplicaSet) -> Iterable[PlacementSummary]:
    # A placement listed twice would give duplicate series; the first entry wins.
    return {p.name: p for p in reversed(o.placement_summaries)}.values()


def _placement_selected(s: Subject[ManifestWorkReplicaSet]) -> Iterable[Sample]:
    return [
        ((p.name,), float(p.selected_clusters)) for p in _placements(s.obj) if p.selected_clusters is not None
    ]


def _placement_refs(s: Subject[ManifestWorkReplicaSet]) -> Iterable[Sample]:
    refs = {r.name: r for r in s.obj.placement_refs}
    return [((r.name, r.rollout_type), 1.0) for r in refs.values()]


def _rollout(s: Subject[ManifestWorkReplicaSet]) -> Iterable[Sample]:
    counters = s.result.counters
    if not any(k.startswith(ROLLOUT_KEY_PREFIX) for k in counters):
        return []
    return [((st,), float(counters.get(ROLLOUT_KEY_PREFIX + st) or 0)) for st in ROLLOUT_STATUSES]


MWRS = KindSpec("ManifestWorkReplicaSet", P_MWRS, IDENTITY, (
    info_family(f"{P_MWRS}_info", "Information about a ManifestWorkReplicaSet.", (), lambda o: (), "metadata",
                compat=False),
    family(
        f"{P_MWRS}_spec_placement_info", "The Placements a ManifestWorkReplicaSet rolls out to, with the "
        "rollout strategy type of each.", "info", ("placement", "rollout_type"),
        "spec.placementRefs[]", _placement_refs,
    ),
    phase_family(P_MWRS, "ManifestWorkReplicaSet", MWRS_PHASES, compat=False),
    *(_summary_family(*f) for f in _SUMMARY_FIELDS),
    counter_family(
        f"{P_MWRS}_desired_clusters",
        "The number of clusters the Placements of a ManifestWorkReplicaSet select (sum over its placements).",
        DESIRED_CLUSTERS_KEY,
    ),
    family(
        f"{P_MWRS}_rollout_clusters",
        "The number of clusters of a ManifestWorkReplicaSet in each rollout status, "
        "from their ManifestWorks.",
        "gauge", ("status",), "ManifestWorks (rollout status per cluster)", _rollout,
    ),
    *(_placement_family(*f) for f in _SUMMARY_FIELDS),
    family(
        f"{P_MWRS}_placement_selected_clusters",
        "The number of clusters a placement selects, as the ManifestWorkReplicaSet last saw it.",
        "gauge", ("placement",), "status.placementSummary[].availableDecisionGroups", _placement_selected,
    ),
    *condition_families(P_MWRS, "ManifestWorkReplicaSet"),
    *metadata_families(P_MWRS, "ManifestWorkReplicaSet", paused_annotation=False),
    findings_family(f"{P_MWRS}_finding", "ManifestWorkReplicaSet", with_cluster=False),
))

OCM_FINDINGS = findings_family("ocm_finding", "Open Cluster Management", with_cluster=False)


def _with(prefix: str, kind: str, *extra: FamilySpec) -> tuple[FamilySpec, ...]:
    return (
        *extra,
        *condition_families(prefix, kind),
        *metadata_families(prefix, kind, paused_annotation=False),
        OCM_FINDINGS,
    )


def _mw_info(o: ManifestWork) -> tuple[str, ...]:
    owner = o.owner.partition(".")
    return (owner[0] if owner[1] else "", owner[2] if owner[1] else "", o.placement_name)


def _placement_number(read: Callable[[Placement], int | None]) -> Callable[[Any], float | None]:
    def inner(o: Placement) -> float | None:
        value = read(o)
        return None if value is None else float(value)

    return inner


MANIFESTWORK = KindSpec("ManifestWork", "ocm_manifestwork", IDENTITY, _with(
    "ocm_manifestwork", "ManifestWork",
    info_family(
        "ocm_manifestwork_info", "Information about a ManifestWork (its namespace is the managed cluster).",
        ("manifestworkreplicaset_namespace", "manifestworkreplicaset_name", "placement"), _mw_info,
        "metadata.labels", compat=False,
    ),
))

MANAGEDCLUSTER = KindSpec("ManagedCluster", "ocm_managedcluster", CLUSTER_IDENTITY, _with(
    "ocm_managedcluster", "ManagedCluster",
    info_family(
        "ocm_managedcluster_info", "Information about a ManagedCluster.", (), lambda o: (), "metadata",
        compat=False,
    ),
))

PLACEMENT = KindSpec("Placement", "ocm_placement", IDENTITY, _with(
    "ocm_placement", "Placement",
    field_family(
        "ocm_placement_status_selected_clusters", "The number of clusters a Placement selects.",
        "status.numberOfSelectedClusters", _placement_number(lambda o: o.number_of_selected_clusters),
    ),
    field_family(
        "ocm_placement_status_decision_groups", "The number of decision groups of a Placement.",
        "status.decisionGroups", _placement_number(lambda o: o.decision_groups),
    ),
))

KINDS: tuple[KindSpec, ...] = (MWRS, MANIFESTWORK, MANAGEDCLUSTER, PLACEMENT)
PROJECTIONS: dict[type[Any], KindSpec] = {
    ManifestWorkReplicaSet: MWRS,
    ManifestWork: MANIFESTWORK,
    ManagedCluster: MANAGEDCLUSTER,
    Placement: PLACEMENT,
}
