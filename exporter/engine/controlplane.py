"""KubeadmControlPlane rules: counters and the v1beta2 conditions KCP sets on itself.

Owns ``compute_kubeadmcontrolplane``: replica counters over the control plane Machines (and
whether the Machine of ``status.lastRemediation`` still exists),
``Initialized``, ``RollingOut``, ``ScalingUp``, ``ScalingDown``, ``MachinesReady``,
``MachinesUpToDate``, ``Remediating``, ``Deleting`` and ``Paused``, and the wiring of the health
conditions computed in ``controlplane_health.py`` (``ControlPlaneComponentsHealthy``,
``EtcdClusterHealthy``, ``Available``). Owns no Machine rule: Machine conditions come through
the view (reported where the Machine has them, else the engine's).

Not recomputed (read as reported): ``CertificatesAvailable`` (cluster certificate Secrets are not
watched). Approximations, each where the input lives only in the KCP controller's memory:
  * ScalingUp/ScalingDown "is blocked because" lines are rebuilt from objects along the
    reconcile's path to the preflight checks (none while the KCP or one of its Machines is
    deleting; then the first failing check: Cluster topology version, CertificatesAvailable on
    scale up, the health conditions) instead of the controller's last preflight-check results;
    health is judged on the KCP's ControlPlaneComponentsHealthy and EtcdClusterHealthy, not per
    Machine excluding the one picked for deletion; the missing InfraMachineTemplate line is
    omitted (templates are not watched).
  * Deleting distinguishes WaitingForWorkersDeletion / WaitingForMachineDeletion /
    DeletionCompleted from the objects present; KCP's InternalError branch is not reproduced.
  * A control plane Machine without an ``UpToDate`` condition (CAPI < 1.9) is judged by
    version only: spec.version of the Machine against the KCP's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from exporter.engine import controlplane_health as health
from exporter.engine import machine_rollup as rollup
from exporter.engine.conditions import Participant, aggregate, paused_condition, plain
from exporter.engine.evaluate_types import Computed, GroupView
from exporter.engine.model import Condition, KubeadmControlPlane, Machine, Status
from exporter.engine.vocabulary import (
    AVAILABLE,
    DELETING,
    DELETION_COMPLETED,
    INITIALIZED,
    LAST_REMEDIATION_MACHINE_PRESENT,
    MACHINES_READY,
    MACHINES_UP_TO_DATE,
    NO_REPLICAS,
    NOT_DELETING,
    NOT_INITIALIZED,
    NOT_SCALING_DOWN,
    NOT_SCALING_UP,
    NOT_UP_TO_DATE,
    READY,
    SCALING_DOWN,
    SCALING_UP,
    UP_TO_DATE,
    WAITING_FOR_MACHINE_DELETION,
    WAITING_FOR_REPLICAS_SET,
    WAITING_FOR_WORKERS_DELETION,
)

KIND = "KubeadmControlPlane"

WAITING_FOR_REPLICAS_MESSAGE = "Waiting for spec.replicas set"
# Result.counters key: whether status.lastRemediation.machine still exists (1) or is gone (0)


def compute_kubeadmcontrolplane(kcp: KubeadmControlPlane, view: GroupView, now: float) -> Computed:
    machines = view.machines_of_control_plane(kcp)
    up_to_date = [machine_up_to_date(kcp, view, m) for m in machines]
    components = health.control_plane_components_healthy(kcp, view, machines)
    etcd = health.etcd_cluster_healthy(kcp, view, machines)
    conditions = [
        health.available(kcp, view, machines, now),
        initialized(kcp),
        components,
        *([etcd] if etcd is not None else []),
        rollup.machines_condition(MACHINES_READY, view, machines, READY, rollup.READY_REASONS),
        machines_up_to_date(kcp, view, machines, now),
        rollup.rolling_out(up_to_date),
        scaling_up(kcp, view, machines, components, etcd),
        scaling_down(kcp, view, machines, components, etcd, now),
        rollup.remediating(view, machines, KIND),
        deleting(kcp, view, machines, now),
        paused(kcp, view),
    ]
    return Computed(conditions=tuple(conditions), counters=counters(kcp, view, machines, up_to_date))


def counters(
    kcp: KubeadmControlPlane,
    view: GroupView,
    machines: Sequence[Machine],
    up_to_date: Sequence[Condition | None],
) -> Mapping[str, int | None]:
    out: dict[str, int | None] = {
        "desiredReplicas": kcp.replicas,
        "replicas": len(machines),
        "readyReplicas": rollup.count_true(view, machines, READY),
        "availableReplicas": rollup.count_true(view, machines, AVAILABLE),
        "upToDateReplicas": sum(1 for c in up_to_date if c is not None and c.status is Status.TRUE),
    }
    if kcp.last_remediation_machine:
        out[LAST_REMEDIATION_MACHINE_PRESENT] = last_remediation_machine_present(kcp, machines)
    return out


def last_remediation_machine_present(kcp: KubeadmControlPlane, machines: Sequence[Machine]) -> int:
    """1 while the Machine named by status.lastRemediation.machine still exists (deleting or not), else 0.

    The bounded stand-in for the Machine's name: remediation deletes that Machine, so one that is
    still there long after status.lastRemediation.time is a remediation that does not complete.
    """
    name = kcp.last_remediation_machine
    return 1 if any(m.meta.name == name for m in machines) else 0


def machine_up_to_date(kcp: KubeadmControlPlane, view: GroupView, machine: Machine) -> Condition | None:
    """The Machine's UpToDate as the controller reads it (reported on a Machine with v1beta2
    conditions); for Machines that predate them, the engine's, else a version-only judgement."""
    own = view.as_reported(machine.key, UP_TO_DATE)
    if own is not None or machine.has_v1beta2_conditions or not kcp.version or not machine.version:
        return own
    if machine.version == kcp.version:
        return plain(UP_TO_DATE, Status.TRUE, UP_TO_DATE)
    return Condition(UP_TO_DATE, Status.FALSE, NOT_UP_TO_DATE,
                     f"* Version {machine.version}, {kcp.version} required")


