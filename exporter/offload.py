"""Gzip members built off the event loop and off the GIL, in a worker process.

Owns ``MemberBuilder``. Rebuilding a dirty bucket is mostly decompressing and compressing, which
release the GIL, but a thread doing it must take the GIL back three times per bucket, and while
the loop thread is busy with events each of those waits lasts a switch interval: with thousands
of dirty buckets under churn, a gzip scrape spent seconds waiting rather than compressing. A child
process (``python -m exporter.metrics.members``) plans each rebuild and does the byte work on
the other core with no GIL to share; a thread of this process exchanges batches of what the
buckets hold with it over a pipe, with a few GIL hand-offs per batch rather than per bucket.
(Planning in that thread, ~5 % of the exporter's samples in a burst at fleet size, was time the
thread held the GIL from the loop.)

If the worker cannot start, dies, or does not answer a batch within ``REPLY_SECONDS`` (stopped,
swapped out, wedged), batches are built in a thread as before (logged once; a worker that timed
out is killed), and a new worker is tried again after ``RETRY_SECONDS``. A batch never waits more
than ``REPLY_SECONDS`` for another batch's exchange either: it is built in a thread instead.
Batches run on the builder's own threads, never the loop's default executor, so a stuck
exchange cannot starve the files source or anything else that uses it. Owns no knowledge of
buckets or families: it rebuilds what the ``Buildable``s it is given hold.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import pickle
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol, TypeVar

import exporter
from exporter.metrics import members
from exporter.metrics.members import Built, Job

log = logging.getLogger("exporter.offload")

# Text per batch sent to the worker: ~3-4 ms of its time, ~0.12 MB of jobs out and of members
# back once buckets are compressed. The loop awaits once per batch; a scrape's batch waits for at
# most one batch of the compaction ahead of it. Larger batches cost the worker's memory: 8 MB
# batches under churn took it from ~16 to ~24-26 MiB resident, 4 MB ones to ~21 MiB, 2 MB ones
# to ~19 MiB.
BATCH_BYTES = 2 << 20
# Bytes a batch carries to the worker (base members and pending lines). Under churn a bucket's
# job is its ~4 KB member and a few changed lines, and a batch of 4 MB of text carries ~0.5 MB; the
# buckets filled at start-up have no member yet and carry their whole text. 8 MB of those took
# the worker from ~16 to ~35 MiB resident, the highest it ever was in the benchmark at fleet size.
CARRIED_BYTES = 2 << 20
PIPE_BYTES = 1 << 20
RETRY_SECONDS = 60.0
# The longest a batch waits for the worker (its exchange, or another batch's ahead of it): a
# batch takes the worker ~3-4 ms, so this is only reached when it is stopped or wedged.
REPLY_SECONDS = 5.0
BUILD_THREADS = 4  # batches in flight at once (scrapes and the compaction)
SWITCH_INTERVAL = 0.0005  # seconds; the GIL switch interval while a thread builds members


class Buildable(Protocol):
    """Something rebuilt by ``members.rebuild`` (a bucket)."""

    @property
    def size(self) -> int: ...  # bytes of text the rebuild makes

    @property
    def carried(self) -> int: ...  # bytes its job carries: base member and pending lines

    def job(self) -> Job: ...

    def done(self, built: Built) -> object: ...


B = TypeVar("B", bound=Buildable)


class MemberBuilder:
    """Builds members for batches of ``Buildable``s: in a worker process, or in a thread.

    Each batch is handled in one thread call: take every item's job (they are frozen: safe off
    the loop), send the jobs, wait, read the rebuilt buckets, ``done`` each item. The loop awaits once per
    batch. Driving the pipe from the loop instead made a batch take a loop iteration per 64 KiB
    written or 256 KiB read, and under churn an iteration runs a slice of every busy task: a
    scrape's ~20 MB each way took seconds.
    """

    def __init__(self, *, process: bool = True) -> None:
        self.use_process = process
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()  # one batch on the pipe at a time, whoever awaits it
        self._retry_at = 0.0
        self.worker_starts = 0
        self.worker_failures = 0
        self.reply_seconds = REPLY_SECONDS
        self._pool = ThreadPoolExecutor(BUILD_THREADS, thread_name_prefix="members")

    @property
    def worker_pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None else None

    @property
    def busy(self) -> bool:
        """A batch is being exchanged with the worker."""
        return self._lock.locked()

    async def start(self) -> None:
        """Start the worker now rather than at the first batch (no-op without processes)."""
        if self.use_process:
            await asyncio.to_thread(self._locked_ensure_worker)

    async def stop(self) -> None:
        await asyncio.to_thread(self._stop)

    def _stop(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        # A stuck exchange times out by itself; not waiting past that kills the worker under it.
        acquired = self._lock.acquire(timeout=self.reply_seconds)
        proc, self._proc = self._proc, None
        if acquired:
            self._lock.release()
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()  # the worker ends at the end of its input
        try:
            proc.wait(5.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    async def build(self, items: Sequence[B], after_batch: Callable[[list[B]], object] | None = None) -> None:
        """Build the member of every item (``done`` is called on each), batch by batch.

        ``after_batch`` is called on the loop with each batch once it is built.
        """
        batch: list[B] = []
        size = carried = 0
        for item in items:
            batch.append(item)
            size += item.size
            carried += item.carried
            if size >= BATCH_BYTES or carried >= CARRIED_BYTES:
                await self._build_batch(batch)
                if after_batch is not None:
                    after_batch(batch)
                batch, size, carried = [], 0, 0
        if batch:
            await self._build_batch(batch)
            if after_batch is not None:
                after_batch(batch)

    async def _build_batch(self, batch: Sequence[Buildable]) -> None:
        # A cancelled caller leaves the thread to finish the exchange under the lock: the pipe
        # never holds a reply the next batch would take for its own.
        with _prompt_gil_handoff():
            await asyncio.get_running_loop().run_in_executor(self._pool, self._build_in_thread, batch)

    def _build_in_thread(self, batch: Sequence[Buildable]) -> None:
        jobs = [item.job() for item in batch]
        built = self._ask(jobs) if self.use_process else None
        if built is None:
            built = members.rebuild_all(jobs)
        for item, rebuilt in zip(batch, built, strict=True):
            item.done(rebuilt)

    def _ask(self, jobs: list[Job]) -> list[Built] | None:
        if not self._lock.acquire(timeout=self.reply_seconds):
            log.warning("the compression worker is busy past its deadline; building a batch in a thread")
            return None
        try:
            proc = self._ensure_worker()
            if proc is None:
                return None
            assert proc.stdin is not None and proc.stdout is not None
            data = pickle.dumps(jobs, protocol=pickle.HIGHEST_PROTOCOL)
            deadline = time.monotonic() + self.reply_seconds
            try:
                _send(proc.stdin.fileno(), len(data).to_bytes(8, "little") + data, deadline)
                head = _receive(proc.stdout.fileno(), 8, deadline)
                body = _receive(proc.stdout.fileno(), int.from_bytes(head, "little"), deadline)
                reply = pickle.loads(body)
            except TimeoutError as exc:
                self._failed(f"the compression worker did not answer within {self.reply_seconds:g}s", exc)
                return None
            except (OSError, EOFError, pickle.UnpicklingError) as exc:
                self._failed("the compression worker stopped", exc)
                return None
        finally:
            self._lock.release()
        if isinstance(reply, str) or len(reply) != len(jobs):
            # The worker is fine, the batch is not: build it here, where the error will show.
            log.warning("the compression worker could not build a batch", extra={"error": str(reply)[:200]})
            return None
        return list(reply)

    def _locked_ensure_worker(self) -> None:
        with self._lock:
            self._ensure_worker()

    def _ensure_worker(self) -> subprocess.Popen[bytes] | None:
        """The running worker, started if need be (the lock is held)."""
        if self._proc is not None:
            code = self._proc.poll()
            if code is None:
                return self._proc
            self._failed("the compression worker stopped", RuntimeError(f"exit code {code}"))
            return None
        if time.monotonic() < self._retry_at:
            return None
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "exporter.metrics.members"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_worker_env(),
            )
        except OSError as exc:
            self._failed("cannot start the compression worker", exc)
            return None
        assert proc.stdin is not None and proc.stdout is not None
        for pipe in (proc.stdin, proc.stdout):
            _widen(pipe.fileno())
            # Exchanges use the descriptors directly, with deadlines (never the buffered files).
            os.set_blocking(pipe.fileno(), False)
        self._proc = proc
        self.worker_starts += 1
        log.info("compression worker started", extra={"pid": proc.pid})
        return proc

    def _failed(self, message: str, exc: BaseException) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(self.reply_seconds)
        self.worker_failures += 1
        self._retry_at = time.monotonic() + RETRY_SECONDS
        log.error(message, extra={"error": repr(exc), "fallback": "compressing in a thread",
                                  "retry_seconds": RETRY_SECONDS})


def _send(fd: int, data: bytes, deadline: float) -> None:
    view = memoryview(data)
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    while view:
        try:
            sent = os.write(fd, view)
        except BlockingIOError:
            sent = 0
        view = view[sent:]
        if view and not poller.poll(_remaining_ms(deadline)):
            raise TimeoutError("writing to the compression worker")


def _receive(fd: int, size: int, deadline: float) -> bytes:
    parts: list[bytes] = []
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while size > 0:
        try:
            part = os.read(fd, min(size, PIPE_BYTES))
        except BlockingIOError:
            if not poller.poll(_remaining_ms(deadline)):
                raise TimeoutError("reading from the compression worker") from None
            continue
        if not part:
            raise EOFError("the worker closed its output")
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


def _remaining_ms(deadline: float) -> int:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("the compression worker's deadline passed")
    return max(1, int(remaining * 1000))


def _widen(fd: int) -> None:
    # 1 MiB pipes (Linux's default limit for unprivileged processes) instead of 64 KiB: a batch
    # crosses in a few dozen system calls, each a GIL hand-off for the thread doing it.
    with contextlib.suppress(OSError, AttributeError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)


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
