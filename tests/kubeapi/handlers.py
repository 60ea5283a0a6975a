"""HTTP request handling of the fake API server: routing, discovery, list, watch and writes.

Owns the translation between HTTP and the object store: path parsing, the discovery documents
built from the installed resource types, list semantics (selectors, pagination with continue
snapshots, resourceVersion/resourceVersionMatch), the watch stream loop (initial state or
history replay, watch-list's initial events and their end bookmark, bookmarks, ERROR events,
timeouts, stalls and drops requested by the test) and
create/update/delete. State and fault bookkeeping live on ``FakeKubeAPI`` (``server.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from tests.kubeapi.state import ApiError, Obj, ResourceType, labels_of, parse_label_selector, version_priority

if TYPE_CHECKING:
    from tests.kubeapi.server import FakeKubeAPI, Watch

# Typed request storage key where aiohttp offers one (3.12+); a plain string before that.
_RECORD: Any = web.RequestKey("record", object) if hasattr(web, "RequestKey") else "record"


TRUE = {"true", "True", "1"}
FALSE = {"false", "False", "0"}
INITIAL_EVENTS_END = "k8s.io/initial-events-end"  # the annotation on a watch-list's end bookmark
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def served(obj: Obj, rt: ResourceType, version: str) -> Obj:
    """The object as served at ``version`` (no conversion: only apiVersion changes)."""
    out = dict(obj)
    out["apiVersion"] = f"{rt.group}/{version}"
    out.setdefault("kind", rt.kind)
    return out


class HandlersMixin:
    """The aiohttp handlers; mixed into ``FakeKubeAPI``."""

    async def _dispatch(self: FakeKubeAPI, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        try:
            self._check_auth(request)
            if parts == ["version"]:
                return self.json_response({"major": "1", "minor": "36", "gitVersion": "v1.36.3-fake"})
            if parts and parts[0] == "api":
                return self._core_discovery(parts)
            if not parts or parts[0] != "apis":
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            if len(parts) <= 3:
                return self._discovery(parts[1:])
            return await self._resource_request(request, parts[1], parts[2], parts[3:])
        except ApiError as e:
            if _RECORD in request:
                request[_RECORD].status = e.code
            headers = {"Retry-After": str(e.retry_after)} if e.retry_after is not None else None
            return self.json_response(e.status(), status=e.code, headers=headers)

    # ---- discovery ----

    def _core_discovery(self: FakeKubeAPI, parts: list[str]) -> web.Response:
        if parts == ["api"]:
            return self.json_response({"kind": "APIVersions", "versions": ["v1"]})
        return self.json_response({"kind": "APIResourceList", "groupVersion": "v1", "resources": []})

    def _group_versions(self: FakeKubeAPI) -> dict[str, list[str]]:
        groups: dict[str, set[str]] = {}
        for t in self.resources.values():
            groups.setdefault(t.group, set()).update(t.versions)
        return {g: sorted(vs, key=version_priority) for g, vs in sorted(groups.items())}

    @staticmethod
    def _group_doc(group: str, versions: list[str]) -> Obj:
        gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}

    def _discovery(self: FakeKubeAPI, parts: list[str]) -> web.Response:
        self.requests.append(_record("discovery", "/".join(parts), None, {}))
        self._check_fault("discovery", {"discovery", *parts[:1]}, None)
        groups = self._group_versions()
        if not parts:
            docs = [self._group_doc(g, vs) for g, vs in groups.items()]
            return self.json_response({"kind": "APIGroupList", "apiVersion": "v1", "groups": docs})
        group = parts[0]
        if group not in groups or (len(parts) == 2 and parts[1] not in groups[group]):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if len(parts) == 1:
            doc = self._group_doc(group, groups[group])
            return self.json_response({"kind": "APIGroup", "apiVersion": "v1", **doc})
        resources: list[Obj] = []
        for t in sorted(self.resources.values(), key=lambda t: t.plural):
            if t.group == group and parts[1] in t.versions:
                common = {"singularName": t.singular, "namespaced": t.namespaced, "kind": t.kind}
                resources.append({"name": t.plural, **common, "verbs": VERBS, "categories": ["all"]})
                status_verbs = ["get", "patch", "update"]
                resources.append({"name": f"{t.plural}/status", **common, "verbs": status_verbs})
        doc = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{parts[1]}"}
        return self.json_response({**doc, "resources": resources})

    # ---- resources ----

    async def _resource_request(
        self: FakeKubeAPI, request: web.Request, group: str, version: str, rest: list[str]
    ) -> web.StreamResponse:
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        plural, name = rest[0], (rest[1] if len(rest) > 1 else None)
        rt = self.resources.get((group, plural))
        if rt is None or version not in rt.versions or len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if namespace is not None and not rt.namespaced:
            raise ApiError(404, "NotFound", f"{rt.plural} is cluster scoped")
        if rt.namespaced and name is not None and namespace is None:
            raise ApiError(404, "NotFound", "namespaced resource needs a namespace")
        params = dict(request.query)
        method = request.method
        if name is None and method == "GET":
            verb = "watch" if params.get("watch") in TRUE else "list"
        else:
            verb = {"GET": "get", "POST": "create", "PUT": "update", "DELETE": "delete"}.get(method, method)
        request[_RECORD] = _record(verb, rt.kind, namespace, params)
        self.requests.append(request[_RECORD])
        self._check_fault(verb, {rt.kind, rt.plural}, namespace)
        if verb == "list":
            return self._list(rt, version, namespace, params)
        if verb == "watch":
            return await self._watch(request, rt, version, namespace, params)
        return await self._write(request, verb, rt, version, namespace or "", name)

    def _list(
        self: FakeKubeAPI, rt: ResourceType, version: str, namespace: str | None, q: dict[str, str]
    ) -> web.Response:
        limit = int(q.get("limit") or 0)
        token, rv = q.get("continue", ""), q.get("resourceVersion", "")
        match = q.get("resourceVersionMatch", "")
        store = self.store
        if token:
            if rv:
                raise ApiError(400, "BadRequest", "resourceVersion may not be set together with continue")
            snap = store.take_snapshot(token)
            list_rv, items = snap.rv, snap.items
        else:
            if rv in ("", "0"):
                list_rv, items = store.rv, store.list_at(rt.key, None)
            else:
                wanted = _int_rv(rv)
                if wanted > store.rv:
                    message = f"Too large resource version: {wanted}, current: {store.rv}"
                    raise ApiError(504, "Timeout", message)
                if match == "NotOlderThan" or (not match and not limit):
                    list_rv, items = store.rv, store.list_at(rt.key, None)
                else:
                    list_rv, items = wanted, store.list_at(rt.key, wanted)
            selector = parse_label_selector(q.get("labelSelector", ""))
            items = [
                o
                for o in items
                if (namespace is None or o["metadata"].get("namespace") == namespace)
                and selector(labels_of(o))
            ]
        meta: Obj = {"resourceVersion": str(list_rv)}
        if limit and len(items) > limit:
            items, rest = items[:limit], items[limit:]
            meta["continue"] = store.save_snapshot(list_rv, rest)
            meta["remainingItemCount"] = len(rest)
        body = {
            "apiVersion": f"{rt.group}/{version}",
            "kind": f"{rt.kind}List",
            "metadata": meta,
            "items": [served(o, rt, version) for o in items],
        }
        return self.json_response(body)

    async def _write(
        self: FakeKubeAPI,
        request: web.Request,
        verb: str,
        rt: ResourceType,
        version: str,
        ns: str,
        name: str | None,
    ) -> web.Response:
        if verb == "get" and name:
            obj = self.store.get(rt.key, ns, name)
            if obj is None:
                raise ApiError(404, "NotFound", f"{rt.plural} {name!r} not found")
            return self.json_response(served(obj, rt, version))
        if verb == "delete" and name:
            return self.json_response(served(self.store.delete(rt.key, ns, name), rt, version))
        if verb in ("create", "update"):
            body = await request.json()
            if rt.namespaced:
                body.setdefault("metadata", {})["namespace"] = ns
            body = self.admit(rt, version, body)  # pruned and defaulted when rt has a schema
            if verb == "create":
                return self.json_response(served(self.store.create(rt.key, body), rt, version), status=201)
            return self.json_response(served(self.store.update(rt.key, body), rt, version))
        raise ApiError(405, "MethodNotAllowed", f"{request.method} is not supported here")

    # ---- watch ----

    async def _watch(
        self: FakeKubeAPI,
        request: web.Request,
        rt: ResourceType,
        version: str,
        namespace: str | None,
        q: dict[str, str],
    ) -> web.StreamResponse:
        from tests.kubeapi.server import Watch

        rv = q.get("resourceVersion", "")
        send_initial = _watch_list_option(q)
        selector = parse_label_selector(q.get("labelSelector", ""))
        timeout = float(q.get("timeoutSeconds") or 0) or self.default_watch_timeout
        if self.max_watch_timeout is not None:
            timeout = min(timeout, self.max_watch_timeout)
        # A watch from "" or "0" starts at the cache's version; from N, at N (newer than the
        # resource's cache when N is a list's global version and nobody wrote the resource since).
        # A watch-list (sendInitialEvents=true) starts where its initial events end, at etcd's
        # current version; sendInitialEvents=false from "" at that version too.
        if rv not in ("", "0") and send_initial is not None and _int_rv(rv) > self.store.rv:
            raise ApiError(504, "Timeout", f"Too large resource version: {rv}, current: {self.store.rv}")
        if send_initial is True or (send_initial is False and rv == ""):
            start_rv = self.store.rv
        elif rv in ("", "0"):
            start_rv = self.cache_rv.get(rt.key, self.store.rv)
        else:
            start_rv = _int_rv(rv)
        w = Watch(rt, version, namespace, selector, q.get("allowWatchBookmarks") in TRUE, request, start_rv)
        initial: list[tuple[str, Obj]] = []
        expired: ApiError | None = None
        initial_end = send_initial is True and w.bookmarks
        if send_initial is True or (send_initial is None and rv in ("", "0")):
            initial = [("ADDED", o) for o in self.store.list_at(rt.key, None)]
            initial = [(t, o) for t, o in initial if w.translate_initial(o)]
        elif rv not in ("", "0"):
            try:
                events = self.store.events_after(rt.key, _int_rv(rv))
            except ApiError as e:
                if e.code != 410 or not self.expired_watch_as_event:
                    raise
                expired = e
                events = []
            initial = [te for ev in events if (te := w.translate(ev)) is not None]
        # Registered before the first await: no event can fall between the snapshot and the stream.
        self.watches.add(w)
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        try:
            await resp.prepare(request)
            if expired is not None:
                await _send(resp, "ERROR", expired.status())
                return resp
            out = bytearray()
            for etype, obj in initial:
                out += _event(etype, served(obj, rt, version))
                if len(out) >= WRITE_BYTES:
                    await _write(resp, out)
            if initial_end:
                out += _event("BOOKMARK", self._bookmark_obj(rt, version, start_rv, initial_end=True))
            await _write(resp, out)
            await self._stream(w, resp, asyncio.get_running_loop().time() + timeout)
        except (ConnectionResetError, asyncio.CancelledError):
            pass  # the client went away
        finally:
            self.watches.discard(w)
        return resp

    async def _stream(self: FakeKubeAPI, w: Watch, resp: web.StreamResponse, deadline: float) -> None:
        loop = asyncio.get_running_loop()
        interval = self.bookmark_interval if w.bookmarks else None
        next_bookmark = loop.time() + interval if interval else float("inf")
        out = bytearray()  # events encoded since the last write
        while True:
            # As a real server's watch handler: it encodes each event into its response writer,
            # whose buffer goes to the connection whenever it fills, and flushes what is left
            # once no event is waiting. A backlog goes out in a few large writes as it is encoded.
            if out and (w.queue.empty() or len(out) >= WRITE_BYTES):
                await _write(resp, out)
            try:
                wait = None if w.stalled else max(min(deadline, next_bookmark) - loop.time(), 0)
                async with asyncio.timeout(wait):
                    item = await w.queue.get()
            except TimeoutError:
                if w.stalled:
                    continue  # a stalled stream does not even time out
                cache_rv = self.cache_rv.get(w.rt.key, 0)
                if w.bookmarks and cache_rv > w.start_rv:
                    await _send(resp, "BOOKMARK", self._bookmark_obj(w.rt, w.version, cache_rv))
                if loop.time() < deadline and interval:
                    next_bookmark = loop.time() + interval
                    continue
                return
            if isinstance(item, tuple) and item[0] in ("drop", "close", "error"):
                await _write(resp, out)  # what came before the fault is delivered first
            if isinstance(item, tuple) and item[0] == "drop":
                transport = w.request.transport
                if transport is not None:
                    transport.abort()
                return
            if isinstance(item, tuple) and item[0] == "close":
                return
            if w.stalled:
                continue
            if isinstance(item, tuple) and item[0] == "bookmark":
                if w.bookmarks:
                    out += _event("BOOKMARK", self._bookmark_obj(w.rt, w.version, item[1]))
            elif isinstance(item, tuple) and item[0] == "raw":
                out += item[1]
            elif isinstance(item, tuple) and item[0] == "error":
                _, code, reason, message = item
                await _send(resp, "ERROR", ApiError(code, reason, message).status())
                return
            elif (te := w.translate(item)) is not None:
                out += _event(te[0], served(te[1], w.rt, w.version))
            w.sent += 1

    @staticmethod
    def _bookmark_obj(rt: ResourceType, version: str, rv: int, initial_end: bool = False) -> Obj:
        meta: Obj = {"resourceVersion": str(rv)}
        if initial_end:  # the end of a watch-list's initial events
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        return {"apiVersion": f"{rt.group}/{version}", "kind": rt.kind, "metadata": meta}


# Encoded events a watch holds before writing them. A real server's writer holds 4 KB; larger
# writes spare this process a system call per event out of the CPU it shares with the client,
# and the client reads whatever has arrived either way.
WRITE_BYTES = 64 << 10


def dumps(body: Any) -> bytes:
    """JSON as the API server writes it: compact. orjson, because the standard encoder's ~90 us per
    benchmark Machine event came out of the CPU the fake shares with the client under test; what
    orjson refuses (integers past 64 bits) the standard library writes."""
    try:
        return orjson.dumps(body)
    except TypeError:
        return json.dumps(body, separators=(",", ":")).encode()


def _event(etype: str, obj: Obj) -> bytes:
    return dumps({"type": etype, "object": obj}) + b"\n"


async def _send(resp: web.StreamResponse, etype: str, obj: Obj) -> None:
    await _write(resp, bytearray(_event(etype, obj)))


async def _write(resp: web.StreamResponse, out: bytearray) -> None:
    """Writes and empties ``out``."""
    if out:
        data = bytes(out)
        out.clear()
        with contextlib.suppress(RuntimeError):  # writing after the transport closed
            await resp.write(data)


def _watch_list_option(q: dict[str, str]) -> bool | None:
    """``sendInitialEvents`` of a watch (None when absent), validated as a real server does: it
    needs ``resourceVersionMatch=NotOlderThan``, which in turn is only allowed with it."""
    raw, match = q.get("sendInitialEvents"), q.get("resourceVersionMatch", "")
    invalid = 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
    if raw is not None and match != "NotOlderThan":
        raise ApiError(422, "Invalid", invalid + "sendInitialEvents requires setting resourceVersionMatch to "
                       "NotOlderThan")
    if match and raw is None:
        raise ApiError(422, "Invalid", invalid + "resourceVersionMatch is forbidden for watch unless "
                       "sendInitialEvents is provided")
    if raw is None:
        return None
    if raw not in TRUE | FALSE:
        raise ApiError(400, "BadRequest", f"invalid sendInitialEvents {raw!r}")
    return raw in TRUE


def _int_rv(rv: str) -> int:
    try:
        return int(rv)
    except ValueError:
        raise ApiError(400, "BadRequest", f"invalid resourceVersion {rv!r}") from None


def _record(verb: str, kind: str, namespace: str | None, params: dict[str, Any]) -> Any:
    from tests.kubeapi.server import RequestRecord

    return RequestRecord(verb, kind, namespace, params)
