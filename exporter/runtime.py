"""Process-wide settings: the only code that changes how the interpreter or the C library behaves
for the whole process. Each is here because a figure says it pays (docs/performance.md, "Figures
behind the code's choices" and "Process-wide settings"), and a test in tests/test_runtime.py fails
when it stops paying:

1. glibc malloc (``configure_malloc``, ``trim_periodically``, ``trim``). Rendered lines, bucket
   texts and gzip members are above pymalloc's 512 bytes, so glibc serves them, from the loop and
   from threads, each thread with an arena of its own by default; freed pages inside a heap stay
   resident. Two arenas, blocks of 128 KiB and more mapped on their own (unmapped when freed)
   rather than glibc's rising threshold, and a ``malloc_trim(0)`` every second keep the resident
   size near the live data. Test: the memory a freed text leaves resident, read from /proc in a
   fresh interpreter, with and without.
2. The cyclic garbage collector (``manage_gc``). The exporter's data are ~1.4 M small acyclic
   objects at fleet size that die by reference counting; a full collection traverses all of them
   and stops the loop for ~0.5 s. Automatic collections are held while the fleet loads, the
   loaded fleet is frozen at ready, and what survives afterwards is collected and frozen every
   0.2 s. Test: the full collections during a load and the objects a collection traverses after
   it, counted in a fresh interpreter, with and without.
3. The GIL switch interval (``prompt_gil_handoff``). A thread that releases the GIL (a pipe
   write, a compression) waits a switch interval to take it back while the loop thread runs
   Python; a batch exchanged with the compression worker does that a few times per megabyte.
   0.5 ms instead of 5 ms while such a thread runs. No test: its effect is a wait measured in
   wall-clock time, which a shared test machine cannot bound; the benchmark judges it.
4. Importing parts of a package without its ``__init__`` (``import_without_init``).
   kubernetes_asyncio's ``__init__`` modules import ~850 generated API and model modules:
   +37 MiB resident and ~170 ms of CPU, where the exporter needs its configuration loaders and
   ``ApiClient`` (+2.7 MiB). Test: connecting loads none of the generated modules.

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
    """Cap malloc's arenas and fix its thresholds; call before any thread starts (arenas are
    made on first use). By default glibc raises both thresholds each time a mapped block is freed
    (up to 32 and 64 MiB), after which buffers of megabytes come from the heap and stay resident
    until the next trim."""
    if libc is None:
        return False
    mapped = libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    trimmed = libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    return bool(libc.mallopt(_M_ARENA_MAX, arenas) and mapped and trimmed)


def trim(libc: Glibc | None) -> None:
    """Hand the free pages inside malloc's heaps back to the system (a ctypes call: the GIL is
    released while it runs, ~0.2 ms)."""
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

# How often the collector runs while the first lists are absorbed, and how far apart collections
# are kept relative to their own duration as the heap grows.
DURING_SYNC_SECONDS = 5.0
SPACING = 20.0
POLL_SECONDS = 0.05  # how often readiness is checked meanwhile
# Once ready, everything not frozen is collected in full and frozen in turn this often, so each
# object that survives is traversed once, and a collection traverses ~0.2 s of churn.
REFREEZE_SECONDS = 0.2
NEVER = 1 << 30  # a collection threshold no count reaches


async def manage_gc(ready: Callable[[], bool], interval: float = DURING_SYNC_SECONDS,
                    refreeze: float = REFREEZE_SECONDS) -> None:
    """Hold automatic collection until ``ready()``, then freeze the loaded fleet and keep it frozen.

    Until ready the heap only grows: every page's decoded JSON survives young collections while
    it is projected, and the growth would trigger full collections over everything held so far
    (about a third of the start-up CPU on a large hub). A collection every ``interval`` (spaced
    out as they get slower) still bounds the cycles aiohttp or a retrying list leave behind.

    At ready ``gc.freeze()`` moves every object to the permanent generation, which collections
    skip; objects still die by reference counting when updates replace them. From then on the
    older generations are never collected automatically: under churn the objects that replaced
    frozen ones would pile up there, and a full collection over them stops the loop for as long
    as they took to pile up. Instead, every ``refreeze`` seconds everything not frozen is
    collected in full (so no cycle is frozen alive, and cyclic garbage waits at most that long)
    and frozen in turn. The automatic young threshold stays: under churn most new objects replace
    old ones, so allocations minus deallocations, which it counts, stay low.
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


# ---- 3. the GIL switch interval

SWITCH_INTERVAL = 0.0005  # seconds, while a thread exchanges a batch
_handoffs = 0  # threads in a prompt_gil_handoff (event loop thread only)
_default_switch_interval = sys.getswitchinterval()


@contextlib.contextmanager
def prompt_gil_handoff() -> Iterator[None]:
    """A short switch interval while a thread doing many GIL-releasing calls runs; the default
    again once the last such thread is done. Enter and leave it on the event loop thread."""
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


# ---- 4. importing parts of a package without its __init__

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
