"""Storage of the fake Kubernetes API server: resource types, objects, resourceVersions, history.

Owns the data model the HTTP layer serves: which resource types are installed, the objects (plain
JSON dicts), one global resourceVersion counter shared by every resource (as etcd has), a bounded
history of change events for watches, point-in-time reconstruction for exact-version lists, label
selectors and continue-token snapshots. It does no I/O and knows nothing about aiohttp; the server
module (``server.py``) turns it into HTTP and adds fault injection.
"""

from __future__ import annotations

import copy
import itertools
import re
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]
ResKey = tuple[str, str]  # (group, plural)


class ApiError(Exception):
    """An error the API answers with a Status object."""

    def __init__(self, code: int, reason: str, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.retry_after = retry_after  # seconds, sent as the Retry-After header

    def status(self) -> Obj:
        return status_object(self.code, self.reason, self.message)


def status_object(code: int, reason: str, message: str) -> Obj:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key giving Kubernetes' version priority: GA > beta > alpha, higher numbers first."""
    m = _VERSION_RE.match(version)
    if not m:
        return (3, 0, 0, version)  # non-Kubernetes-style versions sort last, alphabetically
    major, level, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[level]
    return (rank, -major, -minor, "")


@dataclass(frozen=True)
class ResourceType:
    """One installed resource (a CRD): served versions, plural, scope."""

    group: str
    kind: str
    plural: str
    versions: tuple[str, ...]
    namespaced: bool = True

    @property
    def key(self) -> ResKey:
        return (self.group, self.plural)

    @property
    def preferred_version(self) -> str:
        return sorted(self.versions, key=version_priority)[0]

    @property
    def singular(self) -> str:
        return self.kind.lower()


# ---- label selectors -----------------------------------------------------------------------

_SET_RE = re.compile(r"^\s*([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def _split_selector(text: str) -> list[str]:
    """Split on commas that are not inside ``in (a,b)`` parentheses."""
    terms, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            terms.append(cur)
            cur = ""
        else:
            cur += ch
    terms.append(cur)
    return [t.strip() for t in terms if t.strip()]


def parse_label_selector(text: str) -> Callable[[dict[str, str]], bool]:
    """Compile a labelSelector (=, ==, !=, exists, !exists, in, notin) into a predicate."""
    checks: list[Callable[[dict[str, str]], bool]] = []
    for term in _split_selector(text):
        if m := _SET_RE.match(term):
            key, op = m.group(1), m.group(2)
            values = {v.strip() for v in m.group(3).split(",") if v.strip()}
            if op == "in":
                checks.append(lambda lb, k=key, vs=values: lb.get(k) in vs)
            else:
                checks.append(lambda lb, k=key, vs=values: lb.get(k) not in vs)
        elif "!=" in term:
            key, value = (s.strip() for s in term.split("!=", 1))
            checks.append(lambda lb, k=key, v=value: lb.get(k) != v)
        elif "=" in term:
            key, value = (s.strip() for s in term.replace("==", "=").split("=", 1))
            checks.append(lambda lb, k=key, v=value: lb.get(k) == v)
        elif term.startswith("!"):
            absent = term[1:].strip()
            checks.append(lambda lb, k=absent: k not in lb)
        elif re.fullmatch(r"[A-Za-z0-9./_-]+", term):
            checks.append(lambda lb, k=term: k in lb)
        else:
            raise ApiError(400, "BadRequest", f"unable to parse requirement: {term!r}")
    return lambda labels: all(check(labels) for check in checks)


def labels_of(obj: Obj | None) -> dict[str, str]:
    if not obj:
        return {}
    labels = obj.get("metadata", {}).get("labels") or {}
    return labels if isinstance(labels, dict) else {}


# ---- objects and history -------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """One change, kept in the history so watches can replay from a resourceVersion."""

    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    res: ResKey
    obj: Obj  # state after the change (for DELETED: the last state, with the deletion's RV)
    prev: Obj | None  # state before (None for ADDED); lets lists be rebuilt at an older RV

    @property
    def namespace(self) -> str:
        return str(self.obj.get("metadata", {}).get("namespace", ""))


def obj_key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata", {})
    return (str(meta.get("namespace", "") or ""), str(meta.get("name", "")))


@dataclass
class Snapshot:
    """The rest of a paginated list, kept server-side behind a continue token."""

    rv: int
    items: list[Obj]


@dataclass
class ObjectStore:
    """All objects of all resources, with one resourceVersion sequence and a bounded history."""

    history_limit: int = 10_000
    rv: int = 1000
    floor: int = 1000  # a list or continue token from RV < floor is too old (events were dropped)
    # Watches expire per resource, as a real server's watch cache per resource has it: from RV < a
    # resource's floor (the newest of its events the bounded history dropped, or a compaction),
    # that resource's changes since can no longer be replayed; other resources' writes do not move it.
    compacted: int = 1000
    watch_floors: dict[ResKey, int] = field(default_factory=dict)
    objects: dict[ResKey, dict[tuple[str, str], Obj]] = field(default_factory=dict)
    history: deque[Event] = field(default_factory=deque)
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    listeners: list[Callable[[Event], None]] = field(default_factory=list)
    _ids: Iterator[int] = field(default_factory=itertools.count)

    def _bump(self) -> int:
        self.rv += 1
        return self.rv

    def _record(self, event: Event) -> None:
        self.history.append(event)
        while len(self.history) > self.history_limit:
            dropped = self.history.popleft()
            self.floor = self.watch_floors[dropped.res] = dropped.rv
        for listener in list(self.listeners):
            listener(event)

    def get(self, res: ResKey, namespace: str, name: str) -> Obj | None:
        return self.objects.get(res, {}).get((namespace, name))

    def create(self, res: ResKey, obj: Obj) -> Obj:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        key = obj_key(obj)
        if not key[1]:
            raise ApiError(422, "Invalid", "metadata.name: Required value")
        if key in self.objects.setdefault(res, {}):
            raise ApiError(409, "AlreadyExists", f"{res[1]} {key[1]!r} already exists")
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        meta.setdefault("generation", 1)
        meta["resourceVersion"] = str(self._bump())
        self.objects[res][key] = obj
        self._record(Event(self.rv, "ADDED", res, obj, None))
        return obj

    def update(self, res: ResKey, obj: Obj) -> Obj:
        obj = copy.deepcopy(obj)
        key = obj_key(obj)
        prev = self.objects.get(res, {}).get(key)
        if prev is None:
            raise ApiError(404, "NotFound", f"{res[1]} {key[1]!r} not found")
        meta = obj.setdefault("metadata", {})
        sent_rv = meta.get("resourceVersion")
        if sent_rv and sent_rv != prev["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", f"the object {key[1]!r} has been modified")
        for kept in ("uid", "creationTimestamp", "generation"):
            meta[kept] = prev["metadata"].get(kept)
        if obj.get("spec") != prev.get("spec"):
            meta["generation"] = int(prev["metadata"].get("generation") or 0) + 1
        meta["resourceVersion"] = str(self._bump())
        self.objects[res][key] = obj
        self._record(Event(self.rv, "MODIFIED", res, obj, prev))
        return obj

    def delete(self, res: ResKey, namespace: str, name: str) -> Obj:
        prev = self.objects.get(res, {}).pop((namespace, name), None)
        if prev is None:
            raise ApiError(404, "NotFound", f"{res[1]} {name!r} not found")
        gone = copy.deepcopy(prev)
        gone["metadata"]["resourceVersion"] = str(self._bump())
        self._record(Event(self.rv, "DELETED", res, gone, prev))
        return gone

    def drop_resource(self, res: ResKey) -> None:
        """Forget a resource's objects without events (its CRD was uninstalled)."""
        self.objects.pop(res, None)

    def compact(self) -> None:
        """Forget every event so far: watches from any older RV now get 410."""
        self.history.clear()
        self.floor = self.compacted = self.rv
        self.snapshots.clear()

    # ---- reads ----

    def list_at(self, res: ResKey, rv: int | None) -> list[Obj]:
        """The resource's objects as of ``rv`` (None: now), sorted by namespace/name."""
        current = dict(self.objects.get(res, {}))
        if rv is not None and rv < self.rv:
            if rv < self.floor:
                raise ApiError(410, "Expired", f"too old resource version: {rv} ({self.floor})")
            for ev in reversed(self.history):
                if ev.rv <= rv:
                    break
                if ev.res != res:
                    continue
                key = obj_key(ev.obj)
                if ev.prev is None:
                    current.pop(key, None)
                else:
                    current[key] = ev.prev
        return [current[k] for k in sorted(current)]

    def events_after(self, res: ResKey, rv: int) -> list[Event]:
        """The resource's history events newer than ``rv``; raises 410 when some of them were dropped."""
        floor = max(self.compacted, self.watch_floors.get(res, 0))
        if rv < floor:
            raise ApiError(410, "Expired", f"too old resource version: {rv} ({floor})")
        return [ev for ev in self.history if ev.rv > rv and ev.res == res]

    def save_snapshot(self, rv: int, rest: list[Obj]) -> str:
        token = f"c{next(self._ids)}-{rv}"
        self.snapshots[token] = Snapshot(rv, rest)
        return token

    def take_snapshot(self, token: str) -> Snapshot:
        snap = self.snapshots.pop(token, None)
        if snap is None or snap.rv < self.floor:
            raise ApiError(
                410,
                "Expired",
                "continue token expired: the list it continues is no longer available; start a new list",
            )
        return snap
