"""How each CAPI kind is read from its raw object, in all three storage layouts.

Owns the per-kind readers used by ``parse.project`` and the layout rules they share: where the
v1beta2 and v1beta1 conditions live, which counters carry v1beta2 meanings in each layout, and
which spec/status paths moved between API versions. Owns no dispatch and no metadata reading
(``parse.py``) and no field decoding (``parse_fields.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

from exporter.engine.model import (
    Base,
    BootstrapConfig,
    Cluster,
    ClusterClass,
    ClusterResourceSet,
    ClusterResourceSetBinding,
    Counters,
    ExtensionConfig,
    InfraMachinePool,
    InfraObject,
    IPAddressClaim,
    KubeadmControlPlane,
    Machine,
    MachineDeployment,
    MachineDrainRule,
    MachineHealthCheck,
    MachinePool,
    MachineSet,
    Meta,
    RollingUpdate,
)
from exporter.engine.parse_fields import (
    MAX_LIST,
    Fields,
    bounded,
    is_map,
    recall,
    remember,
    shared_map,
    string_map,
)
from exporter.engine.vocabulary import MACHINE_V1BETA1_READ, PAUSED, READY

CAPI_GROUP: Final = "cluster.x-k8s.io"
CONTROLPLANE_GROUP: Final = "controlplane.cluster.x-k8s.io"
ADDONS_GROUP: Final = "addons.cluster.x-k8s.io"
RUNTIME_GROUP: Final = "runtime.cluster.x-k8s.io"
IPAM_GROUP: Final = "ipam.cluster.x-k8s.io"
PAUSED_ANNOTATION: Final = "cluster.x-k8s.io/paused"
REPLICAS_MANAGED_BY_ANNOTATION: Final = "cluster.x-k8s.io/replicas-managed-by"
# The topology controller's upgrade step in progress: the control plane version it waits for.
UPGRADE_STEP_ANNOTATION: Final = "topology.internal.cluster.x-k8s.io/upgrade-step"
CLUSTER_NAME_LABEL: Final = "cluster.x-k8s.io/cluster-name"
# Set on a Machine by its owner while an in-place update runs (CAPI v1.12+).
UPDATE_IN_PROGRESS_ANNOTATION: Final = "in-place-updates.internal.cluster.x-k8s.io/update-in-progress"
# Comma separated lifecycle hooks still to be called for the object.
PENDING_HOOKS_ANNOTATION: Final = "runtime.cluster.x-k8s.io/pending-hooks"
UPDATE_MACHINE_HOOK: Final = "UpdateMachine"
_V1BETA1_VERSIONS: Final = frozenset({"v1beta1", "v1alpha4", "v1alpha3"})
# status.nodeInfo keys kept on a Machine: those the capi_machine_info metric has labels for.
NODE_INFO_KEYS: Final = frozenset(
    {"containerRuntimeVersion", "kernelVersion", "kubeProxyVersion", "kubeletVersion", "osImage"}
)


def layout_of(meta: Meta, raw: Mapping[str, Any], f: Fields) -> str:
    """Which generation of status the object carries (see the module docstring)."""
    if meta.api_version_short not in _V1BETA1_VERSIONS:
        return "v1beta2"
    return "v1beta1+v1beta2" if f.mapping(raw, "status.v1beta2") is not None else "v1beta1"


def _common(
    raw: Mapping[str, Any], meta: Meta, f: Fields, layout: str | None = None,
    v1beta1_read: frozenset[str] | None = None, read: frozenset[str] | None = None,
) -> dict[str, Any]:
    """Keyword arguments of ``Base`` for a CAPI object: conditions of both generations, pausing, owner.

    ``v1beta1_read``: where the object also has v1beta2 conditions, the only v1beta1 types kept;
    ``read``: the only v1beta2 types kept (None: all).
    """
    layout = layout or layout_of(meta, raw, f)
    if layout == "v1beta2":
        conditions = f.conditions(raw, "status.conditions", read)
        old = f.conditions(raw, "status.deprecated.v1beta1.conditions", v1beta1_read)
    elif layout == "v1beta1+v1beta2":
        conditions = f.conditions(raw, "status.v1beta2.conditions", read)
        old = f.conditions(raw, "status.conditions", v1beta1_read)
    else:
        conditions, old = (), f.conditions(raw, "status.conditions")
    cluster_name = meta.labels.get(CLUSTER_NAME_LABEL, "") or f.word_(raw, "spec.clusterName")
    if not cluster_name:  # KCP carries neither: its Cluster owns it
        cluster_name = next((o.name for o in meta.owner_refs if o.kind == "Cluster"), "")
    return {
        "meta": meta,
        "cluster_name": cluster_name,
        "conditions": conditions,
        "v1beta1_conditions": old,
        "layout": layout,
        "observed_generation": f.int_(raw, "status.observedGeneration"),
        "paused_annotation": PAUSED_ANNOTATION in meta.annotations,
    }


def counters(
    desired: int | None = None,
    replicas: int | None = None,
    ready: int | None = None,
    available: int | None = None,
    up_to_date: int | None = None,
) -> Counters:
    """``Counters(...)``, one instance per distinct value: most objects of a fleet agree."""
    key = ("counters", desired, replicas, ready, available, up_to_date)
    found: Counters | None = recall(key)
    if found is None:
        found = remember(key, Counters(desired, replicas, ready, available, up_to_date))
    return found


def _v1beta2_counts(raw: Mapping[str, Any], layout: str, f: Fields, prefix: str = "status") -> Counters:
    """ready/available/upToDate where they carry v1beta2 meanings; replicas is the same in every layout.

    Plain v1beta1 objects leave ready/available/upToDate None: their readyReplicas counts Machines
    with a Ready *Node* and availableReplicas builds on that, neither is the v1beta2 Ready summary.
    """
    replicas = f.int_(raw, f"{prefix}.replicas")
    if layout == "v1beta1":
        return Counters(replicas=replicas)
    source = f"{prefix}.v1beta2" if layout == "v1beta1+v1beta2" else prefix
    return Counters(
        replicas=replicas,
        ready=f.int_(raw, f"{source}.readyReplicas"),
        available=f.int_(raw, f"{source}.availableReplicas"),
        up_to_date=f.int_(raw, f"{source}.upToDateReplicas"),
    )


def _failure(raw: Mapping[str, Any], layout: str, f: Fields) -> dict[str, Any]:
    base = "status.deprecated.v1beta1" if layout == "v1beta2" else "status"
    return {"failure_reason": f.word_(raw, f"{base}.failureReason"),
            "failure_message": f.word_(raw, f"{base}.failureMessage")}


def _initialization(
    raw: Mapping[str, Any], layout: str, f: Fields, flag: str, v1beta1_flag: str
) -> bool | None:
    """``status.initialization.<flag>`` (v1beta2) or the flat v1beta1 flag the conversion maps it from."""
    if layout == "v1beta2":
        return f.bool_(raw, f"status.initialization.{flag}")
    return f.bool_(raw, f"status.{v1beta1_flag}")


# ---- per kind --------------------------------------------------------------------------------


def _cluster(raw: Mapping[str, Any], meta: Meta, f: Fields) -> Cluster:
    common = _common(raw, meta, f)
    layout = common["layout"]
    common["cluster_name"] = meta.name
    if layout == "v1beta2":
        class_name = f.word_(raw, "spec.topology.classRef.name")
        class_namespace = f.word_(raw, "spec.topology.classRef.namespace")
    else:
        class_name = f.word_(raw, "spec.topology.class")
        class_namespace = f.word_(raw, "spec.topology.classNamespace")
    at = {"v1beta2": "status", "v1beta1+v1beta2": "status.v1beta2"}.get(layout)
    return Cluster(
        **common,
        spec_paused=f.bool_(raw, "spec.paused") is True,
        control_plane_ref=f.ref(raw, "spec.controlPlaneRef"),
        infrastructure_ref=f.ref(raw, "spec.infrastructureRef"),
        topology_class=class_name,
        topology_class_namespace=class_namespace,
        topology_version=f.word_(raw, "spec.topology.version"),
        topology_upgrade_step=meta.annotations.get(UPGRADE_STEP_ANNOTATION, ""),
        availability_gates=f.gates(raw, "spec.availabilityGates"),
        control_plane_endpoint_host=f.str_(raw, "spec.controlPlaneEndpoint.host"),
        control_plane_endpoint_port=f.int_(raw, "spec.controlPlaneEndpoint.port"),
        # v1beta1 infrastructureReady / controlPlaneReady are what the v1.11 conversion maps to
        # initialization.infrastructureProvisioned / controlPlaneInitialized.
        infrastructure_provisioned=_initialization(raw, layout, f, "infrastructureProvisioned",
                                                   "infrastructureReady"),
        control_plane_initialized=_initialization(raw, layout, f, "controlPlaneInitialized",
                                                  "controlPlaneReady"),
        phase=f.word_(raw, "status.phase"),
        reported_control_plane=_cluster_counters(raw, f"{at}.controlPlane", f) if at else None,
        reported_workers=_cluster_counters(raw, f"{at}.workers", f) if at else None,
    )


def _cluster_counters(raw: Mapping[str, Any], path: str, f: Fields) -> Counters | None:
    if f.mapping(raw, path) is None:
        return None
    return counters(
        desired=f.int_(raw, f"{path}.desiredReplicas"),
        replicas=f.int_(raw, f"{path}.replicas"),
        ready=f.int_(raw, f"{path}.readyReplicas"),
        available=f.int_(raw, f"{path}.availableReplicas"),
        up_to_date=f.int_(raw, f"{path}.upToDateReplicas"),
    )


def _cluster_class(raw: Mapping[str, Any], meta: Meta, f: Fields) -> ClusterClass:
    return ClusterClass(**_common(raw, meta, f), availability_gates=f.gates(raw, "spec.availabilityGates"))


def _machine(raw: Mapping[str, Any], meta: Meta, f: Fields) -> Machine:
    common = _common(raw, meta, f, v1beta1_read=MACHINE_V1BETA1_READ)
    layout = common["layout"]
    labels = meta.labels
    # Only the nodeInfo keys capi_machine_info exports (bootID, machineID, systemUUID are unique
    # per Node and read by nothing); what is left is the same for every Machine of a pool.
    node_info: list[str] = []
    for k, v in string_map(f, raw, "status.nodeInfo").items():
        if k in NODE_INFO_KEYS:
            node_info += (k, bounded(v, 256))
    # A Machine's Node and its Hostname address are usually named after the Machine.
    addresses: list[str] = []
    for a in f.list_(raw, "status.addresses", 32):
        if is_map(a):
            addresses += (f.word_(a, "type"), _same(f.str_(a, "address"), meta.name))
    return Machine(
        **common,
        **_failure(raw, layout, f),
        control_plane="cluster.x-k8s.io/control-plane" in labels,
        control_plane_name=labels.get("cluster.x-k8s.io/control-plane-name", ""),
        deployment_name=labels.get("cluster.x-k8s.io/deployment-name", ""),
        set_name=labels.get("cluster.x-k8s.io/set-name", ""),
        pool_name=labels.get("cluster.x-k8s.io/pool-name", ""),
        version=f.word_(raw, "spec.version"),
        provider_id=f.str_(raw, "spec.providerID"),
        failure_domain=f.word_(raw, "spec.failureDomain"),
        min_ready_seconds=max(f.int_(raw, "spec.minReadySeconds") or 0, 0),
        readiness_gates=f.gates(raw, "spec.readinessGates") or (),
        bootstrap_ref=f.ref(raw, "spec.bootstrap.configRef"),
        infrastructure_ref=f.ref(raw, "spec.infrastructureRef"),
        # v1beta1 infrastructureReady / bootstrapReady convert to the initialization flags.
        infrastructure_provisioned=_initialization(raw, layout, f, "infrastructureProvisioned",
                                                   "infrastructureReady"),
        bootstrap_data_secret_created=_initialization(raw, layout, f, "bootstrapDataSecretCreated",
                                                      "bootstrapReady"),
        node_name=_same(f.str_(raw, "status.nodeRef.name"), meta.name),
        node_info=shared_map(node_info),
        addresses=tuple(addresses),
        phase=f.word_(raw, "status.phase"),
        certificates_expiry=f.time(raw, "status.certificatesExpiryDate"),
        drain_start_time=f.time(raw, "status.deletion.nodeDrainStartTime"),
        update_in_progress=_update_in_progress(meta.annotations),
    )


def _update_in_progress(annotations: Mapping[str, str]) -> bool:
    """Upstream's inplace.IsUpdateInProgress: the annotation, or the UpdateMachine hook pending."""
    if UPDATE_IN_PROGRESS_ANNOTATION in annotations:
        return True
    return UPDATE_MACHINE_HOOK in annotations.get(PENDING_HOOKS_ANNOTATION, "").split(",")


