"""The C allocator under a long-running exporter: fewer malloc arenas, and free pages handed back.

Owns ``configure_malloc`` and ``trim_periodically``. Rendered lines, bucket texts and gzip members are
bytes objects above pymalloc's 512-byte limit, so glibc's malloc serves them. They are made on the
event loop and in threads, and glibc gives threads arenas of their own (up to eight per core),
so churn fragments several heaps at once and the resident size creeps up while the live data
does not. Two arenas, and a ``malloc_trim(0)`` every few seconds (it returns the free pages
inside the heaps, not only at their top, with the GIL released), keep it near the live data
(docs/performance.md).

The mmap and trim thresholds are also fixed. By default glibc raises both each time a large
block it mapped is freed (a list page, a pipe batch, a response), up to 32 and 64 MiB, after
which buffers of megabytes come from the heap and the freed space stays resident until the
next trim. Blocks of 128 KiB and more are mapped on their own (and unmapped when freed) and the
heap's top is trimmed past 1 MiB, which lowers the peak under churn. With another C library
(musl, macOS) all of this does nothing. Owns no knowledge of what is allocated.
"""

from __future__ import annotations

import ctypes
import platform
from typing import Protocol

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
    """The C library when it is glibc (the one whose arenas and trim these settings are about)."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        lib: Glibc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    return lib


def configure_malloc(libc: Glibc | None, arenas: int = ARENAS) -> bool:
    """Cap malloc's arenas and fix its thresholds; call before any thread starts (arenas are
    made on first use)."""
    if libc is None:
        return False
    mapped = libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    trimmed = libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    return bool(libc.mallopt(_M_ARENA_MAX, arenas) and mapped and trimmed)


async def trim_periodically(libc: Glibc | None, interval: float = TRIM_SECONDS) -> None:
    """Hand the allocator's free pages back to the system every ``interval`` seconds, forever."""
    # Imported here: the compression worker uses ``glibc`` and stays ~9 MiB smaller without asyncio.
    import asyncio

    if libc is None:
        return
    while True:
        await asyncio.sleep(interval)
        libc.malloc_trim(0)  # a ctypes call: the GIL is released while it runs
