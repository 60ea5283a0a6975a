"""Gzip members built off the event loop and off the GIL, in a worker process.

Owns ``MemberBuilder``. Rebuilding a dirty bucket is mostly decompressing and compressing, which
release the GIL, but a thread doing it must take the GIL back three times per bucket, and while
the loop thread is busy with events each of those waits lasts a switch interval: with thousands
of dirty buckets under churn, a gzip scrape spent seconds waiting rather than compressing. A child
process (``python -m exporter.metrics.members``) does the byte work on the other core with no
GIL to share; the loop only makes each bucket's plan (a few microseconds, time-sliced) and sends
batches over a pipe.

If the worker cannot start or dies, batches are built in a thread as before (logged once), and a
new worker is tried again after ``RETRY_SECONDS``. Owns no knowledge of buckets or families:
it builds what the ``Buildable``s it is given plan.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

import exporter
from exporter.metrics import members
from exporter.metrics.members import Plan
from exporter.timeslice import TimeSlice

log = logging.getLogger("exporter.offload")

# Text per batch sent to the worker: ~5-10 ms of its time. A scrape's batch waits for at most
# one batch of the background rebuilds ahead of it.
BATCH_BYTES = 4 << 20
RETRY_SECONDS = 60.0
SWITCH_INTERVAL = 0.0005  # seconds; the GIL switch interval while a thread builds members


class Buildable(Protocol):
    """Something whose gzip member is built from a plan (a bucket rebuild)."""

    @property
    def size(self) -> int: ...  # bytes of text the plan makes

    def plan(self) -> Plan: ...

    def done(self, member: bytes) -> None: ...


class MemberBuilder:
    """Builds members for batches of ``Buildable``s: in a worker process, or in a thread."""

    def __init__(self, *, process: bool = True) -> None:
        self.use_process = process
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()  # one batch on the pipe at a time
        self._retry_at = 0.0
        self.worker_starts = 0
        self.worker_failures = 0

    @property
    def worker_pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    async def start(self) -> None:
        """Start the worker now rather than at the first batch (no-op without processes)."""
        if self.use_process:
            async with self._lock:
                await self._ensure_worker()

    async def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()  # the worker ends at the end of its input
        try:
            await asyncio.wait_for(proc.wait(), 5.0)
        except TimeoutError:
            proc.kill()
            await proc.wait()

    async def build(self, items: Sequence[Buildable]) -> None:
        """Build the member of every item (``done`` is called on each), batch by batch."""
        batch: list[Buildable] = []
        plans: list[Plan] = []
        size = 0
        time_slice = TimeSlice()
        for item in items:
            batch.append(item)
            plans.append(item.plan())
            size += item.size
            if size >= BATCH_BYTES:
                await self._finish(batch, plans)
                batch, plans, size = [], [], 0
                time_slice = TimeSlice()
            await time_slice.pause()
        if batch:
            await self._finish(batch, plans)

    async def _finish(self, batch: list[Buildable], plans: list[Plan]) -> None:
        built = await self._run(plans)
        for item, member in zip(batch, built, strict=True):
            item.done(member)

    async def _run(self, plans: list[Plan]) -> list[bytes]:
        if self.use_process:
            # Shielded: a scrape whose client went away must not leave a reply unread on the
            # pipe, where the next batch would take it for its own.
            built = await asyncio.shield(asyncio.ensure_future(self._ask(plans)))
            if built is not None:
                return built
        with _prompt_gil_handoff():
            return await asyncio.to_thread(members.build_all, plans)

    async def _ask(self, plans: list[Plan]) -> list[bytes] | None:
        async with self._lock:
            if not await self._ensure_worker():
                return None
            return await self._ask_worker(plans)

    async def _ensure_worker(self) -> bool:
        if not self.use_process:
            return False
        if self._proc is not None:
            if self._proc.returncode is None:
                return True
            self._failed("the compression worker stopped", RuntimeError(f"exit code {self._proc.returncode}"))
            return False
        if time.monotonic() < self._retry_at:
            return False
        try:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "exporter.metrics.members",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=_worker_env(),
            )
        except OSError as exc:
            self._failed("cannot start the compression worker", exc)
            return False
        self.worker_starts += 1
        log.info("compression worker started", extra={"pid": self._proc.pid})
        return True

    async def _ask_worker(self, plans: list[Plan]) -> list[bytes] | None:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        data = pickle.dumps(plans, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            proc.stdin.write(len(data).to_bytes(8, "little"))
            proc.stdin.write(data)
            await proc.stdin.drain()
            head = await proc.stdout.readexactly(8)
            reply = pickle.loads(await proc.stdout.readexactly(int.from_bytes(head, "little")))
        except (OSError, asyncio.IncompleteReadError, pickle.UnpicklingError) as exc:
            self._failed("the compression worker stopped", exc)
            return None
        if isinstance(reply, str) or len(reply) != len(plans):
            # The worker is fine, the batch is not: build it here, where the error will show.
            log.warning("the compression worker could not build a batch", extra={"error": str(reply)[:200]})
            return None
        return list(reply)

    def _failed(self, message: str, exc: BaseException) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            proc.kill()
        self.worker_failures += 1
        self._retry_at = time.monotonic() + RETRY_SECONDS
        log.error(message, extra={"error": repr(exc), "fallback": "compressing in a thread",
                                  "retry_seconds": RETRY_SECONDS})


def _worker_env() -> dict[str, str]:
    # The worker imports the very package this process runs, wherever it was loaded from.
    root = str(Path(exporter.__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}


_handoffs = 0  # thread builds in flight (event loop thread only)
_default_switch_interval = sys.getswitchinterval()


@contextlib.contextmanager
def _prompt_gil_handoff() -> Iterator[None]:
    """A short GIL switch interval while a thread builds members (the fallback).

    Each compression releases the GIL; to take it back, the thread waits for the switch interval
    (5 ms by default) whenever the loop thread is busy evaluating: with hundreds of dirty buckets
    that waiting, not the compression, made scrapes under churn take seconds (2.5 s instead of
    45 ms for 233 buckets in a microbenchmark with a busy loop thread; ~0.1 s at 0.5 ms).
    """
    global _handoffs
    if _handoffs == 0:
        sys.setswitchinterval(min(SWITCH_INTERVAL, _default_switch_interval))
    _handoffs += 1
    try:
        yield
    finally:
        _handoffs -= 1
        if _handoffs == 0:
            sys.setswitchinterval(_default_switch_interval)