def _same(value: str, known: str) -> str:
    """``known`` when equal to ``value``: one string object instead of two equal ones."""
    return known if value == known else value


def _machine_set(raw: Mapping[str, Any], meta: Meta, f: Fields) -> MachineSet:
    common = _common(raw, meta, f)
    replicas = f.int_(raw, "spec.replicas")
    counts = _v1beta2_counts(raw, common["layout"], f)
    return MachineSet(
        **common,
        deployment_name=meta.labels.get("cluster.x-k8s.io/deployment-name", ""),
        replicas=replicas,
        version=f.word_(raw, "spec.template.spec.version"),
        bootstrap_ref=f.ref(raw, "spec.template.spec.bootstrap.configRef"),
        infrastructure_ref=f.ref(raw, "spec.template.spec.infrastructureRef"),
        reported=counters(desired=replicas, replicas=counts.replicas, ready=counts.ready,
                          available=counts.available, up_to_date=counts.up_to_date),
    )


def _machine_deployment(raw: Mapping[str, Any], meta: Meta, f: Fields) -> MachineDeployment:
    common = _common(raw, meta, f)
    layout = common["layout"]
    replicas = f.int_(raw, "spec.replicas")
    counts = _v1beta2_counts(raw, layout, f)
    if layout == "v1beta2":
        strategy, min_ready = "spec.rollout.strategy", f.int_(raw, "spec.template.spec.minReadySeconds")
        rollout_after = f.time(raw, "spec.rollout.after")
    else:
        strategy, min_ready = "spec.strategy", f.int_(raw, "spec.minReadySeconds")
        rollout_after = f.time(raw, "spec.rolloutAfter")
    up_to_date = counts.up_to_date
    if layout == "v1beta1":
        # updatedReplicas counts Machines built from the current template: the UpToDate meaning
        # (the same equivalence CAPI applies to the v1beta1 control plane contract).
        up_to_date = f.int_(raw, "status.updatedReplicas")
    return MachineDeployment(
        **common,
        replicas=replicas,
        spec_paused=f.bool_(raw, "spec.paused") is True,
        strategy_type=f.word_(raw, f"{strategy}.type") or "RollingUpdate",
        rolling_update=RollingUpdate(
            max_surge=f.int_or_percent(raw, f"{strategy}.rollingUpdate.maxSurge"),
            max_unavailable=f.int_or_percent(raw, f"{strategy}.rollingUpdate.maxUnavailable"),
        ),
        min_ready_seconds=max(min_ready or 0, 0),
        version=f.word_(raw, "spec.template.spec.version"),
        bootstrap_ref=f.ref(raw, "spec.template.spec.bootstrap.configRef"),
        infrastructure_ref=f.ref(raw, "spec.template.spec.infrastructureRef"),
        phase=f.word_(raw, "status.phase"),
        reported=counters(desired=replicas, replicas=counts.replicas, ready=counts.ready,
                          available=counts.available, up_to_date=up_to_date),
        rollout_after=rollout_after,
    )


