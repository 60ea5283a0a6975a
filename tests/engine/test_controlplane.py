"""KubeadmControlPlane rules: counters and every computed condition, one named case per branch.

ControlPlaneComponentsHealthy has its own row-by-row file (test_seed002.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from exporter.engine.controlplane import compute_kubeadmcontrolplane
from exporter.engine.evaluate_types import Computed
from exporter.engine.model import Base, Condition, KubeadmControlPlane

from .builders import (
    CP_COMPONENTS,
    NOW,
    F,
    T,
    U,
    capi_cluster,
    capi_view,
    cluster_object,
    cond,
    control_plane,
    cp_machine,
    healthy_machine_conditions,
    machine,
    machine_pool,
)

NOT_READY = cond("Ready", F, "NotReady", "* NodeHealthy: Node not ready")


def base_with(*replace: Condition) -> list[Condition]:
    """A healthy Machine's conditions with some replaced by type."""
    by_type = {c.type: c for c in healthy_machine_conditions()}
    by_type.update({c.type: c for c in replace})
    return list(by_type.values())


def three(**overrides: object) -> list[Base]:
    return [cp_machine(f"m{i}", **overrides) for i in (1, 2, 3)]  # type: ignore[arg-type]


def run(kcp: KubeadmControlPlane, *objects: Base, computed: dict[tuple[str, str, str], Computed] | None = None
        ) -> Computed:
    return compute_kubeadmcontrolplane(kcp, capi_view(kcp, *objects, computed=computed), NOW)


@dataclass
class Case:
    id: str
    type: str
    want: tuple[str, str, str]
    kcp: KubeadmControlPlane = field(default_factory=control_plane)
    objects: list[Base] = field(default_factory=three)


