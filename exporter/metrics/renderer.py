"""Per-object exposition fragments, kept compressed in buckets, and the members a scrape serves.

Owns the cache: for every family, the lines of each object, rendered once when the object's
projection or Result changes. A family's objects are kept in buckets of about ``BUCKET_BYTES``
of text whatever the fleet size: an object new to a family joins the bucket being filled (a new
one once it is full, or one that deletions left less than half full), and stays there.

A bucket is its text compressed as one complete gzip member (its *base*, with the order and
length of each object's lines in it) and the lines changed since (its *pending* dict; None: the
object left the bucket); per object the renderer keeps a fingerprint and the length of its lines
in each family, enough to tell which families a new rendering changed. Concatenated members are
one valid gzip stream (RFC 1952 section 2.2), so a gzip scrape is the family headers and the
bucket bases, and a change re-compresses only the buckets it touched, at the next *round*.

Consistency: the event loop thread is the only writer. ``update_group`` and ``update_objects``
never await, so one object's lines in every family change together. A base changes only in a
round, and a family is in one round at a time (``exporter.metrics.publisher``): ``take_round``
(on the loop) takes the pending dicts of the buckets it rebuilds, leaving them empty ones, the
rebuilds (``members.rebuild``) run anywhere, and ``finish_round`` (on the loop, in one step)
installs the new bases of some of them (the publisher installs a round batch by batch). A scrape
runs a round over every bucket with pending lines in its families and lists each family's bases
(``part``) in the same step as the round's last install in that family, before any other round
may take it: they hold every change made before the round began and none made after it, and
bytes are never mutated, so the scrape serves that one moment however long its client takes to
read it.

Containment: an object whose rendering raises (a lone surrogate in its name cannot be encoded,
a bug in an extractor) is left out, its earlier lines removed; it is counted in ``failures``
and reported once in ``take_failed`` until it renders again. The other objects are unaffected.
Owns no evaluation, no HTTP, no logging and no self-metrics.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

# acyclic classes: see exporter/engine/model.py
from mypy_extensions import mypyc_attr

from exporter.engine.model import Base, ObjectKey, Result, bare_result, is_bare
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
# all the text, the publisher rebuilds the buckets with the most pending lines. Changes land in
# random buckets, so a rebuild re-compresses ~T/limit bytes for each pending byte it frees (T: all
# the text): the share keeps that ratio bounded as the fleet grows; a smaller share costs peak
# memory (docs/performance.md, "Figures behind the code's choices").
PENDING_BYTES = 4 << 20
PENDING_SHARE = 64


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


@mypyc_attr(acyclic=True)
class _Entry:
    """What an object was last rendered from, and where its lines are.

    A plain class for its compiled ``__init__`` (one per rendering); see ``spec.Effective``.
    """

    __slots__ = ("id", "kept", "lines", "obj")

    def __init__(self, obj: Base, result: Result, oid: int, lines: bytes) -> None:
        self.obj = obj
        # The Result, but None for a bare one (``model.bare_result``), made again when read.
        self.kept: Result | None = None if is_bare(result) else result
        self.id = oid  # the object's id in bucket bases and pending dicts
        # ``_LINES`` records, one per family the object has lines in, packed in one bytes object:
        # four arrays per object were ~15 MB at 100 % of the benchmark fleet, and four more
        # objects per rendering for the garbage collector to traverse (bytes are not tracked).
        self.lines = lines

    @property
    def result(self) -> Result:
        return self.kept if self.kept is not None else bare_result(self.obj)

    def keep(self, obj: Base, result: Result) -> None:
        self.obj = obj
        self.kept = None if is_bare(result) else result


@mypyc_attr(acyclic=True)
class _Base:
    """A bucket's text as one gzip member, and which objects' lines it holds, in order, how long."""

    __slots__ = ("gz", "keys", "lengths", "size")

    def __init__(self, gz: bytes, keys: array[int], lengths: array[int]) -> None:
        self.gz = gz
        self.keys = keys
        self.lengths = lengths
        self.size = sum(lengths)  # bytes of text


_EMPTY = _Base(b"", array("Q"), array("I"))
Pending = dict[int, bytes | None]
"""New lines of a bucket's objects by their id (None: the object left the bucket)."""


