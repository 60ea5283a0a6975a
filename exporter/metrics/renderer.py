"""Per-object exposition fragments, kept compressed in buckets, and the scrape body built from them.

Owns the cache: for every family, the lines of each object, rendered once when the object's
projection or Result changes. A family's objects are kept in buckets of about ``BUCKET_BYTES``
of text whatever the fleet size: an object new to a family joins the bucket being filled (a new
one once it is full, or one that deletions left less than half full), and stays there.

At rest a bucket is only compressed: its text as one complete gzip member (the *base*), plus the
order and length of each object's lines in it; per object the renderer keeps a fingerprint and
the length of its lines in each family, enough to tell which families a new rendering changed.
Changed lines wait in the bucket's *pending* dict (None: the object left the bucket) until the
bucket is rebuilt: decompress the base, splice the pending lines in, compress. All of a rebuild,
its plan (which runs of the base to keep, which lines to insert) and the byte work, is
``members.rebuild`` of what the bucket holds, which runs wherever the caller sends it, a worker
process in ``serve``, on pieces frozen for it (``Piece``). Dirty buckets are rebuilt for
a gzip scrape (``Snapshot.unbuilt``), ahead of the pending limit (``heaviest`` and ``install``,
in ``serve``), and, as a last resort, on the loop a few buckets at a time whenever pending lines
exceed ``PENDING_BYTES``; so the raw text, ~365 MB on the benchmark fleet, is held neither whole nor
twice, only its ~20 MB of gzip members.

A gzip scrape is the list of family headers and bucket members (concatenated members are one
valid gzip stream, RFC 1952 section 2.2), so a change re-compresses only the small buckets it
touched and a quiet scrape copies nothing; a raw scrape decompresses (and splices) each bucket
while it streams, so at most one bucket's text exists at a time.

Consistency: ``update_group``, ``update_objects`` and ``snapshot`` are called on the event loop
thread only and never await, so one object's lines in every family swap together and a scrape sees
either all the old ones or all the new ones. An object is rendered again only in the families that
read what changed (its projection, its Result, its effective conditions, or both projection and
Result: ``FamilySpec.reads``). A snapshot holds each bucket's base and pending dict by reference;
bases are immutable and a pending dict is copied before its first change after a snapshot (copy
on write), which is what lets a snapshot's members be built elsewhere while the loop keeps
rendering. ``Renderer.commit`` and ``install`` (back on the
loop) install the bases built for buckets not rebuilt since, keeping what changed after pending.
Containment: an object whose rendering raises (a lone surrogate in its name cannot be encoded,
a bug in an extractor) is left out, its earlier lines removed; it is counted in ``failures``
and reported once in ``take_failed`` until it renders again. The other objects are unaffected.
Owns no evaluation, no HTTP, no logging and no self-metrics.
"""

from __future__ import annotations

import heapq
import struct
from array import array
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from exporter.engine.model import Base, ObjectKey, Result
from exporter.metrics import members
from exporter.metrics.catalog import kind_spec, label_names
from exporter.metrics.exposition import free_label_lines, header, label_pairs, sample_lines
from exporter.metrics.members import GZIP_LEVEL, gzip_member
from exporter.metrics.selection import DEFAULT
from exporter.metrics.spec import (
    FamilySpec,
    KindSpec,
    Reads,
    Subject,
    identity_values,
    same_effective_conditions,
)

GroupKey = tuple[str, ...]  # (kind of group, a, b): see engine.grouping.GroupKey
Fragments = tuple[tuple[int, bytes], ...]
"""(family index, lines) for every family an object has samples in."""

