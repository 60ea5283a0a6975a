"""MachineHealthCheck: its counters, RemediationAllowed, and a finding when remediation is blocked.

Owns the MHC counters (expectedMachines, currentHealthy, remediationsAllowed as the controller
reports them), RemediationAllowed (as reported; computed from the counters and the maxUnhealthy /
unhealthy range when the controller has not reported it) and the ``RemediationBlocked`` finding:
Machines are unhealthy and the check will not remediate them, which the conditions of the Machines
do not say. Owns no Machine health decision (the controller's HealthCheckSucceeded is read as is).
"""

from __future__ import annotations

from exporter.engine.conditions import find, mirror, not_yet_reported, plain
from exporter.engine.evaluate_types import Computed, GroupView
from exporter.engine.model import Condition, Finding, MachineHealthCheck, Status
from exporter.engine.rollout_math import max_unhealthy, parse_range
from exporter.engine.vocabulary import (
    REMEDIATION_ALLOWED,
    REMEDIATION_BLOCKED,
    TOO_MANY_UNHEALTHY,
)
from exporter.engine.vocabulary import (
    REMEDIATION_ALLOWED as REMEDIATION_ALLOWED_REASON,
)


def compute_machinehealthcheck(obj: MachineHealthCheck, view: GroupView, now: float) -> Computed:
    allowed = remediation_allowed(obj)
    findings = tuple(f for f in (remediation_blocked(obj, allowed),) if f is not None)
    counters = {
        "expectedMachines": obj.expected_machines,
        "currentHealthy": obj.current_healthy,
        "remediationsAllowed": obj.remediations_allowed,
    }
    return Computed(conditions=(allowed,), counters=counters, findings=findings)


def remediation_allowed(mhc: MachineHealthCheck) -> Condition:
    """The controller's RemediationAllowed (either layout), else what its counters imply."""
    own = find(mhc.conditions, REMEDIATION_ALLOWED) or find(mhc.v1beta1_conditions, REMEDIATION_ALLOWED)
    if own is not None:
        if own.status is Status.TRUE and not own.reason:  # v1beta1 True conditions carry no reason
            return Condition(REMEDIATION_ALLOWED, Status.TRUE, REMEDIATION_ALLOWED_REASON, own.message,
                             own.last_transition_time)
        return mirror(own, REMEDIATION_ALLOWED)
    if mhc.expected_machines is None or mhc.current_healthy is None:
        return not_yet_reported(REMEDIATION_ALLOWED)
    blocked = blocked_message(mhc)
    if blocked:
        return Condition(REMEDIATION_ALLOWED, Status.FALSE, TOO_MANY_UNHEALTHY, blocked)
    return plain(REMEDIATION_ALLOWED, Status.TRUE, REMEDIATION_ALLOWED_REASON)


def unhealthy_count(mhc: MachineHealthCheck) -> int | None:
    if mhc.expected_machines is None or mhc.current_healthy is None:
        return None
    return max(mhc.expected_machines - mhc.current_healthy, 0)


def blocked_message(mhc: MachineHealthCheck) -> str:
    """Why the counters forbid remediation ("" when they allow it): range first, then maxUnhealthy."""
    unhealthy = unhealthy_count(mhc)
    total = mhc.expected_machines
    if unhealthy is None or total is None:
        return ""
    bounds = parse_range(mhc.unhealthy_in_range)
    if bounds is not None:
        low, high = bounds
        if low <= unhealthy <= high:
            return ""
        return ("Remediation is not allowed, the number of not started or unhealthy machines does not fall "
                f"within the range (total: {total}, unhealthy: {unhealthy}, "
                f"unhealthyRange: {mhc.unhealthy_in_range})")
    limit = max_unhealthy(mhc.unhealthy_less_than_or_equal_to, total)
    if unhealthy <= limit:
        return ""
    shown = mhc.unhealthy_less_than_or_equal_to if mhc.unhealthy_less_than_or_equal_to is not None else "100%"
    return ("Remediation is not allowed, the number of not started or unhealthy machines exceeds "
            f"maxUnhealthy (total: {total}, unhealthy: {unhealthy}, maxUnhealthy: {shown})")


def remediation_blocked(mhc: MachineHealthCheck, allowed: Condition) -> Finding | None:
    """Unhealthy Machines that will not be remediated: the check's limit is exceeded."""
    unhealthy = unhealthy_count(mhc)
    if allowed.status is not Status.FALSE or not unhealthy:
        return None
    limit = ""
    if parse_range(mhc.unhealthy_in_range) is not None:
        limit = f", unhealthy range {mhc.unhealthy_in_range}"
    elif mhc.unhealthy_less_than_or_equal_to is not None:
        limit = f", maxUnhealthy {mhc.unhealthy_less_than_or_equal_to}"
    message = (f"Remediation is blocked: {unhealthy} of {mhc.expected_machines} Machines are unhealthy"
               f"{limit}")
    return Finding(REMEDIATION_BLOCKED, message, "warning")
