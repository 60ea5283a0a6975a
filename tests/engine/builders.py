"""Small constructors for engine projections, shared by the engine tests (append-only).

Each builder takes only what a test varies; everything else has the value of a healthy object.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType

from exporter.engine.evaluate_types import CapiGroup, Computed, GroupView, MwrsGroup, MwrsView
from exporter.engine.model import (
    Base,
    Cluster,
    Condition,
    Counters,
    Gate,
    KubeadmControlPlane,
    Machine,
    MachineDeployment,
    MachineHealthCheck,
    MachineSet,
    ManagedCluster,
    ManifestWork,
    ManifestWorkReplicaSet,
    Meta,
    Placement,
    PlacementRef,
    PlacementSummary,
    Ref,
    RollingUpdate,
    RolloutSummary,
    Status,
)

T, F, U = Status.TRUE, Status.FALSE, Status.UNKNOWN


def cond(type_: str, status: Status, reason: str = "", message: str = "", og: int | None = None) -> Condition:
    return Condition(type=type_, status=status, reason=reason, message=message, observed_generation=og)


# ---- Open Cluster Management ------------------------------------------------------------------

OCM_WORK_V1ALPHA1 = "work.open-cluster-management.io/v1alpha1"
OWNER_LABEL = "work.open-cluster-management.io/manifestworkreplicaset"
PLACEMENT_LABEL = "work.open-cluster-management.io/placementname"
TEMPLATE = "template-hash-1"


def summary(total: int = 0, applied: int = 0, available: int = 0, progressing: int = 0,
            degraded: int = 0) -> RolloutSummary:
    return RolloutSummary(total=total, applied=applied, available=available, progressing=progressing,
                          degraded=degraded)


def placement_summary(
    name: str, s: RolloutSummary, selected: int | None, groups: int = 1
) -> PlacementSummary:
    """A placementSummary item as the controller writes it, its text parsed."""
    return PlacementSummary(
        name=name,
        summary=s,
        decision_groups=groups if selected is not None else None,
        selected_clusters=selected,
    )


def mwrs(
    s: RolloutSummary | None = None,
    *,
    selected: dict[str, int | None] | None = None,
    per_placement: dict[str, RolloutSummary] | None = None,
    conditions: Iterable[Condition] = (),
    rollout_type: str = "Progressive",
    name: str = "hello",
    namespace: str = "default",
    progressing_rule: bool | None = True,
    spec_hash: str = TEMPLATE,
    status_reported: bool = True,
    legacy: bool = False,
) -> ManifestWorkReplicaSet:
    """An MWRS with one placement ``p`` by default; ``selected`` maps placement → selected clusters.

    Placement summaries default to the top-level summary for a single placement; pass
    ``per_placement`` to give each its own, or an empty dict for none.
    """
    s = RolloutSummary() if s is None else s
    selected = {"p": s.total} if selected is None else selected
    if per_placement is None:
        per_placement = {next(iter(selected)): s} if len(selected) == 1 else {}
    return ManifestWorkReplicaSet(
        meta=Meta(kind="ManifestWorkReplicaSet", api_version=OCM_WORK_V1ALPHA1, namespace=namespace,
                  name=name, generation=1),
        conditions=tuple(conditions),
        placement_refs=tuple(PlacementRef(name=p, rollout_type=rollout_type) for p in selected),
        summary=s,
        placement_summaries=tuple(
            placement_summary(p, ps, selected.get(p)) for p, ps in per_placement.items()
        ),
        uses_legacy_applied_key=legacy,
        template_has_progressing_rule=progressing_rule,
        spec_hash=spec_hash,
        status_reported=status_reported,
    )


def manifest_work(
    cluster: str,
    conditions: Iterable[Condition] = (),
    *,
    owner: str = "default.hello",
    placement: str = "p",
    generation: int = 1,
    spec_hash: str = TEMPLATE,
    deleting: bool = False,
    name: str = "hello",
) -> ManifestWork:
    return ManifestWork(
        meta=Meta(
            kind="ManifestWork", api_version="work.open-cluster-management.io/v1", namespace=cluster,
            name=name, generation=generation, deletion_timestamp=1.0 if deleting else None,
            labels=MappingProxyType({OWNER_LABEL: owner, PLACEMENT_LABEL: placement}),
        ),
        cluster_name=cluster,
        conditions=tuple(conditions),
        owner=owner,
        placement_name=placement,
        spec_hash=spec_hash,
    )


def work_conditions(applied: Status | None = T, progressing: Status | None = F, degraded: Status | None = F,
                    available: Status | None = T, og: int = 1) -> tuple[Condition, ...]:
    """A ManifestWork's conditions; None leaves a condition out."""
    pairs = (("Applied", applied), ("Available", available), ("Progressing", progressing),
             ("Degraded", degraded))
    return tuple(cond(t, s, og=og) for t, s in pairs if s is not None)