def _kubeadm_control_plane(raw: Mapping[str, Any], meta: Meta, f: Fields) -> KubeadmControlPlane:
    common = _common(raw, meta, f)
    layout = common["layout"]
    replicas = f.int_(raw, "spec.replicas")
    counts = _v1beta2_counts(raw, layout, f)
    if layout == "v1beta1":
        # The v1beta1 control plane contract as CAPI's Cluster controller reads it: available is
        # desired - unavailableReplicas (floor 0), upToDate is updatedReplicas. readyReplicas there
        # counts Ready Nodes, not Machines whose Ready summary is True: left unset.
        unavailable = f.int_(raw, "status.unavailableReplicas")
        available = None
        if replicas is not None and unavailable is not None:
            available = max(replicas - unavailable, 0)
        counts = Counters(replicas=counts.replicas, available=available,
                          up_to_date=f.int_(raw, "status.updatedReplicas"))
    if layout == "v1beta2":
        surge, before = "spec.rollout.strategy", "spec.rollout.before"
        initialized = f.bool_(raw, "status.initialization.controlPlaneInitialized")
        remediation_time = f.time(raw, "status.lastRemediation.time")
    else:
        surge, before = "spec.rolloutStrategy", "spec.rolloutBefore"
        initialized = f.bool_(raw, "status.initialized")
        remediation_time = f.time(raw, "status.lastRemediation.timestamp")
    return KubeadmControlPlane(
        **common,
        replicas=replicas,
        version=f.word_(raw, "spec.version"),
        max_surge=f.int_or_percent(raw, f"{surge}.rollingUpdate.maxSurge"),
        initialized=initialized,
        external_etcd=f.mapping(raw, "spec.kubeadmConfigSpec.clusterConfiguration.etcd.external") is not None,
        reported=counters(desired=replicas, replicas=counts.replicas, ready=counts.ready,
                          available=counts.available, up_to_date=counts.up_to_date),
        last_remediation_machine=f.str_(raw, "status.lastRemediation.machine"),
        last_remediation_time=remediation_time,
        last_remediation_retry_count=f.int_(raw, "status.lastRemediation.retryCount"),
        certificates_expiry_days=f.int_(raw, f"{before}.certificatesExpiryDays"),
    )


