"""Rounds built off the loop: the worker process, its fallbacks, and relief past the pending limit.

The worker is the real one (``python -m exporter.metrics.members``, started by the ``Publisher``);
what it builds must be exactly what this process builds, and every way it can fail (it cannot
start, it dies, its caller is cancelled mid-batch, a batch it cannot build) must still give a
right body, with no change lost.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import logging
import os
import pickle
import signal
import sys
from array import array
from dataclasses import replace

import pytest

from exporter.metrics import members, publisher
from exporter.metrics.publisher import Publisher
from exporter.metrics.renderer import Renderer
from tests.test_renderer import GROUP, fleet, gzip_body, machine, result


def changed_renderer(n: int = 300, every: int = 7) -> Renderer:
    """A renderer whose buckets are built, then changed in every ``every``-th object."""
    renderer = Renderer(bucket_bytes=2048)
    objs = fleet(renderer, n)
    gzip_body(renderer)
    renderer.update_group(GROUP, [
        (replace(m, version="v1.31.0") if i % every == 0 else m, result(m, phase="Running"))
        for i, m in enumerate(objs)
    ])
    return renderer


def body_of(published) -> bytes:
    raw = b"".join(published.texts())
    assert gzip.decompress(b"".join(published.gzip_parts())) == raw
    return raw


@pytest.fixture
async def pub():
    made: list[Publisher] = []

    def make(renderer: Renderer, process: bool = True) -> Publisher:
        made.append(Publisher(renderer, process=process))
        return made[-1]

    yield make
    for p in made:
        await p.stop()


def _logged(caplog: pytest.LogCaptureFixture, text: str, level: int = logging.INFO) -> int:
    return sum(1 for r in caplog.records if r.levelno >= level and text in r.getMessage())


async def test_the_worker_process_builds_what_this_process_would(
        pub, caplog: pytest.LogCaptureFixture) -> None:
    renderer, twin = changed_renderer(), changed_renderer()
    p = pub(renderer)
    with caplog.at_level(logging.INFO, logger="exporter.offload"):
        published = await p.publish()
    assert p.worker.worker_pid not in (None, os.getpid())
    assert _logged(caplog, "compression worker started") == 1
    assert _logged(caplog, "", logging.WARNING) == 0
    assert list(published.gzip_parts()) == list(twin.publish_here().gzip_parts())
    assert renderer.pending_bytes == 0
    assert body_of(published) == renderer.render_body()


async def test_a_dead_worker_is_logged_and_its_rounds_built_in_a_thread(
        pub, caplog: pytest.LogCaptureFixture) -> None:
    renderer = changed_renderer()
    p = pub(renderer)
    await p.start()
    pid = p.worker.worker_pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    await asyncio.sleep(0.2)
    caplog.clear()  # from here on
    with caplog.at_level(logging.INFO, logger="exporter.offload"):
        published = await p.publish()
        assert body_of(published) == renderer.render_body()
        assert _logged(caplog, "", logging.ERROR) == 1
        assert _logged(caplog, "compression worker stopped", logging.ERROR) == 1
        # Within the retry interval no new worker is started: the thread goes on building.
        renderer.update_group(GROUP, [])
        assert body_of(await p.publish()) == b""
    assert _logged(caplog, "compression worker started") == 0 and p.worker.worker_pid is None


async def test_a_worker_that_cannot_start_leaves_the_thread_to_build(
        pub, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    renderer = changed_renderer()
    expected = changed_renderer().render_body()
    p = pub(renderer)
    with caplog.at_level(logging.INFO, logger="exporter.offload"):
        assert body_of(await p.publish()) == expected
    assert _logged(caplog, "compression worker started") == 0 and p.worker.worker_pid is None
    assert _logged(caplog, "", logging.ERROR) == 1
    assert _logged(caplog, "cannot start the compression worker", logging.ERROR) == 1


async def test_a_scrape_cancelled_mid_round_loses_no_change_and_leaves_the_pipe_in_step(
        pub, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(publisher, "BATCH_BYTES", 1)  # one batch per bucket: many round trips
    renderer = changed_renderer(every=2)
    expected = changed_renderer(every=2).render_body()
    p = pub(renderer)
    await p.start()
    first = asyncio.ensure_future(p.publish())
    while not p.worker.busy:  # until the worker was asked: a reply is on its way
        await asyncio.sleep(0)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert renderer.pending_bytes > 0, "the cancelled round gave its pending lines back"
    with caplog.at_level(logging.WARNING, logger="exporter.offload"):
        assert body_of(await p.publish()) == expected
    assert _logged(caplog, "", logging.WARNING) == 0  # the worker kept answering, in step


async def test_batches_are_bounded_by_what_they_carry_as_well_as_by_the_text_they_make(
        pub, monkeypatch: pytest.MonkeyPatch) -> None:
    # Buckets never built carry their whole text; changed ones their member and a few lines.
    fresh = Renderer(bucket_bytes=2048)
    fleet(fresh, 300)
    changed = changed_renderer(n=300, every=50)
    for renderer in (fresh, changed):
        expected = changed_renderer(n=300, every=50).render_body() if renderer is changed else None
        rebuilds = renderer.take_round()
        renderer.abandon_round(rebuilds)  # only to measure them
        text, carried = sum(r.size for r in rebuilds), sum(r.carried for r in rebuilds)
        monkeypatch.setattr(publisher, "BATCH_BYTES", text // 2 + 1)
        monkeypatch.setattr(publisher, "CARRIED_BYTES", text // 3 + 1)
        p = pub(renderer)
        batches: list[int] = []
        run = p.worker.run

        async def counted(make, take, run=run, batches=batches):
            batches.append(len(make()))
            await run(make, take)

        monkeypatch.setattr(p.worker, "run", counted)
        published = await p.publish()
        if expected is not None:
            assert body_of(published) == expected
        if renderer is fresh:
            assert carried >= text and len(batches) >= 3  # split by what they carry
        else:
            assert carried < text // 3 and len(batches) == 2  # split by the text they make


async def test_a_round_installs_each_batch_as_it_comes_back_and_a_failure_gives_back_only_the_rest(
        pub, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # Installed batch by batch, the members a batch replaces can go before the round ends.
    monkeypatch.setattr(publisher, "BATCH_BYTES", 1)  # one batch per bucket
    renderer = changed_renderer(every=2)
    expected = changed_renderer(every=2).render_body()
    dirty = list(renderer._dirty)
    depth = publisher.IN_FLIGHT
    assert depth >= 2 and len(dirty) >= 3 + depth
    old_bases = {id(b): b.base for b in dirty}
    p = pub(renderer, process=False)
    installed_at_start: list[int] = []
    run = p.worker.run

    async def failing_third(make, take):
        installed_at_start.append(sum(1 for b in dirty if b.base is not old_bases[id(b)]))
        if len(installed_at_start) == 3:
            raise RuntimeError("boom")
        await run(make, take)

    monkeypatch.setattr(p.worker, "run", failing_third)
    with pytest.raises(RuntimeError):
        await p.publish()
    # Up to IN_FLIGHT batches are out at once (those after the one exchanged wait at the worker's
    # pipe), so batch k starts once every batch before it but the IN_FLIGHT - 1 last is installed;
    # none starts once the failure is seen (batches started before it are not installed).
    assert all(max(0, k - depth + 1) <= n <= k for k, n in enumerate(installed_at_start)), installed_at_start
    assert 3 <= len(installed_at_start) <= 2 + depth
    given_back = [b for b in dirty if b.base is old_bases[id(b)]]
    # The two batches before the failing third came back and were installed; nothing after them.
    assert len(given_back) == len(dirty) - 2 and all(b.pending for b in given_back)
    assert renderer.pending_bytes == sum(b.pending_bytes for b in dirty)
    monkeypatch.setattr(p.worker, "run", run)
    assert body_of(await p.publish()) == expected


def two_family_renderer() -> Renderer:
    """A renderer whose machines' info lines all changed (50 buckets) and one phase line (1)."""
    renderer = Renderer(bucket_bytes=2048)
    objs = fleet(renderer, 300)
    gzip_body(renderer)
    renderer.update_group(GROUP, [
        (replace(m, version="v1.31.0"), result(m, phase="Failed" if i == 0 else "Running"))
        for i, m in enumerate(objs)
    ])
    return renderer


