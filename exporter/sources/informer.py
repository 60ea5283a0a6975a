"""One informer loop: list, then watch, of one Kubernetes resource in one scope, into a sink.

Owns the rules of ``docs/architecture.md`` / design "Correctness rules for the kube source" for a
single (resource, namespace): a paginated list (restarted when its continue token expires; each
next page requested while the current one is projected) whose projections replace the scope's
contents atomically; watches from the list's resourceVersion, advanced by events and bookmarks,
re-opened from the last version when the server ends them; 410 (HTTP or in-stream ERROR) leads to
a relist, never to a re-watch at the same version. Silence on a watch is normal (a real API server
sends a bookmark only once the resource's version moves): only a watch still open
``watch_grace`` after its own ``timeoutSeconds`` is stuck. Errors back off with jitter, or wait
what a 429/5xx's Retry-After asks; 403 and 404 make the scope unreadable (logged once, retried
every ``backoff_max``). Also owns the plain state the metrics layer and readiness read
(``WatchStats``, ``ResourceLoop.problem``). Does not own discovery, connecting or choosing what
to watch (``kube.py``, ``discovery.py``).
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
from exporter.sources.kube_client import CredentialError
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
    def get(self, key: tuple[str, str, str]) -> Base | None: ...


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
    watch_grace: float = 30.0  # a watch still open this long after its timeoutSeconds is stuck
    request_timeout: float = 60.0  # whole list page / discovery request; connect timeout of watches
    backoff_initial: float = 0.8
    backoff_factor: float = 2.0
    backoff_max: float = 30.0
    backoff_jitter: float = 1.0  # delay x (1 + jitter x U[0,1))
    backoff_reset_after: float = 120.0  # healthy this long: the next error starts from the initial delay
    min_watch_duration: float = 1.0  # a watch ending sooner with no events counts as failing
    # Failing to reach the API server (connection errors, 5xx, 429, ...) for longer than this makes
    # the source unready; shorter outages, an API server restart say, do not flap readiness.
    unready_after: float = 60.0


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
class WatchStats:
    """Counters of the list/watch loops of one resource (all its namespaces).

    The composition root turns them into the metrics layer's ``ResourceStats``."""

    list_requests: dict[str, int] = field(default_factory=dict)  # by result: success | error | expired
    watch_requests: dict[str, int] = field(default_factory=dict)  # by result: success | error | expired
    events: dict[str, int] = field(default_factory=dict)  # by type: ADDED ... BOOKMARK ERROR
    relists: dict[str, int] = field(default_factory=dict)  # by cause: expired | error | unreadable
    watch_ends: dict[str, int] = field(default_factory=dict)  # by cause: timeout | stuck | dropped
    objects: dict[str, int] = field(default_factory=dict)  # by scope (namespace, "" = all)
    scopes_synced: dict[str, bool] = field(default_factory=dict)  # by scope
    unreadable: dict[str, str] = field(default_factory=dict)  # by scope: forbidden | not_found
    failing_since: dict[str, float] = field(default_factory=dict)  # by scope: monotonic time
    invalid: dict[str, int] = field(default_factory=dict)  # by scope: objects present but unreadable
    last_event_time: float | None = None  # Unix time of the last completed list, event or bookmark
    available: bool = False
    version: str = ""
    unready_after: float = 60.0  # KubeSource sets its LoopSettings.unready_after

    @property
    def synced(self) -> bool:
        """Every scope listed, and none failing to reach the API server (connection errors, 401,
        5xx, 429, ...) for longer than ``unready_after``: what ``resource_synced`` exports."""
        if not (self.available and self.scopes_synced and all(self.scopes_synced.values())):
            return False
        if not self.failing_since:
            return True
        now = time.monotonic()
        return all(now - since <= self.unready_after for since in self.failing_since.values())

    @property
    def object_count(self) -> int:
        return sum(self.objects.values())

    @property
    def invalid_objects(self) -> int:
        return sum(self.invalid.values())

    @property
    def unreadable_reason(self) -> str | None:
        """Why some scope of the resource cannot be read (forbidden first), None when all can."""
        reasons = set(self.unreadable.values())
        return min(reasons) if reasons else None  # "forbidden" < "not_found"


