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
from exporter.metrics.spec import FamilySpec, KindSpec, Subject, family, lean

IDENTITY: Final[tuple[str, ...]] = ("name", "namespace", "uid")
CLUSTER_IDENTITY = ("name", "uid")  # ManagedClusters are cluster-scoped

MWRS_PHASES: Final = (READY, PROGRESSING, FAILED, "Unknown")
# The rollout status of one cluster's ManifestWork, as the OCM rollout library names it.
ROLLOUT_STATUSES: Final = (TO_APPLY, PROGRESSING, SUCCEEDED, FAILED)
MANAGEDCLUSTER_PHASES: Final = (AVAILABLE, UNAVAILABLE, "Unknown")
DESIRED_CLUSTERS_KEY: Final = "desiredClusters"
_PLACEMENT_KEY = re.compile(r"^placements\[(?P<name>[^\]]*)\]\.(?P<field>\w+)$")

# The texts of the rollout summary's fields, for the MWRS total and each placement's.
_SUMMARY_TEXTS: Final = {
    "total": "The number of clusters with an up-to-date ManifestWork (summary.total)",
    "applied": "The number of clusters whose ManifestWork is Applied (summary.applied)",
    "available": "The number of clusters whose ManifestWork is Available (summary.available)",
    "progressing": "The number of clusters whose ManifestWork is Progressing",
    "degraded": "The number of clusters whose ManifestWork is Degraded (summary.degraded)",
}
# "summary" may not appear in a gauge's name (promtool), hence status_clusters_<field>.
_SUMMARY_FAMILIES: tuple[tuple[str, str], ...] = (
    ("ocm_manifestworkreplicaset_status_clusters", "total"),
    ("ocm_manifestworkreplicaset_status_clusters_applied", "applied"),
    (lean("ocm_manifestworkreplicaset_status_clusters_available"), "available"),
    ("ocm_manifestworkreplicaset_status_clusters_progressing", "progressing"),
    (lean("ocm_manifestworkreplicaset_status_clusters_degraded"), "degraded"),
)
_PLACEMENT_FAMILIES: tuple[tuple[str, str, str], ...] = (
    (lean("ocm_manifestworkreplicaset_placement_desired_clusters"), "desiredClusters",
     "The number of clusters a Placement selects"),
    (lean("ocm_manifestworkreplicaset_placement_clusters"), "total", _SUMMARY_TEXTS["total"]),
    ("ocm_manifestworkreplicaset_placement_clusters_applied", "applied", _SUMMARY_TEXTS["applied"]),
    (lean("ocm_manifestworkreplicaset_placement_clusters_available"), "available",
     _SUMMARY_TEXTS["available"]),
    ("ocm_manifestworkreplicaset_placement_clusters_progressing", "progressing",
     _SUMMARY_TEXTS["progressing"]),
    (lean("ocm_manifestworkreplicaset_placement_clusters_degraded"), "degraded", _SUMMARY_TEXTS["degraded"]),
)
_ROLLOUT_EXTRA: tuple[tuple[str, str, str], ...] = (
    (lean("ocm_manifestworkreplicaset_rollout_outdated_clusters"), "rollout.outdated",
     "whose ManifestWork does not match the current template"),
    ("ocm_manifestworkreplicaset_rollout_missing_clusters", "rollout.missing",
     "selected by a placement but without a ManifestWork"),
    (lean("ocm_manifestworkreplicaset_rollout_without_progressing_clusters"), "rollout.withoutProgressing",
     "whose ManifestWork reports no Progressing condition (the template has no condition rule for it, "
     "so the rollout can never complete)"),
    (lean("ocm_manifestworkreplicaset_rollout_unavailable_clusters"), "rollout.unavailableClusters",
     "whose ManagedCluster is not available (their ManifestWork status is stale)"),
)


def _summary_family(name: str, attr: str) -> FamilySpec:
    return counter_family(name, f"{_SUMMARY_TEXTS[attr]}.", f"summary.{attr}")


def _per_placement(s: Subject[ManifestWorkReplicaSet], field: str) -> Iterable[Sample]:
    for key, value in s.result.counters.items():
        match = _PLACEMENT_KEY.match(key)
        if match and match["field"] == field and value is not None:
            yield (match["name"],), float(value)


