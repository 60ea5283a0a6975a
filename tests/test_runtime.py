"""Each process-wide setting of ``exporter.runtime`` still has the effect that pays for it.

Memory and collector figures are read in a fresh interpreter (this one's heap and objects are
pytest's), once with the setting and once without, so a test fails when the setting stops making
the difference the figure in docs/performance.md was measured for.
"""

from __future__ import annotations

import asyncio
import json
import platform
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from exporter import runtime

ROOT = Path(__file__).resolve().parents[1]
glibc_only = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                                reason="glibc's malloc only")


def _run(script: str, *args: str) -> dict[str, Any]:
    """Run ``script`` in a fresh interpreter; it prints one JSON object."""
    prelude = textwrap.dedent("""
        import json, sys
        from exporter import runtime

        def resident_mib():
            with open("/proc/self/status") as f:
                return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024
    """)
    done = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script), *args],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


# ---- glibc malloc

FREED_BUFFERS = """
tuned = sys.argv[1] == "tuned"
libc = runtime.glibc()
if tuned:
    runtime.configure_malloc(libc)
# A freed list page or response raises glibc's own mmap threshold to its size.
page = b"p" * (8 << 20)
del page
before = resident_mib()
# 32 MiB of 256 KiB buffers (a scrape's, a batch's), each followed by a 32 KiB text that lives
# on (4 MiB in all), so no freed buffer is at the heap's top.
buffers, kept = [], []
for i in range(128):
    buffers.append(b"b" * (256 << 10))
    kept.append(b"k" * (32 << 10))
held = resident_mib()
del buffers
print(json.dumps({"held": held - before, "left": resident_mib() - before}))
"""


@glibc_only
def test_freed_large_buffers_go_back_at_once_with_the_fixed_mmap_threshold() -> None:
    tuned = _run(FREED_BUFFERS, "tuned")
    default = _run(FREED_BUFFERS, "default")
    assert tuned["held"] > 32 and default["held"] > 32
    assert tuned["left"] < 8, tuned  # each buffer was mapped on its own and unmapped when freed
    assert default["left"] > 28, default  # from the heap, between survivors: resident until a trim


FREED_TEXT = """
libc = runtime.glibc()
runtime.configure_malloc(libc)
before = resident_mib()
# 48 MiB of rendered lines (1-4 KiB, above pymalloc's limit), one in 64 living on.
lines = [b"l" * (1024 + (i * 37) % 3072) for i in range(19_000)]
kept = lines[::64]
held = resident_mib()
del lines
freed = resident_mib()
runtime.trim(libc)
print(json.dumps({"held": held - before, "freed": freed - before, "trimmed": resident_mib() - before}))
"""


@glibc_only
def test_a_trim_returns_the_pages_a_freed_text_leaves_inside_the_heap() -> None:
    got = _run(FREED_TEXT)
    assert got["held"] > 40, got
    assert got["freed"] > 36, got  # free() alone keeps the pages between survivors resident
    assert got["trimmed"] < 8, got


def test_without_glibc_nothing_is_done() -> None:
    assert not runtime.configure_malloc(None)
    runtime.trim(None)
    asyncio.run(asyncio.wait_for(runtime.trim_periodically(None, 0.001), 1))  # returns at once


# ---- the cyclic garbage collector

COLLECTOR = """
import asyncio, gc

managed = sys.argv[1] == "managed"
full = [0]
gc.callbacks.append(lambda phase, info: phase == "start" and info["generation"] == 2
                    and full.__setitem__(0, full[0] + 1))
refreezes = [0]  # managed: collections of the generations below the oldest (no automatic ones)
gc.callbacks.append(lambda phase, info: phase == "stop" and info["generation"] >= 1
                    and refreezes.__setitem__(0, refreezes[0] + 1))


def obj(i):  # an acyclic projection-like object: a dict, a list and tuples
    return {"name": f"m{i}", "conditions": [("Ready", "True", i), ("Available", "True", i)]}


async def until(check):
    deadline = asyncio.get_running_loop().time() + 30
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def main():
    ready = [False]
    if managed:
        task = asyncio.create_task(runtime.manage_gc(lambda: ready[0], refreeze=0.05))
    await asyncio.sleep(0)
    fleet = []
    for i in range(150_000):  # the first lists
        fleet.append(obj(i))
        if i % 10_000 == 0:
            await asyncio.sleep(0)
    loaded = len(gc.get_objects())
    during_load = full[0]
    ready[0] = True
    if managed:
        await until(lambda: gc.get_freeze_count() > 0)
    at_ready = len(gc.get_objects())  # what a collection traverses now
    for i in range(0, 150_000, 10):  # churn: a tenth of the fleet replaced
        fleet[i] = obj(i)
    if managed:
        seen = refreezes[0]
        await until(lambda: refreezes[0] > seen)
        await asyncio.sleep(0.01)
    else:
        gc.collect()
    after_churn = len(gc.get_objects())
    print(json.dumps({"full_during_load": during_load, "tracked_loaded": loaded,
                      "tracked_at_ready": at_ready, "tracked_after_churn": after_churn}))

asyncio.run(main())
"""


