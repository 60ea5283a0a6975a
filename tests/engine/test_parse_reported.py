"""The optional Cluster API kinds read as reported: what is read of each, and that each is
evaluated on its own with its conditions as the controller wrote them."""

from __future__ import annotations

from typing import Any

from exporter.engine.evaluate import evaluate_all
from exporter.engine.grouping import group_key
from exporter.engine.model import ClusterResourceSet, ClusterResourceSetBinding, Status
from exporter.engine.parse import project

ADDONS = "addons.cluster.x-k8s.io"
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
    assert group_key(crs) == ("single", "ClusterResourceSet", "ns/obj")
    # not the Cluster's group, although it names the Cluster: no rule reads it
    assert group_key(binding) == ("single", "ClusterResourceSetBinding", "ns/c1")
    results = {r.kind: r for r in evaluate_all([crs, binding], now=0.0)}
    reported = results["ClusterResourceSet"].reported
    assert [(c.type, c.reason) for c in reported] == [("ResourcesApplied", "Applied")]
    assert results["ClusterResourceSet"].computed == ()
    assert results["ClusterResourceSetBinding"].cluster_name == "c1"
