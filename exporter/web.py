"""The HTTP server: ``/metrics``, ``/healthz``, ``/readyz`` (aiohttp).

Owns request handling: basic auth from the web config, taking a renderer snapshot on the event
loop (so each object's series are consistent), joining and gzip-compressing it in a worker
thread (so a large scrape never blocks event handling), the text-format Content-Type, and
recording the scrape's duration and size. Probes are not behind authentication so kubelets can
reach them. Owns no knowledge of kinds or metric names.
"""

from __future__ import annotations

import asyncio
import gzip
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from aiohttp import web

from exporter.metrics import selfmetrics
from exporter.metrics.exposition import CONTENT_TYPE
from exporter.metrics.renderer import Renderer
from exporter.metrics.selfmetrics import ExporterStats, ResourceStats
from exporter.webconfig import WebConfig

GZIP_LEVEL = 5  # level 9 costs ~3x the CPU for a few percent on repetitive exposition text

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


def _accepts_gzip(request: web.Request) -> bool:
    for item in request.headers.get("Accept-Encoding", "").split(","):
        coding, _, params = item.strip().partition(";")
        if coding.strip().lower() in ("gzip", "*") and params.replace(" ", "") not in ("q=0", "q=0.0"):
            return True
    return False


def _build(renderer: Renderer, exposition: Exposition) -> tuple[Callable[[], bytes], Callable[[], None]]:
    """Take the snapshot now (on the loop); return the thread-safe join and the loop-side commit."""
    snap = renderer.snapshot()
    tail = selfmetrics.render(
        exposition.stats,
        exposition.resources(),
        rendered_objects=renderer.renders,
        cached_objects=len(renderer),
    )
    headers = renderer.headers
    return (lambda: snap.body(headers) + tail), (lambda: renderer.commit(snap))


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
        join, commit = _build(exposition.renderer, exposition)
        body = await asyncio.to_thread(join)
        commit()
        size = len(body)
        headers = {"Content-Type": CONTENT_TYPE}
        if _accepts_gzip(request):
            body = await asyncio.to_thread(gzip.compress, body, GZIP_LEVEL)
            headers["Content-Encoding"] = "gzip"
        exposition.stats.last_scrape_duration = time.perf_counter() - started
        exposition.stats.last_scrape_bytes = size
        # Content-Type is set by hand: aiohttp's content_type= would drop the version parameter.
        return web.Response(body=body, headers=headers)

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(_: web.Request) -> web.Response:
        if exposition.ready():
            return web.Response(text="ready\n")
        return web.Response(status=503, text="not ready: first list of every resource not complete\n")

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