def gated(p: Publisher, monkeypatch: pytest.MonkeyPatch, family: str) -> tuple[asyncio.Event, asyncio.Event]:
    """Hold ``p``'s batches holding buckets of ``family`` until the first event is set; the second
    is set once one is held."""
    monkeypatch.setattr(publisher, "BATCH_BYTES", 1)  # one batch per bucket
    gate, reached = asyncio.Event(), asyncio.Event()
    index = [f.name for f in p.renderer.families].index(family)
    build = p._build_batch

    async def held(batch):
        if any(r.bucket.family == index for r in batch):
            reached.set()
            await gate.wait()
        await build(batch)

    monkeypatch.setattr(p, "_build_batch", held)
    return gate, reached


async def test_a_scrape_of_one_family_is_served_while_a_full_round_still_builds_others(
        pub, monkeypatch: pytest.MonkeyPatch) -> None:
    renderer, twin = two_family_renderer(), two_family_renderer()
    phase = ["capi_machine_status_phase"]
    p = pub(renderer, process=False)
    gate, reached = gated(p, monkeypatch, "capi_machine_info")
    full = asyncio.ensure_future(p.publish())
    await asyncio.wait_for(reached.wait(), 5)
    # The full round rebuilt the phase family (the smaller) first and let it go.
    named = await asyncio.wait_for(p.publish(phase), 5)
    assert not full.done()
    assert body_of(named) == b"".join(twin.publish_here(phase).texts())
    assert b'name="m0",namespace="ns",uid="uid-m0",cluster_name="c1",phase="Failed"} 1' in body_of(named)
    gate.set()
    assert body_of(await asyncio.wait_for(full, 5)) == twin.render_body()


