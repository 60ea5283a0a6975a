"""The HTTP server: ``/metrics``, ``/healthz``, ``/readyz`` (aiohttp).

Owns request handling: basic auth from the web config, having the publisher rebuild the buckets
changed since the last round off the loop (so a large scrape never blocks event handling, and
each object's series are consistent: see ``exporter.metrics.renderer``), streaming the body as its
parts (gzip members that concatenate to one gzip stream, or raw bucket
texts decompressed one at a time as they are written) without ever joining it, the text-format
Content-Type, and recording the scrape's duration and size. Probes are not behind authentication
so kubelets can reach them: ``/healthz`` is 200 while the process serves; ``/readyz`` is 200 or 503
as the composition root's ``ready`` says, with a plain-text body of what is not current and why.
With a web config, every response carries its ``headers``, requests beyond its ``rate_limit``
get 429 (probes excepted), a connection whose verified client certificate has none of
``client_allowed_sans`` is closed before any request is read, and basic auth answers 401 (429
when too many password checks are already waiting).

Connections (``LimitedSite``, ``ServerLimits``): a connection must send a request's headers within
``header_timeout`` of connecting or of its first byte after a response, is closed after
``idle_timeout`` without a request, and a response whose client reads nothing for
``write_timeout`` is aborted. At most ``max_connections`` are open: beyond that a new connection
evicts the one idle or waiting for headers the longest (a client that finished its headers is
never evicted), so a flood of slow connections can neither exhaust descriptors nor keep a probe
out. TLS handshakes are bounded by ``header_timeout`` too. ``make_probe_app`` serves only the
probes, for a plain-HTTP listener the kubelet can reach when client certificates are required.
The metrics are served at the telemetry path (``--web.telemetry-path``, default ``/metrics``),
the landing page (``exporter.landing``) at ``/``, both behind the web config's authentication.
Owns no knowledge of kinds or metric names.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import resource
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from exporter.landing import page as landing_page
from exporter.metrics import selfmetrics
from exporter.metrics.exposition import CONTENT_TYPE
from exporter.metrics.members import gzip_member
from exporter.metrics.process import ProcessMetrics
from exporter.metrics.publisher import Publisher
from exporter.metrics.renderer import Renderer
from exporter.metrics.selfmetrics import ExporterStats, ResourceStats
from exporter.timeslice import SLICE_SECONDS, TimeSlice
from exporter.webconfig import TokenBucket, WebConfig

log = logging.getLogger("exporter.web")

WRITE_CHUNK = 1 << 16  # small parts are joined up to this before a write, to save syscalls
YIELD_AFTER_SECONDS = SLICE_SECONDS  # the longest a /metrics response writes before letting others run


@dataclass
class Exposition:
    """What the server serves; the composition root fills it in."""

    renderer: Renderer
    stats: ExporterStats
    ready: Callable[[], bool]
    resources: Callable[[], Iterable[ResourceStats]]
    # Runs the round of bucket rebuilds each scrape serves: the composition root gives one with
    # a worker process; by default (None) one whose rebuilds run in a thread is made.
    publisher: Publisher | None = None
    # Lines for the /readyz body: what is not current and why (also what is merely reported, as
    # a resource the exporter may not read, while ready).
    ready_detail: Callable[[], Iterable[str]] = lambda: ()
    # The process_* and python_info families; None with --web.disable-exporter-metrics.
    process: ProcessMetrics | None = None
    # The landing page at /; by default one with the links and no configuration summary.
    landing: bytes | None = None

    def __post_init__(self) -> None:
        if self.publisher is None:
            self.publisher = Publisher(self.renderer, process=False)


@dataclass(frozen=True, slots=True)
class ServerLimits:
    header_timeout: float = 10.0  # connect (or first byte after a response) to end of headers
    idle_timeout: float = 90.0  # without a request; above Prometheus' usual 1m interval, to keep alive
    write_timeout: float = 30.0  # a response waiting this long for the client to read is aborted
    max_connections: int = 0  # 0: half the soft RLIMIT_NOFILE, at most 512

    def connection_limit(self) -> int:
        if self.max_connections > 0:
            return self.max_connections
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return 512
        return max(16, min(512, soft // 2))


def _qvalue(params: str) -> float | None:
    q = 1.0
    for param in params.split(";"):
        name, _, value = param.strip().partition("=")
        if name.strip().lower() == "q":
            try:
                q = float(value.strip())
            except ValueError:
                return None  # an unreadable weight: the coding is ignored
            if not 0.0 <= q <= 1.0:
                return None
    return q


def _accepts_gzip(request: web.Request) -> bool:
    """Gzip when the client gives it a weight above 0 (``*`` counts for gzip and identity when
    they are not named) that is not below identity's (RFC 9110 12.5.3)."""
    weights: dict[str, float] = {}
    for item in request.headers.get("Accept-Encoding", "").split(","):
        coding, _, params = item.strip().partition(";")
        coding = coding.strip().lower()
        q = _qvalue(params)
        if coding and q is not None:
            weights[coding] = max(q, weights.get(coding, 0.0)) if coding in weights else q
    star = weights.get("*")
    gzip = weights.get("gzip", weights.get("x-gzip", star if star is not None else 0.0))
    identity = weights.get("identity", star if star is not None else 0.0)
    return gzip > 0.0 and gzip >= identity