# Text per bucket. A change re-compresses its bucket, so smaller is cheaper under churn; but each
# member restarts deflate's 32 KiB window and adds ~20 bytes: on the benchmark fleet's text, 64 KiB
# buckets are ~7 % larger on the wire than one member per family, 16 KiB ones ~25 %.
BUCKET_BYTES = 64 << 10
# Changed lines not yet compressed into their buckets: beyond this, or beyond 1/PENDING_SHARE of
# all the text, buckets are rebuilt on the loop as changes arrive, at most COMPACT_BYTES of bucket
# text per group update (~1.5 ms). Changes land in random buckets, so a rebuild re-compresses
# ~T/limit bytes for each pending byte it frees (T: all the text): the share keeps that ratio
# bounded as the fleet grows (~15 MB pending at most on the benchmark fleet). A smaller share
# forces rebuilds on the loop between scrapes (probes wait); a larger one costs peak memory
# (docs/performance.md, "Figures behind the code's choices").
PENDING_BYTES = 8 << 20
PENDING_SHARE = 24
COMPACT_BYTES = 1 << 20


def render_object(spec: KindSpec, index: Mapping[str, int], obj: Base, result: Result,
                  kept: Collection[int] = ()) -> Fragments:
    """All lines of one object, per family; families without samples are left out.

    ``index``: the families rendered, by name; the kind's others are not selected and never
    extracted. ``kept``: the indices of families whose input did not change since the last
    rendering (their lines are the previous ones, ``Renderer._kept``): they are skipped, and so
    left out too.
    """
    subject: Subject[Base] = Subject(obj, result)
    identity = label_pairs(spec.identity, identity_values(spec, obj))
    out: list[tuple[int, bytes]] = []
    for fam in spec.families:
        i = index.get(fam.name)
        if i is None or i in kept:
            continue
        samples = list(fam.extract(subject))
        if samples:
            prefix = identity if fam.identity else ""
            if fam.free_labels:
                text = free_label_lines(fam.name, prefix, samples)
            else:
                text = sample_lines(fam.name, prefix, fam.labels, samples)
            out.append((i, text.encode()))
    return tuple(out)


# Per family an object has lines in: the family's index, the bucket, the ``hash`` of the lines
# (changes are found by comparing) and their length in bytes.
_LINES = struct.Struct("<HIqI")


class _Entry:
    """What an object was last rendered from, and where its lines are.

    A plain class for its compiled ``__init__`` (one per rendering); see ``spec.Effective``.
    """

    __slots__ = ("id", "lines", "obj", "result")

    def __init__(self, obj: Base, result: Result, oid: int, lines: bytes) -> None:
        self.obj = obj
        self.result = result
        self.id = oid  # the object's id in bucket bases and pending dicts
        # ``_LINES`` records, one per family the object has lines in, packed in one bytes object:
        # four arrays per object were ~15 MB at 100 % of the benchmark fleet, and four more
        # objects per rendering for the garbage collector to traverse (bytes are not tracked).
        self.lines = lines


class _Base:
    """A bucket's text as one gzip member, and which objects' lines it holds, in order, how long."""

    __slots__ = ("gz", "keys", "lengths")

    def __init__(self, gz: bytes, keys: array[int], lengths: array[int]) -> None:
        self.gz = gz
        self.keys = keys
        self.lengths = lengths


_EMPTY = _Base(b"", array("Q"), array("I"))
Pending = dict[int, bytes | None]
"""New lines of a bucket's objects by their id (None: the object left the bucket)."""


def _job(base: _Base, pending: Pending) -> members.Job:
    return base.gz, base.keys, base.lengths, pending


def _rebuild(base: _Base, pending: Pending) -> _Base:
    return _Base(*members.rebuild(_job(base, pending)))


class _Bucket:
    """Some objects' lines of one family: a compressed base and the changes since."""

    __slots__ = ("base", "epoch", "family", "pending", "pending_bytes", "size")

    def __init__(self, family: int) -> None:
        self.family = family  # the index of its family
        self.base = _EMPTY
        self.pending: Pending = {}
        self.pending_bytes = 0
        self.size = 0  # bytes of the current text (base with pending applied)
        # The renderer's epoch when ``pending`` was created: a snapshot taken since may hold it.
        self.epoch = 0


@dataclass(frozen=True, slots=True)
class _Clean:
    """A family whose every bucket has no pending change: a quiet scrape copies three refs."""

    bases: tuple[_Base, ...]
    members: tuple[bytes, ...]
    size: int


