"""Batch work run off the event loop and off the GIL, in a worker process.

Owns ``Worker``: it runs a batch function in a child process (``python -m <module>``, whose
``serve`` reads batches from its standard input) or, when that process cannot start, dies, or
does not answer within ``REPLY_SECONDS`` (stopped, swapped out, wedged), in a thread of this
process (logged once; a worker that timed out is killed), trying a new process again after
``RETRY_SECONDS``. A thread must take the GIL back after every call that released it, and waits
a switch interval each time the loop thread is busy (``runtime.configure_switching`` keeps it
short); a process has no GIL to share, and a batch costs this process a few GIL hand-offs rather
than a few per item. A batch never waits more than ``REPLY_SECONDS`` for another batch's
exchange either: it runs in a thread instead. Batches run on the worker's own threads, never the
loop's default executor, so a stuck exchange cannot starve the files source or anything else
that uses it.

Owns no knowledge of the work: the caller gives the module the child runs, the function a thread
runs instead, and for each batch a callable that makes its input and one that takes its output.
Frames on the pipes are an 8-byte little-endian length and a pickle; the child answers a batch it
cannot run with the error as a string, and that batch runs in a thread here, where the error shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import importlib
import logging
import os
import pickle
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Generic, TypeVar

log = logging.getLogger("exporter.offload")

PIPE_BYTES = 1 << 20
RETRY_SECONDS = 60.0
# The longest a batch waits for the worker (its exchange, or another batch's ahead of it): a
# batch takes the worker a few ms, so this is only reached when it is stopped or wedged.
REPLY_SECONDS = 5.0
THREADS = 4  # batches in flight at once

In = TypeVar("In")
Out = TypeVar("Out")


class Worker(Generic[In, Out]):
    """Runs ``local`` on batches, in a child process running ``module`` when it can, else in a thread.

    ``python -m module`` must answer each frame with what ``local`` computes for it. Each batch is
    one thread call: make the input, send it, wait, take the output. The loop awaits once per
    batch. Driving the pipe from the loop instead made a batch take a loop iteration per 64 KiB
    written or 256 KiB read, and under churn an iteration runs a slice of every busy task.
    """

    def __init__(self, module: str, local: Callable[[In], Out], *, name: str, process: bool = True) -> None:
        self.module = module
        self.name = name  # what logs call the process
        self.local = local
        self.use_process = process
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()  # one batch on the pipe at a time, whoever awaits it
        self._retry_at = 0.0
        self.reply_seconds = REPLY_SECONDS
        self._pool = ThreadPoolExecutor(THREADS, thread_name_prefix="offload")

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

    async def run(self, make: Callable[[], In], take: Callable[[Out], object]) -> None:
        """Run one batch: ``make()`` its input and ``take`` its output, both in a thread."""
        # A cancelled caller leaves the thread to finish the exchange under the lock: the pipe
        # never holds a reply the next batch would take for its own.
        await asyncio.get_running_loop().run_in_executor(self._pool, self._run_in_thread, make, take)

    def _run_in_thread(self, make: Callable[[], In], take: Callable[[Out], object]) -> None:
        data = make()
        out = self._ask(data) if self.use_process else None
        take(self.local(data) if out is None else out[0])

    def _ask(self, data: In) -> tuple[Out] | None:
        """The worker's output for ``data`` (in a 1-tuple), or None when it must run here."""
        if not self._lock.acquire(timeout=self.reply_seconds):
            log.warning(f"the {self.name} is busy past its deadline; running a batch in a thread")
            return None
        try:
            proc = self._ensure_worker()
            if proc is None:
                return None
            assert proc.stdin is not None and proc.stdout is not None
            body = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
            deadline = time.monotonic() + self.reply_seconds
            try:
                # Its length first, then the body as it is: joined, every batch would be copied
                # once more, holding the GIL the loop waits for.
                _send(proc.stdin.fileno(), len(body).to_bytes(8, "little"), deadline)
                _send(proc.stdin.fileno(), body, deadline)
                head = _receive(proc.stdout.fileno(), 8, deadline)
                size = int.from_bytes(head, "little")
                ok, reply = pickle.loads(_receive(proc.stdout.fileno(), size, deadline))
            except TimeoutError as exc:
                self._failed(f"the {self.name} did not answer within {self.reply_seconds:g}s", exc)
                return None
            except (OSError, EOFError, pickle.UnpicklingError) as exc:
                self._failed(f"the {self.name} stopped", exc)
                return None
        finally:
            self._lock.release()
        if not ok:
            # The worker is fine, the batch is not: run it here, where the error will show.
            log.warning(f"the {self.name} could not run a batch", extra={"error": str(reply)[:200]})
            return None
        return (reply,)

    def _locked_ensure_worker(self) -> None:
        with self._lock:
            self._ensure_worker()

    def _ensure_worker(self) -> subprocess.Popen[bytes] | None:
        """The running worker, started if need be (the lock is held)."""
        if self._proc is not None:
            code = self._proc.poll()
            if code is None:
                return self._proc
            self._failed(f"the {self.name} stopped", RuntimeError(f"exit code {code}"))
            return None
        if time.monotonic() < self._retry_at:
            return None
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", self.module],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_worker_env(self.module),
            )
        except OSError as exc:
            self._failed(f"cannot start the {self.name}", exc)
            return None
        assert proc.stdin is not None and proc.stdout is not None
        for pipe in (proc.stdin, proc.stdout):
            _widen(pipe.fileno())
            # Exchanges use the descriptors directly, with deadlines (never the buffered files).
            os.set_blocking(pipe.fileno(), False)
        self._proc = proc
        log.info(f"{self.name} started", extra={"pid": proc.pid})
        return proc

    def _failed(self, message: str, exc: BaseException) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(self.reply_seconds)
        self._retry_at = time.monotonic() + RETRY_SECONDS
        log.error(message, extra={"error": repr(exc), "fallback": "a thread",
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
            raise TimeoutError("writing to the worker process")


def _receive(fd: int, size: int, deadline: float) -> bytes:
    parts: list[bytes] = []
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while size > 0:
        try:
            part = os.read(fd, min(size, PIPE_BYTES))
        except BlockingIOError:
            if not poller.poll(_remaining_ms(deadline)):
                raise TimeoutError("reading from the worker process") from None
            continue
        if not part:
            raise EOFError("the worker closed its output")
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


def _remaining_ms(deadline: float) -> int:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("the worker process's deadline passed")
    return max(1, int(remaining * 1000))


def _widen(fd: int) -> None:
    # 1 MiB pipes (Linux's default limit for unprivileged processes) instead of 64 KiB: a batch
    # crosses in a few dozen system calls, each a GIL hand-off for the thread doing it.
    with contextlib.suppress(OSError, AttributeError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)


def _worker_env(module: str) -> dict[str, str]:
    # The worker imports the very package this process runs, wherever it was loaded from.
    package = importlib.import_module(module.partition(".")[0])
    root = str(Path(package.__file__ or "").resolve().parent.parent)
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}
