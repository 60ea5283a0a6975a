"""MachinePool rules: counters, phase and the v1beta2 conditions upstream does not compute for pools.

Owns ``compute_machinepool``: replica counters (as the MachinePool controller writes them),
``Available``, ``ScalingUp``, ``ScalingDown``, ``MachinesReady``, ``MachinesUpToDate``,
``RollingOut``, ``Deleting``, ``Paused``, the derived phase, and (through
``machinepool_contract.py``) ``InfrastructureReady`` and the seed 003 contract findings. Owns no
Machine rule.

Upstream sets only ``Paused`` on a v1beta2 MachinePool; the rest follows the MachineDeployment
rules, adapted:
  * Counters: without MachinePool Machines ready = available = status.replicas (the pool's
    instances are not objects, so nothing finer is known) and upToDate = spec.replicas; with
    MachinePool Machines, counts of their Ready/Available/UpToDate.
  * ``Available`` is True when available >= spec.replicas: pools have no maxUnavailable, so any
    missing replica makes the pool unavailable (a MachineDeployment with maxUnavailable 0 behaves
    the same). Without MachinePool Machines "available" is only the infrastructure's replica count;
    before the infrastructure is provisioned it is zero (no instance exists yet), after that an
    unset status.replicas is Unknown.
  * ``MachinesReady``, ``MachinesUpToDate`` and ``RollingOut`` exist only when the pool has
    MachinePool Machines: otherwise there is nothing to aggregate and no claim is made.
  * Phase: the reported ``status.phase``, else derived as the controller does (Pending,
    Provisioning, Provisioned, Running, ScalingUp, ScalingDown, Scaling, Failed, Deleting);
    ``Scaling`` replaces ScalingUp and ScalingDown when ``cluster.x-k8s.io/replicas-managed-by``
    says an external autoscaler owns the replica count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from exporter.engine import machine_rollup as rollup
from exporter.engine import machinepool_contract as contract
from exporter.engine import machineset
from exporter.engine.conditions import paused_condition, plain
from exporter.engine.evaluate_types import Computed, GroupView
from exporter.engine.model import Condition, InfraMachinePool, Machine, MachinePool, Status
from exporter.engine.vocabulary import (
    AVAILABLE,
    DELETING,
    DELETION_COMPLETED,
    FAILED,
    MACHINES_READY,
    MACHINES_UP_TO_DATE,
    NOT_AVAILABLE,
    NOT_DELETING,
    PENDING,
    PROVISIONED,
    PROVISIONING,
    READY,
    RUNNING,
    SCALING,
    SCALING_DOWN,
    SCALING_UP,
    UP_TO_DATE,
    WAITING_FOR_AVAILABLE_REPLICAS_SET,
    WAITING_FOR_INFRASTRUCTURE_DELETION,
    WAITING_FOR_REPLICAS_SET,
)

KIND = "MachinePool"

WAITING_FOR_REPLICAS_MESSAGE = "Waiting for spec.replicas set"



def compute_machinepool(mp: MachinePool, view: GroupView, now: float) -> Computed:
    machines = view.machines_of_pool(mp)
    infra = view.infra_pool_of(mp)
    counts = counters(mp, view, machines)
    conditions: list[Condition | None] = [
        available(mp, counts.get("availableReplicas")),
        scaling_up(mp, machines),
        scaling_down(mp, view, machines, now),
        *_machine_conditions(view, machines, now),
        contract.infrastructure_ready(mp, infra),
        deleting(mp, view, machines, infra, now),
        paused(mp, view),
    ]
    return Computed(
        conditions=tuple(c for c in conditions if c is not None),
        counters=counts,
        phase=phase(mp),
        findings=contract.findings(mp, infra, now),
    )


def counters(mp: MachinePool, view: GroupView, machines: Sequence[Machine]) -> Mapping[str, int | None]:
    replicas = mp.reported.replicas
    if not machines:
        return {
            "desiredReplicas": mp.replicas,
            "replicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            "upToDateReplicas": mp.replicas,
        }
    return {
        "desiredReplicas": mp.replicas,
        "replicas": replicas if replicas is not None else len(machines),
        "readyReplicas": rollup.count_true(view, machines, READY),
        "availableReplicas": rollup.count_true(view, machines, AVAILABLE),
        "upToDateReplicas": rollup.count_true(view, machines, UP_TO_DATE),
    }


def available(mp: MachinePool, available_replicas: int | None) -> Condition:
    if mp.replicas is None:
        return Condition(AVAILABLE, Status.UNKNOWN, WAITING_FOR_REPLICAS_SET, WAITING_FOR_REPLICAS_MESSAGE)
    if available_replicas is None and mp.infrastructure_provisioned is True:
        return Condition(AVAILABLE, Status.UNKNOWN, WAITING_FOR_AVAILABLE_REPLICAS_SET,
                         "Waiting for status.replicas set")
    if available_replicas is None:
        # Infrastructure not provisioned yet: no instance exists, which is a known zero.
        available_replicas = 0
    if available_replicas >= mp.replicas:
        return plain(AVAILABLE, Status.TRUE, AVAILABLE)
    if mp.meta.deleting:
        return Condition(AVAILABLE, Status.FALSE, NOT_AVAILABLE, "Deletion in progress")
    return Condition(AVAILABLE, Status.FALSE, NOT_AVAILABLE,
                     f"{available_replicas} available replicas, at least {mp.replicas} required "
                     f"(spec.replicas is {mp.replicas})")


def _current(mp: MachinePool, machines: Sequence[Machine]) -> int:
    # status.replicas is the infrastructure's count; unset until the pool reports, i.e. none yet.
    if mp.reported.replicas is not None:
        return mp.reported.replicas
    return len(machines)


def scaling_up(mp: MachinePool, machines: Sequence[Machine]) -> Condition:
    return machineset.scaling_up(mp.replicas, _current(mp, machines), mp.meta.deleting)


def scaling_down(mp: MachinePool, view: GroupView, machines: Sequence[Machine], now: float) -> Condition:
    return machineset.scaling_down(mp.replicas, _current(mp, machines), mp.meta.deleting, view, machines, now)


def _machine_conditions(view: GroupView, machines: Sequence[Machine], now: float) -> list[Condition]:
    if not machines:
        return []
    candidates = rollup.up_to_date_candidates(view, machines, now)
    return [
        rollup.machines_condition(MACHINES_READY, view, machines, READY, rollup.READY_REASONS),
        rollup.machines_condition(MACHINES_UP_TO_DATE, view, candidates, UP_TO_DATE,
                                  rollup.UP_TO_DATE_REASONS),
        rollup.rolling_out([view.effective(m.key, UP_TO_DATE) for m in machines]),
    ]


def deleting(
    mp: MachinePool, view: GroupView, machines: Sequence[Machine], infra: InfraMachinePool | None, now: float
) -> Condition:
    if not mp.meta.deleting:
        return plain(DELETING, Status.FALSE, NOT_DELETING)
    if machines:
        message = f"Deleting {len(machines)} Machine{'s' if len(machines) > 1 else ''}"
        stale = rollup.stale_deletion_message(view, machines, now)
        if stale:
            message += f"\n* {stale}"
        return Condition(DELETING, Status.TRUE, DELETING, message)
    if infra is not None:
        return Condition(DELETING, Status.TRUE, WAITING_FOR_INFRASTRUCTURE_DELETION,
                         f"Waiting for {infra.meta.kind} to be deleted")
    return Condition(DELETING, Status.TRUE, DELETION_COMPLETED, "Deletion completed")


def paused(mp: MachinePool, view: GroupView) -> Condition:
    cluster_paused = view.cluster is not None and view.cluster.spec_paused
    return paused_condition(cluster_paused, mp.paused_annotation, KIND)


def phase(mp: MachinePool) -> str:
    """The reported phase, else the one the MachinePool controller would set."""
    if mp.phase:
        return mp.phase
    if mp.meta.deleting:
        return DELETING
    if mp.failure_reason or mp.failure_message:
        return FAILED
    infra_ready = mp.infrastructure_provisioned is True
    ready = mp.v1beta1_ready_replicas or 0
    if infra_ready and mp.replicas is not None:
        if mp.replicas == ready:
            return RUNNING
        if mp.replicas_managed_externally:
            return SCALING  # an autoscaler owns spec.replicas: the direction cannot be told
        return SCALING_UP if mp.replicas > ready else SCALING_DOWN
    if mp.node_refs:
        return PROVISIONED
    if mp.bootstrap_data_secret_created and not infra_ready:
        return PROVISIONING
    return PENDING
