"""Sharding: which evaluation groups this process serves when ``--total-shards`` > 1.

Owns the stable hash of a group key (FNV-1a 64 over its parts, so every replica and every
restart agrees without coordination), the shard filter handed to the store, and ``--shard auto``
(the ordinal of a StatefulSet pod, read from the ``-<n>`` suffix of ``POD_NAME``). Whole groups
are assigned, so every aggregate (a Cluster over its Machines, an MWRS over its ManifestWorks)
is computed inside one shard. Owns no I/O beyond reading the environment variable it is given.
See docs/sharding.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final

_FNV_OFFSET: Final = 0xCBF29CE484222325
_FNV_PRIME: Final = 0x100000001B3
_MASK: Final = 0xFFFFFFFFFFFFFFFF
_ORDINAL = re.compile(r"-(\d+)$")


def fnv1a_64(data: bytes) -> int:
    h = _FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & _MASK
    return h


def shard_of(group_key: Sequence[str], total_shards: int) -> int:
    """The shard a group belongs to; parts are joined with NUL, which no Kubernetes name holds."""
    if total_shards <= 1:
        return 0
    return fnv1a_64("\x00".join(group_key).encode()) % total_shards


def keep_shard(shard: int, total_shards: int) -> Callable[[tuple[str, ...]], bool]:
    """The store's filter: True for the groups this shard evaluates and serves."""
    if total_shards <= 1:
        return lambda _key: True
    return lambda key: shard_of(key, total_shards) == shard


def ordinal_from_pod_name(pod_name: str) -> int | None:
    """``fleet-status-exporter-3`` → 3; None when the name has no numeric suffix."""
    match = _ORDINAL.search(pod_name.strip())
    return int(match.group(1)) if match else None
