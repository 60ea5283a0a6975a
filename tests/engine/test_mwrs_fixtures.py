"""The reference fixture states of a ManifestWorkReplicaSet, parsed and evaluated end to end.

One named test per state: (a) healthy and complete, (b) mid-rollout after a template change,
(c) a degraded cluster, (d) a placement that selects nothing, (e) a missing placement,
(f) the ocm v1.0.x summary, (g) an owner label that is too long, and the template without a
Progressing condition rule. Objects are written the way the API serves them and go through
``project`` like the sources' objects do.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from exporter.engine.evaluate_types import Computed
from exporter.engine.model import (
    Base,
    Condition,
    ManagedCluster,
    ManifestWork,
    ManifestWorkReplicaSet,
    Placement,
)
from exporter.engine.mwrs import compute_mwrs
from exporter.engine.ocm_objects import compute_manifestwork
from exporter.engine.parse import project

from .builders import mwrs_view

NOW = 1_780_000_000.0

TEMPLATE = {
    "workload": {"manifests": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                "metadata": {"name": "hello", "namespace": "default"}}]},
    "manifestConfigs": [{
        "resourceIdentifier": {"group": "apps", "resource": "deployments", "name": "hello",
                               "namespace": "default"},
        "conditionRules": [
            {"condition": "Progressing", "type": "CEL", "celExpressions": ["object.status.x"],
             "messageExpression": "result ? 'Applying' : 'Completed'"},
            {"condition": "Degraded", "type": "CEL", "celExpressions": ["object.status.y"]},
        ],
    }],
}
OLD_TEMPLATE = {**TEMPLATE, "workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap"}]}}

HELLO = """
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata:
  name: mwrset-hello
  namespace: default
  generation: 3
  finalizers: [work.open-cluster-management.io/manifest-work-cleanup]
spec:
  cascadeDeletionPolicy: Background
  placementRefs:
  - {name: placement-canary, rolloutStrategy: {type: All, all: {progressDeadline: None}}}
  - name: placement-prod
    rolloutStrategy:
      type: Progressive
      progressive: {minSuccessTime: 1m, progressDeadline: 10m, maxFailures: 5%, maxConcurrency: 1}
