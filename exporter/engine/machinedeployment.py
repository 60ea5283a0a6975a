"""MachineDeployment: counters, Available, scaling, rollout and phase from its MachineSets and Machines.

Owns the MachineDeployment counters (sums of its MachineSets' computed counters), Available
(enough available replicas given ``maxUnavailable``), ScalingUp, ScalingDown, RollingOut,
MachinesReady, MachinesUpToDate, Remediating, Deleting, Paused and the phase. The int-or-percent
arithmetic is in ``rollout_math.py``; rules shared with MachineSet are in ``machineset.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from exporter.engine import machine_rollup as rollup
from exporter.engine import machineset
from exporter.engine.conditions import paused_condition, plain
from exporter.engine.evaluate_types import Computed, GroupView
from exporter.engine.model import Condition, MachineDeployment, MachineSet, Status
from exporter.engine.rollout_math import DEFAULT_MAX_UNAVAILABLE, ROLLING_UPDATE, display, max_unavailable
from exporter.engine.vocabulary import (
    AVAILABLE,
    NOT_AVAILABLE,
    RUNNING,
    SCALING_DOWN,
    SCALING_UP,
    UP_TO_DATE,
    WAITING_FOR_AVAILABLE_REPLICAS_SET,
    WAITING_FOR_REPLICAS_SET,
)
from exporter.engine.vocabulary import (
    AVAILABLE as AVAILABLE_REASON,
)

OWNER: Final = "MachineDeployment/MachineSet"

PHASE_UNKNOWN, PHASE_RUNNING, PHASE_SCALING_UP, PHASE_SCALING_DOWN = (
    "Unknown", RUNNING, SCALING_UP, SCALING_DOWN)

_COUNTERS: Final = ("replicas", "readyReplicas", "availableReplicas", "upToDateReplicas")


def compute_machinedeployment(obj: MachineDeployment, view: GroupView, now: float) -> Computed:
    sets = view.sets_of_deployment(obj)
    machines = view.machines_of_deployment(obj)
    counts = counters(obj.replicas, view, sets)
    current = counts["replicas"] or 0
    cluster_paused = view.cluster.spec_paused if view.cluster is not None else False
    conditions = (
        available(obj, counts["availableReplicas"]),
        machineset.scaling_up(obj.replicas, current, obj.meta.deleting),
        machineset.scaling_down(obj.replicas, current, obj.meta.deleting, view, machines, now),
        rollup.rolling_out([rollup.machine_condition(view, m, UP_TO_DATE) for m in machines]),
        machineset.machines_ready(view, machines),
        machineset.machines_up_to_date(view, machines, now),
        rollup.remediating(view, machines, OWNER),
        machineset.deleting(obj.meta.deleting, view, machines, now, remaining_sets=len(sets)),
        paused_condition(cluster_paused, obj.paused_annotation, "MachineDeployment"),
    )
    return Computed(conditions=conditions, counters=counts, phase=obj.phase or phase(obj, counts["replicas"]))


def counters(desired: int | None, view: GroupView, sets: Iterable[MachineSet]) -> Mapping[str, int | None]:
    """Sums over the MachineSets (their computed counters, else reported); unset only if all are unset."""
    totals: dict[str, int | None] = dict.fromkeys(_COUNTERS)
    for ms in sets:
        computed = view.computed(ms.key)
        source: Mapping[str, int | None] = computed.counters if computed is not None else _reported(ms)
        for key in _COUNTERS:
            value = source.get(key)
            if value is not None:
                totals[key] = (totals[key] or 0) + value
    return {"desiredReplicas": desired, **totals}


def _reported(ms: MachineSet) -> Mapping[str, int | None]:
    r = ms.reported
    return {"replicas": r.replicas, "readyReplicas": r.ready, "availableReplicas": r.available,
            "upToDateReplicas": r.up_to_date}


def available(md: MachineDeployment, available_replicas: int | None) -> Condition:
    """At least spec.replicas - maxUnavailable replicas are available."""
    if md.replicas is None:
        return Condition(AVAILABLE, Status.UNKNOWN, WAITING_FOR_REPLICAS_SET,
                         "Waiting for spec.replicas set")
    if available_replicas is None:
        return Condition(AVAILABLE, Status.UNKNOWN, WAITING_FOR_AVAILABLE_REPLICAS_SET,
                         "Waiting for status.availableReplicas set")
    strategy = md.strategy_type or ROLLING_UPDATE
    unavailable = max_unavailable(strategy, md.rolling_update.max_surge, md.rolling_update.max_unavailable,
                                  md.replicas)
    required = md.replicas - unavailable
    if available_replicas >= required:
        return plain(AVAILABLE, Status.TRUE, AVAILABLE_REASON)
    if md.meta.deleting:
        return Condition(AVAILABLE, Status.FALSE, NOT_AVAILABLE, "Deletion in progress")
    message = f"{available_replicas} available replicas, at least {required} required"
    if strategy == ROLLING_UPDATE:
        shown = display(md.rolling_update.max_unavailable, DEFAULT_MAX_UNAVAILABLE)
        message += f" (spec.strategy.rollout.maxUnavailable is {shown}, spec.replicas is {md.replicas})"
    return Condition(AVAILABLE, Status.FALSE, NOT_AVAILABLE, message)


def phase(md: MachineDeployment, current: int | None) -> str:
    """The phase when none is reported: desired (spec.replicas) against current (status.replicas)."""
    if md.replicas is None:
        return PHASE_UNKNOWN
    if md.meta.deleting:
        return PHASE_SCALING_DOWN
    actual = current or 0
    if md.replicas == actual:
        return PHASE_RUNNING
    return PHASE_SCALING_DOWN if md.replicas < actual else PHASE_SCALING_UP