def _machine_pool(raw: Mapping[str, Any], meta: Meta, f: Fields) -> MachinePool:
    common = _common(raw, meta, f)
    layout = common["layout"]
    replicas = f.int_(raw, "spec.replicas")
    counts = _v1beta2_counts(raw, layout, f)
    return MachinePool(
        **common,
        **_failure(raw, layout, f),
        replicas=replicas,
        version=f.word_(raw, "spec.template.spec.version"),
        failure_domains=f.str_list(raw, "spec.failureDomains", MAX_LIST),
        provider_id_list=f.str_list(raw, "spec.providerIDList"),
        bootstrap_ref=f.ref(raw, "spec.template.spec.bootstrap.configRef"),
        infrastructure_ref=f.ref(raw, "spec.template.spec.infrastructureRef"),
        infrastructure_provisioned=_initialization(raw, layout, f, "infrastructureProvisioned",
                                                   "infrastructureReady"),
        bootstrap_data_secret_created=_initialization(raw, layout, f, "bootstrapDataSecretCreated",
                                                      "bootstrapReady"),
        node_refs=f.names(raw, "status.nodeRefs"),
        v1beta1_ready_replicas=f.int_(raw, "status.deprecated.v1beta1.readyReplicas" if layout == "v1beta2"
                                      else "status.readyReplicas"),
        phase=f.word_(raw, "status.phase"),
        reported=counters(desired=replicas, replicas=counts.replicas, ready=counts.ready,
                          available=counts.available, up_to_date=counts.up_to_date),
        # Upstream treats any value but "false" as true, the empty string included.
        replicas_managed_externally=meta.annotations.get(REPLICAS_MANAGED_BY_ANNOTATION, "false") != "false",
    )