class _Bucket:
    """Some objects' lines of one family: a compressed base and the changes since."""

    __slots__ = ("base", "family", "pending", "pending_bytes", "size")

    def __init__(self, family: int) -> None:
        self.family = family  # the index of its family
        self.base = _EMPTY
        self.pending: Pending = {}
        self.pending_bytes = 0
        self.size = 0  # bytes of the current text (base with pending applied)


class _Family:
    """One family's buckets, and the one new objects join."""

    __slots__ = ("buckets", "freed", "index", "listed", "open", "size")

    def __init__(self, index: int) -> None:
        self.index = index
        self.buckets = [_Bucket(index)]
        self.open = 0
        self.freed = False  # lines left a bucket since the last search for room
        self.size = 0  # bytes of text in all buckets
        # The non-empty bases' members and their text's size, until a round changes a base.
        self.listed: tuple[tuple[bytes, ...], int] | None = None

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

    def listing(self) -> tuple[tuple[bytes, ...], int]:
        if self.listed is None:
            bases = [b.base for b in self.buckets if b.base.gz]
            self.listed = tuple(base.gz for base in bases), sum(base.size for base in bases)
        return self.listed


class Rebuild:
    """One bucket's rebuild in a round: what it takes (``job``) and, once done, what it gave."""

    __slots__ = ("bucket", "built", "carried", "size", "work")

    def __init__(self, bucket: _Bucket) -> None:
        self.bucket = bucket
        base = bucket.base
        self.work: members.Job = (base.gz, base.keys, base.lengths, bucket.pending)
        self.size = bucket.size  # bytes of text the rebuild makes (about: later changes differ)
        self.carried = len(base.gz) + bucket.pending_bytes  # bytes its job carries
        self.built: members.Built | None = None

    def job(self) -> members.Job:
        return self.work

    def done(self, built: members.Built) -> None:
        self.built = built

    def release(self) -> None:
        """Let go of what it took and built, once installed: the round lists it to its end."""
        self.work = _RELEASED
        self.built = None


_RELEASED: members.Job = (b"", array("Q"), array("I"), {})


Part = tuple[bytes, bytes, tuple[bytes, ...], int]
"""A family's share of a scrape: its header, the header as a gzip member, its bases' members, and
the bytes of its raw text (header included)."""


