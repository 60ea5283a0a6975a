"""MachineSet status: upstream's machineset_controller_status_test.go tables, ported as objects.

Cases whose only input is a controller failure ("getAndAdoptMachines failed": InternalError) are
not ported: no object shows them.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from exporter.engine.evaluate_types import Computed
from exporter.engine.machine import compute_machine
from exporter.engine.machineset import compute_machineset
from exporter.engine.model import Condition, Machine
from tests.engine.builders import NOW, F, T, U, capi_view, cond, machine, machine_set
from tests.engine.upstream import DRAIN, Case, check, params

STALE = 3600.0  # deleted an hour ago
TEMPLATES = "the MachineSet's bootstrap and infrastructure templates are not watched"
PREFLIGHT = "the MachineSet's scale-up preflight check results live only in controller memory"
DRAIN_SHORT = ("Drain not completed yet (started at 2024-10-09T16:13:59Z):\n"
               "* Pods pod-2-deletionTimestamp-set-1, pod-3-to-trigger-eviction-successfully-1: "
               "deletionTimestamp set, but still not removed from the Node\n"
               "After above Pods have been removed from the Node, the following Pods will be evicted: "
               "pod-7-eviction-later, pod-8-eviction-later")
DRAIN_NO_COMPLETION = DRAIN.replace("* Pod pod-9-wait-completed: waiting for completion\n", "")


def fake(name: str, *conditions: Condition, **fields: object) -> Machine:
    """Upstream's fakeMachine: only a name, plus what the case sets."""
    return machine(name, conditions, set_name="ms1", **fields)


def draining(name: str, message: str = DRAIN, drain_ago: float | None = 360.0) -> Machine:
    return fake(name, cond("Deleting", T, "DrainingNode", message), deleted_ago=STALE,
                drain_start_time=None if drain_ago is None else NOW - drain_ago)


def ms(replicas: int | None = 0, machines: Iterable[Machine] = (), deleting: bool = False
       ) -> Computed:
    obj = machine_set("ms1", replicas, deleted_ago=1.0 if deleting else None)
    owned = list(machines)
    view = capi_view(obj, *owned)
    for m in owned:
        view.record(m.key, compute_machine(m, view, NOW))
    return compute_machineset(obj, view, NOW)


def counts(replicas: int, ready: int, available: int, up_to_date: int) -> dict[str, int | None]:
    return {"replicas": replicas, "readyReplicas": ready, "availableReplicas": available,
            "upToDateReplicas": up_to_date}


def each(type_: str, *statuses: str) -> list[Machine]:
    by = {"True": T, "False": F, "Unknown": U}
    return [fake(f"m{i}", cond(type_, by[s])) for i, s in enumerate(statuses)]


ALL_TRUE = (cond("Ready", T), cond("Available", T), cond("UpToDate", T))
READY = cond("Ready", T, "Ready")
IN_PROGRESS = "in-place-updates.internal.cluster.x-k8s.io/update-in-progress"

R = "Test_setReplicas"
UP = "Test_setScalingUpCondition"
DOWN = "Test_setScalingDownCondition"
MR = "Test_setMachinesReadyCondition"
MU = "Test_setMachinesUpToDateCondition"
REM = "Test_setRemediatingCondition"
DEL = "Test_setDeletingCondition"
STALE_T = "Test_aggregateStaleMachines"

HC_OK = cond("HealthCheckSucceeded", T)
HC_FAIL = cond("HealthCheckSucceeded", F)
OWNER_DELETING = cond("OwnerRemediated", F, "MachineDeleting", "Machine is deleting")
OWNER_WAITING = cond("OwnerRemediated", F, "WaitingForRemediation",
                     'KubeadmControlPlane ns1/cp1 is upgrading ("ControlPlaneIsStable" preflight check failed)')


def deleting_set_with(*machines: Machine) -> Computed:
    return ms(0, machines, deleting=True)


def stale_line(message: str, total: int) -> tuple[str, str, str]:
    """aggregateStaleMachines' message as the Deleting condition of a deleting MachineSet shows it."""
    if total == 0:
        return ("True", "Deleting", "Deletion completed")
    noun = "Machine" if total == 1 else "Machines"
    return ("True", "Deleting", f"Deleting {total} {noun}" + (f"\n* {message}" if message else ""))