def _provider_layout(raw: Mapping[str, Any], f: Fields) -> tuple[str, str]:
    """(conditions layout, contract) of a provider object, read from its status: provider API
    versions say nothing about the contract they follow (a provider's v1beta2 may still write
    v1beta1 conditions), and CAPI reads status.v1beta2.conditions first, then status.conditions,
    whatever their generation. The contract is v1beta2 once the v1beta1 fields moved under
    status.deprecated.v1beta1."""
    layout = "v1beta1+v1beta2" if f.mapping(raw, "status.v1beta2") is not None else "v1beta2"
    contract = "v1beta2" if f.mapping(raw, "status.deprecated.v1beta1") is not None else "v1beta1"
    return layout, contract


def infra_machine_pool(raw: Mapping[str, Any], meta: Meta, f: Fields) -> InfraMachinePool:
    layout, contract = _provider_layout(raw, f)
    common = _common(raw, meta, f, layout)
    return InfraMachinePool(
        **common,
        **_failure(raw, contract, f),
        provider_id_list=f.str_list(raw, "spec.providerIDList"),
        replicas=f.int_(raw, "status.replicas"),
        provisioned=f.bool_(raw, "status.initialization.provisioned"),
        ready=f.bool_(raw, "status.ready"),
    )


# The conditions kept of an InfraCluster, InfraMachine or BootstrapConfig: those their contracts
# define. A provider's own types are summarised by its Ready; with one of each object per Machine,
# keeping them would cost memory for what no rule and no metric reads.
CONTRACT_CONDITIONS: Final = frozenset({READY, PAUSED})
_NONE: Final[frozenset[str]] = frozenset()


