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
