"""Connections and resources: slow clients cannot exhaust descriptors or keep probes out, a client
that stops reading is cut off, a stopped compression worker is not waited for, and SIGTERM ends
the process within seconds whatever it is doing. Loads run against 127.0.0.1 only, bounded in
count and time."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from aiohttp import web

from exporter.metrics.publisher import Publisher
from tests.kubeapi.fixtures import eventually
from tests.test_web import exposition

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(port: int, path: str, timeout: float) -> tuple[int, bytes]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as resp:
        return resp.status, resp.read()


def wait_healthy(port: int, proc: subprocess.Popen[bytes], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the exporter exited"
        try:
            if get(port, "/healthz", 1.0)[0] == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the exporter did not start")


def start_exporter(port: int, files: Path, nofile: int | None = None,
                   prelude: str = "") -> subprocess.Popen[bytes]:
    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    code = prelude + "\nimport sys\nfrom exporter.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", code, "serve", "--from-files", str(files), "--files.poll-interval", "0.5",
         "--web.listen-address", f"127.0.0.1:{port}"],
        cwd=ROOT, env=env, preexec_fn=limit, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    target = tmp_path / "fleet"
    target.mkdir()
    for path in sorted(EXAMPLES.glob("*.yaml"))[:3]:
        (target / path.name).write_bytes(path.read_bytes())
    return target


async def test_healthz_and_file_polling_go_on_while_1100_connections_dribble_their_headers(fleet):
    # The container default of 1,024 descriptors: before, the dribblers took them all, accept()
    # failed, /healthz timed out and the files source could not open a file.
    port = free_port()
    proc = start_exporter(port, fleet, nofile=1024)
    writers: list[asyncio.StreamWriter] = []
    try:
        await asyncio.to_thread(wait_healthy, port, proc)

        async def dribbler() -> None:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                return
            writers.append(writer)
            try:
                writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
                for _ in range(60):
                    await asyncio.sleep(1.0)
                    writer.write(b"X")
                    await writer.drain()
            except (OSError, ConnectionError):
                pass

        dribblers = [asyncio.ensure_future(dribbler()) for _ in range(1100)]
        await asyncio.sleep(3.0)
        descriptors = len(os.listdir(f"/proc/{proc.pid}/fd"))
        started = time.monotonic()
        try:
            status, _ = await asyncio.to_thread(get, port, "/healthz", 5.0)
        except OSError:
            status = None
        healthz_seconds = time.monotonic() - started
        # A file added now is read by the next poll.
        (fleet / "added.yaml").write_text(
            "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Machine\nmetadata:\n  name: dribble-proof\n"
            "  namespace: default\n  uid: dribble-proof\nspec:\n  clusterName: c\n")
        seen = False
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not seen:
            try:
                _, body = await asyncio.to_thread(get, port, "/metrics", 5.0)
                seen = b"dribble-proof" in body
            except OSError:
                pass
            await asyncio.sleep(0.5)
        print(f"descriptors={descriptors} healthz_seconds={healthz_seconds:.3f}")
        assert status == 200
        assert seen, "the files source stopped reading"
        assert descriptors < 1000
        for task in dribblers:
            task.cancel()
        await asyncio.gather(*dribblers, return_exceptions=True)
    finally:
        for writer in writers:
            writer.transport.abort()
        stop(proc)


async def _site(app: web.Application, **limits: float) -> tuple[web.AppRunner, object, int]:
    from exporter.web import LimitedSite, ServerLimits

    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    port = free_port()
    site = LimitedSite(runner, "127.0.0.1", port, limits=ServerLimits(**limits))  # type: ignore[arg-type]
    await site.start()
    return runner, site, port


def _serve_zeros(monkeypatch: pytest.MonkeyPatch, mib: int) -> None:
    """Make /metrics answer ``mib`` MiB of zeros, whatever the exposition holds."""
    import exporter.web as web_module

    async def huge(*_args: object, **_kw: object) -> tuple[list[bytes], int, int]:
        return [bytes(1 << 20)] * mib, mib << 20, mib << 20

    monkeypatch.setattr(web_module, "_body", huge)


async def _until_connections(site: object, open_: bool) -> None:
    """Wait until the site has (``open_``) or has no open connection."""
    await eventually(lambda: bool(site.connections.open) == open_,  # type: ignore[attr-defined]
                     10.0, "an open connection" if open_ else "no open connection")


async def test_a_connection_that_sends_no_headers_is_closed_after_the_header_timeout():
    runner, _, port = await _site(make_app_(), header_timeout=0.5, idle_timeout=60.0)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\n")  # and never the rest
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the server
        # A client that sends its request in time is answered, and kept alive.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(2):
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (await asyncio.wait_for(reader.readuntil(b"ok\n"), 5)).startswith(b"HTTP/1.1 200")
            await asyncio.sleep(0.8)  # idle between requests is not a header timeout
        writer.close()
    finally:
        await runner.cleanup()


async def test_at_the_connection_limit_the_longest_waiting_connection_makes_room():
    runner, site, port = await _site(make_app_(), header_timeout=30.0, max_connections=8)
    try:
        slow = [await asyncio.open_connection("127.0.0.1", port) for _ in range(20)]
        for _, writer in slow:
            writer.write(b"GET /metrics HTTP/1.1\r\n")
        await asyncio.sleep(0.2)
        assert len(site.connections.open) <= 8  # type: ignore[attr-defined]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (await asyncio.wait_for(reader.readuntil(b"ok\n"), 5)).startswith(b"HTTP/1.1 200")
        assert await asyncio.wait_for(slow[0][0].read(), 5) == b""  # the oldest was evicted
    finally:
        await runner.cleanup()


def make_app_() -> web.Application:
    from exporter.web import make_app

    return make_app(exposition([True]))


@pytest.mark.pure_python
async def test_a_client_that_stops_reading_is_cut_off_after_the_write_timeout(monkeypatch, caplog):
    import exporter.web as web_module
    from exporter.web import ServerLimits

    _serve_zeros(monkeypatch, 256)  # that the client never reads
    app = web_module.make_app(exposition([True]), limits=ServerLimits(write_timeout=0.5))
    runner, site, port = await _site(app, write_timeout=0.5)
    try:
        with caplog.at_level(logging.DEBUG, logger="exporter.web"):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            # The server accepts the connection once the loop runs: until then none is open.
            await _until_connections(site, True)
            assert site.connections.open  # type: ignore[attr-defined]
            await _until_connections(site, False)
            assert not site.connections.open  # type: ignore[attr-defined]

            def said() -> list[tuple[int, str]]:
                return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "exporter.web"]

            # The connection is forgotten as soon as it is aborted; the handler, waiting on its
            # write, logs a loop step or more later (and anything else in that same step).
            await eventually(said, 10.0, "the exporter's log line")
            sock.close()
        # One line, the exporter's: it closed the connection, the client did not.
        assert said() == [(logging.WARNING, "a client stopped reading a response; connection closed")]
    finally:
        await runner.cleanup()


@pytest.mark.pure_python
async def test_a_client_that_goes_away_mid_response_is_let_go_without_an_error(monkeypatch, caplog):
    # Prometheus closes the connection of a scrape past its timeout: that logged "Error handling
    # request" with a traceback, as if the exporter had failed.
    import exporter.web as web_module

    _serve_zeros(monkeypatch, 64)
    runner, site, port = await _site(web_module.make_app(exposition([True])))
    try:
        with caplog.at_level(logging.DEBUG):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (await asyncio.wait_for(reader.readexactly(1 << 16), 5)).startswith(b"HTTP/1.1 200")
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            writer.close()  # reset, the rest unread
            await _until_connections(site, False)
            assert not site.connections.open  # type: ignore[attr-defined]
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (await asyncio.wait_for(reader.readuntil(b"ok\n"), 5)).startswith(b"HTTP/1.1 200")
            writer.close()
        assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert any("closed the connection" in r.getMessage() for r in caplog.records
                   if r.name == "exporter.web" and r.levelno == logging.DEBUG)
    finally:
        await runner.cleanup()


@pytest.mark.pure_python
async def test_a_stopped_compression_worker_is_not_waited_for(monkeypatch, caplog):
    from exporter import offload

    monkeypatch.setattr(offload, "REPLY_SECONDS", 1.0, raising=False)
    from tests.test_offload import changed_renderer

    renderers = [changed_renderer() for _ in range(8)]
    expected = [changed_renderer().render_body() for _ in range(8)]
    # One compression worker, as the exporter has: the eight publishers share it.
    publishers = [Publisher(r) for r in renderers]
    worker = publishers[0].worker
    worker.reply_seconds = 1.0
    for p in publishers:
        p.worker = worker
    await worker.start()
    pid = worker.worker_pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        # Eight scrapes at once, as Prometheus retrying: all are built (in threads), promptly,
        # and the loop's default executor (the files source polls with it) stays free.
        rounds = [asyncio.ensure_future(p.publish()) for p in publishers]
        assert await asyncio.wait_for(asyncio.to_thread(lambda: 42), 5) == 42
        with caplog.at_level(logging.WARNING, logger="exporter.offload"):
            published = await asyncio.wait_for(asyncio.gather(*rounds), 30)
        assert any("compression worker" in r.getMessage() for r in caplog.records)  # given up on, logged
        for body, want in zip(published, expected, strict=True):
            assert b"".join(body.texts()) == want
    finally:
        for sig in (signal.SIGCONT, signal.SIGKILL):  # today's main leaves it stopped
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        await worker.stop()


def test_sigterm_during_a_long_initial_load_exits_within_seconds(fleet):
    # The initial load runs in a thread; here it takes 120 s (a huge fleet on a slow volume).
    prelude = ("import time\nimport exporter.sources.files as f\n_load = f.load\n"
               "def slow(*a, **k):\n    time.sleep(120)\n    return _load(*a, **k)\nf.load = slow\n")
    port = free_port()
    proc = start_exporter(port, fleet, prelude=prelude)
    try:
        wait_healthy(port, proc)
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(8)
        except subprocess.TimeoutExpired:
            code = None
        assert code == 0, f"exit {code}, or still running 8 s after SIGTERM"
    finally:
        stop(proc)