def _placement_family(name: str, field: str, text: str) -> FamilySpec:
    def extract(s: Subject[ManifestWorkReplicaSet]) -> Iterable[Sample]:
        return _per_placement(s, field)

    return family(
        name, f"{text}, per placement of a ManifestWorkReplicaSet.", "gauge",
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


MWRS = KindSpec("ManifestWorkReplicaSet", "ocm_manifestworkreplicaset", IDENTITY, (
    info_family(
        lean("ocm_manifestworkreplicaset_info"), "Information about a ManifestWorkReplicaSet.", (),
        lambda o: (), "metadata", compat=False,
    ),
    family(
        "ocm_manifestworkreplicaset_spec_placement_info",
        "The Placements a ManifestWorkReplicaSet rolls out to, with the rollout strategy type of each.",
        "info", ("placement", "rollout_type"),
        "spec.placementRefs[]", _placement_refs,
    ),
    family(
        lean("ocm_manifestworkreplicaset_spec_progress_deadline_seconds"),
        "The rollout progressDeadline of each placement of a ManifestWorkReplicaSet, in seconds "
        "(absent when it is None: no deadline).", "gauge", ("placement",),
        "spec.placementRefs[].rolloutStrategy.<type>.progressDeadline", _progress_deadlines,
    ),
    phase_family(
        lean("ocm_manifestworkreplicaset_status_phase"), "ManifestWorkReplicaSet", MWRS_PHASES, compat=False,
        computed_only=True,
    ),
    *(_summary_family(*f) for f in _SUMMARY_FAMILIES),
    counter_family(
        lean("ocm_manifestworkreplicaset_desired_clusters"),
        "The number of clusters the Placements of a ManifestWorkReplicaSet select (sum over its placements).",
        DESIRED_CLUSTERS_KEY,
    ),
    family(
        lean("ocm_manifestworkreplicaset_rollout_clusters"),
        "The number of clusters of a ManifestWorkReplicaSet in each rollout status, "
        "from their ManifestWorks (the status the OCM rollout strategy acts on).",
        "gauge", ("status",), "ManifestWorks (rollout status per cluster)", _rollout,
    ),
    *(
        counter_family(name, f"The number of clusters of a ManifestWorkReplicaSet {text}.", key)
        for name, key, text in _ROLLOUT_EXTRA
    ),
    *(_placement_family(*f) for f in _PLACEMENT_FAMILIES),
    *condition_families(
        "ManifestWorkReplicaSet",
        status=lean("ocm_manifestworkreplicaset_status_condition"),
        transition=lean("ocm_manifestworkreplicaset_status_condition_last_transition_time"),
        reason=lean("ocm_manifestworkreplicaset_status_condition_reason"),
        computed="ocm_manifestworkreplicaset_status_condition_computed",
        mismatch="ocm_manifestworkreplicaset_status_condition_mismatch",
        compat=False,
    ),
    *metadata_families(
        "ManifestWorkReplicaSet",
        created="ocm_manifestworkreplicaset_created",
        deletion=lean("ocm_manifestworkreplicaset_deletion_timestamp_seconds"),
        labels="ocm_manifestworkreplicaset_labels",
        annotations="ocm_manifestworkreplicaset_annotations",
        compat=False,
    ),
    findings_family(lean("ocm_manifestworkreplicaset_finding"), "ManifestWorkReplicaSet", with_cluster=False),
))

OCM_FINDINGS = findings_family("ocm_finding", "Open Cluster Management", with_cluster=False)


def _mw_info(o: ManifestWork) -> tuple[str, ...]:
    owner = o.owner.partition(".")
    return (owner[0] if owner[1] else "", owner[2] if owner[1] else "", o.placement_name)


def _placement_number(read: Callable[[Placement], int | None]) -> Callable[[Any], float | None]:
    def inner(o: Placement) -> float | None:
        value = read(o)
        return None if value is None else float(value)

    return inner


MANIFESTWORK = KindSpec("ManifestWork", "ocm_manifestwork", IDENTITY, (
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
    *condition_families(
        "ManifestWork",
        status="ocm_manifestwork_status_condition",
        transition="ocm_manifestwork_status_condition_last_transition_time",
        reason="ocm_manifestwork_status_condition_reason",
        computed="ocm_manifestwork_status_condition_computed",
        mismatch="ocm_manifestwork_status_condition_mismatch",
        compat=False,
    ),
    *metadata_families(
        "ManifestWork",
        created="ocm_manifestwork_created",
        deletion="ocm_manifestwork_deletion_timestamp_seconds",
        labels="ocm_manifestwork_labels",
        annotations="ocm_manifestwork_annotations",
        compat=False,
    ),
    OCM_FINDINGS,
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


def _resource_family(name: str, which: str) -> FamilySpec:
    return family(
        name,
        f"The {which} of a ManagedCluster's nodes as its registration agent reports it "
        f"(status.{which}): cpu in cores, memory in bytes; absent while unreported. "
        "Labels as kube_node_status_" + which + ".",
        "gauge", ("resource", "unit"), f"status.{which}.cpu, status.{which}.memory", _resources(which),
        reads="object", fields=(f"{which}_cpu", f"{which}_memory"),
    )


MANAGEDCLUSTER = KindSpec("ManagedCluster", "ocm_managedcluster", CLUSTER_IDENTITY, (
    phase_family(
        lean("ocm_managedcluster_status_phase"), "ManagedCluster (from ManagedClusterConditionAvailable)",
        MANAGEDCLUSTER_PHASES, compat=False, computed_only=True,
    ),
    info_family(
        lean("ocm_managedcluster_info"),
        "Information about a ManagedCluster: its Kubernetes version (status.version.kubernetes) and "
        "the well-known cluster claims it publishes (cluster_id: id.k8s.io, platform: "
        "platform.open-cluster-management.io, product: product.open-cluster-management.io, "
        "region: region.open-cluster-management.io); empty when not reported.",
        ("kubernetes_version", "cluster_id", "platform", "product", "region"), _managedcluster_info,
        "metadata, status.version, status.clusterClaims", compat=False,
        fields=("kubernetes_version", "cluster_id", "platform", "product", "region"),
    ),
    _resource_family("ocm_managedcluster_status_capacity", "capacity"),
    _resource_family("ocm_managedcluster_status_allocatable", "allocatable"),
    *condition_families(
        "ManagedCluster",
        status=lean("ocm_managedcluster_status_condition"),
        transition="ocm_managedcluster_status_condition_last_transition_time",
        reason="ocm_managedcluster_status_condition_reason",
        computed="ocm_managedcluster_status_condition_computed",
        mismatch="ocm_managedcluster_status_condition_mismatch",
        compat=False,
    ),
    *metadata_families(
        "ManagedCluster",
        created="ocm_managedcluster_created",
        deletion=lean("ocm_managedcluster_deletion_timestamp_seconds"),
        labels="ocm_managedcluster_labels",
        annotations="ocm_managedcluster_annotations",
        compat=False,
    ),
    OCM_FINDINGS,
))

# The namespace of a ManagedClusterAddOn is its managed cluster; its name is the add-on's.
MANAGEDCLUSTERADDON = KindSpec("ManagedClusterAddOn", "ocm_managedclusteraddon", IDENTITY, (
    info_family(
        "ocm_managedclusteraddon_info",
        "Information about a ManagedClusterAddOn: one add-on (name) installed on one managed cluster "
        "(namespace).", (), lambda o: (), "metadata", compat=False,
    ),
    *condition_families(
        "ManagedClusterAddOn",
        status=lean("ocm_managedclusteraddon_status_condition"),
        transition="ocm_managedclusteraddon_status_condition_last_transition_time",
        reason=lean("ocm_managedclusteraddon_status_condition_reason"),
        computed="ocm_managedclusteraddon_status_condition_computed",
        mismatch="ocm_managedclusteraddon_status_condition_mismatch",
        compat=False,
    ),
    *metadata_families(
        "ManagedClusterAddOn",
        created="ocm_managedclusteraddon_created",
        deletion=lean("ocm_managedclusteraddon_deletion_timestamp_seconds"),
        labels="ocm_managedclusteraddon_labels",
        annotations="ocm_managedclusteraddon_annotations",
        compat=False,
    ),
    OCM_FINDINGS,
))

PLACEMENT = KindSpec("Placement", "ocm_placement", IDENTITY, (
    field_family(
        "ocm_placement_status_selected_clusters", "The number of clusters a Placement selects.",
        "status.numberOfSelectedClusters", _placement_number(lambda o: o.number_of_selected_clusters),
    ),
    field_family(
        "ocm_placement_status_decision_groups", "The number of decision groups of a Placement.",
        "status.decisionGroups", _placement_number(lambda o: o.decision_groups),
    ),
    *condition_families(
        "Placement",
        status="ocm_placement_status_condition",
        transition="ocm_placement_status_condition_last_transition_time",
        reason="ocm_placement_status_condition_reason",
        computed="ocm_placement_status_condition_computed",
        mismatch="ocm_placement_status_condition_mismatch",
        compat=False,
    ),
    *metadata_families(
        "Placement",
        created="ocm_placement_created",
        deletion="ocm_placement_deletion_timestamp_seconds",
        labels="ocm_placement_labels",
        annotations="ocm_placement_annotations",
        compat=False,
    ),
    OCM_FINDINGS,
))

KINDS: tuple[KindSpec, ...] = (MWRS, MANIFESTWORK, MANAGEDCLUSTER, MANAGEDCLUSTERADDON, PLACEMENT)
PROJECTIONS: dict[type[Any], KindSpec] = {
    ManifestWorkReplicaSet: MWRS,
    ManifestWork: MANIFESTWORK,
    ManagedCluster: MANAGEDCLUSTER,
    ManagedClusterAddOn: MANAGEDCLUSTERADDON,
    Placement: PLACEMENT,
}
