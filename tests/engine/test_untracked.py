"""Compiled, the fleet's projections, conditions, Results and renderer entries are outside the
cyclic garbage collector (``mypyc_attr(acyclic=True)``): none of them can be part of a cycle, and
untracked each is 16 bytes smaller and never traversed by a collection (~12 MiB less RSS at 100 %
of the benchmark fleet, docs/performance.md). A class losing the attribute fails here.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from exporter.engine.model import Base, Result
from tests.benchmark.inprocess import load
from tests.conftest import COMPILED

pytestmark = pytest.mark.skipif(not COMPILED, reason="the attribute is the compiler's; pure Python tracks")


def kept_by_the_fleet() -> Iterator[tuple[str, object]]:
    """Each projection, Result and renderer entry of a small benchmark fleet, with what they hold."""
    _, _, pipeline, renderer = load(1, 3)
    results: list[Result] = list(pipeline.previous.values())
    for entry in renderer._entries.values():
        obj: Base = entry.obj
        yield "_Entry", entry
        yield type(obj).__name__, obj
        yield "Meta", obj.meta
        yield from (("OwnerRef", r) for r in obj.meta.owner_refs)
        yield from (("Condition", c) for c in obj.conditions)
        if entry.kept is not None:
            results.append(entry.kept)
    for result in results:
        yield "Result", result
        for c in (*result.computed, *result.reported):
            yield "Condition", c
            yield "ConditionShape", c.shape


def test_the_fleet_and_what_is_computed_for_it_are_not_tracked_by_the_collector() -> None:
    seen: dict[str, int] = {}
    tracked: set[str] = set()
    for name, value in kept_by_the_fleet():
        seen[name] = seen.get(name, 0) + 1
        if gc.is_tracked(value):
            tracked.add(name)
    assert not tracked
    # The walk reached every kind of thing it names, and the provider objects among the kinds.
    assert {"_Entry", "Meta", "OwnerRef", "Condition", "ConditionShape", "Result", "Machine",
            "InfraObject", "BootstrapConfig"} <= set(seen)
