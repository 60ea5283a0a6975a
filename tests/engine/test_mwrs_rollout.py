"""Per-cluster rollout status of a ManifestWork, and the ManagedCluster and Placement results.

The rollout table is the MWRS controller's (docs/mwrs-status.md, "Rollout status of a cluster"):
one case per row, plus the observedGeneration and outdated-template rows.
"""

from __future__ import annotations

import pytest

from exporter.engine.model import Condition, Status
from exporter.engine.mwrs import compute_managedcluster, compute_manifestwork, compute_placement
from exporter.engine.ocm_objects import rollout_status

from .builders import F, T, U, cond, managed_cluster, manifest_work, mwrs, mwrs_view, placement, summary

NOW = 1_780_000_000.0


def conds(applied: Status | None, progressing: Status | None, degraded: Status | None = None,
          *, og: tuple[int, int, int] = (2, 2, 2), available: Status | None = None) -> list[Condition]:
    rows = (("Applied", applied, og[0]), ("Progressing", progressing, og[1]), ("Degraded", degraded, og[2]),
            ("Available", available, 2))
    return [cond(t, s, og=g) for t, s, g in rows if s is not None]


ROWS = {
    "Applied missing": (conds(None, F), "ToApply"),
    "Applied False": (conds(F, F), "ToApply"),
    "Applied Unknown": (conds(U, F), "ToApply"),
    "Applied for an older generation": (conds(T, F, og=(1, 2, 2)), "ToApply"),
    "Progressing missing (no condition rule)": (conds(T, None), "ToApply"),
    "Progressing for an older generation": (conds(T, F, og=(2, 1, 2)), "ToApply"),
    "Degraded for an older generation": (conds(T, T, T, og=(2, 2, 1)), "ToApply"),
    "Progressing and Degraded": (conds(T, T, T), "Failed"),
    "Progressing, Degraded False": (conds(T, T, F), "Progressing"),
    "Progressing, no Degraded": (conds(T, T), "Progressing"),
    "Progressing False, Degraded False": (conds(T, F, F), "Succeeded"),
    "Progressing False, no Degraded": (conds(T, F), "Succeeded"),
    "Progressing Unknown": (conds(T, U, T), "Progressing"),
}


@pytest.mark.parametrize(("conditions", "expected"), ROWS.values(), ids=ROWS.keys())
def test_rollout_status_table(conditions: list[Condition], expected: str) -> None:
    assert rollout_status(manifest_work("c1", conditions, generation=2)) == expected


def test_outdated_template_is_to_apply_whatever_the_conditions() -> None:
    work = manifest_work("c1", conds(T, F, F), generation=2)
    assert rollout_status(work, current_template=False) == "ToApply"
    assert rollout_status(work, current_template=None) == "Succeeded"  # unknown hash: not outdated


def test_unset_generation_and_observed_generation_compare_equal() -> None:
    # The controller compares Go ints: both unset are 0 == 0.
    work = manifest_work("c1", [cond("Applied", T), cond("Progressing", F)], generation=0)
    assert rollout_status(work) == "Succeeded"


LEGACY = {
    "Applied and Available": (conds(T, None, available=T), "Succeeded"),
    "Applied, not Available": (conds(T, None, available=F), "Progressing"),
    "not Applied": (conds(F, None, available=T), "ToApply"),
}


@pytest.mark.parametrize(("conditions", "expected"), LEGACY.values(), ids=LEGACY.keys())
def test_rollout_status_ocm_v1_0(conditions: list[Condition], expected: str) -> None:
    assert rollout_status(manifest_work("c1", conditions, generation=2), legacy=True) == expected


def test_compute_manifestwork_phase_uses_its_owner_template() -> None:
    owner = mwrs(summary(1, 1, 1))
    current = manifest_work("c1", conds(T, F, F), generation=2)
    old = manifest_work("c2", conds(T, F, F), generation=2, spec_hash="old")
    foreign = manifest_work("c3", conds(T, F, F), generation=2, spec_hash="old", owner="default.other")
    view = mwrs_view(owner, works=[current, old])
    assert compute_manifestwork(current, view, NOW).phase == "Succeeded"
    assert compute_manifestwork(old, view, NOW).phase == "ToApply"
    # A work that names another MWRS is not compared with this one's template.
    assert compute_manifestwork(foreign, view, NOW).phase == "Succeeded"
    assert compute_manifestwork(current, view, NOW).counters == {}


def test_compute_manifestwork_without_owner() -> None:
    work = manifest_work("c1", conds(T, T), generation=2, owner="")
    assert compute_manifestwork(work, mwrs_view(None, works=[work]), NOW).phase == "Progressing"


CLUSTERS = {
    "available": (T, "Available"),
    "kube-apiserver unavailable": (F, "Unavailable"),
    "lease update stopped": (U, "Unknown"),
    "never reported": (None, "Unknown"),
}


@pytest.mark.parametrize(("available", "phase"), CLUSTERS.values(), ids=CLUSTERS.keys())
def test_managed_cluster_phase(available: Status | None, phase: str) -> None:
    computed = compute_managedcluster(managed_cluster("c1", available), NOW)
    assert computed.phase == phase
    assert computed.conditions == ()


def test_placement_counters() -> None:
    assert compute_placement(placement("p", 6, groups=3), NOW).counters == {
        "numberOfSelectedClusters": 6, "decisionGroups": 3}
    # Not scheduled yet: unset, never 0.
    assert compute_placement(placement("p", None, groups=0), NOW).counters == {
        "numberOfSelectedClusters": None, "decisionGroups": None}