async def _body(exposition: Exposition, gzip: bool,
                names: Collection[str] | None = None) -> tuple[Iterable[bytes], int, int]:
    """The body's parts, its length on the wire and its uncompressed size, as of now.

    ``names``: only these metric families (``/metrics?name[]=...``), the exporter's own included.
    The publisher's round rebuilds (off the loop) the buckets changed since the last round; the
    body is then the family headers and the buckets' gzip members, or, raw, their texts,
    decompressed one at a time as the write reaches them (raw is the fallback: Prometheus asks for
    gzip), so a scrape never holds more than one bucket's text beyond the members.
    """
    renderer = exposition.renderer
    assert exposition.publisher is not None  # made in __post_init__
    published = await exposition.publisher.publish(names)
    tail = selfmetrics.render(
        exposition.stats,
        exposition.resources(),
        rendered_objects=renderer.renders,
        cached_objects=len(renderer),
        names=names,
    )
    if exposition.process is not None:
        tail += exposition.process.render(names)
    size = published.size + len(tail)
    if not gzip:
        return itertools.chain(published.texts(), (tail,)), size, size
    parts = [*published.gzip_parts(), gzip_member(tail)]
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


class _Stalled(ConnectionResetError):
    """The connection ``_write`` aborted: the client stopped reading (logged there)."""


async def _write(request: web.Request, response: web.StreamResponse, chunk: bytes, timeout: float) -> None:
    """``response.write``, aborting the connection when the client has read nothing for ``timeout``.

    A timer rather than ``wait_for``: a write that need not wait must not yield to the loop (the
    write loop's time slice decides that).
    """
    stalled = False

    def abort() -> None:
        nonlocal stalled
        stalled = True
        if request.transport is not None:
            request.transport.abort()

    timer = asyncio.get_running_loop().call_later(timeout, abort)
    try:
        await response.write(chunk)
    except (ConnectionError, asyncio.CancelledError):
        if not stalled:
            raise
    finally:
        timer.cancel()
    if stalled:
        log.warning("a client stopped reading a response; connection closed",
                    extra={"peer": request.remote, "timeout_seconds": timeout})
        raise _Stalled("write timeout")


PROBES = frozenset({"/healthz", "/readyz"})


def _probe_handlers(exposition: Exposition) -> tuple[
        Callable[[web.Request], Awaitable[web.Response]], Callable[[web.Request], Awaitable[web.Response]]]:
    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(_: web.Request) -> web.Response:
        ready = exposition.ready()
        lines = ["ready" if ready else "not ready", *exposition.ready_detail()]
        text = "".join(f"{line}\n" for line in lines)
        return web.Response(status=200 if ready else 503, text=text)

    return healthz, readyz


def make_probe_app(exposition: Exposition) -> web.Application:
    """Only ``/healthz`` and ``/readyz``: for a listener the kubelet reaches without a client certificate."""
    healthz, readyz = _probe_handlers(exposition)
    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app


