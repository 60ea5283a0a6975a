"""Machine status: upstream's TestSetUpdatingCondition, TestSetUpToDateCondition,
TestSetReadyCondition, TestCalculateDeletingConditionForSummary (as the Deleting line of Ready) and
TestAvailableCondition, ported as objects.

Upstream computes Available from the Ready condition it has just set; the port gives the Machine
the inputs that make Ready what the case says. Other Machine tables (bootstrap/infrastructure
mirroring, Node health) read conditions as reported and are left for the next pass.
"""

from __future__ import annotations

import dataclasses

import pytest

from exporter.engine.evaluate_types import Computed
from exporter.engine.machine import compute_machine
from exporter.engine.model import Base, Condition, Gate, Machine, MachineDeployment, MachineSet
from tests.engine.builders import NOW, F, T, capi_view, cond, machine, machine_deployment, machine_set
from tests.engine.upstream import Case, check, params

IN_MEMORY = ("the reason and message of a running in-place update come from the update's reconcile, not from "
             "an object; the engine gives upstream's defaults (InPlaceUpdating, \"In-place update in progress\")")
IN_PROGRESS = "in-place-updates.internal.cluster.x-k8s.io/update-in-progress"
HOUR = 3600.0


def run(m: Machine, *others: Base) -> Computed:
    return compute_machine(m, capi_view(m, *others), NOW)


def owned(*conditions: Condition, **fields: object) -> Machine:
    return machine("m", conditions, set_name="ms1", deployment_name="md1", **fields)


def ms(version: str = "v1.31.0", created_ago: float = HOUR) -> MachineSet:
    obj = machine_set("ms1", deployment_name="md1", version=version)
    return dataclasses.replace(obj, meta=dataclasses.replace(obj.meta, creation_timestamp=NOW - created_ago))


def md(version: str = "v1.31.0", rollout_after_in: float | None = None) -> MachineDeployment:
    after = None if rollout_after_in is None else NOW + rollout_after_in
    return machine_deployment("md1", version=version, rollout_after=after)


def up_to_date(m: Machine, *others: Base) -> Computed:
    return run(m, *others)


UPD, UTD, RDY = "TestSetUpdatingCondition", "TestSetUpToDateCondition", "TestSetReadyCondition"
FOO_TRUE = tuple(cond(t, T, "Foo") for t in ("BootstrapConfigReady", "InfrastructureReady", "NodeHealthy"))
NOT_DELETING, NOT_UPDATING = cond("Deleting", F, "NotDeleting"), cond("Updating", F, "NotUpdating")
DRAIN = ("Drain not completed yet (started at 2024-10-09T16:13:59Z):\n"
         "* Pods with deletionTimestamp that still exist: pod-2-deletionTimestamp-set-1, "
         "pod-2-deletionTimestamp-set-2, pod-2-deletionTimestamp-set-3, pod-3-to-trigger-eviction-successfully-1, "
         "pod-3-to-trigger-eviction-successfully-2, ... (2 more)\n"
         "* Pods with eviction failed:\n"
         "  * Cannot evict pod as it would violate the pod's disruption budget. The disruption budget pod-5-pdb "
         "needs 20 healthy pods and has 20 currently: pod-5-to-trigger-eviction-pdb-violated-1, "
         "pod-5-to-trigger-eviction-pdb-violated-2, pod-5-to-trigger-eviction-pdb-violated-3, ... (3 more)\n"
         "  * some other error 1: pod-6-to-trigger-eviction-some-other-error\n"
         "  * some other error 2: pod-7-to-trigger-eviction-some-other-error\n"
         "  * some other error 3: pod-8-to-trigger-eviction-some-other-error\n"
         "  * some other error 4: pod-9-to-trigger-eviction-some-other-error\n"
         "  * ... (1 more error applying to 1 Pod)")


def ready(*conditions: Condition, **fields: object) -> Computed:
    return run(machine("machine-test", conditions, **fields))