def managed_cluster(name: str, available: Status | None = T, reason: str = "") -> ManagedCluster:
    conditions = () if available is None else (cond("ManagedClusterConditionAvailable", available, reason),)
    return ManagedCluster(
        meta=Meta(kind="ManagedCluster", api_version="cluster.open-cluster-management.io/v1", namespace="",
                  name=name),
        cluster_name=name,
        conditions=conditions,
    )


def placement(name: str, selected: int | None, groups: int = 1, namespace: str = "default") -> Placement:
    return Placement(
        meta=Meta(kind="Placement", api_version="cluster.open-cluster-management.io/v1beta1",
                  namespace=namespace, name=name),
        number_of_selected_clusters=selected,
        decision_groups=groups,
    )


def mwrs_view(
    obj: ManifestWorkReplicaSet | None,
    works: Iterable[ManifestWork] = (),
    placements: Iterable[Placement] = (),
    clusters: Iterable[ManagedCluster] = (),
) -> MwrsView:
    return MwrsView(
        MwrsGroup(
            mwrs=obj,
            manifest_works=tuple(works),
            placements={p.meta.name: p for p in placements},
            managed_clusters={c.meta.name: c for c in clusters},
        )
    )


# ---- Cluster API ------------------------------------------------------------------------------

CAPI_V1BETA2 = "cluster.x-k8s.io/v1beta2"
NOW = 1_700_000_000.0
CLUSTER = "c1"


def capi_meta(kind: str, name: str, *, deleted_ago: float | None = None, age: float = 3600.0,
              labels: dict[str, str] | None = None, api_version: str = CAPI_V1BETA2,
              namespace: str = "ns") -> Meta:
    """Metadata of a CAPI object created ``age`` seconds before NOW (deleted ``deleted_ago`` before NOW)."""
    return Meta(
        kind=kind, api_version=api_version, namespace=namespace, name=name, generation=1,
        creation_timestamp=NOW - age,
        deletion_timestamp=None if deleted_ago is None else NOW - deleted_ago,
        labels=MappingProxyType({"cluster.x-k8s.io/cluster-name": CLUSTER, **(labels or {})}),
    )


def healthy_machine_conditions(ready_since: float = NOW - 600) -> tuple[Condition, ...]:
    """What a running v1beta2 Machine reports."""
    return (
        Condition("Ready", T, "Ready", "", ready_since),
        Condition("Available", T, "Available", "", ready_since),
        cond("BootstrapConfigReady", T, "Ready"),
        cond("InfrastructureReady", T, "Ready"),
        cond("NodeReady", T, "NodeReady"),
        cond("NodeHealthy", T, "NodeHealthy"),
        cond("UpToDate", T, "UpToDate"),
        cond("Deleting", F, "NotDeleting"),
    )


def machine(name: str = "m1", conditions: Iterable[Condition] | None = None, *, layout: str = "v1beta2",
            v1beta1: Iterable[Condition] = (), set_name: str = "", deployment_name: str = "",
            control_plane_name: str = "", deleted_ago: float | None = None, age: float = 3600.0,
            gates: Iterable[Gate] = (), min_ready_seconds: int = 0, **fields: object) -> Machine:
    """A Machine; with no ``conditions`` a healthy running one (v1beta1 layout: none reported)."""
    labels = {}
    if set_name:
        labels["cluster.x-k8s.io/set-name"] = set_name
    if deployment_name:
        labels["cluster.x-k8s.io/deployment-name"] = deployment_name
    if control_plane_name:
        labels["cluster.x-k8s.io/control-plane"] = ""
        labels["cluster.x-k8s.io/control-plane-name"] = control_plane_name
    if conditions is None:
        conditions = () if layout == "v1beta1" else healthy_machine_conditions()
    return Machine(
        meta=capi_meta("Machine", name, deleted_ago=deleted_ago, age=age, labels=labels),
        cluster_name=CLUSTER, conditions=tuple(conditions), v1beta1_conditions=tuple(v1beta1),
        layout=layout, control_plane=bool(control_plane_name), control_plane_name=control_plane_name,
        set_name=set_name, deployment_name=deployment_name, readiness_gates=tuple(gates),
        min_ready_seconds=min_ready_seconds,
        bootstrap_ref=Ref("KubeadmConfig", f"{name}-boot", "bootstrap.cluster.x-k8s.io"),
        infrastructure_ref=Ref("DockerMachine", f"{name}-infra", "infrastructure.cluster.x-k8s.io"),
        **fields,  # type: ignore[arg-type]
    )