def initialized(kcp: KubeadmControlPlane) -> Condition:
    if kcp.initialized is True:
        return plain(INITIALIZED, Status.TRUE, INITIALIZED)
    return plain(INITIALIZED, Status.FALSE, NOT_INITIALIZED)


def machines_up_to_date(
    kcp: KubeadmControlPlane, view: GroupView, machines: Sequence[Machine], now: float
) -> Condition:
    candidates = rollup.up_to_date_candidates(view, machines, now)
    if not candidates:
        return plain(MACHINES_UP_TO_DATE, Status.TRUE, NO_REPLICAS)
    participants = [Participant("Machine", m.meta.name, machine_up_to_date(kcp, view, m), control_plane=True)
               for m in candidates]
    return aggregate(MACHINES_UP_TO_DATE, participants, source_type=UP_TO_DATE,
                     reasons=rollup.UP_TO_DATE_REASONS)


def _desired(kcp: KubeadmControlPlane) -> int | None:
    if kcp.replicas is None:
        return None
    return 0 if kcp.meta.deleting else kcp.replicas


def _preflight_lines(
    kcp: KubeadmControlPlane,
    view: GroupView,
    machines: Sequence[Machine],
    components: Condition,
    etcd: Condition | None,
    scale_up: bool,
) -> list[str]:
    """The lines of the preflight check that blocks, where the reconcile gets as far as the checks.

    A deleting KubeadmControlPlane and a deleting control plane Machine (the pre-terminate hook is
    waited for first) return before any check; with no Machines there is nothing to check. The
    checks stop at the first that fails: topology version, certificates (scale up only), then
    the health of control plane components and etcd (both may be named).
    """
    if kcp.meta.deleting or not machines or any(m.meta.deleting for m in machines):
        return []
    cluster = view.cluster
    if cluster is not None and cluster.topology_version and kcp.version:
        step = cluster.topology_upgrade_step
        if cluster.topology_version != kcp.version and step != kcp.version:
            return [f"* waiting for a version upgrade to {step or cluster.topology_version} to be propagated"]
    if scale_up:
        certificates = health.certificates_available(kcp, view)
        if certificates is not None and certificates.status is not Status.TRUE:
            return ["* cluster certificates are missing or unknown"]
    lines = []
    if _effective(kcp, view, components).status is not Status.TRUE:
        lines.append("* waiting for control plane components to become healthy")
    if etcd is not None and _effective(kcp, view, etcd).status is not Status.TRUE:
        lines.append("* waiting for etcd cluster to become healthy")
    return lines


