"""Rolling Machine conditions up into an owner: the rules KubeadmControlPlane, MachinePool and Cluster share.

Owns the owner-level conditions built only from a list of Machines (``MachinesReady``-style and
``MachinesUpToDate``-style aggregations, ``Remediating``, ``RollingOut``), the replica counts of
Machines by condition, and the upstream message fragments about Machines ("in deletion since more
than 15m", "not healthy (not to be remediated by ...)"). Owns no per-kind decision: callers pass
the target type and reasons. Reads a Machine's conditions through the view, so a Machine the
controller reports on counts with its reported conditions (one it has not reported yet is "not
yet reported", as upstream lists it) and an older one with the engine's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from exporter.engine.conditions import Participant, Reasons, aggregate, names_message, plain, shown_names
from exporter.engine.evaluate_types import GroupView
from exporter.engine.model import Condition, Machine, Status
from exporter.engine.vocabulary import (
    DELETING,
    DRAINING_NODE,
    HEALTH_CHECK_SUCCEEDED,
    NO_REPLICAS,
    NOT_READY,
    NOT_REMEDIATING,
    NOT_ROLLING_OUT,
    NOT_UP_TO_DATE,
    OWNER_REMEDIATED,
    READY,
    READY_UNKNOWN,
    REMEDIATING,
    ROLLING_OUT,
    UP_TO_DATE,
    UP_TO_DATE_UNKNOWN,
)

READY_REASONS = Reasons(NOT_READY, READY_UNKNOWN, READY)
UP_TO_DATE_REASONS = Reasons(NOT_UP_TO_DATE, UP_TO_DATE_UNKNOWN, UP_TO_DATE)

UP_TO_DATE_GRACE_SECONDS = 10.0  # a new Machine gets its UpToDate condition within seconds
STALE_DELETION_SECONDS = 15 * 60.0
DRAIN_DELAY_SECONDS = 5 * 60.0

# Substrings of a draining Machine's Deleting message and the delay they explain, in message order.
_DRAIN_DELAYS: tuple[tuple[str, str], ...] = (
    ("cannot evict pod as it would violate the pod's disruption budget.", "PodDisruptionBudgets"),
    ("deletionTimestamp set, but still not removed from the Node", "Pods not terminating"),
    ("failed to evict Pod", "Pod eviction errors"),
    ("waiting for completion", "Pods not completed yet"),
)


def machine_condition(view: GroupView, machine: Machine, type_: str) -> Condition | None:
    return view.as_reported(machine.key, type_)


def is_true(view: GroupView, machine: Machine, type_: str) -> bool:
    c = view.as_reported(machine.key, type_)
    return c is not None and c.status is Status.TRUE


def count_true(view: GroupView, machines: Iterable[Machine], type_: str) -> int:
    return sum(1 for m in machines if is_true(view, m, type_))


Lookup = Callable[[Machine], Condition | None]


def participants(view: GroupView, machines: Iterable[Machine], type_: str, lookup: Lookup | None = None
            ) -> list[Participant]:
    return [
        Participant("Machine", m.meta.name, lookup(m) if lookup else view.as_reported(m.key, type_),
               control_plane=m.control_plane)
        for m in machines
    ]


def machines_condition(
    target_type: str,
    view: GroupView,
    machines: Sequence[Machine],
    source_type: str,
    reasons: Reasons,
    lookup: Lookup | None = None,
) -> Condition:
    """Aggregate one Machine condition into the owner; no Machines is True ``NoReplicas``.

    ``lookup`` replaces the view's effective condition (a control plane judging its own Machines).
    """
    if not machines:
        return plain(target_type, Status.TRUE, NO_REPLICAS)
    return aggregate(target_type, participants(view, machines, source_type, lookup), source_type=source_type,
                     reasons=reasons)


def up_to_date_candidates(view: GroupView, machines: Iterable[Machine], now: float) -> list[Machine]:
    """Machines to aggregate UpToDate over: skip the ones too young to have the condition yet."""
    return [
        m for m in machines
        if view.as_reported(m.key, UP_TO_DATE) is not None
        or m.meta.creation_timestamp is None
        or now - m.meta.creation_timestamp > UP_TO_DATE_GRACE_SECONDS
    ]


def unhealthy_message(machines: Sequence[Machine], owner: str) -> str:
    """``Machine(s) a, b is/are not healthy (not to be remediated[ by <owner>])``, "" when none."""
    if not machines:
        return ""
    by = f" by {owner}" if owner else ""
    return names_message("Machine", [m.meta.name for m in machines], "is", "are",
                         f" not healthy (not to be remediated{by})")


def remediating(view: GroupView, machines: Sequence[Machine], owner: str) -> Condition:
    """True while a Machine the health check failed waits for its owner to remediate it."""
    unhealthy = [m for m in machines if _is_false(view, m, HEALTH_CHECK_SUCCEEDED)]
    to_remediate = [m for m in unhealthy if _is_false(view, m, OWNER_REMEDIATED)]
    if not to_remediate:
        return Condition(REMEDIATING, Status.FALSE, NOT_REMEDIATING, unhealthy_message(unhealthy, owner))
    merged = aggregate(REMEDIATING, participants(view, to_remediate, OWNER_REMEDIATED),
                       source_type=OWNER_REMEDIATED, reasons=Reasons(REMEDIATING, REMEDIATING, REMEDIATING))
    return Condition(REMEDIATING, Status.TRUE, REMEDIATING, merged.message)


def _is_false(view: GroupView, machine: Machine, type_: str) -> bool:
    c = view.as_reported(machine.key, type_)
    return c is not None and c.status is Status.FALSE


def rolling_out(up_to_date: Sequence[Condition | None]) -> Condition:
    """``RollingOut`` from the UpToDate conditions of an owner's Machines (None: not reported)."""
    stale = [c for c in up_to_date if c is not None and c.status is Status.FALSE]
    if not stale:
        return plain(ROLLING_OUT, Status.FALSE, NOT_ROLLING_OUT)
    reasons = {line for c in stale if c.message for line in c.message.split("\n")}
    # A version change is the reason users care about first.
    ordered = sorted(reasons, key=lambda line: (not line.startswith("* Version"), line))
    message = "\n".join([f"Rolling out {len(stale)} not up-to-date replicas", *ordered])
    return Condition(ROLLING_OUT, Status.TRUE, ROLLING_OUT, message)


