"""An in-process fake Kubernetes API server over real HTTP (aiohttp), for custom resources.

Owns the HTTP surface: discovery (``/apis``, ``/apis/<group>``, ``/apis/<group>/<version>``), list
(labelSelector, limit/continue, resourceVersion + resourceVersionMatch), watch (from a
resourceVersion over the bounded history, 410 once that resource's events since were dropped,
BOOKMARKs, ERROR events, timeoutSeconds), simple create/update/delete over HTTP, a request log,
and fault injection driven by the test: error statuses for a while (with Retry-After), stalled or
dropped watch streams, in-stream errors, compaction, expired continue tokens, the whole server
going down and coming back on the same port, and a restart whose watch cache answers 429 while it
initialises. Bearer tokens can be checked (``accept_tokens``): any other Authorization answers
401, as a real server answers an expired or revoked token; every Authorization header received is
recorded.

Bookmarks follow a real API server's watch cache: each resource has a cache resourceVersion that
moves with that resource's own writes, or with etcd's progress notification
(``progress_notify``); a watch gets a BOOKMARK (periodically, and right before its timeoutSeconds
deadline) only once that version has passed the one the watch started from. On a resource nobody
writes, a watch from a list's (global) resourceVersion gets none until the next progress
notification. A watch with ``sendInitialEvents`` (client-go's watch-list, which its informers
use first since Kubernetes 1.35) gets the current objects as ADDED events, then a BOOKMARK
annotated ``k8s.io/initial-events-end``, as a real server's watch cache sends them. Every installed
type has its CustomResourceDefinition (``apiextensions.k8s.io/v1``), written on install and
uninstall, for clients that find custom resources through their CRDs (kube-state-metrics); writing
one over HTTP installs nothing. Object storage and resourceVersion rules live in ``state.py``; kind
definitions in ``catalog.py``. Types installed from CRD documents (``install_crds``) get structural
pruning and defaulting on write (``schema.py``); other types store objects as written. Not a full API server:
no admission, no validation, no conversion (objects are served as stored, with apiVersion set to
the requested version), no status subresource semantics (a write to ``/status`` replaces the whole
object), no field selectors, no protobuf.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from tests.kubeapi.catalog import CRD_TYPE, crd_object, split_api_version, type_for, types_for_objects
from tests.kubeapi.handlers import HandlersMixin, dumps
from tests.kubeapi.schema import Schema, prune_and_default, version_schemas
from tests.kubeapi.state import ApiError, Event, Obj, ObjectStore, ResourceType, labels_of

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    410: "Expired",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


@dataclass
class Fault:
    """Answer ``status`` to matching requests, ``times`` times (None: until cleared)."""

    status: int
    target: str  # a kind, a plural, or "discovery"
    verbs: frozenset[str]
    namespace: str | None = None
    times: int | None = None
    retry_after: int | None = None  # Retry-After header, in seconds
    hits: int = 0

    def matches(self, verb: str, target: Iterable[str], namespace: str | None) -> bool:
        if verb not in self.verbs or self.target not in target:
            return False
        return self.namespace is None or self.namespace == namespace


@dataclass
class RequestRecord:
    verb: str  # discovery | list | watch | get | create | update | delete
    kind: str
    namespace: str | None
    params: dict[str, str]
    status: int = 200  # the HTTP status answered (a watch's in-stream ERROR is not reflected)


@dataclass(eq=False)
class Watch:
    """One open watch stream and the control messages the test can send it."""

    rt: ResourceType
    version: str
    namespace: str | None
    selector: Callable[[dict[str, str]], bool]
    bookmarks: bool
    request: web.Request
    start_rv: int  # bookmarks only once the resource's cache version has passed it
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)
    stalled: bool = False
    sent: int = 0

    def translate_initial(self, obj: Obj) -> bool:
        ns = str(obj.get("metadata", {}).get("namespace", "") or "")
        return (self.namespace is None or ns == self.namespace) and self.selector(labels_of(obj))

    def translate(self, ev: Event) -> tuple[str, Obj] | None:
        """The event as this watch sees it: namespace filter, and selector enter/leave as ADDED/DELETED."""
        if ev.res != self.rt.key or (self.namespace is not None and ev.namespace != self.namespace):
            return None
        now = ev.type != "DELETED" and self.selector(labels_of(ev.obj))
        before = ev.prev is not None and self.selector(labels_of(ev.prev))
        if ev.type == "DELETED":
            return ("DELETED", ev.obj) if before else None
        if now and before:
            return ("MODIFIED", ev.obj)
        if now:
            return ("ADDED", ev.obj)
        return ("DELETED", ev.obj) if before else None


class FakeKubeAPI(HandlersMixin):
    """The fake API server. Start with ``await api.start()``; ``api.url`` is its base URL."""

    def __init__(
        self,
        *,
        history_limit: int = 10_000,
        expired_watch_as_event: bool = False,
        max_watch_timeout: float | None = None,
        default_watch_timeout: float = 1800.0,
        bookmark_interval: float | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.store = ObjectStore(history_limit=history_limit)
        self.store.listeners.append(self._on_event)
        self.resources: dict[tuple[str, str], ResourceType] = {}
        # openAPIV3Schema per (resource, version), for types installed from CRDs (install_crds):
        # writes of those are pruned and defaulted as a real server does; other types are not.
        self.schemas: dict[tuple[tuple[str, str], str], Schema] = {}
        # True: a watch from a compacted RV gets HTTP 200 and an in-stream ERROR 410 (what
        # current API servers do); False: the watch request itself fails with HTTP 410.
        self.expired_watch_as_event = expired_watch_as_event
        self.max_watch_timeout = max_watch_timeout  # caps timeoutSeconds so tests see closes fast
        self.default_watch_timeout = default_watch_timeout  # when timeoutSeconds is unset or 0
        self.bookmark_interval = bookmark_interval  # periodic BOOKMARKs (API servers: every minute)
        self.host = host
        self.port = 0
        self.faults: list[Fault] = []
        self.requests: list[RequestRecord] = []
        self.watches: set[Watch] = set()
        # The watch cache's resourceVersion per resource: its own last write, or etcd's revision
        # at the last progress notification or cache (re)initialisation.
        self.cache_rv: dict[tuple[str, str], int] = {}
        self._initializing_until = 0.0  # loop time: until then lists and watches answer 429
        self._initializing_retry_after = 1
        # Bearer tokens the server accepts (None: any request, authenticated or not). Others get
        # 401 Unauthorized, as a real server answers an expired, revoked or unknown token.
        self.tokens: set[str] | None = None
        self.authorizations: list[str] = []  # the Authorization header of every request, in order
        self._runner: web.AppRunner | None = None
        self.resources[CRD_TYPE.key] = CRD_TYPE
        self.cache_rv[CRD_TYPE.key] = self.store.rv

    # ---- lifecycle ----

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self, port: int | None = None) -> None:
        """Listen on ``port`` (default: the previous one, or a free one the first time)."""
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.5, access_log=None)
        await runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port if port is None else port))
        self.port = sock.getsockname()[1]
        await web.SockSite(runner, sock).start()
        self._runner = runner

    async def stop(self) -> None:
        """Close every connection and stop listening: clients now get connection refused."""
        for w in list(self.watches):
            w.queue.put_nowait(("drop",))
        await asyncio.sleep(0)
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def __aenter__(self) -> FakeKubeAPI:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def write_kubeconfig(self, path: str | Path, token: str = "fake-token") -> Path:
        from tests.kubeapi.kubeconfig import write_kubeconfig

        return write_kubeconfig(path, self.url, token=token)

    # ---- installed resources ----

    def install(self, *types: ResourceType) -> None:
        for t in types:
            self._install(t, None)

    def _install(self, t: ResourceType, document: Obj | None) -> None:
        """Serve ``t``, with its CustomResourceDefinition (``document``, or one made from ``t``)."""
        if t.key == CRD_TYPE.key:
            return  # always served
        self.resources[t.key] = t
        crd = crd_object(t, document)
        stored = self.store.get(CRD_TYPE.key, "", crd["metadata"]["name"])
        if stored is None:
            self.store.create(CRD_TYPE.key, crd)
        elif {k: v for k, v in stored.items() if k != "metadata"} != {k: v for k, v in crd.items()
                                                                      if k != "metadata"}:
            self.store.update(CRD_TYPE.key, crd)
        self.cache_rv.setdefault(t.key, self.store.rv)  # the cache starts from a list of etcd

    def install_crds(self, crds: Iterable[Obj | str | Path]) -> list[ResourceType]:
        """Install the types of CustomResourceDefinition documents (dicts, or YAML files of them),
        with each served version's openAPIV3Schema: writes of these types (create, update, status,
        over HTTP or from the test) are then pruned and defaulted by the schema of the version
        written (``schema.py``). Returns the installed types."""
        installed = []
        for crd in _crd_documents(crds):
            spec = crd["spec"]
            served = [v["name"] for v in spec.get("versions") or [] if v.get("served", True)]
            t = ResourceType(spec["group"], spec["names"]["kind"], spec["names"]["plural"], tuple(served),
                             spec.get("scope", "Namespaced") == "Namespaced")
            self._install(t, crd)
            for key in [k for k in self.schemas if k[0] == t.key]:
                del self.schemas[key]
            for version, schema in version_schemas(crd).items():
                self.schemas[(t.key, version)] = schema
            installed.append(t)
        return installed

    def admit(self, rt: ResourceType, version: str, obj: Obj) -> Obj:
        """``obj`` as written to ``rt`` at ``version``: pruned and defaulted when that version has
        a schema (``install_crds``), unchanged otherwise."""
        schema = self.schemas.get((rt.key, version))
        return obj if schema is None else prune_and_default(obj, schema)

    def uninstall(self, *, group: str | None = None, kind: str | None = None) -> None:
        """Remove CRDs (by group, by kind, or both); their objects disappear and open watches close."""
        for key, t in list(self.resources.items()):
            if key == CRD_TYPE.key:
                continue
            if (group is None or t.group == group) and (kind is None or t.kind == kind):
                del self.resources[key]
                with contextlib.suppress(ApiError):
                    self.store.delete(CRD_TYPE.key, "", f"{t.plural}.{t.group}")
                for skey in [k for k in self.schemas if k[0] == key]:
                    del self.schemas[skey]
                self.store.drop_resource(key)
                for w in list(self.watches):
                    if w.rt.key == key:
                        w.queue.put_nowait(("close",))

    def resource(self, kind: str, group: str | None = None) -> ResourceType:
        for t in self.resources.values():
            if (t.kind == kind or t.plural == kind) and (group is None or t.group == group):
                return t
        raise KeyError(f"resource {kind!r} is not installed")

    # ---- objects (test-side API; changes are visible to watches as with HTTP writes) ----

    def _type_of(self, obj: Obj) -> ResourceType:
        group, _ = split_api_version(str(obj.get("apiVersion", "")))
        return self.resource(str(obj.get("kind", "")), group)

    def _admitted(self, obj: Obj) -> tuple[ResourceType, Obj]:
        rt = self._type_of(obj)
        return rt, self.admit(rt, split_api_version(str(obj.get("apiVersion", "")))[1], obj)

    def create(self, obj: Obj) -> Obj:
        rt, obj = self._admitted(obj)
        return self.store.create(rt.key, obj)

    def update(self, obj: Obj) -> Obj:
        obj = dict(obj)
        obj["metadata"] = {k: v for k, v in obj.get("metadata", {}).items() if k != "resourceVersion"}
        rt, obj = self._admitted(obj)
        return self.store.update(rt.key, obj)

    def apply(self, obj: Obj) -> Obj:
        """Create, or update when it exists (last write wins)."""
        t = self._type_of(obj)
        meta = obj.get("metadata", {})
        if self.store.get(t.key, meta.get("namespace", "") or "", meta.get("name", "")) is None:
            return self.create(obj)
        return self.update(obj)

    def delete(self, kind: str, namespace: str, name: str, group: str | None = None) -> Obj:
        return self.store.delete(self.resource(kind, group).key, namespace or "", name)

    def objects(self, kind: str | None = None) -> list[Obj]:
        """Every stored object of installed resources (of one kind when given; the
        CustomResourceDefinitions only when asked for by kind)."""
        out: list[Obj] = []
        for t in self.resources.values():
            if t.kind == kind or (kind is None and t.key != CRD_TYPE.key):
                out.extend(self.store.list_at(t.key, None))
        return out

    def load(self, objects: Iterable[Obj], install: bool = True) -> int:
        """Install the types ``objects`` need (when ``install``) and apply them all."""
        objects = list(objects)
        if install:
            for t in types_for_objects(objects):
                known = self.resources.get(t.key)
                merged = tuple(dict.fromkeys((*(known.versions if known else ()), *t.versions)))
                self.install(ResourceType(t.group, t.kind, t.plural, merged, t.namespaced))
        for obj in objects:
            if type_for(str(obj.get("apiVersion", "")), str(obj.get("kind", ""))).group:
                self.apply(obj)
        return len(objects)

    # ---- authentication ----

    def accept_tokens(self, *tokens: str) -> None:
        """Accept only these bearer tokens from now on (none given: refuse every request).

        Open watches are not cut: as on a real server, a watch authenticated before a token was
        revoked runs on to its timeoutSeconds; the next request is refused.
        """
        self.tokens = set(tokens)

    def _check_auth(self, request: web.Request) -> None:
        header = request.headers.get("Authorization", "")
        self.authorizations.append(header)
        if self.tokens is None:
            return
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or token not in self.tokens:
            raise ApiError(401, "Unauthorized", "Unauthorized")

    # ---- fault injection ----

    def fail(
        self,
        target: str,
        status: int,
        *,
        verbs: Iterable[str] = ("list", "watch", "get"),
        times: int | None = None,
        namespace: str | None = None,
        retry_after: int | None = None,
    ) -> Fault:
        """Answer ``status`` to ``verbs`` on ``target`` (kind, plural or "discovery").

        ``retry_after``: the Retry-After header in seconds; a 429 always carries one (1 unless
        given), as an API server's do.
        """
        if status == 429 and retry_after is None:
            retry_after = 1
        fault = Fault(status, target, frozenset(verbs), namespace, times, retry_after)
        self.faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        self.faults.clear()

    def _watches_of(self, kind: str | None) -> list[Watch]:
        return [w for w in self.watches if kind is None or kind in (w.rt.kind, w.rt.plural)]

    def stall_watches(self, kind: str | None = None) -> int:
        """Open watches stop sending anything (events, bookmarks, the timeout close) until dropped."""
        ws = self._watches_of(kind)
        for w in ws:
            w.stalled = True
        return len(ws)

    def drop_watches(self, kind: str | None = None) -> int:
        """Abort the TCP connection of open watches (no clean end of stream)."""
        ws = self._watches_of(kind)
        for w in ws:
            w.queue.put_nowait(("drop",))
        return len(ws)

    def close_watches(self, kind: str | None = None) -> int:
        """End open watch streams cleanly, as a server-side timeout does."""
        ws = self._watches_of(kind)
        for w in ws:
            w.queue.put_nowait(("close",))
        return len(ws)

    def watch_error(self, code: int = 410, kind: str | None = None, message: str = "") -> int:
        """Send an in-stream ERROR event with a Status of ``code``, then end the stream."""
        reason = REASONS.get(code, "Unknown")
        if not message:
            floor = self.store.floor
            message = f"too old resource version: {floor - 1} ({floor})" if code == 410 else reason
        ws = self._watches_of(kind)
        for w in ws:
            w.queue.put_nowait(("error", code, reason, message))
        return len(ws)

    def send_raw(self, data: bytes, kind: str | None = None) -> int:
        """Write ``data`` as is on open watch streams (a truncated or garbled line, say)."""
        ws = self._watches_of(kind)
        for w in ws:
            w.queue.put_nowait(("raw", data))
        return len(ws)

    def bookmark(self, kind: str | None = None) -> int:
        """Send a BOOKMARK at the current resourceVersion now to open watches that asked for them.

        Forced: unlike the periodic and deadline bookmarks it does not wait for the resource's cache
        version to pass the watch's start (``progress_notify`` models how that happens).
        """
        ws = self._watches_of(kind)
        for w in ws:
            w.queue.put_nowait(("bookmark", self.store.rv))
        return len(ws)

    def progress_notify(self) -> None:
        """etcd's progress notification: every resource's cache version moves to the current one.

        Open watches then get their periodic and deadline bookmarks (a real server's cache gets one
        every 10 minutes by default, ``--experimental-watch-progress-notify-interval``).
        """
        for key in self.resources:
            self.cache_rv[key] = self.store.rv

    def restart(self, initializing: float, retry_after: int = 1) -> int:
        """An API server restart: open watches are cut, and for ``initializing`` seconds, while the
        watch caches fill again, lists and watches answer 429 "storage is (re)initializing" with
        ``Retry-After: retry_after`` (discovery is served). Returns the number of watches cut."""
        dropped = self.drop_watches()
        for key in self.resources:
            self.cache_rv[key] = self.store.rv
        self._initializing_until = asyncio.get_running_loop().time() + initializing
        self._initializing_retry_after = retry_after
        return dropped

    def compact(self) -> None:
        """Drop the event history: watches from any RV so far get 410; continue tokens expire."""
        self.store.compact()

    def expire_continue_tokens(self) -> None:
        self.store.snapshots.clear()

    def open_watches(self, kind: str | None = None) -> int:
        return len(self._watches_of(kind))

    def count(self, verb: str, kind: str | None = None) -> int:
        return sum(1 for r in self.requests if r.verb == verb and (kind is None or r.kind == kind))

    def _on_event(self, ev: Event) -> None:
        self.cache_rv[ev.res] = ev.rv
        for w in self.watches:
            if w.rt.key == ev.res:
                w.queue.put_nowait(ev)

    def _check_fault(self, verb: str, target: Iterable[str], namespace: str | None) -> None:
        target = set(target)
        for fault in self.faults:
            if fault.matches(verb, target, namespace):
                fault.hits += 1
                if fault.times is not None:
                    fault.times -= 1
                    if fault.times <= 0:
                        self.faults.remove(fault)
                reason = REASONS.get(fault.status, "Unknown")
                raise ApiError(fault.status, reason, "injected failure", fault.retry_after)
        if verb in ("list", "watch") and asyncio.get_running_loop().time() < self._initializing_until:
            retry_after = self._initializing_retry_after
            raise ApiError(429, "TooManyRequests", "storage is (re)initializing", retry_after)

    @staticmethod
    def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
        return web.Response(
            body=dumps(body), status=status, content_type="application/json", headers=headers
        )


def _crd_documents(crds: Iterable[Obj | str | Path]) -> list[Obj]:
    docs: list[Obj] = []
    for crd in crds:
        if isinstance(crd, dict):
            docs.append(crd)
        else:
            docs.extend(d for d in yaml.safe_load_all(Path(crd).read_text(encoding="utf-8")) if d)
    return [d for d in docs if d.get("kind") == "CustomResourceDefinition"]
