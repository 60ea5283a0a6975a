"""KubeadmControlPlane status: upstream's kubeadmcontrolplane status_test.go tables, ported as objects.

Upstream feeds some inputs straight from controller memory (preflight-check results, whether the
infrastructure template was found, the deletion reason); where a real reconcile derives them from
objects, the port gives the objects that lead there (healthy Machines for "no preflight check
failed"). Not ported: Test_setAvailableCondition (it is driven by the etcd member list, read from
etcd, not from any object) and Test_shouldSurfaceWhenAvailableTrue (a helper of it).
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from exporter.engine.controlplane import compute_kubeadmcontrolplane
from exporter.engine.evaluate_types import Computed
from exporter.engine.machine import compute_machine
from exporter.engine.model import Base, Condition, KubeadmControlPlane, Machine
from tests.engine.builders import (
    NOW,
    F,
    T,
    U,
    capi_view,
    cond,
    control_plane,
    cp_machine,
    machine,
)
from tests.engine.upstream import DRAIN, Case, check, params

TEMPLATE = "the KubeadmControlPlane's infrastructure machine template is not watched"
PREFLIGHT = ("preflight-check results live in controller memory, and the reconcile stops at the first "
             "failing check, so no reconcile sets them all at once")


def kcp(replicas: int | None = None, deleting: bool = False, initialized: bool | None = True
        ) -> KubeadmControlPlane:
    return control_plane(replicas=replicas, deleted_ago=1.0 if deleting else None, initialized=initialized)


def run(obj: KubeadmControlPlane, objects: Iterable[Base] = ()) -> Computed:
    """Evaluate as the orchestrator does: the Machines first, then the control plane."""
    owned = list(objects)
    view = capi_view(obj, *owned)
    for m in owned:
        if isinstance(m, Machine):
            view.record(m.key, compute_machine(m, view, NOW))
    return compute_kubeadmcontrolplane(obj, view, NOW)


def bare(name: str, *conditions: Condition, **fields: object) -> Machine:
    """A control plane Machine with only the conditions a case gives it."""
    return machine(name, conditions, control_plane_name="kcp1", **fields)


def steady(*names: str) -> list[Machine]:
    """Control plane Machines no preflight check objects to (upstream's zero preflight results)."""
    return [cp_machine(n) for n in names]


M3 = ("m1", "m2", "m3")
ROLL = "Test_setRollingOutCondition"
UP = "Test_setScalingUpCondition"
DOWN = "Test_setScalingDownCondition"
MRU = "Test_setMachinesReadyAndMachinesUpToDateConditions"
REM = "Test_setRemediatingCondition"
UP_TO_DATE = cond("UpToDate", T, "UpToDate")
READY_T, READY_F = cond("Ready", T, "Ready"), cond("Ready", F, "NotReady", "NotReady")
UTD_T, UTD_F = cond("UpToDate", T, "UpToDate"), cond("UpToDate", F, "NotUpToDate", "NotUpToDate")
HC_OK, HC_FAIL = cond("HealthCheckSucceeded", T), cond("HealthCheckSucceeded", F)
OWNER_DELETING = cond("OwnerRemediated", F, "MachineDeleting", "Machine is deleting")


def replicas_case() -> Computed:
    def three(r: Status3, a: Status3, u: Status3) -> tuple[Condition, ...]:
        return (cond("Ready", r), cond("Available", a), cond("UpToDate", u))
    return run(kcp(), [bare("m1", *three(T, T, T)), bare("m2", *three(T, T, T)), bare("m3", *three(F, F, T)),
                       bare("m4", *three(T, F, T)), bare("m5", *three(F, F, F)), bare("m6", *three(U, U, U))])


Status3 = type(T)

def health(name: str, *, api: str = "T", etcd: str | None = "T", api_ago: float = 0.0, etcd_ago: float = 0.0
           ) -> Machine:
    """A provisioned control plane Machine with the pod and etcd member conditions a case gives it."""
    by = {"T": T, "F": F, "U": U}
    pods = [Condition("APIServerPodHealthy", by[api], "", "", NOW - api_ago),
            *(Condition(t, T, "", "", NOW) for t in ("ControllerManagerPodHealthy", "SchedulerPodHealthy"))]
    if etcd is not None:
        pods += [Condition("EtcdPodHealthy", T, "", "", NOW),
                 Condition("EtcdMemberHealthy", by[etcd], "", "", NOW - etcd_ago)]
    return machine(name, pods, control_plane_name="kcp1", provider_id=name, node_name=name)


def with_certificates(status: Status3 = T, *, deleting: bool = False, external_etcd: bool = False,
                      initialized: bool | None = True) -> KubeadmControlPlane:
    return control_plane(replicas=None, initialized=initialized, deleted_ago=1.0 if deleting else None,
                         external_etcd=external_etcd, conditions=[cond("CertificatesAvailable", status)])


AV = "Test_setAvailableCondition"
COMPONENTS_2_OF_3 = "* 2 of 3 Machines have healthy control plane components, at least 1 required"
NO_COMPONENTS = "* There are no Machines with healthy control plane components, at least 1 required"
AVAILABLE_CASES = [
    Case(AV, "KCP is not available, not yet initialized", lambda: run(kcp(initialized=None)), "Available",
         ("False", "NotAvailable", "Control plane not yet initialized")),
    Case(AV, "KCP is available (1 CP)", lambda: run(with_certificates(), [health("m1")]), "Available",
         ("True", "Available", "")),
    Case(AV, "KCP is available (3 CP)", lambda: run(with_certificates(), [health(n) for n in M3]), "Available",
         ("True", "Available", "")),
    Case(AV, "KCP is available, one not healthy etcd member, but within quorum (not reported)",
         lambda: run(with_certificates(), [health("m1"), health("m2"), health("m3", etcd="F")]), "Available",
         ("True", "Available", "")),
    Case(AV, "KCP is available, one not healthy etcd member, but within quorum (reported)",
         lambda: run(with_certificates(), [health("m1"), health("m2"), health("m3", etcd="F", etcd_ago=11)]),
         "Available", ("True", "Available", "* 2 of 3 etcd members are healthy, at least 2 healthy member required "
                                            f"for etcd quorum\n{COMPONENTS_2_OF_3}")),
    Case(AV, "KCP is not available, Not enough healthy etcd members",
         lambda: run(with_certificates(), [health("m1"), health("m2", etcd="F"), health("m3", etcd="F")]),
         "Available", ("False", "NotAvailable", "* 1 of 3 etcd members is healthy, at least 2 healthy member "
                                                "required for etcd quorum")),
    Case(AV, "KCP is available, but with not healthy K8s control planes (one to be reported, one not yet)",
         lambda: run(with_certificates(), [health("m1"), health("m2", api="F"), health("m3", api="F", api_ago=11)]),
         "Available", ("True", "Available", COMPONENTS_2_OF_3)),
    Case(AV, "KCP is not available, not enough healthy K8s control planes",
         lambda: run(with_certificates(), [health(n, api="F") for n in M3]), "Available",
         ("False", "NotAvailable", NO_COMPONENTS)),
    Case(AV, "KCP is available, but with not healthy K8s control planes (one to be reported, one not yet) (external etcd)",
         lambda: run(with_certificates(external_etcd=True),
                     [health("m1", etcd=None), health("m2", api="F", etcd=None),
                      health("m3", api="F", api_ago=11, etcd=None)]),
         "Available", ("True", "Available", COMPONENTS_2_OF_3)),
    Case(AV, "KCP is not available, not enough healthy K8s control planes (external etcd)",
         lambda: run(with_certificates(external_etcd=True), [health(n, api="F", etcd=None) for n in M3]),
         "Available", ("False", "NotAvailable", NO_COMPONENTS)),
    Case(AV, "Certificates are not available", lambda: run(with_certificates(F), [health("m1")]), "Available",
         ("False", "NotAvailable", "* Control plane certificates are not available")),
    Case(AV, "KCP is deleting", lambda: run(with_certificates(deleting=True), [health("m1")]), "Available",
         ("False", "NotAvailable", "* Control plane metadata.deletionTimestamp is set")),
]

CASES = [
    *AVAILABLE_CASES,
    Case("TestSetReplicas", "replicas", replicas_case, "counters",
         {"replicas": 6, "readyReplicas": 3, "availableReplicas": 2, "upToDateReplicas": 4}),
    Case("Test_setInitializedCondition", "KCP not initialized", lambda: run(kcp(initialized=None)), "Initialized",
         ("False", "NotInitialized", "")),
    Case("Test_setInitializedCondition", "KCP initialized", lambda: run(kcp(initialized=True)), "Initialized",
         ("True", "Initialized", "")),
    # setRollingOutCondition
    Case(ROLL, "no machines", lambda: run(kcp()), "RollingOut", ("False", "NotRollingOut", "")),
    Case(ROLL, "all machines are up to date", lambda: run(kcp(), [bare("m1", UP_TO_DATE), bare("m2", UP_TO_DATE)]),
         "RollingOut", ("False", "NotRollingOut", "")),
    Case(ROLL, "one up-to-date, two not up-to-date, one reporting up-to-date unknown",
         lambda: run(kcp(), [bare("m1", UP_TO_DATE), bare("m2", cond("UpToDate", U, "InternalError")),
                             bare("m4", cond("UpToDate", F, "NotUpToDate",
                                             "* Failure domain failure-domain1, failure-domain2 required\n"
                                             "* InfrastructureMachine is not up-to-date")),
                             bare("m3", cond("UpToDate", F, "NotUpToDate", "* Version v1.25.0, v1.26.0 required"))]),
         "RollingOut", ("True", "RollingOut", "Rolling out 2 not up-to-date replicas\n"
                                              "* Version v1.25.0, v1.26.0 required\n"
                                              "* Failure domain failure-domain1, failure-domain2 required\n"
                                              "* InfrastructureMachine is not up-to-date")),
    # setScalingUpCondition
    Case(UP, "Replica not set", lambda: run(kcp()), "ScalingUp",
         ("Unknown", "WaitingForReplicasSet", "Waiting for spec.replicas set")),
    Case(UP, "Not scaling up", lambda: run(kcp(3), steady(*M3)), "ScalingUp", ("False", "NotScalingUp", "")),
    Case(UP, "Not scaling up, infra template not found", lambda: run(kcp(3), steady(*M3)), "ScalingUp",
         ("False", "NotScalingUp", "Scaling up would be blocked because AWSTemplate does not exist"),
         differs=TEMPLATE),
    Case(UP, "Scaling up", lambda: run(kcp(5), steady(*M3)), "ScalingUp",
         ("True", "ScalingUp", "Scaling up from 3 to 5 replicas")),
    Case(UP, "Scaling up is always false when kcp is deleted", lambda: run(kcp(5, deleting=True), steady(*M3)),
         "ScalingUp", ("False", "NotScalingUp", "")),
    Case(UP, "Scaling up, infra template not found", lambda: run(kcp(5), steady(*M3)), "ScalingUp",
         ("True", "ScalingUp", "Scaling up from 3 to 5 replicas is blocked because:\n* AWSTemplate does not exist"),
         differs=TEMPLATE),
    Case(UP, "Scaling up, preflight checks blocking", lambda: run(kcp(5), steady(*M3)), "ScalingUp",
         ("True", "ScalingUp", "Scaling up from 3 to 5 replicas is blocked because:\n"
                               "* waiting for a version upgrade to v1.32.0 to be propagated\n"
                               "* waiting for a control plane Machine to complete deletion\n"
                               "* cluster certificates are missing or unknown\n"
                               "* waiting for control plane components to become healthy\n"
                               "* waiting for etcd cluster to become healthy"), differs=PREFLIGHT),
    # setScalingDownCondition
    Case(DOWN, "Replica not set", lambda: run(kcp()), "ScalingDown",
         ("Unknown", "WaitingForReplicasSet", "Waiting for spec.replicas set")),
    Case(DOWN, "Not scaling down", lambda: run(kcp(3), steady(*M3)), "ScalingDown",
         ("False", "NotScalingDown", "")),
    Case(DOWN, "Scaling down", lambda: run(kcp(3), steady("m1", "m2", "m3", "m4", "m5")), "ScalingDown",
         ("True", "ScalingDown", "Scaling down from 5 to 3 replicas")),
    Case(DOWN, "Scaling down to zero when kcp is deleted",
         lambda: run(kcp(3, deleting=True), steady("m1", "m2", "m3", "m4", "m5")), "ScalingDown",
         ("True", "ScalingDown", "Scaling down from 5 to 0 replicas")),
    Case(DOWN, "Scaling down with one stale machine",
         lambda: run(kcp(1), [bare("m1", cond("Deleting", T, "DrainingNode", DRAIN), deleted_ago=3600.0,
                                   drain_start_time=NOW - 360), *steady("m2", "m3")]), "ScalingDown",
         ("True", "ScalingDown", "Scaling down from 3 to 1 replicas is blocked because:\n"
                                 "* Machine m1 is in deletion since more than 15m, delay likely due to "
                                 "PodDisruptionBudgets, Pods not terminating, Pod eviction errors, Pods not "
                                 "completed yet")),
    Case(DOWN, "Scaling down with two stale machine",
         lambda: run(kcp(1), [bare("m1", deleted_ago=3600.0), bare("m2", deleted_ago=3600.0), *steady("m3")]),
         "ScalingDown", ("True", "ScalingDown", "Scaling down from 3 to 1 replicas is blocked because:\n"
                                                "* Machines m1, m2 are in deletion since more than 15m")),
    Case(DOWN, "Scaling down, preflight checks blocking", lambda: run(kcp(1), steady(*M3)), "ScalingDown",
         ("True", "ScalingDown", "Scaling down from 3 to 1 replicas is blocked because:\n"
                                 "* waiting for a version upgrade to v1.32.0 to be propagated\n"
                                 "* waiting for a control plane Machine to complete deletion\n"
                                 "* waiting for control plane components to become healthy\n"
                                 "* waiting for etcd cluster to become healthy"), differs=PREFLIGHT),
    # setMachinesReadyCondition / setMachinesUpToDateCondition
    Case(MRU, "Without machines (MachinesReady)", lambda: run(kcp()), "MachinesReady", ("True", "NoReplicas", "")),
    Case(MRU, "Without machines (MachinesUpToDate)", lambda: run(kcp()), "MachinesUpToDate",
         ("True", "NoReplicas", "")),
    *(Case(MRU, f"With machines ({type_})",
           lambda: run(kcp(), [bare("m1", READY_T, UTD_T), bare("m2", READY_T, UTD_F), bare("m3", READY_F, UTD_F),
                               bare("m4", READY_F), bare("m5", READY_F, age=5.0)]),
           type_, want)
      for type_, want in (("MachinesReady", ("False", "NotReady", "* Machines m3, m4, m5: NotReady")),
                          ("MachinesUpToDate", ("False", "NotUpToDate", "* Machines m2, m3: NotUpToDate\n"
                                                                        "* Machine m4: Condition UpToDate not yet "
                                                                        "reported")))),
    # setRemediatingCondition
    Case(REM, "Without unhealthy machines", lambda: run(kcp(), [bare("m1"), bare("m2")]), "Remediating",
         ("False", "NotRemediating", "")),
    Case(REM, "With machines to be remediated by KCP",
         lambda: run(kcp(), [bare("m1", HC_OK), bare("m2", HC_FAIL), bare("m3", HC_FAIL, OWNER_DELETING)]),
         "Remediating", ("True", "Remediating", "* Machine m3: Machine is deleting")),
    Case(REM, "With one unhealthy machine not to be remediated by KCP",
         lambda: run(kcp(), [bare("m1", HC_OK), bare("m2", HC_FAIL), bare("m3", HC_OK)]), "Remediating",
         ("False", "NotRemediating", "Machine m2 is not healthy (not to be remediated by KubeadmControlPlane)")),
    Case(REM, "With two unhealthy machine not to be remediated by KCP",
         lambda: run(kcp(), [bare("m1", HC_FAIL), bare("m2", HC_FAIL), bare("m3", HC_OK)]), "Remediating",
         ("False", "NotRemediating", "Machines m1, m2 are not healthy (not to be remediated by KubeadmControlPlane)")),
    # setDeletingCondition: the reason and message upstream passes in are what the deletion reconcile
    # computes from the objects present.
    Case("TestDeletingCondition", "deletionTimestamp not set", lambda: run(kcp(3), steady(*M3)), "Deleting",
         ("False", "NotDeleting", "")),
    Case("TestDeletingCondition", "deletionTimestamp set (waiting for control plane Machine deletion)",
         lambda: run(kcp(3, deleting=True), steady(*M3)), "Deleting",
         ("True", "WaitingForMachineDeletion", "Deleting 3 Machines")),
]


@pytest.mark.parametrize("case", params(CASES))
def test_upstream_kubeadmcontrolplane(case: Case) -> None:
    check(case)
