"""Shared shape of the tables ported from upstream Cluster API's status unit tests (v1.14).

Each case carries the upstream test and case name, the objects that express its inputs and the
status, reason and message upstream expects. A case the engine cannot agree with on purpose (its
input lives only in controller memory or outside the management cluster) names the reason; it
runs as a strict xfail, so it fails the day the engine starts to agree, and is listed in
docs/upstream-differences.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest

from exporter.engine.evaluate_types import Computed

Want = tuple[str, str, str]  # status, reason, message

# The drain report upstream's MachineSet, MachineDeployment and KubeadmControlPlane tables give a
# draining Machine's Deleting condition.
DRAIN = ("Drain not completed yet (started at 2024-10-09T16:13:59Z):\n"
         "* Pods pod-2-deletionTimestamp-set-1, pod-3-to-trigger-eviction-successfully-1: deletionTimestamp "
         "set, but still not removed from the Node\n"
         "* Pod pod-5-to-trigger-eviction-pdb-violated-1: cannot evict pod as it would violate the pod's "
         "disruption budget. The disruption budget pod-5-pdb needs 20 healthy pods and has 20 currently\n"
         "* Pod pod-6-to-trigger-eviction-some-other-error: failed to evict Pod, some other error 1\n"
         "* Pod pod-9-wait-completed: waiting for completion\n"
         "After above Pods have been removed from the Node, the following Pods will be evicted: "
         "pod-7-eviction-later, pod-8-eviction-later")


@dataclass(frozen=True)
class Case:
    test: str  # upstream test function
    name: str  # upstream case name
    run: Callable[[], Computed]
    type: str  # condition type, "counters" or "phase"
    want: Want | dict[str, int | None] | str
    differs: str = ""  # why the engine cannot agree (a deliberate difference), else ""

    @property
    def id(self) -> str:
        return f"{self.test}/{self.name.replace(' ', '-')}"


def params(cases: Sequence[Case]) -> list[object]:
    return [pytest.param(c, id=c.id, marks=[pytest.mark.xfail(reason=c.differs, strict=True)] if c.differs
                         else []) for c in cases]


def check(case: Case) -> None:
    result = case.run()
    if case.type == "phase":
        assert result.phase == case.want
        return
    if case.type == "counters":
        assert isinstance(case.want, dict)
        got = {k: result.counters.get(k) for k in case.want}
        assert got == case.want
        return
    c = result.condition(case.type)
    assert c is not None, f"{case.type} not computed"
    assert (c.status.value, c.reason, c.message) == case.want
