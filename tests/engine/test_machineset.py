"""MachineSet rules: counters and one named case per branch of each condition."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from exporter.engine.evaluate_types import Computed
from exporter.engine.machine import compute_machine
from exporter.engine.machineset import compute_machineset
from exporter.engine.model import Base, Condition, Machine, MachineSet, Status
from tests.engine.builders import (
    NOW,
    F,
    T,
    U,
    capi_cluster,
    capi_view,
    cond,
    healthy_machine_conditions,
    machine,
    machine_set,
)

HEALTHY = healthy_machine_conditions()
DRAIN_PDB = ("Drain not completed yet:\n"
             "* Pod p: cannot evict pod as it would violate the pod's disruption budget.")


def m(name: str, *changed: Condition, **fields: object) -> Machine:
    """A healthy Machine of MachineSet ms1 with some conditions replaced."""
    types = {c.type for c in changed}
    own = (*(c for c in HEALTHY if c.type not in types), *changed)
    return machine(name, own, set_name="ms1", **fields)


def evaluate(ms: MachineSet, machines: Sequence[Machine], *others: Base) -> Computed:
    """Evaluate like the orchestrator does: Machines first, then the MachineSet."""
    view = capi_view(ms, *machines, *others)
    for each in machines:
        view.record(each.key, compute_machine(each, view, NOW))
    return compute_machineset(ms, view, NOW)


def expect(result: Computed, type_: str, status: Status, reason: str, message: str | None = None) -> None:
    c = result.condition(type_)
    assert c is not None, f"{type_} missing"
    assert (c.status, c.reason) == (status, reason), c
    if message is not None:
        assert c.message == message


# ---- counters ---------------------------------------------------------------------------------

COUNTER_CASES: list[tuple[str, Callable[[], list[Machine]], dict[str, int | None]]] = [
    ("no-machines", lambda: [], {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0,
                                 "upToDateReplicas": 0}),
    ("ready-and-not-ready", lambda: [m("a"), m("b", cond("Ready", F), cond("Available", F))],
     {"replicas": 2, "readyReplicas": 1, "availableReplicas": 1, "upToDateReplicas": 2}),
    # A Machine being updated in place (annotation, or UpdateMachine hook pending) counts in none,
    # whatever its conditions still say; the controller reads the annotations, not Updating.
    ("update-in-progress-counts-in-none", lambda: [m("a"), m("b", update_in_progress=True)],
     {"replicas": 2, "readyReplicas": 1, "availableReplicas": 1, "upToDateReplicas": 1}),
    ("updating-condition-alone-counts-as-reported",
     lambda: [m("a"), m("b", cond("Updating", T, "InPlaceUpdating"))],
     {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2, "upToDateReplicas": 2}),
    ("v1beta1-machine-uses-computed-conditions",
     lambda: [machine("old", layout="v1beta1", set_name="ms1", bootstrap_data_secret_created=True,
                      infrastructure_provisioned=True, v1beta1=[cond("NodeHealthy", T)])],
     {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1, "upToDateReplicas": 0}),
    ("not-up-to-date", lambda: [m("a", cond("UpToDate", F, "NotUpToDate"))],
     {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1, "upToDateReplicas": 0}),
    # The controller counts what the Machine reports; a condition not reported yet is not True.
    ("machine-not-reporting-ready-yet-counts-in-none",
     lambda: [m("a"), machine("new", [c for c in HEALTHY if c.type not in ("Ready", "Available", "UpToDate")],
                              set_name="ms1")],
     {"replicas": 2, "readyReplicas": 1, "availableReplicas": 1, "upToDateReplicas": 1}),
]


@pytest.mark.parametrize(("build", "expected"), [c[1:] for c in COUNTER_CASES],
                         ids=[c[0] for c in COUNTER_CASES])
def test_counters(build: Callable[[], list[Machine]], expected: dict[str, int | None]) -> None:
    result = evaluate(machine_set("ms1", replicas=4), build())
    assert result.counters == {"desiredReplicas": 4, **expected}


def test_machines_of_other_sets_do_not_count() -> None:
    result = evaluate(machine_set("ms1"), [m("a"), machine("b", set_name="ms2")])
    assert result.counters["replicas"] == 1


# ---- ScalingUp / ScalingDown --------------------------------------------------------------------

SCALING_CASES: list[tuple[str, int | None, int, float | None, str, Status, str, str]] = [
    ("up-replicas-unset", None, 1, None, "ScalingUp", U, "WaitingForReplicasSet",
     "Waiting for spec.replicas set"),
    ("up-fewer-than-desired", 3, 1, None, "ScalingUp", T, "ScalingUp", "Scaling up from 1 to 3 replicas"),
    ("up-at-desired", 2, 2, None, "ScalingUp", F, "NotScalingUp", ""),
    ("up-deleting-wants-none", 3, 1, 5.0, "ScalingUp", F, "NotScalingUp", ""),
    ("down-replicas-unset", None, 1, None, "ScalingDown", U, "WaitingForReplicasSet", None),
    ("down-more-than-desired", 1, 3, None, "ScalingDown", T, "ScalingDown",
     "Scaling down from 3 to 1 replicas"),
    ("down-at-desired", 2, 2, None, "ScalingDown", F, "NotScalingDown", ""),
    ("down-deleting-wants-none", 2, 2, 5.0, "ScalingDown", T, "ScalingDown",
     "Scaling down from 2 to 0 replicas"),
]


@pytest.mark.parametrize(("replicas", "count", "deleted_ago", "type_", "status", "reason", "message"),
                         [c[1:] for c in SCALING_CASES], ids=[c[0] for c in SCALING_CASES])
def test_scaling(replicas: int | None, count: int, deleted_ago: float | None, type_: str, status: Status,
                 reason: str, message: str | None) -> None:
    machines = [m(f"m{i}") for i in range(count)]
    expect(evaluate(machine_set("ms1", replicas, deleted_ago=deleted_ago), machines), type_, status, reason,
           message)


def test_scaling_down_names_machines_stuck_in_deletion() -> None:
    stuck = m("m2", cond("Deleting", T, "DrainingNode", DRAIN_PDB), deleted_ago=1200,
              drain_start_time=NOW - 900)
    result = evaluate(machine_set("ms1", 1), [m("m1"), stuck])
    expect(result, "ScalingDown", T, "ScalingDown",
           "Scaling down from 2 to 1 replicas\n* Machine m2 is in deletion since more than 15m, "
           "delay likely due to PodDisruptionBudgets")


# ---- MachinesReady / MachinesUpToDate -----------------------------------------------------------

AGGREGATE_CASES: list[tuple[str, Callable[[], list[Machine]], str, Status, str, str]] = [
    ("ready-no-machines", lambda: [], "MachinesReady", T, "NoReplicas", ""),
    ("ready-all-ready", lambda: [m("a"), m("b")], "MachinesReady", T, "Ready", ""),
    ("ready-one-not-ready", lambda: [m("a"), m("b", cond("Ready", F, "NotReady", "* NodeHealthy: boom"))],
     "MachinesReady", F, "NotReady", "* Machine b:\n  * NodeHealthy: boom"),
    ("ready-unknown", lambda: [m("a", cond("Ready", U, "ReadyUnknown", "* NodeHealthy: lost"))],
     "MachinesReady", U, "ReadyUnknown", "* Machine a:\n  * NodeHealthy: lost"),
    ("up-to-date-no-machines", lambda: [], "MachinesUpToDate", T, "NoReplicas", ""),
    ("up-to-date-all", lambda: [m("a")], "MachinesUpToDate", T, "UpToDate", ""),
    ("up-to-date-one-behind",
     lambda: [m("a", cond("UpToDate", F, "NotUpToDate", "* Version v1, v2 required"))],
     "MachinesUpToDate", F, "NotUpToDate", "* Machine a:\n  * Version v1, v2 required"),
    ("up-to-date-young-machine-without-condition-ignored",
     lambda: [machine("young", tuple(c for c in HEALTHY if c.type != "UpToDate"), set_name="ms1", age=5)],
     "MachinesUpToDate", T, "NoReplicas", ""),
    ("up-to-date-old-machine-without-condition-unknown",
     lambda: [machine("old", tuple(c for c in HEALTHY if c.type != "UpToDate"), set_name="ms1", age=60)],
     "MachinesUpToDate", U, "UpToDateUnknown", "* Machine old: Condition UpToDate not yet reported"),
    ("ready-machine-not-reporting-ready-yet-listed",
     lambda: [m("a"), machine("new", [cond("BootstrapConfigReady", F, "NotReady", "waiting")],
                              set_name="ms1")],
     "MachinesReady", U, "ReadyUnknown", "* Machine new: Condition Ready not yet reported"),
]


@pytest.mark.parametrize(("build", "type_", "status", "reason", "message"), [c[1:] for c in AGGREGATE_CASES],
                         ids=[c[0] for c in AGGREGATE_CASES])
def test_machine_aggregates(build: Callable[[], list[Machine]], type_: str, status: Status, reason: str,
                            message: str) -> None:
    expect(evaluate(machine_set("ms1", 2), build()), type_, status, reason, message)


# ---- Remediating ------------------------------------------------------------------------------

REMEDIATING_CASES: list[tuple[str, Callable[[], list[Machine]], Status, str, str]] = [
    ("all-healthy", lambda: [m("a", cond("HealthCheckSucceeded", T))], F, "NotRemediating", ""),
    ("unhealthy-not-to-be-remediated", lambda: [m("a", cond("HealthCheckSucceeded", F, "UnhealthyNode"))],
     F, "NotRemediating", "Machine a is not healthy (not to be remediated by MachineSet)"),
    ("waiting-for-remediation",
     lambda: [m("a", cond("HealthCheckSucceeded", F, "UnhealthyNode"),
                cond("OwnerRemediated", F, "WaitingForRemediation", "Waiting for remediation"))],
     T, "Remediating", "* Machine a: Waiting for remediation"),
]


@pytest.mark.parametrize(("build", "status", "reason", "message"), [c[1:] for c in REMEDIATING_CASES],
                         ids=[c[0] for c in REMEDIATING_CASES])
def test_remediating(build: Callable[[], list[Machine]], status: Status, reason: str, message: str) -> None:
    expect(evaluate(machine_set("ms1", 1), build()), "Remediating", status, reason, message)


# ---- Deleting, Paused -------------------------------------------------------------------------

DELETING_CASES: list[tuple[str, float | None, Callable[[], list[Machine]], Status, str, str]] = [
    ("not-deleting", None, lambda: [m("a")], F, "NotDeleting", ""),
    ("deleting-one-machine", 5.0, lambda: [m("a", deleted_ago=5)], T, "Deleting", "Deleting 1 Machine"),
    ("deleting-machines", 5.0, lambda: [m("a", deleted_ago=5), m("b", deleted_ago=5)], T, "Deleting",
     "Deleting 2 Machines"),
    ("deleting-stale-machine", 1000.0, lambda: [m("a", deleted_ago=1000)], T, "Deleting",
     "Deleting 1 Machine\n* Machine a is in deletion since more than 15m"),
    ("deletion-completed", 5.0, lambda: [], T, "Deleting", "Deletion completed"),
]


@pytest.mark.parametrize(("deleted_ago", "build", "status", "reason", "message"),
                         [c[1:] for c in DELETING_CASES], ids=[c[0] for c in DELETING_CASES])
def test_deleting(deleted_ago: float | None, build: Callable[[], list[Machine]], status: Status, reason: str,
                  message: str) -> None:
    ms = machine_set("ms1", 1, deleted_ago=deleted_ago)
    expect(evaluate(ms, build()), "Deleting", status, reason, message)


@pytest.mark.parametrize(("cluster_paused", "annotated", "message"), [
    (False, False, ""),
    (True, False, "Cluster spec.paused is set to true"),
    (True, True, "Cluster spec.paused is set to true, MachineSet has the cluster.x-k8s.io/paused annotation"),
], ids=["not-paused", "cluster-paused", "both"])
def test_paused(cluster_paused: bool, annotated: bool, message: str) -> None:
    ms = machine_set("ms1", paused_annotation=annotated)
    result = evaluate(ms, [], capi_cluster(paused=cluster_paused))
    paused = result.condition("Paused")
    assert paused is not None
    assert paused.status is (T if message else F) and paused.message == message


def test_machineset_has_no_phase_and_no_ready_or_available() -> None:
    result = evaluate(machine_set("ms1"), [m("a")])
    assert result.phase is None
    assert result.condition("Ready") is None and result.condition("Available") is None
