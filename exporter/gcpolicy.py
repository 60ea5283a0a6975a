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
# Once ready the task collects the young generation every POLL_SECONDS: under churn most new
# objects replace old ones, so allocations minus deallocations (what the automatic threshold
# counts) stay low while the young generation fills with survivors; a benchmark run at 500
# changes/s found 10,000-55,000 objects in it at its automatic collections, 10-60 ms each. What
# survives is collected in full and frozen in turn once FULL_AFTER young collections have fed it,
# or after REFREEZE_SECONDS at the latest: each survivor is traversed twice (young, then full)
# instead of three times through the middle and oldest generations, and a full collection covers
# ~0.2 s of churn: after 10 young collections (~0.5 s) they took 10-55 ms at 500 changes/s in the
# benchmark, the longest stalls of its churn. With a fixed 10-minute timer alone it was one
# collection of ~1.5 s (every object the churn had replaced in those 10 minutes).
FULL_AFTER = 4
REFREEZE_SECONDS = 600.0
NEVER = 1 << 30  # a collection threshold no count reaches
POLL_SECONDS = 0.05


async def manage_gc(ready: Callable[[], bool], interval: float = DURING_SYNC_SECONDS,
                    refreeze: float = REFREEZE_SECONDS, intake: int = FULL_AFTER) -> None:
    """Hold automatic collection until ``ready()``, then freeze the loaded fleet and keep it frozen.

    Until ready the heap only grows: every page's decoded JSON survives young collections while
    it is projected, and the growth kept triggering full collections over everything held so far
    (about a third of the start-up CPU on a large hub). A collection every ``interval`` (spaced
    out as they get slower) still bounds the cycles aiohttp or a retrying list leave behind.

    At ready ``gc.freeze()`` moves every object to the permanent generation, which collections
    skip; objects still die by reference counting when updates replace them. From then on the
    young generation is collected every ``POLL_SECONDS`` (and automatically, as before, when
    allocations outrun deallocations), the older ones never by themselves: under churn the objects
    that replaced frozen ones pile up there, and a full collection over them stops the loop for as
    long as they took to pile up (~0.4 s by the automatic thresholds, ~1.5 s after ten minutes of
    churn at fleet size). Instead, once ``intake`` young collections have fed them, or
    ``refreeze`` seconds after the last time, everything not frozen is collected in full (so no
    cycle is frozen alive, and cyclic garbage waits at most that long) and frozen in turn: the
    pause stays proportional to a fraction of a second of churn, whatever the rate.
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
        last = time.monotonic()
        while True:
            await asyncio.sleep(POLL_SECONDS)
            # get_count()[1]: young collections since the last collection of an older generation.
            if gc.get_count()[1] < intake and time.monotonic() - last < refreeze:
                gc.collect(0)
                continue
            started = time.monotonic()
            collected = gc.collect()
            gc.freeze()
            last = time.monotonic()
            log.debug("garbage collector: refrozen", extra={
                "collected": collected, "seconds": round(last - started, 3)})
    finally:
        gc.set_threshold(young, middle, oldest)
