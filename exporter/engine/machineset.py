"""MachineSet: replica counters and the v1beta2 conditions, computed from its Machines.

Owns the MachineSet counters (replicas, ready/available/upToDate Machines), ScalingUp,
ScalingDown, MachinesReady, MachinesUpToDate, Remediating, Deleting and Paused, plus the scaling
and deleting rules MachineDeployment shares (same guards, same message shapes). A MachineSet has
no Ready/Available condition and no phase. Machine conditions are read through the view
(``GroupView.as_reported``): as stored when the Machine reports v1beta2 conditions (one not
reported yet is "not yet reported", never the engine's stand-in), else the engine's. Owns
nothing about Machine internals (``machine.py``) or MachineDeployments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from exporter.engine import machine_rollup as rollup
from exporter.engine.conditions import paused_condition, plain
from exporter.engine.evaluate_types import Computed, GroupView
from exporter.engine.model import Condition, Machine, MachineSet, Status
from exporter.engine.vocabulary import (
    AVAILABLE,
    DELETING,
    MACHINES_READY,
    MACHINES_UP_TO_DATE,
    NOT_DELETING,
    NOT_SCALING_DOWN,
    NOT_SCALING_UP,
    READY,
    SCALING_DOWN,
    SCALING_UP,
    UP_TO_DATE,
    WAITING_FOR_REPLICAS_SET,
)
from exporter.engine.vocabulary import (
    DELETING as DELETING_REASON,
)

OWNER: Final = "MachineSet"


def compute_machineset(obj: MachineSet, view: GroupView, now: float) -> Computed:
    machines = view.machines_of_set(obj)
    cluster_paused = view.cluster.spec_paused if view.cluster is not None else False
    conditions = (
        scaling_up(obj.replicas, len(machines), obj.meta.deleting),
        scaling_down(obj.replicas, len(machines), obj.meta.deleting, view, machines, now),
        machines_ready(view, machines),
        machines_up_to_date(view, machines, now),
        rollup.remediating(view, machines, OWNER),
        deleting(obj.meta.deleting, view, machines, now),
        paused_condition(cluster_paused, obj.paused_annotation, "MachineSet"),
    )
    return Computed(conditions=conditions, counters=counters(obj.replicas, view, machines))


def counters(desired: int | None, view: GroupView, machines: Sequence[Machine]) -> Mapping[str, int | None]:
    """Counts of owned Machines; one being updated in place counts in none of ready/available/upToDate.

    Upstream reads the in-place annotations here, not the Updating condition, which may lag them.
    """
    settled = [m for m in machines if not m.update_in_progress]
    return {
        "desiredReplicas": desired,
        "replicas": len(machines),
        "readyReplicas": rollup.count_true(view, settled, READY),
        "availableReplicas": rollup.count_true(view, settled, AVAILABLE),
        "upToDateReplicas": rollup.count_true(view, settled, UP_TO_DATE),
    }


# ---- scaling (shared with MachineDeployment) ----------------------------------------------------


def _replicas_unset(type_: str) -> Condition:
    return Condition(type_, Status.UNKNOWN, WAITING_FOR_REPLICAS_SET, "Waiting for spec.replicas set")


def scaling_up(spec_replicas: int | None, current: int, deleting_: bool) -> Condition:
    """True while fewer replicas exist than wanted (a deleting object wants none)."""
    if spec_replicas is None:
        return _replicas_unset(SCALING_UP)
    desired = 0 if deleting_ else spec_replicas
    if current < desired:
        message = f"Scaling up from {current} to {desired} replicas"
        return Condition(SCALING_UP, Status.TRUE, SCALING_UP, message)
    return plain(SCALING_UP, Status.FALSE, NOT_SCALING_UP)


def scaling_down(spec_replicas: int | None, current: int, deleting_: bool, view: GroupView,
                 machines: Sequence[Machine], now: float) -> Condition:
    """True while more replicas exist than wanted; names Machines stuck in deletion."""
    if spec_replicas is None:
        return _replicas_unset(SCALING_DOWN)
    desired = 0 if deleting_ else spec_replicas
    if current <= desired:
        return plain(SCALING_DOWN, Status.FALSE, NOT_SCALING_DOWN)
    message = f"Scaling down from {current} to {desired} replicas"
    stale = rollup.stale_deletion_message(view, machines, now)
    if stale:
        message += f"\n* {stale}"
    return Condition(SCALING_DOWN, Status.TRUE, SCALING_DOWN, message)


# ---- Machine roll-ups -------------------------------------------------------------------------


def machines_ready(view: GroupView, machines: Sequence[Machine]) -> Condition:
    return rollup.machines_condition(MACHINES_READY, view, machines, READY, rollup.READY_REASONS)


def machines_up_to_date(view: GroupView, machines: Sequence[Machine], now: float) -> Condition:
    """Aggregate UpToDate, ignoring Machines too young to have been given the condition."""
    candidates = rollup.up_to_date_candidates(view, machines, now)
    return rollup.machines_condition(MACHINES_UP_TO_DATE, view, candidates, UP_TO_DATE,
                                     rollup.UP_TO_DATE_REASONS)


def deleting(deleting_: bool, view: GroupView, machines: Sequence[Machine], now: float,
             remaining_sets: int = 0) -> Condition:
    """Deleting: what the deletion still waits for (Machines, then MachineSets), or completed."""
    if not deleting_:
        return plain(DELETING, Status.FALSE, NOT_DELETING)
    if machines:
        noun = "Machine" if len(machines) == 1 else "Machines"
        message = f"Deleting {len(machines)} {noun}"
        stale = rollup.stale_deletion_message(view, machines, now)
        if stale:
            message += f"\n* {stale}"
    elif remaining_sets:
        message = f"Deleting {remaining_sets} MachineSets"  # upstream's template: plural even for one
    else:
        message = "Deletion completed"
    return Condition(DELETING, Status.TRUE, DELETING_REASON, message)
