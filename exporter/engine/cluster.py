"""Cluster rules: the v1beta2 conditions, counters and phase of a Cluster, from the objects of its group.

Owns ``compute_cluster``: ``ControlPlaneAvailable``, ``ControlPlaneInitialized``,
``WorkersAvailable``, ``ControlPlaneMachinesReady``, ``WorkerMachinesReady``,
``ControlPlaneMachinesUpToDate``, ``WorkerMachinesUpToDate``, ``RollingOut``, ``ScalingUp``,
``ScalingDown``, ``Remediating``, ``Deleting``, ``Paused``, the phase, and the wiring of the
conditions read as reported and of ``Available`` (``cluster_available.py``) and of the counters
(``cluster_counters.py``). Owns no rule of the child kinds: their conditions come through the view.

Where this differs from upstream, on purpose:
  * MachinePools take part in ``WorkersAvailable``, ``RollingOut``, ``ScalingUp`` and
    ``ScalingDown`` (upstream passes an empty MachinePool list, leaving a TODO): the engine
    computes those conditions for pools, so an unavailable pool makes the workers unavailable.
    A pool without MachinePool Machines has no RollingOut and is left out of that aggregate.
  * A control plane kind the engine does not watch (anything but KubeadmControlPlane) cannot be
    mirrored: ``ControlPlaneAvailable`` is the Cluster's reported one, else the fallback built from
    status.initialization.controlPlaneInitialized; it is assumed to exist while the Cluster deletes.
  * Stand-alone control plane Machines (no control plane object): ``ControlPlaneAvailable`` is True
    when one of them is Available (upstream reports an internal error there).
  * ``Deleting`` reasons that need controller memory (``WaitingForBeforeDeleteHook``,
    ``InternalError``) are read as reported; the infrastructure cluster, not watched, is assumed
    to exist until the Cluster is gone.
"""

from __future__ import annotations

from collections.abc import Sequence

from exporter.engine import cluster_available as avail
from exporter.engine import cluster_counters as counts
from exporter.engine import controlplane
from exporter.engine import machine_rollup as rollup
from exporter.engine.conditions import Participant, Reasons, aggregate, find, mirror, paused_condition, plain
from exporter.engine.evaluate_types import Computed, GroupView
from exporter.engine.model import Cluster, Condition, Machine, Status
from exporter.engine.vocabulary import (
    AVAILABLE,
    AVAILABLE_UNKNOWN,
    CONTROL_PLANE_AVAILABLE,
    CONTROL_PLANE_INITIALIZED,
    CONTROL_PLANE_MACHINES_READY,
    CONTROL_PLANE_MACHINES_UP_TO_DATE,
    DELETING,
    DELETION_COMPLETED,
    INITIALIZED,
    INTERNAL_ERROR,
    NO_WORKERS,
    NOT_AVAILABLE,
    NOT_DELETING,
    NOT_INITIALIZED,
    NOT_ROLLING_OUT,
    NOT_SCALING_DOWN,
    NOT_SCALING_UP,
    OBJECT_DELETED,
    OBJECT_DOES_NOT_EXIST,
    PENDING,
    PROVISIONED,
    PROVISIONING,
    READY,
    ROLLING_OUT,
    ROLLING_OUT_UNKNOWN,
    SCALING_DOWN,
    SCALING_DOWN_UNKNOWN,
    SCALING_UP,
    SCALING_UP_UNKNOWN,
    UP_TO_DATE,
    WAITING_FOR_BEFORE_DELETE_HOOK,
    WAITING_FOR_CONTROL_PLANE_DELETION,
    WAITING_FOR_INFRASTRUCTURE_DELETION,
    WAITING_FOR_WORKERS_DELETION,
    WORKER_MACHINES_READY,
    WORKER_MACHINES_UP_TO_DATE,
    WORKERS_AVAILABLE,
)
from exporter.engine.vocabulary import (
    AVAILABLE as AVAILABLE_REASON,
)

KIND = "Cluster"


DELETING_AS_REPORTED = frozenset({WAITING_FOR_BEFORE_DELETE_HOOK, INTERNAL_ERROR})