def infra_object(raw: Mapping[str, Any], meta: Meta, f: Fields) -> InfraObject:
    """An InfraCluster or InfraMachine kind (the contracts give both the same status fields)."""
    layout, contract = _provider_layout(raw, f)
    return InfraObject(
        **_common(raw, meta, f, layout, _NONE, CONTRACT_CONDITIONS),
        **_failure(raw, contract, f),
        provisioned=f.bool_(raw, "status.initialization.provisioned"),
        ready=f.bool_(raw, "status.ready"),
        has_status=isinstance(raw.get("status"), Mapping),
    )


def bootstrap_config(raw: Mapping[str, Any], meta: Meta, f: Fields) -> BootstrapConfig:
    layout, contract = _provider_layout(raw, f)
    return BootstrapConfig(
        **_common(raw, meta, f, layout, _NONE, CONTRACT_CONDITIONS),
        **_failure(raw, contract, f),
        data_secret_created=f.bool_(raw, "status.initialization.dataSecretCreated"),
        ready=f.bool_(raw, "status.ready"),
        data_secret_name=_same(f.str_(raw, "status.dataSecretName"), meta.name),
        has_status=isinstance(raw.get("status"), Mapping),
    )


def _machine_health_check(raw: Mapping[str, Any], meta: Meta, f: Fields) -> MachineHealthCheck:
    common = _common(raw, meta, f)
    if common["layout"] == "v1beta2":
        max_unhealthy = f.int_or_percent(raw, "spec.remediation.triggerIf.unhealthyLessThanOrEqualTo")
        in_range = f.str_(raw, "spec.remediation.triggerIf.unhealthyInRange")
    else:
        max_unhealthy = f.int_or_percent(raw, "spec.maxUnhealthy")
        in_range = f.str_(raw, "spec.unhealthyRange")
    return MachineHealthCheck(
        **common,
        unhealthy_less_than_or_equal_to=max_unhealthy,
        unhealthy_in_range=in_range,
        expected_machines=f.int_(raw, "status.expectedMachines"),
        current_healthy=f.int_(raw, "status.currentHealthy"),
        remediations_allowed=f.int_(raw, "status.remediationsAllowed"),
    )



