"""Pending lines compressed into their buckets off the loop, before they reach the loop's limit.

Owns ``keep_compressed``. Changed lines wait in their buckets until a gzip scrape rebuilds those
buckets; if pending lines pass the renderer's limit, the loop rebuilds buckets itself, between
events, and probes and scrapes wait. With scrapes 15 s apart under churn at fleet size that limit
was reached between scrapes. Every ``EVERY_SECONDS`` this task looks at the pending lines: past
``START`` of the limit, the buckets with the most pending bytes are rebuilt by the
``MemberBuilder`` (in its worker process) and installed, until ``END`` of the limit is left.

Not every dirty bucket every second: a bucket changed every few seconds would be rebuilt each
time, several times the work of rebuilding it at scrape time (docs/performance.md). Owns no
knowledge of buckets' contents.
"""

from __future__ import annotations

import asyncio
import logging

from exporter.metrics.memberbuilder import MemberBuilder
from exporter.metrics.renderer import Renderer

log = logging.getLogger("exporter.compaction")

EVERY_SECONDS = 1.0
# Fractions of the limit: a round starts past START and rebuilds down to END. A round's memory
# comes back only at the allocator's next trim, after the new members are in (old members,
# pending lines and the batches in flight overlap for a moment), so small rounds keep the RSS
# steps small (docs/performance.md).
START = (3, 8)
END = (1, 4)


async def compress_pending(renderer: Renderer, builder: MemberBuilder) -> int:
    """Rebuild the heaviest dirty buckets if pending lines are past ``START`` of the limit.

    Returns the net fall in pending bytes (changes keep arriving meanwhile).
    """
    limit = renderer.pending_limit()
    if renderer.pending_bytes <= limit * START[0] // START[1]:
        return 0
    before = renderer.pending_bytes
    # Installed batch by batch: a scrape arriving meanwhile finds what is done built.
    await builder.build(renderer.heaviest(before - limit * END[0] // END[1]), after_batch=renderer.install)
    return before - renderer.pending_bytes


async def keep_compressed(renderer: Renderer, builder: MemberBuilder, every: float = EVERY_SECONDS) -> None:
    failing = False
    while True:
        await asyncio.sleep(every)
        try:
            await compress_pending(renderer, builder)
            failing = False
        except Exception:  # the loop's own limit still holds pending lines: log, and keep trying
            if not failing:
                log.exception("compressing pending lines failed; the loop compresses them past its limit")
            failing = True
