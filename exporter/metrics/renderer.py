"""Per-object exposition fragments, cached in buckets, and the scrape body assembled from them.

Owns the cache: for every family, the lines of each object (bytes), rendered once when the
object's projection or Result changes. The objects of a family are spread over ``BUCKETS``
buckets by a stable hash of their key; each bucket caches its joined text and that text as a
complete gzip member. A scrape is the list of family headers and bucket texts (or their gzip
members: concatenated members are one valid gzip stream, RFC 1952 section 2.2), so a change
re-joins and re-compresses only the buckets it touched, and a quiet scrape copies nothing.

Consistency: ``update_group`` and ``snapshot`` are called on the event loop thread only and never
await, so one object's fragments in every family swap together and a scrape sees either all the
old ones or all the new ones. ``Snapshot.parts`` may then run in a worker thread: it reads only
what was copied for it, and ``Renderer.commit`` (back on the loop) keeps what it built for the
buckets unchanged since. Owns no evaluation, no HTTP and no self-metrics.
"""

from __future__ import annotations

import zlib
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

BUCKETS = 64  # a change re-compresses ~1/64 of its family; members add ~20 bytes each
GZIP_LEVEL = 5  # level 9 costs ~3x the CPU for a few percent on repetitive exposition text


def gzip_member(data: bytes, level: int = GZIP_LEVEL) -> bytes:
    """``data`` as one complete gzip member (header, deflate stream, CRC and size trailer)."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, 31)
    return compressor.compress(data) + compressor.flush()


def bucket_of(key: ObjectKey) -> int:
    """Stable across runs (unlike ``hash`` of a str), so the output order is reproducible."""
    return zlib.crc32("\0".join(key).encode()) % BUCKETS


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
    bucket: int


class _Bucket:
    """Some objects' lines of one family, with the joined text and gzip member while unchanged."""

    __slots__ = ("fragments", "gz", "text", "version")

    def __init__(self) -> None:
        self.fragments: dict[ObjectKey, bytes] = {}
        self.text: bytes | None = b""
        self.gz: bytes | None = None
        self.version = 0

    def touch(self) -> None:
        self.text = self.gz = None
        self.version += 1


class _Piece:
    """One bucket as one scrape sees it: its cached text/member, or a copy of its fragments."""

    __slots__ = ("bucket", "built", "fragments", "gz", "text", "version")

    def __init__(self, bucket: _Bucket) -> None:
        self.bucket = bucket
        self.version = bucket.version
        self.text = bucket.text
        self.gz = bucket.gz
        self.fragments = list(bucket.fragments.values()) if bucket.text is None else None
        self.built = False


@dataclass(frozen=True, slots=True)
class _Clean:
    """A family whose every bucket has its text and member cached: a quiet scrape copies two refs."""

    texts: tuple[bytes, ...]
    members: tuple[bytes, ...]
    size: int


class Snapshot:
    """What one scrape serves: per non-empty family, its index and its cached or copied buckets."""

    def __init__(self, families: list[tuple[int, list[_Piece] | _Clean]], headers: list[bytes],
                 gz_headers: list[bytes]) -> None:
        self._families = families
        self._headers = headers
        self._gz_headers = gz_headers
        self.size = 0  # uncompressed bytes of the body ``parts`` returned

    def parts(self, gzip: bool = False) -> list[bytes]:
        """The body as a list of byte strings (safe in a worker thread: touches only this snapshot).

        Raw: headers and bucket texts. Gzip: one gzip member per header and per bucket, which
        concatenated are one gzip stream decompressing to the raw body.
        """
        out: list[bytes] = []
        size = 0
        for i, family in self._families:
            out.append(self._gz_headers[i] if gzip else self._headers[i])
            size += len(self._headers[i])
            if isinstance(family, _Clean):
                out.extend(family.members if gzip else family.texts)
                size += family.size
                continue
            for p in family:
                if p.text is None:
                    p.text = b"".join(p.fragments or ())
                    p.fragments = None
                    p.built = True
                size += len(p.text)
                if not gzip:
                    out.append(p.text)
                    continue
                if p.gz is None:
                    p.gz = gzip_member(p.text)
                    p.built = True
                out.append(p.gz)
        self.size = size
        return out

    def pieces(self) -> Iterable[tuple[int, _Piece]]:
        """(family index, piece) of the families that were not wholly cached when it was taken."""
        for i, family in self._families:
            if not isinstance(family, _Clean):
                yield from ((i, p) for p in family)