WORKERS_AVAILABLE_REASONS = Reasons(NOT_AVAILABLE, AVAILABLE_UNKNOWN, AVAILABLE_REASON)
ROLLING_OUT_REASONS = Reasons(ROLLING_OUT, ROLLING_OUT_UNKNOWN, NOT_ROLLING_OUT)
SCALING_UP_REASONS = Reasons(SCALING_UP, SCALING_UP_UNKNOWN, NOT_SCALING_UP)
SCALING_DOWN_REASONS = Reasons(SCALING_DOWN, SCALING_DOWN_UNKNOWN, NOT_SCALING_DOWN)
TOPOLOGY_WAIT = "Waiting for cluster topology to be reconciled"


def compute_cluster(cluster: Cluster, view: GroupView, now: float) -> Computed:
    cp_machines = view.control_plane_machines()
    # MachinePool Machines roll up through their pool, as upstream does.
    worker_machines = [m for m in view.worker_machines() if not m.pool_name]
    conditions = [
        *avail.read_as_reported(cluster),
        control_plane_available(cluster, view),
        control_plane_initialized(cluster, view),
        workers_available(view),
        rollup.machines_condition(CONTROL_PLANE_MACHINES_READY, view, cp_machines, READY,
                                  rollup.READY_REASONS),
        rollup.machines_condition(WORKER_MACHINES_READY, view, worker_machines, READY,
                                  rollup.READY_REASONS),
        rollup.machines_condition(CONTROL_PLANE_MACHINES_UP_TO_DATE, view,
                                  rollup.up_to_date_candidates(view, cp_machines, now), UP_TO_DATE,
                                  rollup.UP_TO_DATE_REASONS, lookup=_cp_up_to_date(cluster, view)),
        rollup.machines_condition(WORKER_MACHINES_UP_TO_DATE, view,
                                  rollup.up_to_date_candidates(view, worker_machines, now), UP_TO_DATE,
                                  rollup.UP_TO_DATE_REASONS),
        lifecycle(ROLLING_OUT, cluster, view, ROLLING_OUT_REASONS, with_machine_sets=False),
        lifecycle(SCALING_UP, cluster, view, SCALING_UP_REASONS, with_machine_sets=True),
        lifecycle(SCALING_DOWN, cluster, view, SCALING_DOWN_REASONS, with_machine_sets=True),
        rollup.remediating(view, [*cp_machines, *worker_machines], ""),
        deleting(cluster, view),
        paused_condition(cluster.spec_paused, cluster.paused_annotation, KIND),
    ]
    conditions.append(avail.available(cluster, view, conditions))
    return Computed(
        conditions=tuple(conditions),
        counters=counts.cluster_counters(cluster, view),
        phase=phase(cluster),
    )


def _cp_up_to_date(cluster: Cluster, view: GroupView) -> rollup.Lookup | None:
    """A KubeadmControlPlane judges its older Machines (no UpToDate condition) by version."""
    kcp = counts.control_plane_object(cluster, view)
    if kcp is None:
        return None
    return lambda m: controlplane.machine_up_to_date(kcp, view, m)


def _missing_control_plane(cluster: Cluster, kind: str) -> Condition:
    """ControlPlaneAvailable when the referenced control plane object is not there."""
    initialized = cluster.control_plane_initialized is True
    if cluster.meta.deleting and initialized:
        return Condition(CONTROL_PLANE_AVAILABLE, Status.FALSE, OBJECT_DELETED, f"{kind} has been deleted")
    if cluster.meta.deleting:
        return _cp_unavailable(OBJECT_DOES_NOT_EXIST, f"{kind} does not exist")
    if initialized:
        return Condition(CONTROL_PLANE_AVAILABLE, Status.FALSE, OBJECT_DELETED,
                         f"{kind} has been deleted while the cluster still exists")
    return _cp_unavailable(OBJECT_DOES_NOT_EXIST, f"{kind} does not exist")


def _cp_unavailable(reason: str, message: str) -> Condition:
    return Condition(CONTROL_PLANE_AVAILABLE, Status.FALSE, reason, message)


def _initialized_fallback(cluster: Cluster, kind: str) -> Condition:
    if cluster.control_plane_initialized is True:
        return plain(CONTROL_PLANE_AVAILABLE, Status.TRUE, AVAILABLE_REASON)
    return Condition(CONTROL_PLANE_AVAILABLE, Status.FALSE, NOT_AVAILABLE,
                     f"{kind} status.initialization.controlPlaneInitialized is false")


