"""MachineDeployment rules: counters, Available math, scaling, rollout, roll-ups, deletion, phase."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from exporter.engine.evaluate_types import Computed
from exporter.engine.machine import compute_machine
from exporter.engine.machinedeployment import compute_machinedeployment
from exporter.engine.machineset import compute_machineset
from exporter.engine.model import Condition, Counters, Machine, MachineDeployment, MachineSet, Status
from tests.engine.builders import (
    NOW,
    F,
    T,
    U,
    capi_view,
    cond,
    healthy_machine_conditions,
    machine,
    machine_deployment,
    machine_set,
)

HEALTHY = healthy_machine_conditions()


def m(name: str, *changed: Condition, ms: str = "ms1", **fields: object) -> Machine:
    """A healthy Machine of MachineDeployment md1 (MachineSet ``ms``) with some conditions replaced."""
    types = {c.type for c in changed}
    own = (*(c for c in HEALTHY if c.type not in types), *changed)
    return machine(name, own, set_name=ms, deployment_name="md1", **fields)


def ms_(name: str = "ms1", replicas: int | None = 1, **fields: object) -> MachineSet:
    return machine_set(name, replicas, deployment_name="md1", **fields)


def evaluate(md: MachineDeployment, sets: Sequence[MachineSet], machines: Sequence[Machine],
             skip_sets: bool = False) -> Computed:
    """Machines, then MachineSets (unless ``skip_sets``: no computed result), then the deployment."""
    view = capi_view(md, *sets, *machines)
    for each in machines:
        view.record(each.key, compute_machine(each, view, NOW))
    if not skip_sets:
        for ms in sets:
            view.record(ms.key, compute_machineset(ms, view, NOW))
    return compute_machinedeployment(md, view, NOW)


def expect(result: Computed, type_: str, status: Status, reason: str, message: str | None = None) -> None:
    c = result.condition(type_)
    assert c is not None, f"{type_} missing"
    assert (c.status, c.reason) == (status, reason), c
    if message is not None:
        assert c.message == message


def not_available(name: str, **fields: object) -> Machine:
    return m(name, cond("Ready", F, "NotReady"), cond("Available", F, "NotReady"), **fields)


# ---- counters ---------------------------------------------------------------------------------

def test_counters_without_machine_sets_are_unset() -> None:
    result = evaluate(machine_deployment("md1", 3), [], [])
    assert result.counters == {"desiredReplicas": 3, "replicas": None, "readyReplicas": None,
                               "availableReplicas": None, "upToDateReplicas": None}


def test_counters_sum_the_machine_sets_computed_counters() -> None:
    machines = [m("a"), not_available("b"), m("c", cond("UpToDate", F, "NotUpToDate"), ms="ms2")]
    result = evaluate(machine_deployment("md1", 3), [ms_("ms1", 2), ms_("ms2", 1)], machines)
    assert result.counters == {"desiredReplicas": 3, "replicas": 3, "readyReplicas": 2,
                               "availableReplicas": 2, "upToDateReplicas": 2}


def test_counters_fall_back_to_reported_and_keep_unset_ones_unset() -> None:
    sets = [ms_("ms1", 2, reported=Counters(replicas=2, ready=None, available=1, up_to_date=None))]
    result = evaluate(machine_deployment("md1", 2), sets, [], skip_sets=True)
    assert result.counters == {"desiredReplicas": 2, "replicas": 2, "readyReplicas": None,
                               "availableReplicas": 1, "upToDateReplicas": None}


# ---- Available --------------------------------------------------------------------------------

AVAILABLE_CASES: list[tuple[str, MachineDeployment, int | None, Status, str, str]] = [
    ("replicas-unset", machine_deployment("md1", None), 1, U, "WaitingForReplicasSet",
     "Waiting for spec.replicas set"),
    ("available-unset", machine_deployment("md1", 3), None, U, "WaitingForAvailableReplicasSet",
     "Waiting for status.availableReplicas set"),
    ("all-available-default-strategy", machine_deployment("md1", 3), 3, T, "Available", ""),
    ("one-missing-default-max-unavailable-0", machine_deployment("md1", 3), 2, F, "NotAvailable",
     "2 available replicas, at least 3 required "
     "(spec.strategy.rollout.maxUnavailable is 0, spec.replicas is 3)"),
    ("percent-max-unavailable-rounds-down", machine_deployment("md1", 3, max_unavailable="34%"), 2, T,
     "Available", ""),
    ("percent-max-unavailable-not-enough", machine_deployment("md1", 3, max_unavailable="34%"), 1, F,
     "NotAvailable",
     "1 available replicas, at least 2 required "
     "(spec.strategy.rollout.maxUnavailable is 34%, spec.replicas is 3)"),
    ("zero-surge-and-unavailable-allows-one", machine_deployment("md1", 3, max_surge=0, max_unavailable=0), 2,
     T, "Available", ""),
    ("max-unavailable-capped-at-replicas", machine_deployment("md1", 2, max_unavailable=5), 0, T, "Available",
     ""),
    ("on-delete-requires-all", machine_deployment("md1", 3, strategy="OnDelete", max_unavailable=2), 2, F,
     "NotAvailable", "2 available replicas, at least 3 required"),
    ("zero-replicas", machine_deployment("md1", 0), 0, T, "Available", ""),
    ("deleting", machine_deployment("md1", 3, deleted_ago=5), 1, F, "NotAvailable", "Deletion in progress"),
]


@pytest.mark.parametrize(("md", "available", "status", "reason", "message"), [c[1:] for c in AVAILABLE_CASES],
                         ids=[c[0] for c in AVAILABLE_CASES])
def test_available(md: MachineDeployment, available: int | None, status: Status, reason: str,
                   message: str) -> None:
    sets: list[MachineSet] = []
    machines: list[Machine] = []
    if available is not None:
        sets = [ms_("ms1", available)]
        machines = [m(f"m{i}") for i in range(available)]
    expect(evaluate(md, sets, machines), "Available", status, reason, message)


# ---- scaling ----------------------------------------------------------------------------------

SCALING_CASES: list[tuple[str, int | None, int, float | None, str, Status, str, str]] = [
    ("up-replicas-unset", None, 1, None, "ScalingUp", U, "WaitingForReplicasSet",
     "Waiting for spec.replicas set"),
    ("up", 3, 1, None, "ScalingUp", T, "ScalingUp", "Scaling up from 1 to 3 replicas"),
    ("up-not-needed", 1, 1, None, "ScalingUp", F, "NotScalingUp", ""),
    ("down", 1, 2, None, "ScalingDown", T, "ScalingDown", "Scaling down from 2 to 1 replicas"),
    ("down-not-needed", 2, 2, None, "ScalingDown", F, "NotScalingDown", ""),
    ("down-while-deleting", 2, 2, 5.0, "ScalingDown", T, "ScalingDown", "Scaling down from 2 to 0 replicas"),
]


@pytest.mark.parametrize(("replicas", "current", "deleted_ago", "type_", "status", "reason", "message"),
                         [c[1:] for c in SCALING_CASES], ids=[c[0] for c in SCALING_CASES])
def test_scaling(replicas: int | None, current: int, deleted_ago: float | None, type_: str, status: Status,
                 reason: str, message: str) -> None:
    md = machine_deployment("md1", replicas, deleted_ago=deleted_ago)
    result = evaluate(md, [ms_("ms1", current)], [m(f"m{i}") for i in range(current)])
    expect(result, type_, status, reason, message)


def test_scaling_down_names_stale_deletions() -> None:
    machines = [m("a"), m("b", deleted_ago=3600)]
    result = evaluate(machine_deployment("md1", 1), [ms_("ms1", 1)], machines)
    expect(result, "ScalingDown", T, "ScalingDown",
           "Scaling down from 2 to 1 replicas\n* Machine b is in deletion since more than 15m")


# ---- RollingOut and machine roll-ups ----------------------------------------------------------

def test_not_rolling_out_when_all_machines_are_up_to_date() -> None:
    expect(evaluate(machine_deployment("md1", 1), [ms_()], [m("a")]), "RollingOut", F, "NotRollingOut", "")


def test_rolling_out_lists_the_union_of_reasons_versions_first() -> None:
    machines = [
        m("a", cond("UpToDate", F, "NotUpToDate", "* DockerMachine is not up-to-date")),
        m("b", cond("UpToDate", F, "NotUpToDate",
                    "* Version v1.29.0, v1.30.0 required\n* DockerMachine is not up-to-date")),
        m("c", ms="ms2"),
    ]
    result = evaluate(machine_deployment("md1", 3), [ms_("ms1", 2), ms_("ms2", 1)], machines)
    expect(result, "RollingOut", T, "RollingOut",
           "Rolling out 2 not up-to-date replicas\n* Version v1.29.0, v1.30.0 required\n"
           "* DockerMachine is not up-to-date")


def test_rollups_cover_machines_of_every_machine_set() -> None:
    machines = [m("a"), m("b", cond("Ready", F, "NotReady", "* NodeHealthy: x"), ms="ms2")]
    result = evaluate(machine_deployment("md1", 2), [ms_("ms1"), ms_("ms2")], machines)
    expect(result, "MachinesReady", F, "NotReady", "* Machine b:\n  * NodeHealthy: x")
    expect(result, "MachinesUpToDate", T, "UpToDate", "")


def test_young_machine_not_reporting_up_to_date_is_left_out_though_its_templates_match() -> None:
    young = machine("young", [c for c in HEALTHY if c.type != "UpToDate"], set_name="ms1",
                    deployment_name="md1", age=5)
    result = evaluate(machine_deployment("md1", 1), [ms_()], [young])
    expect(result, "MachinesUpToDate", T, "NoReplicas", "")


def test_machines_not_reporting_ready_are_listed_as_not_yet_reported() -> None:
    new = machine("new", [cond("BootstrapConfigReady", F, "NotReady", "waiting")], set_name="ms1",
                  deployment_name="md1")
    result = evaluate(machine_deployment("md1", 2), [ms_(replicas=2)], [m("a"), new])
    expect(result, "MachinesReady", U, "ReadyUnknown", "* Machine new: Condition Ready not yet reported")
    assert result.counters["readyReplicas"] == 1


def test_machines_ready_without_machines() -> None:
    expect(evaluate(machine_deployment("md1", 0), [], []), "MachinesReady", T, "NoReplicas", "")


def test_remediating_names_the_deployment_as_owner() -> None:
    machines = [m("a", cond("HealthCheckSucceeded", F, "UnhealthyNode"))]
    expect(evaluate(machine_deployment("md1", 1), [ms_()], machines), "Remediating", F, "NotRemediating",
           "Machine a is not healthy (not to be remediated by MachineDeployment/MachineSet)")


# ---- Deleting, Paused, phase ------------------------------------------------------------------

DELETING_CASES: list[tuple[str, float | None, int, int, Status, str, str]] = [
    ("not-deleting", None, 1, 1, F, "NotDeleting", ""),
    ("machines-left", 5.0, 1, 2, T, "Deleting", "Deleting 2 Machines"),
    ("only-machine-set-left-keeps-upstreams-plural", 5.0, 1, 0, T, "Deleting", "Deleting 1 MachineSets"),
    ("machine-sets-left", 5.0, 2, 0, T, "Deleting", "Deleting 2 MachineSets"),
    ("completed", 5.0, 0, 0, T, "Deleting", "Deletion completed"),
]


@pytest.mark.parametrize(("deleted_ago", "sets", "machines", "status", "reason", "message"),
                         [c[1:] for c in DELETING_CASES], ids=[c[0] for c in DELETING_CASES])
def test_deleting(deleted_ago: float | None, sets: int, machines: int, status: Status, reason: str,
                  message: str) -> None:
    md = machine_deployment("md1", 1, deleted_ago=deleted_ago)
    machine_sets = [ms_(f"ms{i}") for i in range(sets)]
    result = evaluate(md, machine_sets, [m(f"m{i}", ms="ms0") for i in range(machines)])
    expect(result, "Deleting", status, reason, message)


def test_paused_by_annotation() -> None:
    result = evaluate(machine_deployment("md1", 1, paused_annotation=True), [], [])
    expect(result, "Paused", T, "Paused", "MachineDeployment has the cluster.x-k8s.io/paused annotation")


PHASE_CASES: list[tuple[str, MachineDeployment, int, str]] = [
    ("reported-wins", machine_deployment("md1", 3, phase="Running"), 1, "Running"),
    ("replicas-unset", machine_deployment("md1", None), 1, "Unknown"),
    ("deleting", machine_deployment("md1", 1, deleted_ago=5), 1, "ScalingDown"),
    ("running", machine_deployment("md1", 2), 2, "Running"),
    ("scaling-up", machine_deployment("md1", 3), 1, "ScalingUp"),
    ("scaling-down", machine_deployment("md1", 1), 2, "ScalingDown"),
    ("scaling-up-from-nothing", machine_deployment("md1", 1), 0, "ScalingUp"),
]


@pytest.mark.parametrize(("md", "current", "phase"), [c[1:] for c in PHASE_CASES],
                         ids=[c[0] for c in PHASE_CASES])
def test_phase(md: MachineDeployment, current: int, phase: str) -> None:
    sets = [ms_("ms1", current)] if current else []
    assert evaluate(md, sets, [m(f"m{i}") for i in range(current)]).phase == phase
