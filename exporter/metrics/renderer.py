"""Per-object exposition fragments, cached in buckets, and the scrape body assembled from them.

Owns the cache: for every family, the lines of each object (bytes), rendered once when the
object's projection or Result changes. The objects of a family are spread over buckets by a
stable hash of their key, and a family gets more buckets as its text grows (linear hashing: one
bucket splits at a time), so every bucket holds about ``BUCKET_BYTES`` of text whatever the fleet
size. Each bucket caches its text as one complete gzip member, never as joined text: the raw text
is held once, as the objects' fragments. A gzip scrape is the list of family headers and bucket
members (concatenated members are one valid gzip stream, RFC 1952 section 2.2), so a change
re-compresses only the small buckets it touched and a quiet scrape copies nothing; a raw scrape
joins each bucket's fragments while it streams, so at most one bucket's text exists at a time.

Consistency: ``update_group`` and ``snapshot`` are called on the event loop thread only and never
await, so one object's fragments in every family swap together and a scrape sees either all the
old ones or all the new ones. A snapshot holds each bucket's fragment dict by reference; a bucket
is copied before its first change after a snapshot (copy on write, so a snapshot costs no copy),
which is what lets ``Snapshot.parts`` run in a worker thread while the loop keeps rendering.
``Renderer.commit`` (back on the loop) keeps the members built for buckets unchanged since. Owns
no evaluation, no HTTP and no self-metrics.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Mapping
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

# Text per bucket. A change re-compresses its bucket, so smaller is cheaper under churn; but each
# member restarts deflate's 32 KiB window and adds ~20 bytes: on the benchmark fleet's text, 64 KiB
# buckets are ~7 % larger on the wire than one member per family, 16 KiB ones ~25 %.
BUCKET_BYTES = 64 << 10
# On 64 KiB buckets of exposition text level 1 compresses ~265 MB/s to a ratio of 16.7, level 3
# ~240 MB/s (17.3), level 5 ~130 MB/s (18.7): the rebuild of dirty buckets competes with event
# processing for the CPU, so speed wins.
GZIP_LEVEL = 1


def gzip_member(data: bytes, level: int = GZIP_LEVEL) -> bytes:
    """``data`` as one complete gzip member (header, deflate stream, CRC and size trailer).

    One ``zlib.compress`` call releases the GIL once for a bucket (a compressobj's compress and
    flush release it twice), and a worker thread waits to get it back while the loop is busy.
    """
    return zlib.compress(data, level, 31)


def key_hash(key: ObjectKey) -> int:
    """Stable across runs (unlike ``hash`` of a str), so the output order is reproducible."""
    return zlib.crc32("\0".join(key).encode())


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
    hash: int


class _Bucket:
    """Some objects' lines of one family, and their gzip member while unchanged."""

    __slots__ = ("epoch", "fragments", "gz", "size")

    def __init__(self, epoch: int, fragments: dict[ObjectKey, bytes] | None = None) -> None:
        self.fragments: dict[ObjectKey, bytes] = fragments if fragments is not None else {}
        self.gz: bytes | None = None
        self.size = sum(map(len, self.fragments.values()))
        # The renderer's epoch when ``fragments`` was created: a snapshot taken since may hold it.
        self.epoch = epoch


@dataclass(frozen=True, slots=True)
class _Clean:
    """A family whose every bucket has its member cached: a quiet scrape copies three refs."""

    fragments: tuple[dict[ObjectKey, bytes], ...]
    members: tuple[bytes, ...]
    size: int


class _Family:
    """One family's buckets, addressed by linear hashing so that they split one at a time."""

    __slots__ = ("buckets", "clean", "level", "size", "split")

    def __init__(self) -> None:
        self.buckets = [_Bucket(0)]
        self.level = 0  # buckets below ``split`` use level + 1 bits of the hash, the others level
        self.split = 0
        self.size = 0  # bytes of text in all buckets
        self.clean: _Clean | None = None

    def bucket(self, h: int) -> _Bucket:
        b = h & ((1 << self.level) - 1)
        if b < self.split:
            b = h & ((2 << self.level) - 1)
        return self.buckets[b]

    def split_one(self, epoch: int) -> None:
        """Split the next bucket in turn by one more bit of the hash; both halves are rebuilt."""
        bit = 1 << self.level
        old = self.buckets[self.split].fragments
        keep = {k: v for k, v in old.items() if not key_hash(k) & bit}
        move = {k: v for k, v in old.items() if k not in keep}
        self.buckets[self.split] = _Bucket(epoch, keep)
        self.buckets.append(_Bucket(epoch, move))
        self.split += 1
        if self.split == bit:
            self.level += 1
            self.split = 0
        self.clean = None


