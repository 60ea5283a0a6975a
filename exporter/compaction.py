"""Buckets with changed lines rebuilt in the background, so scrapes find them built.

Owns ``keep_compressed``: every ``EVERY_SECONDS`` the buckets with pending lines, longest dirty
first, are rebuilt by the ``MemberBuilder`` (in its worker process) and installed, a batch at a
time. Without it a bucket was rebuilt only when a gzip scrape needed its member, or on the loop
once pending lines passed the renderer's limit: with scrapes 15 s apart under churn, each scrape
had most of the fleet's buckets to rebuild (seconds), and the limit made the loop rebuild
buckets between events. Rebuilding each second keeps a scrape's share to about a second of
changes, and the pending lines held to about as much.

The work follows the changes: a bucket is rebuilt at most once per round whatever the number of
changes to it, and a quiet fleet costs nothing. Owns no knowledge of buckets' contents.
"""

from __future__ import annotations

import asyncio

from exporter.metrics.renderer import Renderer
from exporter.offload import BATCH_BYTES, MemberBuilder

EVERY_SECONDS = 1.0
# The most bucket text one round rebuilds (~0.2 s of the worker's time): under a flood of changes
# the rest waits for the next round, or for a scrape, instead of the rounds running back to back.
ROUND_BYTES = 128 << 20


async def compress_round(renderer: Renderer, builder: MemberBuilder, round_bytes: int = ROUND_BYTES) -> int:
    """Rebuild the buckets that have pending lines (up to ``round_bytes`` of text); the bytes done."""
    pieces = renderer.dirty(round_bytes)
    done = 0
    start = 0
    while start < len(pieces):
        # Installed batch by batch: a scrape arriving meanwhile finds what is done built.
        end, size = start, 0
        while end < len(pieces) and size < BATCH_BYTES:
            size += pieces[end].size
            end += 1
        batch = pieces[start:end]
        await builder.build(batch)
        renderer.install(batch)
        done += size
        start = end
    return done


async def keep_compressed(renderer: Renderer, builder: MemberBuilder, every: float = EVERY_SECONDS) -> None:
    while True:
        await asyncio.sleep(every)
        await compress_round(renderer, builder)
