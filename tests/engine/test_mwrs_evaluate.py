"""The OCM kinds through the engine's entry point: every object gets a Result like the CAPI ones."""

from __future__ import annotations

from exporter.engine.evaluate import evaluate_all
from exporter.engine.model import Status
from exporter.engine.parse import project

from .test_mwrs_fixtures import conditions, item, mwrs_object, placement_object, work_object

NOW = 1_780_000_000.0

MANAGED_CLUSTER = {
    "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
    "metadata": {"name": "c2"},
    "status": {"conditions": [{"type": "ManagedClusterConditionAvailable", "status": "Unknown",
                               "reason": "ManagedClusterLeaseUpdateStopped"}]},
}


def test_evaluate_all_reports_every_ocm_kind() -> None:
    status = {
        "conditions": conditions(("PlacementVerified", "True", "AsExpected"),
                                 ("PlacementRolledOut", "True", "Complete"),
                                 ("ManifestworkApplied", "True", "AsExpected")),
        "placementSummary": [
            item("placement-prod", "1 (2 / 2 clusters applied)", total=2, applied=2, available=2),
        ],
        "summary": {"total": 2, "applied": 2, "available": 2},
    }
    raws = [mwrs_object(status, refs=["placement-prod"]), work_object("c1"),
            work_object("c2", progressing="True"), placement_object("placement-prod", 2, 1), MANAGED_CLUSTER]
    results = {r.kind + "/" + r.namespace: r for r in evaluate_all([project(r) for r in raws], NOW)}
    assert sorted(results) == ["ManagedCluster/", "ManifestWork/c1", "ManifestWork/c2",
                               "ManifestWorkReplicaSet/default", "Placement/default"]

    owner = results["ManifestWorkReplicaSet/default"]
    assert [c.type for c in owner.reported] == [
        "PlacementVerified", "PlacementRolledOut", "ManifestworkApplied"]
    assert [(c.type, c.status) for c in owner.computed] == [
        ("Progressing", Status.FALSE), ("Ready", Status.TRUE)]
    assert all(c.last_transition_time is not None for c in owner.computed)
    assert owner.phase == "Ready"
    assert owner.counters["rollout.progressing"] == 1  # c2 still progressing, which the summary does not show
    assert [f.code for f in owner.findings] == ["ManagedClusterUnavailable"]

    assert results["ManifestWork/c1"].phase == "Succeeded"
    assert results["ManifestWork/c2"].phase == "Progressing"
    assert results["ManifestWork/c1"].cluster_name == "c1"
    assert results["ManagedCluster/"].phase == "Unknown"
    assert results["Placement/default"].counters == {"numberOfSelectedClusters": 2, "decisionGroups": 1}


def test_orphan_manifestwork_is_evaluated_on_its_own() -> None:
    (result,) = evaluate_all([project(work_object("c1", owner=""))], NOW)
    assert (result.kind, result.phase) == ("ManifestWork", "Succeeded")
