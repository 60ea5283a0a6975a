"""Run ``serve`` with a log of every long event-loop step and garbage collection: finds stalls.

``python -m tests.benchmark --exporter-cmd "python -m tests.benchmark.looptrace serve"`` (or
``python -m tests.benchmark.looptrace serve --kubeconfig ...`` by hand) runs the real exporter
with two hooks: every loop callback that runs longer than ``FSE_LOOPTRACE_MS`` (default 15) is
logged with the loop thread's CPU time in it (the rest is time spent waiting for the GIL or for a
core), its task's name and the innermost frames its coroutine is suspended at after the step, and
every collection longer than 10 ms with its generation. With ``FSE_LOOPTRACE_STACKS=1`` a thread
also logs the loop thread's stack while a step runs over twice the threshold (a sample of what
it does, taken when that thread gets the GIL: within a switch interval). The log goes to
``FSE_LOOPTRACE_LOG`` (default ``looptrace.log``), one line each: monotonic time, duration, what.
A diagnostic for the benchmark's "longest /healthz answer" figure; it changes no behaviour but
the timing of the hooks (~2 us per callback). Owns nothing the exporter uses.
"""

from __future__ import annotations

import asyncio.events
import gc
import os
import sys
import threading
import time
from collections import Counter
from typing import Any

_THRESHOLD = float(os.environ.get("FSE_LOOPTRACE_MS", "15")) / 1000
_GC_THRESHOLD = 0.010
_log = open(os.environ.get("FSE_LOOPTRACE_LOG", "looptrace.log"), "a", buffering=1)  # noqa: SIM115
_original_run = asyncio.events.Handle._run
_gc_started: list[float] = []


def _where(callback: Any) -> str:
    task = getattr(callback, "__self__", None)
    if not isinstance(task, asyncio.Task):
        return repr(callback)[:120]
    chain: list[str] = []
    coro: Any = task.get_coro()
    while coro is not None and getattr(coro, "cr_frame", None) is not None:
        frame = coro.cr_frame
        chain.append(f"{frame.f_code.co_qualname}:{frame.f_lineno}")
        coro = getattr(coro, "cr_await", None)
    return f"{task.get_name()} {' > '.join(chain[-4:])}"


_step: list[float] = [0.0, 0.0]  # the running step's start (0: none) and its number


def _watchdog(loop_thread: int) -> None:
    """Every 10 ms: the loop thread's stack, when one step has run over twice the threshold."""
    sampled = 0.0
    while True:
        time.sleep(0.01)
        started, number = _step
        if started and time.perf_counter() - started > 2 * _THRESHOLD and number != sampled:
            frame = sys._current_frames().get(loop_thread)
            stack: list[str] = []
            while frame is not None and len(stack) < 12:
                stack.append(f"{frame.f_code.co_qualname}:{frame.f_lineno}")
                frame = frame.f_back
            _log.write(f"{time.monotonic():.3f} in a step of {(time.perf_counter() - started) * 1000:.0f}ms: "
                       f"{' < '.join(stack)}\n")
            sampled = number


def _timed_run(self: asyncio.events.Handle) -> None:
    started, cpu = time.perf_counter(), time.thread_time()
    _step[0], _step[1] = started, _step[1] + 1
    _original_run(self)
    _step[0] = 0.0
    took = time.perf_counter() - started
    if took > _THRESHOLD:
        # The loop thread's own CPU time in the step: the rest it spent waiting, for the GIL (a
        # thread of this process holding it) or for a core (other processes running).
        ran = time.thread_time() - cpu
        _log.write(f"{time.monotonic():.3f} {took * 1000:.1f}ms (cpu {ran * 1000:.1f}ms) "
                   f"{_where(self._callback)}\n")  # type: ignore[attr-defined]


def _on_gc(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        _gc_started.append(time.perf_counter())
    elif _gc_started:
        took = time.perf_counter() - _gc_started.pop()
        if took > _GC_THRESHOLD:
            _log.write(f"{time.monotonic():.3f} {took * 1000:.1f}ms gc generation {info['generation']} "
                       f"collected {info['collected']}\n")


class _CountingGc:
    """``gc`` for ``exporter.runtime``, whose collections log what they traverse by type
    (``FSE_LOOPTRACE_GC_TYPES=1``; counting costs a walk of the objects, so not by default)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(gc, name)

    @staticmethod
    def collect(generation: int = 2) -> int:
        objects = [o for g in range(3) for o in gc.get_objects(g)]
        if len(objects) > 20_000:
            counts = Counter(type(o).__name__ for o in objects).most_common(8)
            _log.write(f"{time.monotonic():.3f} gc over {len(objects)} objects: {counts}\n")
        del objects
        return gc.collect(generation)


def main() -> int:
    asyncio.events.Handle._run = _timed_run  # type: ignore[method-assign]
    gc.callbacks.append(_on_gc)
    if os.environ.get("FSE_LOOPTRACE_STACKS") == "1":
        threading.Thread(target=_watchdog, args=(threading.get_ident(),), daemon=True).start()
    if os.environ.get("FSE_LOOPTRACE_GC_TYPES") == "1":
        import exporter.runtime

        exporter.runtime.gc = _CountingGc()  # type: ignore[assignment]
    from exporter.cli import main as exporter_main

    sys.argv = ["fleet-status-exporter", *sys.argv[1:]]
    return exporter_main()


if __name__ == "__main__":
    sys.exit(main())
