"""Process-wide settings: the only code that changes how the interpreter or the C library behaves
for the whole process. Each stays because a figure says it pays (docs/performance.md, "Process-wide
settings", with and without each), and a test fails when it stops paying:

1. glibc malloc (``configure_malloc``, ``trim``, ``trim_periodically``). Rendered lines, bucket
   texts and gzip members are above pymalloc's 512 bytes, so glibc serves them, and keeps freed
   pages resident. Two arenas, blocks of 128 KiB and more mapped on their own (unmapped when
   freed) instead of glibc's rising threshold, and a ``malloc_trim(0)`` every second: at 30 % of
   the benchmark fleet, RSS under churn ~141 MiB instead of ~168, after sync 133 instead of 146.
   Tests (tests/test_runtime.py): what freed buffers and a freed text leave resident.
2. The cyclic garbage collector (``manage_gc``). The exporter's data are small acyclic objects
   that die by reference counting (~1.4 M at fleet size); a full collection traverses all of
   them, ~200 ms with the loop stopped at 30 %. Automatic collections are held while the fleet
   loads (8 full collections and ~0.9 s of CPU fewer at 30 %), the loaded fleet is frozen at
   ready, and what survives afterwards is collected and frozen every 0.2 s (longest collection
   under churn ~2 ms instead of ~12), without a full collection's untracking of dicts (which
   made every refreeze after a new key traverse the fleet-sized indexes again). Tests: full
   collections during a load, the objects a collection traverses after it, an index that stays
   frozen as keys are added.
3. Importing parts of a package without its ``__init__`` (``import_without_init``).
   kubernetes_asyncio's ``__init__`` modules import ~850 generated API and model modules, +37 MiB
   resident and ~170 ms of CPU, where the configuration loaders and ``ApiClient`` the exporter
   uses cost +2.7 MiB and ~30 ms. Tests: a package's ``__init__`` runs only when asked for a name
   (tests/test_runtime.py); connecting loads no generated module (tests/test_kube_source_units.py).
4. The GIL's switch interval (``configure_switching``). A thread asking for the GIL waits one
   interval, then makes the holder give it up, unless the GIL was let go meanwhile, which
   restarts the wait. The loop thread lets the GIL go at each time slice (its ``select``) and
   takes it straight back, so with the default 5 ms, longer than the 2 ms slice, a thread waits
   as long as the loop stays busy: the one exchanging a batch with the compression worker needs
   the GIL a few times per batch, and during a burst's evaluation pass at 100 % a relief round
   of 3 batches took ~230 ms and the pass waited ~0.3 s for relief in all. A quarter of the
   slice: the same round ~35 ms, no wait. Test: batches exchanged while the loop is busy.

Imports only light standard modules when loaded: the compression worker (``metrics.members``)
imports this module and is ~8 MiB smaller without asyncio and logging, which the functions
needing them import. Owns no knowledge of what the work or the objects are.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import importlib.machinery
import importlib.util
import platform
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

# ---- 1. glibc malloc

ARENAS = 2
MMAP_THRESHOLD = 128 << 10  # bytes: larger blocks are mapped on their own
TRIM_THRESHOLD = 1 << 20  # bytes free at the heap's top that free() hands back at once
TRIM_SECONDS = 1.0
# mallopt parameter numbers, glibc's malloc.h
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8


class Glibc(Protocol):
    def mallopt(self, param: int, value: int) -> int: ...
    def malloc_trim(self, pad: int) -> int: ...


def glibc() -> Glibc | None:
    """The C library when it is glibc (with musl or on macOS these settings do not apply)."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        lib: Glibc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    return lib


def configure_malloc(libc: Glibc | None, arenas: int = ARENAS) -> bool:
    """Cap malloc's arenas and fix its thresholds (glibc raises them each time a mapped block is
    freed, up to 32 and 64 MiB); call before any thread starts (arenas are made on first use)."""
    if libc is None:
        return False
    mapped = libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    trimmed = libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    return bool(libc.mallopt(_M_ARENA_MAX, arenas) and mapped and trimmed)


def trim(libc: Glibc | None) -> None:
    """Hand the free pages inside malloc's heaps back to the system (~0.2 ms, GIL released)."""
    if libc is not None:
        libc.malloc_trim(0)


async def trim_periodically(libc: Glibc | None, interval: float = TRIM_SECONDS) -> None:
    """``trim`` every ``interval`` seconds, forever."""
    import asyncio

    if libc is None:
        return
    while True:
        await asyncio.sleep(interval)
        trim(libc)