READY_CASES = [
    Case(RDY, "Accepts HealthCheckSucceeded to be missing", lambda: ready(*FOO_TRUE, NOT_DELETING, NOT_UPDATING),
         "Ready", ("True", "Ready", "")),
    Case(RDY, "Tolerates BootstrapConfig, InfraMachine and Node do not exists while the machine is deleting "
              "(waiting for pre-drain hooks)",
         lambda: ready(cond("BootstrapConfigReady", F, "ObjectDoesNotExist"),
                       cond("InfrastructureReady", F, "ObjectDeleted"), cond("NodeHealthy", F, "NodeDeleted"),
                       cond("Deleting", T, "WaitingForPreDrainHook", "Waiting for pre-drain hooks to succeed "
                                                                     "(hooks: test-hook)"),
                       NOT_UPDATING, deleted_ago=1.0),
         "Ready", ("False", "NotReady", "* Deleting: Machine deletion in progress, stage: WaitingForPreDrainHook")),
    Case(RDY, "Aggregates Ready condition correctly while the machine is updating",
         lambda: ready(*FOO_TRUE, NOT_DELETING, cond("Updating", T, "InPlaceUpdating", "In-place update in progress")),
         "Ready", ("False", "NotReady", "* Updating: In-place update in progress")),
    Case(RDY, "Aggregates Ready condition correctly while the machine is deleting (waiting for Node drain)",
         lambda: ready(*FOO_TRUE, cond("Deleting", T, "DrainingNode", DRAIN), NOT_UPDATING, deleted_ago=1.0),
         "Ready", ("False", "NotReady", "* Deleting: Machine deletion in progress, stage: DrainingNode")),
    Case(RDY, "Takes into account HealthCheckSucceeded when it exists",
         lambda: ready(*FOO_TRUE, cond("HealthCheckSucceeded", F, "SomeReason", "Some message"), NOT_DELETING,
                       NOT_UPDATING),
         "Ready", ("False", "NotReady", "* HealthCheckSucceeded: Some message")),
    Case(RDY, "Takes into account Readiness gates when defined",
         lambda: ready(*FOO_TRUE, cond("HealthCheckSucceeded", T, "Foo"),
                       cond("MyReadinessGate", F, "SomeReason", "Some message"),
                       cond("MyReadinessGateGateWithNegativePolarity", T, "SomeReason", "Some other message"),
                       NOT_DELETING, NOT_UPDATING,
                       gates=(Gate("MyReadinessGate"), Gate("MyReadinessGateGateWithNegativePolarity", True))),
         "Ready", ("False", "NotReady", "* MyReadinessGate: Some message\n"
                                        "* MyReadinessGateGateWithNegativePolarity: Some other message")),
    Case(RDY, "Groups readiness gates for control plane components and etcd member when possible and there is more "
              "than one condition for each category",
         lambda: ready(*FOO_TRUE, cond("HealthCheckSucceeded", T, "Foo"),
                       cond("APIServerSomething", F, "SomeReason", "Some control plane message"),
                       cond("ControllerManagerSomething", F, "SomeReason", "Some control plane message"),
                       cond("EtcdSomething", F, "SomeReason", "Some etcd message"), NOT_DELETING, NOT_UPDATING,
                       gates=(Gate("APIServerSomething"), Gate("ControllerManagerSomething"),
                              Gate("EtcdSomething"))),
         "Ready", ("False", "NotReady", "* Control plane components: Some control plane message\n"
                                        "* EtcdSomething: Some etcd message")),
]
UPDATING = cond("Updating", T, "InPlaceUpdating")

DRAIN_SUMMARY = DRAIN_STALE = (
    "Drain not completed yet (started at 2024-10-09T16:13:59Z):\n"
    "* Pods pod-2-deletionTimestamp-set-1, pod-3-to-trigger-eviction-successfully-1: deletionTimestamp set, "
    "but still not removed from the Node\n"
    "* Pod pod-5-to-trigger-eviction-pdb-violated-1: cannot evict pod as it would violate the pod's disruption "
    "budget. The disruption budget pod-5-pdb needs 20 healthy pods and has 20 currently\n"
    "* Pod pod-6-to-trigger-eviction-some-other-error: failed to evict Pod, some other error 1\n"
    "* Pod pod-9-wait-completed: waiting for completion\n"
    "After above Pods have been removed from the Node, the following Pods will be evicted: "
    "pod-7-eviction-later, pod-8-eviction-later")
