"""Start-up of the evaluation loop: nothing is evaluated while the source is still listing, except
rare progress passes; everything listed is evaluated at once when the source reports sync, and only
then is the pipeline ready."""

from __future__ import annotations

import asyncio
from pathlib import Path

from exporter.app import FilteringSink, Pipeline
from exporter.engine.evaluate import evaluate_all
from exporter.engine.model import is_bare
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
        assert pipeline.stats.evaluations == 0 and len(pipeline.renderer) == 0 and not pipeline.ready
        groups = len(store.all_groups())
        synced[0] = True
        await _until(lambda: pipeline.ready)
        assert pipeline.stats.evaluations == 1 and pipeline.stats.evaluated_groups == groups
        # Ready means every object listed at sync has its Result and is rendered.
        expected = evaluate_all(load(ROOT / "examples").projections, NOW)
        assert pipeline.previous == {r.key: r for r in expected if not is_bare(r)}  # bare: not kept
        assert len(pipeline.renderer) == len(expected)
    finally:
        loop.cancel()


async def test_progress_passes_before_sync_do_not_make_the_pipeline_ready() -> None:
    pipeline, store, synced = _pipeline()
    loop = asyncio.create_task(pipeline.run(debounce=0.001, progress=0.01))
    try:
        _fill(store)
        await _until(lambda: pipeline.stats.evaluations >= 1)  # before sync: a progress pass
        assert len(pipeline.renderer) > 0, "a progress pass renders what was listed so far"
        assert not pipeline.ready
        passes = pipeline.stats.evaluations
        await asyncio.sleep(0.05)
        assert pipeline.stats.evaluations == passes, "nothing changed: no further pass"
        synced[0] = True
        await _until(lambda: pipeline.ready)
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
        passes = pipeline.stats.evaluations
        cluster = next(o for o in load(ROOT / "examples").projections if o.meta.kind == "Cluster")
        store.delete("Cluster", cluster.meta.namespace, cluster.meta.name)
        await _until(lambda: pipeline.stats.evaluations > passes)
        assert cluster.key not in pipeline.previous
    finally:
        loop.cancel()