def stale_deletion_message(view: GroupView, machines: Iterable[Machine], now: float) -> str:
    """``Machine(s) ... is/are in deletion since more than 15m[, delay likely due to ...]``, or ""."""
    names: list[str] = []
    delays: set[str] = set()
    for m in machines:
        deleted_at = m.meta.deletion_timestamp
        if deleted_at is None or now - deleted_at <= STALE_DELETION_SECONDS:
            continue
        names.append(m.meta.name)
        deleting = view.as_reported(m.key, DELETING)
        draining_long = (
            deleting is not None
            and deleting.status is Status.TRUE
            and deleting.reason == DRAINING_NODE
            and m.drain_start_time is not None
            and now - m.drain_start_time > DRAIN_DELAY_SECONDS
        )
        if draining_long and deleting is not None:
            delays.update(label for text, label in _DRAIN_DELAYS if text in deleting.message)
    if not names:
        return ""
    message = names_message("Machine", names, "is", "are", " in deletion since more than 15m")
    ordered = [label for _, label in _DRAIN_DELAYS if label in delays]
    if ordered:
        message += ", delay likely due to " + ", ".join(ordered)
    return message


def list_names(names: Iterable[str], limit: int = 5) -> str:
    """Sorted, comma separated, at most ``limit`` names then ``... (N more)`` (upstream lists five)."""
    return shown_names(sorted(names), limit)