DEL, AVL = "TestCalculateDeletingConditionForSummary", "TestAvailableCondition"
IN_SAME_RECONCILE = ("upstream sets Deleting in the same reconcile, before Ready; the engine, for a deleting Machine "
                     "that reports no Deleting, computes the stage itself (\"Deleting\")")


def deleting_ready(deleting: Condition | None, deleted_ago: float, **fields: object) -> Computed:
    """Ready of a deleting Machine whose other inputs hold: its only line is the Deleting summary."""
    return ready(*FOO_TRUE, *((deleting,) if deleting else ()), NOT_UPDATING, deleted_ago=deleted_ago, **fields)


HEALTHY_INPUTS = (*FOO_TRUE, NOT_DELETING, NOT_UPDATING)
FUTURE_READY = ("a Ready that turned True later than the clock reads (clock skew) with spec.minReadySeconds unset: "
                "the engine counts the Machine available at once, upstream waits until that time")
DELETING_CASES = [
    Case(DEL, "No Deleting condition", lambda: deleting_ready(None, 1.0), "Ready",
         ("False", "NotReady", "* Deleting: Machine deletion in progress"), differs=IN_SAME_RECONCILE),
    Case(DEL, "Deleting condition with DrainingNode since more than 15m",
         lambda: deleting_ready(cond("Deleting", T, "DrainingNode", DRAIN_STALE), 16 * 60.0,
                                drain_start_time=NOW - 360),
         "Ready", ("False", "NotReady", "* Deleting: Machine deletion in progress since more than 15m, stage: "
                                        "DrainingNode, delay likely due to PodDisruptionBudgets, Pods not "
                                        "terminating, Pod eviction errors, Pods not completed yet")),
    Case(DEL, "Deleting condition with WaitingForVolumeDetach since more than 15m",
         lambda: deleting_ready(cond("Deleting", T, "WaitingForVolumeDetach",
                                     "Waiting for Node volumes to be detached (started at 2024-10-09T16:13:59Z)"),
                                16 * 60.0),
         "Ready", ("False", "NotReady", "* Deleting: Machine deletion in progress since more than 15m, stage: "
                                        "WaitingForVolumeDetach")),
    Case(DEL, "Deleting condition with WaitingForPreDrainHook",
         lambda: deleting_ready(cond("Deleting", T, "WaitingForPreDrainHook",
                                     "Waiting for pre-drain hooks to succeed (hooks: test-hook)"), 1.0),
         "Ready", ("False", "NotReady", "* Deleting: Machine deletion in progress, stage: WaitingForPreDrainHook")),
    Case(AVL, "Not Ready", lambda: ready(cond("Ready", F, "SomeReason"), *FOO_TRUE[:2],
                                         cond("NodeHealthy", F, "SomeReason"), NOT_DELETING, NOT_UPDATING),
         "Available", ("False", "NotReady", "")),
    Case(AVL, "Ready but still waiting for MinReadySeconds",
         lambda: ready(Condition("Ready", T, "Ready", "", NOW + 10), *HEALTHY_INPUTS), "Available",
         ("False", "WaitingForMinReadySeconds", ""), differs=FUTURE_READY),
    Case(AVL, "Ready and available", lambda: ready(Condition("Ready", T, "Ready", "", NOW - 10), *HEALTHY_INPUTS),
         "Available", ("True", "Available", "")),
]

