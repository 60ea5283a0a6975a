"""One informer loop: list, then watch, of one Kubernetes resource in one scope, into a sink.

Owns the rules of ``docs/architecture.md`` / design "Correctness rules for the kube source" for a
single (resource, namespace): a paginated list (restarted when its continue token expires; each
next page requested while the current one is projected) whose projections replace the scope's
contents atomically; watches from the list's resourceVersion,
advanced by events and bookmarks; 410 (HTTP or in-stream ERROR) leads to a relist, never to a
re-watch at the same version; every watch has a server ``timeoutSeconds`` and a client inactivity
timeout read with asyncio; errors back off with jitter. Also owns the plain counters the metrics
layer renders (``ResourceStats``). Does not own discovery, connecting or choosing what to watch
(``kube.py``, ``discovery.py``).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp
import orjson

from exporter.engine.model import Base
from exporter.sources.discovery import Resource
from exporter.sources.lines import LineReader
from exporter.timeslice import TimeSlice

log = logging.getLogger("exporter.sources.kube")

Projector = Callable[[Mapping[str, Any], Base | None], Base | None]
"""A raw object, and its last projection if there is one, to its projection (None: unreadable)."""


class Sink(Protocol):
    """Where projections go (``exporter.store.Store`` implements it)."""

    def replace(self, kind: str, objects: Iterable[Base], namespace: str | None = None) -> None: ...
    def upsert(self, obj: Base) -> None: ...
    def delete(self, kind: str, namespace: str, name: str) -> None: ...


class Transport(Protocol):
    """GET with query parameters; returns the open response (the caller reads and releases it)."""

    async def get(
        self, path: str, params: list[tuple[str, str]], timeout: aiohttp.ClientTimeout
    ) -> aiohttp.ClientResponse: ...


@dataclass(frozen=True, slots=True)
class LoopSettings:
    """Timing and paging of every loop; defaults follow client-go, tests shrink them."""

    page_size: int = 500
    watch_timeout: tuple[float, float] = (300.0, 600.0)  # server timeoutSeconds drawn from this range
    inactivity_timeout: float = 70.0  # no event nor bookmark for this long: the stream is stuck
    request_timeout: float = 60.0  # whole list page / discovery request; connect timeout of watches
    backoff_initial: float = 0.8
    backoff_factor: float = 2.0
    backoff_max: float = 30.0
    backoff_jitter: float = 1.0  # delay x (1 + jitter x U[0,1))
    backoff_reset_after: float = 120.0  # healthy this long: the next error starts from the initial delay
    min_watch_duration: float = 1.0  # a watch ending sooner with no events counts as failing


class Backoff:
    """Exponential backoff with jitter that resets after a healthy period."""

    def __init__(self, s: LoopSettings, rand: Callable[[], float] = random.random) -> None:
        self._s, self._rand = s, rand
        self._attempt = 0
        self._last_failure = -float("inf")

    def next_delay(self) -> float:
        now = time.monotonic()
        if now - self._last_failure > self._s.backoff_reset_after:
            self._attempt = 0
        base = self._s.backoff_initial * self._s.backoff_factor**self._attempt
        self._attempt += 1
        self._last_failure = now
        return min(base * (1.0 + self._s.backoff_jitter * self._rand()), self._s.backoff_max)


@dataclass
class ResourceStats:
    """Counters of one resource (all its namespaces), rendered by the metrics layer."""

    list_requests: dict[str, int] = field(default_factory=dict)  # by result: success | error | expired
    watch_requests: dict[str, int] = field(default_factory=dict)  # by result: success | error | expired
    events: dict[str, int] = field(default_factory=dict)  # by type: ADDED ... BOOKMARK ERROR
    relists: dict[str, int] = field(default_factory=dict)  # by cause: expired | error
    watch_ends: dict[str, int] = field(default_factory=dict)  # by cause: timeout | inactivity | dropped
    objects: dict[str, int] = field(default_factory=dict)  # by scope (namespace, "" = all)
    scopes_synced: dict[str, bool] = field(default_factory=dict)  # by scope
    invalid_objects: int = 0
    last_event_time: float | None = None  # Unix time of the last event or bookmark
    available: bool = False
    version: str = ""
    last_error: str = ""

    @property
    def synced(self) -> bool:
        return self.available and bool(self.scopes_synced) and all(self.scopes_synced.values())

    @property
    def object_count(self) -> int:
        return sum(self.objects.values())


def bump(counter: dict[str, int], key: str) -> None:
    counter[key] = counter.get(key, 0) + 1


class Expired(Exception):
    """410: the resourceVersion or continue token is gone; relist."""


class StatusError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}" if message else f"HTTP {status}")
        self.status = status


class Inactive(Exception):
    """Nothing (no event, no bookmark) arrived within the inactivity timeout."""


def _status_error(status: int, body: Any) -> Exception:
    message = str(body.get("message", "")) if isinstance(body, dict) else ""
    reason = body.get("reason") if isinstance(body, dict) else None
    if status == 410 or reason in ("Expired", "Gone"):
        return Expired(message or "resource version expired")
    return StatusError(status, message[:200])


class ResourceLoop:
    """List+watch of ``resource`` in ``namespace`` (None: all namespaces, or cluster scoped)."""

    def __init__(
        self,
        resource: Resource,
        namespace: str | None,
        transport: Transport,
        sink: Sink,
        project: Projector,
        stats: ResourceStats,
        settings: LoopSettings,
        *,
        on_object: Callable[[Mapping[str, Any]], None] | None = None,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.resource, self.namespace = resource, namespace
        self._transport, self._sink, self._project = transport, sink, project
        self.stats, self._s = stats, settings
        self._on_object = on_object
        self._rand = rand
        self._scope = namespace or ""
        self._where = f"{resource.name}" + (f" in namespace {namespace}" if namespace else "")
        self._path = resource.path(namespace)
        # (namespace, name) of every object seen, valid or not, with its last projection: the next
        # projection of the object reuses what is unchanged (``parse.project``). The same objects
        # the store holds, so no memory but the dict's.
        self._last: dict[tuple[str, str], Base | None] = {}
        self._invalid: set[tuple[str, ...]] = set()
        self._backoff = Backoff(settings, rand)
        self._seen = 0  # events and bookmarks received; tells a watch that closed at once, empty
        stats.scopes_synced.setdefault(self._scope, False)

    @property
    def synced(self) -> bool:
        return self.stats.scopes_synced.get(self._scope, False)

    async def run(self) -> None:
        cause = ""
        while True:
            try:
                rv = await self._list()
            except (StatusError, Expired, aiohttp.ClientError, OSError, TimeoutError, ValueError) as e:
                self._failed("list", e)
                await asyncio.sleep(self._backoff.next_delay())
                continue
            if cause:
                bump(self.stats.relists, cause)
            cause = await self._watch_until_relist(rv)
            log.info("relisting %s: %s", self._where, cause)

    # ---- list ----

    async def _list(self) -> str:
        timeout = aiohttp.ClientTimeout(total=self._s.request_timeout)
        projections: list[Base] = []
        latest: dict[tuple[str, str], Base | None] = {}
        token, restarts = "", 0
        page = self._fetch_page(token, timeout)
        try:
            while True:
                status, body = await page
                if status == 410 and token and restarts < 3:
                    # The continue token outlived the server's history: start a fresh full list.
                    bump(self.stats.list_requests, "expired")
                    log.info("continue token of %s expired; restarting the list", self._where)
                    projections, latest, token, restarts = [], {}, "", restarts + 1
                    page = self._fetch_page(token, timeout)
                    continue
                if status != 200 or not isinstance(body, dict):
                    raise _status_error(status, body)
                bump(self.stats.list_requests, "success")
                meta = body.get("metadata") or {}
                token = str(meta.get("continue") or "")
                if token:
                    # The API server (another process) builds and sends the next page while this
                    # one is projected, instead of both sides waiting for each other in turn.
                    page = self._fetch_page(token, timeout)
                # Projecting a page takes ~0.1 s: let the next page's request go out and its
                # bytes in, and /healthz answer, meanwhile.
                time_slice = TimeSlice()
                for raw in body.get("items") or []:
                    if isinstance(raw, dict):
                        key = self._key(raw)
                        latest[key] = p = self._read(raw, self._last.get(key))
                        if p is not None:
                            projections.append(p)
                    await time_slice.pause()
                del body
                if not token:
                    break
        finally:
            if not page.done():
                page.cancel()
            # Retrieve what a page fetched for a list that failed meanwhile ended with, unlogged.
            page.add_done_callback(lambda t: t.cancelled() or t.exception())
        self._sink.replace(self.resource.kind, projections, self.namespace)
        self._last = latest
        self.stats.objects[self._scope] = len(latest)
        if not self.synced:
            log.info("synced %s: %d objects", self._where, len(latest))
        self.stats.scopes_synced[self._scope] = True
        return str(meta.get("resourceVersion") or "")

    def _fetch_page(self, token: str, timeout: aiohttp.ClientTimeout) -> asyncio.Task[tuple[int, Any]]:
        params = [("limit", str(self._s.page_size)), *self._selector()]
        if token:
            params.append(("continue", token))
        return asyncio.create_task(self._get_json(params, timeout), name=f"list {self._where}")

    async def _get_json(
        self, params: list[tuple[str, str]], timeout: aiohttp.ClientTimeout
    ) -> tuple[int, Any]:
        resp = await self._transport.get(self._path, params, timeout)
        try:
            raw = await resp.read()
        finally:
            resp.release()
        try:
            return resp.status, orjson.loads(raw) if raw else None
        except ValueError:
            return resp.status, None

    # ---- watch ----

    async def _watch_until_relist(self, rv: str) -> str:
        """Watch, re-watching from the latest version, until a relist is needed; returns its cause."""
        loop = asyncio.get_running_loop()
        seen_at_list = self._seen
        while True:
            started, seen = loop.time(), self._seen
            try:
                rv = await self._watch(rv)
                if self._seen == seen and loop.time() - started < self._s.min_watch_duration:
                    await asyncio.sleep(self._backoff.next_delay())  # closed at once: don't spin
            except Expired as e:
                log.info("watch of %s expired: %s", self._where, e)
                if self._seen == seen_at_list:  # expired again right after a list: don't hammer the server
                    await asyncio.sleep(self._backoff.next_delay())
                return "expired"
            except Inactive:
                bump(self.stats.watch_ends, "inactivity")
                quiet = self._s.inactivity_timeout
                log.warning("watch of %s: nothing received for %.0fs; reconnecting", self._where, quiet)
            except StatusError as e:
                self._failed("watch", e)
                await asyncio.sleep(self._backoff.next_delay())
                if e.status != 429:  # throttling keeps the version; anything else relists
                    return "error"
            except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as e:
                self._failed("watch", e)
                await asyncio.sleep(self._backoff.next_delay())
    async def _watch(self, rv: str) -> str:
        low, high = self._s.watch_timeout
        params = [
            ("watch", "true"),
            ("resourceVersion", rv),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(max(1, round(low + (high - low) * self._rand())))),
            *self._selector(),
        ]
        timeout = aiohttp.ClientTimeout(sock_connect=self._s.request_timeout, connect=self._s.request_timeout)
        try:
            resp = await self._transport.get(self._path, params, timeout)
        except (aiohttp.ClientError, OSError, TimeoutError):
            bump(self.stats.watch_requests, "error")
            raise
        try:
            if resp.status != 200:
                bump(self.stats.watch_requests, "expired" if resp.status == 410 else "error")
                async with asyncio.timeout(self._s.request_timeout):
                    body = await resp.read()
                try:
                    raise _status_error(resp.status, orjson.loads(body) if body else None)
                except ValueError:
                    raise StatusError(resp.status, "") from None
            bump(self.stats.watch_requests, "success")
            # A backlog buffers hundreds of events, all handled without suspending: without the
            # slice the loop could serve nothing else (scrapes, probes) until they are done.
            time_slice = TimeSlice()
            lines = LineReader()
            while True:
                line = lines.next_line()
                if line is None:
                    try:
                        # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a
                        # cancellation that coincides with data arriving, and the loop would
                        # outlive stop().
                        async with asyncio.timeout(self._s.inactivity_timeout):
                            chunk = await resp.content.readany()
                    except TimeoutError:
                        raise Inactive() from None
                    except (aiohttp.ClientError, OSError):
                        bump(self.stats.watch_ends, "dropped")
                        raise
                    if chunk:
                        lines.feed(chunk)
                        continue
                    line = lines.rest()
                    if not line:
                        bump(self.stats.watch_ends, "timeout")
                        return rv  # the server ended the watch (timeoutSeconds): re-watch, no relist
                await time_slice.pause()
                if line.strip():
                    rv = self._handle(orjson.loads(line), rv)
        finally:
            resp.close()

    def _handle(self, event: Any, rv: str) -> str:
        etype = str(event.get("type", "")) if isinstance(event, dict) else ""
        obj = event.get("object") if isinstance(event, dict) else None
        if not isinstance(obj, dict):
            log.warning("watch of %s: event without object (type %r) ignored", self._where, etype)
            return rv
        self._seen += 1
        bump(self.stats.events, etype or "unknown")
        self.stats.last_event_time = time.time()
        if etype == "ERROR":
            raise _status_error(int(obj.get("code") or 500), obj)
        new_rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
        if etype == "BOOKMARK":
            return new_rv
        key = self._key(obj)
        if etype == "DELETED":
            self._last.pop(key, None)
            self._sink.delete(self.resource.kind, key[0], key[1])
        elif etype in ("ADDED", "MODIFIED"):
            projection = self._last[key] = self._read(obj, self._last.get(key))
            if projection is None:
                self._sink.delete(self.resource.kind, key[0], key[1])  # as a relist would: it is unreadable
            else:
                self._sink.upsert(projection)
        else:
            log.warning("watch of %s: unknown event type %r ignored", self._where, etype)
            return rv
        self.stats.objects[self._scope] = len(self._last)
        return new_rv

    # ---- helpers ----

    def _selector(self) -> list[tuple[str, str]]:
        selector = self.resource.spec.label_selector
        return [("labelSelector", selector)] if selector else []

    @staticmethod
    def _key(raw: Mapping[str, Any]) -> tuple[str, str]:
        meta = raw.get("metadata") or {}
        return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))

    def _read(self, raw: dict[str, Any], previous: Base | None) -> Base | None:
        # Lists of custom resources carry kind/apiVersion per item; other servers may not.
        raw.setdefault("kind", self.resource.kind)
        raw.setdefault("apiVersion", self.resource.api_version)
        if self._on_object is not None:
            self._on_object(raw)
        projection = self._project(raw, previous)
        if projection is None:
            meta = raw.get("metadata") or {}
            ident = (*self._key(raw), str(meta.get("uid") or ""))
            if ident not in self._invalid:
                self._invalid.add(ident)
                self.stats.invalid_objects += 1
                log.warning("skipping unreadable %s %s/%s (uid %s)", self.resource.kind, *ident)
        return projection

    def _failed(self, what: str, error: Exception) -> None:
        if what == "list":
            bump(self.stats.list_requests, "error")
        self.stats.last_error = f"{what}: {error}"[:300]
        log.warning("%s of %s failed: %s", what, self._where, error or type(error).__name__)
