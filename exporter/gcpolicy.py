"""When the cyclic garbage collector runs: on a timer while the fleet is first loaded, then only
over what changed since the fleet was loaded.

Owns ``manage_gc``, a task the composition root runs for the life of the process. The exporter's
data are hundreds of thousands to millions of small acyclic objects (projections, Results,
conditions) that die by reference counting; the collector finds almost no garbage among them, yet
a full collection traverses all of them: ~0.5 s with the loop stopped for a 34,000-object fleet.
Owns no knowledge of what the objects are.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Callable

log = logging.getLogger("exporter.gc")

# How often the collector runs while the first lists are absorbed, and how far apart collections
# are kept relative to their own duration as the heap grows.
DURING_SYNC_SECONDS = 5.0
SPACING = 20.0
# Once ready, what survived since the last freeze is collected and frozen in turn when the middle
# generation has been collected OLDEST_INTAKE times since (each of those moves its survivors, at
# most a few thousand objects, to the oldest generation), or after REFREEZE_SECONDS at the latest.
# At 100 % of the benchmark fleet one such collection costs ~5-10 ms of stopped loop per intake,
# and each has a cost of its own (at an intake of 2, ~12 collections per 10 s of 500 changes/s,
# ~20 ms each, and slower scrapes than without them): 4 keeps each under ~50 ms at half the count.
# With a fixed 10-minute timer alone it was one collection of ~1.5 s (every object the churn had
# replaced in those 10 minutes).
OLDEST_INTAKE = 4
REFREEZE_SECONDS = 600.0
NEVER = 1 << 30  # a collection threshold no count reaches
# Young collections between two of the middle generation. Under churn at fleet size the middle
# generation's collections were the longest pauses left (~55 ms at the default 10, ~23 ms at 4):
# what it holds grows with this count.
MIDDLE = 4
POLL_SECONDS = 0.05


async def manage_gc(ready: Callable[[], bool], interval: float = DURING_SYNC_SECONDS,
                    refreeze: float = REFREEZE_SECONDS, intake: int = OLDEST_INTAKE) -> None:
    """Hold automatic collection until ``ready()``, then freeze the loaded fleet and keep it frozen.

    Until ready the heap only grows: every page's decoded JSON survives young collections while
    it is projected, and the growth kept triggering full collections over everything held so far
    (about a third of the start-up CPU on a large hub). A collection every ``interval`` (spaced
    out as they get slower) still bounds the cycles aiohttp or a retrying list leave behind.

    At ready ``gc.freeze()`` moves every object to the permanent generation, which collections
    skip; objects still die by reference counting when updates replace them. From then on the
    young generations are collected automatically (the middle one more often than by default, to
    keep each of its collections short), the oldest one never by itself: under churn the objects
    that replaced frozen ones pile up there, and a full collection over them stops the loop for as
    long as they took to pile up (~0.4 s by the automatic threshold, ~1.5 s after ten minutes of
    churn at fleet size). Instead, once ``intake`` middle-generation collections have fed it, or
    ``refreeze`` seconds after the last time, the oldest generation is collected in full (so no
    cycle is frozen alive, and cyclic garbage waits at most that long) and frozen in turn: the
    pause stays proportional to a second or so of churn, whatever the rate.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        next_collection = time.monotonic() + interval
        while not ready():
            await asyncio.sleep(min(interval, POLL_SECONDS))
            if time.monotonic() >= next_collection and not ready():
                started = time.monotonic()
                gc.collect()
                ended = time.monotonic()
                next_collection = ended + max(interval, SPACING * (ended - started))
        gc.freeze()
        # Not gc.get_freeze_count(): it walks the permanent generation's list, well over 100 ms
        # of cache misses on a fleet-sized heap after churn, with the loop stopped.
        log.debug("garbage collector: fleet frozen")
    finally:
        if was_enabled:
            gc.enable()
    young, middle, oldest = gc.get_threshold()
    gc.set_threshold(young, min(middle, MIDDLE), NEVER)
    try:
        last = time.monotonic()
        while True:
            await asyncio.sleep(POLL_SECONDS)
            # get_count()[2]: middle-generation collections since the oldest one was last collected.
            if gc.get_count()[2] < intake and time.monotonic() - last < refreeze:
                continue
            started = time.monotonic()
            collected = gc.collect()
            gc.freeze()
            last = time.monotonic()
            log.debug("garbage collector: refrozen", extra={
                "collected": collected, "seconds": round(last - started, 3)})
    finally:
        gc.set_threshold(young, middle, oldest)