CASES = [
    *READY_CASES,
    *DELETING_CASES,
    Case(UPD, "A machine not in-place updating is not updating", lambda: run(machine("m", ())), "Updating",
         ("False", "NotUpdating", "")),
    Case(UPD, "A machine starting in-place update is updating",
         lambda: run(machine("m", (), update_in_progress=True)), "Updating", ("True", "foo", "bar"),
         differs=IN_MEMORY),
    Case(UPD, "A machine in-place updating is updating", lambda: run(machine("m", (), update_in_progress=True)),
         "Updating", ("True", "foo", "bar"), differs=IN_MEMORY),
    Case(UPD, "A machine stopping in-place updating is updating",
         lambda: run(machine("m", (), update_in_progress=True)), "Updating", ("True", "foo", "bar"),
         differs=IN_MEMORY),
    Case(UTD, "up-to-date", lambda: up_to_date(owned(), ms(), md()), "UpToDate", ("True", "UpToDate", "")),
    Case(UTD, "updating", lambda: up_to_date(owned(UPDATING), ms(), md()), "UpToDate",
         ("False", "Updating", "* In-place update in progress")),
    Case(UTD, "kubeletVersion out of sync",
         lambda: up_to_date(owned(version="v1.31.0", node_info={"kubeletVersion": "v1.30.0"}), ms(), md()),
         "UpToDate", ("False", "Updating", "* Node.status.nodeInfo.kubeletVersion v1.30.0, v1.31.0 required")),
    Case(UTD, "updating (message from Updating)",
         lambda: up_to_date(owned(cond("Updating", T, "InPlaceUpdating",
                                       "In-place update in progress: Extension is updating Machine")), ms(), md()),
         "UpToDate", ("False", "Updating", "* In-place update in progress: Extension is updating Machine")),
    Case(UTD, "not up-to-date", lambda: up_to_date(owned(), ms("v1.30.0"), md("v1.31.0")), "UpToDate",
         ("False", "NotUpToDate", "* Version v1.30.0, v1.31.0 required")),
    Case(UTD, "up-to-date, spec.rolloutAfter not expired",
         lambda: up_to_date(owned(), ms(created_ago=HOUR), md(rollout_after_in=HOUR)), "UpToDate",
         ("True", "UpToDate", "")),
    Case(UTD, "up-to-date, rollout After expired and a new MS created at rollout after time",
         lambda: up_to_date(owned(), ms(created_ago=HOUR), md(rollout_after_in=-HOUR)), "UpToDate",
         ("True", "UpToDate", "")),
    Case(UTD, "not up-to-date, rollout After expired",
         lambda: up_to_date(owned(), ms(created_ago=2 * HOUR), md(rollout_after_in=-HOUR)), "UpToDate",
         ("False", "NotUpToDate", "* MachineDeployment spec.rolloutAfter expired")),
    Case(UTD, "not up-to-date, rollout After expired and a new MS created",
         lambda: up_to_date(owned(), ms(created_ago=HOUR), md(rollout_after_in=-2 * HOUR)), "UpToDate",
         ("True", "UpToDate", "")),
    Case(UTD, "not up-to-date, version changed, rollout After expired",
         lambda: up_to_date(owned(), ms("v1.31.0", created_ago=2 * HOUR), md("v1.30.0", rollout_after_in=-HOUR)),
         "UpToDate", ("False", "NotUpToDate", "* Version v1.31.0, v1.30.0 required\n"
                                              "* MachineDeployment spec.rolloutAfter expired")),
]


@pytest.mark.parametrize("case", params(CASES))
def test_upstream_machine(case: Case) -> None:
    check(case)


# The two "no condition returned" cases: a Machine without a MachineDeployment gets no UpToDate.
@pytest.mark.parametrize("others", [(), (machine_set("ms1"),)], ids=[
    "TestSetUpToDateCondition/no-condition-returned-for-stand-alone-Machines",
    "TestSetUpToDateCondition/no-condition-returned-for-stand-alone-MachineSet"])
def test_upstream_machine_without_deployment_has_no_up_to_date(others: tuple[Base, ...]) -> None:
    m = machine("m", (), set_name="ms1" if others else "")
    assert run(m, *others).condition("UpToDate") is None