def bump(counter: dict[str, int], key: str) -> None:
    counter[key] = counter.get(key, 0) + 1


class Expired(Exception):
    """410: the resourceVersion or continue token is gone; relist."""


class StatusError(Exception):
    def __init__(self, status: int, message: str, retry_after: float | None = None) -> None:
        super().__init__(f"HTTP {status}: {message}" if message else f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after  # seconds, from the Retry-After header


class Stuck(Exception):
    """The watch is still open ``watch_grace`` after its timeoutSeconds: the server lost it."""


# Statuses that make a scope unreadable rather than failing: the server answers, and answering the
# same again is what it will do until RBAC or the CRDs change.
UNREADABLE: Mapping[int, str] = {403: "forbidden", 404: "not_found"}


def _status_error(status: int, body: Any, retry_after: float | None = None) -> Exception:
    message = str(body.get("message", "")) if isinstance(body, dict) else ""
    reason = body.get("reason") if isinstance(body, dict) else None
    if status == 410 or reason in ("Expired", "Gone"):
        return Expired(message or "resource version expired")
    return StatusError(status, message[:500], retry_after)  # bounded: a hostile server cannot flood logs


def _retry_after(resp: aiohttp.ClientResponse) -> float | None:
    """The Retry-After header in seconds (API servers send an integer), None when absent or 0."""
    try:
        seconds = float(resp.headers.get("Retry-After", ""))
    except ValueError:
        return None
    return seconds if seconds > 0 else None


class ResourceLoop:
    """List+watch of ``resource`` in ``namespace`` (None: all namespaces, or cluster scoped)."""

    def __init__(
        self,
        resource: Resource,
        namespace: str | None,
        transport: Transport,
        sink: Sink,
        project: Projector,
        stats: WatchStats,
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
        # The next projection of an object reuses what is unchanged in its last one
        # (``parse.project``), which the sink holds: no index of its own here. Objects present
        # but unreadable are not in the sink: their uid by (namespace, name), to count them and
        # to log each once (again if it is replaced, or read fine and then breaks again).
        self._unreadable_objects: dict[tuple[str, str], str] = {}
        self._count = 0  # objects present, readable or not
        self._backoff = Backoff(settings, rand)
        self._seen = 0  # events and bookmarks received; tells a watch that closed at once, empty
        self._rv = ""  # the version the next watch starts from
        self._unreadable_by = ""  # the verb whose 403/404 made the scope unreadable: its success clears it
        self.error = ""  # the last failure, for the readiness report
        stats.scopes_synced.setdefault(self._scope, False)

    @property
    def synced(self) -> bool:
        return self.stats.scopes_synced.get(self._scope, False)

    @property
    def unreadable(self) -> bool:
        return self._scope in self.stats.unreadable

    def problem(self, now: float) -> tuple[bool, str] | None:
        """What keeps this scope from being current, if anything: (whether that makes the source
        unready, one line naming the resource and why). ``now``: ``time.monotonic()``."""
        reason = self.stats.unreadable.get(self._scope)
        if reason is not None:  # reported, never unready: the chart may legitimately not grant it
            what = "forbidden" if reason == "forbidden" else "not found"
            return False, f"{self._where}: {what} ({self.error}); needs get/list/watch {self._grant_scope}"
        since = self.stats.failing_since.get(self._scope)
        failing = f"failing for {now - since:.0f}s: {self.error}" if since is not None else ""
        if not self.synced:
            return True, f"{self._where}: not listed yet" + (f"; {failing}" if failing else "")
        if since is not None:
            return now - since > self._s.unready_after, f"{self._where}: {failing}"
        return None

    async def run(self) -> None:
        cause = ""
        while True:
            try:
                rv = await self._list()
            except (StatusError, Expired, CredentialError, aiohttp.ClientError, OSError, TimeoutError,
                    ValueError) as e:
                await asyncio.sleep(self._failed("list", e))
                continue
            if cause:
                bump(self.stats.relists, cause)
            cause = await self._watch_until_relist(rv)
            log.log(logging.DEBUG if cause == "unreadable" else logging.INFO, "relisting %s: %s",
                    self._where, cause)

    # ---- list ----

    async def _list(self) -> str:
        timeout = aiohttp.ClientTimeout(total=self._s.request_timeout)
        projections: list[Base] = []
        unreadable: dict[tuple[str, str], str] = {}
        count, token, restarts = 0, "", 0
        page = self._fetch_page(token, timeout)
        try:
            while True:
                status, body, retry_after = await page
                if status == 410 and token and restarts < 3:
                    # The continue token outlived the server's history: start a fresh full list.
                    bump(self.stats.list_requests, "expired")
                    log.info("continue token of %s expired; restarting the list", self._where)
                    projections, unreadable, count, token, restarts = [], {}, 0, "", restarts + 1
                    page = self._fetch_page(token, timeout)
                    continue
                if status != 200 or not isinstance(body, dict):
                    raise _status_error(status, body, retry_after)
                bump(self.stats.list_requests, "success")
                self._reachable()
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
                        count += 1
                        p = self._read(raw, self._previous(key))
                        if p is not None:
                            projections.append(p)
                        else:
                            unreadable[key] = self._unreadable(raw, key)
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
        self._unreadable_objects, self._count = unreadable, count
        self.stats.objects[self._scope] = count
        self.stats.invalid[self._scope] = len(unreadable)
        self.stats.last_event_time = time.time()  # data received: a quiet resource has no events
        if not self.synced:
            log.info("synced %s: %d objects", self._where, count)
        self.stats.scopes_synced[self._scope] = True
        self._readable("list")
        return str(meta.get("resourceVersion") or "")

    def _fetch_page(
        self, token: str, timeout: aiohttp.ClientTimeout
    ) -> asyncio.Task[tuple[int, Any, float | None]]:
        params = [("limit", str(self._s.page_size)), *self._selector()]
        if token:
            params.append(("continue", token))
        return asyncio.create_task(self._get_json(params, timeout), name=f"list {self._where}")

    async def _get_json(
        self, params: list[tuple[str, str]], timeout: aiohttp.ClientTimeout
    ) -> tuple[int, Any, float | None]:
        """(status, decoded body or None, Retry-After seconds or None)."""
        resp = await self._transport.get(self._path, params, timeout)
        try:
            raw = await resp.read()
        finally:
            resp.release()
        try:
            body = orjson.loads(raw) if raw else None
        except ValueError:
            body = None
        return resp.status, body, _retry_after(resp)

    # ---- watch ----

    async def _watch_until_relist(self, rv: str) -> str:
        """Watch, re-watching from the latest version, until a relist is needed; returns its cause.

        As client-go's reflector: a watch the server ends (its timeoutSeconds) or whose connection
        drops is re-opened from the last version at once, silently; 429 and 503 re-watch from the
        same version too, after Retry-After or a backoff; other errors relist.
        """
        self._rv = rv
        loop = asyncio.get_running_loop()
        seen_at_list = self._seen
        while True:
            started, seen = loop.time(), self._seen
            try:
                await self._watch()
            except Expired as e:
                log.info("watch of %s expired: %s", self._where, e)
                if self._seen == seen_at_list:  # expired again right after a list: don't hammer the server
                    await asyncio.sleep(self._backoff.next_delay())
                return "expired"
            except Stuck as e:
                bump(self.stats.watch_ends, "stuck")
                log.warning("watch of %s is stuck: still open %s after its timeout; reconnecting",
                            self._where, e)
                continue
            except StatusError as e:
                await asyncio.sleep(self._failed("watch", e))
                if e.status in (429, 503):  # throttled, or the server's cache not ready: same version
                    continue
                return "unreadable" if e.status in UNREADABLE else "error"
            except (CredentialError, aiohttp.ClientError, OSError, TimeoutError, ValueError) as e:
                await asyncio.sleep(self._failed("watch", e))
                continue
            if self._seen == seen and loop.time() - started < self._s.min_watch_duration:
                await asyncio.sleep(self._backoff.next_delay())  # closed at once: don't spin

    async def _watch(self) -> None:
        """One watch from ``self._rv``, advancing it; returns when the stream ends normally."""
        low, high = self._s.watch_timeout
        timeout_seconds = max(1, round(low + (high - low) * self._rand()))
        params = [
            ("watch", "true"),
            ("resourceVersion", self._rv),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout_seconds)),
            *self._selector(),
        ]
        # No bookmark may come before the server's deadline (it sends one only once the resource's
        # version moves), so silence until then is normal; past it and a grace period, the stream
        # is stuck (a proxy or load balancer holding a connection the server has dropped).
        deadline = asyncio.get_running_loop().time() + timeout_seconds + self._s.watch_grace
        timeout = aiohttp.ClientTimeout(sock_connect=self._s.request_timeout, connect=self._s.request_timeout)
        try:
            resp = await self._transport.get(self._path, params, timeout)
        except (CredentialError, aiohttp.ClientError, OSError, TimeoutError):
            bump(self.stats.watch_requests, "error")
            raise
        try:
            if resp.status != 200:
                bump(self.stats.watch_requests, "expired" if resp.status == 410 else "error")
                async with asyncio.timeout(self._s.request_timeout):
                    body = await resp.read()
                try:
                    decoded = orjson.loads(body) if body else None
                except ValueError:
                    decoded = None
                raise _status_error(resp.status, decoded, _retry_after(resp))
            bump(self.stats.watch_requests, "success")
            self._reachable()
            self._readable("watch")
            # A backlog buffers hundreds of events, all handled without suspending: without the
            # slice the loop could serve nothing else (scrapes, probes) until they are done.
            time_slice = TimeSlice()
            lines = LineReader()
            while True:
                line = lines.next_line()
                if line is None:
                    try:
                        # asyncio.timeout_at, not wait_for: on 3.11 wait_for can swallow a
                        # cancellation that coincides with data arriving, and the loop would
                        # outlive stop().
                        async with asyncio.timeout_at(deadline):
                            chunk = await resp.content.readany()
                    except TimeoutError:
                        raise Stuck(f"{timeout_seconds + self._s.watch_grace:.0f}s") from None
                    except (aiohttp.ClientError, OSError) as e:
                        # As client-go: a connection that drops mid-stream ends the watch, and it is
                        # re-opened from its version (that request says whether the server is there).
                        bump(self.stats.watch_ends, "dropped")
                        log.info("watch of %s dropped (%s); re-watching", self._where, e or type(e).__name__)
                        return
                    if chunk:
                        lines.feed(chunk)
                        continue
                    line = lines.rest()
                    if not line:
                        bump(self.stats.watch_ends, "timeout")
                        log.debug("watch of %s ended by the server; re-watching from %s",
                                  self._where, self._rv)
                        return
                await time_slice.pause()
                if line.strip():
                    self._rv = self._handle(orjson.loads(line), self._rv)
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
        if etype not in ("ADDED", "MODIFIED", "DELETED"):
            log.warning("watch of %s: unknown event type %r ignored", self._where, etype)
            return rv
        previous = self._previous(key)
        if previous is None and key not in self._unreadable_objects:
            self._count += 1  # new (a DELETED of an object never seen takes it back below)
        if etype == "DELETED":
            self._count -= 1
            self._unreadable_objects.pop(key, None)
            self._sink.delete(self.resource.kind, key[0], key[1])
        else:
            projection = self._read(obj, previous)
            if projection is None:
                self._unreadable_objects[key] = self._unreadable(obj, key)
                self._sink.delete(self.resource.kind, key[0], key[1])  # as a relist would: it is unreadable
            else:
                self._unreadable_objects.pop(key, None)
                self._sink.upsert(projection)
        self.stats.objects[self._scope] = self._count
        self.stats.invalid[self._scope] = len(self._unreadable_objects)
        return new_rv

    # ---- helpers ----

    def _selector(self) -> list[tuple[str, str]]:
        selector = self.resource.spec.label_selector
        return [("labelSelector", selector)] if selector else []

    @staticmethod
    def _key(raw: Mapping[str, Any]) -> tuple[str, str]:
        meta = raw.get("metadata") or {}
        return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))

    def _previous(self, key: tuple[str, str]) -> Base | None:
        return self._sink.get((self.resource.kind, key[0], key[1]))

    def _read(self, raw: dict[str, Any], previous: Base | None) -> Base | None:
        # Lists of custom resources carry kind/apiVersion per item; other servers may not.
        raw.setdefault("kind", self.resource.kind)
        raw.setdefault("apiVersion", self.resource.api_version)
        if self._on_object is not None:
            self._on_object(raw)
        return self._project(raw, previous)

    def _unreadable(self, raw: Mapping[str, Any], key: tuple[str, str]) -> str:
        """The uid of an object the projection could not read, logged unless it was already."""
        uid = str((raw.get("metadata") or {}).get("uid") or "")
        if self._unreadable_objects.get(key) != uid:
            log.warning("skipping unreadable %s %s/%s (uid %s)", self.resource.kind, *key, uid)
        return uid

    @property
    def _grant_scope(self) -> str:
        if not self.resource.namespaced:
            return "cluster-wide"
        return f"in namespace {self.namespace}" if self.namespace else "in all namespaces"

    def _failed(self, what: str, error: Exception) -> float:
        """Record a failed list or watch request; returns how long to wait before the next."""
        if what == "list":
            bump(self.stats.list_requests, "error")
        self.error = f"{what}: {error or type(error).__name__}"[:600]
        status = error.status if isinstance(error, StatusError) else 0
        reason = UNREADABLE.get(status)
        if reason is not None:
            self._set_unreadable(reason, what, error)
            return self._s.backoff_max
        self.stats.failing_since.setdefault(self._scope, time.monotonic())
        retry_after = error.retry_after if isinstance(error, StatusError) else None
        if retry_after is not None and (status == 429 or status >= 500):
            # As client-go: the server says when to come back (429 while its cache initialises
            # after a restart), bounded by the longest backoff.
            delay = min(retry_after, self._s.backoff_max)
            log.info("%s of %s: %s; retrying in %.1fs as the server asks", what, self._where, error, delay)
            return delay
        hint = ""
        if status == 401:  # the transport refreshed what it could and retried already
            hint = ("; the API server refuses the exporter's credentials (expired, revoked or "
                    "unknown token): its metrics of this resource are not current")
        log.warning("%s of %s failed: %s%s", what, self._where, error or type(error).__name__, hint)
        return self._backoff.next_delay()

    def _set_unreadable(self, reason: str, what: str, error: Exception) -> None:
        self.stats.failing_since.pop(self._scope, None)  # the server answers: it is reachable
        if self.stats.unreadable.get(self._scope) != reason:
            if reason == "forbidden":
                hint = (f"grant get, list and watch on {self.resource.plural} (group "
                        f"{self.resource.spec.group}) {self._grant_scope} to the exporter's service account")
            else:
                hint = "the resource is not served (CRD removed?) or the namespace does not exist"
            log.warning("cannot %s %s (%s): %s; its metrics are missing until then; retrying every %.0fs",
                        what, self._where, error, hint, self._s.backoff_max)
        self.stats.unreadable[self._scope] = reason
        self._unreadable_by = what

    def _readable(self, what: str) -> None:
        """A ``what`` request succeeded: clears the unreadable state that kind of request set."""
        if self.unreadable and self._unreadable_by == what:
            del self.stats.unreadable[self._scope]
            log.info("%s is readable again", self._where)

    def _reachable(self) -> None:
        self.stats.failing_since.pop(self._scope, None)