# ---- 2. the cyclic garbage collector

DURING_SYNC_SECONDS = 5.0  # collections while the first lists load, at least this far apart
SPACING = 20.0  # and at least this many times their own duration apart
POLL_SECONDS = 0.05  # how often readiness is checked meanwhile
REFREEZE_SECONDS = 0.2  # after ready: each survivor is traversed once, with ~0.2 s of churn
NEVER = 1 << 30  # a collection threshold no count reaches


async def manage_gc(ready: Callable[[], bool], interval: float = DURING_SYNC_SECONDS,
                    refreeze: float = REFREEZE_SECONDS) -> None:
    """Hold automatic collection until ``ready()``, then freeze the loaded fleet and keep it frozen.

    Until ready the heap only grows, and the growth would trigger full collections over
    everything loaded so far; one every ``interval`` (spaced out as they get slower) bounds the
    cycles aiohttp or a retrying list leave. ``gc.freeze()`` at ready moves every object to the
    permanent generation, which collections skip (objects still die by reference counting). The
    older generations then never collect by themselves: every ``refreeze`` seconds whatever is not
    frozen is collected (no cycle is frozen alive) and frozen in turn, so a pause stays
    proportional to a fraction of a second of churn. The young threshold stays: under churn new
    objects mostly replace old ones, so allocations minus deallocations, which it counts, stay low.
    """
    import asyncio
    import logging

    log = logging.getLogger("exporter.gc")
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
    with young_only():
        while True:
            await asyncio.sleep(refreeze)
            started = time.monotonic()
            # Generations 0 and 1 hold everything not frozen (the oldest only ever gets what this
            # moves there, frozen at once). Not a full collection: that also untracks each dict
            # holding only untracked items, and the next new key tracks it again as young, so
            # every refreeze after one traversed the whole of the renderer's, the store's and the
            # pipeline's indexes (10-40 ms at fleet size); kept tracked, they are frozen once.
            collected = gc.collect(1)
            gc.freeze()
            log.debug("garbage collector: refrozen", extra={
                "collected": collected, "seconds": round(time.monotonic() - started, 4)})


@contextlib.contextmanager
def young_only() -> Iterator[None]:
    """Within it the collector collects the young generation by itself and never the older ones
    (``manage_gc`` collects and freezes them); the thresholds are as before on leaving."""
    young, middle, oldest = gc.get_threshold()
    gc.set_threshold(young, NEVER, NEVER)
    try:
        yield
    finally:
        gc.set_threshold(young, middle, oldest)


# ---- 3. importing parts of a package without its __init__

def import_without_init(*packages: str) -> None:
    """Register each of ``packages`` (parents first) as a shell whose ``__init__`` has not run.

    Its submodules import as usual (``from package import submodule`` included). The first time
    anyone asks a shell for a name it lacks (PEP 562 module ``__getattr__``), its real ``__init__``
    runs into the shell's own namespace, so code that wants the whole package still gets it. Does
    nothing for a package already imported.
    """
    for name in packages:
        if name not in sys.modules:
            _shell(name)


def _shell(name: str) -> None:
    parent, _, leaf = name.rpartition(".")
    path = sys.modules[parent].__path__ if parent else None
    spec = importlib.machinery.PathFinder.find_spec(leaf, path)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not an installed package")
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    completed = False

    def complete(attr: str) -> Any:
        nonlocal completed
        # ``from package import submodule`` asks the package first: a submodule is imported on
        # its own, without completing the package.
        if not completed and importlib.machinery.PathFinder.find_spec(attr, module.__path__) is not None:
            return importlib.import_module(f"{name}.{attr}")
        if not completed:
            completed = True
            del module.__dict__["__getattr__"]
            loader.exec_module(module)
        try:
            return module.__dict__[attr]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}") from None

    module.__dict__["__getattr__"] = complete
    sys.modules[name] = module
    if parent:
        setattr(sys.modules[parent], leaf, module)


# ---- 4. the GIL's switch interval

# A quarter of ``exporter.timeslice.SLICE_SECONDS`` (not imported: the worker loads this module
# and stays without asyncio): it must expire between two of the loop's hand-offs.
SWITCH_INTERVAL = 0.0005


def configure_switching(interval: float = SWITCH_INTERVAL) -> None:
    """Make a thread waiting for the GIL get it within ``interval`` while the loop thread is busy."""
    sys.setswitchinterval(interval)
