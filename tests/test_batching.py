"""The evaluation loop's batching: a pass follows the debounce at an ordinary rate of change, waits
while changes pour in, and never longer than its cap."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from exporter.batching import Batcher

HELD_BACK = "evaluation held back by a burst of changes"


def _held_back(caplog: pytest.LogCaptureFixture) -> bool:
    return any(r.getMessage() == HELD_BACK for r in caplog.records)


@pytest.fixture(autouse=True)
def _debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="exporter.batching")


class Changes:
    """A change counter that a task bumps ``per_tick`` times every millisecond while ``busy``."""

    def __init__(self, per_tick: int) -> None:
        self.count = 0
        self.per_tick = per_tick
        self.busy = True

    async def pour(self) -> None:
        while self.busy:
            self.count += self.per_tick
            await asyncio.sleep(0.001)


async def _timed_wait(batcher: Batcher, changes: Changes) -> float:
    started = time.monotonic()
    await batcher.wait(lambda: changes.count)
    return time.monotonic() - started


async def _wait_while_pouring(batcher: Batcher, per_tick: int) -> float:
    """How long ``batcher.wait`` takes while changes keep pouring in at ``per_tick`` a millisecond."""
    changes = Changes(per_tick)
    pouring = asyncio.create_task(changes.pour())
    try:
        return await _timed_wait(batcher, changes)
    finally:
        changes.busy = False
        await pouring


async def test_an_ordinary_rate_waits_one_debounce(caplog: pytest.LogCaptureFixture) -> None:
    batcher = Batcher(debounce=0.02, busy_rate=100_000, max_wait=1.0)
    elapsed = await _wait_while_pouring(batcher, per_tick=1)  # at most ~1,000 per second
    assert not _held_back(caplog), "one debounce, never extended"
    assert elapsed >= 0.02


async def test_a_burst_holds_the_pass_back_until_the_cap(caplog: pytest.LogCaptureFixture) -> None:
    batcher = Batcher(debounce=0.01, busy_rate=1_000, max_wait=0.15)
    # tens of thousands per second, for as long as it takes: the cap ends the wait, or the
    # deadline fails the test
    elapsed = await asyncio.wait_for(_wait_while_pouring(batcher, per_tick=50), timeout=5.0)
    assert _held_back(caplog)
    assert elapsed >= 0.15


async def test_the_pass_follows_a_burst_soon_after_it_ends(caplog: pytest.LogCaptureFixture) -> None:
    batcher = Batcher(debounce=0.01, busy_rate=1_000, max_wait=5.0)
    changes = Changes(per_tick=50)
    pouring = asyncio.create_task(changes.pour())

    async def end_burst() -> None:
        await asyncio.sleep(0.1)
        changes.busy = False

    ender = asyncio.create_task(end_burst())
    # The first quiet debounce ends the wait, long before the 5 s cap: the deadline says so.
    elapsed = await asyncio.wait_for(_timed_wait(batcher, changes), timeout=2.5)
    await ender
    await pouring
    assert _held_back(caplog)
    assert elapsed >= 0.1


async def test_the_evaluation_loop_waits_out_a_burst_then_evaluates_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Wired into the pipeline: a change made during a burst is evaluated after the burst, in one pass."""
    from tests.test_pipeline_startup import _fill, _pipeline, _until

    pipeline, store, synced = _pipeline()
    synced[0] = True
    # Any steady stream of changes is a burst here: the test's loop may be starved of CPU (a
    # loaded machine), and a rate threshold it must outpace would make the test time-sensitive.
    pipeline.batcher = Batcher(busy_rate=1, max_wait=10.0)
    loop = asyncio.create_task(pipeline.run(debounce=0.01, progress=3600))
    try:
        _fill(store)
        await _until(lambda: pipeline.ready)
        passes = pipeline.stats.evaluations
        cluster = next(o for o in store.all_groups() if o[0] == "capi")
        namespace, name = cluster[1], cluster[2]
        store.delete("Cluster", namespace, name)
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:  # a burst: ~10,000 changes per second
            store.generation += 10
            await asyncio.sleep(0.001)
        assert pipeline.stats.evaluations == passes, "no pass while changes pour in"
        await _until(lambda: pipeline.stats.evaluations > passes)
        assert _held_back(caplog)
        assert ("Cluster", namespace, name) not in pipeline.previous
    finally:
        loop.cancel()


async def test_a_held_pass_starts_within_a_quiet_step_of_the_burst_s_end(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A debounce of 0.5 s: waiting for a whole debounce measured quiet would take 0.5-1 s after
    # the end; the first look without any change, QUIET_STEP_SECONDS later, ends the wait.
    batcher = Batcher(debounce=0.5, busy_rate=1_000, max_wait=10.0)
    changes = Changes(per_tick=50)
    pouring = asyncio.create_task(changes.pour())
    ended: list[float] = []

    async def end_burst() -> None:
        await asyncio.sleep(0.7)  # past the first debounce: the wait is extended by then
        changes.busy = False
        ended.append(time.monotonic())

    ender = asyncio.create_task(end_burst())
    await asyncio.wait_for(_timed_wait(batcher, changes), timeout=5.0)
    after_end = time.monotonic() - ended[0]
    await ender
    await pouring
    assert _held_back(caplog)
    assert after_end < 0.25, after_end
