"""Cooperative time slices: how long-running work on the event loop lets other tasks in.

Owns ``TimeSlice``. Evaluation passes, list pages, buffered watch events and /metrics writes can
each keep the loop busy for much longer than a probe or a scrape should wait; each calls
``pause()`` between items, which suspends only once its slice is used up. Owns no knowledge of
what the work is.
"""

from __future__ import annotations

import asyncio
import time

# The slice every long stretch of work on the loop uses. Answering a request takes the loop
# several iterations (read, parse, run the handler, write), and under churn each iteration runs a
# slice of every busy task (watch stream, evaluation pass, scrape writer), so the slice bounds how
# long a probe waits; a yield costs a few per cent of the work at this slice (docs/performance.md).
SLICE_SECONDS = 0.002


class TimeSlice:
    """``await slice.pause()`` between items: yields to the loop once ``seconds`` have passed."""

    __slots__ = ("seconds", "started")

    def __init__(self, seconds: float = SLICE_SECONDS) -> None:
        self.seconds = seconds
        self.started = time.perf_counter()

    async def pause(self) -> None:
        # Awaiting a coroutine that does not suspend costs no loop iteration: only a used-up
        # slice actually gives way.
        if time.perf_counter() - self.started > self.seconds:
            await asyncio.sleep(0)
            self.started = time.perf_counter()