"""


def mwrs_object(status: dict[str, Any], *, refs: list[str] | None = None, name: str = "mwrset-hello",
                template: dict[str, Any] | None = None) -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load(HELLO)
    raw["metadata"]["name"] = name
    raw["spec"]["manifestWorkTemplate"] = copy.deepcopy(TEMPLATE if template is None else template)
    if refs is not None:
        raw["spec"]["placementRefs"] = [r for r in raw["spec"]["placementRefs"] if r["name"] in refs]
    raw["status"] = status
    return raw


def conditions(*rows: tuple[str, str, str]) -> list[dict[str, str]]:
    return [{"type": t, "status": s, "reason": r, "message": "", "lastTransitionTime": "2026-05-10T08:00:01Z"}
            for t, s, r in rows]


def item(name: str, text: str, **counts: int) -> dict[str, Any]:
    """A placementSummary item (the controller replaces the array whole, so each item is complete)."""
    return {"name": name, "availableDecisionGroups": text, "summary": counts}


def all_available(n: int) -> tuple[str, str, str]:
    return ("True", "AllClustersAvailable", f"ManifestWorks available in {n}/{n} clusters")


def placement_object(name: str, selected: int, groups: int) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
        "metadata": {"name": name, "namespace": "default"},
        "status": {"numberOfSelectedClusters": selected,
                   "decisionGroups": [{"decisionGroupIndex": i} for i in range(groups)]},
    }


def work_object(cluster: str, *, progressing: str | None = "False", degraded: str = "False",
                template: dict[str, Any] | None = None, placement: str = "placement-prod",
                owner: str = "default.mwrset-hello") -> dict[str, Any]:
    rows = [("Applied", "True", "AppliedManifestWorkComplete"), ("Available", "True", "ResourcesAvailable"),
            ("Degraded", degraded, "ConditionRulesAggregated")]
    if progressing is not None:
        rows.append(("Progressing", progressing, "ConditionRulesAggregated"))
    return {
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": "mwrset-hellox7k2p", "namespace": cluster, "generation": 2,
                     "labels": {"work.open-cluster-management.io/manifestworkreplicaset": owner,
                                "work.open-cluster-management.io/placementname": placement}},
        "spec": copy.deepcopy(TEMPLATE if template is None else template),
        "status": {"conditions": [
            {"type": t, "status": s, "reason": r, "message": "", "observedGeneration": 2} for t, s, r in rows
        ]},
    }


def evaluate(raws: list[dict[str, Any]]) -> tuple[ManifestWorkReplicaSet, Computed, list[Base]]:
    objects = [project(raw) for raw in raws]
    assert all(o is not None and o.problems == () for o in objects), [o.problems for o in objects if o]
    obj = next(o for o in objects if isinstance(o, ManifestWorkReplicaSet))
    view = mwrs_view(
        obj,
        works=[o for o in objects if isinstance(o, ManifestWork)],
        placements=[o for o in objects if isinstance(o, Placement)],
        clusters=[o for o in objects if isinstance(o, ManagedCluster)],
    )
    return obj, compute_mwrs(obj, view, NOW), [o for o in objects if o is not None]


def shape(c: Condition | None) -> tuple[str, str, str] | None:
    return None if c is None else (c.status.value, c.reason, c.message)


def codes(computed: Computed) -> list[str]:
    return [f.code for f in computed.findings]


def test_a_healthy_two_placements_complete() -> None:
    status = {
        "conditions": conditions(("PlacementVerified", "True", "AsExpected"),
                                 ("PlacementRolledOut", "True", "Complete"),
                                 ("ManifestworkApplied", "True", "AsExpected")),
        "placementSummary": [
            {"name": "placement-canary", "availableDecisionGroups": "1 (2 / 2 clusters applied)",
             "summary": {"total": 2, "applied": 2, "available": 2, "progressing": 0, "degraded": 0,
                         "desiredTotal": 0, "updated": 0}},
            {"name": "placement-prod", "availableDecisionGroups": "3 (6 / 6 clusters applied)",
             "summary": {"total": 6, "applied": 6, "available": 6, "progressing": 0, "degraded": 0,
                         "desiredTotal": 0, "updated": 0}},
        ],
        "summary": {"total": 8, "applied": 8, "available": 8},
    }
    _, computed, _ = evaluate([mwrs_object(status)])
    assert shape(computed.condition("Progressing")) == (
        "False", "AllClustersReady", "8 of 8 clusters reporting Completed state")
    assert shape(computed.condition("Ready")) == all_available(8)
    assert computed.phase == "Ready"
    assert computed.findings == ()
    assert computed.counters["desiredClusters"] == 8
    assert computed.counters["summary.progressing"] == 0  # absent in the merge-patched summary: 0
    assert computed.counters["placements[placement-prod].desiredClusters"] == 6
    assert computed.counters["placements[placement-canary].available"] == 2
    assert "rollout.toApply" not in computed.counters  # no ManifestWorks in view: no per-cluster counts


def _mid_rollout(available: int, progressing: int, applied_reason: str) -> dict[str, Any]:
    return mwrs_object(
        {
            "conditions": conditions(("PlacementVerified", "True", "AsExpected"),
                                     ("PlacementRolledOut", "False", "Progressing"),
                                     ("ManifestworkApplied", "True" if not progressing else "False",
                                      applied_reason)),
            "placementSummary": [{
                "name": "placement-prod", "availableDecisionGroups": "3 (2 / 6 clusters applied)",
                "summary": {"total": 2, "applied": 2, "available": available, "progressing": progressing,
                            "degraded": 0, "desiredTotal": 0, "updated": 0}}],
            "summary": {"total": 2, "applied": 2, "available": available, "progressing": progressing},
        },
        refs=["placement-prod"],
    )


def test_b_mid_rollout_after_template_change() -> None:
    works = [work_object("prod-1"), work_object("prod-2", progressing="True"),
             *(work_object(f"prod-{i}", template=OLD_TEMPLATE) for i in range(3, 7))]
    prod = placement_object("placement-prod", 6, 3)
    _, computed, objects = evaluate([_mid_rollout(1, 1, "Processing"), prod, *works])
    assert shape(computed.condition("Progressing")) == (
        "True", "RollingOutToClusters", "2 of 6 clusters reporting progressing state")
    assert shape(computed.condition("Ready")) == (
        "False", "NotAllClustersAvailable", "ManifestWorks available in 1/6 clusters")
    assert computed.phase == "Progressing"
    # What the status hides: 4 clusters still run the old template.
    assert {k: v for k, v in computed.counters.items() if k.startswith("rollout.")} == {
        "rollout.toApply": 4, "rollout.progressing": 1, "rollout.succeeded": 1, "rollout.failed": 0,
        "rollout.outdated": 4, "rollout.missing": 0, "rollout.withoutProgressing": 0,
        "rollout.unavailableClusters": 0,
    }
    owner = next(o for o in objects if isinstance(o, ManifestWorkReplicaSet))
    view = mwrs_view(owner)
    works_seen = [w for w in objects if isinstance(w, ManifestWork)]
    phases = sorted(str(compute_manifestwork(w, view, NOW).phase) for w in works_seen)
    assert phases == ["Progressing", "Succeeded", "ToApply", "ToApply", "ToApply", "ToApply"]


def test_b_manifestwork_applied_true_mid_rollout_is_not_ready() -> None:
    # ManifestworkApplied turns AsExpected once the 2 updated clusters are available, 4 still outdated.
    _, computed, _ = evaluate([_mid_rollout(2, 0, "AsExpected"), placement_object("placement-prod", 6, 3)])
    assert shape(computed.condition("Progressing")) == (
        "True", "Paused", "Rollout is paused to wait for progressive rules")
    assert shape(computed.condition("Ready")) == (
        "False", "NotAllClustersAvailable", "ManifestWorks available in 2/6 clusters")


def test_c_degraded_cluster() -> None:
    status = {
        "conditions": conditions(("PlacementVerified", "True", "AsExpected"),
                                 ("PlacementRolledOut", "False", "Progressing"),
                                 ("ManifestworkApplied", "False", "NotAsExpected")),
        "placementSummary": [item("placement-prod", "1 (3 / 3 clusters applied)",
                                  total=3, applied=3, available=2, progressing=1, degraded=1)],
        "summary": {"total": 3, "applied": 3, "available": 2, "progressing": 1, "degraded": 1},
    }
    works = [work_object("c1"), work_object("c2"), work_object("c3", progressing="True", degraded="True")]
    _, computed, _ = evaluate([mwrs_object(status, refs=["placement-prod"]), *works])
    assert shape(computed.condition("Progressing")) == (
        "True", "RolloutDegraded", "1 of 3 clusters reporting degraded state")
    assert shape(computed.condition("Ready")) == (
        "False", "NotAllClustersAvailable",
        "ManifestWorks available in 2/3 clusters, degraded in 1/3 clusters")
    assert computed.phase == "Failed"
    assert computed.counters["rollout.failed"] == 1


def test_d_placement_selects_nothing() -> None:
    status = {
        "conditions": conditions(("PlacementVerified", "False", "PlacementDecisionEmpty"),
                                 ("PlacementRolledOut", "True", "Complete"),
                                 ("ManifestworkApplied", "False", "PlacementDecisionEmpty")),
        "placementSummary": [item("placement-prod", "1 (0 / 0 clusters applied)",
                                  total=0, applied=0, available=0, progressing=0, degraded=0)],
        "summary": {"total": 0},
    }
    _, computed, _ = evaluate([mwrs_object(status, refs=["placement-prod"])])
    expected = ("False", "NoClustersSelected", "No clusters selected by placement placement-prod")
    assert shape(computed.condition("Progressing")) == expected
    assert shape(computed.condition("Ready")) == expected
    assert computed.phase == "Unknown"
    assert computed.counters["desiredClusters"] == 0
    assert computed.findings == ()


def test_e_placement_missing_freezes_the_summary() -> None:
    status = {
        "conditions": conditions(("PlacementVerified", "False", "PlacementDecisionNotFound"),
                                 ("PlacementRolledOut", "True", "Complete"),
                                 ("ManifestworkApplied", "True", "AsExpected")),
        "placementSummary": [
            {"name": "placement-canary", "availableDecisionGroups": "1 (2 / 2 clusters applied)",
             "summary": {"total": 2, "applied": 2, "available": 2}},
            {"name": "placement-prod", "availableDecisionGroups": "3 (6 / 6 clusters applied)",
             "summary": {"total": 6, "applied": 6, "available": 6}},
        ],
        "summary": {"total": 8, "applied": 8, "available": 8},
    }
    # The canary Placement is watched, the prod one is gone.
    _, computed, _ = evaluate([mwrs_object(status), placement_object("placement-canary", 2, 1)])
    expected = ("Unknown", "PlacementNotFound",
                "Placement placement-prod not found: cluster counts are frozen at their last values")
    assert shape(computed.condition("Progressing")) == expected
    assert shape(computed.condition("Ready")) == expected
    assert computed.phase == "Unknown"
    assert codes(computed) == ["PlacementNotFound"]
    assert computed.findings[0].severity == "critical"


def test_f_legacy_ocm_v1_0_summary() -> None:
    status = {
        "conditions": conditions(("PlacementVerified", "True", "AsExpected"),
                                 ("PlacementRolledOut", "True", "Complete"),
                                 ("ManifestworkApplied", "True", "AsExpected")),
        "placementSummary": [item("placement-prod", "1 (3 / 3 clusters applied)",
                                  total=3, Applied=3, available=3, degraded=0, progressing=0)],
        "summary": {"total": 3, "Applied": 3, "available": 3, "degraded": 0, "progressing": 0},
    }
    # v1.0.x rolled out on Applied/Available: a template without a Progressing rule is fine there.
    no_rule = {"workload": TEMPLATE["workload"]}
    obj, computed, _ = evaluate([mwrs_object(status, refs=["placement-prod"], template=no_rule)])
    assert obj.uses_legacy_applied_key
    assert computed.counters["summary.applied"] == 3
    assert computed.counters["placements[placement-prod].applied"] == 3
    assert shape(computed.condition("Ready")) == all_available(3)
    assert shape(computed.condition("Progressing")) == (
        "False", "AllClustersReady", "3 of 3 clusters reporting Completed state")
    assert computed.findings == ()


def test_g_owner_label_too_long() -> None:
    name = "a-very-long-manifestworkreplicaset-name-that-overflows-label"  # "default." + 60 chars > 63
    message = (f'ManifestWork owner reference "default.{name}" (namespace.name) is not a valid label value: '
               "must be no more than 63 characters")
    status = {"conditions": [{"type": "ManifestworkApplied", "status": "False",
                              "reason": "InvalidManifestWorkName", "message": message}]}
    _, computed, _ = evaluate([mwrs_object(status, name=name, refs=["placement-prod"])])
    assert shape(computed.condition("Progressing")) == ("False", "InvalidManifestWorkName", message)
    assert shape(computed.condition("Ready")) == ("False", "InvalidManifestWorkName", message)
    assert computed.phase == "Failed"
    assert codes(computed) == ["InvalidManifestWorkName"]


def test_g_owner_label_too_long_on_a_release_without_the_reason() -> None:
    name = "a-very-long-manifestworkreplicaset-name-that-overflows-label"
    _, computed, _ = evaluate([mwrs_object({}, name=name, refs=["placement-prod"])])
    ready = computed.condition("Ready")
    assert ready is not None and ready.reason == "InvalidManifestWorkName"
    assert "longer than 63 characters" in ready.message
    assert computed.phase == "Failed"


def test_missing_progressing_rule_never_completes() -> None:
    status = {
        "conditions": conditions(("PlacementVerified", "True", "AsExpected"),
                                 ("PlacementRolledOut", "False", "Progressing"),
                                 ("ManifestworkApplied", "True", "AsExpected")),
        "placementSummary": [item("placement-canary", "1 (2 / 2 clusters applied)",
                                  total=2, applied=2, available=2)],
        "summary": {"total": 2, "applied": 2, "available": 2},
    }
    no_rule = {"workload": TEMPLATE["workload"]}
    works = [work_object(c, progressing=None, template=no_rule, placement="placement-canary")
             for c in ("c1", "c2")]
    _, computed, _ = evaluate([mwrs_object(status, refs=["placement-canary"], template=no_rule), *works])
    progressing = computed.condition("Progressing")
    assert progressing is not None
    assert (progressing.status.value, progressing.reason) == ("True", "ProgressingRuleMissing")
    assert progressing.message.startswith(
        "2 of 2 clusters reporting progressing state; the rollout cannot complete")
    assert shape(computed.condition("Ready")) == all_available(2)
    assert computed.phase == "Progressing"
    assert codes(computed) == ["ProgressingRuleMissing"]
    assert computed.counters["rollout.toApply"] == 2
    assert computed.counters["rollout.withoutProgressing"] == 2
