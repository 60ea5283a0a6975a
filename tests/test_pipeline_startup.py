"""Start-up of the evaluation loop: nothing is evaluated while the source is still listing, except
rare progress passes; everything listed is evaluated at once when the source reports sync, and only
then is the pipeline ready. The cyclic garbage collector runs on a timer until then."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from exporter import gcpolicy
from exporter.app import FilteringSink, Pipeline
from exporter.engine.evaluate import evaluate_all
from exporter.gcpolicy import manage_gc
from exporter.metrics.renderer import Renderer
from exporter.metrics.selfmetrics import ExporterStats
from exporter.sources.files import load
from exporter.store import Store

ROOT = Path(__file__).resolve().parents[1]
NOW = 1_795_176_000.0


def _pipeline() -> tuple[Pipeline, Store, list[bool]]:
    store = Store()
    pipeline = Pipeline(store, FilteringSink(store), Renderer(), ExporterStats(), lambda _key: True)
    pipeline.clock = lambda: NOW
    synced = [False]
    pipeline.source_synced = lambda: synced[0]
    return pipeline, store, synced


async def _until(check, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.002)


def _fill(store: Store) -> None:
    objects = load(ROOT / "examples").projections
    by_kind: dict[str, list] = {}
    for obj in objects:
        by_kind.setdefault(obj.meta.kind, []).append(obj)
    for kind, objs in by_kind.items():
        store.replace(kind, objs)


async def test_nothing_is_evaluated_before_sync_then_everything_at_once() -> None:
    pipeline, store, synced = _pipeline()
    loop = asyncio.create_task(pipeline.run(debounce=0.001, progress=3600))
    try:
        _fill(store)
        await asyncio.sleep(0.05)  # many debounce periods
        assert pipeline.passes == 0 and len(pipeline.renderer) == 0 and not pipeline.ready
        groups = len(store.all_groups())
        synced[0] = True
        await _until(lambda: pipeline.ready)
        assert pipeline.passes == 1 and pipeline.stats.evaluated_groups == groups
        assert pipeline.progress_passes == 0
        # Ready means every object listed at sync has its Result and is rendered.
        expected = evaluate_all(load(ROOT / "examples").projections, NOW)
        assert pipeline.previous == {r.key: r for r in expected}
        assert len(pipeline.renderer) == len(pipeline.previous)
    finally:
        loop.cancel()


async def test_progress_passes_before_sync_do_not_make_the_pipeline_ready() -> None:
    pipeline, store, synced = _pipeline()
    loop = asyncio.create_task(pipeline.run(debounce=0.001, progress=0.01))
    try:
        _fill(store)
        await _until(lambda: pipeline.progress_passes >= 1)
        assert len(pipeline.renderer) > 0, "a progress pass renders what was listed so far"
        assert not pipeline.ready
        passes = pipeline.passes
        await asyncio.sleep(0.05)
        assert pipeline.passes == passes, "nothing changed: no further pass"
        synced[0] = True
        await _until(lambda: pipeline.ready)
        assert pipeline.progress_passes == passes
    finally:
        loop.cancel()


async def test_after_the_first_sync_changes_are_evaluated_even_when_the_source_is_not_synced() -> None:
    """A resource found later (an InfraMachinePool kind) unsyncs the source; events keep flowing."""
    pipeline, store, synced = _pipeline()
    synced[0] = True
    loop = asyncio.create_task(pipeline.run(debounce=0.001, progress=3600))
    try:
        _fill(store)
        await _until(lambda: pipeline.ready)
        synced[0] = False
        passes = pipeline.passes
        cluster = next(o for o in load(ROOT / "examples").projections if o.meta.kind == "Cluster")
        store.delete("Cluster", cluster.meta.namespace, cluster.meta.name)
        await _until(lambda: pipeline.passes > passes)
        assert cluster.key not in pipeline.previous
    finally:
        loop.cancel()


def _recording_collect(calls: list[str]) -> Callable[..., int]:
    """A stand-in for gc.collect that records "young" (generation 0) or "collect" (in full)."""
    def collect(*args: int) -> int:
        calls.append("young" if args == (0,) else "collect")
        return 0
    return collect


async def test_gc_collects_on_a_timer_until_ready_then_freezes_and_refreezes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(gcpolicy.gc, "collect", _recording_collect(calls))
    monkeypatch.setattr(gcpolicy.gc, "freeze", lambda: calls.append("freeze"))
    ready = [False]
    assert gc.isenabled()
    thresholds = gc.get_threshold()
    task = asyncio.create_task(manage_gc(lambda: ready[0], interval=0.01, refreeze=0.05))
    try:
        await _until(lambda: calls.count("collect") >= 2)
        assert not gc.isenabled()  # no automatic collection while the fleet loads
        assert "freeze" not in calls
        ready[0] = True
        await _until(lambda: "freeze" in calls)
        await asyncio.sleep(0)
        assert gc.isenabled()
        # The older generations: collected by the task only.
        assert gc.get_threshold()[1:] == (gcpolicy.NEVER, gcpolicy.NEVER)
        at_ready = len(calls)
        assert calls[-1] == "freeze"
        # Later: what survived since is collected in full before it is frozen too, again and again,
        # and the task never collects the young generation alone.
        await _until(lambda: calls[at_ready:].count("freeze") >= 2)
        assert calls[at_ready:at_ready + 4] == ["collect", "freeze", "collect", "freeze"]
        assert "young" not in calls
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        gc.enable()
    assert gc.get_threshold() == thresholds  # restored when the task ends


async def test_gc_refreezes_on_its_timer_and_not_before(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, float]] = []
    monkeypatch.setattr(gcpolicy.gc, "collect", lambda *a: calls.append(("collect", time.monotonic())) or 0)
    monkeypatch.setattr(gcpolicy.gc, "freeze", lambda: calls.append(("freeze", time.monotonic())))
    started = time.monotonic()
    task = asyncio.create_task(manage_gc(lambda: True, refreeze=0.1))
    try:
        await _until(lambda: [c for c, _ in calls].count("freeze") >= 3)
        assert [c for c, _ in calls[:5]] == ["freeze", "collect", "freeze", "collect", "freeze"]
        # ready at once: the fleet is frozen at once, then a full collection every 0.1 s
        assert calls[0][1] - started < 0.05
        assert calls[1][1] - calls[0][1] >= 0.1 and calls[3][1] - calls[1][1] >= 0.1
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        gc.enable()
