"""MachineHealthCheck: counters as reported, RemediationAllowed (reported or computed), RemediationBlocked."""

from __future__ import annotations

from dataclasses import replace

import pytest

from exporter.engine.evaluate_types import Computed
from exporter.engine.machinehealthcheck import compute_machinehealthcheck
from exporter.engine.model import Condition, MachineHealthCheck, Status
from tests.engine.builders import NOW, F, T, U, capi_view, cond, health_check


def run(mhc: MachineHealthCheck) -> Computed:
    return compute_machinehealthcheck(mhc, capi_view(mhc), NOW)


def allowed(result: Computed) -> Condition:
    c = result.condition("RemediationAllowed")
    assert c is not None
    return c


def test_counters_are_reported_values() -> None:
    result = run(health_check(expected=5, healthy=4, allowed=1))
    assert result.counters == {"expectedMachines": 5, "currentHealthy": 4, "remediationsAllowed": 1}


def test_unset_counters_stay_unset() -> None:
    result = run(health_check(expected=None, healthy=None))
    assert result.counters == {"expectedMachines": None, "currentHealthy": None, "remediationsAllowed": None}


EXCEEDS = ("Remediation is not allowed, the number of not started or unhealthy machines exceeds maxUnhealthy "
           "(total: {t}, unhealthy: {u}, maxUnhealthy: {m})")
OUT_OF_RANGE = ("Remediation is not allowed, the number of not started or unhealthy machines does not fall "
                "within the range (total: {t}, unhealthy: {u}, unhealthyRange: {r})")

ALLOWED_CASES: list[tuple[str, MachineHealthCheck, Status, str, str]] = [
    ("reported-v1beta2", health_check(expected=3, healthy=0, max_unhealthy=1,
                                      conditions=[cond("RemediationAllowed", T, "RemediationAllowed")]),
     T, "RemediationAllowed", ""),
    ("reported-v1beta2-false-mirrored",
     health_check(expected=3, healthy=3, conditions=[cond("RemediationAllowed", F, "TooManyUnhealthy", "x")]),
     F, "TooManyUnhealthy", "x"),
    ("reported-v1beta1-true-gets-reason",
     replace(health_check(layout="v1beta1", expected=3, healthy=0, max_unhealthy=1),
             v1beta1_conditions=(cond("RemediationAllowed", T),)),
     T, "RemediationAllowed", ""),
    ("reported-v1beta1-false",
     replace(health_check(layout="v1beta1"),
             v1beta1_conditions=(cond("RemediationAllowed", F, "TooManyUnhealthy", "old message"),)),
     F, "TooManyUnhealthy", "old message"),
    ("counters-unknown", health_check(expected=None, healthy=None), U, "NotYetReported",
     "Condition RemediationAllowed not yet reported"),
    ("default-max-unhealthy-100-percent", health_check(expected=3, healthy=0), T, "RemediationAllowed", ""),
    ("within-int-limit", health_check(expected=3, healthy=1, max_unhealthy=2), T, "RemediationAllowed", ""),
    ("exceeds-int-limit", health_check(expected=3, healthy=0, max_unhealthy=2), F, "TooManyUnhealthy",
     EXCEEDS.format(t=3, u=3, m=2)),
    ("exceeds-percent-rounded-down", health_check(expected=5, healthy=2, max_unhealthy="40%"), F,
     "TooManyUnhealthy", EXCEEDS.format(t=5, u=3, m="40%")),
    ("within-percent", health_check(expected=5, healthy=3, max_unhealthy="40%"), T, "RemediationAllowed", ""),
    ("within-range", health_check(expected=5, healthy=3, in_range="[1-2]"), T, "RemediationAllowed", ""),
    ("below-range", health_check(expected=5, healthy=5, in_range="[1-2]"), F, "TooManyUnhealthy",
     OUT_OF_RANGE.format(t=5, u=0, r="[1-2]")),
    ("above-range-wins-over-max-unhealthy",
     health_check(expected=5, healthy=1, in_range="[1-2]", max_unhealthy="100%"), F, "TooManyUnhealthy",
     OUT_OF_RANGE.format(t=5, u=4, r="[1-2]")),
]


@pytest.mark.parametrize(("mhc", "status", "reason", "message"), [c[1:] for c in ALLOWED_CASES],
                         ids=[c[0] for c in ALLOWED_CASES])
def test_remediation_allowed(mhc: MachineHealthCheck, status: Status, reason: str, message: str) -> None:
    c = allowed(run(mhc))
    assert (c.status, c.reason, c.message) == (status, reason, message)


FINDING_CASES: list[tuple[str, MachineHealthCheck, str | None]] = [
    ("healthy-no-finding", health_check(expected=3, healthy=3, max_unhealthy=0), None),
    ("allowed-no-finding", health_check(expected=3, healthy=2, max_unhealthy=1), None),
    ("blocked-by-max-unhealthy", health_check(expected=3, healthy=1, max_unhealthy=1),
     "Remediation is blocked: 2 of 3 Machines are unhealthy, maxUnhealthy 1"),
    ("blocked-by-range", health_check(expected=4, healthy=0, in_range="[1-3]"),
     "Remediation is blocked: 4 of 4 Machines are unhealthy, unhealthy range [1-3]"),
    ("blocked-as-reported",
     health_check(expected=3, healthy=1, conditions=[cond("RemediationAllowed", F, "TooManyUnhealthy")]),
     "Remediation is blocked: 2 of 3 Machines are unhealthy"),
    ("reported-blocked-but-nobody-unhealthy",
     health_check(expected=3, healthy=3, conditions=[cond("RemediationAllowed", F, "TooManyUnhealthy")]),
     None),
    ("below-range-is-not-blocking-anyone", health_check(expected=3, healthy=3, in_range="[1-2]"), None),
]


@pytest.mark.parametrize(("mhc", "message"), [c[1:] for c in FINDING_CASES],
                         ids=[c[0] for c in FINDING_CASES])
def test_remediation_blocked_finding(mhc: MachineHealthCheck, message: str | None) -> None:
    findings = run(mhc).findings
    if message is None:
        assert findings == ()
        return
    (finding,) = findings
    assert (finding.code, finding.message, finding.severity) == ("RemediationBlocked", message, "warning")
