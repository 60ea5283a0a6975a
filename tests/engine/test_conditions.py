"""The condition primitives: priority with polarity, mirror, summary and aggregate."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from exporter.engine import conditions as conditions_module
from exporter.engine.conditions import (
    Participant,
    Priority,
    Reasons,
    aggregate,
    mirror,
    names_message,
    not_yet_reported,
    paused_condition,
    plain,
    priority,
    summary,
)
from exporter.engine.model import Condition, Status

T, F, U = Status.TRUE, Status.FALSE, Status.UNKNOWN
READY = Reasons("NotReady", "ReadyUnknown", "Ready")


def c(type_: str, status: Status, reason: str = "", message: str = "") -> Condition:
    return Condition(type_, status, reason, message)


@pytest.mark.parametrize(
    "condition,negative,want",
    [
        (c("Ready", F), False, Priority.ISSUE),  # positive polarity: False is bad
        (c("Ready", T), False, Priority.INFO),
        (c("Deleting", T), True, Priority.ISSUE),  # negative polarity: True is bad
        (c("Deleting", F), True, Priority.INFO),
        (c("Ready", U), False, Priority.UNKNOWN),
        (c("Deleting", U), True, Priority.UNKNOWN),
    ],
    ids=["positive-false", "positive-true", "negative-true", "negative-false", "unknown", "negative-unknown"],
)
def test_priority_honours_polarity(condition: Condition, negative: bool, want: Priority) -> None:
    assert priority(condition, negative) is want


def test_mirror_copies_status_reason_message_and_time_under_new_type() -> None:
    src = Condition("Ready", F, "NotReady", "infra not ready", last_transition_time=100.0)
    got = mirror(src, "InfrastructureReady")
    assert got == Condition("InfrastructureReady", F, "NotReady", "infra not ready", 100.0)


def test_mirror_under_the_same_type_is_the_source_unless_it_carries_a_severity() -> None:
    src = Condition("Ready", F, "NotReady", "m", last_transition_time=100.0, observed_generation=4)
    assert mirror(src, "Ready") is src
    old = Condition("Ready", F, "NotReady", "m", last_transition_time=100.0, severity="Warning")
    assert mirror(old, "Ready") == Condition("Ready", F, "NotReady", "m", 100.0)


def test_plain_conditions_are_shared_and_the_table_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    a = plain("Deleting", F, "NotDeleting")
    assert a == Condition("Deleting", F, "NotDeleting") and plain("Deleting", F, "NotDeleting") is a
    assert plain("Deleting", T, "NotDeleting") is not a
    monkeypatch.setattr(conditions_module, "_PLAIN", {})
    monkeypatch.setattr(conditions_module, "MAX_PLAIN", 2)
    for i in range(5):
        assert plain(f"Gate{i}", T, "R") == Condition(f"Gate{i}", T, "R")
    assert len(conditions_module._PLAIN) == 2


def test_mirror_uses_fallback_then_not_yet_reported() -> None:
    fallback = c("X", T, "Ready")
    assert mirror(None, "InfrastructureReady", fallback=fallback) == c("InfrastructureReady", T, "Ready")
    missing = mirror(None, "InfrastructureReady")
    assert (missing.status, missing.reason, missing.message) == (
        U,
        "NotYetReported",
        "Condition InfrastructureReady not yet reported",
    )


@dataclass(frozen=True)
class SummaryCase:
    name: str
    conditions: tuple[Condition, ...]
    want_status: Status
    want_reason: str
    want_message: str
    negative: frozenset[str] = frozenset()
    ignore_if_missing: frozenset[str] = frozenset()


SUMMARY_CASES = [
    SummaryCase("all true", (c("A", T, "Ok"), c("B", T, "Ok")), T, "Ready", ""),
    SummaryCase(
        "one issue listed with its message",
        (c("A", F, "Bad", "a is broken"), c("B", T, "Ok")),
        F,
        "NotReady",
        "* A: a is broken",
    ),
    SummaryCase(
        "issue beats unknown; both listed in type order",
        (c("A", U, "Unk", "a unknown"), c("B", F, "Bad", "b broken")),
        F,
        "NotReady",
        "* A: a unknown\n* B: b broken",
    ),
    SummaryCase(
        "missing condition becomes NotYetReported unknown",
        (c("A", T, "Ok"),),
        U,
        "ReadyUnknown",
        "* B: Condition not yet reported",
    ),
    SummaryCase(
        "missing condition ignored when asked",
        (c("A", T, "Ok"),),
        T,
        "Ready",
        "",
        ignore_if_missing=frozenset({"B"}),
    ),
    SummaryCase(
        "negative polarity True is an issue",
        (c("A", T, "Ok"), c("B", T, "Deleting", "deletion started")),
        F,
        "NotReady",
        "* B: deletion started",
        negative=frozenset({"B"}),
    ),
    SummaryCase(
        "empty message falls back to reason",
        (c("A", F, "BadThing"), c("B", T)),
        F,
        "NotReady",
        "* A: BadThing",
    ),
    SummaryCase(
        "info with message shown when result is true",
        (c("A", T, "Ok", "all good here"), c("B", T)),
        T,
        "Ready",
        "* A: all good here",
    ),
    SummaryCase(
        "multi-line message indented under its bullet",
        (c("A", F, "Bad", "* Machine m1: x\n* Machine m2: y"), c("B", T)),
        F,
        "NotReady",
        "* A:\n  * Machine m1: x\n  * Machine m2: y",
    ),
]


@pytest.mark.parametrize("case", SUMMARY_CASES, ids=[x.name for x in SUMMARY_CASES])
def test_summary(case: SummaryCase) -> None:
    got = summary(
        "Ready",
        case.conditions,
        for_types=("A", "B"),
        reasons=READY,
        negative=case.negative,
        ignore_if_missing=case.ignore_if_missing,
    )
    assert (got.type, got.status, got.reason, got.message) == (
        "Ready",
        case.want_status,
        case.want_reason,
        case.want_message,
    )


def test_summary_override_reclassifies_a_condition() -> None:
    conds = (c("A", F, "ObjectDeleted", "gone"), c("B", T))
    got = summary(
        "Ready",
        conds,
        for_types=("A", "B"),
        reasons=READY,
        override=lambda x: Priority.INFO if x.reason == "ObjectDeleted" else None,
    )
    assert got.status is T


def test_summary_with_negative_target_is_true_on_issue() -> None:
    got = summary("RollingOut", (c("A", F, "x", "m"),), for_types=("A",), reasons=READY, target_negative=True)
    assert got.status is T


def machines(*specs: tuple[str, Status, str]) -> list[Participant]:
    return [Participant("Machine", name, c("Ready", status, "r", msg)) for name, status, msg in specs]


@pytest.mark.parametrize(
    "participants,want_status,want_reason,want_message",
    [
        (machines(("m1", T, ""), ("m2", T, "")), T, "Ready", ""),
        (machines(("m1", F, "node down"), ("m2", T, "")), F, "NotReady", "* Machine m1: node down"),
        (
            machines(("m1", F, "node down"), ("m2", F, "node down"), ("m3", U, "no probe")),
            F,
            "NotReady",
            "* Machines m1, m2: node down\n* Machine m3: no probe",
        ),
        (
            machines(*[(f"m{i}", F, "node down") for i in range(1, 6)]),
            F,
            "NotReady",
            "* Machines m1, m2, m3, ... (2 more): node down",
        ),
        (
            machines(("a", F, "x1"), ("b", F, "x2"), ("c", F, "x3"), ("d", F, "x4"), ("e", F, "x5")),
            F,
            "NotReady",
            "* Machine a: x1\n* Machine b: x2\n* Machine c: x3\nAnd 2 Machines with other issues",
        ),
        (
            [Participant("Machine", "m1", None), *machines(("m2", T, ""))],
            U,
            "ReadyUnknown",
            "* Machine m1: Condition Ready not yet reported",
        ),
    ],
    ids=["all-true", "one-issue", "grouped-by-message", "more-than-three-names", "more-than-three-bullets",
         "missing-is-unknown"],
)
def test_aggregate(participants: list[Participant], want_status: Status, want_reason: str,
                   want_message: str) -> None:
    got = aggregate("MachinesReady", participants, source_type="Ready", reasons=READY)
    assert (got.status, got.reason, got.message) == (want_status, want_reason, want_message)


def test_aggregate_lists_control_plane_machines_first() -> None:
    participants = [
        Participant("Machine", "w1", c("Ready", F, "r", "worker issue")),
        Participant("Machine", "w2", c("Ready", F, "r", "worker issue")),
        Participant("Machine", "cp1", c("Ready", F, "r", "cp issue"), control_plane=True),
    ]
    got = aggregate("MachinesReady", participants, source_type="Ready", reasons=READY)
    assert got.message.splitlines()[0] == "* Machine cp1: cp issue"


def test_names_message_singular_plural_and_truncation() -> None:
    assert names_message("Machine", ["a"], "is", "are", " not healthy") == "Machine a is not healthy"
    assert (
        names_message("Machine", ["d", "c", "b", "a"], "is", "are", " not healthy")
        == "Machines a, b, c, ... (1 more) are not healthy"
    )


def test_not_yet_reported_and_paused() -> None:
    assert not_yet_reported("X").message == "Condition X not yet reported"
    assert paused_condition(False, False, "Machine") == c("Paused", F, "NotPaused")
    p = paused_condition(True, True, "MachineDeployment")
    assert (p.status, p.reason) == (T, "Paused")
    assert p.message == (
        "Cluster spec.paused is set to true, MachineDeployment has the cluster.x-k8s.io/paused annotation"
    )


# Upstream's util/conditions message tests (merge_strategies_test.go), as facts: the objects each
# condition belongs to, in upstream's order, and the message upstream writes.
def md(name: str, status: Status, message: str, kind: str = "MachineDeployment",
       cp: bool = False) -> Participant:
    return Participant(kind, name, c("A", status, "", message), control_plane=cp)


AGGREGATE_MESSAGE_CASES = {
    "TestAggregateMessages/groups-by-kind-max-3-messages-aggregate-objects-count-others": (
        [md("obj02", F, "Message-1"), md("obj01", F, "Message-1"), md("obj04", F, "* Message-2"),
         md("obj03", F, "* Message-2"), md("obj06", F, "* Message-3A\n* Message-3B"),
         md("obj05", F, "Message-1"), md("obj08", F, "Message-1"), md("obj07", F, "Message-4"),
         md("obj09", F, "Message-1"), md("obj10", F, "Message-5"),
         md("obj11", F, "Message-1", "MachineSet"), md("obj12", F, "Message-1", "MachineSet")],
        "* MachineDeployments obj01, obj02, obj05, ... (2 more): Message-1\n"
        "* MachineDeployments obj03, obj04:\n  * Message-2\n"
        "* MachineDeployment obj06:\n  * Message-3A\n  * Message-3B\n"
        "And 2 MachineDeployments with other issues\n"
        "And 2 MachineSets with other issues",
    ),
    "TestAggregateMessages/issue-messages-go-before-unknown": (
        [md("obj02", U, "Message-1"), md("obj01", U, "Message-1"), md("obj04", F, "* Message-2"),
         md("obj03", F, "* Message-2"), md("obj06", F, "* Message-3A\n* Message-3B"),
         md("obj05", U, "Message-1"), md("obj08", U, "Message-1"),
         md("obj07", F, "Message-4\n* More Message-4"), md("obj09", U, "Message-1"),
         md("obj10", F, "Message-5")],
        "* MachineDeployments obj03, obj04:\n  * Message-2\n"
        "* MachineDeployment obj06:\n  * Message-3A\n  * Message-3B\n"
        "* MachineDeployment obj07:\n  * Message-4\n    * More Message-4\n"
        "And 1 MachineDeployment with other issues\n"
        "And 5 MachineDeployments with status unknown",
    ),
    "TestAggregateMessages/control-plane-machines-always-go-before-other-machines": (
        [md("obj02", U, "* Message-1", "Machine", cp=True), md("obj01", U, "* Message-1", "Machine"),
         md("obj04", F, "* Message-2", "Machine"), md("obj03", F, "* Message-2", "Machine"),
         md("obj06", F, "* Message-3A\n* Message-3B", "Machine"), md("obj05", F, "* Message-2", "Machine")],
        "* Machines obj02, obj01:\n  * Message-1\n"
        "* Machines obj03, obj04, obj05:\n  * Message-2\n"
        "* Machine obj06:\n  * Message-3A\n  * Message-3B",
    ),
    "sort-messages-equal-priority-and-count-by-joined-names-not-text": (
        [md("b", F, "a message"), md("a", F, "z message")],
        "* MachineDeployment a: z message\n* MachineDeployment b: a message",
    ),
    "kinds-in-alphabetical-order-each-with-its-others": (
        [md("s1", F, "s"), md("d1", F, "d1"), md("d2", F, "d2"), md("d3", F, "d3"), md("d4", F, "d4"),
         md("p1", F, "a pool message", "MachinePool")],
        "* MachineDeployment d1: d1\n* MachineDeployment d2: d2\n* MachineDeployment d3: d3\n"
        "And 2 MachineDeployments with other issues\nAnd 1 MachinePool with other issues",
    ),
    "an-issue-without-message-is-listed-with-it-empty-not-its-reason": (
        [Participant("MachineDeployment", "a", c("A", F, "SomeReason", ""))],
        "* MachineDeployment a: ",
    ),
}


@pytest.mark.parametrize("name", AGGREGATE_MESSAGE_CASES)
def test_aggregate_messages_as_upstream(name: str) -> None:
    participants, want = AGGREGATE_MESSAGE_CASES[name]
    got = aggregate("A", participants, source_type="A", reasons=READY)
    assert got.message == want


def test_summary_messages_handles_multiline_messages_as_upstream() -> None:
    """Upstream TestSummaryMessages/Handles multiline messages."""
    conds = (c("A", T, "Reason-A", "Message-A"), c("B", T, "Reason-B", "* Message-B"),
             c("C", T, "Reason-C", "* Message-C1\n* Message-C2"),
             c("D", T, "Reason-D", "Message-D\n* More Message-D"),
             c("E", T, "Reason-E", "* Message-E1\n  * More Message-E1\n* Message-E2"))
    got = summary("Ready", conds, for_types=("A", "B", "C", "D", "E"), reasons=READY)
    assert got.message == (
        "* A: Message-A\n"
        "* B:\n  * Message-B\n"
        "* C:\n  * Message-C1\n  * Message-C2\n"
        "* D:\n  * Message-D\n    * More Message-D\n"
        "* E:\n  * Message-E1\n    * More Message-E1\n  * Message-E2"
    )
