"""Per-object exposition fragments, cached, and the scrape body joined from them.

Owns the cache: for every family, a map object key → that object's lines of the family (bytes),
rendered once when the object's projection or Result changes, and a per-family joined blob reused
until one of its fragments changes. A scrape is a join of blobs under family headers, so its cost
follows the size of the output and never the cost of evaluation.

Consistency: ``update_group`` and ``snapshot`` are called on the event loop thread only and never
await, so one object's fragments in every family swap together and a scrape sees either all the
old ones or all the new ones. ``Snapshot.body`` may then run in a worker thread: it reads only
the lists copied for it. Owns no evaluation, no HTTP and no self-metrics.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from exporter.engine.model import Base, ObjectKey, Result
from exporter.metrics.catalog import kind_spec, label_names, object_families
from exporter.metrics.exposition import header, label_pairs, sample_lines
from exporter.metrics.spec import (
    FamilySpec,
    KindSpec,
    Subject,
    effective_conditions,
    identity_values,
)

GroupKey = tuple[str, str, str]
Fragments = tuple[tuple[int, bytes], ...]
"""(family index, lines) for every family an object has samples in."""


def render_object(spec: KindSpec, index: Mapping[str, int], obj: Base, result: Result) -> Fragments:
    """All lines of one object, per family; families without samples are left out."""
    subject: Subject[Base] = Subject(obj, result, effective_conditions(result))
    identity = label_pairs(spec.identity, identity_values(spec, obj))
    out: list[tuple[int, bytes]] = []
    for fam in spec.families:
        samples = list(fam.extract(subject))
        if samples:
            text = sample_lines(fam.name, identity if fam.identity else "", fam.labels, samples)
            out.append((index[fam.name], text.encode()))
    return tuple(out)


@dataclass(slots=True)
class _Entry:
    obj: Base
    result: Result
    fragments: Fragments


class Snapshot:
    """What one scrape serves: per family either the cached blob or the fragments to join."""

    def __init__(self, parts: list[tuple[int, bytes | list[bytes]]], versions: list[int]) -> None:
        self._parts = parts
        self._versions = versions
        self.joined: dict[int, bytes] = {}

    def body(self, headers: list[bytes]) -> bytes:
        """Join everything (safe in a worker thread: touches only this snapshot)."""
        chunks: list[bytes] = []
        for i, part in self._parts:
            if isinstance(part, list):
                part = b"".join(part)
                self.joined[i] = part
            if part:
                chunks.append(headers[i])
                chunks.append(part)
        return b"".join(chunks)


class Renderer:
    """The fragment cache of every rendered object, maintained group by group."""

    def __init__(self, families: Iterable[FamilySpec] | None = None) -> None:
        self.families: tuple[FamilySpec, ...] = tuple(families) if families is not None else object_families()
        self._index = {f.name: i for i, f in enumerate(self.families)}
        self._headers = [header(f.name, f.help, f.exposition_type) for f in self.families]
        self._fragments: list[dict[ObjectKey, bytes]] = [{} for _ in self.families]
        self._blobs: list[bytes | None] = [b"" for _ in self.families]
        self._versions = [0 for _ in self.families]
        self._entries: dict[ObjectKey, _Entry] = {}
        self._members: dict[GroupKey, set[ObjectKey]] = {}
        self.renders = 0  # objects rendered since start (a self-metric; tests read it)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def headers(self) -> list[bytes]:
        return self._headers

    def update_group(self, group: GroupKey, items: Iterable[tuple[Base, Result]]) -> None:
        """Make ``group`` contribute exactly ``items``; objects it no longer holds disappear."""
        fresh: set[ObjectKey] = set()
        for obj, result in items:
            fresh.add(obj.key)
            self._put(obj, result)
        for key in self._members.get(group, set()) - fresh:
            self._drop(key)
        if fresh:
            self._members[group] = fresh
        else:
            self._members.pop(group, None)

    def remove_group(self, group: GroupKey) -> None:
        self.update_group(group, ())

    def groups(self) -> list[GroupKey]:
        return list(self._members)

    def snapshot(self) -> Snapshot:
        parts: list[tuple[int, bytes | list[bytes]]] = []
        for i, blob in enumerate(self._blobs):
            parts.append((i, blob if blob is not None else list(self._fragments[i].values())))
        return Snapshot(parts, list(self._versions))

    def commit(self, snap: Snapshot) -> None:
        """Keep the blobs a snapshot joined, for families unchanged since it was taken."""
        for i, blob in snap.joined.items():
            if self._versions[i] == snap._versions[i]:
                self._blobs[i] = blob

    def render_body(self) -> bytes:
        """Snapshot, join and commit in one go (tests and the one-shot paths)."""
        snap = self.snapshot()
        body = snap.body(self._headers)
        self.commit(snap)
        return body

    # ---- internals ---------------------------------------------------------------------------

    def _put(self, obj: Base, result: Result) -> None:
        spec = kind_spec(obj)
        if spec is None:
            return
        entry = self._entries.get(obj.key)
        if entry is not None and entry.obj == obj and entry.result == result:
            return  # unchanged: keep the fragments rendered last time
        fragments = render_object(spec, self._index, obj, result)
        self.renders += 1
        old = dict(entry.fragments) if entry is not None else {}
        new = dict(fragments)
        for i in old.keys() - new.keys():
            del self._fragments[i][obj.key]
            self._touch(i)
        for i, text in new.items():
            if old.get(i) != text:
                self._fragments[i][obj.key] = text
                self._touch(i)
        self._entries[obj.key] = _Entry(obj, result, fragments)

    def _drop(self, key: ObjectKey) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        for i, _ in entry.fragments:
            self._fragments[i].pop(key, None)
            self._touch(i)

    def _touch(self, i: int) -> None:
        self._blobs[i] = None
        self._versions[i] += 1


def render_fleet(projections: Iterable[Base], results: Iterable[Result]) -> bytes:
    """The exposition of a whole fleet at once: every projection that has a Result."""
    by_key = {r.key: r for r in results}
    renderer = Renderer()
    items = ((obj, by_key[obj.key]) for obj in projections if obj.key in by_key)
    renderer.update_group(("fleet", "", ""), items)
    return renderer.render_body()


__all__ = ["Renderer", "Snapshot", "label_names", "render_fleet", "render_object"]
