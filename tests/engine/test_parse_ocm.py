"""project() for the OCM kinds: the MWRS status quirks, spec hashes, wrong types and bounds."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from exporter.engine.evaluate import evaluate_all
from exporter.engine.grouping import group_key
from exporter.engine.model import (
    ManagedCluster,
    ManagedClusterAddOn,
    ManifestWork,
    ManifestWorkReplicaSet,
    Meta,
    Placement,
    PlacementDecision,
    PlacementRef,
    RolloutSummary,
    Status,
)
from exporter.engine.parse import project
from exporter.engine.parse_fields import parse_quantity
from exporter.engine.parse_ocm import MAX_CLAIM, parse_decision_groups_text, project_ocm, spec_hash

WORK_API = "work.open-cluster-management.io/v1alpha1"
TEMPLATE: dict[str, Any] = {
    "workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}]},
    "manifestConfigs": [{"resourceIdentifier": {"resource": "configmaps", "name": "a"},
                         "conditionRules": [{"condition": "Progressing", "type": "CEL"}]}],
}


def raw_mwrs(status: Any = None, **spec: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "apiVersion": WORK_API, "kind": "ManifestWorkReplicaSet",
        "metadata": {"name": "hello", "namespace": "default", "generation": 2},
        "spec": {"placementRefs": [{"name": "p"}], "manifestWorkTemplate": copy.deepcopy(TEMPLATE), **spec},
    }
    if status is not None:
        raw["status"] = status
    return raw


def parsed_mwrs(raw: dict[str, Any]) -> ManifestWorkReplicaSet:
    obj = project(raw)
    assert isinstance(obj, ManifestWorkReplicaSet)
    return obj


SUMMARIES = {
    "ocm >= v1.1 applied": ({"total": 3, "applied": 2, "available": 1}, RolloutSummary(3, 2, 1), False),
    "ocm v1.0.x Applied": ({"total": 3, "Applied": 2, "available": 1}, RolloutSummary(3, 2, 1), True),
    "both keys: applied wins": ({"total": 3, "Applied": 1, "applied": 2}, RolloutSummary(3, 2), False),
    "merge patch left zero fields out": ({"total": 3}, RolloutSummary(3), False),
    "desiredTotal and updated ignored": (
        {"total": 3, "applied": 3, "desiredTotal": 9, "updated": 9}, RolloutSummary(3, 3), False),
    "whole-number floats (JSON decoders)": ({"total": 3.0, "available": 2.0}, RolloutSummary(3, 0, 2), False),
}


@pytest.mark.parametrize(("raw_summary", "expected", "legacy"), SUMMARIES.values(), ids=SUMMARIES.keys())
def test_summary_quirks(raw_summary: dict[str, Any], expected: RolloutSummary, legacy: bool) -> None:
    obj = parsed_mwrs(raw_mwrs({"summary": raw_summary}))
    assert obj.summary == expected
    assert obj.uses_legacy_applied_key is legacy
    assert obj.problems == ()
    assert obj.status_reported


@pytest.mark.parametrize("bad", ["3", True, -1, 2.5, [1], float("inf")], ids=repr)
def test_summary_int_of_wrong_type_is_a_problem_and_zero(bad: Any) -> None:
    obj = parsed_mwrs(raw_mwrs({"summary": {"total": 3, "available": bad}}))
    assert obj.summary == RolloutSummary(total=3)
    assert obj.problems and "status.summary.available" in obj.problems[0]


def test_legacy_key_in_placement_summary_only() -> None:
    obj = parsed_mwrs(raw_mwrs({"placementSummary": [{"name": "p", "summary": {"total": 1, "Applied": 1}}]}))
    assert obj.placement_summaries[0].summary == RolloutSummary(total=1, applied=1)
    assert obj.uses_legacy_applied_key


DECISION_TEXTS = {
    "controller format": ("3 (2 / 6 clusters applied)", (3, 2, 6)),
    "empty placement": ("1 (0 / 0 clusters applied)", (1, 0, 0)),
    "godoc example format": ("2/4", (None, None, None)),
    "empty": ("", (None, None, None)),
    "huge numbers": ("1 (2 / 99999999999 clusters applied)", (None, None, None)),
}


@pytest.mark.parametrize(("text", "expected"), DECISION_TEXTS.values(), ids=DECISION_TEXTS.keys())
def test_available_decision_groups_text(text: str, expected: tuple[int | None, ...]) -> None:
    assert parse_decision_groups_text(text) == expected


def test_placement_summary_and_conditions() -> None:
    obj = parsed_mwrs(raw_mwrs({
        "conditions": [
            {"type": "ManifestworkApplied", "status": "True", "reason": "AsExpected", "message": ""},
        ],
        "placementSummary": [{"name": "p", "availableDecisionGroups": "3 (2 / 6 clusters applied)",
                              "summary": {"total": 2, "applied": 2, "available": 1, "progressing": 1}}],
    }))
    (ps,) = obj.placement_summaries
    assert (ps.name, ps.decision_groups, ps.selected_clusters) == ("p", 3, 6)
    assert ps.summary == RolloutSummary(total=2, applied=2, available=1, progressing=1)
    (c,) = obj.conditions
    assert (c.type, c.status, c.observed_generation, c.last_transition_time) == (
        "ManifestworkApplied", Status.TRUE, None, None)


def test_placement_refs_and_rollout_strategies() -> None:
    obj = parsed_mwrs(raw_mwrs(placementRefs=[
        {"name": "default"},
        {"name": "prog", "rolloutStrategy": {
            "type": "Progressive", "progressive": {"minSuccessTime": "1m", "progressDeadline": "10m"}}},
        {"name": "group", "rolloutStrategy": {"type": "ProgressivePerGroup",
                                              "progressivePerGroup": {"progressDeadline": "5m"}}},
        {"rolloutStrategy": {"type": "All"}},  # no name: dropped, recorded
    ]))
    assert obj.placement_refs == (
        PlacementRef("default"),
        PlacementRef("prog", "Progressive", "10m"),
        PlacementRef("group", "ProgressivePerGroup", "5m"),
    )
    assert any("placementRefs" in p for p in obj.problems)


def test_template_progressing_rule() -> None:
    assert parsed_mwrs(raw_mwrs()).template_has_progressing_rule is True
    degraded_only = [{"conditionRules": [{"condition": "Degraded"}]}]
    no_rule = {"workload": TEMPLATE["workload"], "manifestConfigs": degraded_only}
    assert parsed_mwrs(raw_mwrs(manifestWorkTemplate=no_rule)).template_has_progressing_rule is False
    raw = raw_mwrs()
    del raw["spec"]["manifestWorkTemplate"]
    obj = parsed_mwrs(raw)
    assert obj.template_has_progressing_rule is None
    assert obj.spec_hash == ""


def test_no_status_is_not_reported() -> None:
    obj = parsed_mwrs(raw_mwrs())
    assert not obj.status_reported
    assert obj.summary == RolloutSummary()


def raw_work(spec: Any, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": "hellox7k2p", "namespace": "cluster1", "generation": 2, "labels": labels},
        "spec": spec,
        "status": {"conditions": [{"type": "Applied", "status": "True", "observedGeneration": 2,
                                   "reason": "AppliedManifestWorkComplete"}]},
    }


def test_manifest_work() -> None:
    obj = project(raw_work(copy.deepcopy(TEMPLATE), **{
        "work.open-cluster-management.io/manifestworkreplicaset": "default.hello",
        "work.open-cluster-management.io/placementname": "p",
    }))
    assert isinstance(obj, ManifestWork)
    assert (obj.owner, obj.placement_name, obj.cluster_name) == ("default.hello", "p", "cluster1")
    assert obj.conditions[0].observed_generation == 2
    assert obj.spec_hash == parsed_mwrs(raw_mwrs()).spec_hash != ""


HASHES = {
    "key order": ({**TEMPLATE, "workload": {"manifests": [{"metadata": {"name": "a"}, "kind": "ConfigMap",
                                                           "apiVersion": "v1"}]}}, True),
    "defaulted empty fields": ({**TEMPLATE, "deleteOption": None, "executor": {}, "manifestConfigs": [
        {**TEMPLATE["manifestConfigs"][0], "feedbackRules": [], "updateStrategy": None}]}, True),
    "fields outside workload and manifestConfigs": (
        {**TEMPLATE, "deleteOption": {"propagationPolicy": "Orphan"}}, True),
    "another manifest": ({**TEMPLATE, "workload": {"manifests": [{"kind": "Secret"}]}}, False),
    "another condition rule": ({**TEMPLATE, "manifestConfigs": []}, False),
}


@pytest.mark.parametrize(("spec", "same"), HASHES.values(), ids=HASHES.keys())
def test_spec_hash(spec: dict[str, Any], same: bool) -> None:
    assert (spec_hash(spec) == spec_hash(TEMPLATE)) is same


def test_spec_hash_of_absurd_nesting_is_unreadable() -> None:
    deep: Any = "x"
    for _ in range(200):
        deep = {"a": deep}
    obj = project(raw_work({"workload": deep}))
    assert isinstance(obj, ManifestWork)
    assert obj.spec_hash == ""
    assert any(p.startswith("spec") for p in obj.problems)


def test_managed_cluster() -> None:
    obj = project({
        "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": "cluster1"},
        "status": {"conditions": [{"type": "ManagedClusterConditionAvailable", "status": "Unknown",
                                   "reason": "ManagedClusterLeaseUpdateStopped"}]},
    })
    assert isinstance(obj, ManagedCluster)
    assert obj.cluster_name == "cluster1"
    assert obj.conditions[0].status is Status.UNKNOWN


def raw_managed_cluster(**status: Any) -> dict[str, Any]:
    return {"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
            "metadata": {"name": "cluster1"}, "status": status}


def test_managed_cluster_inventory() -> None:
    obj = project(raw_managed_cluster(
        version={"kubernetes": "v1.32.1"},
        clusterClaims=[
            {"name": "id.k8s.io", "value": "f1d64ae9"},
            {"name": "kubeversion.open-cluster-management.io", "value": "v1.32.1"},
            {"name": "platform.open-cluster-management.io", "value": "AWS"},
            {"name": "product.open-cluster-management.io", "value": "EKS"},
            {"name": "region.open-cluster-management.io", "value": "eu-west-1"},
            {"name": "vendor.example.com/rack", "value": "r17"},  # not well known: not read
        ],
        capacity={"cpu": "24", "memory": "96101432Ki", "pods": "330"},
        allocatable={"cpu": "23500m", "memory": "90Gi"},
    ))
    assert isinstance(obj, ManagedCluster)
    assert (obj.kubernetes_version, obj.cluster_id, obj.platform, obj.product, obj.region) == (
        "v1.32.1", "f1d64ae9", "AWS", "EKS", "eu-west-1")
    assert (obj.capacity_cpu, obj.capacity_memory) == (24.0, 96101432 * 1024.0)
    assert (obj.allocatable_cpu, obj.allocatable_memory) == (23.5, 90 * 2.0**30)
    assert obj.problems == ()


def test_managed_cluster_without_inventory_reads_empty() -> None:
    obj = project(raw_managed_cluster(clusterClaims=[{"name": "id.k8s.io", "value": "x"}]))
    assert isinstance(obj, ManagedCluster)
    assert (obj.kubernetes_version, obj.platform, obj.product, obj.region) == ("", "", "", "")
    assert (obj.capacity_cpu, obj.capacity_memory, obj.allocatable_cpu, obj.allocatable_memory) == (
        None, None, None, None)
    assert obj.problems == ()


BAD_INVENTORY = {
    "quantity not a quantity": ({"capacity": {"cpu": "lots", "memory": "1Gi"}}, "capacity_cpu"),
    "negative quantity": ({"allocatable": {"memory": "-1Gi"}}, "allocatable_memory"),
    "quantity of another type": ({"capacity": {"memory": ["1Gi"]}}, "capacity_memory"),
    "claim value not a string": ({"clusterClaims": [{"name": "platform.open-cluster-management.io",
                                                     "value": 3}]}, "platform"),
}


@pytest.mark.parametrize(("status", "attr"), BAD_INVENTORY.values(), ids=BAD_INVENTORY.keys())
def test_managed_cluster_bad_inventory_is_a_problem(status: dict[str, Any], attr: str) -> None:
    obj = project(raw_managed_cluster(**status))
    assert isinstance(obj, ManagedCluster)
    assert getattr(obj, attr) in (None, "")
    assert obj.problems


def test_managed_cluster_claim_of_another_shape_loses_only_that_claim() -> None:
    obj = project(raw_managed_cluster(version={"kubernetes": "v1.32.1"}, clusterClaims=[
        {"name": ["platform.open-cluster-management.io"], "value": "AWS"},  # unhashable name
        "not an object",
        {"name": "region.open-cluster-management.io", "value": "eu-west-1"},
    ]))
    assert isinstance(obj, ManagedCluster)
    assert (obj.kubernetes_version, obj.platform, obj.region) == ("v1.32.1", "", "eu-west-1")
    assert len(obj.problems) == 2 and not any("reader error" in p for p in obj.problems)


def test_managed_cluster_claim_values_are_bounded() -> None:
    obj = project(raw_managed_cluster(clusterClaims=[
        {"name": "region.open-cluster-management.io", "value": "r" * 1024}]))
    assert isinstance(obj, ManagedCluster) and obj.region == "r" * MAX_CLAIM


@pytest.mark.parametrize(("text", "expected"), [
    ("8", 8.0), ("500m", 0.5), ("32595212Ki", 32595212 * 1024.0), ("1.5Gi", 1.5 * 2**30),
    ("2k", 2000.0), ("1e3", 1000.0), ("1E-3", 0.001), ("12M", 12e6), (".5", 0.5), (8, 8.0),
    ("", None), ("8 cores", None), ("1e", None), ("1e400", None), ("Ki", None), (True, None),
    (None, None), (float("nan"), None),
])
def test_parse_quantity(text: Any, expected: float | None) -> None:
    assert parse_quantity(text) == expected


def test_managed_cluster_addon_is_per_cluster_and_evaluated_alone() -> None:
    raw = {
        "apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ManagedClusterAddOn",
        "metadata": {"name": "cluster-proxy", "namespace": "spoke1", "uid": "u1"},
        "status": {"conditions": [
            {"type": "Available", "status": "False", "reason": "ProbeUnavailable", "message": "m",
             "lastTransitionTime": "2026-11-20T11:20:14Z"},
            {"type": "Degraded", "status": "True", "reason": "Custom", "message": "d",
             "lastTransitionTime": "2026-11-20T11:20:14Z"},
        ]},
    }
    obj = project(raw)
    assert isinstance(obj, ManagedClusterAddOn)
    assert obj.cluster_name == "spoke1"
    assert [(c.type, c.status) for c in obj.conditions] == [
        ("Available", Status.FALSE), ("Degraded", Status.TRUE)]
    assert group_key(obj) == ("ManagedClusterAddOn", "spoke1", "cluster-proxy")
    (result,) = evaluate_all([obj], 0.0)
    assert result.reported == obj.conditions and result.computed == () and result.findings == ()
    raw["status"] = {"conditions": "broken"}
    bad = project(raw)
    assert isinstance(bad, ManagedClusterAddOn) and bad.conditions == () and bad.problems


def test_placement() -> None:
    raw = {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
        "metadata": {"name": "p", "namespace": "default"},
        "status": {"numberOfSelectedClusters": 6, "decisionGroups": [{}, {}, {}],
                   "conditions": [{"type": "PlacementSatisfied", "status": "True"}]},
    }
    obj = project(raw)
    assert isinstance(obj, Placement)
    assert (obj.number_of_selected_clusters, obj.decision_groups) == (6, 3)
    raw["status"] = {"numberOfSelectedClusters": -1}
    bad = project(raw)
    assert isinstance(bad, Placement) and bad.number_of_selected_clusters is None and bad.problems


def test_placement_decision() -> None:
    raw = {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision",
        "metadata": {"name": "p-decision-1", "namespace": "default",
                     "labels": {"cluster.open-cluster-management.io/placement": "p"}},
        "status": {"decisions": [{"clusterName": "c1"}, {"clusterName": "c2"}, {"reason": "no name"}]},
    }
    obj = project(raw)
    assert isinstance(obj, PlacementDecision)
    assert obj.placement_name == "p"
    del raw["metadata"]["labels"]
    raw["metadata"]["ownerReferences"] = [{"kind": "Placement", "name": "q", "apiVersion": "x", "uid": "u"}]
    owned = project(raw)
    assert isinstance(owned, PlacementDecision) and owned.placement_name == "q"


WRONG = {
    "status not an object": {"status": "broken"},
    "summary not an object": {"status": {"summary": [1, 2]}},
    "placementRefs not a list": {"spec": {"placementRefs": {"name": "p"}}},
    "placementSummary items not objects": {"status": {"placementSummary": ["p", 3]}},
    "conditions not a list": {"status": {"conditions": {"type": "Ready"}}},
    "template not an object": {"spec": {"manifestWorkTemplate": "x", "placementRefs": []}},
}


@pytest.mark.parametrize("override", WRONG.values(), ids=WRONG.keys())
def test_wrong_types_are_problems_not_errors(override: dict[str, Any]) -> None:
    raw = {**raw_mwrs(), **override}
    obj = parsed_mwrs(raw)
    assert obj.problems


def test_project_ocm_ignores_other_kinds() -> None:
    meta = Meta(kind="Cluster", api_version="cluster.x-k8s.io/v1beta2", namespace="ns", name="c")
    assert project_ocm({}, meta, []) is None