class _Piece:
    """One bucket as one scrape sees it: its fragments (never mutated since) and member if cached."""

    __slots__ = ("bucket", "built", "fragments", "gz", "size")

    def __init__(self, bucket: _Bucket) -> None:
        self.bucket = bucket
        self.fragments = bucket.fragments
        self.gz = bucket.gz
        self.size = bucket.size
        self.built = False


class Snapshot:
    """What one scrape serves: per non-empty family, its index and its cached or dirty buckets."""

    def __init__(self, families: list[tuple[int, list[_Piece] | _Clean]], headers: list[bytes],
                 gz_headers: list[bytes]) -> None:
        self._families = families
        self._headers = headers
        self._gz_headers = gz_headers
        # Uncompressed bytes of the body, known before anything is joined (a Content-Length).
        self.size = sum(len(headers[i]) + (f.size if isinstance(f, _Clean) else sum(p.size for p in f))
                        for i, f in families)

    def texts(self) -> Iterator[bytes]:
        """The raw body lazily: headers and each bucket's text, joined only when it is reached.

        Safe anywhere (touches only this snapshot), and a consumer that writes each part out
        before taking the next holds one bucket's text at a time, never the whole body.
        """
        for i, family in self._families:
            yield self._headers[i]
            fragments = family.fragments if isinstance(family, _Clean) else (p.fragments for p in family)
            for d in fragments:
                yield b"".join(d.values())

    def parts(self, gzip: bool = False) -> list[bytes]:
        """The body as a list of byte strings (safe in a worker thread: touches only this snapshot).

        Raw: headers and bucket texts. Gzip: one gzip member per header and per bucket, which
        concatenated are one gzip stream decompressing to the raw body; the members of dirty
        buckets are built here (each join is one bucket's text, so the GIL is held briefly; the
        compression itself releases it).
        """
        if not gzip:
            return list(self.texts())
        out: list[bytes] = []
        for i, family in self._families:
            out.append(self._gz_headers[i])
            if isinstance(family, _Clean):
                out.extend(family.members)
                continue
            for p in family:
                if p.gz is None:
                    p.gz = gzip_member(b"".join(p.fragments.values()))
                    p.built = True
                out.append(p.gz)
        return out

    def pieces(self) -> Iterable[tuple[int, _Piece]]:
        """(family index, piece) of the families that were not wholly cached when it was taken."""
        for i, family in self._families:
            if not isinstance(family, _Clean):
                yield from ((i, p) for p in family)


