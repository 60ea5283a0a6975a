"""glibc allocator settings: arenas and thresholds set before threads start, free pages trimmed on a timer."""

from __future__ import annotations

import asyncio
import platform

import pytest

from exporter import allocator


class FakeLibc:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int]] = []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append(("mallopt", param, value))
        return 1

    def malloc_trim(self, pad: int) -> int:
        self.calls.append(("malloc_trim", pad, 0))
        return 1


def test_arenas_are_capped_and_thresholds_fixed_through_mallopt() -> None:
    libc = FakeLibc()
    assert allocator.configure_malloc(libc, 2)
    # M_MMAP_THRESHOLD, M_TRIM_THRESHOLD, M_ARENA_MAX
    assert libc.calls == [("mallopt", -3, 128 << 10), ("mallopt", -1, 1 << 20), ("mallopt", -8, 2)]


def test_without_glibc_nothing_is_done() -> None:
    assert not allocator.configure_malloc(None)
    asyncio.run(asyncio.wait_for(allocator.trim_periodically(None, 0.001), 1))  # returns at once


async def test_trims_on_its_interval_until_cancelled() -> None:
    libc = FakeLibc()
    task = asyncio.create_task(allocator.trim_periodically(libc, 0.01))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    trims = [c for c in libc.calls if c[0] == "malloc_trim"]
    assert 3 <= len(trims) <= 11
    assert all(pad == 0 for _, pad, _ in trims)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_the_real_glibc_takes_both_calls() -> None:
    libc = allocator.glibc()
    assert libc is not None
    assert libc.malloc_trim(0) in (0, 1)
    assert allocator.configure_malloc(libc, 8)  # this test process: the glibc default for 1 core


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_large_blocks_go_back_to_the_system_when_freed() -> None:
    # Whatever this process freed before (which raises glibc's own thresholds), 64 MiB of
    # 256 KiB buffers go back once freed, with no trim (less some noise from the rest of the
    # test process: without the fixed thresholds all 64 MiB stay).
    libc = allocator.glibc()
    assert allocator.configure_malloc(libc, 8)
    before = _rss_mib()
    blocks = [b"x" * (256 << 10) for _ in range(256)]
    held = _rss_mib()
    del blocks
    assert held - before > 48 and held - _rss_mib() > 40