CASES = [
    # setReplicas
    Case(R, "no machines", lambda: ms(), "counters", counts(0, 0, 0, 0)),
    Case(R, "should count only ready machines", lambda: ms(3, each("Ready", "True", "False", "Unknown")),
         "counters", counts(3, 1, 0, 0)),
    Case(R, "should count only available machines",
         lambda: ms(3, each("Available", "True", "False", "Unknown")), "counters", counts(3, 0, 1, 0)),
    Case(R, "should count only up-to-date machines",
         lambda: ms(3, each("UpToDate", "True", "False", "Unknown")), "counters", counts(3, 0, 0, 1)),
    Case(R, "should count all conditions from a machine",
         lambda: ms(1, [fake("m", *ALL_TRUE, version="v1.31.1")]), "counters", counts(1, 1, 1, 1)),
    Case(R, "should aggregate machine spec versions",
         lambda: ms(3, [fake("a", version="v1.31.1"), fake("b", version="v1.31.1"),
                        fake("c", version="v1.32.0")]), "counters", counts(3, 0, 0, 0)),
    Case(R, "In-place updating machines should not be counted",
         lambda: ms(3, [fake("a", *ALL_TRUE, update_in_progress=True),
                        fake("b", *ALL_TRUE, update_in_progress=True),
                        fake("c", *ALL_TRUE, update_in_progress=True)]), "counters", counts(3, 0, 0, 0)),
    # setScalingUpCondition
    Case(UP, "not scaling up and no machines", lambda: ms(0), "ScalingUp", ("False", "NotScalingUp", "")),
    Case(UP, "not scaling up and no machines and bootstrapConfig object not found", lambda: ms(0), "ScalingUp",
         ("False", "NotScalingUp", "Scaling up would be blocked because KubeadmBootstrapTemplate does not exist"),
         differs=TEMPLATES),
    Case(UP, "not scaling up and no machines and infrastructure object not found", lambda: ms(0), "ScalingUp",
         ("False", "NotScalingUp", "Scaling up would be blocked because DockerMachineTemplate does not exist"),
         differs=TEMPLATES),
    Case(UP, "not scaling up and no machines and bootstrapConfig and infrastructure object not found",
         lambda: ms(0), "ScalingUp",
         ("False", "NotScalingUp", "Scaling up would be blocked because KubeadmBootstrapTemplate and "
                                   "DockerMachineTemplate do not exist"), differs=TEMPLATES),
    Case(UP, "scaling up", lambda: ms(3), "ScalingUp", ("True", "ScalingUp", "Scaling up from 0 to 3 replicas")),
    Case(UP, "scaling up and blocked by bootstrap object", lambda: ms(3), "ScalingUp",
         ("True", "ScalingUp", "Scaling up from 0 to 3 replicas is blocked because:\n"
                               "* KubeadmBootstrapTemplate does not exist"), differs=TEMPLATES),
    Case(UP, "scaling up and blocked by infrastructure object", lambda: ms(3), "ScalingUp",
         ("True", "ScalingUp", "Scaling up from 0 to 3 replicas is blocked because:\n"
                               "* DockerMachineTemplate does not exist"), differs=TEMPLATES),
    Case(UP, "scaling up and blocked by bootstrap and infrastructure object and preflight checks",
         lambda: ms(3), "ScalingUp",
         ("True", "ScalingUp", "Scaling up from 0 to 3 replicas is blocked because:\n"
                               "* MachineSet version (1.25.5) and ControlPlane version (1.26.2) do not conform "
                               "to kubeadm version skew policy as kubeadm only supports joining with the same "
                               "major+minor version as the control plane (\"KubeadmVersionSkew\" preflight "
                               "check failed)\n"
                               "* KubeadmBootstrapTemplate and DockerMachineTemplate do not exist"),
         differs=PREFLIGHT),
    Case(UP, "deleting, don't show block message when templates are not found",
         lambda: ms(3, [fake("a"), fake("b"), fake("c")], deleting=True), "ScalingUp",
         ("False", "NotScalingUp", "")),
    # setScalingDownCondition
    Case(DOWN, "not scaling down and no machines", lambda: ms(0), "ScalingDown",
         ("False", "NotScalingDown", "")),
    Case(DOWN, "not scaling down because scaling up", lambda: ms(1), "ScalingDown",
         ("False", "NotScalingDown", "")),
    Case(DOWN, "scaling down to zero", lambda: ms(0, [fake("machine-1")]), "ScalingDown",
         ("True", "ScalingDown", "Scaling down from 1 to 0 replicas")),
    Case(DOWN, "scaling down with 1 stale machine",
         lambda: ms(1, [draining("stale-machine-1"), fake("machine-2")]), "ScalingDown",
         ("True", "ScalingDown", "Scaling down from 2 to 1 replicas\n* Machine stale-machine-1 is in deletion "
                                 "since more than 15m, delay likely due to PodDisruptionBudgets, Pods not "
                                 "terminating, Pod eviction errors, Pods not completed yet")),
    Case(DOWN, "scaling down with 3 stale machines",
         lambda: ms(1, [fake(f"stale-machine-{i}", deleted_ago=STALE) for i in (2, 1, 3)] + [fake("machine-4")]),
         "ScalingDown", ("True", "ScalingDown", "Scaling down from 4 to 1 replicas\n* Machines stale-machine-1, "
                                                "stale-machine-2, stale-machine-3 are in deletion since more "
                                                "than 15m")),
    Case(DOWN, "scaling down with 5 stale machines",
         lambda: ms(1, [fake(f"stale-machine-{i}", deleted_ago=STALE) for i in (5, 4, 2, 3, 1)]
                    + [fake("machine-6")]),
         "ScalingDown", ("True", "ScalingDown", "Scaling down from 6 to 1 replicas\n* Machines stale-machine-1, "
                                                "stale-machine-2, stale-machine-3, ... (2 more) are in deletion "
                                                "since more than 15m")),
    Case(DOWN, "deleting machineset without replicas", lambda: ms(1, deleting=True), "ScalingDown",
         ("False", "NotScalingDown", "")),
    Case(DOWN, "deleting machineset having 1 replica", lambda: ms(1, [fake("machine-1")], deleting=True),
         "ScalingDown", ("True", "ScalingDown", "Scaling down from 1 to 0 replicas")),
    # setMachinesReadyCondition
    Case(MR, "no machines", lambda: ms(), "MachinesReady", ("True", "NoReplicas", "")),
    Case(MR, "one machine is ready", lambda: ms(1, [fake("machine-1", READY)]), "MachinesReady",
         ("True", "Ready", "")),
    Case(MR, "all machines are ready", lambda: ms(2, [fake("machine-1", READY), fake("machine-2", READY)]),
         "MachinesReady", ("True", "Ready", "")),
    Case(MR, "one ready, one has nothing reported", lambda: ms(2, [fake("machine-1", READY), fake("machine-2")]),
         "MachinesReady", ("Unknown", "ReadyUnknown", "* Machine machine-2: Condition Ready not yet reported")),
    Case(MR, "one ready, one reporting not ready, one reporting unknown, one reporting deleting",
         lambda: ms(4, [fake("machine-1", READY),
                        fake("machine-2", cond("Ready", F, "SomeReason", "HealthCheckSucceeded: Some message")),
                        fake("machine-3", cond("Ready", U, "SomeUnknownReason", "Some unknown message")),
                        fake("machine-4", cond("Ready", F, "Deleting",
                                               "Deleting: Machine deletion in progress, stage: DrainingNode"))]),
         "MachinesReady", ("False", "NotReady", "* Machine machine-2: HealthCheckSucceeded: Some message\n"
                                                "* Machine machine-4: Deleting: Machine deletion in progress, "
                                                "stage: DrainingNode\n"
                                                "* Machine machine-3: Some unknown message")),
    # setMachinesUpToDateCondition
    Case(MU, "no machines", lambda: ms(), "MachinesUpToDate", ("True", "NoReplicas", "")),
    Case(MU, "One machine up-to-date", lambda: ms(1, [fake("up-to-date-1", cond("UpToDate", T, "some-reason-1"))]),
         "MachinesUpToDate", ("True", "UpToDate", "")),
    Case(MU, "One machine unknown",
         lambda: ms(1, [fake("unknown-1", cond("UpToDate", U, "some-unknown-reason-1", "some unknown message"))]),
         "MachinesUpToDate", ("Unknown", "UpToDateUnknown", "* Machine unknown-1: some unknown message")),
    Case(MU, "One machine not up-to-date",
         lambda: ms(1, [fake("not-up-to-date-machine-1", cond("UpToDate", F, "some-not-up-to-date-reason",
                                                              "some not up-to-date message"))]),
         "MachinesUpToDate",
         ("False", "NotUpToDate", "* Machine not-up-to-date-machine-1: some not up-to-date message")),
    Case(MU, "One machine without up-to-date condition, one new Machines without up-to-date condition",
         lambda: ms(2, [fake("no-condition-machine-1"), fake("no-condition-machine-2-new", age=5.0)]),
         "MachinesUpToDate",
         ("Unknown", "UpToDateUnknown", "* Machine no-condition-machine-1: Condition UpToDate not yet reported")),
    Case(MU, "Two machines not up-to-date, two up-to-date, two not reported",
         lambda: ms(6, [fake("up-to-date-1", cond("UpToDate", T, "TestUpToDate")),
                        fake("up-to-date-2", cond("UpToDate", T, "TestUpToDate")),
                        *(fake(f"not-up-to-date-machine-{i}", cond("UpToDate", F, "TestNotUpToDate",
                                                                   "This is not up-to-date message"))
                          for i in (1, 2)),
                        fake("no-condition-machine-1"), fake("no-condition-machine-2")]),
         "MachinesUpToDate",
         ("False", "NotUpToDate", "* Machines not-up-to-date-machine-1, not-up-to-date-machine-2: This is not "
                                  "up-to-date message\n* Machines no-condition-machine-1, "
                                  "no-condition-machine-2: Condition UpToDate not yet reported")),
    # setRemediatingCondition
    Case(REM, "Without unhealthy machines", lambda: ms(2, [fake("m1"), fake("m2")]), "Remediating",
         ("False", "NotRemediating", "")),
    Case(REM, "With machines to be remediated by MS",
         lambda: ms(3, [fake("m1", HC_OK), fake("m2", HC_FAIL), fake("m3", HC_FAIL, OWNER_DELETING)]),
         "Remediating", ("True", "Remediating", "* Machine m3: Machine is deleting")),
    Case(REM, "With machines to be remediated by MS and preflight check error",
         lambda: ms(4, [fake("m1", HC_OK), fake("m2", HC_FAIL), fake("m3", HC_FAIL, OWNER_DELETING),
                        fake("m4", HC_FAIL, OWNER_WAITING)]),
         "Remediating", ("True", "Remediating", "* Machine m3: Machine is deleting\n"
                                                "* Machine m4: KubeadmControlPlane ns1/cp1 is upgrading "
                                                "(\"ControlPlaneIsStable\" preflight check failed)")),
    Case(REM, "With one unhealthy machine not to be remediated by MS",
         lambda: ms(3, [fake("m1", HC_OK), fake("m2", HC_FAIL), fake("m3", HC_OK)]), "Remediating",
         ("False", "NotRemediating", "Machine m2 is not healthy (not to be remediated by MachineSet)")),
    Case(REM, "With two unhealthy machine not to be remediated by MS",
         lambda: ms(3, [fake("m1", HC_FAIL), fake("m2", HC_FAIL), fake("m3", HC_OK)]), "Remediating",
         ("False", "NotRemediating", "Machines m1, m2 are not healthy (not to be remediated by MachineSet)")),
    # setDeletingCondition
    Case(DEL, "not deleting", lambda: ms(0), "Deleting", ("False", "NotDeleting", "")),
    Case(DEL, "Deleting with still some machine", lambda: deleting_set_with(fake("m1")), "Deleting",
         ("True", "Deleting", "Deleting 1 Machine")),
    Case(DEL, "Deleting with still some stale machine",
         lambda: deleting_set_with(fake("m1", deleted_ago=STALE), fake("m2", deleted_ago=STALE), fake("m3")),
         "Deleting", ("True", "Deleting", "Deleting 3 Machines\n* Machines m1, m2 are in deletion since more "
                                          "than 15m")),
    # aggregateStaleMachines, as the Deleting message of a deleting MachineSet carries it
    Case(STALE_T, "Empty when there are no machines", lambda: deleting_set_with(), "Deleting", stale_line("", 0)),
    Case(STALE_T, "Empty when there are no deleting machines",
         lambda: deleting_set_with(fake("m1"), fake("m2"), fake("m3")), "Deleting", stale_line("", 3)),
    Case(STALE_T, "Empty when there are deleting machines but not yet stale",
         lambda: deleting_set_with(fake("m1", deleted_ago=1.0), fake("m2", deleted_ago=1.0), fake("m3")),
         "Deleting", stale_line("", 3)),
    Case(STALE_T, "Report stale machine not draining",
         lambda: deleting_set_with(fake("m1", deleted_ago=1.0), fake("m2", deleted_ago=STALE), fake("m3")),
         "Deleting", stale_line("Machine m2 is in deletion since more than 15m", 3)),
    Case(STALE_T, "Report stale machines not draining",
         lambda: deleting_set_with(fake("m1", deleted_ago=STALE), fake("m2", deleted_ago=STALE), fake("m3")),
         "Deleting", stale_line("Machines m1, m2 are in deletion since more than 15m", 3)),
    Case(STALE_T, "Does not report details about stale machines draining since less than 5 minutes",
         lambda: deleting_set_with(draining("m1", DRAIN_NO_COMPLETION, drain_ago=None),
                                   draining("m2", DRAIN_SHORT, drain_ago=None), fake("m3")),
         "Deleting", stale_line("Machines m1, m2 are in deletion since more than 15m", 3)),
    Case(STALE_T, "Report details about stale machines draining since more than 5 minutes",
         lambda: deleting_set_with(draining("m1", DRAIN_NO_COMPLETION), draining("m2", DRAIN_SHORT), fake("m3")),
         "Deleting", stale_line("Machines m1, m2 are in deletion since more than 15m, delay likely due to "
                                "PodDisruptionBudgets, Pods not terminating, Pod eviction errors", 3)),
]


@pytest.mark.parametrize("case", params(CASES))
def test_upstream_machineset(case: Case) -> None:
    check(case)