def test_the_loaded_fleet_is_collected_rarely_and_then_frozen_out_of_every_collection() -> None:
    managed = _run(COLLECTOR, "managed")
    default = _run(COLLECTOR, "default")
    fleet = 150_000 * 2  # tracked containers per object: the dict and the list (the tuples of
    # strings and ints are untracked by the first collection that sees them)
    assert managed["tracked_loaded"] > fleet and default["tracked_loaded"] > fleet
    # Loading: automatic full collections, each over everything loaded so far, are held.
    assert default["full_during_load"] >= 3, default
    assert managed["full_during_load"] == 0, managed
    # After ready a collection traverses what changed since, not the fleet.
    assert default["tracked_at_ready"] > fleet, default
    assert managed["tracked_at_ready"] < fleet // 100, managed
    assert default["tracked_after_churn"] > fleet, default
    assert managed["tracked_after_churn"] < fleet // 100, managed


INDEX_UNDER_CHURN = """
import asyncio, gc

refreezes = [0]
gc.callbacks.append(lambda phase, info: phase == "stop" and info["generation"] >= 1
                    and refreezes.__setitem__(0, refreezes[0] + 1))


async def next_refreeze():
    seen = refreezes[0]
    deadline = asyncio.get_running_loop().time() + 30
    while refreezes[0] == seen:
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.005)


def key(name):  # built at run time, as a projection's key is: a tracked tuple until collected
    return ("Machine", "ns", name)


async def main():
    task = asyncio.create_task(runtime.manage_gc(lambda: True, refreeze=0.02))
    await next_refreeze()
    # An index made after ready (a kind that appeared late), its values untracked as the
    # fleet's objects are: a collection that reaches it finds nothing but untracked items.
    index = {key(f"m{i}"): i for i in range(20_000)}
    await next_refreeze()
    await next_refreeze()
    young = []
    for i in range(4):  # a new object's key at a time, as a Machine created again under churn
        index[key(f"new{i}")] = i
        young.append(any(o is index for o in gc.get_objects()))
        await next_refreeze()
    print(json.dumps({"young_after_insert": young}))

asyncio.run(main())
"""


def test_an_index_whose_items_are_untracked_stays_frozen_when_keys_are_added() -> None:
    # A full collection untracks a dict holding only untracked items, and the next insertion of
    # a fresh key tracks it again as a young object: every refreeze after a new key would
    # traverse the whole index (the renderer's, the store's and the previous Results' hold
    # 20,000-75,000 entries at fleet size). Refreezes collect everything not frozen without a
    # full collection, so such an index is frozen once with the rest and stays out.
    assert _run(INDEX_UNDER_CHURN)["young_after_insert"] == [False] * 4


# ---- importing a package without its __init__

def test_a_package_imported_without_its_init_runs_it_when_asked_for_a_name(tmp_path: Path) -> None:
    package = tmp_path / "heavy"
    (package / "part").mkdir(parents=True)
    (package / "__init__.py").write_text("import heavy.generated\nEVERYTHING = True\n")
    (package / "generated.py").write_text("LOADED = True\n")
    (package / "part" / "__init__.py").write_text("raise ImportError('part.__init__ ran')\n")
    (package / "part" / "loader.py").write_text("from heavy import part\nVALUE = 42\n")
    got = _run(f"""
        sys.path.insert(0, {str(tmp_path)!r})
        runtime.import_without_init("heavy", "heavy.part")
        from heavy.part import loader
        skipped = "heavy.generated" not in sys.modules
        import heavy
        everything = heavy.EVERYTHING and "heavy.generated" in sys.modules
        print(json.dumps({{"value": loader.VALUE, "skipped": skipped, "everything": everything}}))
    """)
    assert got == {"value": 42, "skipped": True, "everything": True}


# ---- the GIL's switch interval

EXCHANGES = """
import asyncio, time
from array import array

from exporter.metrics import members
from exporter.offload import Worker
from exporter.timeslice import TimeSlice

if sys.argv[1] == "tuned":
    runtime.configure_switching()
line = b'capi_machine_status_condition{namespace="fleet",name="m%d",type="Ready",status="True"} 1\\n'
text = b"".join(line % i for i in range(600))  # a bucket of about 50 KiB, one object's lines changed
job = (members.gzip_member(text), array("q", [1]), array("q", [len(text)]), {1: text[:-20] + b"\\n"})


async def busy(seconds):  # the loop thread evaluating a pass: Python, in 2 ms slices
    end = time.perf_counter() + seconds
    pace = TimeSlice()
    total = 0
    while time.perf_counter() < end:
        for i in range(200):
            total += i * i
        await pace.pause()


async def main():
    worker = Worker("exporter.metrics.members", members.rebuild_all, name="compression worker")
    await worker.start()
    done = []

    async def rounds():
        while True:
            await worker.run(lambda: [job] * 16, done.append)

    task = asyncio.create_task(rounds())
    await asyncio.sleep(0.3)  # the worker answers
    before = len(done)
    await busy(1.0)
    during = len(done) - before
    task.cancel()
    await worker.stop()
    print(json.dumps({"batches_while_busy": during}))

asyncio.run(main())
"""


def test_a_batch_exchanged_with_the_worker_is_not_held_off_by_a_busy_loop() -> None:
    tuned = _run(EXCHANGES, "tuned")["batches_while_busy"]
    default = _run(EXCHANGES, "default")["batches_while_busy"]
    # A batch takes the worker well under a millisecond; what bounds the count is how soon the
    # exchanging thread gets the GIL back between the loop's slices (~160 against ~6 here).
    assert tuned >= 30, (tuned, default)
    assert tuned >= 4 * default, (tuned, default)


def test_the_switch_interval_expires_within_one_time_slice_of_the_loop() -> None:
    from exporter.timeslice import SLICE_SECONDS

    assert runtime.SWITCH_INTERVAL <= SLICE_SECONDS / 2