class _Family:
    """One family's buckets, and the one new objects join."""

    __slots__ = ("buckets", "clean", "dirty", "freed", "index", "open", "size")

    def __init__(self, index: int) -> None:
        self.index = index
        self.dirty = 0  # buckets with pending lines
        self.buckets = [_Bucket(index)]
        self.open = 0
        self.freed = False  # lines left a bucket since the last search for room
        self.size = 0  # bytes of text in all buckets
        self.clean: _Clean | None = None

    def place(self, limit: int) -> int:
        """The bucket a new object joins: the open one until it holds ``limit`` bytes.

        Filling buckets in arrival order (rather than spreading objects by a hash of their key)
        is what keeps the first fill linear: a bucket is full before it is first compressed, so
        its text is compressed about once, instead of every bucket being re-compressed each time
        a few more objects trickle into it.
        """
        if self.buckets[self.open].size < limit:
            return self.open
        if self.freed:  # deletions may have left room somewhere (rare: a scan)
            for i, b in enumerate(self.buckets):
                if b.size < limit // 2:
                    self.open = i
                    return i
            self.freed = False
        self.buckets.append(_Bucket(self.index))
        self.open = len(self.buckets) - 1
        return self.open


class Piece:
    """One bucket as a scrape or a rebuild found it: its base and pending dict (never mutated since).

    ``job`` and ``done`` split a rebuild so that all of its work between them (``members.rebuild``:
    the plan and the bytes) can run elsewhere: a worker process, a thread, or right here in
    ``member``.
    """

    __slots__ = ("base", "bucket", "built", "carried", "family", "pending", "size")

    def __init__(self, bucket: _Bucket) -> None:
        self.family = bucket.family
        self.bucket = bucket
        self.base = bucket.base
        self.pending = bucket.pending
        self.size = bucket.size
        self.carried = len(bucket.base.gz) + bucket.pending_bytes
        self.built: _Base | None = None

    def job(self) -> members.Job:
        """What rebuilding the bucket takes: its base member, order, lengths and pending lines."""
        return _job(self.base, self.pending)

    def done(self, built: members.Built) -> _Base:
        """Take the rebuilt bucket ``members.rebuild(job())`` gave: the piece's new base."""
        self.built = _Base(*built)
        return self.built

    def text(self) -> bytes:
        if self.built is not None:
            return members.decompress(self.built.gz)
        return members.current_text(self.job())

    def member(self) -> bytes:
        if self.built is not None:
            return self.built.gz
        if not self.pending:
            return self.base.gz
        return self.done(members.rebuild(self.job())).gz

    def release(self) -> None:
        """Let go of the old base and pending lines once built: only the built member is served.

        A gzip scrape under churn holds thousands of pieces until its last byte is written; their
        old members and pending lines, megabytes, are garbage once the new members are installed.
        """
        if self.built is not None:
            self.base, self.pending = self.built, {}


class Snapshot:
    """What one scrape serves: per non-empty family, its index and its clean or dirty buckets."""

    def __init__(self, families: list[tuple[int, list[Piece] | _Clean]], headers: list[bytes],
                 gz_headers: list[bytes]) -> None:
        self._families = families
        self._headers = headers
        self._gz_headers = gz_headers
        # Uncompressed bytes of the body, known before anything is built (a Content-Length).
        self.size = sum(len(headers[i]) + (f.size if isinstance(f, _Clean) else sum(p.size for p in f))
                        for i, f in families)

    def texts(self) -> Iterator[bytes]:
        """The raw body lazily: headers and each bucket's text, built only when it is reached.

        Safe anywhere (touches only this snapshot), and a consumer that writes each part out
        before taking the next holds one bucket's text at a time, never the whole body.
        """
        for i, family in self._families:
            yield self._headers[i]
            if isinstance(family, _Clean):
                for base in family.bases:
                    yield members.decompress(base.gz)
            else:
                for p in family:
                    yield p.text()

    def parts(self, gzip: bool = False) -> list[bytes]:
        """The body as a list of byte strings (safe in a worker thread: touches only this snapshot).

        Raw: headers and bucket texts. Gzip: one gzip member per header and per bucket, which
        concatenated are one gzip stream decompressing to the raw body; dirty buckets not built
        ahead (``unbuilt``) are rebuilt here.
        """
        if not gzip:
            return list(self.texts())
        out: list[bytes] = []
        for i, family in self._families:
            out.append(self._gz_headers[i])
            if isinstance(family, _Clean):
                out.extend(family.members)
            else:
                out.extend(p.member() for p in family)
        return out

    def pieces(self) -> Iterable[Piece]:
        """The pieces of the families that were not wholly clean when it was taken."""
        for _, family in self._families:
            if not isinstance(family, _Clean):
                yield from family

    def unbuilt(self) -> list[Piece]:
        """The pieces whose gzip member ``parts(gzip=True)`` would have to build."""
        return [p for p in self.pieces() if p.pending and p.built is None]


