"""The changes the benchmark makes to a served fleet, and the marker that makes each one visible.

Owns what one "event" is: a Machine gets a new ``status.certificatesExpiryDate`` (the *marker*: a
unique Unix second, exported as ``capi_machine_status_certificatesexpirydate``), and in a share of
the changes its Node also turns unhealthy or healthy again (conditions, counters and aggregates of
its owners change with it, as on a real hub), and in a smaller share the Machine is deleted and
created again under a new uid. Owns no I/O: ``apiserver.py`` applies these to the fake API server.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from tests.benchmark.fleet import EPOCH, Obj, rfc3339

MARKER_FAMILY = "capi_machine_status_certificatesexpirydate"
MARKER_BASE = int(EPOCH) + 400 * 86_400  # far from every generated expiry date
FLIP_SHARE = 0.3  # changes that also flip the Node's health
RECREATE_SHARE = 0.01  # changes that delete the Machine and create it again
_FLIPPED = {"Ready", "Available", "NodeReady", "NodeHealthy"}


@dataclass(frozen=True)
class Change:
    """One change made: which Machine, the marker it now carries, when, and how many watch events."""

    namespace: str
    name: str
    marker: int
    at: float  # time.monotonic() in the process that made it
    events: int


class Mutator:
    """Makes seeded, repeatable changes to Machines; markers only grow."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.counter = 0

    def next_marker(self) -> int:
        self.counter += 1
        return MARKER_BASE + self.counter

    def kind_of_change(self) -> str:
        r = self.rng.random()
        if r < RECREATE_SHARE:
            return "recreate"
        return "flip" if r < RECREATE_SHARE + FLIP_SHARE else "marker"


def changed(current: Obj, marker: int, flip: bool) -> Obj:
    """A new version of ``current`` (shallow copies: the API server deep-copies on write)."""
    new = dict(current)
    meta = dict(current["metadata"])
    meta.pop("resourceVersion", None)
    new["metadata"] = meta
    status = dict(current.get("status") or {})
    status["certificatesExpiryDate"] = rfc3339(marker)
    status["lastUpdated"] = rfc3339(marker)
    if flip:
        status["conditions"] = flipped_conditions(status.get("conditions") or [], rfc3339(marker))
    new["status"] = status
    return new


def recreated(current: Obj, marker: int, uid: str) -> Obj:
    """``current`` deleted and created again: a new uid and creationTimestamp, the same name."""
    new = changed(current, marker, flip=False)
    meta = new["metadata"]
    meta["uid"] = uid
    meta["creationTimestamp"] = rfc3339(marker)
    for key in ("generation", "deletionTimestamp"):
        meta.pop(key, None)
    return new


def flipped_conditions(conditions: list[Any], ltt: str) -> list[Any]:
    """The Node's health inverted: Ready, Available, NodeReady and NodeHealthy change together."""
    current = next((c for c in conditions if c.get("type") == "NodeHealthy"), None)
    healthy_now = current is not None and current.get("status") == "True"
    out = []
    for c in conditions:
        if c.get("type") not in _FLIPPED:
            out.append(c)
            continue
        c = dict(c)
        c["status"] = "False" if healthy_now else "True"
        c["lastTransitionTime"] = ltt
        t = c["type"]
        if healthy_now:
            c["reason"] = {
                "Ready": "NotReady",
                "Available": "NotReady",
                "NodeReady": "NodeNotReady",
                "NodeHealthy": "NodeNotHealthy",
            }[t]
            c["message"] = "* Node.Ready: kubelet stopped posting node status"
        else:
            c["reason"] = {
                "Ready": "Ready",
                "Available": "Available",
                "NodeReady": "NodeReady",
                "NodeHealthy": "NodeHealthy",
            }[t]
            c["message"] = ""
        out.append(c)
    return out


def marker_of(value: float) -> int:
    """The marker a sample value carries (exposition may print it as 1.8e+09-style floats)."""
    return round(value)