CASES = [
    # Initialized
    Case("initialized-true", "Initialized", ("True", "Initialized", "")),
    Case("initialized-false", "Initialized", ("False", "NotInitialized", ""),
         control_plane(initialized=False)),
    # EtcdClusterHealthy
    Case("etcd-all-members-healthy", "EtcdClusterHealthy", ("True", "Healthy", "")),
    Case("etcd-member-not-healthy", "EtcdClusterHealthy",
         ("False", "NotHealthy", "* Machine m2:\n  * EtcdMemberHealthy: Etcd reports alarms: NOSPACE"),
         objects=[cp_machine("m1"), cp_machine("m2", etcd=None, extra=[
             cond("EtcdMemberHealthy", F, "NotHealthy", "Etcd reports alarms: NOSPACE")])]),
    Case("etcd-no-machines", "EtcdClusterHealthy",
         ("Unknown", "HealthUnknown", "No Machines reporting etcd member status"), objects=[]),
    Case("etcd-not-initialized", "EtcdClusterHealthy",
         ("Unknown", "InspectionFailed", "Waiting for Cluster control plane to be initialized"),
         control_plane(initialized=False)),
    # MachinesReady
    Case("machines-ready-no-machines", "MachinesReady", ("True", "NoReplicas", ""), objects=[]),
    Case("machines-ready-all-ready", "MachinesReady", ("True", "Ready", "")),
    Case("machines-ready-one-not-ready", "MachinesReady",
         ("False", "NotReady", "* Machine m2:\n  * NodeHealthy: Node not ready"),
         objects=[cp_machine("m1"), cp_machine("m2", base=base_with(NOT_READY))]),
    # MachinesUpToDate
    Case("machines-up-to-date-young-machine-skipped", "MachinesUpToDate", ("True", "NoReplicas", ""),
         objects=[cp_machine("m1", base=[c for c in healthy_machine_conditions() if c.type != "UpToDate"],
                             age=5.0)]),
    Case("machines-up-to-date-not-up-to-date", "MachinesUpToDate",
         ("False", "NotUpToDate", "* Machine m1:\n  * Version v1.29.0, v1.30.0 required"),
         objects=[cp_machine("m1", base=base_with(
             cond("UpToDate", F, "NotUpToDate", "* Version v1.29.0, v1.30.0 required")))]),
    Case("machines-up-to-date-all", "MachinesUpToDate", ("True", "UpToDate", "")),
    # A Machine reporting v1beta2 conditions is read as stored; version is the judge only before them.
    Case("machines-up-to-date-v1beta2-machine-not-reporting-it-yet", "MachinesUpToDate",
         ("Unknown", "UpToDateUnknown", "* Machine m1: Condition UpToDate not yet reported"),
         objects=[cp_machine("m1", base=[c for c in healthy_machine_conditions() if c.type != "UpToDate"])]),
    # RollingOut
    Case("rolling-out-none", "RollingOut", ("False", "NotRollingOut", "")),
    Case("rolling-out-two-machines", "RollingOut",
         ("True", "RollingOut", "Rolling out 2 not up-to-date replicas\n* Version v1.29.0, v1.30.0 required\n"
                                "* DockerMachine is not up-to-date"),
         objects=[
             cp_machine("m1", base=base_with(cond("UpToDate", F, "NotUpToDate",
                                                  "* DockerMachine is not up-to-date\n"
                                                  "* Version v1.29.0, v1.30.0 required"))),
             cp_machine("m2", base=base_with(cond("UpToDate", F, "NotUpToDate",
                                                  "* Version v1.29.0, v1.30.0 required"))),
             cp_machine("m3")]),
    # ScalingUp
    Case("scaling-up-replicas-unset", "ScalingUp",
         ("Unknown", "WaitingForReplicasSet", "Waiting for spec.replicas set"), control_plane(replicas=None)),
    Case("scaling-up-not", "ScalingUp", ("False", "NotScalingUp", "")),
    Case("scaling-up-from-2-to-3", "ScalingUp", ("True", "ScalingUp", "Scaling up from 2 to 3 replicas"),
         objects=[cp_machine("m1"), cp_machine("m2")]),
    # "is blocked because" lines only where the reconcile reaches the preflight checks, and only the
    # check they stop at: a deleting control plane Machine returns before them.
    Case("scaling-up-not-blocked-while-a-machine-deletes", "ScalingUp",
         ("True", "ScalingUp", "Scaling up from 2 to 3 replicas"),
         objects=[cp_machine("m1", components=F, message="down"), cp_machine("m2", deleted_ago=30.0)]),
    Case("scaling-up-blocked-by-topology-version-first", "ScalingUp",
         ("True", "ScalingUp", "Scaling up from 1 to 3 replicas is blocked because:\n"
                               "* waiting for a version upgrade to v1.31.0 to be propagated"),
         control_plane(conditions=[cond("CertificatesAvailable", F, "NotAvailable")]),
         objects=[cp_machine("m1"), cluster_object(topology_class="cc", topology_version="v1.31.0")]),
    Case("scaling-up-topology-at-the-upgrade-step-not-blocked", "ScalingUp",
         ("True", "ScalingUp", "Scaling up from 1 to 3 replicas"),
         objects=[cp_machine("m1"), cluster_object(
             topology_class="cc", topology_version="v1.32.0", topology_upgrade_step="v1.30.0")]),
    Case("scaling-up-blocked-by-topology-names-the-upgrade-step", "ScalingUp",
         ("True", "ScalingUp", "Scaling up from 1 to 3 replicas is blocked because:\n"
                               "* waiting for a version upgrade to v1.31.0 to be propagated"),
         objects=[cp_machine("m1"), cluster_object(
             topology_class="cc", topology_version="v1.32.0", topology_upgrade_step="v1.31.0")]),
    Case("scaling-up-blocked-by-certificates", "ScalingUp",
         ("True", "ScalingUp", "Scaling up from 1 to 3 replicas is blocked because:\n"
                               "* cluster certificates are missing or unknown"),
         control_plane(conditions=[cond("CertificatesAvailable", F, "NotAvailable")]),
         objects=[cp_machine("m1", components=F, message="down")]),
    Case("scaling-up-blocked-by-unhealthy-components-and-etcd", "ScalingUp",
         ("True", "ScalingUp", "Scaling up from 1 to 3 replicas is blocked because:\n"
                               "* waiting for control plane components to become healthy\n"
                               "* waiting for etcd cluster to become healthy"),
         objects=[cp_machine("m1", components=F, etcd=F, message="down")]),
    Case("scaling-up-initializing-runs-no-preflight-checks", "ScalingUp",
         ("True", "ScalingUp", "Scaling up from 0 to 3 replicas"),
         objects=[cluster_object(topology_class="cc", topology_version="v1.31.0")]),
    # ScalingDown
    Case("scaling-down-replicas-unset", "ScalingDown",
         ("Unknown", "WaitingForReplicasSet", "Waiting for spec.replicas set"), control_plane(replicas=None)),
    Case("scaling-down-not", "ScalingDown", ("False", "NotScalingDown", "")),
    Case("scaling-down-from-4-to-3", "ScalingDown",
         ("True", "ScalingDown", "Scaling down from 4 to 3 replicas"),
         objects=[cp_machine(f"m{i}") for i in range(1, 5)]),
    Case("scaling-down-to-0-while-deleting-with-stale-machine", "ScalingDown",
         ("True", "ScalingDown", "Scaling down from 1 to 0 replicas is blocked because:\n"
                                 "* Machine m1 is in deletion since more than 15m"),
         control_plane(deleted_ago=3600.0), objects=[cp_machine("m1", deleted_ago=1800.0)]),
    Case("scaling-down-stale-machine-drain-delay", "ScalingDown",
         ("True", "ScalingDown", "Scaling down from 4 to 3 replicas is blocked because:\n"
                                 "* Machine m4 is in deletion since more than 15m, delay likely due to "
                                 "PodDisruptionBudgets"),
         objects=[*three(), cp_machine("m4", deleted_ago=1800.0, drain_start_time=NOW - 600, base=base_with(
             cond("Deleting", T, "DrainingNode", "Drain not completed yet:\n* Pod a: cannot evict pod as it "
                                                 "would violate the pod's disruption budget.")))]),
    Case("scaling-down-not-blocked-by-certificates", "ScalingDown",
         ("True", "ScalingDown", "Scaling down from 4 to 3 replicas"),
         control_plane(conditions=[cond("CertificatesAvailable", F, "NotAvailable")]),
         objects=[cp_machine(f"m{i}") for i in range(1, 5)]),
    Case("scaling-down-blocked-by-topology-version", "ScalingDown",
         ("True", "ScalingDown", "Scaling down from 4 to 3 replicas is blocked because:\n"
                                 "* waiting for a version upgrade to v1.31.0 to be propagated"),
         objects=[*(cp_machine(f"m{i}", etcd=F) for i in range(1, 5)),
                  cluster_object(topology_class="cc", topology_version="v1.31.0")]),
    Case("scaling-down-not-blocked-while-a-machine-deletes", "ScalingDown",
         ("True", "ScalingDown", "Scaling down from 4 to 3 replicas"),
         objects=[*(cp_machine(f"m{i}", etcd=F) for i in range(1, 4)), cp_machine("m4", deleted_ago=60.0)]),
    # Remediating
    Case("remediating-none", "Remediating", ("False", "NotRemediating", "")),
    Case("remediating-unhealthy-not-to-be-remediated", "Remediating",
         ("False", "NotRemediating",
          "Machine m1 is not healthy (not to be remediated by KubeadmControlPlane)"),
         objects=[cp_machine("m1", extra=[cond("HealthCheckSucceeded", F, "UnhealthyNode", "Node gone")])]),
    Case("remediating-waiting-for-owner", "Remediating",
         ("True", "Remediating", "* Machine m1: Waiting for remediation"),
         objects=[cp_machine("m1", extra=[cond("HealthCheckSucceeded", F, "UnhealthyNode"),
                                          cond("OwnerRemediated", F, "WaitingForRemediation",
                                               "Waiting for remediation")])]),
    # Deleting
    Case("deleting-not", "Deleting", ("False", "NotDeleting", "")),
    Case("deleting-waiting-for-workers", "Deleting",
         ("True", "WaitingForWorkersDeletion",
          "KubeadmControlPlane deletion blocked because following objects still exist:\n"
          "* MachinePools: mp1\n* Machines: w1"),
         control_plane(deleted_ago=60.0), objects=[*three(), machine("w1"), machine_pool("mp1")]),
    Case("deleting-waiting-for-workers-lists-five-names-then-a-count", "Deleting",
         ("True", "WaitingForWorkersDeletion",
          "KubeadmControlPlane deletion blocked because following objects still exist:\n"
          "* Machines: w1, w2, w3, w4, w5, ... (2 more)"),
         control_plane(deleted_ago=60.0), objects=[*three(), *(machine(f"w{i}") for i in range(1, 8))]),
    Case("deleting-waiting-for-machines", "Deleting",
         ("True", "WaitingForMachineDeletion", "Deleting 3 Machines"),
         control_plane(deleted_ago=60.0)),
    Case("deleting-completed", "Deleting", ("True", "DeletionCompleted", "Deletion completed"),
         control_plane(deleted_ago=60.0), objects=[]),
    # Paused
    Case("paused-not", "Paused", ("False", "NotPaused", "")),
    Case("paused-annotation", "Paused",
         ("True", "Paused", "KubeadmControlPlane has the cluster.x-k8s.io/paused annotation"),
         control_plane(paused=True)),
    Case("paused-cluster-spec", "Paused", ("True", "Paused", "Cluster spec.paused is set to true"),
         objects=[*three(), capi_cluster(paused=True)]),
    # Available (approximation)
    Case("available-not-initialized", "Available",
         ("False", "NotAvailable", "Control plane not yet initialized"),
         control_plane(initialized=False)),
    Case("available-all-healthy", "Available", ("True", "Available", "")),
    Case("available-with-one-member-down", "Available",
         ("True", "Available",
          "* 2 of 3 etcd members are healthy, at least 2 healthy member required for etcd quorum\n"
          "* 2 of 3 Machines have healthy control plane components, at least 1 required"),
         objects=[cp_machine("m1"), cp_machine("m2"), cp_machine("m3", etcd=F)]),
    Case("available-quorum-lost", "Available",
         ("False", "NotAvailable", "* 1 of 3 etcd members is healthy, at least 2 healthy member required for "
                                   "etcd quorum"),
         objects=[cp_machine("m1"), cp_machine("m2", etcd=F), cp_machine("m3", etcd=F)]),
    Case("available-no-healthy-components-certificates-missing-deleting", "Available",
         ("False", "NotAvailable",
          "* Control plane metadata.deletionTimestamp is set\n"
          "* Control plane certificates are not available\n"
          "* There are no Machines with healthy control plane components, at least 1 required"),
         control_plane(deleted_ago=1.0, conditions=[cond("CertificatesAvailable", U, "NotAvailable")]),
         objects=three(components=F)),
    Case("available-v1beta1-kcp-reads-v1beta1-certificates", "Available", ("True", "Available", ""),
         control_plane(layout="v1beta1", v1beta1=[cond("CertificatesAvailable", T)]),
         objects=[cp_machine(f"m{i}", layout="v1beta1", base=[], components=None, etcd=None,
                             v1beta1=[cond(t, T) for t in (*CP_COMPONENTS, "EtcdMemberHealthy")])
                  for i in (1, 2, 3)]),
    Case("available-external-etcd-ignores-members", "Available", ("True", "Available", ""),
         control_plane(external_etcd=True), objects=three(etcd=F)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_condition(case: Case) -> None:
    got = run(case.kcp, *case.objects).condition(case.type)
    assert got is not None
    assert (got.status.value, got.reason, got.message) == case.want


def test_counters_count_machines_by_effective_conditions() -> None:
    machines = [cp_machine("m1"),
                cp_machine("m2", base=base_with(NOT_READY, cond("Available", F, "NotReady"))),
                cp_machine("m3", base=base_with(cond("UpToDate", F, "NotUpToDate")))]
    assert run(control_plane(), *machines).counters == {
        "desiredReplicas": 3, "replicas": 3, "readyReplicas": 2, "availableReplicas": 2,
        "upToDateReplicas": 2}


def test_counters_use_engine_conditions_and_version_for_v1beta1_machines() -> None:
    old = [cp_machine(f"m{i}", base=[], layout="v1beta1", version=v)
           for i, v in ((1, "v1.30.0"), (2, "v1.29.0"))]
    computed = {m.key: Computed(conditions=(cond("Ready", T, "Ready"), cond("Available", T, "Available")))
                for m in old}
    result = run(control_plane(replicas=2), *old, computed=computed)
    assert result.counters == {
        "desiredReplicas": 2, "replicas": 2, "readyReplicas": 2, "availableReplicas": 2,
        "upToDateReplicas": 1}
    rolling = result.condition("RollingOut")
    assert rolling is not None
    assert rolling.message == "Rolling out 1 not up-to-date replicas\n* Version v1.29.0, v1.30.0 required"


def test_external_etcd_has_no_etcd_cluster_healthy() -> None:
    assert run(control_plane(external_etcd=True), *three()).condition("EtcdClusterHealthy") is None


def test_other_control_planes_machines_are_not_counted() -> None:
    mine, theirs = cp_machine("m1"), cp_machine("x1", kcp_name="other")
    assert run(control_plane(replicas=1), mine, theirs).counters["replicas"] == 1
