"""Which objects are evaluated together, and which groups an object's change affects.

Owns ``FleetIndex``: projections by key, indexed into evaluation groups (see
docs/architecture.md), and ``group_projections`` for one-shot evaluation. A change to an object
dirties its own group and the groups that read it (a ClusterClass → the Clusters using it; a
Placement or ManagedCluster → the ManifestWorkReplicaSets depending on it), so an event costs
the size of its group, not of the fleet. Pure data structure: no I/O, no clock.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import TypeVar

from exporter.engine.evaluate_types import CapiGroup, Group, MwrsGroup, SingleGroup
from exporter.engine.model import (
    READ_AS_REPORTED,
    Base,
    BootstrapConfig,
    Cluster,
    ClusterClass,
    InfraObject,
    ManagedCluster,
    ManagedClusterAddOn,
    ManifestWork,
    ManifestWorkReplicaSet,
    ObjectKey,
    Placement,
    PlacementDecision,
)

GroupKey = tuple[str, ...]  # of variable length so that it stays one object (see model.ObjectKey)
"""("capi", ns, cluster) | ("mwrs", ns, name) | ("none", kind, "ns/name") | the key (kind, ns, name)
of an object evaluated alone: its own tuple, so that such a group costs no object of its own."""

_K = TypeVar("_K")

# Kinds evaluated each on its own, that no other object's evaluation reads (provider objects
# other than InfraMachinePools, which their MachinePool reads: those join their Cluster's group).
_ON_THEIR_OWN: tuple[type[Base], ...] = (
    ManagedCluster, ManagedClusterAddOn, Placement, InfraObject, BootstrapConfig, *READ_AS_REPORTED,
)


# The kinds that are always a group of their own (a ManifestWork is one when no MWRS owns it).
_ALONE: tuple[type[Base], ...] = (ClusterClass, *_ON_THEIR_OWN)


def evaluated_alone(obj: Base) -> bool:
    """Whether ``obj`` is a group of its own (``group_key(obj)`` is its key), without building a key."""
    if isinstance(obj, ManifestWork):
        return owner_of(obj) is None
    return isinstance(obj, _ALONE)


def group_key(obj: Base) -> GroupKey:
    """The group an object belongs to (InfraMachinePools join their Cluster's group; other provider
    objects and the kinds read as reported are groups of their own, like ClusterClass)."""
    if isinstance(obj, ManifestWork):
        owner = owner_of(obj)
        return ("mwrs", *owner) if owner else obj.key
    if isinstance(obj, _ALONE):
        return obj.key
    ns, name = obj.meta.namespace, obj.meta.name
    if isinstance(obj, Cluster):
        return ("capi", ns, name)
    if isinstance(obj, ManifestWorkReplicaSet):
        return ("mwrs", ns, name)
    if isinstance(obj, PlacementDecision):
        return ("none", "PlacementDecision", f"{ns}/{name}")
    return ("capi", ns, obj.cluster_name)


def owner_of(work: ManifestWork) -> tuple[str, str] | None:
    """The (namespace, name) of the MWRS a ManifestWork's owner label names (``<ns>.<name>``)."""
    # Namespaces are DNS labels and hold no dots, so the first dot separates the two parts.
    ns, dot, name = work.owner.partition(".")
    return (ns, name) if dot and ns and name else None