class Renderer:
    """The fragment cache of every rendered object, maintained group by group."""

    def __init__(self, families: Iterable[FamilySpec] | None = None, *,
                 bucket_bytes: int = BUCKET_BYTES) -> None:
        self.families: tuple[FamilySpec, ...] = tuple(families) if families is not None else object_families()
        self.bucket_bytes = bucket_bytes
        self._index = {f.name: i for i, f in enumerate(self.families)}
        self._headers = [header(f.name, f.help, f.exposition_type) for f in self.families]
        self._gz_headers = [gzip_member(h) for h in self._headers]
        self._families = [_Family() for _ in self.families]
        self._entries: dict[ObjectKey, _Entry] = {}
        self._members: dict[GroupKey, set[ObjectKey]] = {}
        # Bumped by every snapshot: a bucket whose dict predates it copies the dict before a change.
        self._epoch = 0
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

    def buckets(self) -> int:
        """Non-empty buckets over all families (one gzip member each)."""
        return sum(1 for fam in self._families for b in fam.buckets if b.fragments)

    def snapshot(self) -> Snapshot:
        """What a scrape needs (on the loop): references only; later changes copy what they touch."""
        self._epoch += 1
        families: list[tuple[int, list[_Piece] | _Clean]] = []
        for i, fam in enumerate(self._families):
            if fam.clean is not None:
                families.append((i, fam.clean))
            elif fam.size:
                families.append((i, [_Piece(b) for b in fam.buckets if b.fragments]))
        return Snapshot(families, self._headers, self._gz_headers)

    def commit(self, snap: Snapshot) -> None:
        """Keep the members a snapshot built, for buckets unchanged since it was taken."""
        touched: set[int] = set()
        for i, p in snap.pieces():
            touched.add(i)
            # Unchanged since the snapshot iff still the same dict: a change copies it first.
            if p.built and p.bucket.fragments is p.fragments:
                p.bucket.gz = p.gz
        for i in touched:
            self._families[i].clean = self._cleaned(self._families[i])

    def render_body(self) -> bytes:
        """The raw body in one go (tests and the one-shot paths)."""
        return b"".join(self.snapshot().texts())

    def render_gzip(self) -> bytes:
        """The same body as a gzip stream of concatenated members, in one go."""
        snap = self.snapshot()
        body = b"".join(snap.parts(gzip=True))
        self.commit(snap)
        return body

    # ---- internals ---------------------------------------------------------------------------

    @staticmethod
    def _cleaned(fam: _Family) -> _Clean | None:
        """``fam`` as a _Clean if every non-empty bucket has its member, else None."""
        fragments: list[dict[ObjectKey, bytes]] = []
        members: list[bytes] = []
        for b in fam.buckets:
            if not b.fragments:
                continue
            if b.gz is None:
                return None
            fragments.append(b.fragments)
            members.append(b.gz)
        return _Clean(tuple(fragments), tuple(members), fam.size) if members else None

    def _put(self, obj: Base, result: Result) -> None:
        spec = kind_spec(obj)
        if spec is None:
            return
        entry = self._entries.get(obj.key)
        if entry is not None and entry.obj == obj and entry.result == result:
            return  # unchanged: keep the fragments rendered last time
        fragments = render_object(spec, self._index, obj, result)
        self.renders += 1
        h = entry.hash if entry is not None else key_hash(obj.key)
        old = dict(entry.fragments) if entry is not None else {}
        new = dict(fragments)
        for i in old.keys() - new.keys():
            self._set(i, h, obj.key, None)
        for i, text in new.items():
            if old.get(i) != text:
                self._set(i, h, obj.key, text)
        self._entries[obj.key] = _Entry(obj, result, fragments, h)

    def _drop(self, key: ObjectKey) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        for i, _ in entry.fragments:
            self._set(i, entry.hash, key, None)

    def _set(self, i: int, h: int, key: ObjectKey, text: bytes | None) -> None:
        """Put (or with None remove) ``key``'s lines of family ``i``; the bucket's member is stale."""
        fam = self._families[i]
        b = fam.bucket(h)
        if b.epoch != self._epoch:
            b.fragments = dict(b.fragments)  # a snapshot may be reading the old one
            b.epoch = self._epoch
        old = b.fragments.pop(key, None) if text is None else b.fragments.get(key)
        if text is not None:
            b.fragments[key] = text
        delta = (len(text) if text is not None else 0) - (len(old) if old is not None else 0)
        b.size += delta
        fam.size += delta
        b.gz = None
        fam.clean = None
        while fam.size > len(fam.buckets) * self.bucket_bytes:
            fam.split_one(self._epoch)


def render_fleet(projections: Iterable[Base], results: Iterable[Result]) -> bytes:
    """The exposition of a whole fleet at once: every projection that has a Result."""
    by_key = {r.key: r for r in results}
    renderer = Renderer()
    items = ((obj, by_key[obj.key]) for obj in projections if obj.key in by_key)
    renderer.update_group(("fleet", "", ""), items)
    return renderer.render_body()


__all__ = ["BUCKET_BYTES", "GZIP_LEVEL", "Renderer", "Snapshot", "gzip_member", "key_hash", "label_names",
           "render_fleet", "render_object"]