async def test_a_round_waits_for_the_round_holding_its_family_and_serves_what_that_one_built(
        pub, monkeypatch: pytest.MonkeyPatch) -> None:
    # Of two rounds building one bucket from its base, the one installed last would drop the
    # other's lines.
    renderer, twin = two_family_renderer(), two_family_renderer()
    p = pub(renderer, process=False)
    gate, reached = gated(p, monkeypatch, "capi_machine_info")
    first = asyncio.ensure_future(p.publish(["capi_machine_info"]))
    await asyncio.wait_for(reached.wait(), 5)
    objs = [machine(f"m{i}") for i in range(300)]
    for r in (renderer, twin):  # a change after the first round took its buckets
        r.update_group(GROUP, [(replace(m, version="v1.32.0"), result(m, phase="Running")) for m in objs])
    second = asyncio.ensure_future(p.publish())
    await asyncio.sleep(0.05)
    assert not second.done(), "the second round waits for the first to install the info family"
    gate.set()
    await asyncio.wait_for(first, 5)
    assert body_of(await asyncio.wait_for(second, 5)) == twin.render_body()
    assert b'version="v1.32.0"' in twin.render_body() and renderer.pending_bytes == 0


async def test_a_scrape_serves_one_moment_though_a_later_round_changes_a_family_it_let_go(
        pub, monkeypatch: pytest.MonkeyPatch) -> None:
    renderer, twin = two_family_renderer(), two_family_renderer()
    failed = b'name="m0",namespace="ns",uid="uid-m0",cluster_name="c1",phase="Failed"} 1'
    phase = ["capi_machine_status_phase"]
    p = pub(renderer, process=False)
    gate, reached = gated(p, monkeypatch, "capi_machine_info")
    full = asyncio.ensure_future(p.publish())
    await asyncio.wait_for(reached.wait(), 5)
    # After the full round took its lines: m0 runs again, and a scrape of its phase shows that.
    objs = [replace(machine(f"m{i}"), version="v1.31.0") for i in range(300)]
    renderer.update_group(GROUP, [(m, result(m, phase="Running")) for m in objs])
    assert failed not in body_of(await asyncio.wait_for(p.publish(phase), 5))
    gate.set()
    body = body_of(await asyncio.wait_for(full, 5))
    assert body == twin.render_body() and failed in body  # as of when the full round began


async def test_a_failed_round_lets_go_of_its_families(pub, monkeypatch: pytest.MonkeyPatch) -> None:
    renderer, twin = two_family_renderer(), two_family_renderer()
    p = pub(renderer, process=False)
    run = p.worker.run

    async def failing(make, take):
        raise RuntimeError("boom")

    monkeypatch.setattr(p.worker, "run", failing)
    with pytest.raises(RuntimeError):
        await p.publish()
    monkeypatch.setattr(p.worker, "run", run)
    assert body_of(await asyncio.wait_for(p.publish(), 5)) == twin.render_body()


