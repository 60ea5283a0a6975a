"""Cluster rules: controlPlane/workers counters, conditions, Available with gates, phase.

Children's results are recorded in the view directly (as the orchestrator would after evaluating
them), so each case states exactly what the Cluster sees of its MachineDeployments and pools.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from exporter.engine.cluster import compute_cluster
from exporter.engine.evaluate_types import Computed
from exporter.engine.model import Base, Cluster, Condition, Counters, Gate, ObjectKey

from .builders import (
    CLUSTER,
    NOW,
    F,
    T,
    U,
    capi_view,
    cluster_class,
    cluster_object,
    cond,
    control_plane,
    cp_machine,
    healthy_machine_conditions,
    machine,
    machine_deployment,
    machine_pool,
    machine_set,
    owned_by,
    pool_machine,
)

GOOD = [cond("RemoteConnectionProbe", T, "ProbeSucceeded"), cond("InfrastructureReady", T, "Ready")]
KCP_AVAILABLE = control_plane(conditions=[cond("Available", T, "Available")])
MD = machine_deployment("md1", 2)
MP = machine_pool("mp1", 2, status_replicas=2)


def good(**kw: object) -> Cluster:
    return cluster_object(conditions=kw.pop("conditions", GOOD), **kw)  # type: ignore[arg-type]


def result(**conditions: Condition) -> Computed:
    return Computed(conditions=tuple(conditions.values()))


def run(cluster: Cluster, *objects: Base, computed: dict[ObjectKey, Computed] | None = None,
        classes: tuple[Base, ...] = ()) -> Computed:
    view = capi_view(cluster, *objects, computed=computed)
    view.cluster_classes = {(c.meta.namespace, c.meta.name): c for c in classes}  # type: ignore[misc]
    return compute_cluster(cluster, view, NOW)


def standalone(name: str, *, cp: bool = False, **kw: object) -> Base:
    m = cp_machine(name, kcp_name="", **kw) if cp else machine(name, **kw)  # type: ignore[arg-type]
    if cp:
        labels = dict(m.meta.labels)
        labels["cluster.x-k8s.io/control-plane"] = ""
        m = replace(m, control_plane=True, meta=replace(m.meta, labels=labels))
    return replace(m, meta=owned_by(m.meta, "Cluster", CLUSTER))


NOT_READY = cond("Ready", F, "NotReady", "* NodeHealthy: Node not ready")


def machine_with(name: str, *replace_: Condition, **kw: object) -> Base:
    by_type = {c.type: c for c in healthy_machine_conditions()}
    by_type.update({c.type: c for c in replace_})
    return machine(name, list(by_type.values()), **kw)  # type: ignore[arg-type]


@dataclass
class Case:
    id: str
    type: str
    want: tuple[str, str, str] | None
    cluster: Cluster = field(default_factory=good)
    objects: list[Base] = field(default_factory=lambda: [KCP_AVAILABLE])
    computed: dict[ObjectKey, Computed] = field(default_factory=dict)
    classes: tuple[Base, ...] = ()


CASES = [
    # ControlPlaneAvailable
    Case("cp-available-mirrors-kcp", "ControlPlaneAvailable", ("True", "Available", "")),
    Case("cp-available-mirrors-computed-kcp", "ControlPlaneAvailable",
         ("False", "NotAvailable", "* Control plane certificates are not available"),
         objects=[control_plane(layout="v1beta1")],
         computed={control_plane().key: result(a=cond("Available", F, "NotAvailable",
                                                           "* Control plane certificates are not "
                                                           "available"))}),
    Case("cp-available-kcp-missing", "ControlPlaneAvailable",
         ("False", "ObjectDoesNotExist", "KubeadmControlPlane does not exist"), objects=[]),
    Case("cp-available-kcp-deleted-while-cluster-exists", "ControlPlaneAvailable",
         ("False", "ObjectDeleted", "KubeadmControlPlane has been deleted while the cluster still exists"),
         good(control_plane_initialized=True), objects=[]),
    Case("cp-available-kcp-deleted-with-cluster", "ControlPlaneAvailable",
         ("False", "ObjectDeleted", "KubeadmControlPlane has been deleted"),
         good(control_plane_initialized=True, deleted_ago=10.0), objects=[]),
    Case("cp-available-kcp-never-existed-while-deleting", "ControlPlaneAvailable",
         ("False", "ObjectDoesNotExist", "KubeadmControlPlane does not exist"),
         good(deleted_ago=10.0), objects=[]),
    Case("cp-available-topology-without-ref", "ControlPlaneAvailable",
         ("False", "ObjectDoesNotExist", "Waiting for cluster topology to be reconciled"),
         good(cp_ref=None, topology_class="cc"), objects=[]),
    Case("cp-available-unwatched-kind-reported", "ControlPlaneAvailable", ("True", "Available", "k0s up"),
         good(cp_ref="K0smotronControlPlane/k0s",
              conditions=[*GOOD, cond("ControlPlaneAvailable", T, "Available", "k0s up")]), objects=[]),
    Case("cp-available-unwatched-kind-fallback", "ControlPlaneAvailable",
         ("False", "NotAvailable",
          "K0smotronControlPlane status.initialization.controlPlaneInitialized is false"),
         good(cp_ref="K0smotronControlPlane/k0s"), objects=[]),
    Case("cp-available-standalone-machine-available", "ControlPlaneAvailable", ("True", "Available", ""),
         good(cp_ref=None), objects=[standalone("cp1", cp=True)]),
    Case("cp-available-standalone-none-available", "ControlPlaneAvailable",
         ("False", "NotAvailable", "None of the control plane Machines is available"),
         good(cp_ref=None), objects=[standalone("cp1", cp=True, base=[NOT_READY])]),
    Case("cp-available-standalone-no-machines", "ControlPlaneAvailable",
         ("False", "NotAvailable", "There are no control plane Machines"), good(cp_ref=None), objects=[]),
    # ControlPlaneInitialized
    Case("cp-initialized-stays-true", "ControlPlaneInitialized", ("True", "Initialized", ""),
         good(conditions=[cond("ControlPlaneInitialized", T, "Initialized")]), objects=[]),
    Case("cp-initialized-from-kcp", "ControlPlaneInitialized", ("True", "Initialized", "")),
    Case("cp-initialized-kcp-not-yet", "ControlPlaneInitialized",
         ("False", "NotInitialized", "Control plane not yet initialized"),
         objects=[control_plane(initialized=False)]),
    Case("cp-initialized-kcp-missing", "ControlPlaneInitialized",
         ("Unknown", "ObjectDoesNotExist", "KubeadmControlPlane does not exist"), objects=[]),
    Case("cp-initialized-topology-without-ref", "ControlPlaneInitialized",
         ("Unknown", "ObjectDoesNotExist", "Waiting for cluster topology to be reconciled"),
         good(cp_ref=None, topology_class="cc"), objects=[]),
    Case("cp-initialized-unwatched-kind-flag", "ControlPlaneInitialized", ("True", "Initialized", ""),
         good(cp_ref="K0smotronControlPlane/k0s", control_plane_initialized=True), objects=[]),
    Case("cp-initialized-standalone-node", "ControlPlaneInitialized", ("True", "Initialized", ""),
         good(cp_ref=None), objects=[standalone("cp1", cp=True)]),
    Case("cp-initialized-standalone-no-node", "ControlPlaneInitialized",
         ("False", "NotInitialized",
          "Waiting for the first control plane machine to have status.nodeRef set"),
         good(cp_ref=None), objects=[]),
    # WorkersAvailable
    Case("workers-available-no-workers", "WorkersAvailable", ("True", "NoWorkers", "")),
    Case("workers-available-md-and-pool", "WorkersAvailable", ("True", "Available", ""),
         objects=[MD, MP], computed={MD.key: result(a=cond("Available", T, "Available")),
                                     MP.key: result(a=cond("Available", T, "Available"))}),
    Case("workers-available-pool-not-available", "WorkersAvailable",
         ("False", "NotAvailable", "* MachinePool mp1: 1 available replicas, at least 2 required"),
         objects=[MD, MP], computed={MD.key: result(a=cond("Available", T, "Available")),
                                     MP.key: result(a=cond("Available", F, "NotAvailable",
                                                           "1 available replicas, at least 2 required"))}),
    Case("workers-available-md-not-yet-reported", "WorkersAvailable",
         ("Unknown", "AvailableUnknown", "* MachineDeployment md1: Condition Available not yet reported"),
         objects=[MD]),
    # Machines roll-ups
    Case("cp-machines-ready-no-replicas", "ControlPlaneMachinesReady", ("True", "NoReplicas", "")),
    Case("cp-machines-ready-one-not-ready", "ControlPlaneMachinesReady",
         ("False", "NotReady", "* Machine m1:\n  * NodeHealthy: Node not ready"),
         objects=[KCP_AVAILABLE, cp_machine("m1", base=[NOT_READY])]),
    Case("worker-machines-ready-skips-pool-machines", "WorkerMachinesReady", ("True", "Ready", ""),
         objects=[machine("w1"), pool_machine("p1", conditions=[NOT_READY])]),
    Case("worker-machines-ready-one-not-ready", "WorkerMachinesReady",
         ("False", "NotReady", "* Machine w2:\n  * NodeHealthy: Node not ready"),
         objects=[machine("w1"), machine_with("w2", NOT_READY)]),
    Case("cp-machines-up-to-date-young-skipped", "ControlPlaneMachinesUpToDate", ("True", "NoReplicas", ""),
         objects=[cp_machine("m1", base=[], age=3.0)]),
    Case("cp-machines-up-to-date-v1beta1-machine-judged-by-kcp-version", "ControlPlaneMachinesUpToDate",
         ("False", "NotUpToDate", "* Machine m1:\n  * Version v1.29.0, v1.30.0 required"),
         objects=[KCP_AVAILABLE, cp_machine("m1", base=[], layout="v1beta1", version="v1.29.0")]),
    Case("worker-machines-up-to-date-stale", "WorkerMachinesUpToDate",
         ("False", "NotUpToDate", "* Machine w1: DockerMachine is not up-to-date"),
         objects=[machine_with("w1", cond("UpToDate", F, "NotUpToDate", "DockerMachine is not up-to-date"))]),
    # RollingOut / ScalingUp / ScalingDown
    Case("rolling-out-none", "RollingOut", ("False", "NotRollingOut", ""), objects=[]),
    Case("rolling-out-md", "RollingOut",
         ("True", "RollingOut", "* MachineDeployment md1: Rolling out 2 not up-to-date replicas"),
         objects=[KCP_AVAILABLE, MD, MP],
         computed={MD.key: result(r=cond("RollingOut", T, "RollingOut",
                                         "Rolling out 2 not up-to-date replicas")),
                   control_plane().key: result(r=cond("RollingOut", F, "NotRollingOut"))}),
    Case("rolling-out-kcp-only-not", "RollingOut", ("False", "NotRollingOut", ""),
         computed={control_plane().key: result(r=cond("RollingOut", F, "NotRollingOut"))}),
    Case("scaling-up-owned-machine-set", "ScalingUp",
         ("True", "ScalingUp", "* MachineSet ms1: Scaling up from 0 to 1 replicas"),
         objects=[KCP_AVAILABLE, replace(machine_set("ms1"), meta=owned_by(machine_set("ms1").meta, "Cluster",
                                                                             CLUSTER))],
         computed={machine_set("ms1").key: result(s=cond("ScalingUp", T, "ScalingUp",
                                                          "Scaling up from 0 to 1 replicas"))}),
    Case("scaling-up-md-set-not-counted", "ScalingUp", ("False", "NotScalingUp", ""),
         objects=[KCP_AVAILABLE, machine_set("ms1", deployment_name="md1")],
         computed={machine_set("ms1").key: result(s=cond("ScalingUp", T, "ScalingUp", "x"))}),
    Case("scaling-up-unknown-pool", "ScalingUp",
         ("Unknown", "ScalingUpUnknown", "* MachinePool mp1: Waiting for spec.replicas set"),
         objects=[KCP_AVAILABLE, MP],
         computed={MP.key: result(s=cond("ScalingUp", U, "WaitingForReplicasSet",
                                         "Waiting for spec.replicas set"))}),
    Case("scaling-down-kcp", "ScalingDown",
         ("True", "ScalingDown", "* KubeadmControlPlane kcp1: Scaling down from 4 to 3 replicas"),
         computed={control_plane().key: result(s=cond("ScalingDown", T, "ScalingDown",
                                                       "Scaling down from 4 to 3 replicas"))}),
    # Remediating
    Case("remediating-none", "Remediating", ("False", "NotRemediating", "")),
    Case("remediating-unhealthy-not-remediated", "Remediating",
         ("False", "NotRemediating", "Machine w1 is not healthy (not to be remediated)"),
         objects=[machine_with("w1", cond("HealthCheckSucceeded", F, "UnhealthyNode"))]),
    Case("remediating-waiting", "Remediating",
         ("True", "Remediating", "* Machine w1: Waiting for remediation"),
         objects=[machine_with("w1", cond("HealthCheckSucceeded", F, "UnhealthyNode"),
                               cond("OwnerRemediated", F, "WaitingForRemediation",
                                    "Waiting for remediation")),
                  pool_machine("p1", conditions=[cond("HealthCheckSucceeded", F, "UnhealthyNode"),
                                                 cond("OwnerRemediated", F, "WaitingForRemediation",
                                                      "pool")])]),
    # Deleting
    Case("deleting-not", "Deleting", ("False", "NotDeleting", "")),
    Case("deleting-waiting-for-workers", "Deleting",
         ("True", "WaitingForWorkersDeletion", "* MachineDeployments: md1\n* MachinePools: mp1\n"
                                               "* Worker Machines: w1"),
         good(deleted_ago=10.0), objects=[KCP_AVAILABLE, MD, MP, machine("w1")]),
    Case("deleting-waiting-for-workers-lists-five-names-then-a-count", "Deleting",
         ("True", "WaitingForWorkersDeletion", "* Worker Machines: w1, w2, w3, w4, w5, ... (2 more)"),
         good(deleted_ago=10.0), objects=[KCP_AVAILABLE, *(machine(f"w{i}") for i in range(1, 8))]),
    Case("deleting-waiting-for-control-plane", "Deleting",
         ("True", "WaitingForControlPlaneDeletion", "Waiting for KubeadmControlPlane to be deleted"),
         good(deleted_ago=10.0)),
    Case("deleting-waiting-for-infrastructure", "Deleting",
         ("True", "WaitingForInfrastructureDeletion", "Waiting for DockerCluster to be deleted"),
         good(deleted_ago=10.0), objects=[]),
    Case("deleting-completed", "Deleting", ("True", "DeletionCompleted", "Deletion completed"),
         good(deleted_ago=10.0, cp_ref=None, infra_ref=None), objects=[]),
    Case("deleting-hook-read-as-reported", "Deleting",
         ("True", "WaitingForBeforeDeleteHook", "Waiting for BeforeClusterDelete hook"),
         good(deleted_ago=10.0, conditions=[cond("Deleting", T, "WaitingForBeforeDeleteHook",
                                                 "Waiting for BeforeClusterDelete hook")])),
    # Paused
    Case("paused-spec", "Paused", ("True", "Paused", "Cluster spec.paused is set to true"),
         good(spec_paused=True)),
    Case("paused-not", "Paused", ("False", "NotPaused", "")),
    # Read as reported
    Case("remote-connection-probe-reported", "RemoteConnectionProbe", ("True", "ProbeSucceeded", "")),
    Case("remote-connection-probe-missing", "RemoteConnectionProbe",
         ("Unknown", "NotYetReported", "Condition RemoteConnectionProbe not yet reported"),
         good(conditions=[])),
    Case("infrastructure-ready-reported", "InfrastructureReady", ("True", "Ready", "")),
    Case("infrastructure-ready-v1beta1", "InfrastructureReady", ("True", "Ready", ""),
         good(layout="v1beta1", conditions=[], v1beta1=[cond("InfrastructureReady", T)])),
    Case("infrastructure-ready-flag-fallback", "InfrastructureReady",
         ("False", "NotReady", "DockerCluster status.initialization.provisioned is false"),
         good(conditions=[], infrastructure_provisioned=False)),
    Case("infrastructure-ready-missing", "InfrastructureReady",
         ("Unknown", "NotYetReported", "Condition InfrastructureReady not yet reported"),
         good(conditions=[])),
    Case("infrastructure-ready-topology-without-ref", "InfrastructureReady",
         ("False", "ObjectDoesNotExist", "Waiting for cluster topology to be reconciled"),
         good(infra_ref=None, topology_class="cc")),
    Case("topology-reconciled-absent-without-topology", "TopologyReconciled", None),
    Case("topology-reconciled-missing-with-topology", "TopologyReconciled",
         ("Unknown", "NotYetReported", "Condition TopologyReconciled not yet reported"),
         good(topology_class="cc")),
    # Available
    Case("available-all-good", "Available", ("True", "Available", "")),
    Case("available-probe-missing", "Available",
         ("Unknown", "AvailableUnknown", "* RemoteConnectionProbe: Condition not yet reported"),
         good(conditions=GOOD[1:])),
    Case("available-gate-missing", "Available",
         ("Unknown", "AvailableUnknown", "* MyGate: Condition not yet reported"),
         good(gates=(Gate("MyGate"),))),
    Case("available-negative-gate-true", "Available", ("False", "NotAvailable", "* Degraded: disk full"),
         good(gates=(Gate("Degraded", negative=True),),
              conditions=[*GOOD, cond("Degraded", T, "Full", "disk full")])),
    Case("available-cluster-class-gate", "Available",
         ("False", "NotAvailable", "* Compliant: policy violated"),
         good(topology_class="cc", conditions=[*GOOD, cond("TopologyReconciled", T, "ReconcileSucceeded"),
                                               cond("Compliant", F, "Violation", "policy violated")]),
         classes=(cluster_class("cc", (Gate("Compliant"),)),)),
    Case("available-empty-spec-gates-override-class", "Available", ("True", "Available", ""),
         good(topology_class="cc", gates=(),
              conditions=[*GOOD, cond("TopologyReconciled", T, "ReconcileSucceeded")]),
         classes=(cluster_class("cc", (Gate("Compliant"),)),)),
    Case("available-topology-progress-is-info", "Available",
         ("True", "Available", "* TopologyReconciled: upgrading"),
         good(topology_class="cc",
              conditions=[*GOOD, cond("TopologyReconciled", F, "ClusterUpgrading", "upgrading")])),
    Case("available-topology-failure-is-issue", "Available",
         ("False", "NotAvailable", "* TopologyReconciled: boom"),
         good(topology_class="cc",
              conditions=[*GOOD, cond("TopologyReconciled", F, "ReconcileFailed", "boom")])),
    Case("available-deleting", "Available",
         ("False", "NotAvailable", "* Deleting:\n  * MachineDeployments: md1"),
         good(deleted_ago=10.0), objects=[KCP_AVAILABLE, MD],
         computed={MD.key: result(a=cond("Available", T, "Available"))}),
    Case("available-deleting-cp-gone-is-info", "Available",
         ("False", "NotAvailable", "* Deleting: Waiting for DockerCluster to be deleted"),
         good(deleted_ago=10.0, control_plane_initialized=True), objects=[]),
    Case("available-workers-not-available", "Available",
         ("False", "NotAvailable", "* WorkersAvailable:\n  * MachinePool mp1: 0 available"),
         objects=[KCP_AVAILABLE, MP],
         computed={MP.key: result(a=cond("Available", F, "NotAvailable", "0 available"))}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_condition(case: Case) -> None:
    got = run(case.cluster, *case.objects, computed=case.computed, classes=case.classes).condition(case.type)
    if case.want is None:
        assert got is None
        return
    assert got is not None
    assert (got.status.value, got.reason, got.message) == case.want


def cp_counters(**values: int | None) -> dict[str, int | None]:
    keys = ("desiredReplicas", "replicas", "readyReplicas", "availableReplicas", "upToDateReplicas",
            "unavailableReplicas")
    return {f"controlPlane.{k}": values.get(k) for k in keys}


def worker_counters(**values: int | None) -> dict[str, int | None]:
    return {k.replace("controlPlane.", "workers."): v for k, v in cp_counters(**values).items()}


def counters_of(cluster: Cluster, *objects: Base, computed: dict[ObjectKey, Computed] | None = None
                ) -> dict[str, int | None]:
    return dict(run(cluster, *objects, computed=computed).counters)


KCP_COUNTS = Computed(counters={"desiredReplicas": 3, "replicas": 3, "readyReplicas": 2,
                                "availableReplicas": 1,
                                "upToDateReplicas": 3})


@pytest.mark.parametrize(
    "cluster,objects,computed,want",
    [
        (good(), [control_plane()], {control_plane().key: KCP_COUNTS},
         cp_counters(desiredReplicas=3, replicas=3, readyReplicas=2, availableReplicas=1, upToDateReplicas=3,
                     unavailableReplicas=2)),
        (good(), [], {}, cp_counters()),
        (good(cp_ref=None, topology_class="cc"), [], {}, cp_counters()),
        (good(cp_ref="K0smotronControlPlane/k0s",
              reported_control_plane=Counters(desired=3, replicas=3, ready=3, available=3,
                                              up_to_date=3)), [], {},
         cp_counters(desiredReplicas=3, replicas=3, readyReplicas=3, availableReplicas=3, upToDateReplicas=3,
                     unavailableReplicas=0)),
        (good(cp_ref="K0smotronControlPlane/k0s"), [], {}, cp_counters()),
        (good(cp_ref=None), [standalone("cp1", cp=True), standalone("cp2", cp=True, base=[NOT_READY])], {},
         cp_counters(desiredReplicas=2, replicas=2, readyReplicas=1, availableReplicas=1, upToDateReplicas=1,
                     unavailableReplicas=1)),
        (good(cp_ref=None), [], {}, cp_counters()),
    ],
    ids=["from-computed-kcp", "kcp-missing", "topology-without-ref", "unwatched-kind-from-cluster-status",
         "unwatched-kind-not-reported", "standalone-machines", "no-control-plane-at-all"],
)
def test_control_plane_counters(cluster: Cluster, objects: list[Base], computed: dict[ObjectKey, Computed],
                                want: dict[str, int | None]) -> None:
    got = counters_of(cluster, *objects, computed=computed)
    assert {k: v for k, v in got.items() if k.startswith("controlPlane.")} == want


def test_workers_counters_sum_pools_deployments_owned_sets_and_standalone_machines() -> None:
    owned_ms = replace(machine_set("ms1", 1, reported=Counters(desired=1, replicas=1, ready=1, available=1,
                                                               up_to_date=1)),
                       meta=owned_by(machine_set("ms1").meta, "Cluster", CLUSTER))
    md_ms = machine_set("ms2", 5, deployment_name="md1",
                        reported=Counters(desired=5, replicas=5, ready=5, available=5, up_to_date=5))
    objects: list[Base] = [KCP_AVAILABLE, MD, MP, owned_ms, md_ms, standalone("w1"),
                           standalone("w2", conditions=[NOT_READY]),
                           machine("md-machine", deployment_name="md1")]
    computed = {
        MD.key: Computed(counters={"desiredReplicas": 2, "replicas": 3, "readyReplicas": 2,
                                   "availableReplicas": None, "upToDateReplicas": 1}),
        MP.key: Computed(counters={"desiredReplicas": 2, "replicas": 2, "readyReplicas": 2,
                                   "availableReplicas": 2,
                                   "upToDateReplicas": 2}),
    }
    got = counters_of(good(), *objects, computed=computed)
    assert {k: v for k, v in got.items() if k.startswith("workers.")} == worker_counters(
        desiredReplicas=2 + 2 + 1 + 2, replicas=3 + 2 + 1 + 2, readyReplicas=2 + 2 + 1 + 1,
        availableReplicas=2 + 1 + 1, upToDateReplicas=1 + 2 + 1 + 1, unavailableReplicas=7 - 4)


def test_workers_counters_unset_without_workers() -> None:
    got = counters_of(good(), KCP_AVAILABLE)
    assert {k: v for k, v in got.items() if k.startswith("workers.")} == worker_counters()


@pytest.mark.parametrize(
    "cluster,want",
    [
        (good(phase="Provisioned"), "Provisioned"),
        (good(deleted_ago=1.0), "Deleting"),
        (good(infrastructure_provisioned=True, control_plane_endpoint_host="10.0.0.1",
              control_plane_endpoint_port=6443), "Provisioned"),
        (good(infrastructure_provisioned=True), "Provisioning"),
        (good(cp_ref=None, infra_ref=None), "Pending"),
    ],
    ids=["reported", "deleting", "provisioned", "provisioning-without-endpoint", "pending"],
)
def test_phase(cluster: Cluster, want: str) -> None:
    assert run(cluster).phase == want
