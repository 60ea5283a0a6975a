"""Gzip members of dirty buckets built in batches, off the loop, by a ``Worker``.

Owns ``MemberBuilder``: it cuts the buckets to rebuild into batches by the text they make and
carry, and has each batch rebuilt by ``members.rebuild_all`` in the worker process that runs
``exporter.metrics.members`` (or a thread, when it cannot run). Owns no process or thread handling
(``exporter.offload``) and no bucket state (the renderer's ``Buildable``s).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from exporter.metrics import members
from exporter.metrics.members import Built, Job
from exporter.offload import Worker

# Text per batch sent to the worker: ~3-4 ms of its time, ~0.12 MB of jobs out and of members
# back once buckets are compressed. The loop awaits once per batch; a scrape's batch waits for at
# most one batch of the compaction ahead of it. Larger batches cost the worker's memory
# (docs/performance.md).
BATCH_BYTES = 2 << 20
# Bytes a batch carries to the worker (base members and pending lines). Under churn a bucket's
# job is its ~4 KB member and a few changed lines; the buckets filled at start-up have no member
# yet and carry their whole text, which bounds the worker's peak.
CARRIED_BYTES = 2 << 20
WORKER_MODULE = "exporter.metrics.members"


class Buildable(Protocol):
    """Something rebuilt by ``members.rebuild`` (a bucket)."""

    @property
    def size(self) -> int: ...  # bytes of text the rebuild makes

    @property
    def carried(self) -> int: ...  # bytes its job carries: base member and pending lines

    def job(self) -> Job: ...

    def done(self, built: Built) -> object: ...


B = TypeVar("B", bound=Buildable)


class MemberBuilder(Worker[list[Job], list[Built]]):
    """Builds members for batches of ``Buildable``s: in a worker process, or in a thread."""

    def __init__(self, *, process: bool = True) -> None:
        super().__init__(WORKER_MODULE, members.rebuild_all, name="compression worker", process=process)

    async def build(self, items: Sequence[B], after_batch: Callable[[list[B]], object] | None = None) -> None:
        """Build the member of every item (``done`` is called on each), batch by batch.

        Each item's job is taken in the batch's thread (jobs are frozen: safe off the loop).
        ``after_batch`` is called on the loop with each batch once it is built.
        """
        batch: list[B] = []
        size = carried = 0
        for item in items:
            batch.append(item)
            size += item.size
            carried += item.carried
            if size >= BATCH_BYTES or carried >= CARRIED_BYTES:
                await self._build_batch(batch, after_batch)
                batch, size, carried = [], 0, 0
        if batch:
            await self._build_batch(batch, after_batch)

    async def _build_batch(self, batch: list[B], after_batch: Callable[[list[B]], object] | None) -> None:
        def take(built: list[Built]) -> None:
            for item, rebuilt in zip(batch, built, strict=True):
                item.done(rebuilt)

        await self.run(lambda: [item.job() for item in batch], take)
        if after_batch is not None:
            after_batch(batch)
