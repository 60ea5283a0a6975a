"""Gzip members of bucket texts: building one from a base member and a splice plan.

Owns the byte-level half of a bucket rebuild, the part that needs no renderer state: decompress
the bucket's base member, join the runs of it a plan keeps with the new lines it inserts, and
compress the result as one complete gzip member. The renderer makes the plan (which runs to keep,
which lines to insert); this half needs only the plan, and runs in a worker
process (``exporter.offload``, which runs this module's ``serve``) or a thread. Imports nothing
but ISA-L, the standard library and ``exporter.allocator``, so that the worker starts small.
"""

from __future__ import annotations

import pickle
import sys
from collections.abc import Sequence
from typing import BinaryIO

from isal import isal_zlib

from exporter.allocator import glibc

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


def gzip_member(data: bytes, level: int = GZIP_LEVEL) -> bytes:
    """``data`` as one complete gzip member (header, deflate stream, CRC and size trailer).

    One ``compress`` call releases the GIL once for a bucket (a compressobj's compress and flush
    release it twice), and a worker thread waits to get it back while the loop is busy.
    """
    return isal_zlib.compress(data, level, 31)


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


def build_all(plans: Sequence[Plan]) -> list[bytes]:
    """``build`` of each plan: one call per batch, so a worker is asked once for many buckets."""
    return [build(p) for p in plans]



def serve(requests: BinaryIO, replies: BinaryIO) -> None:
    """A worker's main loop: a batch of plans in, their members out, until ``requests`` ends.

    Frames are an 8-byte little-endian length and a pickle: a list of plans in, and out either
    the list of members or, when a batch cannot be built, the error as a string (the parent
    builds that batch itself). Only the exporter's own process writes to ``requests``.
    """
    libc = glibc()
    while True:
        head = requests.read(8)
        if len(head) < 8:
            return
        body = requests.read(int.from_bytes(head, "little"))
        reply: list[bytes] | str
        try:
            reply = build_all(pickle.loads(body))
        except Exception as exc:  # a bad batch must not end the worker
            reply = f"{type(exc).__name__}: {exc}"
        data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        replies.write(len(data).to_bytes(8, "little"))
        replies.write(data)
        replies.flush()
        del body, reply, data
        # A batch's buffers are megabytes, served by glibc's malloc, which keeps freed pages:
        # handing them back keeps the worker at its idle size between batches (~0.2 ms).
        if libc is not None:
            libc.malloc_trim(0)


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