class Renderer:
    """The fragment cache of every rendered object, maintained group by group."""

    def __init__(self, families: Iterable[FamilySpec] | None = None) -> None:
        self.families: tuple[FamilySpec, ...] = tuple(families) if families is not None else object_families()
        self._index = {f.name: i for i, f in enumerate(self.families)}
        self._headers = [header(f.name, f.help, f.exposition_type) for f in self.families]
        self._gz_headers = [gzip_member(h) for h in self._headers]
        self._buckets = [[_Bucket() for _ in range(BUCKETS)] for _ in self.families]
        self._clean: list[_Clean | None] = [None for _ in self.families]
        self._entries: dict[ObjectKey, _Entry] = {}
        self._members: dict[GroupKey, set[ObjectKey]] = {}
        self.renders = 0  # objects rendered since start (a self-metric; tests read it)

    def __len__(self) -> int:
        return len(self._entries)

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
        """Copy what a scrape needs (on the loop): cached texts by reference, dirty buckets' lines."""
        families: list[tuple[int, list[_Piece] | _Clean]] = []
        for i, buckets in enumerate(self._buckets):
            clean = self._clean[i]
            if clean is not None:
                families.append((i, clean))
                continue
            pieces = [_Piece(b) for b in buckets if b.fragments]
            if pieces:
                families.append((i, pieces))
        return Snapshot(families, self._headers, self._gz_headers)

    def commit(self, snap: Snapshot) -> None:
        """Keep the texts and members a snapshot built, for buckets unchanged since it was taken."""
        touched: set[int] = set()
        for i, p in snap.pieces():
            touched.add(i)
            if p.built and p.bucket.version == p.version:
                p.bucket.text = p.text
                if p.gz is not None:
                    p.bucket.gz = p.gz
        for i in touched:
            self._clean[i] = self._cleaned(i)

    def render_body(self) -> bytes:
        """Snapshot, join and commit in one go (tests and the one-shot paths)."""
        snap = self.snapshot()
        body = b"".join(snap.parts())
        self.commit(snap)
        return body

    def render_gzip(self) -> bytes:
        """The same body as a gzip stream of concatenated members, in one go."""
        snap = self.snapshot()
        body = b"".join(snap.parts(gzip=True))
        self.commit(snap)
        return body

    # ---- internals ---------------------------------------------------------------------------

    def _cleaned(self, i: int) -> _Clean | None:
        """Family ``i`` as a _Clean if every non-empty bucket has its text and member, else None."""
        texts: list[bytes] = []
        members: list[bytes] = []
        for b in self._buckets[i]:
            if not b.fragments:
                continue
            if b.text is None or b.gz is None:
                return None
            texts.append(b.text)
            members.append(b.gz)
        return _Clean(tuple(texts), tuple(members), sum(map(len, texts))) if texts else None

    def _put(self, obj: Base, result: Result) -> None:
        spec = kind_spec(obj)
        if spec is None:
            return
        entry = self._entries.get(obj.key)
        if entry is not None and entry.obj == obj and entry.result == result:
            return  # unchanged: keep the fragments rendered last time
        fragments = render_object(spec, self._index, obj, result)
        self.renders += 1
        b = entry.bucket if entry is not None else bucket_of(obj.key)
        old = dict(entry.fragments) if entry is not None else {}
        new = dict(fragments)
        for i in old.keys() - new.keys():
            bucket = self._buckets[i][b]
            del bucket.fragments[obj.key]
            bucket.touch()
            self._clean[i] = None
        for i, text in new.items():
            if old.get(i) != text:
                bucket = self._buckets[i][b]
                bucket.fragments[obj.key] = text
                bucket.touch()
                self._clean[i] = None
        self._entries[obj.key] = _Entry(obj, result, fragments, b)

    def _drop(self, key: ObjectKey) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        for i, _ in entry.fragments:
            bucket = self._buckets[i][entry.bucket]
            bucket.fragments.pop(key, None)
            bucket.touch()
            self._clean[i] = None


def render_fleet(projections: Iterable[Base], results: Iterable[Result]) -> bytes:
    """The exposition of a whole fleet at once: every projection that has a Result."""
    by_key = {r.key: r for r in results}
    renderer = Renderer()
    items = ((obj, by_key[obj.key]) for obj in projections if obj.key in by_key)
    renderer.update_group(("fleet", "", ""), items)
    return renderer.render_body()


__all__ = ["BUCKETS", "GZIP_LEVEL", "Renderer", "Snapshot", "gzip_member", "label_names", "render_fleet",
           "render_object"]