def _effective(kcp: KubeadmControlPlane, view: GroupView, computed: Condition) -> Condition:
    return view.effective(kcp.key, computed.type) or computed


def scaling_up(
    kcp: KubeadmControlPlane,
    view: GroupView,
    machines: Sequence[Machine],
    components: Condition,
    etcd: Condition | None,
) -> Condition:
    desired = _desired(kcp)
    if desired is None:
        return Condition(SCALING_UP, Status.UNKNOWN, WAITING_FOR_REPLICAS_SET, WAITING_FOR_REPLICAS_MESSAGE)
    current = len(machines)
    if current >= desired:
        return plain(SCALING_UP, Status.FALSE, NOT_SCALING_UP)
    message = f"Scaling up from {current} to {desired} replicas"
    blocked = _preflight_lines(kcp, view, machines, components, etcd, scale_up=True)
    if blocked:
        message += " is blocked because:\n" + "\n".join(blocked)
    return Condition(SCALING_UP, Status.TRUE, SCALING_UP, message)


def scaling_down(
    kcp: KubeadmControlPlane,
    view: GroupView,
    machines: Sequence[Machine],
    components: Condition,
    etcd: Condition | None,
    now: float,
) -> Condition:
    desired = _desired(kcp)
    if desired is None:
        return Condition(SCALING_DOWN, Status.UNKNOWN, WAITING_FOR_REPLICAS_SET, WAITING_FOR_REPLICAS_MESSAGE)
    current = len(machines)
    if current <= desired:
        return plain(SCALING_DOWN, Status.FALSE, NOT_SCALING_DOWN)
    message = f"Scaling down from {current} to {desired} replicas"
    blocked = _preflight_lines(kcp, view, machines, components, etcd, scale_up=False)
    stale = rollup.stale_deletion_message(view, machines, now)
    if stale:
        blocked.append(f"* {stale}")
    if blocked:
        message += " is blocked because:\n" + "\n".join(blocked)
    return Condition(SCALING_DOWN, Status.TRUE, SCALING_DOWN, message)


def deleting(kcp: KubeadmControlPlane, view: GroupView, machines: Sequence[Machine], now: float) -> Condition:
    if not kcp.meta.deleting:
        return plain(DELETING, Status.FALSE, NOT_DELETING)
    workers = [m for m in view.machines if not m.control_plane]
    blockers = []
    if view.machine_pools:
        blockers.append("* MachinePools: " + rollup.list_names(p.meta.name for p in view.machine_pools))
    if workers:
        blockers.append("* Machines: " + rollup.list_names(m.meta.name for m in workers))
    if blockers:
        return Condition(DELETING, Status.TRUE, WAITING_FOR_WORKERS_DELETION,
                         "KubeadmControlPlane deletion blocked because following objects still exist:\n"
                         + "\n".join(blockers))
    if machines:
        message = f"Deleting {len(machines)} Machine{'s' if len(machines) > 1 else ''}"
        stale = rollup.stale_deletion_message(view, machines, now)
        if stale:
            message += f" and {stale}"
        return Condition(DELETING, Status.TRUE, WAITING_FOR_MACHINE_DELETION, message)
    return Condition(DELETING, Status.TRUE, DELETION_COMPLETED, "Deletion completed")


def paused(kcp: KubeadmControlPlane, view: GroupView) -> Condition:
    cluster_paused = view.cluster is not None and view.cluster.spec_paused
    return paused_condition(cluster_paused, kcp.paused_annotation, KIND)