def test_the_worker_loop_answers_a_bad_batch_with_its_error_and_goes_on() -> None:
    # ids 1 and 2 with 3 bytes of lines each; id 3 joins between them, id 1 leaves
    good = [(members.gzip_member(b"abcdef"), array("Q", [1, 2]), array("I", [3, 3]), {3: b"XYZ", 1: None})]
    bad = [(b"not a gzip member", array("Q", [1]), array("I", [1]), {1: b"x"})]
    requests = io.BytesIO()
    for batch in (bad, good):
        data = pickle.dumps(batch)
        requests.write(len(data).to_bytes(8, "little") + data)
    requests.seek(0)
    replies = io.BytesIO()
    members.serve(requests, replies)
    replies.seek(0)
    answers = []
    while head := replies.read(8):
        answers.append(pickle.loads(replies.read(int.from_bytes(head, "little"))))
    assert answers[0][0] is False and isinstance(answers[0][1], str) and answers[0][1]
    assert answers[1][0] is True
    built = [(gzip.decompress(m), list(k), list(n)) for m, k, n in answers[1][1]]
    assert built == [(b"defXYZ", [2, 3], [3, 3])]


async def test_past_the_limit_pending_lines_are_compressed_off_the_loop_to_three_quarters_of_it(pub) -> None:
    renderer = changed_renderer()
    renderer.pending_share = 0
    renderer.pending_floor = renderer.pending_bytes - 1  # just past the limit
    before = renderer.pending_bytes
    p = pub(renderer)
    await p.relieve()  # past the limit, not twice past it: the relief runs in the background
    assert renderer.pending_bytes == before
    assert p._relief is not None
    await p._relief
    assert p.worker.worker_pid is not None, "the worker built them"
    assert 0 < renderer.pending_bytes <= renderer.pending_floor * 3 // 4 < before
    assert gzip.decompress(gzip_body(renderer)) == renderer.render_body()

    # At the limit nothing is done.
    renderer = changed_renderer()
    renderer.pending_share = 0
    renderer.pending_floor = renderer.pending_bytes
    p = pub(renderer)
    await p.relieve()
    assert p._relief is None


async def test_far_past_the_limit_the_evaluation_waits_for_the_relief(pub) -> None:
    renderer = changed_renderer()
    renderer.pending_share = 0
    renderer.pending_floor = renderer.pending_bytes // 3
    p = pub(renderer, process=False)
    await p.relieve()
    assert renderer.pending_bytes <= renderer.pending_floor * 3 // 4


async def test_a_failing_relief_is_logged_once_gives_its_lines_back_and_is_tried_again(
        pub, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    renderer = changed_renderer()
    expected = changed_renderer().render_body()
    renderer.pending_share = 0
    renderer.pending_floor = renderer.pending_bytes // 3
    p = pub(renderer, process=False)
    calls = 0

    def broken(jobs):
        nonlocal calls
        calls += 1
        raise RuntimeError("boom")

    monkeypatch.setattr(p.worker, "local", broken)
    before = renderer.pending_bytes
    with caplog.at_level(logging.ERROR, logger="exporter.publisher"):
        for _ in range(3):
            await p.relieve()
    assert calls == 3, "each call past the limit tries again"
    assert renderer.pending_bytes == before, "nothing pending was lost"
    assert _logged(caplog, "compressing pending lines failed", logging.ERROR) == 1
    monkeypatch.setattr(p.worker, "local", members.rebuild_all)
    await p.relieve()
    assert renderer.pending_bytes <= renderer.pending_floor * 3 // 4
    assert renderer.render_body() == expected


async def test_stopping_during_a_relief_round_ends_it_quietly_and_loses_no_change(
        pub, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # At shutdown the publisher stops last: a relief round still running then found the worker
    # gone and logged "compressing pending lines failed" with its traceback.
    renderer, expected = changed_renderer(), changed_renderer().render_body()
    renderer.pending_share = 0
    renderer.pending_floor = renderer.pending_bytes - 1  # just past the limit: relief in the background
    p = pub(renderer)
    gate, reached = gated(p, monkeypatch, "capi_machine_info")
    await p.relieve()
    relief = p._relief
    assert relief is not None
    await asyncio.wait_for(reached.wait(), 5)
    with caplog.at_level(logging.WARNING, logger="exporter"):
        await asyncio.wait_for(p.stop(), 10)
        gate.set()
        await asyncio.wait({relief}, timeout=5)
    assert relief.done()
    assert _logged(caplog, "", logging.WARNING) == 0
    assert renderer.render_body() == expected, "the round's lines are pending again"
