"""Gzip members of bucket texts: a rebuild planned and built from a bucket's base and pending lines.

Owns the whole of a bucket rebuild that needs no renderer state: from the bucket's base member,
the order and length of each object's lines in it and the changed lines (a ``Job``), plan which
runs of the base to keep and which lines to insert, decompress the base, join them, and compress
the result as one complete gzip member; the new order and lengths come back with it (``Built``).
It runs in a worker process (``exporter.offload.Worker`` runs this module's ``serve``), a thread,
or the loop. Imports nothing but ISA-L, the standard library and ``exporter.runtime``, so that
the worker starts small.
"""

from __future__ import annotations

import pickle
import sys
from array import array
from collections.abc import Mapping, Sequence
from typing import BinaryIO

from isal import isal_zlib

from exporter.runtime import configure_malloc, glibc, trim

# Members are made with ISA-L (python-isal), whose deflate is standard (any gzip reader takes it).
# On 64 KiB buckets of the benchmark fleet's text its level 1 compresses ~1,750 MB/s to a ratio
# of 18.6 and decompresses ~950 MB/s, where zlib's level 1 compresses ~430 MB/s to 17.9 and
# decompresses ~670 MB/s: rebuilds compete with event processing for the CPU, so speed wins, and
# here it costs no ratio. (Its level 3 is ~7x slower for no gain.)
GZIP_LEVEL = 1

Op = bytes | tuple[int, int]
"""A plan step: new lines to insert (bytes), or the ``[start, end)`` run of the base text to keep."""
Plan = tuple[bytes, Sequence[Op]]
"""A bucket's base member and the steps that make its current text from it."""
Pending = Mapping[int, bytes | None]
"""New lines of a bucket's objects by their id (None: the object left the bucket)."""
Job = tuple[bytes, "array[int]", "array[int]", Pending]
"""A bucket to rebuild: its base member, the ids of the objects in it and the length of each
one's lines, in order, and its pending lines."""
Built = tuple[bytes, "array[int]", "array[int]"]
"""A rebuilt bucket: its new member, ids and lengths."""


def gzip_member(data: bytes, level: int = GZIP_LEVEL) -> bytes:
    """``data`` as one complete gzip member (header, deflate stream, CRC and size trailer).

    One ``compress`` call releases the GIL once for a bucket (a compressobj's compress and flush
    release it twice), and a worker thread waits to get it back while the loop is busy.
    """
    member: bytes = isal_zlib.compress(data, level, 31)
    return member


def decompress(member: bytes) -> bytes:
    return isal_zlib.decompress(member, 31) if member else b""


def apply(plan: Plan) -> bytes:
    """The bucket text ``plan`` describes: kept runs of its base, in order, with new lines between."""
    base, ops = plan
    view = memoryview(decompress(base))
    return b"".join(view[op[0]:op[1]] if isinstance(op, tuple) else op for op in ops)


def build(plan: Plan) -> bytes:
    """The gzip member of the text ``plan`` describes (empty for an empty text)."""
    text = apply(plan)
    return gzip_member(text) if text else b""


def plan_rebuild(job: Job) -> tuple[Plan, array[int], array[int]]:
    """How to make the bucket's current text from its base, and its ids and lengths after.

    Runs of unchanged objects are kept as ranges of the base text, so applying the plan copies
    the text once whatever the number of objects; making it touches no text at all. The work in
    Python is per pending object, not per object of the bucket (a bucket holds ~100, a change
    touches one or two): finding them and copying the runs between them are array operations.
    Objects new to the bucket go at its end.
    """
    gz, keys, lengths, pending = job
    if not pending:
        return (gz, [(0, sum(lengths))]), keys, lengths
    found: list[tuple[int, int]] = []  # (position in the base, id)
    added: list[int] = []
    for oid in pending:
        try:
            found.append((keys.index(oid), oid))
        except ValueError:
            added.append(oid)
    found.sort()
    ops: list[Op] = []
    out_keys, out_lengths = array(keys.typecode), array(lengths.typecode)
    at = offset = 0  # position in the base, and its byte offset
    for pos, oid in found:
        if at < pos:
            run = sum(lengths[at:pos])
            ops.append((offset, offset + run))
            out_keys += keys[at:pos]
            out_lengths += lengths[at:pos]
            offset += run
        new = pending[oid]
        if new is not None:
            ops.append(new)
            out_keys.append(oid)
            out_lengths.append(len(new))
        offset += lengths[pos]
        at = pos + 1
    if at < len(keys):
        ops.append((offset, offset + sum(lengths[at:])))
        out_keys += keys[at:]
        out_lengths += lengths[at:]
    for oid in added:
        new = pending[oid]
        if new is not None:
            ops.append(new)
            out_keys.append(oid)
            out_lengths.append(len(new))
    return (gz, ops), out_keys, out_lengths


def current_text(job: Job) -> bytes:
    """The bucket's current text."""
    if not job[3]:
        return decompress(job[0])
    return apply(plan_rebuild(job)[0])


def rebuild(job: Job) -> Built:
    """The bucket rebuilt: planned, spliced and compressed."""
    steps, keys, lengths = plan_rebuild(job)
    return build(steps), keys, lengths


def rebuild_all(jobs: Sequence[Job]) -> list[Built]:
    """``rebuild`` of each job: one call per batch, so a worker is asked once for many buckets."""
    return [rebuild(j) for j in jobs]



def serve(requests: BinaryIO, replies: BinaryIO) -> None:
    """A worker's main loop: a batch of jobs in, the rebuilt buckets out, until ``requests`` ends.

    Frames are an 8-byte little-endian length and a pickle (``exporter.offload.Worker``): a list
    of jobs in, and out ``(True, [Built, ...])`` or, when a batch cannot be built,
    ``(False, error)`` (the parent builds that batch itself). Only the exporter's own process
    writes to ``requests``.
    """
    libc = glibc()
    configure_malloc(libc, 1)
    while True:
        head = requests.read(8)
        if len(head) < 8:
            return
        body = requests.read(int.from_bytes(head, "little"))
        reply: tuple[bool, list[Built] | str]
        try:
            reply = (True, rebuild_all(pickle.loads(body)))
        except Exception as exc:  # a bad batch must not end the worker
            reply = (False, f"{type(exc).__name__}: {exc}")
        data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        replies.write(len(data).to_bytes(8, "little"))
        replies.write(data)
        replies.flush()
        del body, reply, data
        # A batch's buffers are megabytes, served by glibc's malloc, which keeps freed pages:
        # handing them back keeps the worker at its idle size between batches (~0.2 ms).
        trim(libc)


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
