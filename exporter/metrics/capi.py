"""The Cluster API families, per kind: the kube-state-metrics configuration Cluster API ships
(same names and labels), then this exporter's extensions.

Owns which families each CAPI kind has and how each is read from a projection and its Result.
Owns no formatting (``exposition``), no caching (``renderer``) and no condition logic (the engine).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from exporter.engine.model import (
    Cluster,
    ClusterClass,
    ClusterResourceSet,
    ClusterResourceSetBinding,
    Counters,
    ExtensionConfig,
    IPAddressClaim,
    KubeadmControlPlane,
    Machine,
    MachineDeployment,
    MachineDrainRule,
    MachineHealthCheck,
    MachinePool,
    MachineSet,
    Ref,
)
from exporter.engine.vocabulary import (
    DELETED,
    DELETING,
    FAILED,
    LAST_REMEDIATION_MACHINE_PRESENT,
    PENDING,
    PROVISIONED,
    PROVISIONING,
    RUNNING,
    SCALING,
    SCALING_DOWN,
    SCALING_UP,
    UPDATING,
)
from exporter.metrics.common import (
    CounterReader,
    condition_families,
    counter_check_families,
    counter_family,
    field_family,
    findings_family,
    info_family,
    int_or_percent,
    metadata_families,
    phase_family,
)
from exporter.metrics.exposition import Sample
from exporter.metrics.spec import FamilySpec, KindSpec, Subject, family, lean

FINDINGS: Final[FamilySpec] = findings_family(lean("capi_finding"), "Cluster API", with_cluster=True)
IDENTITY: Final[tuple[str, ...]] = ("name", "namespace", "uid", "cluster_name")
# Cluster and ClusterClass carry no cluster_name label in the kube-state-metrics configuration.
IDENTITY_NO_CLUSTER = ("name", "namespace", "uid")

# (status field, help text) of the kube-state-metrics replica counters, in their order.
REPLICA_COUNTERS = (
    ("replicas", "The number of replicas"),
    ("readyReplicas", "The number of ready replicas (Ready condition True)"),
    ("availableReplicas", "The number of available replicas"),
    ("upToDateReplicas", "The number of up-to-date replicas"),
)
# Result.counters keys (status field names) to the Counters attribute holding the reported value.
_COUNTERS_FIELD = {
    "desiredReplicas": "desired", "replicas": "replicas", "readyReplicas": "ready",
    "availableReplicas": "available", "upToDateReplicas": "up_to_date",
}
MACHINE_PHASES = (
    PENDING, PROVISIONING, PROVISIONED, RUNNING, UPDATING, DELETING, DELETED, FAILED,
    "Unknown",
)
CLUSTER_PHASES = (PENDING, PROVISIONING, PROVISIONED, DELETING, FAILED, "Unknown")
MD_PHASES = (SCALING_UP, SCALING_DOWN, RUNNING, FAILED, "Unknown")
# The upstream list misses phases the MachinePool controller sets; extra states add series but
# change no existing one.
MP_PHASES = (*MD_PHASES, PENDING, PROVISIONING, PROVISIONED, SCALING, DELETING)


def _ref(ref: Ref | None) -> tuple[str, str]:
    return (ref.kind, ref.name) if ref is not None else ("", "")


def _reported(key: str, counters: Callable[[Any], Counters | None]) -> CounterReader:
    """Reads one counter from the Counters ``counters`` gives (the object's status, v1beta2 meanings)."""
    attr = _COUNTERS_FIELD[key]

    def read(o: Any) -> int | None:
        found = counters(o)
        return None if found is None else getattr(found, attr)

    return read


def _own(o: KubeadmControlPlane | MachineDeployment | MachineSet | MachinePool) -> Counters:
    return o.reported


def _replicas(
    kind: str, *, replicas: str, ready: str, available: str, uptodate: str, computed: str, mismatch: str,
) -> tuple[FamilySpec, ...]:
    """The kube-state-metrics replica counters, reported else computed, and the engine's beside them."""
    readers = [(key, _reported(key, _own)) for key, _ in REPLICA_COUNTERS]
    counters = tuple(
        counter_family(
            name,
            f"{text} of a {kind}: the controller's status.{key}, or the exporter's count where the "
            f"object reports none (see {computed}).",
            key, compat=True, reported=read, source=f"status.{key}, else engine",
        )
        for name, (key, text), (_, read) in zip(
            (replicas, ready, available, uptodate), REPLICA_COUNTERS, readers, strict=True
        )
    )
    return (*counters, *counter_check_families(kind, readers, computed=computed, mismatch=mismatch))


def _spec_replicas(name: str, kind: str) -> FamilySpec:
    return field_family(
        name, f"The desired number of replicas of a {kind} (spec.replicas).",
        "spec.replicas", lambda o: o.replicas, compat=True,
    )


# ---- Cluster -----------------------------------------------------------------------------------

def _cluster_info(o: Cluster) -> tuple[str, ...]:
    port = str(o.control_plane_endpoint_port) if o.control_plane_endpoint_port is not None else ""
    return (
        o.control_plane_endpoint_host, port, *_ref(o.control_plane_ref), *_ref(o.infrastructure_ref),
        o.topology_class, o.topology_class_namespace if o.topology_class else "", o.topology_version,
    )


# (family, part of the Cluster's status, status field, adjective of the help text)
_CLUSTER_COUNTERS = (
    (lean("capi_cluster_status_controlplane_desired_replicas"), "controlPlane", "desiredReplicas", "desired"),
    ("capi_cluster_status_controlplane_replicas", "controlPlane", "replicas", "existing"),
    (lean("capi_cluster_status_controlplane_replicas_ready"), "controlPlane", "readyReplicas", "ready"),
    (lean("capi_cluster_status_controlplane_replicas_available"), "controlPlane", "availableReplicas",
     "available"),
    (lean("capi_cluster_status_controlplane_replicas_uptodate"), "controlPlane", "upToDateReplicas",
     "up-to-date"),
    (lean("capi_cluster_status_workers_desired_replicas"), "workers", "desiredReplicas", "desired"),
    ("capi_cluster_status_workers_replicas", "workers", "replicas", "existing"),
    (lean("capi_cluster_status_workers_replicas_ready"), "workers", "readyReplicas", "ready"),
    (lean("capi_cluster_status_workers_replicas_available"), "workers", "availableReplicas", "available"),
    (lean("capi_cluster_status_workers_replicas_uptodate"), "workers", "upToDateReplicas", "up-to-date"),
)
_CLUSTER_COMPUTED = "capi_cluster_status_replicas_computed"


def _cluster_reported(part: str) -> Callable[[Any], Counters | None]:
    attr = "reported_control_plane" if part == "controlPlane" else "reported_workers"
    return lambda o: getattr(o, attr)


def _cluster_counters() -> Iterable[FamilySpec]:
    checked: list[tuple[str, CounterReader]] = []
    for name, part, key, adjective in _CLUSTER_COUNTERS:
        noun = "control plane" if part == "controlPlane" else "worker"
        reported = _reported(key, _cluster_reported(part))
        checked.append((f"{part}.{key}", reported))
        yield counter_family(
            name,
            f"The number of {adjective} {noun} replicas of a Cluster: the controller's "
            f"status.{part}.{key}, or the exporter's count from the Cluster's objects where the "
            f"Cluster reports none (see {_CLUSTER_COMPUTED}).",
            f"{part}.{key}", reported=reported, source=f"status.{part}.{key}, else engine",
        )
    yield from counter_check_families(
        "Cluster", checked, computed=_CLUSTER_COMPUTED, mismatch="capi_cluster_status_replicas_mismatch",
    )


CLUSTER = KindSpec("Cluster", "capi_cluster", IDENTITY_NO_CLUSTER, (
    info_family(
        lean("capi_cluster_info"), "Information about a Cluster.",
        ("control_plane_endpoint_host", "control_plane_endpoint_port", "control_plane_reference_kind",
         "control_plane_reference_name", "infrastructure_reference_kind", "infrastructure_reference_name",
         "topology_classref_name", "topology_classref_namespace", "topology_version"),
        _cluster_info, "spec",
    ),
    field_family(
        "capi_cluster_spec_paused", "Whether a Cluster is paused (spec.paused).", "spec.paused",
        lambda o: float(o.spec_paused), compat=True,
    ),
    phase_family("capi_cluster_status_phase", "Cluster", CLUSTER_PHASES),
    *_cluster_counters(),
    *condition_families(
        "Cluster",
        status=lean("capi_cluster_status_condition"),
        transition=lean("capi_cluster_status_condition_last_transition_time"),
        reason=lean("capi_cluster_status_condition_reason"),
        computed="capi_cluster_status_condition_computed",
        mismatch="capi_cluster_status_condition_mismatch",
    ),
    *metadata_families(
        "Cluster",
        created="capi_cluster_created",
        deletion=lean("capi_cluster_deletion_timestamp_seconds"),
        paused="capi_cluster_annotation_paused",
        labels="capi_cluster_labels",
        annotations="capi_cluster_annotations",
    ),
    FINDINGS,
))

# ---- ClusterClass ------------------------------------------------------------------------------

CLUSTERCLASS = KindSpec("ClusterClass", "capi_clusterclass", IDENTITY_NO_CLUSTER, (
    info_family("capi_clusterclass_info", "Information about a ClusterClass.", (), lambda o: (), "metadata"),
    *condition_families(
        "ClusterClass",
        status="capi_clusterclass_status_condition",
        transition="capi_clusterclass_status_condition_last_transition_time",
        reason="capi_clusterclass_status_condition_reason",
        computed="capi_clusterclass_status_condition_computed",
        mismatch="capi_clusterclass_status_condition_mismatch",
    ),
    *metadata_families(
        "ClusterClass",
        created="capi_clusterclass_created",
        deletion="capi_clusterclass_deletion_timestamp_seconds",
        paused="capi_clusterclass_annotation_paused",
        labels="capi_clusterclass_labels",
        annotations="capi_clusterclass_annotations",
    ),
    FINDINGS,
))

# ---- KubeadmControlPlane -----------------------------------------------------------------------

def _days_in_seconds(o: KubeadmControlPlane) -> float | None:
    days = o.certificates_expiry_days
    return None if days is None else days * 86400.0


KCP = KindSpec("KubeadmControlPlane", "capi_kubeadmcontrolplane", IDENTITY, (
    info_family(
        "capi_kubeadmcontrolplane_info", "Information about a KubeadmControlPlane.", ("version",),
        lambda o: (o.version,), "spec.version",
    ),
    _spec_replicas(lean("capi_kubeadmcontrolplane_spec_replicas"), "KubeadmControlPlane"),
    field_family(
        "capi_kubeadmcontrolplane_spec_strategy_rollingupdate_max_surge",
        "The maximum surge of a KubeadmControlPlane rollout (a percentage reads as a fraction).",
        "spec.rollout.strategy.rollingUpdate.maxSurge", lambda o: int_or_percent(o.max_surge), compat=True,
    ),
    *_replicas(
        "KubeadmControlPlane",
        replicas="capi_kubeadmcontrolplane_status_replicas",
        ready="capi_kubeadmcontrolplane_status_replicas_ready",
        available=lean("capi_kubeadmcontrolplane_status_replicas_available"),
        uptodate=lean("capi_kubeadmcontrolplane_status_replicas_uptodate"),
        computed="capi_kubeadmcontrolplane_status_replicas_computed",
        mismatch="capi_kubeadmcontrolplane_status_replicas_mismatch",
    ),
    field_family(
        lean("capi_kubeadmcontrolplane_spec_rollout_before_certificates_expiry_seconds"),
        "How long before their certificates expire a KubeadmControlPlane replaces its Machines, in "
        "seconds (spec.rollout.before.certificatesExpiryDays times 86400); absent when no such rollout "
        "is configured.",
        "spec.rollout.before.certificatesExpiryDays (v1beta1: spec.rolloutBefore.certificatesExpiryDays)",
        _days_in_seconds, fields=("certificates_expiry_days",),
    ),
    field_family(
        lean("capi_kubeadmcontrolplane_status_last_remediation_timestamp_seconds"),
        "Unix time a KubeadmControlPlane last remediated one of its Machines; absent before its first "
        "remediation.",
        "status.lastRemediation.time (v1beta1: status.lastRemediation.timestamp)",
        lambda o: o.last_remediation_time, fields=("last_remediation_time",),
    ),
    field_family(
        lean("capi_kubeadmcontrolplane_status_last_remediation_retries"),
        "How many times in a row a KubeadmControlPlane has remediated a replacement Machine that failed "
        "again within its minimum healthy period (status.lastRemediation.retryCount).",
        "status.lastRemediation.retryCount", lambda o: o.last_remediation_retry_count,
        fields=("last_remediation_retry_count",),
    ),
    counter_family(
        lean("capi_kubeadmcontrolplane_status_last_remediation_machine_present"),
        "1 while the Machine a KubeadmControlPlane last remediated (status.lastRemediation.machine) "
        "still exists, deleting or not; 0 once it is gone. Stands in for the Machine's name, which is "
        "never a label.",
        LAST_REMEDIATION_MACHINE_PRESENT,
    ),
    *condition_families(
        "KubeadmControlPlane",
        status=lean("capi_kubeadmcontrolplane_status_condition"),
        transition="capi_kubeadmcontrolplane_status_condition_last_transition_time",
        reason="capi_kubeadmcontrolplane_status_condition_reason",
        computed="capi_kubeadmcontrolplane_status_condition_computed",
        mismatch="capi_kubeadmcontrolplane_status_condition_mismatch",
    ),
    *metadata_families(
        "KubeadmControlPlane",
        created="capi_kubeadmcontrolplane_created",
        deletion=lean("capi_kubeadmcontrolplane_deletion_timestamp_seconds"),
        paused="capi_kubeadmcontrolplane_annotation_paused",
        labels="capi_kubeadmcontrolplane_labels",
        annotations="capi_kubeadmcontrolplane_annotations",
    ),
    FINDINGS,
))

# ---- MachineDeployment / MachineSet ------------------------------------------------------------

_TEMPLATE_LABELS = (
    "version", "bootstrap_reference_kind", "bootstrap_reference_name", "infrastructure_reference_kind",
    "infrastructure_reference_name",
)


def _template_info(o: MachineDeployment | MachineSet) -> tuple[str, ...]:
    return (o.version, *_ref(o.bootstrap_ref), *_ref(o.infrastructure_ref))


MD = KindSpec("MachineDeployment", "capi_machinedeployment", IDENTITY, (
    info_family(
        "capi_machinedeployment_info", "Information about a MachineDeployment.", _TEMPLATE_LABELS,
        _template_info, "spec.template.spec",
    ),
    field_family(
        "capi_machinedeployment_spec_paused", "Whether a MachineDeployment is paused (spec.paused).",
        "spec.paused", lambda o: float(o.spec_paused), compat=True,
    ),
    _spec_replicas(lean("capi_machinedeployment_spec_replicas"), "MachineDeployment"),
    field_family(
        "capi_machinedeployment_spec_strategy_rollingupdate_max_surge",
        "The maximum surge of a MachineDeployment rollout (a percentage reads as a fraction).",
        "spec.rollout.strategy.rollingUpdate.maxSurge",
        lambda o: int_or_percent(o.rolling_update.max_surge), compat=True,
    ),
    field_family(
        "capi_machinedeployment_spec_strategy_rollingupdate_max_unavailable",
        "The maximum unavailable replicas of a MachineDeployment rollout (a percentage reads as a fraction).",
        "spec.rollout.strategy.rollingUpdate.maxUnavailable",
        lambda o: int_or_percent(o.rolling_update.max_unavailable), compat=True,
    ),
    phase_family("capi_machinedeployment_status_phase", "MachineDeployment", MD_PHASES),
    *_replicas(
        "MachineDeployment",
        replicas="capi_machinedeployment_status_replicas",
        ready="capi_machinedeployment_status_replicas_ready",
        available=lean("capi_machinedeployment_status_replicas_available"),
        uptodate=lean("capi_machinedeployment_status_replicas_uptodate"),
        computed="capi_machinedeployment_status_replicas_computed",
        mismatch="capi_machinedeployment_status_replicas_mismatch",
    ),
    *condition_families(
        "MachineDeployment",
        status=lean("capi_machinedeployment_status_condition"),
        transition=lean("capi_machinedeployment_status_condition_last_transition_time"),
        reason="capi_machinedeployment_status_condition_reason",
        computed="capi_machinedeployment_status_condition_computed",
        mismatch="capi_machinedeployment_status_condition_mismatch",
    ),
    *metadata_families(
        "MachineDeployment",
        created="capi_machinedeployment_created",
        deletion=lean("capi_machinedeployment_deletion_timestamp_seconds"),
        paused="capi_machinedeployment_annotation_paused",
        labels="capi_machinedeployment_labels",
        annotations="capi_machinedeployment_annotations",
    ),
    FINDINGS,
))

MS = KindSpec("MachineSet", "capi_machineset", IDENTITY, (
    info_family(
        "capi_machineset_info", "Information about a MachineSet.", _TEMPLATE_LABELS, _template_info,
        "spec.template.spec",
    ),
    _spec_replicas(lean("capi_machineset_spec_replicas"), "MachineSet"),
    *_replicas(
        "MachineSet",
        replicas="capi_machineset_status_replicas",
        ready="capi_machineset_status_replicas_ready",
        available=lean("capi_machineset_status_replicas_available"),
        uptodate="capi_machineset_status_replicas_uptodate",
        computed="capi_machineset_status_replicas_computed",
        mismatch="capi_machineset_status_replicas_mismatch",
    ),
    *condition_families(
        "MachineSet",
        status=lean("capi_machineset_status_condition"),
        transition="capi_machineset_status_condition_last_transition_time",
        reason="capi_machineset_status_condition_reason",
        computed="capi_machineset_status_condition_computed",
        mismatch="capi_machineset_status_condition_mismatch",
    ),
    *metadata_families(
        "MachineSet",
        created="capi_machineset_created",
        deletion=lean("capi_machineset_deletion_timestamp_seconds"),
        paused="capi_machineset_annotation_paused",
        labels="capi_machineset_labels",
        annotations="capi_machineset_annotations",
    ),
    FINDINGS,
))

# ---- MachinePool -------------------------------------------------------------------------------

MP = KindSpec("MachinePool", "capi_machinepool", IDENTITY, (
    info_family(
        lean("capi_machinepool_info"), "Information about a MachinePool.",
        ("version", "bootstrap_configuration_reference_kind", "bootstrap_configuration_reference_name",
         "infrastructure_reference_kind", "infrastructure_reference_name", "failure_domain"),
        lambda o: (
            o.version, *_ref(o.bootstrap_ref), *_ref(o.infrastructure_ref), ",".join(o.failure_domains),
        ),
        "spec.template.spec",
    ),
    _spec_replicas(lean("capi_machinepool_spec_replicas"), "MachinePool"),
    phase_family("capi_machinepool_status_phase", "MachinePool", MP_PHASES),
    *_replicas(
        "MachinePool",
        replicas="capi_machinepool_status_replicas",
        ready="capi_machinepool_status_replicas_ready",
        available=lean("capi_machinepool_status_replicas_available"),
        uptodate=lean("capi_machinepool_status_replicas_uptodate"),
        computed="capi_machinepool_status_replicas_computed",
        mismatch="capi_machinepool_status_replicas_mismatch",
    ),
    *condition_families(
        "MachinePool",
        status=lean("capi_machinepool_status_condition"),
        transition="capi_machinepool_status_condition_last_transition_time",
        reason="capi_machinepool_status_condition_reason",
        computed="capi_machinepool_status_condition_computed",
        mismatch="capi_machinepool_status_condition_mismatch",
    ),
    *metadata_families(
        "MachinePool",
        created="capi_machinepool_created",
        deletion=lean("capi_machinepool_deletion_timestamp_seconds"),
        paused="capi_machinepool_annotation_paused",
        labels="capi_machinepool_labels",
        annotations="capi_machinepool_annotations",
    ),
    FINDINGS,
))

# ---- Machine -----------------------------------------------------------------------------------

_NODE_INFO = ("containerRuntimeVersion", "kernelVersion", "kubeProxyVersion", "kubeletVersion", "osImage")


def _machine_info(o: Machine) -> tuple[str, ...]:
    node = tuple(o.node_info.get(k, "") for k in _NODE_INFO)
    return (
        *_ref(o.bootstrap_ref), *node, o.control_plane_name, o.failure_domain, *_ref(o.infrastructure_ref),
        o.provider_id, o.version,
    )


def _addresses(s: Subject[Machine]) -> Iterable[Sample]:
    # The same address may be listed under two types; one series per distinct pair.
    flat = s.obj.addresses
    pairs = zip(flat[::2], flat[1::2], strict=True)
    return [((address, type_), 1.0) for type_, address in dict.fromkeys(pairs)]


def _noderef(s: Subject[Machine]) -> Iterable[Sample]:
    return [((s.obj.node_name,), 1.0)] if s.obj.node_name else []


MACHINE = KindSpec("Machine", "capi_machine", IDENTITY, (
    info_family(
        lean("capi_machine_info"), "Information about a Machine.",
        ("bootstrap_reference_kind", "bootstrap_reference_name", "container_runtime_version",
         "kernel_version", "kube_proxy_version", "kubelet_version", "os_image", "control_plane_name",
         "failure_domain", "infrastructure_reference_kind", "infrastructure_reference_name", "provider_id",
         "version"),
        _machine_info, "spec, status.nodeInfo",
        fields=("bootstrap_ref", "node_info", "control_plane_name", "failure_domain", "infrastructure_ref",
                "provider_id", "version"),
    ),
    family(
        "capi_machine_addresses", "The addresses of a Machine (status.addresses).", "info",
        ("address", "type"), "status.addresses", _addresses, compat=True, reads="object",
        fields=("addresses",),
    ),
    family(
        "capi_machine_status_noderef", "The Node a Machine is linked to (status.nodeRef).", "info",
        ("node_name",), "status.nodeRef.name", _noderef, compat=True, reads="object",
        fields=("node_name",),
    ),
    field_family(
        lean("capi_machine_status_certificatesexpirydate"),
        "The expiry of a control plane Machine's certificates, in Unix seconds.",
        "status.certificatesExpiryDate", lambda o: o.certificates_expiry, compat=True,
        fields=("certificates_expiry",),
    ),
    field_family(
        lean("capi_machine_status_deletion_node_drain_start_time_seconds"),
        "Unix time the drain of a deleting Machine's Node started; absent before the drain starts.",
        "status.deletion.nodeDrainStartTime", lambda o: o.drain_start_time, fields=("drain_start_time",),
    ),
    phase_family(lean("capi_machine_status_phase"), "Machine", MACHINE_PHASES),
    *condition_families(
        "Machine",
        status=lean("capi_machine_status_condition"),
        transition="capi_machine_status_condition_last_transition_time",
        reason=lean("capi_machine_status_condition_reason"),
        computed="capi_machine_status_condition_computed",
        mismatch="capi_machine_status_condition_mismatch",
    ),
    *metadata_families(
        "Machine",
        created="capi_machine_created",
        deletion=lean("capi_machine_deletion_timestamp_seconds"),
        paused="capi_machine_annotation_paused",
        labels="capi_machine_labels",
        annotations="capi_machine_annotations",
    ),
    FINDINGS,
))

# ---- MachineHealthCheck ------------------------------------------------------------------------


def _mhc_info(o: MachineHealthCheck) -> tuple[str, ...]:
    lte = o.unhealthy_less_than_or_equal_to
    return (o.unhealthy_in_range, "" if lte is None else str(lte))


def _mhc_field(name: str, attr: str, text: str) -> FamilySpec:
    def read(o: Any) -> float | None:
        value = getattr(o, attr)
        return None if value is None else float(value)

    return field_family(name, text, f"status.{attr}", read, compat=True)


MHC = KindSpec("MachineHealthCheck", "capi_machinehealthcheck", IDENTITY, (
    info_family(
        "capi_machinehealthcheck_info", "Information about a MachineHealthCheck.",
        ("remediation_triggerif_unhealthyinrange", "remediation_triggerif_unhealthylessthanorequalto"),
        _mhc_info, "spec.remediation.triggerIf",
    ),
    _mhc_field("capi_machinehealthcheck_status_current_healthy", "current_healthy",
               "The number of healthy Machines a MachineHealthCheck targets (status.currentHealthy)."),
    _mhc_field("capi_machinehealthcheck_status_expected_machines", "expected_machines",
               "The number of Machines a MachineHealthCheck targets (status.expectedMachines)."),
    _mhc_field("capi_machinehealthcheck_status_remediations_allowed", "remediations_allowed",
               "The number of further remediations a MachineHealthCheck allows "
               "(status.remediationsAllowed)."),
    *condition_families(
        "MachineHealthCheck",
        status=lean("capi_machinehealthcheck_status_condition"),
        transition="capi_machinehealthcheck_status_condition_last_transition_time",
        reason="capi_machinehealthcheck_status_condition_reason",
        computed="capi_machinehealthcheck_status_condition_computed",
        mismatch="capi_machinehealthcheck_status_condition_mismatch",
    ),
    *metadata_families(
        "MachineHealthCheck",
        created="capi_machinehealthcheck_created",
        deletion=lean("capi_machinehealthcheck_deletion_timestamp_seconds"),
        paused="capi_machinehealthcheck_annotation_paused",
        labels="capi_machinehealthcheck_labels",
        annotations="capi_machinehealthcheck_annotations",
    ),
    FINDINGS,
))

# ---- kinds read as reported: their own conditions, no rules --------------------------------------
# No paused-annotation family: their Paused condition says what the annotation does (the family is
# kube-state-metrics').

def _count(read: Callable[[Any], int | None]) -> Callable[[Any], float | None]:
    def inner(o: Any) -> float | None:
        value = read(o)
        return None if value is None else float(value)

    return inner


CRS = KindSpec("ClusterResourceSet", "capi_clusterresourceset", IDENTITY_NO_CLUSTER, (
    info_family(
        "capi_clusterresourceset_info",
        "Information about a ClusterResourceSet: its strategy (ApplyOnce or Reconcile).",
        ("strategy",), lambda o: (o.strategy,), "spec.strategy", compat=False, fields=("strategy",),
    ),
    *condition_families(
        "ClusterResourceSet",
        status="capi_clusterresourceset_status_condition",
        transition="capi_clusterresourceset_status_condition_last_transition_time",
        reason="capi_clusterresourceset_status_condition_reason",
        computed="capi_clusterresourceset_status_condition_computed",
        mismatch="capi_clusterresourceset_status_condition_mismatch",
        compat=False,
    ),
    *metadata_families(
        "ClusterResourceSet",
        created="capi_clusterresourceset_created",
        deletion="capi_clusterresourceset_deletion_timestamp_seconds",
        labels="capi_clusterresourceset_labels",
        annotations="capi_clusterresourceset_annotations",
        compat=False,
    ),
    FINDINGS,
))
CRS_BINDING = KindSpec("ClusterResourceSetBinding", "capi_clusterresourcesetbinding", IDENTITY, (
    info_family(
        "capi_clusterresourcesetbinding_info",
        "Information about a ClusterResourceSetBinding: the ClusterResourceSets applied to one "
        "Cluster (cluster_name).", (), lambda o: (), "spec.clusterName", compat=False,
    ),
    field_family(
        "capi_clusterresourcesetbinding_bindings",
        "The number of ClusterResourceSets a ClusterResourceSetBinding records as applied to its "
        "Cluster (spec.bindings).", "spec.bindings", _count(lambda o: o.bindings), fields=("bindings",),
    ),
    # no condition families: a binding has no status
    *metadata_families(
        "ClusterResourceSetBinding",
        created="capi_clusterresourcesetbinding_created",
        deletion="capi_clusterresourcesetbinding_deletion_timestamp_seconds",
        labels="capi_clusterresourcesetbinding_labels",
        annotations="capi_clusterresourcesetbinding_annotations",
        compat=False,
    ),
    FINDINGS,
))
# Cluster-scoped: no namespace.
EXTENSIONCONFIG = KindSpec("ExtensionConfig", "capi_extensionconfig", ("name", "uid"), (
    info_family(
        "capi_extensionconfig_info", "Information about an ExtensionConfig: one Runtime Extension server.",
        (), lambda o: (), "metadata", compat=False,
    ),
    field_family(
        "capi_extensionconfig_handlers",
        "The number of Runtime Extension handlers the discovery of an ExtensionConfig found "
        "(status.handlers); absent before its first discovery.",
        "status.handlers", _count(lambda o: o.handlers), fields=("handlers",),
    ),
    *condition_families(
        "ExtensionConfig",
        status="capi_extensionconfig_status_condition",
        transition="capi_extensionconfig_status_condition_last_transition_time",
        reason="capi_extensionconfig_status_condition_reason",
        computed="capi_extensionconfig_status_condition_computed",
        mismatch="capi_extensionconfig_status_condition_mismatch",
        compat=False,
    ),
    *metadata_families(
        "ExtensionConfig",
        created="capi_extensionconfig_created",
        deletion="capi_extensionconfig_deletion_timestamp_seconds",
        labels="capi_extensionconfig_labels",
        annotations="capi_extensionconfig_annotations",
        compat=False,
    ),
    FINDINGS,
))
MACHINEDRAINRULE = KindSpec("MachineDrainRule", "capi_machinedrainrule", IDENTITY_NO_CLUSTER, (
    info_family(
        "capi_machinedrainrule_info",
        "Information about a MachineDrainRule: how the Pods it selects are drained (Drain, Skip or "
        "WaitCompleted).", ("behavior",), lambda o: (o.behavior,), "spec.drain.behavior", compat=False,
        fields=("behavior",),
    ),
    field_family(
        "capi_machinedrainrule_drain_order",
        "The order in which a MachineDrainRule's Pods are drained when its behavior is Drain (lower "
        "first; spec.drain.order); absent when unset (0 for the controller).",
        "spec.drain.order", _count(lambda o: o.order), fields=("order",),
    ),
    # no condition families: a rule has no status
    *metadata_families(
        "MachineDrainRule",
        created="capi_machinedrainrule_created",
        deletion="capi_machinedrainrule_deletion_timestamp_seconds",
        labels="capi_machinedrainrule_labels",
        annotations="capi_machinedrainrule_annotations",
        compat=False,
    ),
    FINDINGS,
))
IPADDRESSCLAIM = KindSpec("IPAddressClaim", "capi_ipaddressclaim", IDENTITY, (
    info_family(
        "capi_ipaddressclaim_info",
        "Information about an IPAddressClaim: the pool it claims from (spec.poolRef) and the "
        "IPAddress allocated to it (status.addressRef, empty until allocated).",
        ("pool_kind", "pool_name", "address"), lambda o: (o.pool_kind, o.pool_name, o.address_name),
        "spec.poolRef, status.addressRef", compat=False, fields=("pool_kind", "pool_name", "address_name"),
    ),
    *condition_families(
        "IPAddressClaim",
        status="capi_ipaddressclaim_status_condition",
        transition="capi_ipaddressclaim_status_condition_last_transition_time",
        reason="capi_ipaddressclaim_status_condition_reason",
        computed="capi_ipaddressclaim_status_condition_computed",
        mismatch="capi_ipaddressclaim_status_condition_mismatch",
        compat=False,
    ),
    *metadata_families(
        "IPAddressClaim",
        created="capi_ipaddressclaim_created",
        deletion="capi_ipaddressclaim_deletion_timestamp_seconds",
        labels="capi_ipaddressclaim_labels",
        annotations="capi_ipaddressclaim_annotations",
        compat=False,
    ),
    FINDINGS,
))

KINDS: tuple[KindSpec, ...] = (
    CLUSTER, CLUSTERCLASS, KCP, MD, MS, MP, MACHINE, MHC, CRS, CRS_BINDING, EXTENSIONCONFIG,
    MACHINEDRAINRULE, IPADDRESSCLAIM,
)
PROJECTIONS: dict[type[Any], KindSpec] = {
    Cluster: CLUSTER, ClusterClass: CLUSTERCLASS, KubeadmControlPlane: KCP, MachineDeployment: MD,
    MachineSet: MS, MachinePool: MP, Machine: MACHINE, MachineHealthCheck: MHC,
    ClusterResourceSet: CRS, ClusterResourceSetBinding: CRS_BINDING, ExtensionConfig: EXTENSIONCONFIG,
    MachineDrainRule: MACHINEDRAINRULE, IPAddressClaim: IPADDRESSCLAIM,
}
