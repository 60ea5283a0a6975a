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
POLL_SECONDS = 0.05  # how often readiness is checked meanwhile
# Once ready, everything not frozen is collected in full and frozen in turn every
# REFREEZE_SECONDS, so each object that survives is traversed once. Before, the task collected the
# young generation every 50 ms and everything after 4 of those (each survivor traversed twice),
# and before that through the middle and oldest generations (three times); on a fixed 10-minute
# timer alone the full collection stopped the loop for ~1.5 s under churn (every object the churn
# had replaced in those 10 minutes). The automatic young threshold stays as it was: under churn
# most new objects replace old ones, so allocations minus deallocations (what it counts) stay low
# and it rarely fires; the timer bounds what a collection has to traverse instead (~0.2 s of
# churn: 11-16 ms per collection at 500 changes/s on the benchmark's fleet).
REFREEZE_SECONDS = 0.2
NEVER = 1 << 30  # a collection threshold no count reaches


async def manage_gc(ready: Callable[[], bool], interval: float = DURING_SYNC_SECONDS,
                    refreeze: float = REFREEZE_SECONDS) -> None:
    """Hold automatic collection until ``ready()``, then freeze the loaded fleet and keep it frozen.

    Until ready the heap only grows: every page's decoded JSON survives young collections while
    it is projected, and the growth kept triggering full collections over everything held so far
    (about a third of the start-up CPU on a large hub). A collection every ``interval`` (spaced
    out as they get slower) still bounds the cycles aiohttp or a retrying list leave behind.

    At ready ``gc.freeze()`` moves every object to the permanent generation, which collections
    skip; objects still die by reference counting when updates replace them. From then on the
    older generations are never collected automatically: under churn the objects that replaced
    frozen ones would pile up there, and a full collection over them stops the loop for as long
    as they took to pile up. Instead, every ``refreeze`` seconds everything not frozen is
    collected in full (so no cycle is frozen alive, and cyclic garbage waits at most that long)
    and frozen in turn: the pause stays proportional to a fraction of a second of churn, whatever
    the rate.
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
    gc.set_threshold(young, NEVER, NEVER)
    try:
        while True:
            await asyncio.sleep(refreeze)
            started = time.monotonic()
            collected = gc.collect()
            gc.freeze()
            log.debug("garbage collector: refrozen", extra={
                "collected": collected, "seconds": round(time.monotonic() - started, 4)})
    finally:
        gc.set_threshold(young, middle, oldest)