def control_plane_available(cluster: Cluster, view: GroupView) -> Condition:
    ref = cluster.control_plane_ref
    if ref is None and counts.has_topology(cluster):
        message = "" if cluster.meta.deleting else TOPOLOGY_WAIT
        return Condition(CONTROL_PLANE_AVAILABLE, Status.FALSE, OBJECT_DOES_NOT_EXIST, message)
    if ref is None:
        return _standalone_available(view.control_plane_machines(), view)
    if ref.kind != counts.KCP_KIND:
        own = find(cluster.conditions, CONTROL_PLANE_AVAILABLE) if cluster.has_v1beta2_conditions else None
        return mirror(own, CONTROL_PLANE_AVAILABLE, fallback=_initialized_fallback(cluster, ref.kind))
    kcp = counts.control_plane_object(cluster, view)
    if kcp is None:
        return _missing_control_plane(cluster, ref.kind)
    mirrored = mirror(view.effective(kcp.key, AVAILABLE_REASON), CONTROL_PLANE_AVAILABLE,
                      fallback=_initialized_fallback(cluster, ref.kind))
    if mirrored.status is Status.TRUE and not mirrored.reason:
        # A v1beta1-style source has no reason on True.
        return Condition(mirrored.type, mirrored.status, AVAILABLE_REASON, mirrored.message,
                         mirrored.last_transition_time)
    return mirrored


def _standalone_available(machines: Sequence[Machine], view: GroupView) -> Condition:
    if not machines:
        return _cp_unavailable(NOT_AVAILABLE, "There are no control plane Machines")
    if rollup.count_true(view, machines, AVAILABLE) >= 1:
        return plain(CONTROL_PLANE_AVAILABLE, Status.TRUE, AVAILABLE_REASON)
    return Condition(CONTROL_PLANE_AVAILABLE, Status.FALSE, NOT_AVAILABLE,
                     "None of the control plane Machines is available")


def control_plane_initialized(cluster: Cluster, view: GroupView) -> Condition:
    """Once True it stays True: the controller never recomputes it, nor does the engine."""
    for own in (find(cluster.conditions, CONTROL_PLANE_INITIALIZED),
                find(cluster.v1beta1_conditions, CONTROL_PLANE_INITIALIZED)):
        if own is not None and own.status is Status.TRUE:
            return plain(CONTROL_PLANE_INITIALIZED, Status.TRUE, INITIALIZED)
    ref = cluster.control_plane_ref
    if ref is None and counts.has_topology(cluster):
        message = "" if cluster.meta.deleting else TOPOLOGY_WAIT
        return Condition(CONTROL_PLANE_INITIALIZED, Status.UNKNOWN, OBJECT_DOES_NOT_EXIST, message)
    if ref is None:
        if any(m.node_name for m in view.control_plane_machines()):
            return plain(CONTROL_PLANE_INITIALIZED, Status.TRUE, INITIALIZED)
        return Condition(CONTROL_PLANE_INITIALIZED, Status.FALSE, NOT_INITIALIZED,
                         "Waiting for the first control plane machine to have status.nodeRef set")
    if ref.kind == counts.KCP_KIND:
        kcp = counts.control_plane_object(cluster, view)
        if kcp is None:
            return Condition(CONTROL_PLANE_INITIALIZED, Status.UNKNOWN, OBJECT_DOES_NOT_EXIST,
                             f"{ref.kind} does not exist")
        initialized = kcp.initialized is True
    else:
        initialized = cluster.control_plane_initialized is True
    if initialized:
        return plain(CONTROL_PLANE_INITIALIZED, Status.TRUE, INITIALIZED)
    return Condition(CONTROL_PLANE_INITIALIZED, Status.FALSE, NOT_INITIALIZED,
                     "Control plane not yet initialized")


