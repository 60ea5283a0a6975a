"""Rounds of bucket rebuilds, one per family at a time, built off the loop by a worker process.

Owns ``Publisher``, the only caller of the renderer's rounds (``take_round``/``take_heaviest``,
``finish_round``): ``publish`` runs a round over a scrape's families and returns what it serves;
``relieve`` starts a round over the heaviest buckets when pending lines pass the renderer's limit,
and makes its caller (the evaluation loop) wait for it past twice the limit, so that a burst of
changes cannot outrun compression. A round's rebuilds go to the worker in batches bounded by the
text they make and the bytes they carry; ``exporter.offload.Worker`` runs them in its process (or
a thread when it cannot). Owns no bucket state and no HTTP.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, deque
from collections.abc import Callable, Collection, Sequence

from exporter.metrics import members
from exporter.metrics.members import Built, Job
from exporter.metrics.renderer import Part, Published, Rebuild, Renderer
from exporter.offload import Worker

log = logging.getLogger("exporter.publisher")

# Text per batch sent to the worker: ~5 ms of its time, ~0.25 MB of jobs out and of members
# back once buckets are compressed. Each batch costs the thread exchanging it a few waits for the
# GIL and the round a trip through the loop, both long while the loop is busy: under churn at
# 100 % a scrape's round over ~220 MB of changed buckets took 3.2-3.6 s with batches of 1 MB and
# one batch ahead against a loop busy without pause, 0.8 s with 4 MB and three ahead
# (docs/performance.md). A scrape's round waits for at most the round ahead of it.
BATCH_BYTES = 4 << 20
# Bytes a batch carries to the worker (base members and pending lines). Under churn a bucket's
# job is its ~4 KB member and a few changed lines; the buckets filled at start-up have no member
# yet and carry their whole text, so this bounds their batches, and the worker's peak with them:
# ~17 MiB with 1 MB, ~19 with 2 MB.
CARRIED_BYTES = 1 << 20
WORKER_MODULE = "exporter.metrics.members"
# A relief round frees pending lines down to this fraction of the limit. Its new members, the
# batches in flight and the lines and members they replace overlap until the allocator's next
# trim: rounds freeing half the limit raised the peak RSS under churn ~10 MiB over rounds of a
# quarter (docs/performance.md).
RELIEF_DOWN_TO = (3, 4)
# Batches of a round started at once (the worker's threads, ``offload.THREADS``, exchange them one
# at a time): the one the round waits for and those queued behind it at the worker's pipe.
IN_FLIGHT = 4


class Publisher:
    """Runs the renderer's rounds, their rebuilds in a worker process, one round per family at a time.

    A round holds the families it serves or may rebuild, each until its last rebuild is installed:
    a round's buckets are built from their bases, so of two rounds over one family the one
    installed last would drop the other's lines. Families are rebuilt smallest first, so a scrape
    of a few families (a ``name[]`` scrape) waits for a full scrape's round only until that round
    is done with them, not for its end; a full scrape waits for every round ahead of it.
    """

    def __init__(self, renderer: Renderer, *, process: bool = True) -> None:
        self.renderer = renderer
        self.worker: Worker[list[Job], list[Built]] = Worker(
            WORKER_MODULE, members.rebuild_all, name="compression worker", process=process)
        # The families a round holds, each with the future its release sets.
        self._held: dict[int, asyncio.Future[None]] = {}
        self._relief: asyncio.Future[None] | None = None
        self._relief_failing = False

    async def start(self) -> None:
        await self.worker.start()

    async def stop(self) -> None:
        # A relief round still running would find the worker gone and log that as its failure:
        # it ends first (a cancelled round gives its lines back).
        relief, self._relief = self._relief, None
        if relief is not None and not relief.done():
            relief.cancel()
            await asyncio.wait({relief})
        await self.worker.stop()

    async def publish(self, names: Collection[str] | None = None) -> Published:
        """What a scrape of ``names`` (None: every family) serves: every change made before now.

        Each family is listed as this round leaves it, before another round may take it, so every
        family is served as of one moment: when this round took its pending lines.
        """
        renderer = self.renderer
        families = renderer.family_indexes(names)
        await self._hold(families)
        parts: dict[int, Part | None] = {}

        def served(i: int) -> None:
            parts[i] = renderer.part(i)

        await self._round(families, renderer.take_round(names), served)
        return Published.of([parts[i] for i in families])

    async def relieve(self) -> None:
        """Compress the heaviest pending lines once past the limit (down to ``RELIEF_DOWN_TO`` of it);
        wait for it past twice the limit."""
        renderer = self.renderer
        limit = renderer.pending_limit()
        if renderer.pending_bytes <= limit:
            return
        if self._relief is None or self._relief.done():
            self._relief = asyncio.ensure_future(self._relieve())
        if renderer.pending_bytes > 2 * limit:
            await asyncio.shield(self._relief)

    async def _relieve(self) -> None:
        try:
            renderer = self.renderer
            families = renderer.family_indexes()  # the heaviest buckets may be anywhere
            await self._hold(families)
            down_to, of = RELIEF_DOWN_TO
            free = renderer.pending_bytes - renderer.pending_limit() * down_to // of
            await self._round(families, renderer.take_heaviest(free) if free > 0 else [])
            self._relief_failing = False
        except Exception:
            # Its buckets keep their pending lines; the next scrape's round or relief takes them.
            if not self._relief_failing:
                log.exception("compressing pending lines failed; the next round tries again")
            self._relief_failing = True

    async def _hold(self, families: Sequence[int]) -> None:
        """Wait until no round holds any of ``families``, then hold them all (in one step)."""
        while busy := {f for i in families if (f := self._held.get(i)) is not None}:
            await asyncio.wait(busy)
        loop = asyncio.get_running_loop()
        for i in families:
            self._held[i] = loop.create_future()

    async def _round(self, families: Sequence[int], rebuilds: Sequence[Rebuild],
                     served: Callable[[int], None] | None = None) -> None:
        """Build and install a round, batch by batch (a batch's jobs are frozen: safe off the loop),
        releasing each of the ``families`` it holds once its rebuilds are installed.

        ``served`` is called for each family just before its release. Each batch is installed as
        it comes back, so the members it replaces can go then rather than every old member of the
        round living beside every new one until its end. The next batch is started while one is
        exchanged, so the worker goes on to it at once; a round that fails or is cancelled gives
        the pending lines of the batches not installed back (one built ahead is not installed).
        """
        held = set(families)

        def release(i: int) -> None:
            if served is not None:
                served(i)
            held.discard(i)
            self._held.pop(i).set_result(None)

        installed = 0
        in_flight: deque[asyncio.Future[None]] = deque()
        started = 0
        try:
            rebuilds = _smallest_family_first(rebuilds)
            left = Counter(r.bucket.family for r in rebuilds)
            batches = self._batches(rebuilds)
            for i in families:
                if not left[i]:
                    release(i)
            for batch in batches:
                # The batches after this one wait at the worker's pipe while it is exchanged: the
                # worker goes on to them at once, not after a trip through the loop, which takes a
                # few ms while an evaluation pass runs (about as long as the worker takes for a batch).
                while started < len(batches) and len(in_flight) < IN_FLIGHT:
                    in_flight.append(asyncio.ensure_future(self._build_batch(batches[started])))
                    started += 1
                await in_flight.popleft()
                self.renderer.finish_round(batch)
                installed += len(batch)
                for r in batch:
                    i = r.bucket.family
                    left[i] -= 1
                    if not left[i]:
                        release(i)
        except BaseException:
            for ahead in in_flight:
                ahead.cancel()  # its thread finishes the exchange; what it built is not installed
                ahead.add_done_callback(_retrieved)
            self.renderer.abandon_round(rebuilds[installed:])
            raise
        finally:
            for i in held:  # a failed round's: the next round over them starts from their bases
                self._held.pop(i).set_result(None)

    @staticmethod
    def _batches(rebuilds: Sequence[Rebuild]) -> list[list[Rebuild]]:
        batches: list[list[Rebuild]] = [[]]
        size = carried = 0
        for r in rebuilds:
            batches[-1].append(r)
            size += r.size
            carried += r.carried
            if size >= BATCH_BYTES or carried >= CARRIED_BYTES:
                batches.append([])
                size = carried = 0
        return [batch for batch in batches if batch]

    async def _build_batch(self, batch: list[Rebuild]) -> None:
        def take(built: list[Built]) -> None:
            for r, b in zip(batch, built, strict=True):
                r.done(b)

        await self.worker.run(lambda: [r.job() for r in batch], take)


def _smallest_family_first(rebuilds: Sequence[Rebuild]) -> list[Rebuild]:
    """The rebuilds grouped by family, the families with the least text to make first."""
    by_family: dict[int, list[Rebuild]] = {}
    for r in rebuilds:
        by_family.setdefault(r.bucket.family, []).append(r)
    groups = sorted(by_family.values(), key=lambda group: sum(r.size for r in group))
    return [r for group in groups for r in group]


def _retrieved(future: asyncio.Future[None]) -> None:
    """Mark the outcome of a batch built ahead of a failed round as seen (it is not used)."""
    if not future.cancelled():
        future.exception()