@dataclass(frozen=True, slots=True)
class Published:
    """What one scrape serves: per non-empty family, its header and its bases' members."""

    families: tuple[tuple[bytes, bytes, tuple[bytes, ...]], ...]  # (header, its gzip member, members)
    size: int  # bytes of the raw body

    @staticmethod
    def of(parts: Iterable[Part | None]) -> Published:
        """The scrape of these families' parts, in order (None: a family without lines)."""
        kept = [p for p in parts if p is not None]
        return Published(tuple(p[:3] for p in kept), sum(p[3] for p in kept))

    def gzip_parts(self) -> Iterator[bytes]:
        """The body as gzip members, which concatenated are one gzip stream."""
        for _, gz_header, gz in self.families:
            yield gz_header
            yield from gz

    def texts(self) -> Iterator[bytes]:
        """The raw body lazily, one bucket's text at a time."""
        for text_header, _, gz in self.families:
            yield text_header
            for member in gz:
                yield members.decompress(member)


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
        # The objects of each group, as a tuple, but of the groups whose one object's key is the
        # group's own (a provider object, a ClusterClass: most groups at scale, ~44,000 at 100 %):
        # its entry (or its failed rendering) tells that one.
        self._group_objects: dict[GroupKey, tuple[ObjectKey, ...]] = {}
        # Buckets with pending lines, and the bytes of those lines.
        self._dirty: dict[_Bucket, None] = {}
        self.pending_bytes = 0
        self.text_bytes = 0  # all the text (what a raw body of the objects holds)
        self.renders = 0  # objects rendered since start (a self-metric; tests read it)
        self.failures = 0  # renderings that raised (each leaves its object out)
        self._failing: set[ObjectKey] = set()  # objects left out since their rendering raised
        self._failed: list[tuple[ObjectKey, str]] = []  # newly failing, until ``take_failed``
        # Per kind, the families that declare the fields they read, with a getter of those fields.
        self._field_getters: dict[str, list[tuple[int, attrgetter[Any], bool]]] = {}
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
            if entry is None or entry.obj is not obj or entry.kept is not result:
                self._put_contained(obj, result)
        for key in self.objects_of(group):
            if key not in fresh:
                self._drop(key)
        if fresh and not (len(fresh) == 1 and group in fresh):
            self._group_objects[group] = tuple(fresh)
        else:
            self._group_objects.pop(group, None)

    def update_objects(self, group: GroupKey, items: Sequence[tuple[Base, Result]]) -> bool:
        """Re-render some objects ``group`` already contributes; its other objects stay as they are.

        For updates that touch a few objects of a large group: ``update_group`` would compare
        every object with its last rendering to find the same few. False, changing nothing, when
        an object is not one of the group's: the caller then renders the whole group.
        """
        known = set(self.objects_of(group))
        if not all(obj.key in known for obj, _ in items):
            return False
        for obj, result in items:
            self._put_contained(obj, result)
        return True

    def remove_group(self, group: GroupKey) -> None:
        self.update_group(group, ())

    def take_failed(self) -> list[tuple[ObjectKey, str]]:
        """Objects whose rendering started failing since the last call, with the error."""
        failed, self._failed = self._failed, []
        return failed

    def objects_of(self, group: GroupKey) -> tuple[ObjectKey, ...]:
        """The objects ``group`` contributes: those its last ``update_group`` gave."""
        objects = self._group_objects.get(group)
        if objects is not None:
            return objects
        # A group key is an object key only for a group that is that object.
        return (group,) if group in self._entries or group in self._failing else ()

    def buckets(self) -> int:
        """Non-empty buckets over all families (one gzip member each)."""
        return sum(1 for fam in self._families for b in fam.buckets if b.size)

    def pending_limit(self) -> int:
        """Pending bytes beyond which the publisher rebuilds the heaviest buckets."""
        limit = self.pending_floor
        if self.pending_share:
            limit = max(limit, self.text_bytes // self.pending_share)
        return limit

    def take_round(self, names: Collection[str] | None = None) -> list[Rebuild]:
        """A round over every bucket with pending lines (of the families named, if ``names``).

        Their pending dicts go with the round; changes from now on wait in new ones.
        """
        out: list[Rebuild] = []
        for b in list(self._dirty):
            if names is None or self.families[b.family].name in names:
                out.append(self._take(b))
        return out

    def take_heaviest(self, free_bytes: int) -> list[Rebuild]:
        """A round over the buckets with the most pending bytes, until they hold ``free_bytes``.

        They free the most pending bytes for the work (a rebuild costs the whole bucket), and a
        bucket still filling up is rebuilt less often.
        """
        out: list[Rebuild] = []
        freed = 0
        for b in sorted(self._dirty, key=lambda b: b.pending_bytes, reverse=True):
            if freed >= free_bytes:
                break
            freed += b.pending_bytes
            out.append(self._take(b))
        return out

    def finish_round(self, rebuilds: Iterable[Rebuild]) -> None:
        """Install the bases some rebuilds of a round built (each ``Rebuild`` must be ``done``)."""
        families = self._families
        for r in rebuilds:
            assert r.built is not None, "a rebuild is installed once done"
            b = r.bucket
            b.base = _Base(*r.built)
            r.release()
            families[b.family].listed = None

    def abandon_round(self, rebuilds: Iterable[Rebuild]) -> None:
        """Give a round that cannot finish its pending lines back (changes since win)."""
        for r in rebuilds:
            b = r.bucket
            taken = r.work[3]
            if not taken:
                continue
            b.pending = {**taken, **b.pending}
            size = sum(len(v) for v in b.pending.values() if v is not None)
            self.pending_bytes += size - b.pending_bytes
            b.pending_bytes = size
            self._dirty[b] = None

    def family_indexes(self, names: Collection[str] | None = None) -> list[int]:
        """The indexes of the families named (None: every family), in exposition order."""
        if names is None:
            return list(range(len(self.families)))
        return [i for i, f in enumerate(self.families) if f.name in names]

    def part(self, i: int) -> Part | None:
        """Family ``i``'s share of a scrape, as its bases stand now (None: it has no lines)."""
        gz, text = self._families[i].listing()
        if not gz:
            return None
        return self._headers[i], self._gz_headers[i], gz, len(self._headers[i]) + text

    def published(self, names: Collection[str] | None = None) -> Published:
        """The bases of every non-empty family (of those named): right after a round over them."""
        return Published.of([self.part(i) for i in self.family_indexes(names)])

    def publish_here(self, names: Collection[str] | None = None) -> Published:
        """A round built in this thread, and what it publishes (tests and the one-shot paths)."""
        rebuilds = self.take_round(names)
        for r in rebuilds:
            r.done(members.rebuild(r.job()))
        self.finish_round(rebuilds)
        return self.published(names)

    def render_body(self) -> bytes:
        """The raw body in one go (tests and the one-shot paths)."""
        return b"".join(self.publish_here().texts())

    # ---- internals ---------------------------------------------------------------------------

    def _take(self, b: _Bucket) -> Rebuild:
        rebuild = Rebuild(b)
        self.pending_bytes -= b.pending_bytes
        b.pending, b.pending_bytes = {}, 0
        del self._dirty[b]
        return rebuild

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
            last = entry.result
            same_result = last is result or last == result
            if same_obj and same_result:
                # Unchanged: keep the lines rendered last time, but hold the new objects. The store
                # and the pipeline hold those; keeping the old equal ones was a second copy of the
                # object alive for each such update (~7,000 Results under churn at 100 %).
                entry.keep(obj, result)
                return
            # An update of a status field leaves the Result alone, an evaluation of an owner's
            # Machines leaves the owner alone: the families of the side that held keep their lines.
            if same_obj:
                # An owner whose Machines changed gets new computed conditions and counters, but
                # where its controller reports a condition, that one is the effective one: the
                # condition families (most of its lines) are often just what they were.
                same_conditions = same_effective_conditions(last, result)
                kept = self._kept(spec, ("object", "conditions") if same_conditions else ("object",))
            elif identity_values(spec, entry.obj) == identity_values(spec, obj):
                kept = self._kept(spec, ("result", "conditions") if same_result else ())
                # Most updates change a field or two: families reading only others keep their lines.
                kept.update(self._same_fields(spec, entry.obj, obj, same_result))
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

    def _same_fields(self, spec: KindSpec, old: Base, new: Base, same_result: bool) -> list[int]:
        """Indices of the families of ``spec`` whose ``fields`` are equal in ``old`` and ``new``:
        those reading the object alone, and with ``same_result`` those reading both."""
        getters = self._field_getters.get(spec.kind)
        if getters is None:
            getters = self._field_getters[spec.kind] = [
                (self._index[f.name], attrgetter(*f.fields), f.reads == "object") for f in spec.families
                if f.reads in ("object", "both") and f.fields and f.name in self._index
            ]
        return [i for i, get, alone in getters if (alone or same_result) and get(old) == get(new)]

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
        prev = b.pending.get(oid)
        added = (len(text) if text is not None else 0) - (len(prev) if prev is not None else 0)
        b.pending[oid] = text
        b.pending_bytes += added
        self.pending_bytes += added
        self._dirty[b] = None
        delta = (len(text) if text is not None else 0) - old_len
        b.size += delta
        fam.size += delta
        self.text_bytes += delta
        if delta < 0:
            fam.freed = True


def render_fleet(projections: Iterable[Base], results: Iterable[Result]) -> bytes:
    """The exposition of a whole fleet at once: every projection that has a Result."""
    by_key = {r.key: r for r in results}
    renderer = Renderer()
    items = ((obj, by_key[obj.key]) for obj in projections if obj.key in by_key)
    renderer.update_group(("fleet", "", ""), items)
    return renderer.render_body()


__all__ = ["BUCKET_BYTES", "GZIP_LEVEL", "Published", "Rebuild", "Renderer", "gzip_member", "label_names",
           "render_fleet", "render_object"]
