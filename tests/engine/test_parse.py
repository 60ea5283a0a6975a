"""project(): every CAPI kind in the three storage layouts, wrong types, bounds and dispatch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from exporter.engine.model import (
    BootstrapConfig,
    Cluster,
    ClusterClass,
    ClusterResourceSet,
    Counters,
    Gate,
    InfraMachinePool,
    InfraObject,
    KubeadmControlPlane,
    Machine,
    MachineDeployment,
    MachineHealthCheck,
    MachinePool,
    MachineSet,
    Ref,
    RollingUpdate,
    Status,
)
from exporter.engine.parse import project, project_unguarded
from exporter.engine.parse_fields import MAX_STRING, parse_duration, parse_time
from exporter.engine.vocabulary import MACHINE_V1BETA1_READ

T0 = "2024-05-01T10:00:00Z"
T0_EPOCH = 1714557600.0
CORE = "cluster.x-k8s.io"
CP = "controlplane.cluster.x-k8s.io"

V2_COND = {"type": "Ready", "status": "True", "reason": "Ready", "lastTransitionTime": T0,
           "observedGeneration": 3}
V1_COND = {"type": "Ready", "status": "False", "severity": "Warning", "reason": "Old", "message": "m"}


def raw(kind: str, version: str, status: dict[str, Any] | None = None, spec: dict[str, Any] | None = None,
        group: str = CORE, **meta: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "obj", "namespace": "ns",
                                "labels": {"cluster.x-k8s.io/cluster-name": "c1"}}
    metadata.update(meta)
    obj: dict[str, Any] = {"apiVersion": f"{group}/{version}", "kind": kind, "metadata": metadata}
    if spec is not None:
        obj["spec"] = spec
    if status is not None:
        obj["status"] = status
    return obj


def v2_status(**extra: Any) -> dict[str, Any]:
    return {"conditions": [V2_COND], "deprecated": {"v1beta1": {"conditions": [V1_COND]}}, **extra}


def mixed_status(v1beta2: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"conditions": [V1_COND], "v1beta2": {"conditions": [V2_COND], **(v1beta2 or {})}, **extra}


def v1_status(**extra: Any) -> dict[str, Any]:
    return {"conditions": [V1_COND], **extra}


# ---- conditions and layout for every kind ------------------------------------------------------

KINDS = [
    ("Cluster", CORE, Cluster),
    ("ClusterClass", CORE, ClusterClass),
    ("Machine", CORE, Machine),
    ("MachineSet", CORE, MachineSet),
    ("MachineDeployment", CORE, MachineDeployment),
    ("MachinePool", CORE, MachinePool),
    ("MachineHealthCheck", CORE, MachineHealthCheck),
    ("KubeadmControlPlane", CP, KubeadmControlPlane),
    ("ClusterResourceSet", "addons.cluster.x-k8s.io", ClusterResourceSet),
]
LAYOUTS = [
    ("v1beta2", "v1beta2", v2_status()),
    ("v1beta1+v1beta2", "v1beta1", mixed_status()),
    ("v1beta1", "v1beta1", v1_status()),
]


@pytest.mark.parametrize(("kind", "group", "cls"), KINDS, ids=[k[0] for k in KINDS])
@pytest.mark.parametrize(("layout", "version", "status"), LAYOUTS, ids=[lay[0] for lay in LAYOUTS])
def test_conditions_come_from_the_layout(kind: str, group: str, cls: type, layout: str, version: str,
                                         status: dict[str, Any]) -> None:
    p = project(raw(kind, version, status, group=group))
    assert isinstance(p, cls)
    assert p.layout == layout
    assert p.problems == ()
    if kind == "Machine" and layout != "v1beta1":
        assert p.v1beta1_conditions == ()  # a Ready the rules never read: see the test below
    else:
        assert p.v1beta1_conditions[0].severity == "Warning"
        assert p.v1beta1_conditions[0].status is Status.FALSE
    if layout == "v1beta1":
        assert p.conditions == ()
        assert not p.has_v1beta2_conditions
    else:
        (ready,) = p.conditions
        assert (ready.type, ready.status, ready.last_transition_time, ready.observed_generation) == (
            "Ready", Status.TRUE, T0_EPOCH, 3)



@pytest.mark.parametrize("status", [v2_status, mixed_status], ids=["v1beta2", "v1beta1+v1beta2"])
def test_machine_keeps_only_the_v1beta1_conditions_rules_read(status: Callable[..., dict[str, Any]]) -> None:
    # A Machine with v1beta2 conditions keeps of its v1beta1 ones only the deletion stages, in order.
    stages = [{"type": t, "status": "False", "reason": "Waiting", "severity": "Info"}
              for t in ("DrainingSucceeded", "VolumeDetachSucceeded")]
    v1 = [V1_COND, stages[0], {"type": "NodeHealthy", "status": "True"}, stages[1]]
    st = status()
    if "deprecated" in st:
        st["deprecated"]["v1beta1"]["conditions"] = v1
    else:
        st["conditions"] = v1
    p = project(raw("Machine", "v1beta2" if "deprecated" in st else "v1beta1", st))
    assert isinstance(p, Machine)
    assert [c.type for c in p.v1beta1_conditions] == ["DrainingSucceeded", "VolumeDetachSucceeded"]
    assert {c.type for c in p.v1beta1_conditions} <= MACHINE_V1BETA1_READ
    # A v1beta1 Machine has no others: all of them are kept.
    old = project(raw("Machine", "v1beta1", v1_status(conditions=v1)))
    assert isinstance(old, Machine)
    assert [c.type for c in old.v1beta1_conditions] == ["Ready", "DrainingSucceeded", "NodeHealthy",
                                                         "VolumeDetachSucceeded"]

# ---- counters by meaning ----------------------------------------------------------------------

V2_COUNTS = {"replicas": 3, "readyReplicas": 2, "availableReplicas": 1, "upToDateReplicas": 0}
V1_COUNTS = {"replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "updatedReplicas": 2,
             "unavailableReplicas": 1}
MIXED_COUNTS = {"readyReplicas": 2, "availableReplicas": 1, "upToDateReplicas": 0}

COUNTER_CASES = [
    ("MachineSet-v1beta2", "MachineSet", CORE, "v1beta2", v2_status(**V2_COUNTS), Counters(4, 3, 2, 1, 0)),
    ("MachineSet-mixed", "MachineSet", CORE, "v1beta1", mixed_status(MIXED_COUNTS, **V1_COUNTS),
     Counters(4, 3, 2, 1, 0)),
    ("MachineSet-v1beta1-ready-means-node-ready", "MachineSet", CORE, "v1beta1", v1_status(**V1_COUNTS),
     Counters(4, 3, None, None, None)),
    ("MachineDeployment-v1beta2", "MachineDeployment", CORE, "v1beta2", v2_status(**V2_COUNTS),
     Counters(4, 3, 2, 1, 0)),
    ("MachineDeployment-mixed", "MachineDeployment", CORE, "v1beta1", mixed_status(MIXED_COUNTS, **V1_COUNTS),
     Counters(4, 3, 2, 1, 0)),
    ("MachineDeployment-v1beta1-updated-is-up-to-date", "MachineDeployment", CORE, "v1beta1",
     v1_status(**V1_COUNTS), Counters(4, 3, None, None, 2)),
    ("KCP-v1beta2", "KubeadmControlPlane", CP, "v1beta2", v2_status(**V2_COUNTS), Counters(4, 3, 2, 1, 0)),
    ("KCP-mixed", "KubeadmControlPlane", CP, "v1beta1", mixed_status(MIXED_COUNTS, **V1_COUNTS),
     Counters(4, 3, 2, 1, 0)),
    ("KCP-v1beta1-contract", "KubeadmControlPlane", CP, "v1beta1", v1_status(**V1_COUNTS),
     Counters(4, 3, None, 3, 2)),
    ("MachinePool-v1beta2", "MachinePool", CORE, "v1beta2", v2_status(**V2_COUNTS), Counters(4, 3, 2, 1, 0)),
    ("MachinePool-mixed", "MachinePool", CORE, "v1beta1", mixed_status(MIXED_COUNTS, **V1_COUNTS),
     Counters(4, 3, 2, 1, 0)),
    ("MachinePool-v1beta1", "MachinePool", CORE, "v1beta1", v1_status(**V1_COUNTS),
     Counters(4, 3, None, None, None)),
]


@pytest.mark.parametrize(("kind", "group", "version", "status", "expected"),
                         [c[1:] for c in COUNTER_CASES], ids=[c[0] for c in COUNTER_CASES])
def test_counters_hold_v1beta2_meanings(kind: str, group: str, version: str, status: dict[str, Any],
                                        expected: Counters) -> None:
    p = project(raw(kind, version, status, spec={"replicas": 4}, group=group))
    assert isinstance(p, MachineSet | MachineDeployment | KubeadmControlPlane | MachinePool)
    assert p.replicas == 4
    assert p.reported == expected


def test_unset_counters_stay_none() -> None:
    p = project(raw("MachineSet", "v1beta2", {}))
    assert isinstance(p, MachineSet)
    assert p.reported == Counters()


# ---- spec paths that moved between versions -----------------------------------------------------

MD_SPECS = [
    ("v1beta2", "v1beta2", {"rollout": {"strategy": {"type": "RollingUpdate", "rollingUpdate":
                                                     {"maxSurge": "25%", "maxUnavailable": 1}}},
                            "template": {"spec": {"minReadySeconds": 30, "version": "v1.30.1"}}}),
    ("v1beta1", "v1beta1", {"strategy": {"type": "RollingUpdate", "rollingUpdate":
                                         {"maxSurge": "25%", "maxUnavailable": 1}},
                            "minReadySeconds": 30, "template": {"spec": {"version": "v1.30.1"}}}),
]


@pytest.mark.parametrize(("name", "version", "spec"), MD_SPECS, ids=[c[0] for c in MD_SPECS])
def test_machine_deployment_strategy_paths(name: str, version: str, spec: dict[str, Any]) -> None:
    p = project(raw("MachineDeployment", version, {}, spec={"replicas": 2, "paused": True, **spec}))
    assert isinstance(p, MachineDeployment)
    assert p.rolling_update == RollingUpdate(max_surge="25%", max_unavailable=1)
    assert (p.min_ready_seconds, p.version, p.spec_paused, p.strategy_type) == (30, "v1.30.1", True,
                                                                                "RollingUpdate")


def test_machine_deployment_defaults() -> None:
    p = project(raw("MachineDeployment", "v1beta2", {}, spec={}))
    assert isinstance(p, MachineDeployment)
    assert (p.strategy_type, p.rolling_update, p.min_ready_seconds, p.replicas) == (
        "RollingUpdate", RollingUpdate(), 0, None)


KCP_SPECS = [
    ("v1beta2", "v1beta2", {"rollout": {"strategy": {"rollingUpdate": {"maxSurge": 0}}}},
     {"initialization": {"controlPlaneInitialized": True}, "lastRemediation": {"machine": "m", "time": T0}}),
    ("v1beta1", "v1beta1", {"rolloutStrategy": {"rollingUpdate": {"maxSurge": 0}}},
     {"initialized": True, "lastRemediation": {"machine": "m", "timestamp": T0}}),
]


@pytest.mark.parametrize(("name", "version", "spec", "status"), KCP_SPECS, ids=[c[0] for c in KCP_SPECS])
def test_kcp_paths(name: str, version: str, spec: dict[str, Any], status: dict[str, Any]) -> None:
    spec |= {"version": "v1.31.0", "kubeadmConfigSpec": {"clusterConfiguration": {"etcd": {"external": {}}}}}
    p = project(raw("KubeadmControlPlane", version, status, spec=spec, group=CP,
                    ownerReferences=[{"kind": "Cluster", "name": "owner"}], labels={}))
    assert isinstance(p, KubeadmControlPlane)
    assert (p.max_surge, p.initialized, p.version, p.external_etcd) == (0, True, "v1.31.0", True)
    assert (p.last_remediation_machine, p.last_remediation_time) == ("m", T0_EPOCH)
    assert p.cluster_name == "owner"  # KCP has no cluster-name label: its Cluster owner names it


CLUSTER_SPECS = [
    ("v1beta2", "v1beta2",
     {"topology": {"classRef": {"name": "cc", "namespace": "other"}, "version": "v1.31.0"},
      "controlPlaneRef": {"apiGroup": CP, "kind": "KubeadmControlPlane", "name": "kcp"}},
     {"initialization": {"infrastructureProvisioned": True, "controlPlaneInitialized": False}}),
    ("v1beta1", "v1beta1",
     {"topology": {"class": "cc", "classNamespace": "other", "version": "v1.31.0"},
      "controlPlaneRef": {"apiVersion": f"{CP}/v1beta1", "kind": "KubeadmControlPlane", "name": "kcp"}},
     {"infrastructureReady": True, "controlPlaneReady": False}),
]


@pytest.mark.parametrize(("name", "version", "spec", "status"), CLUSTER_SPECS,
                         ids=[c[0] for c in CLUSTER_SPECS])
def test_cluster_paths(name: str, version: str, spec: dict[str, Any], status: dict[str, Any]) -> None:
    p = project(raw("Cluster", version, status, spec=spec, name="c1"))
    assert isinstance(p, Cluster)
    assert (p.topology_class, p.topology_class_namespace, p.topology_version) == ("cc", "other", "v1.31.0")
    assert p.control_plane_ref == Ref(kind="KubeadmControlPlane", name="kcp", api_group=CP)
    assert (p.infrastructure_provisioned, p.control_plane_initialized) == (True, False)
    assert p.cluster_name == "c1"
    assert p.availability_gates is None


def test_cluster_counters_and_gates() -> None:
    counts = {"desiredReplicas": 3, "replicas": 3, "readyReplicas": 2, "availableReplicas": 2,
              "upToDateReplicas": 1}
    v2 = project(raw("Cluster", "v1beta2", {"controlPlane": counts},
                     spec={"paused": True, "availabilityGates": [
                         {"conditionType": "A"}, {"conditionType": "B", "polarity": "Negative"}]}))
    mixed = project(raw("Cluster", "v1beta1", mixed_status({"workers": counts})))
    old = project(raw("Cluster", "v1beta1", v1_status()))
    assert isinstance(v2, Cluster) and isinstance(mixed, Cluster) and isinstance(old, Cluster)
    assert v2.reported_control_plane == Counters(3, 3, 2, 2, 1)
    assert v2.reported_workers is None
    assert v2.spec_paused
    assert v2.availability_gates == (Gate("A"), Gate("B", negative=True))
    assert mixed.reported_workers == Counters(3, 3, 2, 2, 1)
    assert old.reported_control_plane is None


MACHINE_STATUS = [
    ("v1beta2", "v1beta2",
     {"initialization": {"infrastructureProvisioned": True, "bootstrapDataSecretCreated": False},
      "deprecated": {"v1beta1": {"failureReason": "Boom", "failureMessage": "bad"}}}),
    ("v1beta1", "v1beta1", {"infrastructureReady": True, "bootstrapReady": False,
                            "failureReason": "Boom", "failureMessage": "bad"}),
]


@pytest.mark.parametrize(("name", "version", "status"), MACHINE_STATUS, ids=[c[0] for c in MACHINE_STATUS])
def test_machine_paths(name: str, version: str, status: dict[str, Any]) -> None:
    status |= {"nodeRef": {"name": "n1"}, "phase": "Running", "certificatesExpiryDate": T0,
               "deletion": {"nodeDrainStartTime": T0}, "nodeInfo": {"kubeletVersion": "v1.30.0"},
               "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}
    spec = {"version": "v1.30.0", "providerID": "aws:///i-1", "minReadySeconds": 5,
            "readinessGates": [{"conditionType": "APIServerPodHealthy"}],
            "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfig",
                                        "name": "b"}},
            "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                                  "kind": "AWSMachine", "name": "i"}}
    labels = {"cluster.x-k8s.io/cluster-name": "c1", "cluster.x-k8s.io/control-plane": "",
              "cluster.x-k8s.io/control-plane-name": "kcp", "cluster.x-k8s.io/set-name": "ms",
              "cluster.x-k8s.io/deployment-name": "md", "app": "dropped"}
    p = project(raw("Machine", version, status, spec=spec, labels=labels,
                    annotations={"cluster.x-k8s.io/paused": "", "kubectl.kubernetes.io/last-applied": "x"}))
    assert isinstance(p, Machine)
    assert (p.infrastructure_provisioned, p.bootstrap_data_secret_created) == (True, False)
    assert (p.failure_reason, p.failure_message) == ("Boom", "bad")
    assert (p.control_plane, p.control_plane_name, p.set_name, p.deployment_name) == (True, "kcp", "ms", "md")
    assert (p.node_name, p.phase, p.certificates_expiry, p.drain_start_time) == ("n1", "Running", T0_EPOCH,
                                                                                 T0_EPOCH)
    assert p.node_info["kubeletVersion"] == "v1.30.0"
    assert p.addresses == ("InternalIP", "10.0.0.1")
    assert (p.version, p.provider_id, p.min_ready_seconds) == ("v1.30.0", "aws:///i-1", 5)
    assert p.readiness_gates == (Gate("APIServerPodHealthy"),)
    assert p.bootstrap_ref == Ref("KubeadmConfig", "b", "bootstrap.cluster.x-k8s.io")
    assert p.infrastructure_ref == Ref("AWSMachine", "i", "infrastructure.cluster.x-k8s.io")
    assert "app" not in p.meta.labels
    assert dict(p.meta.annotations) == {"cluster.x-k8s.io/paused": ""}
    assert p.paused_annotation


MHC_SPECS = [
    ("v1beta2", "v1beta2", {"checks": {"nodeStartupTimeoutSeconds": 900},
                            "remediation": {"triggerIf": {"unhealthyLessThanOrEqualTo": "40%",
                                                          "unhealthyInRange": "[1-3]"}}}),
    ("v1beta1", "v1beta1", {"nodeStartupTimeout": "15m", "maxUnhealthy": "40%", "unhealthyRange": "[1-3]"}),
]


@pytest.mark.parametrize(("name", "version", "spec"), MHC_SPECS, ids=[c[0] for c in MHC_SPECS])
def test_machine_health_check_paths(name: str, version: str, spec: dict[str, Any]) -> None:
    status = {"expectedMachines": 3, "currentHealthy": 1, "remediationsAllowed": 0}
    p = project(raw("MachineHealthCheck", version, status, spec={"clusterName": "c9", **spec}, labels={}))
    assert isinstance(p, MachineHealthCheck)
    assert (p.unhealthy_less_than_or_equal_to, p.unhealthy_in_range) == ("40%", "[1-3]")
    assert (p.expected_machines, p.current_healthy, p.remediations_allowed) == (3, 1, 0)
    assert p.cluster_name == "c9"  # spec.clusterName when the label is missing


MP_STATUS = [
    ("v1beta2", "v1beta2",
     {"initialization": {"infrastructureProvisioned": True, "bootstrapDataSecretCreated": True},
      "deprecated": {"v1beta1": {"readyReplicas": 2}}}),
    ("v1beta1", "v1beta1", {"infrastructureReady": True, "bootstrapReady": True, "readyReplicas": 2}),
]


@pytest.mark.parametrize(("name", "version", "status"), MP_STATUS, ids=[c[0] for c in MP_STATUS])
def test_machine_pool_paths(name: str, version: str, status: dict[str, Any]) -> None:
    status |= {"nodeRefs": [{"name": "n1"}, {"name": "n2"}], "phase": "Running"}
    spec = {"replicas": 2, "providerIDList": ["p1", "p2"], "failureDomains": ["a"],
            "template": {"spec": {"version": "v1.30.0"}}}
    p = project(raw("MachinePool", version, status, spec=spec))
    assert isinstance(p, MachinePool)
    assert (p.infrastructure_provisioned, p.bootstrap_data_secret_created) == (True, True)
    assert (p.node_refs, p.provider_id_list, p.failure_domains) == (("n1", "n2"), ("p1", "p2"), ("a",))
    assert (p.v1beta1_ready_replicas, p.version, p.phase) == (2, "v1.30.0", "Running")



# The annotation's value is truthy unless it is exactly "false" (an empty value counts, "False" too).
@pytest.mark.parametrize(("annotations", "managed"), [
    ({}, False),
    ({"cluster.x-k8s.io/replicas-managed-by": ""}, True),
    ({"cluster.x-k8s.io/replicas-managed-by": "cluster-autoscaler"}, True),
    ({"cluster.x-k8s.io/replicas-managed-by": "False"}, True),
    ({"cluster.x-k8s.io/replicas-managed-by": "false"}, False),
], ids=["absent", "empty", "named-autoscaler", "capitalised-false", "false"])
def test_machine_pool_replicas_managed_externally_follows_upstreams_truthiness(
        annotations: dict[str, str], managed: bool) -> None:
    p = project(raw("MachinePool", "v1beta2", {}, spec={"replicas": 2}, annotations=annotations))
    assert isinstance(p, MachinePool)
    assert p.replicas_managed_externally is managed


def test_cluster_keeps_the_topology_upgrade_step() -> None:
    p = project(raw("Cluster", "v1beta2", {}, spec={"topology": {"version": "v1.32.0"}},
                    annotations={"topology.internal.cluster.x-k8s.io/upgrade-step": "v1.31.0"}))
    assert isinstance(p, Cluster)
    assert (p.topology_version, p.topology_upgrade_step) == ("v1.32.0", "v1.31.0")


# Upstream's inplace.IsUpdateInProgress: the update-in-progress annotation (any value), or
# UpdateMachine among the comma separated pending hooks.
@pytest.mark.parametrize(("annotations", "in_progress"), [
    ({}, False),
    ({"in-place-updates.internal.cluster.x-k8s.io/update-in-progress": ""}, True),
    ({"runtime.cluster.x-k8s.io/pending-hooks": "UpdateMachine"}, True),
    ({"runtime.cluster.x-k8s.io/pending-hooks": "BeforeClusterUpgrade,UpdateMachine"}, True),
    ({"runtime.cluster.x-k8s.io/pending-hooks": "BeforeClusterUpgrade"}, False),
    ({"runtime.cluster.x-k8s.io/pending-hooks": "UpdateMachines"}, False),
], ids=["none", "annotation", "hook-pending", "hook-among-others", "other-hook", "similar-name"])
def test_machine_update_in_progress_follows_upstream(annotations: dict[str, str], in_progress: bool) -> None:
    p = project(raw("Machine", "v1beta2", {}, spec={"clusterName": "c1"}, annotations=annotations))
    assert isinstance(p, Machine)
    assert p.update_in_progress is in_progress


@pytest.mark.parametrize(("version", "spec"), [
    ("v1beta2", {"rollout": {"after": "2026-11-20T12:00:00Z"}}),
    ("v1beta1", {"rolloutAfter": "2026-11-20T12:00:00Z"}),
], ids=["v1beta2-spec.rollout.after", "v1beta1-spec.rolloutAfter"])
def test_machine_deployment_rollout_after(version: str, spec: dict[str, Any]) -> None:
    p = project(raw("MachineDeployment", version, {}, spec=spec))
    assert isinstance(p, MachineDeployment)
    assert p.rollout_after == 1_795_176_000.0


INFRA_CASES = [
    ("v1beta2-contract", {"conditions": [V2_COND], "initialization": {"provisioned": True}, "replicas": 2,
                          "deprecated": {"v1beta1": {"failureReason": "R"}}}, "v1beta2", True, None, "R"),
    ("v1beta1-contract", {"conditions": [V1_COND], "ready": True, "replicas": 2, "failureReason": "R"},
     "v1beta2", None, True, "R"),
    ("v1beta1-with-v1beta2", {"conditions": [V1_COND], "v1beta2": {"conditions": [V2_COND]}, "ready": False,
                              "replicas": 2}, "v1beta1+v1beta2", None, False, ""),
]


@pytest.mark.parametrize(("name", "status", "layout", "provisioned", "ready", "failure"), INFRA_CASES,
                         ids=[c[0] for c in INFRA_CASES])
def test_infra_machine_pool(name: str, status: dict[str, Any], layout: str, provisioned: bool | None,
                            ready: bool | None, failure: str) -> None:
    p = project(raw("AWSMachinePool", "v1beta2", status, spec={"providerIDList": ["a", "b"]},
                    group="infrastructure.cluster.x-k8s.io"))
    assert isinstance(p, InfraMachinePool)
    assert (p.layout, p.provisioned, p.ready, p.failure_reason) == (layout, provisioned, ready, failure)
    assert (p.replicas, p.provider_id_list) == (2, ("a", "b"))
    assert p.conditions[0].type == "Ready"


def test_infra_machine_pool_without_spec_or_status() -> None:
    p = project(raw("FooMachinePool", "v1alpha1", group="infrastructure.cluster.x-k8s.io"))
    assert isinstance(p, InfraMachinePool)
    assert (p.replicas, p.provider_id_list, p.problems) == (None, (), ())


INFRA_OBJECT_CASES = [
    ("v1beta2-contract", "AWSMachine", {"conditions": [V2_COND], "initialization": {"provisioned": True},
                                        "deprecated": {"v1beta1": {"failureReason": "CreateError"}}},
     "v1beta2", True, None, "CreateError"),
    ("v1beta1-contract", "DockerCluster", {"conditions": [V1_COND], "ready": True,
                                           "failureMessage": "no quota"},
     "v1beta2", None, True, ""),
    ("v1beta1-with-v1beta2", "VSphereMachine", {"conditions": [V1_COND], "v1beta2": {"conditions": [V2_COND]},
                                                "ready": False}, "v1beta1+v1beta2", None, False, ""),
]


@pytest.mark.parametrize(("name", "kind", "status", "layout", "provisioned", "ready", "reason"),
                         INFRA_OBJECT_CASES, ids=[c[0] for c in INFRA_OBJECT_CASES])
def test_infra_object(name: str, kind: str, status: dict[str, Any], layout: str, provisioned: bool | None,
                      ready: bool | None, reason: str) -> None:
    p = project(raw(kind, "v1beta2", status, group="infrastructure.cluster.x-k8s.io"))
    assert isinstance(p, InfraObject)
    assert (p.layout, p.provisioned, p.ready, p.failure_reason) == (layout, provisioned, ready, reason)
    assert p.conditions[0].type == "Ready" and p.cluster_name == "c1" and p.has_status
    assert p.role == ("InfraCluster" if kind.endswith("Cluster") else "InfraMachine")


def test_infra_object_of_a_provider_group_under_the_infrastructure_group() -> None:
    p = project(raw("VSphereMachine", "v1alpha1", group="vmware.infrastructure.cluster.x-k8s.io"))
    assert isinstance(p, InfraObject) and not p.has_status


@pytest.mark.parametrize(("status", "created", "ready", "secret"), [
    ({"initialization": {"dataSecretCreated": True}, "dataSecretName": "m-1", "conditions": [V2_COND],
      "deprecated": {"v1beta1": {"conditions": [V1_COND]}}}, True, None, "m-1"),
    ({"ready": False, "conditions": [V1_COND]}, None, False, ""),
    ({}, None, None, ""),
], ids=["v1beta2-contract", "v1beta1-contract", "empty-status"])
def test_bootstrap_config(status: dict[str, Any], created: bool | None, ready: bool | None,
                          secret: str) -> None:
    p = project(raw("KubeadmConfig", "v1beta2", status, group="bootstrap.cluster.x-k8s.io"))
    assert isinstance(p, BootstrapConfig)
    assert (p.data_secret_created, p.ready, p.data_secret_name) == (created, ready, secret)
    assert p.role == "BootstrapConfig" and p.cluster_name == "c1"


def test_provider_object_with_an_unexpected_status_shape_is_read_as_far_as_it_can_be() -> None:
    """Conditions a string, provisioned a string: recorded as problems, the rest still read."""
    status = {"conditions": "Ready", "initialization": {"provisioned": "yes"}, "ready": True,
              "failureReason": "CreateError"}
    p = project(raw("DockerMachine", "v1beta2", status, group="infrastructure.cluster.x-k8s.io"))
    assert isinstance(p, InfraObject)
    assert p.conditions == () and p.provisioned is None
    assert (p.ready, p.failure_reason) == (True, "CreateError")
    assert any("status.conditions" in problem for problem in p.problems)
    assert any("status.initialization.provisioned" in problem for problem in p.problems)
    b = project(raw("KubeadmConfig", "v1beta2", {"initialization": "done", "dataSecretName": 7},
                    group="bootstrap.cluster.x-k8s.io"))
    assert isinstance(b, BootstrapConfig)
    assert (b.data_secret_created, b.data_secret_name) == (None, "") and len(b.problems) == 2


# ---- dispatch and identity ---------------------------------------------------------------------

IGNORED = [
    ("no-kind", {"apiVersion": "cluster.x-k8s.io/v1beta2", "metadata": {"name": "x"}}),
    ("no-name", {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {}}),
    ("no-metadata", {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine"}),
    ("unknown-kind", raw("Pod", "v1", group="core")),
    ("capi-kind-in-wrong-group", raw("Machine", "v1", group="example.com")),
    ("infra-template", raw("AWSMachineTemplate", "v1beta2", group="infrastructure.cluster.x-k8s.io")),
    ("bootstrap-template", raw("KubeadmConfigTemplate", "v1beta2", group="bootstrap.cluster.x-k8s.io")),
    ("provider-kind-in-other-group", raw("AWSMachine", "v1beta2", group="notinfrastructure.x-k8s.io")),
    ("not-a-mapping", ["a", "list"]),
    ("none", None),
    ("name-not-string", {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
                         "metadata": {"name": 5}}),
]


@pytest.mark.parametrize("obj", [c[1] for c in IGNORED], ids=[c[0] for c in IGNORED])
def test_objects_without_identity_or_of_unread_kinds_give_none(obj: Any) -> None:
    assert project(obj) is None


@pytest.mark.pure_python
def test_ocm_kinds_are_delegated(monkeypatch: pytest.MonkeyPatch) -> None:
    from exporter.engine import parse

    calls: list[tuple[str, list[str]]] = []

    def fake(raw_obj: Any, meta: Any, problems: list[str]) -> Any:
        calls.append((meta.name, problems))
        return Machine(meta=meta)

    monkeypatch.setattr(parse, "project_ocm", fake)
    obj = raw("ManifestWorkReplicaSet", "v1alpha1", group="work.open-cluster-management.io",
              labels={"work.open-cluster-management.io/x": "1", "other": "2"})
    p = project(obj)
    assert p is not None and calls == [("obj", [])]
    assert dict(p.meta.labels) == {"work.open-cluster-management.io/x": "1"}


# ---- wrong types -------------------------------------------------------------------------------

WRONG_TYPES = [
    ("replicas-string", "MachineSet", {"spec": {"replicas": "abc"}}, "spec.replicas",
     lambda p: p.replicas is None),
    ("replicas-bool", "MachineSet", {"spec": {"replicas": True}}, "spec.replicas",
     lambda p: p.replicas is None),
    ("conditions-not-a-list", "MachineSet", {"status": {"conditions": {"type": "Ready"}}},
     "status.conditions", lambda p: p.conditions == ()),
    ("condition-without-type", "MachineSet",
     {"status": {"conditions": [{"status": "True"}, V2_COND]}}, "status.conditions[].type",
     lambda p: [c.type for c in p.conditions] == ["Ready"]),
    ("condition-not-an-object", "MachineSet", {"status": {"conditions": ["Ready", V2_COND]}},
     "status.conditions[]", lambda p: len(p.conditions) == 1),
    ("unknown-status-value", "MachineSet",
     {"status": {"conditions": [{"type": "Ready", "status": "Maybe"}]}}, "status.conditions[Ready].status",
     lambda p: p.conditions[0].status is Status.UNKNOWN),
    ("bad-timestamp", "MachineSet",
     {"status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "yesterday"}]}},
     "lastTransitionTime", lambda p: p.conditions[0].last_transition_time is None),
    ("status-not-an-object", "MachineSet", {"status": "broken"}, "status",
     lambda p: p.reported == Counters()),
    ("spec-not-an-object", "MachineDeployment", {"spec": ["x"]}, "spec", lambda p: p.replicas is None),
    ("max-surge-bare-string", "MachineDeployment",
     {"spec": {"rollout": {"strategy": {"rollingUpdate": {"maxSurge": "1"}}}}}, "maxSurge",
     lambda p: p.rolling_update.max_surge is None),
    ("labels-not-an-object", "MachineSet", {"metadata": {"name": "obj", "labels": "x"}}, "metadata.labels",
     lambda p: dict(p.meta.labels) == {}),
    ("ref-without-name", "MachineSet",
     {"spec": {"template": {"spec": {"infrastructureRef": {"kind": "X"}}}}}, "infrastructureRef",
     lambda p: p.infrastructure_ref is None),
    ("gates-not-a-list", "ClusterClass", {"spec": {"availabilityGates": "A"}}, "spec.availabilityGates",
     lambda p: p.availability_gates is None),
    ("creation-timestamp-int", "MachineSet",
     {"metadata": {"name": "obj", "creationTimestamp": 5}}, "metadata.creationTimestamp",
     lambda p: p.meta.creation_timestamp is None),
]


@pytest.mark.parametrize(("kind", "patch", "problem", "check"), [c[1:] for c in WRONG_TYPES],
                         ids=[c[0] for c in WRONG_TYPES])
def test_wrong_types_are_missing_and_recorded(kind: str, patch: dict[str, Any], problem: str,
                                              check: Any) -> None:
    obj = raw(kind, "v1beta2")
    obj.update(patch)
    p = project_unguarded(obj)
    assert p is not None
    assert any(problem in text for text in p.problems), p.problems
    assert check(p)


def test_huge_strings_are_bounded() -> None:
    huge = "x" * 1_000_000
    status = {"conditions": [{"type": "Ready", "status": "False", "message": huge, "reason": huge}]}
    p = project(raw("Machine", "v1beta2", status, labels={"cluster.x-k8s.io/cluster-name": huge}))
    assert p is not None
    assert len(p.conditions[0].message) == MAX_STRING
    assert len(p.meta.labels["cluster.x-k8s.io/cluster-name"]) <= 63


def test_duplicate_condition_types_keep_the_first() -> None:
    status = {"conditions": [V2_COND, {"type": "Ready", "status": "False"}]}
    p = project(raw("Machine", "v1beta2", status))
    assert p is not None and len(p.conditions) == 1 and p.conditions[0].status is Status.TRUE


# ---- decoders ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    (T0, T0_EPOCH), ("2024-05-01T12:00:00+02:00", T0_EPOCH), ("2024-05-01T10:00:00.5Z", T0_EPOCH + 0.5),
    ("2024-05-01T10:00:00", None), ("nonsense", None), (12, None), ("", None),
], ids=["utc-z", "offset", "fraction", "no-zone", "nonsense", "int", "empty"])
def test_parse_time(text: Any, expected: float | None) -> None:
    assert parse_time(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("10m", 600), ("1h30m", 5400), ("600s", 600), ("1m30.5s", 90), ("0", 0), ("10", None), ("m10", None),
    ("5x", None), ("", None),
], ids=["minutes", "hours-minutes", "seconds", "fraction", "zero", "no-unit", "unit-first", "bad-unit",
        "empty"])
def test_parse_duration(text: str, expected: int | None) -> None:
    assert parse_duration(text) == expected


def test_reference_without_group_or_kind_is_a_problem_and_the_rest_is_read() -> None:
    p = project(raw("Machine", "v1beta2", {}, spec={
        "clusterName": "c1",
        "infrastructureRef": {"kind": "DockerMachine", "name": "m"},
        "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io", "name": "m"}},
    }))
    assert isinstance(p, Machine)
    assert p.infrastructure_ref == Ref("DockerMachine", "m") and p.bootstrap_ref is None
    assert set(p.problems) == {
        "spec.infrastructureRef: expected reference with apiGroup (v1beta1: apiVersion), got dict",
        "spec.bootstrap.configRef: expected reference with kind and name, got dict",
    }
