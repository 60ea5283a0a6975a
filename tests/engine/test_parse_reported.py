"""The optional Cluster API kinds read as reported: what is read of each, and that each is
evaluated on its own with its conditions as the controller wrote them."""

from __future__ import annotations

from typing import Any

from exporter.engine.evaluate import evaluate_all
from exporter.engine.grouping import group_key
from exporter.engine.model import (
    ClusterResourceSet,
    ClusterResourceSetBinding,
    ExtensionConfig,
    IPAddressClaim,
    MachineDrainRule,
    Status,
)
from exporter.engine.parse import project

ADDONS = "addons.cluster.x-k8s.io"
RUNTIME = "runtime.cluster.x-k8s.io"
T0 = "2026-11-20T10:14:09Z"


def raw(kind: str, api_version: str, spec: dict[str, Any] | None = None,
        status: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind,
                           "metadata": {"name": "obj", "namespace": "ns", "uid": "u1", **meta}}
    if spec is not None:
        obj["spec"] = spec
    if status is not None:
        obj["status"] = status
    return obj


def cond(type_: str, status: str, reason: str, **extra: Any) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "lastTransitionTime": T0, **extra}


def test_cluster_resource_set_v1beta2() -> None:
    p = project(raw("ClusterResourceSet", f"{ADDONS}/v1beta2", {"strategy": "Reconcile"}, {
        "conditions": [cond("ResourcesApplied", "False", "WrongSecretType", message="m")],
        "deprecated": {"v1beta1": {"conditions": [cond("ResourcesApplied", "False", "WrongSecretType",
                                                       severity="Warning")]}},
    }))
    assert isinstance(p, ClusterResourceSet)
    assert (p.layout, p.strategy, p.cluster_name, p.problems) == ("v1beta2", "Reconcile", "", ())
    (applied,) = p.conditions
    assert (applied.type, applied.status, applied.reason) == (
        "ResourcesApplied", Status.FALSE, "WrongSecretType")


def test_cluster_resource_set_as_capi_1_10_stores_it() -> None:
    p = project(raw("ClusterResourceSet", f"{ADDONS}/v1beta1", {"strategy": "ApplyOnce"}, {
        "conditions": [cond("ResourcesApplied", "True", "")],
        "v1beta2": {"conditions": [cond("ResourcesApplied", "True", "Applied")]},
    }))
    assert isinstance(p, ClusterResourceSet)
    assert p.layout == "v1beta1+v1beta2"
    assert [c.reason for c in p.conditions] == ["Applied"]


def test_cluster_resource_set_binding_names_its_cluster_and_counts_its_sets() -> None:
    p = project(raw("ClusterResourceSetBinding", f"{ADDONS}/v1beta2", {
        "clusterName": "prod-eu-1",
        "bindings": [{"clusterResourceSetName": "a", "resources": []},
                     {"clusterResourceSetName": "b", "resources": []}],
    }, name="prod-eu-1"))
    assert isinstance(p, ClusterResourceSetBinding)
    assert (p.cluster_name, p.bindings, p.conditions) == ("prod-eu-1", 2, ())
    empty = project(raw("ClusterResourceSetBinding", f"{ADDONS}/v1beta2", {"clusterName": "c"}))
    assert isinstance(empty, ClusterResourceSetBinding) and empty.bindings == 0


def test_unexpected_shapes_are_problems_and_the_rest_is_read() -> None:
    p = project(raw("ClusterResourceSetBinding", f"{ADDONS}/v1beta2", {"clusterName": "c", "bindings": "x"}))
    assert isinstance(p, ClusterResourceSetBinding)
    assert (p.cluster_name, p.bindings) == ("c", 0)
    assert len(p.problems) == 1 and "spec.bindings" in p.problems[0]


def test_evaluated_on_their_own_with_the_reported_conditions() -> None:
    crs = project(raw("ClusterResourceSet", f"{ADDONS}/v1beta2", status={
        "conditions": [cond("ResourcesApplied", "True", "Applied", message="")]}))
    binding = project(raw("ClusterResourceSetBinding", f"{ADDONS}/v1beta2", {"clusterName": "c1"}, name="c1",
                          labels={"cluster.x-k8s.io/cluster-name": "c1"}))
    assert crs is not None and binding is not None
    assert group_key(crs) == ("ClusterResourceSet", "ns", "obj")
    # not the Cluster's group, although it names the Cluster: no rule reads it
    assert group_key(binding) == ("ClusterResourceSetBinding", "ns", "c1")
    results = {r.kind: r for r in evaluate_all([crs, binding], now=0.0)}
    reported = results["ClusterResourceSet"].reported
    assert [(c.type, c.reason) for c in reported] == [("ResourcesApplied", "Applied")]
    assert results["ClusterResourceSet"].computed == ()
    assert results["ClusterResourceSetBinding"].cluster_name == "c1"


