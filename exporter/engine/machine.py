"""Machine: the v1beta2 conditions and phase the engine computes for one Machine.

Owns Ready (the summary that says "this Machine can host workloads"), Available, Deleting,
Updating, Paused, the phase, and the inputs read as reported (BootstrapConfigReady,
InfrastructureReady, NodeReady, NodeHealthy, HealthCheckSucceeded, OwnerRemediated, the control
plane pod/etcd conditions, UpToDate of worker Machines). Those inputs live outside the management
cluster (Nodes, provider objects), so they are copied from the Machine's own v1beta2 conditions;
for a Machine stored only in the v1beta1 layout they are derived from the v1beta1 condition of the
same meaning (``machine_inputs.py``). Owns nothing about owners: roll-ups are in the owner modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from exporter.engine.conditions import (
    Priority,
    Reasons,
    find,
    paused_condition,
    plain,
    summary,
)
from exporter.engine.evaluate_types import Computed, GroupView
from exporter.engine.machine_inputs import (
    CONTROL_PLANE_COMPONENTS,
    deleting,
    inputs,
    reported,
    updating,
)
from exporter.engine.model import Condition, Machine, Status
from exporter.engine.vocabulary import (
    AVAILABLE,
    BOOTSTRAP_CONFIG_READY,
    DELETING,
    DRAINING_NODE,
    HEALTH_CHECK_SUCCEEDED,
    INFRASTRUCTURE_READY,
    NODE_DELETED,
    NODE_DOES_NOT_EXIST,
    NODE_HEALTHY,
    NOT_READY,
    NOT_YET_REPORTED,
    OBJECT_DELETED,
    OBJECT_DOES_NOT_EXIST,
    PENDING,
    PROVISIONED,
    PROVISIONING,
    READY,
    READY_UNKNOWN,
    RUNNING,
    UPDATING,
    WAITING_FOR_MIN_READY_SECONDS,
)
from exporter.engine.vocabulary import (
    AVAILABLE as AVAILABLE_REASON,
)

READY_REASONS: Final = Reasons(NOT_READY, READY_UNKNOWN, READY)

STALE_DELETION_SECONDS: Final = 15 * 60.0
DRAIN_DELAY_SECONDS: Final = 5 * 60.0
# While a Machine is going away its provider objects and Node go too: that is progress, not an issue.
_GONE_REASONS: Final = frozenset({OBJECT_DELETED, OBJECT_DOES_NOT_EXIST, NODE_DELETED, NODE_DOES_NOT_EXIST})
_GONE_TYPES: Final = frozenset({BOOTSTRAP_CONFIG_READY, INFRASTRUCTURE_READY, NODE_HEALTHY})
# Substrings of a draining Machine's Deleting message and the delay each one explains.
DRAIN_DELAYS: Final = (
    ("cannot evict pod as it would violate the pod's disruption budget", "PodDisruptionBudgets"),
    ("deletionTimestamp set, but still not removed from the Node", "Pods not terminating"),
    ("failed to evict Pod", "Pod eviction errors"),
    ("waiting for completion", "Pods not completed yet"),
)

# Phases (status.phase) as the Machine controller sets them: PENDING, PROVISIONING, PROVISIONED,
# RUNNING, UPDATING and DELETING.


def compute_machine(obj: Machine, view: GroupView, now: float) -> Computed:
    read = inputs(obj, view, now)
    deleting_c = deleting(obj)
    updating_c = updating(obj)
    ready = ready_condition(obj, read, deleting_c, updating_c, now)
    cluster_paused = view.cluster.spec_paused if view.cluster is not None else False
    conditions = (
        ready,
        available_condition(ready, _ready_since(obj, ready), obj.min_ready_seconds, now),
        *read,
        deleting_c,
        updating_c,
        paused_condition(cluster_paused, obj.paused_annotation, "Machine"),
    )
    return Computed(conditions=conditions, phase=obj.phase or derived_phase(obj, updating_c))


# ---- Ready ------------------------------------------------------------------------------------


def ready_condition(m: Machine, read: Sequence[Condition], deleting_c: Condition, updating_c: Condition,
                    now: float) -> Condition:
    """Summary of Deleting, Updating, bootstrap, infrastructure, Node health, health check and gates."""
    # Computed inputs win over raw reported ones; unreported ones are left for summary to mark missing.
    known = [c for c in read if c.reason != NOT_YET_REPORTED]
    available = {c.type: c for c in (*m.conditions, *known)}
    available[DELETING] = deleting_for_summary(m, deleting_c, now) if m.meta.deleting else deleting_c
    available[UPDATING] = updating_c
    types = [DELETING, UPDATING, BOOTSTRAP_CONFIG_READY, INFRASTRUCTURE_READY, NODE_HEALTHY,
             HEALTH_CHECK_SUCCEEDED]
    negative = {DELETING, UPDATING}
    for gate in m.readiness_gates:
        if gate.condition_type in types or gate.condition_type == READY:
            continue
        types.append(gate.condition_type)
        if gate.condition_type not in available:
            gated = reported(m, gate.condition_type)  # a v1beta1 Machine's gate reads its old condition
            if gated is not None:
                available[gate.condition_type] = gated
        if gate.negative:
            negative.add(gate.condition_type)
    result = summary(
        READY, available.values(), for_types=types, reasons=READY_REASONS, negative=frozenset(negative),
        ignore_if_missing=frozenset({HEALTH_CHECK_SUCCEEDED}),
        override=_deleting_override if m.meta.deleting else None,
    )
    return collapse_control_plane_components(result, {g.condition_type for g in m.readiness_gates})


def _deleting_override(c: Condition) -> Priority | None:
    if c.type in _GONE_TYPES and c.reason in _GONE_REASONS:
        return Priority.INFO
    return None


def deleting_for_summary(m: Machine, deleting_c: Condition, now: float) -> Condition:
    """Deleting as Ready shows it: the stage, and how long and why when it takes too long."""
    message = "Machine deletion in progress"
    deleted_at = m.meta.deletion_timestamp
    if deleted_at is not None and now - deleted_at > STALE_DELETION_SECONDS:
        message += " since more than 15m"
    message += f", stage: {deleting_c.reason}"
    delays = drain_delays(m, deleting_c, now)
    if deleted_at is not None and now - deleted_at > STALE_DELETION_SECONDS and delays:
        message += ", delay likely due to " + ", ".join(delays)
    return Condition(DELETING, deleting_c.status, deleting_c.reason, message)


def drain_delays(m: Machine, deleting_c: Condition, now: float) -> list[str]:
    """What a drain running for more than 5 minutes is waiting on, read from the Deleting message."""
    if deleting_c.status is not Status.TRUE or deleting_c.reason != DRAINING_NODE:
        return []
    if m.drain_start_time is None or now - m.drain_start_time <= DRAIN_DELAY_SECONDS:
        return []
    return [label for text, label in DRAIN_DELAYS if text in deleting_c.message]


def collapse_control_plane_components(ready: Condition, gates: set[str]) -> Condition:
    """Readiness gates on control plane pods saying the same thing become one bullet."""
    bullets = _bullets(ready.message)
    component_bullets = [(type_, text) for type_, text in bullets
                         if type_ in gates and type_.startswith(CONTROL_PLANE_COMPONENTS)]
    texts = {text for _, text in component_bullets}
    if len(component_bullets) < 2 or len(texts) != 1:
        return ready
    lines: list[str] = []
    collapsed = False
    for type_, text in bullets:
        if (type_, text) in component_bullets:
            if not collapsed:
                lines.append(f"* Control plane components:{text}")
                collapsed = True
            continue
        lines.append(f"* {type_}:{text}")
    return Condition(ready.type, ready.status, ready.reason, "\n".join(lines))


def _bullets(message: str) -> list[tuple[str, str]]:
    """Split ``* Type: text`` bullets (continuation lines are indented) into (type, ": text" rest)."""
    bullets: list[tuple[str, str]] = []
    for line in message.split("\n"):
        if line.startswith("* ") and ":" in line:
            type_, _, rest = line[2:].partition(":")
            bullets.append((type_, rest))
        elif bullets:
            type_, rest = bullets[-1]
            bullets[-1] = (type_, f"{rest}\n{line}")
    return bullets


# ---- Available --------------------------------------------------------------------------------


def available_condition(ready: Condition, ready_since: float | None, min_ready_seconds: int,
                        now: float) -> Condition:
    """Ready for at least spec.minReadySeconds."""
    if ready.status is not Status.TRUE:
        return plain(AVAILABLE, Status.FALSE, NOT_READY)
    if min_ready_seconds <= 0:
        return plain(AVAILABLE, Status.TRUE, AVAILABLE_REASON)
    if ready_since is not None and now - ready_since >= min_ready_seconds:
        return plain(AVAILABLE, Status.TRUE, AVAILABLE_REASON)
    return plain(AVAILABLE, Status.FALSE, WAITING_FOR_MIN_READY_SECONDS)


def _ready_since(m: Machine, ready: Condition) -> float | None:
    """When Ready became True, as far as the objects tell.

    The controller's own Ready when it agrees; for a v1beta1 Machine, the latest transition of the
    v1beta1 Ready (infrastructure + bootstrap) and NodeHealthy conditions, which together are what
    the v1beta2 Ready adds up to. None when nothing says it: the Machine is not yet available then.
    """
    if ready.status is not Status.TRUE:
        return None
    if m.has_v1beta2_conditions:
        reported = find(m.conditions, READY)
        if reported is not None and reported.status is Status.TRUE:
            return reported.last_transition_time
        return None
    times = [c.last_transition_time for c in m.v1beta1_conditions
             if c.type in (READY, NODE_HEALTHY) and c.status is Status.TRUE]
    known = [t for t in times if t is not None]
    return max(known) if known and len(known) == len(times) else None


# ---- phase ------------------------------------------------------------------------------------


def derived_phase(m: Machine, updating_c: Condition) -> str:
    """The phase when the Machine does not report one, in the controller's order of precedence."""
    phase = PENDING
    if m.bootstrap_data_secret_created and not m.infrastructure_provisioned:
        phase = PROVISIONING
    if m.provider_id:
        phase = PROVISIONED
    if m.node_name and m.infrastructure_provisioned:
        phase = RUNNING
    if updating_c.status is Status.TRUE:
        phase = UPDATING
    if m.meta.deleting:
        phase = DELETING
    return phase
