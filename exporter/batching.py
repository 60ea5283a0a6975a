"""When the evaluation loop starts its next pass: a short debounce, longer while changes pour in.

Owns ``Batcher``. Every pass evaluates each dirty group once, however many of its objects
changed since the last pass, so the fewer passes a burst of changes is spread over, the fewer
times each group is evaluated and rendered: a Cluster whose Machines change three times during a
burst costs three evaluations when passes follow each other closely, one when they wait for the
burst to pass. While the store counts more than ``busy_rate`` changes per second, the pass waits
another debounce, for at most ``max_wait`` in all, and starts as soon as the changes stop; at an
ordinary rate of change the pass follows the debounce, as it always did. Owns no knowledge of
what changed or of evaluation itself.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

DEBOUNCE_SECONDS = 0.05
# Four times the sustained rate the exporter is sized for (500 changes/s at fleet size, see
# docs/performance.md): only a burst (a relist, a watch catching up, a fleet-wide rollout) waits.
BUSY_CHANGES_PER_SECOND = 2000.0
# The longest a burst holds a pass back: what the batching adds, at worst, to the time a change
# takes to reach /metrics. The benchmark's burst of 10,000 changes at fleet size takes the exporter
# ~1.4 s to read: with 1 s the pass began before the end of it and a second pass evaluated most
# Clusters again (2-3 passes, ~1,200-1,400 group evaluations for ~950 Clusters, 2,940-3,165
# events/s); with 3 s, one pass and 958 evaluations (3,278/s). The pass still starts as soon as
# the changes stop pouring in.
MAX_WAIT_SECONDS = 2.0
# While a burst holds the pass, how often the wait looks for its end: a look that finds no change
# at all since the last one means the changes stopped (the watch streams are drained), and the
# pass starts then rather than after a whole debounce measured quieter than ``busy_rate``.
QUIET_STEP_SECONDS = 0.01

log = logging.getLogger("exporter.batching")


class Batcher:
    """``await batcher.wait(changes)`` before each pass; ``changes()`` counts the store's changes."""

    def __init__(
        self, debounce: float = DEBOUNCE_SECONDS, busy_rate: float = BUSY_CHANGES_PER_SECOND,
        max_wait: float = MAX_WAIT_SECONDS,
    ) -> None:
        self.debounce, self.busy_rate, self.max_wait = debounce, busy_rate, max_wait

    async def wait(self, changes: Callable[[], int]) -> None:
        started = last_time = time.monotonic()
        first_count = last_count = changes()
        extended = 0
        while True:
            if not extended:
                await asyncio.sleep(self.debounce)
            elif await self._stops_within(changes, last_count, last_time + self.debounce):
                now, count = time.monotonic(), changes()
                break
            now, count = time.monotonic(), changes()
            # The rate is taken over 50 ms at least, whatever the debounce: a handful of changes
            # in a short window is not a burst.
            rate = (count - last_count) / max(now - last_time, DEBOUNCE_SECONDS)
            if rate <= self.busy_rate or now - started >= self.max_wait:
                break
            extended += 1
            last_time, last_count = now, count
        if extended:
            log.debug("evaluation held back by a burst of changes", extra={
                "seconds": round(now - started, 3), "changes": count - first_count})

    @staticmethod
    async def _stops_within(changes: Callable[[], int], count: int, until: float) -> bool:
        """Whether the changes stop before ``until``: a quiet step without any since the last look."""
        while time.monotonic() < until:
            await asyncio.sleep(QUIET_STEP_SECONDS)
            seen = changes()
            if seen == count:
                return True
            count = seen
        return False