def make_app(exposition: Exposition, web_config: WebConfig | None = None,
             limits: ServerLimits | None = None, telemetry_path: str = "/metrics") -> web.Application:
    auth = web_config if web_config is not None and web_config.auth_required else None
    write_timeout = (limits or ServerLimits()).write_timeout
    extra_headers = dict(web_config.headers) if web_config is not None else {}
    bucket = TokenBucket(web_config.rate_limit) if web_config is not None and web_config.rate_limit else None

    async def denied(request: web.Request) -> web.Response | None:
        """The answer to a request its credentials do not let through, else None."""
        if auth is None:
            return None
        verdict = await auth.authorize(request.headers.get("Authorization"))
        if verdict is None:
            return web.Response(status=429, text="Too Many Requests: password checks are busy\n",
                                headers={"Retry-After": "1"})
        if verdict:
            return None
        challenge = {"WWW-Authenticate": 'Basic realm="fleet-status-exporter"'}
        return web.Response(status=401, text="Unauthorized\n", headers=challenge)

    @web.middleware
    async def guard(request: web.Request,
                    handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        if web_config is not None and request.transport is not None and \
                not web_config.sans_allowed(request.transport.get_extra_info("peercert")):
            request.transport.close()  # normally closed at connection (LimitedSite); this is the backstop
            raise web.HTTPForbidden(text="client certificate SAN not allowed\n")
        if bucket is not None and request.path not in PROBES and not bucket.allow():
            return web.Response(status=429, text="Too Many Requests\n")
        return await handler(request)

    async def add_headers(_: web.Request, response: web.StreamResponse) -> None:
        for name, value in extra_headers.items():
            response.headers[name] = value

    async def metrics(request: web.Request) -> web.StreamResponse:
        refusal = await denied(request)
        if refusal is not None:
            return refusal
        started = time.perf_counter()
        gzip = _accepts_gzip(request)
        # name[]=<family> (repeatable) selects families, as prometheus_client's exposition does:
        # a scrape job, or a probe watching one family, need not fetch the whole fleet.
        names = frozenset(request.query.getall("name[]", [])) or None
        parts, length, size = await _body(exposition, gzip, names)
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
        try:
            for chunk in _chunks(parts):
                # write() waits for the transport to drain past its limit, so the body is sent
                # piece by piece, never copied into one bytes object (raw parts are even made
                # only here, one bucket at a time).
                await _write(request, response, chunk, write_timeout)
                await time_slice.pause()
            await response.write_eof()
        except _Stalled:
            pass  # the exporter closed it, and said so
        except ConnectionError as exc:
            # The client went away (Prometheus does past its scrape timeout, and reports that
            # itself): nothing is wrong here, and there is no one left to answer.
            log.debug("a client closed the connection before the end of a response",
                      extra={"peer": request.remote, "error": str(exc)})
        return response

    healthz, readyz = _probe_handlers(exposition)

    landing_body = exposition.landing if exposition.landing is not None else landing_page(telemetry_path)

    async def landing(request: web.Request) -> web.Response:
        refusal = await denied(request)
        if refusal is not None:
            return refusal
        return web.Response(body=landing_body, content_type="text/html", charset="utf-8")

    app = web.Application(middlewares=[guard])
    if extra_headers:
        app.on_response_prepare.append(add_headers)
    app.router.add_get(telemetry_path, metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/", landing)
    return app


class _Connections:
    """The open connections of a ``LimitedSite``, for its limit and evictions."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open: dict[_Handler, None] = {}  # in order of last activity
        self.evicted = 0
        self.refused = 0

    def admit(self, handler: _Handler) -> bool:
        """Make room for ``handler``: False when every open connection is serving a request."""
        if len(self.open) >= self.limit:
            victim = next((h for h in self.open if h.evictable), None)
            if victim is None:
                self.refused += 1
                return False
            self.evicted += 1
            self.forget(victim)
            victim.force_close()
        self.open[handler] = None
        return True

    def touch(self, handler: _Handler) -> None:
        if handler in self.open:
            del self.open[handler]
            self.open[handler] = None

    def forget(self, handler: _Handler) -> None:
        self.open.pop(handler, None)


class _Handler(RequestHandler):
    """aiohttp's connection handler with a header timeout, a connection limit and the SAN check."""

    def __init__(self, manager: Any, connections: _Connections, limits: ServerLimits,
                 web_config: WebConfig | None, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._connections = connections
        self._limits = limits
        self._web_config = web_config
        self._header_deadline: asyncio.TimerHandle | None = None
        self._seen = 0  # requests whose headers were complete

    @property
    def evictable(self) -> bool:
        """Idle, or still waiting for a request's headers."""
        waiter = self._waiter
        return self._current_request is None and not self._messages and (waiter is None or not waiter.done())

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not self._connections.admit(self):
            transport.close()
            return
        super().connection_made(transport)
        config = self._web_config
        if config is not None and not config.sans_allowed(transport.get_extra_info("peercert")):
            log.warning("client certificate has none of client_allowed_sans; connection closed",
                        extra={"peer": transport.get_extra_info("peername")})
            self.force_close()
            return
        self._arm()

    def _arm(self) -> None:
        if self._header_deadline is None:
            self._header_deadline = self._loop.call_later(self._limits.header_timeout, self._headers_late)

    def _disarm(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_late(self) -> None:
        self._header_deadline = None
        if self._request_count == self._seen:
            self.force_close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._request_count != self._seen:
            self._seen = self._request_count
            self._disarm()
            self._connections.touch(self)
        elif self._current_request is None and not self._messages:
            self._arm()  # the first bytes of a request after a kept-alive response

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm()
        self._connections.forget(self)
        if self._manager is not None:
            super().connection_lost(exc)


class LimitedSite(web.TCPSite):
    """A TCP site whose connections obey ``ServerLimits`` (see the module docstring)."""

    def __init__(self, runner: web.BaseRunner, host: str | None, port: int, *,
                 limits: ServerLimits | None = None, web_config: WebConfig | None = None,
                 ssl_context: Any = None, backlog: int = 128) -> None:
        super().__init__(runner, host, port, ssl_context=ssl_context, backlog=backlog)
        self.limits = limits or ServerLimits()
        self.web_config = web_config
        self.connections = _Connections(self.limits.connection_limit())

    async def start(self) -> None:
        await web.BaseSite.start(self)
        loop = asyncio.get_running_loop()
        server = self._runner.server
        assert server is not None
        kwargs = {**getattr(server, "_kwargs", {}), "keepalive_timeout": self.limits.idle_timeout}

        def factory() -> _Handler:
            return _Handler(server, self.connections, self.limits, self.web_config, loop=loop, **kwargs)

        self._server = await loop.create_server(
            factory, self._host, self._port, ssl=self._ssl_context, backlog=self._backlog,
            ssl_handshake_timeout=self.limits.header_timeout if self._ssl_context else None,
        )
