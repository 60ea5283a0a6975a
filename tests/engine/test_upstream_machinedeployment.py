"""MachineDeployment status: upstream's machinedeployment_status_test.go tables, ported as objects.

MachineSets carry the status counters upstream's fake MachineSets have (the deployment sums what
its MachineSets report). Cases whose only input is a controller failure
("getAndAdoptMachineSetsForDeploymentSucceeded failed": InternalError) are not ported.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from exporter.engine.evaluate_types import Computed
from exporter.engine.machine import compute_machine
from exporter.engine.machinedeployment import compute_machinedeployment
from exporter.engine.model import Condition, Counters, Machine, MachineSet
from tests.engine.builders import NOW, F, T, U, capi_view, cond, machine, machine_deployment, machine_set
from tests.engine.upstream import DRAIN, Case, check, params

STALE = 3600.0
TEMPLATES = "the MachineDeployment's bootstrap and infrastructure templates are not watched"


def fake_set(name: str, replicas: int | None = None, ready: int | None = None, available: int | None = None,
             up_to_date: int | None = None) -> MachineSet:
    """Upstream's fakeMachineSet: a name and the status counters the case sets."""
    return machine_set(name, replicas, deployment_name="md1",
                       reported=Counters(replicas=replicas, ready=ready, available=available,
                                         up_to_date=up_to_date))


def fake(name: str, *conditions: Condition, **fields: object) -> Machine:
    return machine(name, conditions, set_name="ms1", deployment_name="md1", **fields)


def md(replicas: int | None = 0, sets: Iterable[MachineSet] = (), machines: Iterable[Machine] = (),
       deleting: bool = False, max_unavailable: int | None = None) -> Computed:
    """The deployment over MachineSets read as reported (their counters are the case's input)."""
    obj = machine_deployment("md1", replicas, deleted_ago=1.0 if deleting else None, max_surge=1,
                             max_unavailable=max_unavailable)
    owned = list(machines)
    view = capi_view(obj, *sets, *owned)
    for m in owned:
        view.record(m.key, compute_machine(m, view, NOW))
    return compute_machinedeployment(obj, view, NOW)


def counters(ready: int | None, available: int | None, up_to_date: int | None) -> dict[str, int | None]:
    return {"readyReplicas": ready, "availableReplicas": available, "upToDateReplicas": up_to_date}


R, AV, ROLL = "Test_setReplicas", "Test_setAvailableCondition", "Test_setRollingOutCondition"
UP, DOWN = "Test_setScalingUpCondition", "Test_setScalingDownCondition"
MR, MU = "Test_setMachinesReadyCondition", "Test_setMachinesUpToDateCondition"
REM, DEL = "Test_setRemediatingCondition", "Test_setDeletingCondition"
READY = cond("Ready", T, "Ready")
UP_TO_DATE = cond("UpToDate", T, "UpToDate")
HC_OK, HC_FAIL = cond("HealthCheckSucceeded", T), cond("HealthCheckSucceeded", F)
OWNER_DELETING = cond("OwnerRemediated", F, "MachineDeleting", "Machine is deleting")
REMEDIATED_BY = "not to be remediated by MachineDeployment/MachineSet"

