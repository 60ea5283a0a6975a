"""The HTTP server: ``/metrics``, ``/healthz``, ``/readyz`` (aiohttp).

Owns request handling: basic auth from the web config, taking a renderer snapshot on the event
loop (so each object's series are consistent), having the gzip members of the buckets changed
since the last rebuild built off the loop (so a large scrape never blocks event handling),
streaming the body as its parts (gzip members that concatenate to one gzip stream, or raw bucket
texts decompressed one at a time as they are written) without ever joining it, the text-format
Content-Type, and recording the scrape's duration and size. Probes are not behind authentication
so kubelets can reach them: ``/healthz`` is 200 while the process serves; ``/readyz`` is 200 or 503
as the composition root's ``ready`` says, with a plain-text body of what is not current and why.
Owns no knowledge of kinds or metric names.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field

from aiohttp import web

from exporter.metrics import selfmetrics
from exporter.metrics.exposition import CONTENT_TYPE
from exporter.metrics.renderer import Renderer, gzip_member
from exporter.metrics.selfmetrics import ExporterStats, ResourceStats
from exporter.offload import MemberBuilder
from exporter.timeslice import SLICE_SECONDS, TimeSlice
from exporter.webconfig import WebConfig

WRITE_CHUNK = 1 << 16  # small parts are joined up to this before a write, to save syscalls
YIELD_AFTER_SECONDS = SLICE_SECONDS  # the longest a /metrics response writes before letting others run

LANDING = b"""<html><head><title>fleet-status-exporter</title></head><body>
<h1>fleet-status-exporter</h1><p><a href="/metrics">Metrics</a></p></body></html>
"""


@dataclass
class Exposition:
    """What the server serves; the composition root fills it in."""

    renderer: Renderer
    stats: ExporterStats
    ready: Callable[[], bool]
    resources: Callable[[], Iterable[ResourceStats]]
    # Builds the members of buckets changed since the last scrape: the composition root gives
    # one with a worker process; by default a thread does it.
    builder: MemberBuilder = field(default_factory=lambda: MemberBuilder(process=False))
    # Lines for the /readyz body: what is not current and why (also what is merely reported, as
    # a resource the exporter may not read, while ready).
    ready_detail: Callable[[], Iterable[str]] = lambda: ()


def _accepts_gzip(request: web.Request) -> bool:
    for item in request.headers.get("Accept-Encoding", "").split(","):
        coding, _, params = item.strip().partition(";")
        if coding.strip().lower() in ("gzip", "*") and params.replace(" ", "") not in ("q=0", "q=0.0"):
            return True
    return False


async def _body(renderer: Renderer, exposition: Exposition, gzip: bool,
                names: Collection[str] | None = None) -> tuple[Iterable[bytes], int, int]:
    """The body's parts, its length on the wire and its uncompressed size; the snapshot is taken now.

    ``names``: only these metric families (``/metrics?name[]=...``), the exporter's own included.

    Gzip: the members of buckets changed since the last scrape (and not yet rebuilt in the
    background) are built by the exposition's ``MemberBuilder``, off the loop, then kept. Raw:
    nothing is built ahead; each bucket's text is made (decompressed, with its pending changes
    spliced in) when the write reaches it, so a raw scrape never holds more than a bucket's text
    beyond the cache (raw is the fallback: Prometheus asks for gzip).
    """
    snap = renderer.snapshot(names)
    tail = selfmetrics.render(
        exposition.stats,
        exposition.resources(),
        rendered_objects=renderer.renders,
        cached_objects=len(renderer),
        names=names,
    )
    size = snap.size + len(tail)
    if not gzip:
        return itertools.chain(snap.texts(), (tail,)), size, size

    # Each batch's buckets are installed as it comes back, a step of the loop each: installing
    # thousands at the end, with the listing and the first writes, made one step of tens of ms.
    # Every piece with pending lines is in ``unbuilt``, so once this returns every member is built
    # and installed: nothing is left for ``renderer.commit``.
    await exposition.builder.build(snap.unbuilt(), after_batch=renderer.install)
    await asyncio.sleep(0)
    parts = snap.parts(gzip=True)  # every member is built by now: this only lists them
    parts.append(gzip_member(tail))
    await asyncio.sleep(0)
    return parts, sum(map(len, parts)), size


def _chunks(parts: Iterable[bytes], size: int = WRITE_CHUNK) -> Iterator[bytes]:
    """The parts, with runs of small ones (headers, small buckets) joined: one write per ~``size``."""
    pending: list[bytes] = []
    pending_size = 0
    for part in parts:
        if len(part) >= size:
            if pending:
                yield b"".join(pending)
                pending, pending_size = [], 0
            yield part
            continue
        pending.append(part)
        pending_size += len(part)
        if pending_size >= size:
            yield b"".join(pending)
            pending, pending_size = [], 0
    if pending:
        yield b"".join(pending)


def make_app(exposition: Exposition, web_config: WebConfig | None = None) -> web.Application:
    auth = web_config if web_config is not None and web_config.auth_required else None

    async def authorized(request: web.Request) -> bool:
        return auth is None or await auth.check_authorization(request.headers.get("Authorization"))

    def unauthorized() -> web.Response:
        challenge = {"WWW-Authenticate": 'Basic realm="fleet-status-exporter"'}
        return web.Response(status=401, text="Unauthorized\n", headers=challenge)

    async def metrics(request: web.Request) -> web.StreamResponse:
        if not await authorized(request):
            return unauthorized()
        started = time.perf_counter()
        gzip = _accepts_gzip(request)
        # name[]=<family> (repeatable) selects families, as prometheus_client's exposition does:
        # a scrape job, or a probe watching one family, need not fetch the whole fleet.
        names = frozenset(request.query.getall("name[]", [])) or None
        parts, length, size = await _body(exposition.renderer, exposition, gzip, names)
        if names is None:  # a filtered scrape says nothing about what a full one costs
            exposition.stats.last_scrape_duration = time.perf_counter() - started
            exposition.stats.last_scrape_bytes = size
        # Content-Type is set by hand: aiohttp's content_type= would drop the version parameter.
        headers = {"Content-Type": CONTENT_TYPE}
        if gzip:
            headers["Content-Encoding"] = "gzip"
        response = web.StreamResponse(headers=headers)
        response.content_length = length
        await response.prepare(request)
        # A client that reads as fast as we write never makes write() wait, and making raw
        # parts takes CPU: without the slice a raw scrape would hold the loop for its whole body.
        time_slice = TimeSlice(YIELD_AFTER_SECONDS)
        for chunk in _chunks(parts):
            # write() waits for the transport to drain past its limit, so the body is sent
            # piece by piece, never copied into one bytes object (raw parts are even made
            # only here, one bucket at a time).
            await response.write(chunk)
            await time_slice.pause()
        await response.write_eof()
        return response

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(_: web.Request) -> web.Response:
        ready = exposition.ready()
        lines = ["ready" if ready else "not ready", *exposition.ready_detail()]
        text = "".join(f"{line}\n" for line in lines)
        return web.Response(status=200 if ready else 503, text=text)

    async def landing(request: web.Request) -> web.Response:
        if not await authorized(request):
            return unauthorized()
        return web.Response(body=LANDING, content_type="text/html")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/", landing)
    return app