def workers_available(view: GroupView) -> Condition:
    participants = [Participant("MachineDeployment", md.meta.name, view.effective(md.key, AVAILABLE_REASON))
               for md in view.machine_deployments]
    participants += [Participant("MachinePool", mp.meta.name, view.effective(mp.key, AVAILABLE_REASON))
                for mp in view.machine_pools]
    if not participants:
        return plain(WORKERS_AVAILABLE, Status.TRUE, NO_WORKERS)
    return aggregate(WORKERS_AVAILABLE, participants, source_type=AVAILABLE_REASON,
                     reasons=WORKERS_AVAILABLE_REASONS)


def lifecycle(
    type_: str, cluster: Cluster, view: GroupView, reasons: Reasons, *, with_machine_sets: bool
) -> Condition:
    """RollingOut / ScalingUp / ScalingDown (negative polarity) over the Cluster's owners of Machines.

    The control plane and MachinePools count only when they have the condition (a control plane
    contract does not require it; a pool without MachinePool Machines has no RollingOut).
    """
    participants: list[Participant] = []
    kcp = counts.control_plane_object(cluster, view)
    if kcp is not None and (c := view.effective(kcp.key, type_)) is not None:
        participants.append(Participant(kcp.meta.kind, kcp.meta.name, c, control_plane=True))
    participants += [Participant("MachinePool", mp.meta.name, c) for mp in view.machine_pools
                if (c := view.effective(mp.key, type_)) is not None]
    participants += [Participant("MachineDeployment", md.meta.name, view.effective(md.key, type_))
                for md in view.machine_deployments]
    if with_machine_sets:
        participants += [Participant("MachineSet", ms.meta.name, view.effective(ms.key, type_))
                    for ms in counts.cluster_machine_sets(cluster, view)]
    if not participants:
        return plain(type_, Status.FALSE, reasons.info)
    return aggregate(type_, participants, source_type=type_, reasons=reasons, negative=True,
                     target_negative=True)


def deleting(cluster: Cluster, view: GroupView) -> Condition:
    if not cluster.meta.deleting:
        return plain(DELETING, Status.FALSE, NOT_DELETING)
    own = find(cluster.conditions, DELETING) if cluster.has_v1beta2_conditions else None
    if own is not None and own.status is Status.TRUE and own.reason in DELETING_AS_REPORTED:
        return Condition(DELETING, own.status, own.reason, own.message)
    pending = _pending_descendants(cluster, view)
    if pending:
        return Condition(DELETING, Status.TRUE, WAITING_FOR_WORKERS_DELETION,
                         "\n".join(f"* {line}" for line in pending))
    ref = cluster.control_plane_ref
    if ref is not None and (ref.kind != counts.KCP_KIND or counts.control_plane_object(cluster, view)):
        return Condition(DELETING, Status.TRUE, WAITING_FOR_CONTROL_PLANE_DELETION,
                         f"Waiting for {ref.kind} to be deleted")
    if cluster.infrastructure_ref is not None:
        return Condition(DELETING, Status.TRUE, WAITING_FOR_INFRASTRUCTURE_DELETION,
                         f"Waiting for {cluster.infrastructure_ref.kind} to be deleted")
    return Condition(DELETING, Status.TRUE, DELETION_COMPLETED, "Deletion completed")


def _pending_descendants(cluster: Cluster, view: GroupView) -> list[str]:
    groups: list[tuple[str, list[str]]] = []
    if cluster.control_plane_ref is None:
        groups.append(("Control plane Machines", [m.meta.name for m in view.control_plane_machines()]))
    groups += [
        ("MachineDeployments", [md.meta.name for md in view.machine_deployments]),
        ("MachineSets", [ms.meta.name for ms in view.machine_sets]),
        ("MachinePools", [mp.meta.name for mp in view.machine_pools]),
        ("Worker Machines", [m.meta.name for m in view.worker_machines()]),
    ]
    return [f"{label}: {rollup.list_names(names)}" for label, names in groups if names]


def phase(cluster: Cluster) -> str:
    """The reported phase, else the one the Cluster controller would set."""
    if cluster.phase:
        return cluster.phase
    if cluster.meta.deleting:
        return DELETING
    if cluster.infrastructure_provisioned and cluster.control_plane_endpoint_host and \
            cluster.control_plane_endpoint_port:
        return PROVISIONED
    if cluster.infrastructure_ref is not None or cluster.control_plane_ref is not None:
        return PROVISIONING
    return PENDING