class FleetIndex:
    """Projections by key, grouped for evaluation, with the indexes that keep lookups local."""

    def __init__(self) -> None:
        # One dict per kind, and no other per object: an object's key starts with its kind, and
        # its group is ``group_key`` of it (a dict entry is ~45 bytes, at 100 % of the benchmark
        # fleet ~3 MiB per dict over every object with the provider objects).
        self._by_kind: dict[str, dict[ObjectKey, Base]] = defaultdict(dict)
        self._count = 0
        # The objects of each group but those evaluated alone, whose group is their key (a set of
        # one is ~250 bytes, and there is such a group for every provider object).
        self._group_objects: dict[GroupKey, set[ObjectKey]] = defaultdict(set)
        # ManifestWorks by namespace (= managed cluster name), decisions by (namespace, placement).
        self._works_in: dict[str, set[ObjectKey]] = defaultdict(set)
        self._decisions_of: dict[tuple[str, str], set[ObjectKey]] = defaultdict(set)

    def __len__(self) -> int:
        return self._count

    def get(self, key: ObjectKey) -> Base | None:
        objects = self._by_kind.get(key[0])
        return objects.get(key) if objects is not None else None

    def group_of(self, key: ObjectKey) -> GroupKey | None:
        obj = self.get(key)
        return group_key(obj) if obj is not None else None

    def keys_of_kind(self, kind: str, namespace: str | None = None) -> list[ObjectKey]:
        return [k for k in self._by_kind.get(kind, ()) if namespace is None or k[1] == namespace]

    def count_by_kind(self) -> dict[str, int]:
        return {kind: len(objs) for kind, objs in self._by_kind.items()}

    def put(self, obj: Base) -> set[GroupKey]:
        """Add or replace an object; returns the groups to re-evaluate."""
        dirty = self.remove(obj.key)
        key = group_key(obj)
        self._by_kind[obj.meta.kind][obj.key] = obj
        self._count += 1
        if key != obj.key:
            self._group_objects[key].add(obj.key)
        if isinstance(obj, ManifestWork):
            self._works_in[obj.meta.namespace].add(obj.key)
        elif isinstance(obj, PlacementDecision):
            self._decisions_of[(obj.meta.namespace, obj.placement_name)].add(obj.key)
        dirty.add(key)
        dirty |= self._dependents(obj)
        return dirty

    def swap(self, obj: Base) -> GroupKey | None:
        """Replace a stored object by a newer version in place; its group and indexes stay as they are.

        For updates that cannot move the object (see ``rule_inputs``): the group's object order is
        kept too, where ``put`` would remove and add. Returns the object's group, or None (nothing
        stored) when there was nothing to replace or the update would move it: ``put`` then.
        """
        old = self.get(obj.key)
        if old is None or type(old) is not type(obj) or isinstance(obj, ManifestWork | PlacementDecision):
            return None
        group = group_key(old)
        if group_key(obj) != group:
            return None
        self._by_kind[obj.meta.kind][obj.key] = obj
        return group

    def remove(self, key: ObjectKey) -> set[GroupKey]:
        objects = self._by_kind.get(key[0])
        obj = objects.pop(key, None) if objects is not None else None
        if obj is None:
            return set()
        self._count -= 1
        gk = group_key(obj)
        if gk != key:
            _discard(self._group_objects, gk, key)
        if isinstance(obj, ManifestWork):
            _discard(self._works_in, obj.meta.namespace, key)
        elif isinstance(obj, PlacementDecision):
            _discard(self._decisions_of, (obj.meta.namespace, obj.placement_name), key)
        return {gk} | self._dependents(obj)

    def group_keys(self, alone_if: Callable[[Base], bool] | None = None) -> list[GroupKey]:
        """Every group; of the objects evaluated alone, only those ``alone_if`` accepts, if given."""
        alone = [k for kind in list(self._by_kind) for k in self.alone_keys(kind, alone_if)]
        return self.shared_group_keys() + alone

    def shared_group_keys(self) -> list[GroupKey]:
        """The groups that are not a single object evaluated alone (Cluster API, MWRS groups)."""
        return [k for k in self._group_objects if k[0] != "none"]

    def alone_keys(self, kind: str, alone_if: Callable[[Base], bool] | None = None) -> list[GroupKey]:
        """The objects of ``kind`` evaluated alone (only those ``alone_if`` accepts, if given): each
        is its own group."""
        objects = self._by_kind.get(kind)
        if objects is None:
            return []
        return [o.key for o in objects.values() if evaluated_alone(o) and (alone_if is None or alone_if(o))]

    def kinds(self) -> list[str]:
        return list(self._by_kind)

    def _dependents(self, obj: Base) -> set[GroupKey]:
        ns, name = obj.meta.namespace, obj.meta.name
        if isinstance(obj, ClusterClass):
            return {
                group_key(o)
                for o in self._by_kind.get("Cluster", {}).values()
                if isinstance(o, Cluster)
                and o.topology_class == name
                and (o.topology_class_namespace or o.meta.namespace) == ns
            }
        if isinstance(obj, Placement | PlacementDecision):
            placement = obj.meta.name if isinstance(obj, Placement) else obj.placement_name
            return {
                ("mwrs", o.meta.namespace, o.meta.name)
                for o in self._by_kind.get("ManifestWorkReplicaSet", {}).values()
                if isinstance(o, ManifestWorkReplicaSet)
                and o.meta.namespace == ns
                and any(ref.name == placement for ref in o.placement_refs)
            }
        if isinstance(obj, ManagedCluster):
            works = (self.get(k) for k in self._works_in.get(name, ()))
            return {g for w in works if w is not None and (g := group_key(w))[0] == "mwrs"}
        return set()

    def build(self, key: GroupKey) -> Group | None:
        """The group's current contents, or None when it no longer exists."""
        alone = self.get(key)
        if alone is not None and evaluated_alone(alone):
            return SingleGroup(alone)
        objects = [o for k in self._group_objects.get(key, ()) if (o := self.get(k)) is not None]
        if not objects:
            return None
        if key[0] == "capi":
            return CapiGroup(objects=tuple(objects), cluster_classes=self._cluster_class_of(key))
        if key[0] == "mwrs":
            return self._mwrs_group(key, objects)
        return SingleGroup(objects[0])

    def _cluster_class_of(self, key: GroupKey) -> dict[tuple[str, str], ClusterClass]:
        """The ClusterClass the group's Cluster names, the only one its rules read: looked up, so
        that building a group costs the same however many classes the fleet has."""
        cluster = self.get(("Cluster", key[1], key[2]))
        if not isinstance(cluster, Cluster) or not cluster.topology_class:
            return {}
        ref = (cluster.topology_class_namespace or cluster.meta.namespace, cluster.topology_class)
        found = self.get(("ClusterClass", *ref))
        return {ref: found} if isinstance(found, ClusterClass) else {}

    def _mwrs_group(self, key: GroupKey, objects: list[Base]) -> MwrsGroup:
        mwrs = next((o for o in objects if isinstance(o, ManifestWorkReplicaSet)), None)
        works = tuple(o for o in objects if isinstance(o, ManifestWork))
        ns = key[1]
        refs = [r.name for r in mwrs.placement_refs] if mwrs is not None else []
        placements = {
            o.meta.name: o
            for ref in refs
            if isinstance(o := self.get(("Placement", ns, ref)), Placement)
        }
        decisions = tuple(
            o
            for ref in refs
            for k in sorted(self._decisions_of.get((ns, ref), ()))
            if isinstance(o := self.get(k), PlacementDecision)
        )
        managed = {
            w.meta.namespace: o
            for w in works
            if isinstance(o := self.get(("ManagedCluster", "", w.meta.namespace)), ManagedCluster)
        }
        return MwrsGroup(
            mwrs=mwrs,
            manifest_works=works,
            placements=placements,
            placement_decisions=decisions,
            managed_clusters=managed,
        )


def _discard(index: dict[_K, set[ObjectKey]], key: _K, obj_key: ObjectKey) -> None:
    objects = index.get(key)
    if objects is not None:
        objects.discard(obj_key)
        if not objects:
            del index[key]


def group_projections(projections: Iterable[Base]) -> list[Group]:
    index = FleetIndex()
    for obj in projections:
        index.put(obj)
    groups = [index.build(k) for k in sorted(index.group_keys())]
    return [g for g in groups if g is not None]