CASES = [
    # setReplicas (upstream asserts the ready, available and up-to-date sums)
    Case(R, "No MachineSets", lambda: md(), "counters", counters(None, None, None)),
    Case(R, "MachineSets without replicas set", lambda: md(0, [fake_set("ms1")]), "counters",
         counters(None, None, None)),
    Case(R, "MachineSets including nil should be handled", lambda: md(0, [fake_set("ms1", 1)]), "counters",
         counters(None, None, None)),
    Case(R, "MachineSets with replicas set",
         lambda: md(0, [fake_set("ms1", 6, 5, 3, 3), fake_set("ms2", 3, 2, 2, 1), fake_set("ms3")]), "counters",
         counters(7, 5, 4)),
    # setAvailableCondition (status.availableReplicas is what the MachineSets report)
    Case(AV, "spec.replicas not set", lambda: md(None), "Available",
         ("Unknown", "WaitingForReplicasSet", "Waiting for spec.replicas set")),
    Case(AV, "status.v1beta2 not set", lambda: md(5), "Available",
         ("Unknown", "WaitingForAvailableReplicasSet", "Waiting for status.availableReplicas set")),
    Case(AV, "all the expected replicas are available", lambda: md(5, [fake_set("ms1", 5, 5, 5, 5)], max_unavailable=0),
         "Available", ("True", "Available", "")),
    Case(AV, "some replicas are not available, but within MaxUnavailable range",
         lambda: md(5, [fake_set("ms1", 5, 4, 4, 5)], max_unavailable=1), "Available", ("True", "Available", "")),
    Case(AV, "some replicas are not available, more than MaxUnavailable",
         lambda: md(5, [fake_set("ms1", 5, 3, 3, 5)], max_unavailable=1), "Available",
         ("False", "NotAvailable", "3 available replicas, at least 4 required (spec.strategy.rollout.maxUnavailable "
                                   "is 1, spec.replicas is 5)")),
    Case(AV, "When deleting, don't show required replicas",
         lambda: md(5, [fake_set("ms1", 5, 0, 0, 5)], deleting=True, max_unavailable=1), "Available",
         ("False", "NotAvailable", "Deletion in progress")),
    # setRollingOutCondition
    Case(ROLL, "no machines", lambda: md(), "RollingOut", ("False", "NotRollingOut", "")),
    Case(ROLL, "all machines are up to date", lambda: md(2, machines=[fake("machine-1", UP_TO_DATE),
                                                                       fake("machine-2", UP_TO_DATE)]),
         "RollingOut", ("False", "NotRollingOut", "")),
    Case(ROLL, "one up-to-date, two not up-to-date, one reporting up-to-date unknown",
         lambda: md(4, machines=[fake("machine-1", UP_TO_DATE), fake("machine-2", cond("UpToDate", U, "InternalError")),
                                 fake("machine-4", cond("UpToDate", F, "NotUpToDate",
                                                        "* Failure domain failure-domain1, failure-domain2 required\n"
                                                        "* InfrastructureMachine is not up-to-date")),
                                 fake("machine-3", cond("UpToDate", F, "NotUpToDate",
                                                        "* Version v1.25.0, v1.26.0 required"))]),
         "RollingOut", ("True", "RollingOut", "Rolling out 2 not up-to-date replicas\n"
                                              "* Version v1.25.0, v1.26.0 required\n"
                                              "* Failure domain failure-domain1, failure-domain2 required\n"
                                              "* InfrastructureMachine is not up-to-date")),
    # setScalingUpCondition
    Case(UP, "replicas not set", lambda: md(None), "ScalingUp",
         ("Unknown", "WaitingForReplicasSet", "Waiting for spec.replicas set")),
    Case(UP, "not scaling up and no machines", lambda: md(0), "ScalingUp", ("False", "NotScalingUp", "")),
    Case(UP, "not scaling up with machines", lambda: md(3, [fake_set("ms1", 1), fake_set("ms2", 2)]), "ScalingUp",
         ("False", "NotScalingUp", "")),
    Case(UP, "not scaling up and no machines and bootstrapConfig object not found", lambda: md(0), "ScalingUp",
         ("False", "NotScalingUp", "Scaling up would be blocked because KubeadmBootstrapTemplate does not exist"),
         differs=TEMPLATES),
    Case(UP, "not scaling up and no machines and infrastructure object not found", lambda: md(0), "ScalingUp",
         ("False", "NotScalingUp", "Scaling up would be blocked because DockerMachineTemplate does not exist"),
         differs=TEMPLATES),
    Case(UP, "not scaling up and no machines and bootstrapConfig and infrastructure object not found",
         lambda: md(0), "ScalingUp",
         ("False", "NotScalingUp", "Scaling up would be blocked because KubeadmBootstrapTemplate and "
                                   "DockerMachineTemplate do not exist"), differs=TEMPLATES),
    Case(UP, "scaling up", lambda: md(3), "ScalingUp", ("True", "ScalingUp", "Scaling up from 0 to 3 replicas")),
    Case(UP, "scaling up with machines", lambda: md(3, [fake_set("ms1", 1), fake_set("ms2", 1)]), "ScalingUp",
         ("True", "ScalingUp", "Scaling up from 2 to 3 replicas")),
    Case(UP, "scaling up and blocked by bootstrap object", lambda: md(3), "ScalingUp",
         ("True", "ScalingUp", "Scaling up from 0 to 3 replicas is blocked because KubeadmBootstrapTemplate does "
                               "not exist"), differs=TEMPLATES),
    Case(UP, "scaling up and blocked by infrastructure object", lambda: md(3), "ScalingUp",
         ("True", "ScalingUp", "Scaling up from 0 to 3 replicas is blocked because DockerMachineTemplate does not "
                               "exist"), differs=TEMPLATES),
    Case(UP, "deleting, don't show block message when templates are not found",
         lambda: md(3, [fake_set("ms1"), fake_set("ms2"), fake_set("ms3")], deleting=True), "ScalingUp",
         ("False", "NotScalingUp", "")),
    # setScalingDownCondition
    Case(DOWN, "replicas not set", lambda: md(None), "ScalingDown",
         ("Unknown", "WaitingForReplicasSet", "Waiting for spec.replicas set")),
    Case(DOWN, "not scaling down and no machines", lambda: md(0), "ScalingDown", ("False", "NotScalingDown", "")),
    Case(DOWN, "not scaling down because scaling up", lambda: md(1), "ScalingDown",
         ("False", "NotScalingDown", "")),
    Case(DOWN, "scaling down to zero", lambda: md(0, [fake_set("ms1", 1)]), "ScalingDown",
         ("True", "ScalingDown", "Scaling down from 1 to 0 replicas")),
    Case(DOWN, "scaling down with 1 stale machine",
         lambda: md(1, [fake_set("ms1", 1), fake_set("ms2", 1)],
                    [fake("m1"), fake("stale-machine-1", cond("Deleting", T, "DrainingNode", DRAIN),
                                      deleted_ago=STALE, drain_start_time=NOW - 360)]),
         "ScalingDown", ("True", "ScalingDown", "Scaling down from 2 to 1 replicas\n* Machine stale-machine-1 is in "
                                                "deletion since more than 15m, delay likely due to "
                                                "PodDisruptionBudgets, Pods not terminating, Pod eviction errors, "
                                                "Pods not completed yet")),
    Case(DOWN, "scaling down with 3 stale machines",
         lambda: md(1, [fake_set("ms1", 3), fake_set("ms2", 1)],
                    [fake("m1"), *(fake(f"stale-machine-{i}", deleted_ago=STALE) for i in (1, 2, 3))]),
         "ScalingDown", ("True", "ScalingDown", "Scaling down from 4 to 1 replicas\n* Machines stale-machine-1, "
                                                "stale-machine-2, stale-machine-3 are in deletion since more than "
                                                "15m")),
    Case(DOWN, "scaling down with 5 stale machines",
         lambda: md(1, [fake_set("ms1", 5), fake_set("ms2", 1)],
                    [fake("m1"), *(fake(f"stale-machine-{i}", deleted_ago=STALE) for i in range(1, 6))]),
         "ScalingDown", ("True", "ScalingDown", "Scaling down from 6 to 1 replicas\n* Machines stale-machine-1, "
                                                "stale-machine-2, stale-machine-3, ... (2 more) are in deletion "
                                                "since more than 15m")),
    Case(DOWN, "deleting machine deployment without replicas", lambda: md(1, deleting=True), "ScalingDown",
         ("False", "NotScalingDown", "")),
    Case(DOWN, "deleting machine deployment having 1 replica", lambda: md(1, [fake_set("ms1", 1)], deleting=True),
         "ScalingDown", ("True", "ScalingDown", "Scaling down from 1 to 0 replicas")),
    # setMachinesReadyCondition
    Case(MR, "no machines", lambda: md(), "MachinesReady", ("True", "NoReplicas", "")),
    Case(MR, "all machines are ready", lambda: md(2, machines=[fake("machine-1", READY), fake("machine-2", READY)]),
         "MachinesReady", ("True", "Ready", "")),
    Case(MR, "one ready, one has nothing reported", lambda: md(2, machines=[fake("machine-1", READY), fake("machine-2")]),
         "MachinesReady", ("Unknown", "ReadyUnknown", "* Machine machine-2: Condition Ready not yet reported")),
    Case(MR, "one ready, one reporting not ready, one reporting unknown, one reporting deleting",
         lambda: md(4, machines=[fake("machine-1", READY),
                                 fake("machine-2", cond("Ready", F, "SomeReason", "HealthCheckSucceeded: Some message")),
                                 fake("machine-3", cond("Ready", U, "SomeUnknownReason", "Some unknown message")),
                                 fake("machine-4", cond("Ready", F, "Deleting",
                                                        "Deleting: Machine deletion in progress, stage: DrainingNode"))]),
         "MachinesReady", ("False", "NotReady", "* Machine machine-2: HealthCheckSucceeded: Some message\n"
                                                "* Machine machine-4: Deleting: Machine deletion in progress, stage: "
                                                "DrainingNode\n* Machine machine-3: Some unknown message")),
    # setMachinesUpToDateCondition
    Case(MU, "no machines", lambda: md(), "MachinesUpToDate", ("True", "NoReplicas", "")),
    Case(MU, "One machine up-to-date", lambda: md(1, machines=[fake("up-to-date-1", cond("UpToDate", T, "some-reason-1"))]),
         "MachinesUpToDate", ("True", "UpToDate", "")),
    Case(MU, "One machine unknown",
         lambda: md(1, machines=[fake("unknown-1", cond("UpToDate", U, "some-unknown-reason-1", "some unknown message"))]),
         "MachinesUpToDate", ("Unknown", "UpToDateUnknown", "* Machine unknown-1: some unknown message")),
    Case(MU, "One machine not up-to-date",
         lambda: md(1, machines=[fake("not-up-to-date-machine-1", cond("UpToDate", F, "some-not-up-to-date-reason",
                                                                       "some not up-to-date message"))]),
         "MachinesUpToDate", ("False", "NotUpToDate", "* Machine not-up-to-date-machine-1: some not up-to-date message")),
    Case(MU, "One machine without up-to-date condition, one new Machines without up-to-date condition",
         lambda: md(2, machines=[fake("no-condition-machine-1"), fake("no-condition-machine-2-new", age=5.0)]),
         "MachinesUpToDate",
         ("Unknown", "UpToDateUnknown", "* Machine no-condition-machine-1: Condition UpToDate not yet reported")),
    Case(MU, "Two machines not up-to-date, two up-to-date, two not reported",
         lambda: md(6, machines=[fake("up-to-date-1", cond("UpToDate", T, "TestUpToDate")),
                                 fake("up-to-date-2", cond("UpToDate", T, "TestUpToDate")),
                                 *(fake(f"not-up-to-date-machine-{i}", cond("UpToDate", F, "TestNotUpToDate",
                                                                            "This is not up-to-date message"))
                                   for i in (1, 2)),
                                 fake("no-condition-machine-1"), fake("no-condition-machine-2")]),
         "MachinesUpToDate",
         ("False", "NotUpToDate", "* Machines not-up-to-date-machine-1, not-up-to-date-machine-2: This is not "
                                  "up-to-date message\n* Machines no-condition-machine-1, no-condition-machine-2: "
                                  "Condition UpToDate not yet reported")),
    # setRemediatingCondition
    Case(REM, "Without unhealthy machines", lambda: md(2, machines=[fake("m1"), fake("m2")]), "Remediating",
         ("False", "NotRemediating", "")),
    Case(REM, "With machines to be remediated by MD/MS",
         lambda: md(3, machines=[fake("m1", HC_OK), fake("m2", HC_FAIL), fake("m3", HC_FAIL, OWNER_DELETING)]),
         "Remediating", ("True", "Remediating", "* Machine m3: Machine is deleting")),
    Case(REM, "With one unhealthy machine not to be remediated by MD/MS",
         lambda: md(3, machines=[fake("m1", HC_OK), fake("m2", HC_FAIL), fake("m3", HC_OK)]), "Remediating",
         ("False", "NotRemediating", f"Machine m2 is not healthy ({REMEDIATED_BY})")),
    Case(REM, "With two unhealthy machine not to be remediated by MD/MS",
         lambda: md(3, machines=[fake("m1", HC_FAIL), fake("m2", HC_FAIL), fake("m3", HC_OK)]), "Remediating",
         ("False", "NotRemediating", f"Machines m1, m2 are not healthy ({REMEDIATED_BY})")),
    # setDeletingCondition
    Case(DEL, "not deleting", lambda: md(), "Deleting", ("False", "NotDeleting", "")),
    Case(DEL, "Deleting with still some machine", lambda: md(0, [fake_set("ms1", 1)], [fake("m1")], deleting=True),
         "Deleting", ("True", "Deleting", "Deleting 1 Machine")),
    Case(DEL, "Deleting with still some stale machine",
         lambda: md(0, [fake_set("ms1", 1)], [fake("m1", deleted_ago=STALE)], deleting=True), "Deleting",
         ("True", "Deleting", "Deleting 1 Machine\n* Machine m1 is in deletion since more than 15m")),
    Case(DEL, "Deleting with no machines and a machine set still around",
         lambda: md(0, [fake_set("ms1", 1)], deleting=True), "Deleting", ("True", "Deleting", "Deleting 1 MachineSets")),
]


@pytest.mark.parametrize("case", params(CASES))
def test_upstream_machinedeployment(case: Case) -> None:
    check(case)