# ---- kinds read as reported ----------------------------------------------------------------------


def _reported_layout(meta: Meta, raw: Mapping[str, Any], f: Fields) -> str:
    """``layout_of`` for kinds whose versions before v1beta2 include alphas (ExtensionConfig and
    IPAddressClaim v1alpha1): every version but v1beta2 stores v1beta1 conditions."""
    if meta.api_version_short == "v1beta2":
        return "v1beta2"
    return "v1beta1+v1beta2" if f.mapping(raw, "status.v1beta2") is not None else "v1beta1"


def _cluster_resource_set(raw: Mapping[str, Any], meta: Meta, f: Fields) -> ClusterResourceSet:
    return ClusterResourceSet(
        **_common(raw, meta, f, _reported_layout(meta, raw, f)), strategy=f.word_(raw, "spec.strategy"),
    )


def _cluster_resource_set_binding(
    raw: Mapping[str, Any], meta: Meta, f: Fields
) -> ClusterResourceSetBinding:
    return ClusterResourceSetBinding(
        **_common(raw, meta, f, _reported_layout(meta, raw, f)),
        bindings=len(f.list_(raw, "spec.bindings")),
    )



def _extension_config(raw: Mapping[str, Any], meta: Meta, f: Fields) -> ExtensionConfig:
    handlers = f.list_(raw, "status.handlers")
    return ExtensionConfig(
        **_common(raw, meta, f, _reported_layout(meta, raw, f)),
        handlers=len(handlers) if handlers or f.mapping(raw, "status") is not None else None,
    )



def _machine_drain_rule(raw: Mapping[str, Any], meta: Meta, f: Fields) -> MachineDrainRule:
    common = _common(raw, meta, f, _reported_layout(meta, raw, f))
    common["cluster_name"] = ""  # a rule selects Machines of any Cluster (spec.machines[].clusterSelector)
    return MachineDrainRule(
        **common, behavior=f.word_(raw, "spec.drain.behavior"), order=f.int_(raw, "spec.drain.order"),
    )



def _ip_address_claim(raw: Mapping[str, Any], meta: Meta, f: Fields) -> IPAddressClaim:
    return IPAddressClaim(
        **_common(raw, meta, f, _reported_layout(meta, raw, f)),
        pool_kind=f.word_(raw, "spec.poolRef.kind"),
        pool_name=f.word_(raw, "spec.poolRef.name"),
        address_name=f.str_(raw, "status.addressRef.name"),
    )


Reader = Callable[[Mapping[str, Any], Meta, Fields], Base]
CAPI_READERS: Final[Mapping[tuple[str, str], Reader]] = MappingProxyType({
    (CAPI_GROUP, "Cluster"): _cluster,
    (CAPI_GROUP, "ClusterClass"): _cluster_class,
    (CAPI_GROUP, "Machine"): _machine,
    (CAPI_GROUP, "MachineSet"): _machine_set,
    (CAPI_GROUP, "MachineDeployment"): _machine_deployment,
    (CAPI_GROUP, "MachinePool"): _machine_pool,
    (CAPI_GROUP, "MachineHealthCheck"): _machine_health_check,
    (CONTROLPLANE_GROUP, "KubeadmControlPlane"): _kubeadm_control_plane,
    (ADDONS_GROUP, "ClusterResourceSet"): _cluster_resource_set,
    (ADDONS_GROUP, "ClusterResourceSetBinding"): _cluster_resource_set_binding,
    (RUNTIME_GROUP, "ExtensionConfig"): _extension_config,
    (CAPI_GROUP, "MachineDrainRule"): _machine_drain_rule,
    (IPAM_GROUP, "IPAddressClaim"): _ip_address_claim,
})
