"""The three condition operations every rule is built from: mirror, summary and aggregate.

Owns merge priority (issue > unknown > info, with polarity as data), the synthetic
``NotYetReported`` condition for missing inputs, and the upstream message shapes (``* Type: msg``
bullets, ``* Machines a, b, ... (N more): msg``, ``And N Machines with other issues``). Owns no
rule of any kind and no lastTransitionTime bookkeeping (see ``evaluate.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from mypy_extensions import mypyc_attr

from exporter.engine.model import Condition, Status
from exporter.engine.vocabulary import (
    DEGRADED,
    DELETING,
    NOT_PAUSED,
    NOT_YET_REPORTED,
    PAUSED,
    REMEDIATING,
    ROLLING_OUT,
    SCALING_DOWN,
    SCALING_UP,
    UPDATING,
)

MAX_AGGREGATE_BULLETS = 3
MAX_LISTED_NAMES = 3


class Priority(IntEnum):
    """Merge priority of one condition; lower is worse."""

    ISSUE = 0
    UNKNOWN = 1
    INFO = 2


# By value, without calling the enum class: an interpreted call per aggregate, compiled or not.
_BY_VALUE: Final = (Priority.ISSUE, Priority.UNKNOWN, Priority.INFO)


def priority(c: Condition, negative: bool = False) -> Priority:
    """Issue = positive-polarity False or negative-polarity True; Unknown = unknown; else info."""
    if c.status is Status.UNKNOWN:
        return Priority.UNKNOWN
    bad = Status.TRUE if negative else Status.FALSE
    return Priority.ISSUE if c.status is bad else Priority.INFO


def find(conditions: Iterable[Condition], type_: str) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)


# Conditions with no message and no time are values a handful of (type, status, reason) make up
# (NotDeleting, NotPaused, a healthy Ready or Available): shared, not built again for every object
# (~80,000 fewer objects at fleet size, ~7 MB). The rules pass their own constants, but a type can
# come from an object (a readiness gate): past MAX_PLAIN the table takes no more.
MAX_PLAIN = 4096
_PLAIN: dict[tuple[str, Status, str], Condition] = {}


def plain(type_: str, status: Status, reason: str) -> Condition:
    """The condition with this type, status and reason and nothing else (a shared object)."""
    c = _PLAIN.get((type_, status, reason))
    if c is None:
        c = Condition(type_, status, reason)
        if len(_PLAIN) < MAX_PLAIN:
            _PLAIN[(type_, status, reason)] = c
    return c


def not_yet_reported(type_: str, message: str | None = None) -> Condition:
    return Condition(
        type=type_,
        status=Status.UNKNOWN,
        reason=NOT_YET_REPORTED,
        message=message if message is not None else f"Condition {type_} not yet reported",
    )


def mirror(source: Condition | None, target_type: str, *, fallback: Condition | None = None) -> Condition:
    """Copy a condition under a new type, keeping status, reason, message and transition time.

    A condition of the target type already (and without a v1beta1 severity) is returned as it is,
    its observedGeneration included: nothing reads a computed condition's generation, and the
    computed condition is then the reported one, not a second object equal to it but for that.
    """
    if source is None:
        if fallback is not None:
            return _retype(fallback, target_type)
        return not_yet_reported(target_type)
    return _retype(source, target_type)


def _retype(c: Condition, type_: str) -> Condition:
    if c.type == type_ and not c.severity:
        return c
    return Condition(
        type=type_,
        status=c.status,
        reason=c.reason,
        message=c.message,
        last_transition_time=c.last_transition_time,
    )


@dataclass(frozen=True, slots=True)
class Reasons:
    """The reason a merged condition gets when its worst input is an issue, unknown or info."""

    issue: str
    unknown: str
    info: str

    def for_priority(self, p: Priority) -> str:
        return (self.issue, self.unknown, self.info)[p]


def merged_status(worst: Priority, target_negative: bool) -> Status:
    if worst is Priority.UNKNOWN:
        return Status.UNKNOWN
    is_issue = worst is Priority.ISSUE
    # A negative-polarity target (e.g. RollingOut) is True when something is wrong.
    return Status.TRUE if is_issue == target_negative else Status.FALSE


# A bullet anywhere in a line, as upstream's unanchored match of `\s*\*\s+` (RE2's ASCII \s).
_BULLET = re.compile(r"\*[\t\n\f\r ]+")


def indent_if_multiline(message: str) -> str:
    """Nest a multi-line (or bulleted) message under its bullet, as upstream does.

    Lines get two spaces; when some line has no bullet, those lines get one ("  * ") and the
    bulleted lines nest a level deeper ("    ").
    """
    if "\n" not in message and _BULLET.search(message) is None:
        return " " + message
    lines = message.split("\n")
    bulleted = [_BULLET.search(line) is not None for line in lines]
    if all(bulleted):
        return "\n" + "\n".join("  " + line for line in lines)
    return "\n" + "\n".join(("    " if b else "  * ") + line for line, b in zip(lines, bulleted, strict=True))


def summary(
    target_type: str,
    conditions: Iterable[Condition],
    *,
    for_types: Sequence[str],
    reasons: Reasons,
    negative: frozenset[str] = frozenset(),
    ignore_if_missing: frozenset[str] = frozenset(),
    override: Callable[[Condition], Priority | None] | None = None,
    target_negative: bool = False,
) -> Condition:
    """Merge several conditions of one object into ``target_type`` (upstream NewSummaryCondition)."""
    by_type = {c.type: c for c in conditions}
    selected: list[tuple[Condition, Priority]] = []
    for type_ in for_types:
        c = by_type.get(type_)
        if c is None:
            if type_ in ignore_if_missing:
                continue
            c = Condition(type_, Status.UNKNOWN, NOT_YET_REPORTED, "Condition not yet reported")
        p = override(c) if override is not None else None
        selected.append((c, p if p is not None else priority(c, type_ in negative)))
    if not selected:
        return not_yet_reported(target_type)
    worst = min(p for _, p in selected)
    lines: list[str] = []
    for c, p in selected:
        if p is Priority.INFO and (worst is not Priority.INFO or not c.message):
            continue
        text = c.message or c.reason
        lines.append(f"* {c.type}:{indent_if_multiline(text)}")
    if not lines:
        return plain(target_type, merged_status(worst, target_negative), reasons.for_priority(worst))
    return Condition(
        type=target_type,
        status=merged_status(worst, target_negative),
        reason=reasons.for_priority(worst),
        message="\n".join(lines),
    )


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class Participant:
    """One object taking part in an aggregation, with its condition of the aggregated type."""

    kind: str
    name: str
    condition: Condition | None
    control_plane: bool = False

    def __init__(self, kind: str, name: str, condition: Condition | None,
                 control_plane: bool = False) -> None:
        # written out (see model.Condition.__init__): owners build one per Machine per aggregate
        # on every evaluation
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "condition", condition)
        object.__setattr__(self, "control_plane", control_plane)


def shown_names(names: Sequence[str], limit: int = MAX_LISTED_NAMES) -> str:
    """``a, b, c`` or, past ``limit`` names, ``a, b, c, ... (2 more)``, in the order given."""
    shown = ", ".join(names[:limit])
    if len(names) > limit:
        shown += f", ... ({len(names) - limit} more)"
    return shown


def names_message(kind: str, names: Sequence[str], verb_singular: str, verb_plural: str, suffix: str) -> str:
    """``Machine a is not healthy`` / ``Machines a, b, c, ... (2 more) are not healthy``."""
    ordered = sorted(names)
    shown = shown_names(ordered)
    if len(ordered) == 1:
        return f"{kind} {shown} {verb_singular}{suffix}"
    return f"{_plural(kind)} {shown} {verb_plural}{suffix}"


def _plural(kind: str) -> str:
    return kind[:-1] + "ies" if kind.endswith("y") else kind + "s"


_OTHER_TEXT: dict[int, str] = {
    Priority.ISSUE: "with other issues",
    Priority.UNKNOWN: "with status unknown",
    Priority.INFO: "with additional info",
}


def aggregate(
    target_type: str,
    participants: Sequence[Participant],
    *,
    source_type: str,
    reasons: Reasons,
    negative: bool = False,
    target_negative: bool = False,
) -> Condition:
    """Merge the same condition across many objects (upstream NewAggregateCondition)."""
    if not participants:
        return not_yet_reported(target_type)
    # ``priority`` inlined, as ints: this loop runs for every Machine of every owner.
    bad = Status.TRUE if negative else Status.FALSE
    missing: Condition | None = None
    rated: list[tuple[Participant, Condition, int]] = []
    worst_value = 2
    for m in participants:
        c = m.condition
        if c is None:
            if missing is None:
                missing = Condition(source_type, Status.UNKNOWN, NOT_YET_REPORTED,
                                    f"Condition {source_type} not yet reported")
            c = missing
        status = c.status
        p = 1 if status is Status.UNKNOWN else 0 if status is bad else 2
        if p < worst_value:
            worst_value = p
        rated.append((m, c, p))
    worst = _BY_VALUE[worst_value]
    status = merged_status(worst, target_negative)
    if worst is Priority.INFO and not any(c.message for _, c, _ in rated):
        # The common healthy case: nothing to list, so no grouping and no sorting.
        return plain(target_type, status, reasons.for_priority(worst))
    # Issues and unknowns are listed (an empty message too); info only when nothing else is to be
    # said, and only info with a message.
    if worst is Priority.INFO:
        shown = [r for r in rated if r[1].message]
    else:
        shown = [r for r in rated if r[2] != Priority.INFO]
    return Condition(
        type=target_type,
        status=status,
        reason=reasons.for_priority(worst),
        message="\n".join(_aggregate_lines(shown)),
    )


def _aggregate_lines(rated: list[tuple[Participant, Condition, int]]) -> list[str]:
    """Upstream's aggregateMessages: per kind (alphabetical), messages ordered control plane first,
    then by priority, by how many objects report them, and by the joined names of those objects;
    at most three messages in all, the objects of the others counted per kind and priority."""
    # Oldest transition first (a condition not reported counts as oldest), as upstream sorts its input.
    rated = sorted(rated, key=lambda r: (r[1].last_transition_time or 0.0, r[0].name))
    by_kind: dict[str, dict[str, list[Participant]]] = {}
    message_priority: dict[str, int] = {}
    for m, c, p in rated:
        by_kind.setdefault(m.kind, {}).setdefault(c.message, []).append(m)
        # The same message at several priorities counts at the worst of them.
        message_priority[c.message] = min(p, message_priority.get(c.message, p))
    budget = MAX_AGGREGATE_BULLETS
    lines: list[str] = []
    for kind in sorted(by_kind):
        messages = by_kind[kind]
        ordered = sorted(messages, key=lambda text: (
            not any(m.control_plane for m in messages[text]),
            message_priority[text],
            -len(messages[text]),
            ",".join(m.name for m in messages[text]),
        ))
        others: dict[int, int] = {}
        for text in ordered:
            group = messages[text]
            if budget == 0:
                others[message_priority[text]] = others.get(message_priority[text], 0) + len(group)
                continue
            names = [m.name for m in sorted(group, key=lambda m: (not m.control_plane, m.name))]
            shown = shown_names(names)
            label = kind if len(names) == 1 else _plural(kind)
            lines.append(f"* {label} {shown}:{indent_if_multiline(text)}")
            budget -= 1
        for p in sorted(others):
            label = kind if others[p] == 1 else _plural(kind)
            lines.append(f"And {others[p]} {label} {_OTHER_TEXT[p]}")
    return lines




def paused_condition(cluster_spec_paused: bool, annotated: bool, kind: str) -> Condition:
    """Paused as every CAPI controller sets it (util/paused)."""
    reasons = []
    if cluster_spec_paused:
        reasons.append("Cluster spec.paused is set to true")
    if annotated:
        reasons.append(f"{kind} has the cluster.x-k8s.io/paused annotation")
    if not reasons:
        return plain(PAUSED, Status.FALSE, NOT_PAUSED)
    return Condition(PAUSED, Status.TRUE, PAUSED, ", ".join(reasons))


# Condition types for which True is the bad state (CAPI v1beta2 polarity). Used to rank
# conditions for display and alerting; rules pass their own polarity to summary/aggregate.
NEGATIVE_POLARITY_TYPES = frozenset(
    {DELETING, PAUSED, ROLLING_OUT, SCALING_UP, SCALING_DOWN, REMEDIATING, UPDATING,
     DEGRADED}  # the OCM kinds' Degraded (ManifestWork, ManagedClusterAddOn): True is the issue
)


def display_priority(c: Condition) -> Priority:
    """Priority of a condition whose polarity is the conventional one for its type."""
    return priority(c, c.type in NEGATIVE_POLARITY_TYPES)
