"""Seed 004: the four story steps and the phase table, reproduced exactly.

Each story step is a ManifestWorkReplicaSet as the API serves it (parsed by ``project``, so the
status quirks are on the path): the seed's reported conditions, plus the summary the controller
writes in that situation (the seed shows only conditions; the summaries follow from the story:
2 clusters, Progressive, one cluster at a time). Top-level summary fields that never changed are
absent, as the controller's merge patches leave them.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from exporter.engine.model import Condition, ManifestWorkReplicaSet, Placement, Status
from exporter.engine.mwrs import compute_mwrs
from exporter.engine.parse import project

from .builders import mwrs, mwrs_view, summary

NOW = 1_760_000_000.0

BASE = """
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata: {name: mwrset-hello, namespace: default, generation: 1}
spec:
  placementRefs:
  - name: placement-two
    rolloutStrategy: {type: Progressive, progressive: {maxConcurrency: 1, minSuccessTime: 1m}}
  manifestWorkTemplate:
    workload: {manifests: [{apiVersion: v1, kind: ConfigMap, metadata: {name: hello, namespace: default}}]}
    manifestConfigs:
    - resourceIdentifier: {resource: configmaps, name: hello, namespace: default}
      conditionRules:
      - {condition: Progressing, type: CEL, celExpressions: ["false"], messageExpression: "'Completed'"}
