"""The shapes rules read and return: evaluation groups, their views, and ``Computed``.

Owns ``Computed`` (what one rule module returns for one object), the plain group containers the
store hands to the engine (``CapiGroup``, ``MwrsGroup``, ``SingleGroup``), and the read-only views
rules navigate (``GroupView`` for Cluster API, ``MwrsView`` for OCM). Owns no rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

# acyclic classes: see exporter/engine/model.py
from mypy_extensions import mypyc_attr

from exporter.engine.model import (
    NO_COUNTERS,
    Base,
    Cluster,
    ClusterClass,
    Condition,
    Finding,
    InfraMachinePool,
    KubeadmControlPlane,
    Machine,
    MachineDeployment,
    MachineHealthCheck,
    MachinePool,
    MachineSet,
    ManagedCluster,
    ManifestWork,
    ManifestWorkReplicaSet,
    ObjectKey,
    Placement,
    PlacementDecision,
    no_counters,
)


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class Computed:
    """What the engine computes for one object before transition times are filled in."""

    conditions: tuple[Condition, ...] = ()
    counters: Mapping[str, int | None] = field(default_factory=no_counters)
    phase: str | None = None
    findings: tuple[Finding, ...] = ()

    def __init__(self, conditions: tuple[Condition, ...] = (),
                 counters: Mapping[str, int | None] | None = None, phase: str | None = None,
                 findings: tuple[Finding, ...] = ()) -> None:
        # written out (see model.Condition.__init__): every rule returns one per object evaluated
        object.__setattr__(self, "conditions", conditions)
        object.__setattr__(self, "counters", NO_COUNTERS if counters is None else counters)
        object.__setattr__(self, "phase", phase)
        object.__setattr__(self, "findings", findings)

    def condition(self, type_: str) -> Condition | None:
        for c in self.conditions:  # a plain loop: rules call this hundreds of times per group
            if c.type == type_:
                return c
        return None


# ---- groups: what the store hands over --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CapiGroup:
    """A Cluster and every object of its namespace that names it (cluster-name label / spec.clusterName),
    with the ClusterClass its topology names (by namespace and name; the store hands over that one
    only, when it holds it)."""

    objects: tuple[Base, ...]
    cluster_classes: Mapping[tuple[str, str], ClusterClass] = field(
        default_factory=lambda: MappingProxyType({})
    )


@dataclass(frozen=True, slots=True)
class MwrsGroup:
    """A ManifestWorkReplicaSet with its ManifestWorks, Placements, decisions and ManagedClusters."""

    mwrs: ManifestWorkReplicaSet | None
    manifest_works: tuple[ManifestWork, ...] = ()
    placements: Mapping[str, Placement] = field(default_factory=lambda: MappingProxyType({}))
    placement_decisions: tuple[PlacementDecision, ...] = ()
    managed_clusters: Mapping[str, ManagedCluster] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class SingleGroup:
    """An object evaluated on its own (ManagedCluster, Placement, an orphan ManifestWork)."""

    obj: Base


Group = CapiGroup | MwrsGroup | SingleGroup


# ---- views: what rules read ---------------------------------------------------------------------


class GroupView:
    """Read access to one Cluster API group and to the results computed so far in it."""

    def __init__(self, group: CapiGroup) -> None:
        self.cluster: Cluster | None = None
        self.machines: list[Machine] = []
        self.machine_sets: list[MachineSet] = []
        self.machine_deployments: list[MachineDeployment] = []
        self.control_planes: list[KubeadmControlPlane] = []
        self.machine_pools: list[MachinePool] = []
        self.infra_machine_pools: list[InfraMachinePool] = []
        self.health_checks: list[MachineHealthCheck] = []
        self.cluster_classes: Mapping[tuple[str, str], ClusterClass] = group.cluster_classes
        self._objects: dict[ObjectKey, Base] = {}
        self._computed: dict[ObjectKey, Computed] = {}
        self._reported: dict[ObjectKey, dict[str, Condition]] = {}
        for obj in group.objects:
            self._objects[obj.key] = obj
            self._sort_in(obj)

    def _sort_in(self, obj: Base) -> None:
        # Exact types: InfraMachinePool must not be mistaken for MachinePool and vice versa.
        if isinstance(obj, Cluster):
            self.cluster = obj
        elif isinstance(obj, Machine):
            self.machines.append(obj)
        elif isinstance(obj, MachineSet):
            self.machine_sets.append(obj)
        elif isinstance(obj, MachineDeployment):
            self.machine_deployments.append(obj)
        elif isinstance(obj, KubeadmControlPlane):
            self.control_planes.append(obj)
        elif isinstance(obj, MachinePool):
            self.machine_pools.append(obj)
        elif isinstance(obj, InfraMachinePool):
            self.infra_machine_pools.append(obj)
        elif isinstance(obj, MachineHealthCheck):
            self.health_checks.append(obj)

    # -- results of kinds evaluated earlier in the group ------------------------------------------

    def record(self, key: ObjectKey, computed: Computed) -> None:
        self._computed[key] = computed

    def computed(self, key: ObjectKey) -> Computed | None:
        return self._computed.get(key)

    def effective(self, key: ObjectKey, type_: str) -> Condition | None:
        """The object's reported v1beta2 condition of this type, else the engine's."""
        found = self._reported.get(key)
        reported = (found if found is not None else self._reported_by_type(key)).get(type_)
        if reported is not None:
            return reported
        computed = self._computed.get(key)
        return computed.condition(type_) if computed is not None else None

    def as_reported(self, key: ObjectKey, type_: str) -> Condition | None:
        """The condition as an owner's controller reads it on the object.

        An object that reports v1beta2 conditions is read as stored: one it has not reported yet is
        None ("not yet reported" in an aggregate, not True in a count), not the engine's stand-in.
        An object stored without them (CAPI before v1.9) is read through the engine's conditions.
        """
        obj = self._objects.get(key)
        if obj is not None and obj.has_v1beta2_conditions:
            return self._reported_by_type(key).get(type_)
        computed = self._computed.get(key)
        return computed.condition(type_) if computed is not None else None

    def _reported_by_type(self, key: ObjectKey) -> dict[str, Condition]:
        # Rules look conditions up hundreds of times per group: index each object's once (a dict,
        # not a Mapping: compiled, a dict's get is a direct call).
        found = self._reported.get(key)
        if found is None:
            obj = self._objects.get(key)
            usable = obj is not None and obj.has_v1beta2_conditions
            # reversed: the first condition of a type wins, as upstream's conditions.Get reads a list
            found = {c.type: c for c in reversed(obj.conditions)} if obj is not None and usable else {}
            self._reported[key] = found
        return found

    # -- navigation ---------------------------------------------------------------------------------

    def machines_of_set(self, ms: MachineSet) -> list[Machine]:
        return [m for m in self.machines if m.set_name == ms.meta.name]

    def machines_of_deployment(self, md: MachineDeployment) -> list[Machine]:
        return [m for m in self.machines if m.deployment_name == md.meta.name]

    def sets_of_deployment(self, md: MachineDeployment) -> list[MachineSet]:
        return [ms for ms in self.machine_sets if ms.deployment_name == md.meta.name]

    def machines_of_control_plane(self, kcp: KubeadmControlPlane) -> list[Machine]:
        return [
            m
            for m in self.machines
            if m.control_plane_name == kcp.meta.name or (m.control_plane and not m.control_plane_name)
        ]

    def machines_of_pool(self, mp: MachinePool) -> list[Machine]:
        return [m for m in self.machines if m.pool_name == mp.meta.name]

    def infra_pool_of(self, mp: MachinePool) -> InfraMachinePool | None:
        ref = mp.infrastructure_ref
        if ref is None:
            return None
        return next(
            (p for p in self.infra_machine_pools if p.meta.kind == ref.kind and p.meta.name == ref.name),
            None,
        )

    def control_plane_machines(self) -> list[Machine]:
        return [m for m in self.machines if m.control_plane]

    def worker_machines(self) -> list[Machine]:
        return [m for m in self.machines if not m.control_plane]


class MwrsView:
    """Read access to one ManifestWorkReplicaSet group."""

    def __init__(self, group: MwrsGroup) -> None:
        self.mwrs = group.mwrs
        self.manifest_works: Sequence[ManifestWork] = group.manifest_works
        self.placements: Mapping[str, Placement] = group.placements
        self.placement_decisions: Sequence[PlacementDecision] = group.placement_decisions
        self.managed_clusters: Mapping[str, ManagedCluster] = group.managed_clusters
