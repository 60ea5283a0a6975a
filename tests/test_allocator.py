"""The glibc allocator settings: arenas capped before threads, free pages trimmed on a timer."""

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


def test_arenas_are_capped_through_mallopt() -> None:
    libc = FakeLibc()
    assert allocator.limit_arenas(libc, 2)
    assert libc.calls == [("mallopt", -8, 2)]  # M_ARENA_MAX


def test_without_glibc_nothing_is_done() -> None:
    assert not allocator.limit_arenas(None)
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
    assert allocator.limit_arenas(libc, 8)  # this test process: the glibc default for 1 core