"""

PLACEMENT = """
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: placement-two, namespace: default}
status: {numberOfSelectedClusters: 2, decisionGroups: [{decisionGroupIndex: 0, clusterCount: 2}]}
"""


def reported(verified: tuple[str, str], rolled_out: tuple[str, str], applied: tuple[str, str]) -> list[Any]:
    rows = (
        ("PlacementVerified", verified),
        ("PlacementRolledOut", rolled_out),
        ("ManifestworkApplied", applied),  # upstream's lower-case w
    )
    return [
        {"lastTransitionTime": "2025-10-28T21:01:51Z", "message": "", "reason": reason, "status": status,
         "type": type_}
        for type_, (status, reason) in rows
    ]


def step(conditions: list[Any], total: int, summary_: dict[str, int]) -> ManifestWorkReplicaSet:
    raw = yaml.safe_load(BASE)
    raw["status"] = {
        "conditions": conditions,
        "placementSummary": [{
            "name": "placement-two",
            "availableDecisionGroups": f"1 ({total} / 2 clusters applied)",
            "summary": {"total": total, "applied": 0, "available": 0, "progressing": 0, "degraded": 0,
                        "desiredTotal": 0, "updated": 0, **summary_},
        }],
        "summary": summary_,
    }
    obj = project(raw)
    assert isinstance(obj, ManifestWorkReplicaSet)
    assert obj.problems == ()
    return obj


STEPS = [
    pytest.param(
        step(reported(("True", "AsExpected"), ("False", "Progressing"), ("False", "Processing")),
             1, {"total": 1, "applied": 1, "progressing": 1}),
        ("True", "RollingOutToClusters", "1 of 2 clusters reporting progressing state"),
        ("False", "NotAllClustersAvailable", "ManifestWorks available in 0/2 clusters"),
        "Progressing",
        id="step 1: processing ManifestworkApplied on cluster 1",
    ),
    pytest.param(
        step(reported(("True", "AsExpected"), ("False", "Progressing"), ("True", "AsExpected")),
             1, {"total": 1, "applied": 1, "available": 1}),
        ("True", "Paused", "Rollout is paused to wait for progressive rules"),
        ("False", "NotAllClustersAvailable", "ManifestWorks available in 1/2 clusters"),
        "Progressing",
        id="step 2: cluster 1 completed, waiting to roll out to the next cluster",
    ),
    pytest.param(
        step(reported(("True", "AsExpected"), ("False", "Progressing"), ("False", "Processing")),
             2, {"total": 2, "applied": 2, "available": 1, "progressing": 1}),
        ("True", "RollingOutToClusters", "2 of 2 clusters reporting progressing state"),
        ("False", "NotAllClustersAvailable", "ManifestWorks available in 1/2 clusters"),
        "Progressing",
        id="step 3: rolling out in cluster 2",
    ),
    pytest.param(
        step(reported(("True", "AsExpected"), ("True", "Completed"), ("True", "AsExpected")),
             2, {"total": 2, "applied": 2, "available": 2}),
        ("False", "AllClustersReady", "2 of 2 clusters reporting Completed state"),
        ("True", "AllClustersAvailable", "ManifestWorks available in 2/2 clusters"),
        "Ready",
        id="step 4: completed rollout in both clusters",
    ),
]


def _shape(c: Condition | None) -> tuple[str, str, str, str] | None:
    return None if c is None else (c.type, c.status.value, c.reason, c.message)


@pytest.mark.parametrize(("obj", "progressing", "ready", "phase"), STEPS)
@pytest.mark.parametrize("placement_known", [True, False], ids=["Placement watched", "Placement text only"])
def test_story_step(obj: ManifestWorkReplicaSet, progressing: tuple[str, str, str],
                    ready: tuple[str, str, str], phase: str, placement_known: bool) -> None:
    # The desired count (2) comes from the Placement when it is watched, else from the
    # availableDecisionGroups text: the story reads the same either way.
    placements = [project(yaml.safe_load(PLACEMENT))] if placement_known else []
    assert all(isinstance(p, Placement) for p in placements)
    computed = compute_mwrs(obj, mwrs_view(obj, placements=placements), NOW)  # type: ignore[arg-type]
    assert _shape(computed.condition("Progressing")) == ("Progressing", *progressing)
    assert _shape(computed.condition("Ready")) == ("Ready", *ready)
    assert computed.phase == phase
    assert computed.counters["desiredClusters"] == 2


# ---- the phase table --------------------------------------------------------------------------
# | Ready | summary.available == summary.total && summary.degraded == 0 |
# | Progressing | summary.progressing > 0 |
# | Failed | summary.degraded > 0 |
# "total" is read as the clusters the placements select: the summary's own total counts only the
# clusters reached so far, which would make step 2 of the story Ready.

PHASES = [
    pytest.param(summary(3, 3, 3), 3, "Ready", id="Ready: all selected clusters available, none degraded"),
    pytest.param(summary(3, 3, 2, progressing=1), 3, "Progressing", id="Progressing: a cluster progressing"),
    pytest.param(summary(3, 3, 2, progressing=1, degraded=1), 3, "Failed", id="Failed: a cluster degraded"),
    pytest.param(summary(3, 3, 3, degraded=1), 3, "Failed",
                 id="Failed wins over Ready: available everywhere but degraded"),
    pytest.param(summary(3, 3, 3, progressing=1), 3, "Progressing",
                 id="Progressing wins over Ready: available everywhere, still progressing"),
    pytest.param(summary(1, 1, 1), 3, "Progressing",
                 id="not in the table: reached clusters done, others waiting (Paused) is Progressing"),
    pytest.param(summary(), 0, "Unknown", id="not in the table: no clusters selected is Unknown"),
]


@pytest.mark.parametrize(("s", "selected", "phase"), PHASES)
def test_phase_table(s: Any, selected: int, phase: str) -> None:
    obj = mwrs(s, selected={"p": selected})
    assert compute_mwrs(obj, mwrs_view(obj), NOW).phase == phase


def test_phase_is_unknown_before_the_controller_reports() -> None:
    obj = mwrs(summary(), selected={"p": 2}, status_reported=False)
    computed = compute_mwrs(obj, mwrs_view(obj), NOW)
    assert computed.phase == "Unknown"
    ready = computed.condition("Ready")
    assert ready is not None and ready.status is Status.UNKNOWN and ready.reason == "NotYetReported"