def machine_set(name: str = "ms1", replicas: int | None = 1, *, deployment_name: str = "",
                deleted_ago: float | None = None, version: str = "v1.30.0", infra: str = "tmpl-1",
                **fields: object) -> MachineSet:
    labels = {"cluster.x-k8s.io/deployment-name": deployment_name} if deployment_name else {}
    return MachineSet(
        meta=capi_meta("MachineSet", name, deleted_ago=deleted_ago, labels=labels),
        cluster_name=CLUSTER, deployment_name=deployment_name, replicas=replicas, version=version,
        infrastructure_ref=Ref("DockerMachineTemplate", infra, "infrastructure.cluster.x-k8s.io"),
        **fields,  # type: ignore[arg-type]
    )


def machine_deployment(name: str = "md1", replicas: int | None = 1, *, deleted_ago: float | None = None,
                       max_surge: int | str | None = None, max_unavailable: int | str | None = None,
                       strategy: str = "RollingUpdate", version: str = "v1.30.0", infra: str = "tmpl-1",
                       **fields: object) -> MachineDeployment:
    return MachineDeployment(
        meta=capi_meta("MachineDeployment", name, deleted_ago=deleted_ago),
        cluster_name=CLUSTER, replicas=replicas, strategy_type=strategy,
        rolling_update=RollingUpdate(max_surge=max_surge, max_unavailable=max_unavailable), version=version,
        infrastructure_ref=Ref("DockerMachineTemplate", infra, "infrastructure.cluster.x-k8s.io"),
        **fields,  # type: ignore[arg-type]
    )


def health_check(name: str = "mhc1", *, expected: int | None = 3, healthy: int | None = 3,
                 allowed: int | None = None, max_unhealthy: int | str | None = None, in_range: str = "",
                 conditions: Iterable[Condition] = (), layout: str = "v1beta2") -> MachineHealthCheck:
    return MachineHealthCheck(
        meta=capi_meta("MachineHealthCheck", name), cluster_name=CLUSTER, conditions=tuple(conditions),
        layout=layout, expected_machines=expected, current_healthy=healthy, remediations_allowed=allowed,
        unhealthy_less_than_or_equal_to=max_unhealthy, unhealthy_in_range=in_range,
    )


def capi_cluster(name: str = CLUSTER, *, paused: bool = False) -> Cluster:
    return Cluster(meta=capi_meta("Cluster", name), cluster_name=name, spec_paused=paused)


def capi_view(*objects: Base, computed: dict[tuple[str, str, str], Computed] | None = None) -> GroupView:
    """A view over ``objects`` with already computed results recorded (children evaluated earlier)."""
    view = GroupView(CapiGroup(objects=tuple(objects)))
    for key, result in (computed or {}).items():
        view.record(key, result)
    return view


def kcp(name: str = "kcp1", *, external_etcd: bool = False) -> KubeadmControlPlane:
    return KubeadmControlPlane(meta=capi_meta("KubeadmControlPlane", name,
                                              api_version="controlplane.cluster.x-k8s.io/v1beta2"),
                               cluster_name=CLUSTER, external_etcd=external_etcd, reported=Counters())


# ---- Cluster API: control plane, MachinePool, Cluster (appended for the KCP / pool / Cluster tests) --

import dataclasses  # noqa: E402  (appended section: imports of its own keep the file append-only)

from exporter.engine.model import ClusterClass, InfraMachinePool, MachinePool, OwnerRef  # noqa: E402

KCP_API = "controlplane.cluster.x-k8s.io/v1beta2"
INFRA_API = "infrastructure.cluster.x-k8s.io/v1beta2"
CP_COMPONENTS = ("APIServerPodHealthy", "ControllerManagerPodHealthy", "SchedulerPodHealthy",
                 "EtcdPodHealthy")


def owned_by(meta: Meta, kind: str, name: str) -> Meta:
    return dataclasses.replace(meta, owner_refs=(OwnerRef(kind=kind, name=name),))


def cp_machine(name: str, *, kcp_name: str = "kcp1", components: Status | None = T, etcd: Status | None = T,
               message: str = "", extra: Iterable[Condition] = (), base: Iterable[Condition] | None = None,
               provider_id: str = "docker://x", node_name: str = "", version: str = "v1.30.0",
               **fields: object) -> Machine:
    """A control plane Machine with its per-Machine pod/etcd conditions (None leaves them out)."""
    pods = () if components is None else tuple(cond(t, components, "", message) for t in CP_COMPONENTS)
    member = () if etcd is None else (cond("EtcdMemberHealthy", etcd, "", message),)
    own = healthy_machine_conditions() if base is None else tuple(base)
    return machine(name, (*own, *pods, *member, *extra), control_plane_name=kcp_name,
                   provider_id=provider_id, node_name=node_name or f"{name}-node", version=version,
                   **fields)