class Renderer:
    """The compressed line cache of every rendered object, maintained group by group."""

    def __init__(self, families: Iterable[FamilySpec] | None = None, *,
                 bucket_bytes: int = BUCKET_BYTES, pending_bytes: int = PENDING_BYTES,
                 pending_share: int = PENDING_SHARE) -> None:
        # By default every family but the labels and annotations ones (``selection.DEFAULT``).
        self.families: tuple[FamilySpec, ...] = (
            tuple(families) if families is not None else DEFAULT.families())
        self.bucket_bytes = bucket_bytes
        self.pending_floor = pending_bytes
        self.pending_share = pending_share  # 0: the floor alone
        self._index = {f.name: i for i, f in enumerate(self.families)}
        self._headers = [header(f.name, f.help, f.exposition_type) for f in self.families]
        self._gz_headers = [gzip_member(h) for h in self._headers]
        self._families = [_Family(i) for i in range(len(self.families))]
        self._entries: dict[ObjectKey, _Entry] = {}
        self._next_id = 0
        # The objects of each group, as a tuple: most groups are one object (a set of one: ~200 bytes).
        self._group_objects: dict[GroupKey, tuple[ObjectKey, ...]] = {}
        # Buckets with pending lines, and the bytes of those lines.
        self._dirty: dict[_Bucket, None] = {}
        self.pending_bytes = 0
        self.text_bytes = 0  # all the text (what a raw body of the objects holds)
        # Bumped by every snapshot: a bucket whose pending dict predates it copies it before a change.
        self._epoch = 0
        self.renders = 0  # objects rendered since start (a self-metric; tests read it)
        self.failures = 0  # renderings that raised (each leaves its object out)
        self._failing: set[ObjectKey] = set()  # objects left out since their rendering raised
        self._failed: list[tuple[ObjectKey, str]] = []  # newly failing, until ``take_failed``
        # Per kind, the families that declare the fields they read, with a getter of those fields.
        self._field_getters: dict[str, list[tuple[int, attrgetter[Any]]]] = {}
        self._by_reads: dict[str, dict[Reads, list[int]]] = {}  # per kind: family indices by ``reads``

    def __len__(self) -> int:
        return len(self._entries)

    def update_group(self, group: GroupKey, items: Iterable[tuple[Base, Result]]) -> None:
        """Make ``group`` contribute exactly ``items``; objects it no longer holds disappear."""
        fresh: set[ObjectKey] = set()
        entries = self._entries
        for obj, result in items:
            key = obj.key
            fresh.add(key)
            entry = entries.get(key)
            # Most objects of an evaluated group are unchanged, the very same objects: skip them
            # here rather than in a call to ``_put`` each.
            if entry is None or entry.obj is not obj or entry.result is not result:
                self._put_contained(obj, result)
        for key in self._group_objects.get(group, ()):
            if key not in fresh:
                self._drop(key)
        if fresh:
            self._group_objects[group] = tuple(fresh)
        else:
            self._group_objects.pop(group, None)
        self._compact()

    def update_objects(self, group: GroupKey, items: Sequence[tuple[Base, Result]]) -> bool:
        """Re-render some objects ``group`` already contributes; its other objects stay as they are.

        For updates that touch a few objects of a large group: ``update_group`` would compare
        every object with its last rendering to find the same few. False, changing nothing, when
        an object is not one of the group's: the caller then renders the whole group.
        """
        known = set(self._group_objects.get(group, ()))
        if not all(obj.key in known for obj, _ in items):
            return False
        for obj, result in items:
            self._put_contained(obj, result)
        self._compact()
        return True

    def remove_group(self, group: GroupKey) -> None:
        self.update_group(group, ())

    def take_failed(self) -> list[tuple[ObjectKey, str]]:
        """Objects whose rendering started failing since the last call, with the error."""
        failed, self._failed = self._failed, []
        return failed

    def groups(self) -> list[GroupKey]:
        return list(self._group_objects)

    def members(self, group: GroupKey) -> tuple[ObjectKey, ...]:
        """The objects ``group`` contributes: those its last ``update_group`` gave."""
        return self._group_objects.get(group, ())

    def buckets(self) -> int:
        """Non-empty buckets over all families (one gzip member each)."""
        return sum(1 for fam in self._families for b in fam.buckets if b.size)

    def snapshot(self, names: Collection[str] | None = None) -> Snapshot:
        """What a scrape needs (on the loop): references only; later changes copy what they touch.

        ``names``: only the families of these names (the ``name[]`` filter of a scrape).
        """
        self._epoch += 1
        families: list[tuple[int, list[Piece] | _Clean]] = []
        for i, fam in enumerate(self._families):
            if names is not None and self.families[i].name not in names:
                continue
            if fam.clean is not None:
                families.append((i, fam.clean))
            elif fam.size:
                families.append((i, [Piece(b) for b in fam.buckets if b.size]))
        return Snapshot(families, self._headers, self._gz_headers)

    def commit(self, snap: Snapshot) -> None:
        """Install the bases a snapshot built, for buckets not rebuilt since it was taken."""
        self.install(snap.pieces())

    def pending_limit(self) -> int:
        """Pending bytes beyond which the loop rebuilds buckets itself (``_compact``)."""
        limit = self.pending_floor
        if self.pending_share:
            limit = max(limit, self.text_bytes // self.pending_share)
        return limit

    def heaviest(self, free_bytes: int) -> list[Piece]:
        """Dirty buckets, most pending bytes first, until their pending lines reach ``free_bytes``.

        For rebuilding ahead of the limit, off the loop (``job`` and ``members.rebuild`` anywhere,
        ``done`` and ``install`` on the loop): the buckets that free the most pending
        bytes for the work (a rebuild costs the whole bucket). Like a snapshot, it freezes what it
        hands out: later changes copy the pending dicts they touch.
        """
        self._epoch += 1
        out: list[Piece] = []
        freed = 0
        for b in sorted(self._dirty, key=lambda b: b.pending_bytes, reverse=True):
            if freed >= free_bytes:
                break
            out.append(Piece(b))
            freed += b.pending_bytes
        return out

    def install(self, pieces: Iterable[Piece]) -> None:
        """Make the built pieces their buckets' bases, unless a bucket was rebuilt since.

        What changed in a bucket after its piece was taken stays pending.
        """
        touched: set[int] = set()
        for p in pieces:
            touched.add(p.family)
            if p.built is not None and p.base is p.built:  # released: installed by an earlier call
                continue
            b = p.bucket
            if p.built is not None and b.base is p.base:
                b.base = p.built
                if b.pending is p.pending:
                    self._set_pending(b, {})
                else:
                    self._set_pending(b, {k: v for k, v in b.pending.items()
                                          if k not in p.pending or p.pending[k] is not v})
            p.release()
        for i in touched:
            fam = self._families[i]
            # Under churn most families keep some dirty bucket: only a family with none can be
            # served as a _Clean (which lists every bucket's base).
            fam.clean = self._cleaned(fam) if not fam.dirty else None

    def render_body(self) -> bytes:
        """The raw body in one go (tests and the one-shot paths)."""
        return b"".join(self.snapshot().texts())

    # ---- internals ---------------------------------------------------------------------------

    @staticmethod
    def _cleaned(fam: _Family) -> _Clean | None:
        """``fam`` as a _Clean if no non-empty bucket has pending lines, else None."""
        bases: list[_Base] = []
        for b in fam.buckets:
            if not b.size:
                continue
            if b.pending:
                return None
            bases.append(b.base)
        return _Clean(tuple(bases), tuple(b.gz for b in bases), fam.size) if bases else None

    def _put_contained(self, obj: Base, result: Result) -> None:
        """``_put``; if it raises, the object is left out (its earlier lines too) and recorded."""
        key = obj.key
        try:
            self._put(obj, result)
        except Exception as exc:
            self.failures += 1
            new = key not in self._failing
            self._drop(key)
            self._failing.add(key)
            if new:
                self._failed.append((key, f"{type(exc).__name__}: {exc}"[:300]))
            return
        if self._failing:
            self._failing.discard(key)

    def _put(self, obj: Base, result: Result) -> None:
        spec = kind_spec(obj)
        if spec is None:
            return
        key = obj.key
        entry = self._entries.get(key)
        kept: set[int] = set()
        if entry is not None:
            # Identity first: reused Results and untouched projections are the very same objects,
            # and a dataclass ``==`` builds and compares tuples of every field.
            same_obj = entry.obj is obj or entry.obj == obj
            same_result = entry.result is result or entry.result == result
            if same_obj and same_result:
                return  # unchanged: keep the lines rendered last time
            # An update of a status field leaves the Result alone, an evaluation of an owner's
            # Machines leaves the owner alone: the families of the side that held keep their lines.
            if same_obj:
                # An owner whose Machines changed gets new computed conditions and counters, but
                # where its controller reports a condition, that one is the effective one: the
                # condition families (most of its lines) are often just what they were.
                same_conditions = same_effective_conditions(entry.result, result)
                kept = self._kept(spec, ("object", "conditions") if same_conditions else ("object",))
            elif identity_values(spec, entry.obj) == identity_values(spec, obj):
                kept = self._kept(spec, ("result", "conditions") if same_result else ())
                # Most updates change a field or two: families reading only others keep their lines.
                kept.update(self._same_fields(spec, entry.obj, obj))
        fragments = render_object(spec, self._index, obj, result, kept)
        self.renders += 1
        old: dict[int, tuple[int, int, int]] = {}
        if entry is None:
            # Ids, not keys, in buckets: a bucket's order is an array of ints (nothing for the
            # garbage collector to traverse, and cheap to look up when a rebuild is planned).
            # Never reused, so an id still in a base is always the object it was.
            oid = self._next_id
            self._next_id += 1
        else:
            oid = entry.id
            old = {i: (b, fp, n) for i, b, fp, n in _LINES.iter_unpack(entry.lines)}
        pack = _LINES.pack
        records: list[bytes] = []
        for i, text in fragments:
            fp, n = hash(text), len(text)
            before = old.pop(i, None)
            if before is None:
                b = self._families[i].place(self.bucket_bytes)
                self._set(i, b, oid, text, 0)
            else:
                b = before[0]
                if before[1:] != (fp, n):
                    self._set(i, b, oid, text, before[2])
            records.append(pack(i, b, fp, n))
        for i, (b, fp, n) in old.items():
            if i in kept:  # skipped: its lines stand
                records.append(pack(i, b, fp, n))
            else:
                self._set(i, b, oid, None, n)
        self._entries[key] = _Entry(obj, result, oid, b"".join(records))

    def _kept(self, spec: KindSpec, unchanged: tuple[Reads, ...]) -> set[int]:
        """Indices of the families of ``spec`` that read only what is ``unchanged``."""
        by_reads = self._by_reads.get(spec.kind)
        if by_reads is None:
            by_reads = self._by_reads[spec.kind] = {}
            for f in spec.families:
                if f.name in self._index:
                    by_reads.setdefault(f.reads, []).append(self._index[f.name])
        return {i for reads in unchanged for i in by_reads.get(reads, ())}

    def _same_fields(self, spec: KindSpec, old: Base, new: Base) -> list[int]:
        """Indices of the families of ``spec`` whose ``fields`` are equal in ``old`` and ``new``."""
        getters = self._field_getters.get(spec.kind)
        if getters is None:
            getters = self._field_getters[spec.kind] = [
                (self._index[f.name], attrgetter(*f.fields)) for f in spec.families
                if f.reads == "object" and f.fields and f.name in self._index
            ]
        return [i for i, get in getters if get(old) == get(new)]

    def _drop(self, key: ObjectKey) -> None:
        if self._failing:
            self._failing.discard(key)
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        for i, b, _, n in _LINES.iter_unpack(entry.lines):
            self._set(i, b, entry.id, None, n)

    def _set(self, i: int, bucket: int, oid: int, text: bytes | None, old_len: int) -> None:
        """Make object ``oid``'s lines of family ``i`` ``text`` (None: none), replacing ``old_len`` bytes."""
        fam = self._families[i]
        b = fam.buckets[bucket]
        if b.epoch != self._epoch:
            b.pending = dict(b.pending)  # a snapshot may be reading the old one
            b.epoch = self._epoch
        prev = b.pending.get(oid)
        added = (len(text) if text is not None else 0) - (len(prev) if prev is not None else 0)
        b.pending[oid] = text
        b.pending_bytes += added
        self.pending_bytes += added
        if b not in self._dirty:
            self._dirty[b] = None
            fam.dirty += 1
        delta = (len(text) if text is not None else 0) - old_len
        b.size += delta
        fam.size += delta
        self.text_bytes += delta
        if delta < 0:
            fam.freed = True
        fam.clean = None
        if not b.size:  # its last object left: nothing to splice, ever
            # A new empty base, not _EMPTY: a build from a snapshot taken while the base was
            # _EMPTY must not pass for current once new objects arrive (commit compares identity).
            b.base = _Base(b"", array("Q"), array("I"))
            self._set_pending(b, {})

    def _set_pending(self, b: _Bucket, pending: Pending) -> None:
        """Replace ``b``'s pending dict (after its base was rebuilt)."""
        size = sum(len(v) for v in pending.values() if v is not None)
        self.pending_bytes += size - b.pending_bytes
        b.pending, b.pending_bytes, b.epoch = pending, size, self._epoch
        if not pending and self._dirty.pop(b, 0) is None:
            self._families[b.family].dirty -= 1

    def _compact(self) -> None:
        """Rebuild dirty buckets on the loop while pending lines exceed the limit, down to half of it.

        At most ``COMPACT_BYTES`` of text per call, so one call never stalls the loop for long;
        the limit keeps what is not yet compressed small when no scrape comes to do it.
        """
        limit = self.pending_limit()
        if self.pending_bytes <= limit:
            return
        # The buckets with the most pending bytes first: they free the most for the work (a
        # rebuild costs the whole bucket), and a bucket still filling up is rebuilt less often.
        done, target = 0, limit // 2
        while self.pending_bytes > target and done < COMPACT_BYTES:
            batch = heapq.nlargest(64, self._dirty, key=lambda b: b.pending_bytes)
            if not batch or not batch[0].pending_bytes:
                break
            for b in batch:
                if self.pending_bytes <= target or done >= COMPACT_BYTES or not b.pending_bytes:
                    break
                b.base = _rebuild(b.base, b.pending)
                done += b.size
                self._set_pending(b, {})


def render_fleet(projections: Iterable[Base], results: Iterable[Result]) -> bytes:
    """The exposition of a whole fleet at once: every projection that has a Result."""
    by_key = {r.key: r for r in results}
    renderer = Renderer()
    items = ((obj, by_key[obj.key]) for obj in projections if obj.key in by_key)
    renderer.update_group(("fleet", "", ""), items)
    return renderer.render_body()


__all__ = ["BUCKET_BYTES", "GZIP_LEVEL", "Piece", "Renderer", "Snapshot", "gzip_member", "label_names",
           "render_fleet", "render_object"]
