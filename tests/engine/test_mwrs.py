"""MWRS rules branch by branch: Progressing, Ready, desired clusters, counters and findings.

The seed's story and the reference fixtures have their own files (test_seed004.py,
test_mwrs_fixtures.py); here each case is one branch of a rule, built directly from projections.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from exporter.engine.model import Condition, ManifestWorkReplicaSet, Status
from exporter.engine.mwrs import compute_mwrs
from exporter.metrics.reasons import bounded_reason

from .builders import (
    F,
    T,
    U,
    cond,
    managed_cluster,
    manifest_work,
    mwrs,
    mwrs_view,
    placement,
    summary,
    work_conditions,
)

NOW = 1_780_000_000.0
VERIFIED = cond("PlacementVerified", T, "AsExpected")
ROLLED_OUT = cond("PlacementRolledOut", T, "Complete")
NOT_ROLLED_OUT = cond("PlacementRolledOut", F, "Progressing")


@dataclass
class Case:
    obj: ManifestWorkReplicaSet
    progressing: tuple[Status, str, str]
    ready: tuple[Status, str, str]
    placements: list[tuple[str, int | None]] = field(default_factory=list)


def _shape(c: Condition | None) -> tuple[Status, str, str] | None:
    return None if c is None else (c.status, c.reason, c.message)


AVAILABLE_2_OF_2 = (T, "AllClustersAvailable", "ManifestWorks available in 2/2 clusters")

CASES = {
    "owner label reported invalid": Case(
        mwrs(conditions=[cond("ManifestworkApplied", F, "InvalidManifestWorkName", "bad label")]),
        (F, "InvalidManifestWorkName", "bad label"),
        (F, "InvalidManifestWorkName", "bad label"),
    ),
    "owner label reported invalid, ManifestWorkApplied spelling, no message": Case(
        mwrs(conditions=[cond("ManifestWorkApplied", F, "InvalidManifestWorkName")]),
        (F, "InvalidManifestWorkName", 'ManifestWork owner label value "default.hello" is not valid'),
        (F, "InvalidManifestWorkName", 'ManifestWork owner label value "default.hello" is not valid'),
    ),
    "no status yet": Case(
        mwrs(summary(), selected={"p": 2}, status_reported=False),
        (U, "NotYetReported", "No status reported by the MWRS controller yet"),
        (U, "NotYetReported", "No status reported by the MWRS controller yet"),
    ),
    "placement not found, placements not watched": Case(
        mwrs(summary(2, 2, 2), conditions=[cond("PlacementVerified", F, "PlacementDecisionNotFound")]),
        (U, "PlacementNotFound", "A Placement not found: cluster counts are frozen at their last values"),
        (U, "PlacementNotFound", "A Placement not found: cluster counts are frozen at their last values"),
    ),
    "rollout handler error": Case(
        mwrs(summary(2, 2, 2), conditions=[cond("PlacementVerified", F, "NotAsExpected")]),
        (U, "PlacementNotVerified", "PlacementVerified is False (NotAsExpected): cluster counts are stale"),
        (U, "PlacementNotVerified", "PlacementVerified is False (NotAsExpected): cluster counts are stale"),
    ),
    "placement missing from placementSummary": Case(
        mwrs(summary(2, 2, 2), selected={"a": 2, "b": 1}, per_placement={"a": summary(2, 2, 2)},
             conditions=[VERIFIED]),
        (U, "PlacementSummaryMissing",
         "No rollout summary for placement b: the controller could not roll out to it"),
        (U, "PlacementSummaryMissing",
         "No rollout summary for placement b: the controller could not roll out to it"),
        placements=[("a", 2), ("b", 1)],
    ),
    "selected clusters unknown (no Placement, unreadable text)": Case(
        mwrs(summary(2, 2, 2), selected={"p": None}),
        (U, "SelectedClustersUnknown", "Number of clusters selected by placement p unknown"),
        (U, "SelectedClustersUnknown", "Number of clusters selected by placement p unknown"),
    ),
    "no clusters selected": Case(
        mwrs(summary(), selected={"a": 0, "b": 0}, per_placement={"a": summary(), "b": summary()}),
        (F, "NoClustersSelected", "No clusters selected by placements a, b"),
        (F, "NoClustersSelected", "No clusters selected by placements a, b"),
    ),
    "degraded cluster": Case(
        mwrs(summary(3, 3, 2, progressing=1, degraded=1)),
        (T, "RolloutDegraded", "1 of 3 clusters reporting degraded state"),
        (F, "NotAllClustersAvailable", "ManifestWorks available in 2/3 clusters, degraded in 1/3 clusters"),
    ),
    "template without Progressing rule": Case(
        mwrs(summary(2, 2, 2), progressing_rule=False, conditions=[NOT_ROLLED_OUT]),
        (T, "ProgressingRuleMissing", "2 of 2 clusters reporting progressing state; the rollout cannot "
         "complete: the ManifestWork template has no conditionRule for the Progressing condition"),
        AVAILABLE_2_OF_2,
    ),
    "cluster progressing": Case(
        mwrs(summary(1, 1, 0, progressing=1), selected={"p": 2}),
        (T, "RollingOutToClusters", "1 of 2 clusters reporting progressing state"),
        (F, "NotAllClustersAvailable", "ManifestWorks available in 0/2 clusters"),
    ),
    "reached cluster not yet available, none progressing": Case(
        mwrs(summary(2, 1, 1), selected={"p": 2}),
        (T, "RollingOutToClusters", "2 of 2 clusters reporting progressing state"),
        (F, "NotAllClustersAvailable", "ManifestWorks available in 1/2 clusters"),
    ),
    "rollout not started": Case(
        mwrs(summary(), selected={"p": 2}),
        (T, "RollingOutToClusters", "0 of 2 clusters reporting progressing state"),
        (F, "NotAllClustersAvailable", "ManifestWorks available in 0/2 clusters"),
    ),
    "progressive rollout waiting for the next clusters": Case(
        mwrs(summary(1, 1, 1), selected={"p": 3}),
        (T, "Paused", "Rollout is paused to wait for progressive rules"),
        (F, "NotAllClustersAvailable", "ManifestWorks available in 1/3 clusters"),
    ),
    "All strategy with clusters not reached is not paused": Case(
        mwrs(summary(1, 1, 1), selected={"p": 3}, rollout_type="All"),
        (T, "RollingOutToClusters", "1 of 3 clusters reporting progressing state"),
        (F, "NotAllClustersAvailable", "ManifestWorks available in 1/3 clusters"),
    ),
    "counts complete but PlacementRolledOut False": Case(
        mwrs(summary(2, 2, 2), conditions=[VERIFIED, NOT_ROLLED_OUT]),
        (T, "RollingOutToClusters", "2 of 2 clusters reporting progressing state"),
        AVAILABLE_2_OF_2,
    ),
    "complete": Case(
        mwrs(summary(2, 2, 2), conditions=[VERIFIED, ROLLED_OUT]),
        (F, "AllClustersReady", "2 of 2 clusters reporting Completed state"),
        AVAILABLE_2_OF_2,
    ),
    "complete without PlacementRolledOut (older releases)": Case(
        mwrs(summary(2, 2, 2)),
        (F, "AllClustersReady", "2 of 2 clusters reporting Completed state"),
        AVAILABLE_2_OF_2,
    ),
    "conditions without observedGeneration, lastTransitionTime or message": Case(
        mwrs(summary(2, 2, 2),
             conditions=[Condition("PlacementVerified", T), Condition("PlacementRolledOut", T)]),
        (F, "AllClustersReady", "2 of 2 clusters reporting Completed state"),
        AVAILABLE_2_OF_2,
    ),
    "selection shrank, summary not yet updated": Case(
        mwrs(summary(3, 3, 3), selected={"p": 2}),
        (T, "RollingOutToClusters", "3 of 2 clusters reporting progressing state"),
        (T, "AllClustersAvailable", "ManifestWorks available in 3/2 clusters"),
    ),
    "Placement status wins over the placementSummary text": Case(
        mwrs(summary(2, 2, 2), selected={"p": 2}),
        (T, "Paused", "Rollout is paused to wait for progressive rules"),
        (F, "NotAllClustersAvailable", "ManifestWorks available in 2/4 clusters"),
        placements=[("p", 4)],
    ),
    "Placement without status falls back to the text": Case(
        mwrs(summary(2, 2, 2), selected={"p": 2}),
        (F, "AllClustersReady", "2 of 2 clusters reporting Completed state"),
        AVAILABLE_2_OF_2,
        placements=[("p", None)],
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_progressing_and_ready(case: Case) -> None:
    view = mwrs_view(case.obj, placements=[placement(n, s) for n, s in case.placements])
    computed = compute_mwrs(case.obj, view, NOW)
    assert _shape(computed.condition("Progressing")) == case.progressing
    assert _shape(computed.condition("Ready")) == case.ready
    assert [c.type for c in computed.conditions] == ["Progressing", "Ready"]
    # the reason-label allow-list is complete: no computed reason is served as Other
    assert all(bounded_reason(c.type, c.reason, computed=True) == c.reason for c in computed.conditions)
    assert all(c.last_transition_time is None for c in computed.conditions)  # evaluate.py fills it


def test_desired_clusters_sum_over_placements_and_per_placement_counters() -> None:
    obj = mwrs(summary(5, 5, 4, progressing=1), selected={"a": 2, "b": 3},
               per_placement={"a": summary(2, 2, 2), "b": summary(3, 3, 2, progressing=1)})
    counters = compute_mwrs(obj, mwrs_view(obj, placements=[placement("b", 3)]), NOW).counters
    assert counters["desiredClusters"] == 5
    assert counters["summary.total"] == 5
    assert counters["summary.progressing"] == 1
    assert counters["placements[a].desiredClusters"] == 2  # from the text
    assert counters["placements[b].desiredClusters"] == 3  # from the Placement
    assert counters["placements[b].available"] == 2


def test_counters_unset_before_the_controller_reports() -> None:
    obj = mwrs(summary(), selected={"p": 2}, per_placement={}, status_reported=False)
    counters = compute_mwrs(obj, mwrs_view(obj, placements=[placement("p", 2)]), NOW).counters
    assert counters["desiredClusters"] == 2
    assert counters["summary.total"] is None
    assert counters["placements[p].total"] is None
    assert not any(k.startswith("rollout.") for k in counters)


def test_rollout_counts_from_manifestworks() -> None:
    obj = mwrs(summary(3, 3, 2, progressing=1), selected={"p": 5})
    works = [
        manifest_work("c1", work_conditions()),  # Succeeded
        manifest_work("c2", work_conditions(progressing=T)),  # Progressing
        manifest_work("c3", work_conditions(progressing=T, degraded=T)),  # Failed
        manifest_work("c4", work_conditions(), spec_hash="old"),  # outdated → ToApply
        manifest_work("c5", work_conditions(), deleting=True),  # being deleted: not counted
        manifest_work("x1", work_conditions(), owner="default.other"),  # another MWRS's
    ]
    counters = compute_mwrs(obj, mwrs_view(obj, works=works), NOW).counters
    assert counters["rollout.succeeded"] == 1
    assert counters["rollout.progressing"] == 1
    assert counters["rollout.failed"] == 1
    assert counters["rollout.outdated"] == 1
    assert counters["rollout.missing"] == 1  # 5 selected, 4 ManifestWorks
    assert counters["rollout.toApply"] == 2


FINDINGS = {
    "managed cluster not available": (
        mwrs(summary(2, 2, 2), conditions=[VERIFIED, ROLLED_OUT]),
        [manifest_work("c1", work_conditions()), manifest_work("c2", work_conditions())],
        [managed_cluster("c1"), managed_cluster("c2", U, "ManagedClusterLeaseUpdateStopped")],
        ["ManagedClusterUnavailable"],
    ),
    "unknown managed cluster is not reported": (
        mwrs(summary(1, 1, 1), conditions=[VERIFIED, ROLLED_OUT]),
        [manifest_work("c1", work_conditions())],
        [],
        [],
    ),
    "ManifestWork applied without Progressing while the template has the rule": (
        mwrs(summary(1, 1, 1)),
        [manifest_work("c1", work_conditions(progressing=None))],
        [],
        ["ProgressingRuleMissing"],
    ),
    "template unreadable, every ManifestWork lacks Progressing": (
        mwrs(summary(1, 1, 1), progressing_rule=None),
        [manifest_work("c1", work_conditions(progressing=None))],
        [],
        ["ProgressingRuleMissing"],
    ),
    "ocm v1.0.x needs no Progressing rule": (
        mwrs(summary(1, 1, 1), progressing_rule=False, legacy=True),
        [manifest_work("c1", work_conditions(progressing=None))],
        [],
        [],
    ),
    "placement missing from placementSummary": (
        mwrs(summary(2, 2, 2), selected={"a": 2, "b": 1}, per_placement={"a": summary(2, 2, 2)}),
        [],
        [],
        ["PlacementSummaryMissing"],
    ),
    "rollout handler error": (
        mwrs(summary(2, 2, 2), conditions=[cond("PlacementVerified", F, "NotAsExpected")]),
        [],
        [],
        ["PlacementNotVerified"],
    ),
    "owner label too long without the upstream reason": (
        mwrs(summary(), name="n" * 60),
        [],
        [],
        ["InvalidManifestWorkName"],
    ),
}


@pytest.mark.parametrize(("obj", "works", "clusters", "codes"), FINDINGS.values(), ids=FINDINGS.keys())
def test_findings(obj: ManifestWorkReplicaSet, works: list, clusters: list, codes: list[str]) -> None:
    computed = compute_mwrs(obj, mwrs_view(obj, works=works, clusters=clusters), NOW)
    assert [f.code for f in computed.findings] == codes


def test_unavailable_cluster_finding_names_the_clusters_and_counts_them() -> None:
    obj = mwrs(summary(4, 4, 4), selected={"p": 4})
    works = [manifest_work(f"c{i}", work_conditions()) for i in range(1, 5)]
    clusters = [managed_cluster("c1", F), managed_cluster("c2", U), managed_cluster("c3", None),
                managed_cluster("c4", U), managed_cluster("c9", F)]
    computed = compute_mwrs(obj, mwrs_view(obj, works=works, clusters=clusters), NOW)
    assert computed.counters["rollout.unavailableClusters"] == 4
    (finding,) = computed.findings
    assert finding.message.startswith("ManifestWorks on clusters c1, c2, c3, ... (1 more) whose")
    # The status still says Ready: the finding is what tells the user it may be stale.
    assert computed.phase == "Ready"


def test_derived_conditions_are_dated_from_the_rollout_the_controller_reports() -> None:
    """Ready False / Progressing True date from PlacementRolledOut False: restarts keep the age."""
    from exporter.engine.model import Condition, ManifestWorkReplicaSet, Meta, Status
    from exporter.engine.mwrs import anchored

    mwrs = ManifestWorkReplicaSet(
        meta=Meta("ManifestWorkReplicaSet", "work.open-cluster-management.io/v1alpha1", "ns", "m"),
        conditions=(Condition("PlacementRolledOut", Status.FALSE, "Progressing", "", 1000.0),),
    )
    not_ready = Condition("Ready", Status.FALSE, "NotAllClustersAvailable", "")
    assert anchored(not_ready, mwrs).last_transition_time == 1000.0
    progressing = Condition("Progressing", Status.TRUE, "RollingOutToClusters", "")
    assert anchored(progressing, mwrs).last_transition_time == 1000.0
    # Ready True while the controller says the rollout is incomplete: the stories differ, no anchor.
    ready = Condition("Ready", Status.TRUE, "AllClustersAvailable", "")
    assert anchored(ready, mwrs).last_transition_time is None