def control_plane(name: str = "kcp1", *, replicas: int | None = 3, initialized: bool | None = True,
                  external_etcd: bool = False, conditions: Iterable[Condition] = (), version: str = "v1.30.0",
                  deleted_ago: float | None = None, paused: bool = False, layout: str = "v1beta2",
                  v1beta1: Iterable[Condition] = ()) -> KubeadmControlPlane:
    """A KubeadmControlPlane; CertificatesAvailable True unless ``conditions`` says otherwise."""
    own = tuple(conditions)
    if layout != "v1beta1" and not any(c.type == "CertificatesAvailable" for c in own):
        own = (*own, cond("CertificatesAvailable", T, "Available"))
    return KubeadmControlPlane(
        meta=capi_meta("KubeadmControlPlane", name, deleted_ago=deleted_ago, api_version=KCP_API),
        cluster_name=CLUSTER, conditions=own, v1beta1_conditions=tuple(v1beta1), layout=layout,
        replicas=replicas, initialized=initialized, external_etcd=external_etcd, version=version,
        paused_annotation=paused, reported=Counters(desired=replicas),
    )


def machine_pool(name: str = "mp1", replicas: int | None = 3, *, status_replicas: int | None = 3,
                 provisioned: bool | None = True, provider_ids: Iterable[str] | None = None,
                 deleted_ago: float | None = None, age: float = 3600.0, phase: str = "",
                 infra_kind: str = "DockerMachinePool", infra_name: str = "", paused: bool = False,
                 v1beta1: Iterable[Condition] = (), **fields: object) -> MachinePool:
    """A MachinePool whose providerIDList matches status.replicas unless ``provider_ids`` is given."""
    ids = tuple(provider_ids) if provider_ids is not None else tuple(
        f"docker://{name}-{i}" for i in range(status_replicas or 0))
    return MachinePool(
        meta=capi_meta("MachinePool", name, deleted_ago=deleted_ago, age=age), cluster_name=CLUSTER,
        replicas=replicas, provider_id_list=ids, infrastructure_provisioned=provisioned, phase=phase,
        infrastructure_ref=Ref(infra_kind, infra_name or f"{name}-infra", "infrastructure.cluster.x-k8s.io"),
        paused_annotation=paused, v1beta1_conditions=tuple(v1beta1),
        reported=Counters(desired=replicas, replicas=status_replicas), **fields,  # type: ignore[arg-type]
    )


def infra_machine_pool(pool: str = "mp1", *, replicas: int | None = 3, provisioned: bool | None = True,
                       ready: bool | None = None, provider_ids: Iterable[str] | None = None,
                       conditions: Iterable[Condition] = (), v1beta1: Iterable[Condition] = (),
                       kind: str = "DockerMachinePool", age: float = 3600.0,
                       **fields: object) -> InfraMachinePool:
    ids = tuple(provider_ids) if provider_ids is not None else tuple(
        f"docker://{pool}-{i}" for i in range(replicas or 0))
    return InfraMachinePool(
        meta=capi_meta(kind, f"{pool}-infra", api_version=INFRA_API, age=age), cluster_name=CLUSTER,
        conditions=tuple(conditions), v1beta1_conditions=tuple(v1beta1), provider_id_list=ids,
        replicas=replicas, provisioned=provisioned, ready=ready, **fields,  # type: ignore[arg-type]
    )


def pool_machine(name: str, pool: str = "mp1", conditions: Iterable[Condition] | None = None,
                 **fields: object) -> Machine:
    return machine(name, conditions, pool_name=pool, **fields)


def cluster_object(name: str = CLUSTER, *, cp_ref: str | None = "KubeadmControlPlane/kcp1",
                   infra_ref: str | None = "DockerCluster/c1", topology_class: str = "",
                   gates: tuple[Gate, ...] | None = None, conditions: Iterable[Condition] = (),
                   v1beta1: Iterable[Condition] = (), layout: str = "v1beta2",
                   deleted_ago: float | None = None, phase: str = "", **fields: object) -> Cluster:
    """A Cluster; refs are "Kind/name" strings, None for unset."""
    def ref(text: str | None) -> Ref | None:
        return None if text is None else Ref(*text.split("/", 1))

    return Cluster(
        meta=capi_meta("Cluster", name, deleted_ago=deleted_ago), cluster_name=name,
        conditions=tuple(conditions), v1beta1_conditions=tuple(v1beta1), layout=layout,
        control_plane_ref=ref(cp_ref), infrastructure_ref=ref(infra_ref), topology_class=topology_class,
        availability_gates=gates, phase=phase, **fields,  # type: ignore[arg-type]
    )


def cluster_class(name: str, gates: tuple[Gate, ...] | None) -> ClusterClass:
    return ClusterClass(meta=capi_meta("ClusterClass", name), availability_gates=gates)
