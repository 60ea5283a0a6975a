"""Cluster status: upstream's cluster_controller_status_test.go tables, ported as objects.

Upstream's tables use a FakeControlPlane; the engine reads the control plane kind it watches, so
the port uses a KubeadmControlPlane of the same name and expects its kind in the messages. Not
ported: the "failed to get descendants / control plane" cases (InternalError, controller state),
"invalid Available condition from control plane" (a condition without a status is not read), and
tables not listed below (RemoteConnectionProbe, InfrastructureReady: read as reported), left for
the next pass. TestSetAvailableCondition, like
upstream's, summarises the conditions the Cluster carries.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import pytest

from exporter.engine.cluster import compute_cluster
from exporter.engine.cluster_available import available
from exporter.engine.evaluate_types import Computed
from exporter.engine.model import Base, Condition, Counters, Gate, Machine, Status
from tests.engine.builders import (
    NOW,
    F,
    T,
    U,
    capi_view,
    cluster_class,
    cluster_object,
    cond,
    control_plane,
    machine,
    machine_deployment,
    machine_pool,
    machine_set,
    owned_by,
)
from tests.engine.upstream import Case, check, params

POOLS = ("MachinePools: upstream's controller passes no MachinePools to this aggregate (a TODO), its unit "
         "test does; the engine counts a pool only when the pool has the condition")


def cluster(*objects: Base, cp: bool = True, deleting: bool = False) -> Computed:
    obj = cluster_object(cp_ref="KubeadmControlPlane/cp1" if cp else None, infra_ref=None,
                         deleted_ago=1.0 if deleting else None)
    return compute_cluster(obj, capi_view(obj, *objects), NOW)


def kcp(*conditions: Condition) -> Base:
    return control_plane("cp1", conditions=conditions)


def md(name: str, *conditions: Condition) -> Base:
    return machine_deployment(name, conditions=conditions)


def mp(name: str, *conditions: Condition) -> Base:
    return machine_pool(name, conditions=conditions)


def ms(name: str, *conditions: Condition, owned: bool = False) -> Base:
    obj = machine_set(name, conditions=conditions)
    return dataclasses.replace(obj, meta=owned_by(obj.meta, "Cluster", "c1")) if owned else obj


def m(name: str, *conditions: Condition, cp: bool = False, **fields: object) -> Machine:
    return machine(name, conditions, control_plane_name="cp1" if cp else "", **fields)


def lifecycle_cases(test: str, type_: str, verb: str) -> list[Case]:
    """TestSetScalingUpCondition / TestSetScalingDownCondition share one table shape."""
    say = verb.capitalize()  # "Scaling up"

    def c(message: str) -> Condition:
        return cond(type_, T, type_, message)
    foo = cond(type_, F, "Foo", "foo")
    foo_true = cond(type_, T, "Foo", "foo")
    not_reason = f"Not{type_}"
    return [
        Case(test, "cluster with controlplane, false if no control plane & descendants", lambda: cluster(),
             type_, ("False", not_reason, "")),
        Case(test, f"cluster with controlplane, control plane & descendants do not report {verb}",
             lambda: cluster(kcp(), mp("mp1"), md("md1"), ms("ms1", owned=True), ms("ms2", foo)), type_,
             ("Unknown", f"{type_}Unknown", f"* MachineDeployment md1: Condition {type_} not yet reported\n"
                                            f"* MachinePool mp1: Condition {type_} not yet reported\n"
                                            f"* MachineSet ms1: Condition {type_} not yet reported"),
             differs=POOLS),
        Case(test, f"cluster with controlplane, control plane and descendants report {verb}",
             lambda: cluster(kcp(c(f"{say} from 0 to 3 replicas")),
                             mp("mp1", c(f"{say} from 0 to 3 replicas")),
                             md("md1", c(f"{say} from 1 to 5 replicas")),
                             ms("ms1", c(f"{say} from 2 to 7 replicas"),
                                owned=True),
                             ms("ms2", foo_true)), type_,
             ("True", type_, f"* KubeadmControlPlane cp1: {say} from 0 to 3 replicas\n"
                             f"* MachineDeployment md1: {say} from 1 to 5 replicas\n"
                             f"* MachinePool mp1: {say} from 0 to 3 replicas\n"
                             "And 1 MachineSet with other issues")),
        Case(test, f"cluster with controlplane, control plane not reporting conditions, descendants report {verb}",
             lambda: cluster(kcp(), mp("mp1", c(f"{say} from 0 to 3 replicas")),
                             md("md1", c(f"{say} from 1 to 5 replicas")),
                             ms("ms1", c(f"{say} from 2 to 7 replicas"),
                                owned=True), ms("ms2", foo_true)), type_,
             ("True", type_, f"* MachineDeployment md1: {say} from 1 to 5 replicas\n"
                             f"* MachinePool mp1: {say} from 0 to 3 replicas\n"
                             f"* MachineSet ms1: {say} from 2 to 7 replicas")),
        Case(test, "cluster without controlplane, false if no descendants", lambda: cluster(cp=False), type_,
             ("False", not_reason, "")),
        Case(test, f"cluster without controlplane, descendants report {verb}",
             lambda: cluster(mp("mp1", c(f"{say} from 0 to 3 replicas")),
                             md("md1", c(f"{say} from 1 to 5 replicas")),
                             ms("ms1", c(f"{say} from 2 to 7 replicas"),
                                owned=True), ms("ms2", foo_true), cp=False), type_,
             ("True", type_, f"* MachineDeployment md1: {say} from 1 to 5 replicas\n"
                             f"* MachinePool mp1: {say} from 0 to 3 replicas\n"
                             f"* MachineSet ms1: {say} from 2 to 7 replicas")),
    ]


def machines_ready_cases(test: str, type_: str, cp: bool) -> list[Case]:
    ready = cond("Ready", T, "Ready")
    return [
        Case(test, "no machines", lambda: cluster(), type_, ("True", "NoReplicas", "")),
        Case(test, "all machines are ready", lambda: cluster(m("machine-1", ready, cp=cp), m("machine-2", ready, cp=cp)),
             type_, ("True", "Ready", "")),
        Case(test, "one ready, one has nothing reported", lambda: cluster(m("machine-1", ready, cp=cp),
                                                                          m("machine-2", cp=cp)),
             type_, ("Unknown", "ReadyUnknown", "* Machine machine-2: Condition Ready not yet reported")),
        Case(test, "one ready, one reporting not ready, one reporting unknown, one reporting deleting",
             lambda: cluster(m("machine-1", ready, cp=cp),
                             m("machine-2", cond("Ready", F, "SomeReason", "HealthCheckSucceeded: Some message"), cp=cp),
                             m("machine-3", cond("Ready", U, "SomeUnknownReason", "Some unknown message"), cp=cp),
                             m("machine-4", cond("Ready", F, "Deleting",
                                                 "Deleting: Machine deletion in progress, stage: DrainingNode"), cp=cp)),
             type_, ("False", "NotReady", "* Machine machine-2: HealthCheckSucceeded: Some message\n"
                                          "* Machine machine-4: Deleting: Machine deletion in progress, stage: "
                                          "DrainingNode\n* Machine machine-3: Some unknown message")),
    ]


def machines_up_to_date_cases(test: str, type_: str, cp: bool) -> list[Case]:
    not_up = cond("UpToDate", F, "TestNotUpToDate", "This is not up-to-date message")
    return [
        Case(test, "no machines", lambda: cluster(), type_, ("True", "NoReplicas", "")),
        Case(test, "One machine up-to-date", lambda: cluster(m("up-to-date-1", cond("UpToDate", T, "some-reason-1"),
                                                                cp=cp)),
             type_, ("True", "UpToDate", "")),
        Case(test, "One machine unknown",
             lambda: cluster(m("unknown-1", cond("UpToDate", U, "some-unknown-reason-1", "some unknown message"), cp=cp)),
             type_, ("Unknown", "UpToDateUnknown", "* Machine unknown-1: some unknown message")),
        Case(test, "One machine not up-to-date",
             lambda: cluster(m("not-up-to-date-machine-1", cond("UpToDate", F, "some-not-up-to-date-reason",
                                                                "some not up-to-date message"), cp=cp)),
             type_, ("False", "NotUpToDate", "* Machine not-up-to-date-machine-1: some not up-to-date message")),
        Case(test, "One machine without up-to-date condition, one new Machines without up-to-date condition",
             lambda: cluster(m("no-condition-machine-1", cp=cp), m("no-condition-machine-2-new", cp=cp, age=5.0)),
             type_, ("Unknown", "UpToDateUnknown",
                     "* Machine no-condition-machine-1: Condition UpToDate not yet reported")),
        Case(test, "Two machines not up-to-date, two up-to-date, two not reported",
             lambda: cluster(m("up-to-date-1", cond("UpToDate", T, "TestUpToDate"), cp=cp),
                             m("up-to-date-2", cond("UpToDate", T, "TestUpToDate"), cp=cp),
                             m("not-up-to-date-machine-1", not_up, cp=cp), m("not-up-to-date-machine-2", not_up, cp=cp),
                             m("no-condition-machine-1", cp=cp), m("no-condition-machine-2", cp=cp)),
             type_, ("False", "NotUpToDate", "* Machines not-up-to-date-machine-1, not-up-to-date-machine-2: This is "
                                             "not up-to-date message\n* Machines no-condition-machine-1, "
                                             "no-condition-machine-2: Condition UpToDate not yet reported")),
    ]


def rolling(message: str) -> Condition:
    return cond("RollingOut", T, "RollingOut", message)


HC_OK, HC_FAIL = cond("HealthCheckSucceeded", T), cond("HealthCheckSucceeded", F)
OWNER_DELETING = cond("OwnerRemediated", F, "MachineDeleting", "Machine is deleting")
ROLL, WA, REM = "TestSetRollingOutCondition", "TestSetWorkersAvailableCondition", "TestSetRemediatingCondition"
MD_UNAVAILABLE = "3 available replicas, at least 4 required (spec.strategy.rollout.maxUnavailable is 1, spec.replicas is 5)"
MP_UNAVAILABLE = "2 available replicas, at least 3 required (spec.strategy.rollout.maxUnavailable is 1, spec.replicas is 4)"


def sorted_workers(names: Iterable[str]) -> list[Base]:
    return [m(n) for n in names]


def summarised(conditions: Iterable[Condition], *, topology: bool = False, deleting: bool = False,
               gates: tuple[Gate, ...] | None = None, class_gates: tuple[Gate, ...] | None = None) -> Computed:
    """The Available summary of a Cluster carrying these conditions (and of its ClusterClass's gates)."""
    obj = cluster_object(conditions=conditions, topology_class="class" if topology or class_gates else "",
                         gates=gates, deleted_ago=1.0 if deleting else None)
    view = capi_view(obj)
    if class_gates is not None:
        cc = cluster_class("class", class_gates)
        view.cluster_classes = {(cc.meta.namespace, cc.meta.name): cc}  # type: ignore[misc]
    return Computed(conditions=(available(obj, view, ()),), counters={})


def foo(type_: str) -> Condition:
    return cond(type_, T, "Foo") if type_ != "Deleting" else cond(type_, F, "Foo")


BASE = ("InfrastructureReady", "ControlPlaneAvailable", "WorkersAvailable", "RemoteConnectionProbe", "Deleting")
AV = "TestSetAvailableCondition"
WORKERS_DOWN = cond("WorkersAvailable", F, "NotAvailable",
                    "3 available replicas, at least 4 required (spec.strategy.rollout.maxUnavailable is 1, spec.replicas is 5) from MachineDeployment md1; 2 available replicas, at least 3 required (spec.strategy.rollout.maxUnavailable is 1, spec.replicas is 4) from MachinePool mp1")
UPGRADING = cond("TopologyReconciled", F, "ClusterUpgrading",
                 "Cluster is upgrading to v1.22.0\n  * MachineDeployment md1 upgrading to version v1.22.0")
CC_NOT_RECONCILED = cond("TopologyReconciled", F, "ClusterClassNotReconciled",
                         "ClusterClass not reconciled. If this condition persists please check ClusterClass status. A ClusterClass is reconciled if.status.observedGeneration == .metadata.generation is true. If this is not the case either ClusterClass reconciliation failed or the ClusterClass is paused")


# A ClusterClass's gates apply to a Cluster with a managed topology, which also carries
# TopologyReconciled; upstream's table hands the ClusterClass over without one.
RECONCILED = cond("TopologyReconciled", T, "Foo")


def with_base(*extra: Condition) -> list[Condition]:
    replaced = {c.type for c in extra}
    return [*(foo(t) for t in BASE if t not in replaced), *extra]


AVAILABLE_CASES = [
    Case(AV, "Takes into account all the required conditions", lambda: summarised([]), "Available",
         ("Unknown", "AvailableUnknown", "* Deleting: Condition not yet reported\n"
                                         "* RemoteConnectionProbe: Condition not yet reported\n"
                                         "* InfrastructureReady: Condition not yet reported\n"
                                         "* ControlPlaneAvailable: Condition not yet reported\n"
                                         "* WorkersAvailable: Condition not yet reported")),
    Case(AV, "TopologyReconciled is ignored when the cluster is not using CC", lambda: summarised(with_base()),
         "Available", ("True", "Available", "")),
    Case(AV, "Handles multiline conditions",
         lambda: summarised(with_base(cond("Deleting", T, "WaitingForWorkersDeletion",
                                           "* Control plane Machines: cp1, cp2, cp3\n* MachineDeployments: md1, md2\n"
                                           "* MachineSets: ms1, ms2\n* Worker Machines: w1, w2, w3, w4, w5, ... (3 more)"))),
         "Available", ("False", "NotAvailable", "* Deleting:\n  * Control plane Machines: cp1, cp2, cp3\n"
                                                "  * MachineDeployments: md1, md2\n  * MachineSets: ms1, ms2\n"
                                                "  * Worker Machines: w1, w2, w3, w4, w5, ... (3 more)")),
    Case(AV, "TopologyReconciled is required when the cluster is using CC",
         lambda: summarised(with_base(), topology=True), "Available",
         ("Unknown", "AvailableUnknown", "* TopologyReconciled: Condition not yet reported")),
    Case(AV, "Takes into account Availability gates when defined on the cluster",
         lambda: summarised(with_base(RECONCILED, cond("MyAvailabilityGate", F, "SomeReason", "Some message"),
                                      cond("MyAvailabilityGateWithNegativePolarity", T, "SomeReason",
                                           "Some other message")),
                            gates=(Gate("MyAvailabilityGate"), Gate("MyAvailabilityGateWithNegativePolarity", True)),
                            class_gates=(Gate("MyClusterClassAvailabilityGate"),)),
         "Available", ("False", "NotAvailable", "* MyAvailabilityGate: Some message\n"
                                                "* MyAvailabilityGateWithNegativePolarity: Some other message")),
    Case(AV, "Takes into account Availability gates when defined on the cluster class",
         lambda: summarised(with_base(RECONCILED,
                                      cond("MyClusterClassAvailabilityGate", F, "SomeReason", "Some message"),
                                      cond("MyClusterClassAvailabilityGateWithNegativePolarity", T, "SomeReason",
                                           "Some other message")),
                            class_gates=(Gate("MyClusterClassAvailabilityGate"),
                                         Gate("MyClusterClassAvailabilityGateWithNegativePolarity", True))),
         "Available", ("False", "NotAvailable", "* MyClusterClassAvailabilityGate: Some message\n"
                                                "* MyClusterClassAvailabilityGateWithNegativePolarity: Some other "
                                                "message")),
    Case(AV, "Tolerates InfraCluster and ControlPlane do not exists while the cluster is deleting",
         lambda: summarised(with_base(cond("InfrastructureReady", F, "ObjectDeleted"),
                                      cond("ControlPlaneAvailable", F, "ObjectDeleted"),
                                      cond("Deleting", T, "WaitingForBeforeDeleteHook", "Some message")),
                            deleting=True),
         "Available", ("False", "NotAvailable", "* Deleting: Some message")),
    Case(AV, "Surfaces message from TopologyReconciled for reason that doesn't affect availability (no other issues)",
         lambda: summarised(with_base(UPGRADING), topology=True), "Available",
         ("True", "Available", "* TopologyReconciled:\n  * Cluster is upgrading to v1.22.0\n"
                               "      * MachineDeployment md1 upgrading to version v1.22.0")),
    Case(AV, "Drops messages from TopologyReconciled for reason that doesn't affect availability (when there is another issue)",
         lambda: summarised(with_base(WORKERS_DOWN, UPGRADING), topology=True), "Available",
         ("False", "NotAvailable", f"* WorkersAvailable: {WORKERS_DOWN.message}")),
    Case(AV, "Takes into account messages from TopologyReconciled for reason that affects availability (no other issues)",
         lambda: summarised(with_base(CC_NOT_RECONCILED), topology=True), "Available",
         ("False", "NotAvailable", f"* TopologyReconciled: {CC_NOT_RECONCILED.message}")),
    Case(AV, "Takes into account messages from TopologyReconciled for reason that affects availability (when there is another issue)",
         lambda: summarised(with_base(WORKERS_DOWN, CC_NOT_RECONCILED), topology=True), "Available",
         ("False", "NotAvailable", f"* WorkersAvailable: {WORKERS_DOWN.message}\n"
                                   f"* TopologyReconciled: {CC_NOT_RECONCILED.message}")),
]

def with_cp(*objects: Base, topology: bool = False, ref: bool = True, deleting: bool = False,
            initialized: bool | None = None, conditions: Iterable[Condition] = ()) -> Computed:
    """A Cluster referencing KubeadmControlPlane cp1 (or none), with the objects given."""
    obj = cluster_object(cp_ref="KubeadmControlPlane/cp1" if ref else None, infra_ref=None,
                         topology_class="class" if topology else "", deleted_ago=1.0 if deleting else None,
                         control_plane_initialized=initialized, conditions=conditions)
    return compute_cluster(obj, capi_view(obj, *objects), NOW)


def cp_object(*conditions: Condition, initialized: bool | None = None) -> Base:
    return control_plane("cp1", conditions=conditions, initialized=initialized)


CPA, CPI = "TestSetControlPlaneAvailableCondition", "TestSetControlPlaneInitialized"
KIND = "KubeadmControlPlane"
CONTROL_PLANE_CASES = [
    Case(CPA, "topology not yet reconcile", lambda: with_cp(topology=True, ref=False), "ControlPlaneAvailable",
         ("False", "ObjectDoesNotExist", "Waiting for cluster topology to be reconciled")),
    Case(CPA, "topology not yet reconcile, cluster deleted", lambda: with_cp(topology=True, ref=False, deleting=True),
         "ControlPlaneAvailable", ("False", "ObjectDoesNotExist", "")),
    Case(CPA, "mirror Available condition from control plane",
         lambda: with_cp(cp_object(cond("Available", F, "SomeReason", "some message"))), "ControlPlaneAvailable",
         ("False", "SomeReason", "some message")),
    Case(CPA, "mirror Available condition from control plane (true)",
         lambda: with_cp(cp_object(cond("Available", T, "", "some message"))), "ControlPlaneAvailable",
         ("True", "Available", "some message")),
    Case(CPA, "Use status.controlPlaneReady flag as a fallback Available condition from control plane is missing",
         lambda: with_cp(cp_object(initialized=False)), "ControlPlaneAvailable",
         ("False", "NotAvailable", f"{KIND} status.initialization.controlPlaneInitialized is false")),
    Case(CPA, "Use status.controlPlaneReady flag as a fallback Available condition from control plane is missing (ready true)",
         lambda: with_cp(cp_object(initialized=True), initialized=True), "ControlPlaneAvailable",
         ("True", "Available", "")),
    Case(CPA, "control plane that was ready not found while cluster is deleting",
         lambda: with_cp(initialized=True, deleting=True), "ControlPlaneAvailable",
         ("False", "ObjectDeleted", f"{KIND} has been deleted")),
    Case(CPA, "control plane not found while cluster is deleting", lambda: with_cp(deleting=True),
         "ControlPlaneAvailable", ("False", "ObjectDoesNotExist", f"{KIND} does not exist")),
    Case(CPA, "control plane not found after the cluster has been initialized", lambda: with_cp(initialized=True),
         "ControlPlaneAvailable", ("False", "ObjectDeleted", f"{KIND} has been deleted while the cluster still exists")),
    Case(CPA, "control plane not found", lambda: with_cp(), "ControlPlaneAvailable",
         ("False", "ObjectDoesNotExist", f"{KIND} does not exist")),
    Case(CPI, "topology not yet reconcile", lambda: with_cp(topology=True, ref=False), "ControlPlaneInitialized",
         ("Unknown", "ObjectDoesNotExist", "Waiting for cluster topology to be reconciled")),
    Case(CPI, "topology not yet reconcile, cluster deleted", lambda: with_cp(topology=True, ref=False, deleting=True),
         "ControlPlaneInitialized", ("Unknown", "ObjectDoesNotExist", "")),
    Case(CPI, "cluster with control plane, control plane does not exist", lambda: with_cp(), "ControlPlaneInitialized",
         ("Unknown", "ObjectDoesNotExist", f"{KIND} does not exist")),
    Case(CPI, "cluster with control plane, not yet initialized", lambda: with_cp(cp_object()), "ControlPlaneInitialized",
         ("False", "NotInitialized", "Control plane not yet initialized")),
    Case(CPI, "cluster with control plane, initialized", lambda: with_cp(cp_object(initialized=True)),
         "ControlPlaneInitialized", ("True", "Initialized", "")),
    Case(CPI, "cluster with stand alone CP machines, no machines with a node yet", lambda: with_cp(ref=False),
         "ControlPlaneInitialized",
         ("False", "NotInitialized", "Waiting for the first control plane machine to have status.nodeRef set")),
    Case(CPI, "cluster with stand alone CP machines, at least one machine with a node",
         lambda: with_cp(m("cp1", cp=True, node_name="Foo"), ref=False), "ControlPlaneInitialized",
         ("True", "Initialized", "")),
    Case(CPI, "initialized never flips back to false",
         lambda: with_cp(cp_object(initialized=False), conditions=[cond("ControlPlaneInitialized", T, "Initialized")]),
         "ControlPlaneInitialized", ("True", "Initialized", "")),
]

def bare_cluster(*objects: Base, infra: bool = False, cp: bool = False, provisioned: bool | None = None,
                 endpoint: bool = False, deleting: bool = False) -> Computed:
    obj = cluster_object(cp_ref="KubeadmControlPlane/cp1" if cp else None,
                         infra_ref="DockerCluster/infra1" if infra else None,
                         infrastructure_provisioned=provisioned, deleted_ago=1.0 if deleting else None,
                         control_plane_endpoint_host="1.2.3.4" if endpoint else "",
                         control_plane_endpoint_port=8443 if endpoint else None)
    return compute_cluster(obj, capi_view(obj, *objects), NOW)


def counted(prefix: str, desired: int | None, replicas: int | None, ready: int | None, available: int | None,
            up_to_date: int | None) -> dict[str, int | None]:
    values = (desired, replicas, ready, available, up_to_date)
    names = ("desiredReplicas", "replicas", "readyReplicas", "availableReplicas", "upToDateReplicas")
    return {f"{prefix}.{n}": v for n, v in zip(names, values, strict=True)}


def reporting(obj: Base, *values: int) -> Base:
    return dataclasses.replace(obj, reported=Counters(*values))  # type: ignore[call-arg]


def owned(obj: Base) -> Base:
    return dataclasses.replace(obj, meta=owned_by(obj.meta, "Cluster", "c1"))


def three(available: Status, ready: Status, up_to_date: Status) -> tuple[Condition, ...]:
    return (cond("Available", available), cond("Ready", ready), cond("UpToDate", up_to_date))


PH, CPR, WR = "TestSetPhases", "TestSetControlPlaneReplicas", "TestSetWorkersReplicas"
COUNTER_CASES = [
    Case(PH, "cluster not provisioned", lambda: bare_cluster(), "phase", "Pending"),
    Case(PH, "cluster has infrastructureRef", lambda: bare_cluster(infra=True), "phase", "Provisioning"),
    Case(PH, "cluster infrastructure is ready", lambda: bare_cluster(infra=True, provisioned=True), "phase",
         "Provisioning"),
    Case(PH, "cluster infrastructure is ready and ControlPlaneEndpoint is set",
         lambda: bare_cluster(infra=True, provisioned=True, endpoint=True), "phase", "Provisioned"),
    Case(PH, "no cluster infrastructure, control plane ready and ControlPlaneEndpoint is set",
         lambda: bare_cluster(cp=True, provisioned=True, endpoint=True), "phase", "Provisioned"),
    Case(PH, "cluster has deletion timestamp", lambda: bare_cluster(infra=True, provisioned=True, deleting=True),
         "phase", "Deleting"),
    Case(CPR, "counters should be nil for a cluster with control plane, control plane does not exist",
         lambda: bare_cluster(cp=True), "counters", counted("controlPlane", None, None, None, None, None)),
    Case(CPR, "counters should be nil for a cluster with control plane, but not reporting counters",
         lambda: bare_cluster(control_plane("cp1", replicas=None), cp=True), "counters",
         counted("controlPlane", None, None, None, None, None)),
    Case(CPR, "set counters for cluster with control plane, reporting counters",
         lambda: bare_cluster(reporting(control_plane("cp1"), 3, 2, 1, 2, 0), cp=True), "counters",
         counted("controlPlane", 3, 2, 1, 2, 0)),
    Case(CPR, "cluster with stand alone CP machines, no machines yet", lambda: bare_cluster(), "counters",
         counted("controlPlane", None, None, None, None, None)),
    Case(CPR, "cluster with stand alone CP machines, with machines",
         lambda: bare_cluster(m("cp1", *three(T, T, T), cp=True), m("cp2", *three(F, T, T), cp=True),
                              m("cp3", *three(F, F, T), cp=True), m("cp4", cp=True), m("cp5", cp=True)),
         "counters", counted("controlPlane", 5, 5, 2, 1, 3)),
    Case(WR, "counter should be nil there are no objects to count", lambda: bare_cluster(cp=True), "counters",
         counted("workers", None, None, None, None, None)),
    Case(WR, "counter should be nil if descendants are not reporting counters",
         lambda: bare_cluster(machine_pool("mp1", None, status_replicas=None), machine_deployment("md1", None),
                              owned(machine_set("ms1", None)), machine_set("ms2", None), m("m1"), cp=True),
         "counters", counted("workers", None, None, None, None, None)),
    Case(WR, "should count workers from different objects",
         lambda: bare_cluster(reporting(machine_pool("mp1", 1), 1, 2, 3, 4, 5),
                              reporting(machine_deployment("md1", 11), 11, 12, 13, 14, 15),
                              reporting(owned(machine_set("ms1", 21)), 21, 22, 23, 24, 25),
                              reporting(machine_set("ms2", 31), 31, 32, 33, 34, 35),
                              owned(m("m1", *three(T, T, T), version="v1.31.0")),
                              owned(m("m2", *three(T, F, F), version="v1.33.0")),
                              owned(m("m3", *three(T, T, F), version="v1.33.0")),
                              owned(m("m4")), m("m5", version="v1.29.0"), cp=True),
         "counters", counted("workers", 37, 40, 41, 45, 46)),
]

CASES = [
    *COUNTER_CASES,
    *AVAILABLE_CASES,
    *CONTROL_PLANE_CASES,
    # setRollingOutCondition
    Case(ROLL, "cluster with controlplane, false if no control plane & descendants", lambda: cluster(), "RollingOut",
         ("False", "NotRollingOut", "")),
    Case(ROLL, "cluster with controlplane, control plane & descendants do not report rolling out",
         lambda: cluster(kcp(), mp("mp1"), md("md1")), "RollingOut",
         ("Unknown", "RollingOutUnknown", "* MachineDeployment md1: Condition RollingOut not yet reported\n"
                                          "* MachinePool mp1: Condition RollingOut not yet reported"), differs=POOLS),
    Case(ROLL, "cluster with controlplane, control plane and descendants report rolling out",
         lambda: cluster(kcp(rolling("Rolling out 3 not up-to-date replicas")),
                         mp("mp1", rolling("Rolling out 5 not up-to-date replicas")),
                         md("md1", rolling("Rolling out 4 not up-to-date replicas"))), "RollingOut",
         ("True", "RollingOut", "* KubeadmControlPlane cp1: Rolling out 3 not up-to-date replicas\n"
                                "* MachineDeployment md1: Rolling out 4 not up-to-date replicas\n"
                                "* MachinePool mp1: Rolling out 5 not up-to-date replicas")),
    Case(ROLL, "cluster with controlplane, control plane not reporting conditions, descendants report rolling out",
         lambda: cluster(kcp(), mp("mp1", rolling("Rolling out 3 not up-to-date replicas")),
                         md("md1", rolling("Rolling out 5 not up-to-date replicas"))), "RollingOut",
         ("True", "RollingOut", "* MachineDeployment md1: Rolling out 5 not up-to-date replicas\n"
                                "* MachinePool mp1: Rolling out 3 not up-to-date replicas")),
    Case(ROLL, "cluster without controlplane, false if no descendants", lambda: cluster(cp=False), "RollingOut",
         ("False", "NotRollingOut", "")),
    Case(ROLL, "cluster without controlplane, descendants report rolling out",
         lambda: cluster(mp("mp1", rolling("Rolling out 3 not up-to-date replicas")),
                         md("md1", rolling("Rolling out 5 not up-to-date replicas")), cp=False), "RollingOut",
         ("True", "RollingOut", "* MachineDeployment md1: Rolling out 5 not up-to-date replicas\n"
                                "* MachinePool mp1: Rolling out 3 not up-to-date replicas")),
    *lifecycle_cases("TestSetScalingUpCondition", "ScalingUp", "scaling up"),
    *lifecycle_cases("TestSetScalingDownCondition", "ScalingDown", "scaling down"),
    # setWorkersAvailableCondition
    Case(WA, "true if no descendants", lambda: cluster(), "WorkersAvailable", ("True", "NoWorkers", "")),
    Case(WA, "descendants do not report available", lambda: cluster(mp("mp1"), md("md1")), "WorkersAvailable",
         ("Unknown", "AvailableUnknown", "* MachineDeployment md1: Condition Available not yet reported\n"
                                         "* MachinePool mp1: Condition Available not yet reported")),
    Case(WA, "descendants report available",
         lambda: cluster(mp("mp1", cond("Available", F, "Foo", MP_UNAVAILABLE)),
                         md("md1", cond("Available", F, "Foo", MD_UNAVAILABLE))), "WorkersAvailable",
         ("False", "NotAvailable", f"* MachineDeployment md1: {MD_UNAVAILABLE}\n* MachinePool mp1: {MP_UNAVAILABLE}")),
    *machines_ready_cases("TestSetControlPlaneMachinesReadyCondition", "ControlPlaneMachinesReady", cp=True),
    *machines_ready_cases("TestSetWorkerMachinesReadyCondition", "WorkerMachinesReady", cp=False),
    *machines_up_to_date_cases("TestSetControlPlaneMachinesUpToDateCondition", "ControlPlaneMachinesUpToDate", cp=True),
    *machines_up_to_date_cases("TestSetWorkerMachinesUpToDateCondition", "WorkerMachinesUpToDate", cp=False),
    # setRemediatingCondition
    Case(REM, "Without unhealthy machines", lambda: cluster(m("m1"), m("m2")), "Remediating",
         ("False", "NotRemediating", "")),
    Case(REM, "With machines to be remediated",
         lambda: cluster(m("m1", HC_OK), m("m2", HC_FAIL), m("m3", HC_FAIL, OWNER_DELETING)), "Remediating",
         ("True", "Remediating", "* Machine m3: Machine is deleting")),
    Case(REM, "With one unhealthy machine not to be remediated",
         lambda: cluster(m("m1", HC_OK), m("m2", HC_FAIL), m("m3", HC_OK)), "Remediating",
         ("False", "NotRemediating", "Machine m2 is not healthy (not to be remediated)")),
    Case(REM, "With two unhealthy machine not to be remediated",
         lambda: cluster(m("m1", HC_FAIL), m("m2", HC_FAIL), m("m3", HC_OK)), "Remediating",
         ("False", "NotRemediating", "Machines m1, m2 are not healthy (not to be remediated)")),
    # setDeletingCondition: the reason and message upstream passes in are what the deletion reconcile
    # computes from the descendants still present.
    Case("TestDeletingCondition", "deletionTimestamp not set", lambda: cluster(cp=False), "Deleting",
         ("False", "NotDeleting", "")),
    Case("TestDeletingCondition", "deletionTimestamp set (some reason/message reported)",
         lambda: cluster(*(m(f"cp{i}", cp=True) for i in (1, 2, 3)), md("md1"), md("md2"), ms("ms1"), ms("ms2"),
                         *sorted_workers(f"w{i}" for i in range(1, 9)), cp=False, deleting=True), "Deleting",
         ("True", "WaitingForWorkersDeletion", "* Control plane Machines: cp1, cp2, cp3\n"
                                               "* MachineDeployments: md1, md2\n"
                                               "* MachineSets: ms1, ms2\n"
                                               "* Worker Machines: w1, w2, w3, w4, w5, ... (3 more)")),
]


@pytest.mark.parametrize("case", params(CASES))
def test_upstream_cluster(case: Case) -> None:
    check(case)
