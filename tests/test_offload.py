"""Gzip members built off the loop: the worker process, its fallbacks, and compression ahead of the limit.

The worker is the real one (``python -m exporter.metrics.members``, started by ``MemberBuilder``);
what it builds must be exactly what this process builds, and every way it can fail (it cannot
start, it dies, its caller is cancelled mid-batch, a batch it cannot build) must still give a
right body.
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

from exporter import compaction
from exporter.metrics import memberbuilder, members
from exporter.metrics.memberbuilder import MemberBuilder
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


@pytest.fixture
async def builder():
    b = MemberBuilder()
    yield b
    await b.stop()


def _logged(caplog: pytest.LogCaptureFixture, text: str, level: int = logging.INFO) -> int:
    return sum(1 for r in caplog.records if r.levelno >= level and text in r.getMessage())


async def test_the_worker_process_builds_what_this_process_would(
        builder: MemberBuilder, caplog: pytest.LogCaptureFixture) -> None:
    renderer = changed_renderer()
    snap = renderer.snapshot()
    pieces = snap.unbuilt()
    assert len(pieces) > 5
    expected = [members.rebuild(p.job())[0] for p in pieces]
    with caplog.at_level(logging.INFO, logger="exporter.offload"):
        await builder.build(pieces)
    assert builder.worker_pid not in (None, os.getpid())
    assert _logged(caplog, "compression worker started") == 1
    assert _logged(caplog, "", logging.WARNING) == 0
    assert [p.built.gz for p in pieces if p.built is not None] == expected
    raw = b"".join(snap.texts())
    assert gzip.decompress(b"".join(snap.parts(gzip=True))) == raw
    renderer.commit(snap)
    assert renderer.pending_bytes == 0
    assert gzip.decompress(gzip_body(renderer)) == renderer.render_body() == raw


async def test_a_dead_worker_is_logged_and_its_batches_built_in_a_thread(
        builder: MemberBuilder, caplog: pytest.LogCaptureFixture) -> None:
    await builder.start()
    pid = builder.worker_pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    await asyncio.sleep(0.2)
    renderer = changed_renderer()
    snap = renderer.snapshot()
    caplog.clear()  # from here on
    with caplog.at_level(logging.INFO, logger="exporter.offload"):
        await builder.build(snap.unbuilt())
        assert gzip.decompress(b"".join(snap.parts(gzip=True))) == b"".join(snap.texts())
        assert _logged(caplog, "", logging.ERROR) == 1
        assert _logged(caplog, "compression worker stopped", logging.ERROR) == 1
        # Within the retry interval no new worker is started: the thread goes on building.
        renderer.update_group(GROUP, [])
        await builder.build(renderer.snapshot().unbuilt())
    assert _logged(caplog, "compression worker started") == 0 and builder.worker_pid is None


async def test_a_worker_that_cannot_start_leaves_the_thread_to_build(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    b = MemberBuilder()
    renderer = changed_renderer()
    snap = renderer.snapshot()
    with caplog.at_level(logging.INFO, logger="exporter.offload"):
        await b.build(snap.unbuilt())
    assert gzip.decompress(b"".join(snap.parts(gzip=True))) == b"".join(snap.texts())
    assert _logged(caplog, "compression worker started") == 0 and b.worker_pid is None
    assert _logged(caplog, "", logging.ERROR) == 1
    assert _logged(caplog, "cannot start the compression worker", logging.ERROR) == 1


async def test_a_caller_cancelled_mid_batch_leaves_the_pipe_in_step(
        builder: MemberBuilder, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(memberbuilder, "BATCH_BYTES", 1)  # one batch per bucket: many round trips
    renderer = changed_renderer(every=2)
    await builder.start()
    first = asyncio.ensure_future(builder.build(renderer.snapshot().unbuilt()))
    while not builder.busy:  # until the worker was asked: a reply is on its way
        await asyncio.sleep(0)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    snap = renderer.snapshot()
    with caplog.at_level(logging.WARNING, logger="exporter.offload"):
        await builder.build(snap.unbuilt())
    assert gzip.decompress(b"".join(snap.parts(gzip=True))) == b"".join(snap.texts())
    assert _logged(caplog, "", logging.WARNING) == 0  # the worker kept answering, in step


async def test_batches_are_bounded_by_what_they_carry_as_well_as_by_the_text_they_make(
        builder: MemberBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    # Buckets never built carry their whole text; changed ones their member and a few lines.
    fresh = Renderer(bucket_bytes=2048)
    fleet(fresh, 300)
    changed = changed_renderer(n=300, every=50)
    for renderer in (fresh, changed):
        pieces = renderer.snapshot().unbuilt()
        text, carried = sum(p.size for p in pieces), sum(p.carried for p in pieces)
        monkeypatch.setattr(memberbuilder, "BATCH_BYTES", text // 2 + 1)
        monkeypatch.setattr(memberbuilder, "CARRIED_BYTES", text // 3 + 1)
        batches: list[int] = []
        snap = renderer.snapshot()
        await builder.build(snap.unbuilt(), after_batch=lambda batch, out=batches: out.append(len(batch)))
        assert gzip.decompress(b"".join(snap.parts(gzip=True))) == b"".join(snap.texts())
        if renderer is fresh:
            assert carried >= text and len(batches) >= 3  # split by what they carry
        else:
            assert carried < text // 3 and len(batches) == 2  # split by the text they make


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


async def test_pending_lines_past_a_share_of_the_limit_are_compressed_off_the_loop(
        builder: MemberBuilder) -> None:
    renderer = changed_renderer()
    renderer.pending_share = 0
    renderer.pending_floor = renderer.pending_bytes + 1  # just under the limit the loop acts at
    before = renderer.pending_bytes
    freed = await compaction.compress_pending(renderer, builder)
    assert builder.worker_pid is not None, "the worker built them"
    end = renderer.pending_floor * compaction.END[0] // compaction.END[1]
    assert freed > 0 and renderer.pending_bytes <= end < before
    assert gzip.decompress(gzip_body(renderer)) == renderer.render_body()

    # Below START of the limit nothing is done.
    renderer = changed_renderer()
    renderer.pending_share = 0
    renderer.pending_floor = renderer.pending_bytes * compaction.START[1] // compaction.START[0] + 1
    assert await compaction.compress_pending(renderer, builder) == 0
    assert renderer.pending_bytes > 0


async def test_the_heaviest_buckets_go_first_and_changes_during_a_build_stay_pending(
        builder: MemberBuilder) -> None:
    renderer = changed_renderer()
    pieces = renderer.heaviest(1)
    assert len(pieces) == 1
    assert pieces[0].bucket.pending_bytes == max(b.pending_bytes for b in renderer._dirty)

    pieces = renderer.heaviest(1 << 40)
    build = asyncio.ensure_future(builder.build(pieces))
    late = machine("m0")
    renderer.update_objects(GROUP, [(replace(late, version="v9.9.9"), result(late, phase="Running"))])
    await build
    renderer.install(pieces)
    assert renderer.pending_bytes > 0
    body = renderer.render_body()
    assert b"v9.9.9" in body
    assert gzip.decompress(gzip_body(renderer)) == body


async def test_a_failing_compaction_is_logged_once_and_retried(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    calls = 0

    async def broken(renderer: Renderer, builder: MemberBuilder) -> int:
        nonlocal calls
        calls += 1
        raise RuntimeError("boom")

    monkeypatch.setattr(compaction, "compress_pending", broken)
    loop = compaction.keep_compressed(Renderer(), MemberBuilder(process=False), every=0.01)
    task = asyncio.ensure_future(loop)
    with caplog.at_level(logging.ERROR, logger="exporter.compaction"):
        while calls < 5:
            await asyncio.sleep(0.01)
    assert not task.done(), "the task goes on after a failure"
    task.cancel()
    assert sum("compressing pending lines failed" in r.getMessage() for r in caplog.records) == 1


def test_installed_pieces_let_go_of_their_old_member_and_pending_lines() -> None:
    # A scrape holds its pieces until its last byte: once installed, only the new member is kept.
    renderer = Renderer(bucket_bytes=2048)
    objs = fleet(renderer, 300)
    gzip_body(renderer)
    renderer.update_group(GROUP, [(replace(m, version="v1.31.0"), result(m, phase="Running"))
                                  for m in objs[::7]])
    snap = renderer.snapshot()
    pieces = snap.unbuilt()
    assert pieces
    for p in pieces:
        p.done(members.rebuild(p.job()))
    renderer.install(pieces)
    assert all(p.base is p.built and not p.pending for p in pieces)
    assert snap.unbuilt() == []
    body = b"".join(snap.texts())
    assert gzip.decompress(b"".join(snap.parts(gzip=True))) == body == renderer.render_body()
    # A change made after the install stays pending, untouched, through the scrape's final commit
    # (which skips what was installed already).
    renderer.update_group(GROUP, [(replace(objs[0], version="v1.32.9"), result(objs[0], phase="Running"))])
    dirty = [(b, b.pending) for fam in renderer._families for b in fam.buckets if b.pending]
    assert dirty
    renderer.commit(snap)
    assert all(b.pending is pending for b, pending in dirty)
    assert b"v1.32.9" in renderer.render_body()
