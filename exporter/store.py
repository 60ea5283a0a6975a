"""The store: projected objects from a source, and which evaluation groups changed since last asked.

Owns the sink the sources write into (``replace`` / ``upsert`` / ``delete``), the atomic
replacement of one kind's contents after a relist (objects missing from the new list are
deleted), shard filtering of groups, and what changed since the evaluation loop last asked: the
dirty groups, and the objects whose update changed only fields no rule reads (those need
re-rendering, not evaluation; the composition root passes the test, ``export_only``, which the
engine's ``rule_inputs`` owns; without it every change re-evaluates). An update equal to the
stored projection changes nothing. Owns no I/O and no evaluation; indexing lives in
``exporter.engine.grouping.FleetIndex``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from exporter.engine.evaluate_types import Group
from exporter.engine.grouping import FleetIndex, GroupKey
from exporter.engine.model import Base, ObjectKey


def keep_all(_: GroupKey) -> bool:
    return True


def never_export_only(_old: Base, _new: Base) -> bool:
    return False


class Store:
    """Projections keyed by (kind, namespace, name), with change tracking by group."""

    def __init__(
        self, *, keep: Callable[[GroupKey], bool] = keep_all,
        export_only: Callable[[Base, Base], bool] = never_export_only,
    ) -> None:
        self._index = FleetIndex()
        self._dirty: set[GroupKey] = set()
        # Objects updated in export-only fields since the last take, with their group.
        self._exported: dict[ObjectKey, GroupKey] = {}
        self._export_only = export_only
        self._keep = keep
        self.generation = 0  # bumped on every change; lets waiters tell "something happened"

    # ---- the sink sources write into ------------------------------------------------------------

    def upsert(self, obj: Base) -> None:
        old = self._index.get(obj.key)
        if old is not None:
            # API servers send many updates that change nothing projected (resourceVersion,
            # managedFields, annotations nobody reads): those cost a comparison, nothing more.
            if old is obj or old == obj:  # the very object: parse.project gave back the previous one
                return
            if self._export_only(old, obj):
                group = self._index.swap(obj)
                if group is not None:
                    self._exported[obj.key] = group
                    self.generation += 1
                    return
        # Its group is dirty now: the evaluation renders it, whatever came before.
        self._exported.pop(obj.key, None)
        self._mark(self._index.put(obj))

    def delete(self, kind: str, namespace: str, name: str) -> None:
        self._exported.pop((kind, namespace, name), None)
        self._mark(self._index.remove((kind, namespace, name)))

    def replace(self, kind: str, objects: Iterable[Base], namespace: str | None = None) -> None:
        """Make ``kind`` (in ``namespace``, or everywhere) hold exactly ``objects``.

        Used after a (re)list: objects the new list lacks were deleted while we were not
        watching, so they are removed here; the whole swap happens before any evaluation runs.
        """
        incoming = list(objects)
        fresh: set[ObjectKey] = {o.key for o in incoming}
        for key in self._index.keys_of_kind(kind, namespace):
            if key not in fresh:
                self._exported.pop(key, None)
                self._mark(self._index.remove(key))
        for obj in incoming:
            self.upsert(obj)

    # ---- the evaluation side -------------------------------------------------------------------

    def take_dirty(self) -> set[GroupKey]:
        dirty, self._dirty = self._dirty, set()
        return {g for g in dirty if self._keep(g)}

    def take_exported(self) -> dict[ObjectKey, GroupKey]:
        """Objects changed in export-only fields since the last take, by key, with their group.

        Take it together with ``take_dirty`` (no await in between): an object whose group is dirty
        too is evaluated with it, and the others' previous Results still hold.
        """
        exported, self._exported = self._exported, {}
        return {k: g for k, g in exported.items() if self._keep(g)}

    def build(self, key: GroupKey) -> Group | None:
        return self._index.build(key)

    def all_groups(self, alone_if: Callable[[Base], bool] | None = None) -> list[GroupKey]:
        """Every group this shard keeps; of the objects evaluated alone, only those ``alone_if``
        accepts, if given."""
        return [g for g in self._index.group_keys(alone_if) if self._keep(g)]

    # The same a part at a time (``all_groups`` is ``shared_groups`` and ``alone_groups`` of each
    # kind), for a caller that lets others run between the parts.

    def shared_groups(self) -> list[GroupKey]:
        """The groups this shard keeps that are not a single object evaluated alone."""
        return [g for g in self._index.shared_group_keys() if self._keep(g)]

    def alone_groups(self, kind: str, alone_if: Callable[[Base], bool] | None = None) -> list[GroupKey]:
        """The objects of ``kind`` this shard keeps that are evaluated alone (those ``alone_if`` accepts)."""
        return [g for g in self._index.alone_keys(kind, alone_if) if self._keep(g)]

    def kinds(self) -> list[str]:
        return self._index.kinds()

    def get(self, key: ObjectKey) -> Base | None:
        return self._index.get(key)

    def group_of(self, key: ObjectKey) -> GroupKey | None:
        """The group a stored object belongs to, whatever the shard filter says."""
        return self._index.group_of(key)

    def count_by_kind(self) -> dict[str, int]:
        return self._index.count_by_kind()

    def __len__(self) -> int:
        return len(self._index)

    def _mark(self, groups: set[GroupKey]) -> None:
        if groups:
            self._dirty |= {g for g in groups if g[0] != "none"}
            self.generation += 1