def test_extension_config_v1beta2_is_cluster_scoped_and_counts_its_handlers() -> None:
    obj = raw("ExtensionConfig", f"{RUNTIME}/v1beta2", {"clientConfig": {"url": "https://x"}}, {
        "conditions": [cond("Discovered", "False", "NotDiscovered", message="Error in discovery: x")],
        "handlers": [{"name": "a"}, {"name": "b"}],
    })
    del obj["metadata"]["namespace"]
    p = project(obj)
    assert isinstance(p, ExtensionConfig)
    assert (p.key, p.layout, p.handlers) == (("ExtensionConfig", "", "obj"), "v1beta2", 2)
    (discovered,) = p.conditions
    assert (discovered.type, discovered.status, discovered.reason) == (
        "Discovered", Status.FALSE, "NotDiscovered")


def test_extension_config_v1alpha1_stores_v1beta1_conditions() -> None:
    # v1alpha1 is older than v1beta2: its status.conditions are v1beta1 conditions (CAPI 1.10 adds
    # the v1beta2 ones under status.v1beta2), not metav1 ones as for a v1beta2 object.
    old = {"conditions": [cond("Discovered", "False", "DiscoveryFailed", severity="Error")]}
    p = project(raw("ExtensionConfig", f"{RUNTIME}/v1alpha1", {}, old))
    assert isinstance(p, ExtensionConfig)
    assert (p.layout, p.conditions, p.handlers) == ("v1beta1", (), 0)
    assert p.v1beta1_conditions[0].severity == "Error"
    mixed = project(raw("ExtensionConfig", f"{RUNTIME}/v1alpha1", {}, {
        **old, "v1beta2": {"conditions": [cond("Discovered", "False", "NotDiscovered")]}}))
    assert isinstance(mixed, ExtensionConfig)
    assert mixed.layout == "v1beta1+v1beta2" and mixed.conditions[0].reason == "NotDiscovered"
    before = project(raw("ExtensionConfig", f"{RUNTIME}/v1beta2", {}))
    assert isinstance(before, ExtensionConfig) and before.handlers is None  # never discovered yet


def test_machine_drain_rule_reads_its_drain_and_names_no_cluster() -> None:
    p = project(raw("MachineDrainRule", "cluster.x-k8s.io/v1beta2", {
        "drain": {"behavior": "Drain", "order": 100},
        "machines": [{"clusterSelector": {"matchLabels": {"env": "prod"}}}],
    }, labels={"cluster.x-k8s.io/cluster-name": "c1"}))
    assert isinstance(p, MachineDrainRule)
    # the label does not tie it to one Cluster: its Machines may be any Cluster's
    assert (p.behavior, p.order, p.cluster_name, p.conditions) == ("Drain", 100, "", ())
    assert group_key(p) == ("MachineDrainRule", "ns", "obj")
    v1beta1 = project(raw("MachineDrainRule", "cluster.x-k8s.io/v1beta1", {"drain": {"behavior": "Skip"}}))
    assert isinstance(v1beta1, MachineDrainRule)
    assert (v1beta1.behavior, v1beta1.order) == ("Skip", None)
    bad = project(raw("MachineDrainRule", "cluster.x-k8s.io/v1beta2",
                      {"drain": {"behavior": "Drain", "order": "x"}}))
    assert isinstance(bad, MachineDrainRule)
    assert (bad.behavior, bad.order, len(bad.problems)) == ("Drain", None, 1)


def test_ip_address_claim_in_its_cluster_with_pool_and_address() -> None:
    spec = {"clusterName": "c1", "poolRef": {"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool",
                                              "name": "nodes"}}
    p = project(raw("IPAddressClaim", "ipam.cluster.x-k8s.io/v1beta2", spec, {
        "addressRef": {"name": "m1-0-0"},
        "conditions": [cond("Ready", "True", "Ready", message="")],
    }))
    assert isinstance(p, IPAddressClaim)
    assert (p.cluster_name, p.pool_kind, p.pool_name, p.address_name, p.layout) == (
        "c1", "InClusterIPPool", "nodes", "m1-0-0", "v1beta2")
    assert group_key(p) == ("IPAddressClaim", "ns", "obj")  # not its Cluster's group


def test_ip_address_claim_before_v1beta2() -> None:
    # v1alpha1 and v1beta1 store v1beta1 conditions; CAPI 1.10 adds the v1beta2 ones under status.v1beta2
    waiting = {"conditions": [cond("Ready", "False", "PoolExhausted", severity="Error")],
               "v1beta2": {"conditions": [cond("Ready", "False", "PoolExhausted", message="m")]}}
    for version in ("v1alpha1", "v1beta1"):
        p = project(raw("IPAddressClaim", f"ipam.cluster.x-k8s.io/{version}", {}, waiting))
        assert isinstance(p, IPAddressClaim)
        assert (p.layout, p.address_name) == ("v1beta1+v1beta2", "")
        assert p.conditions[0].reason == "PoolExhausted" and p.v1beta1_conditions[0].severity == "Error"
