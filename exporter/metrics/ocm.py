"""The Open Cluster Management families: ManifestWorkReplicaSets in full, and what users need of
ManifestWorks, ManagedClusters, ManagedClusterAddOns and Placements without a series per manifest
resource.

Owns which families each OCM kind has and how each is read from a projection and its Result.
Owns no formatting, no caching and no condition logic. Every label is bounded: ManifestWorks are
described by their work-level conditions only, never by ``status.resourceStatus``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, Final

from exporter.engine.model import (
    ManagedCluster,
    ManagedClusterAddOn,
    ManifestWork,
    ManifestWorkReplicaSet,
    Placement,
)
from exporter.engine.parse_fields import parse_duration
from exporter.engine.vocabulary import (
    AVAILABLE,
    FAILED,
    PROGRESSING,
    READY,
    SUCCEEDED,
    TO_APPLY,
    UNAVAILABLE,
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
IDENTITY: Final[tuple[str, ...]] = ("name", "namespace", "uid")
CLUSTER_IDENTITY = ("name", "uid")  # ManagedClusters are cluster-scoped

MWRS_PHASES: Final = (READY, PROGRESSING, FAILED, "Unknown")
# The rollout status of one cluster's ManifestWork, as the OCM rollout library names it.
ROLLOUT_STATUSES: Final = (TO_APPLY, PROGRESSING, SUCCEEDED, FAILED)
MANAGEDCLUSTER_PHASES: Final = (AVAILABLE, UNAVAILABLE, "Unknown")
DESIRED_CLUSTERS_KEY: Final = "desiredClusters"
_PLACEMENT_KEY = re.compile(r"^placements\[(?P<name>[^\]]*)\]\.(?P<field>\w+)$")

_SUMMARY_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("", "total", "The number of clusters with an up-to-date ManifestWork (summary.total)"),
    ("_applied", "applied", "The number of clusters whose ManifestWork is Applied (summary.applied)"),
    ("_available", "available", "The number of clusters whose ManifestWork is Available (summary.available)"),
    ("_progressing", "progressing", "The number of clusters whose ManifestWork is Progressing"),
    ("_degraded", "degraded", "The number of clusters whose ManifestWork is Degraded (summary.degraded)"),
)
_ROLLOUT_EXTRA: tuple[tuple[str, str, str], ...] = (
    ("outdated", "rollout.outdated", "whose ManifestWork does not match the current template"),
    ("missing", "rollout.missing", "selected by a placement but without a ManifestWork"),
    ("without_progressing", "rollout.withoutProgressing",
     "whose ManifestWork reports no Progressing condition (the template has no condition rule for it, "
     "so the rollout can never complete)"),
    ("unavailable", "rollout.unavailableClusters",
     "whose ManagedCluster is not available (their ManifestWork status is stale)"),
)


def _summary_family(suffix: str, attr: str, text: str) -> FamilySpec:
    # "summary" may not appear in a gauge's name (promtool), hence status_clusters_<field>.
    return counter_family(f"{P_MWRS}_status_clusters{suffix}", f"{text}.", f"summary.{attr}")


def _per_placement(s: Subject[ManifestWorkReplicaSet], field: str) -> Iterable[Sample]:
    for key, value in s.result.counters.items():
        match = _PLACEMENT_KEY.match(key)
        if match and match["field"] == field and value is not None:
            yield (match["name"],), float(value)


def _placement_family(suffix: str, field: str, text: str) -> FamilySpec:
    def extract(s: Subject[ManifestWorkReplicaSet]) -> Iterable[Sample]:
        return _per_placement(s, field)

    return family(
        f"{P_MWRS}_placement_{suffix}", f"{text}, per placement of a ManifestWorkReplicaSet.", "gauge",
        ("placement",), f"status.placementSummary[].summary.{field}", extract,
    )


def _placement_refs(s: Subject[ManifestWorkReplicaSet]) -> Iterable[Sample]:
    refs = {r.name: r for r in s.obj.placement_refs}
    return [((r.name, r.rollout_type), 1.0) for r in refs.values()]


def _progress_deadlines(s: Subject[ManifestWorkReplicaSet]) -> Iterable[Sample]:
    # "None" (the default) means wait forever: no series, so alerts fall back to a fixed age.
    for ref in s.obj.placement_refs:
        seconds = parse_duration(ref.progress_deadline) if ref.progress_deadline != "None" else None
        if seconds is not None:
            yield (ref.name,), float(seconds)


def _rollout(s: Subject[ManifestWorkReplicaSet]) -> Iterable[Sample]:
    counters = s.result.counters
    keys = [(st, f"rollout.{st[0].lower()}{st[1:]}") for st in ROLLOUT_STATUSES]
    if not any(key in counters for _, key in keys):
        return []
    return [((st,), float(counters.get(key) or 0)) for st, key in keys]


MWRS = KindSpec("ManifestWorkReplicaSet", P_MWRS, IDENTITY, (
    info_family(f"{P_MWRS}_info", "Information about a ManifestWorkReplicaSet.", (), lambda o: (), "metadata",
                compat=False),
    family(
        f"{P_MWRS}_spec_placement_info", "The Placements a ManifestWorkReplicaSet rolls out to, with the "
        "rollout strategy type of each.", "info", ("placement", "rollout_type"),
        "spec.placementRefs[]", _placement_refs,
    ),
    family(
        f"{P_MWRS}_spec_progress_deadline_seconds", "The rollout progressDeadline of each placement of a "
        "ManifestWorkReplicaSet, in seconds (absent when it is None: no deadline).", "gauge", ("placement",),
        "spec.placementRefs[].rolloutStrategy.<type>.progressDeadline", _progress_deadlines,
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
        "from their ManifestWorks (the status the OCM rollout strategy acts on).",
        "gauge", ("status",), "ManifestWorks (rollout status per cluster)", _rollout,
    ),
    *(
        counter_family(f"{P_MWRS}_rollout_{suffix}_clusters",
                       f"The number of clusters of a ManifestWorkReplicaSet {text}.", key)
        for suffix, key, text in _ROLLOUT_EXTRA
    ),
    _placement_family("desired_clusters", "desiredClusters", "The number of clusters a Placement selects"),
    *(_placement_family(f"clusters{suffix}", attr, text) for suffix, attr, text in _SUMMARY_FIELDS),
    *condition_families(P_MWRS, "ManifestWorkReplicaSet", compat=False),
    *metadata_families(P_MWRS, "ManifestWorkReplicaSet", paused_annotation=False, compat=False),
    findings_family(f"{P_MWRS}_finding", "ManifestWorkReplicaSet", with_cluster=False),
))

OCM_FINDINGS = findings_family("ocm_finding", "Open Cluster Management", with_cluster=False)


def _with(prefix: str, kind: str, *extra: FamilySpec) -> tuple[FamilySpec, ...]:
    return (
        *extra,
        *condition_families(prefix, kind, compat=False),
        *metadata_families(prefix, kind, paused_annotation=False, compat=False),
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
    family(
        "ocm_manifestwork_rollout_status",
        "The rollout status of a ManifestWork owned by a ManifestWorkReplicaSet, one series per status "
        f"({', '.join(ROLLOUT_STATUSES)}).",
        "stateset", ("status",), "status.conditions (Applied, Progressing, Degraded)",
        lambda s: [((st,), float(st == s.result.phase)) for st in ROLLOUT_STATUSES] if s.result.phase else [],
    ),
    info_family(
        "ocm_manifestwork_info", "Information about a ManifestWork (its namespace is the managed cluster).",
        ("manifestworkreplicaset_namespace", "manifestworkreplicaset_name", "placement"), _mw_info,
        "metadata.labels", compat=False,
    ),
))

def _managedcluster_info(o: ManagedCluster) -> tuple[str, ...]:
    return (o.kubernetes_version, o.cluster_id, o.platform, o.product, o.region)


def _resources(which: str) -> Callable[[Subject[ManagedCluster]], Iterable[Sample]]:
    def extract(s: Subject[ManagedCluster]) -> Iterable[Sample]:
        o = s.obj
        cpu, memory = (o.capacity_cpu, o.capacity_memory) if which == "capacity" else (
            o.allocatable_cpu, o.allocatable_memory)
        out: list[Sample] = []
        if cpu is not None:
            out.append((("cpu", "core"), cpu))
        if memory is not None:
            out.append((("memory", "byte"), memory))
        return out

    return extract


def _resource_family(which: str) -> FamilySpec:
    return family(
        f"ocm_managedcluster_status_{which}",
        f"The {which} of a ManagedCluster's nodes as its registration agent reports it "
        f"(status.{which}): cpu in cores, memory in bytes; absent while unreported. "
        "Labels as kube_node_status_" + which + ".",
        "gauge", ("resource", "unit"), f"status.{which}.cpu, status.{which}.memory", _resources(which),
        reads="object", fields=(f"{which}_cpu", f"{which}_memory"),
    )


MANAGEDCLUSTER = KindSpec("ManagedCluster", "ocm_managedcluster", CLUSTER_IDENTITY, _with(
    "ocm_managedcluster", "ManagedCluster",
    phase_family("ocm_managedcluster", "ManagedCluster (from ManagedClusterConditionAvailable)",
                 MANAGEDCLUSTER_PHASES, compat=False),
    info_family(
        "ocm_managedcluster_info",
        "Information about a ManagedCluster: its Kubernetes version (status.version.kubernetes) and "
        "the well-known cluster claims it publishes (cluster_id: id.k8s.io, platform: "
        "platform.open-cluster-management.io, product: product.open-cluster-management.io, "
        "region: region.open-cluster-management.io); empty when not reported.",
        ("kubernetes_version", "cluster_id", "platform", "product", "region"), _managedcluster_info,
        "metadata, status.version, status.clusterClaims", compat=False,
        fields=("kubernetes_version", "cluster_id", "platform", "product", "region"),
    ),
    _resource_family("capacity"),
    _resource_family("allocatable"),
))

# The namespace of a ManagedClusterAddOn is its managed cluster; its name is the add-on's.
MANAGEDCLUSTERADDON = KindSpec("ManagedClusterAddOn", "ocm_managedclusteraddon", IDENTITY, _with(
    "ocm_managedclusteraddon", "ManagedClusterAddOn",
    info_family(
        "ocm_managedclusteraddon_info",
        "Information about a ManagedClusterAddOn: one add-on (name) installed on one managed cluster "
        "(namespace).", (), lambda o: (), "metadata", compat=False,
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

KINDS: tuple[KindSpec, ...] = (MWRS, MANIFESTWORK, MANAGEDCLUSTER, MANAGEDCLUSTERADDON, PLACEMENT)
PROJECTIONS: dict[type[Any], KindSpec] = {
    ManifestWorkReplicaSet: MWRS,
    ManifestWork: MANIFESTWORK,
    ManagedCluster: MANAGEDCLUSTER,
    ManagedClusterAddOn: MANAGEDCLUSTERADDON,
    Placement: PLACEMENT,
}
