"""The chart grants the exporter exactly get/list/watch on the resources it reads, and nothing else.

Rules are flattened to (apiGroup, resource, verb) triples so a test states the whole grant; any
extra resource, verb, wildcard or Secret access fails. The resource list is the exporter's
contract (design.md): CAPI core, control-plane, add-on and IPAM kinds (ClusterResourceSets, IPAddressClaims),
InfraMachinePools, the common providers' InfraCluster, InfraMachine and BootstrapConfig kinds, OCM
work, cluster and add-on kinds; discovery reads /apis, so
CustomResourceDefinitions are not needed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
import yaml

from tests.chart.harness import CHART, Manifest, RenderError, by_kind, one, render

VERBS = ("get", "list", "watch")
INFRA_MACHINE_POOLS = (
    "dockermachinepools",
    "awsmachinepools",
    "awsmanagedmachinepools",
    "azuremachinepools",
    "azuremanagedmachinepools",
    "azureasomanagedmachinepools",
    "gcpmanagedmachinepools",
    "ocimachinepools",
    "ocimanagedmachinepools",
    "ocivirtualmachinepools",
)
NAMESPACED_RESOURCES = {
    ("cluster.x-k8s.io", r)
    for r in (
        "clusters",
        "machines",
        "machinesets",
        "machinedeployments",
        "machinepools",
        "machinehealthchecks",
        "clusterclasses",
        "machinedrainrules",
    )
} | {
    ("controlplane.cluster.x-k8s.io", "kubeadmcontrolplanes"),
    ("addons.cluster.x-k8s.io", "clusterresourcesets"),
    ("addons.cluster.x-k8s.io", "clusterresourcesetbindings"),
    ("ipam.cluster.x-k8s.io", "ipaddressclaims"),
    ("work.open-cluster-management.io", "manifestworkreplicasets"),
    ("work.open-cluster-management.io", "manifestworks"),
    ("cluster.open-cluster-management.io", "placements"),
    ("cluster.open-cluster-management.io", "placementdecisions"),
    ("addon.open-cluster-management.io", "managedclusteraddons"),
} | {("infrastructure.cluster.x-k8s.io", r) for r in INFRA_MACHINE_POOLS}
# InfraCluster / InfraMachine and BootstrapConfig resources of the common providers.
PROVIDERS = {
    "infrastructure.cluster.x-k8s.io": (
        "awsclusters", "awsmachines", "awsmanagedclusters", "azureclusters", "azuremachines",
        "azuremanagedclusters", "dockerclusters", "dockermachines", "gcpclusters", "gcpmachines",
        "gcpmanagedclusters", "ibmpowervsclusters", "ibmpowervsmachines", "kubevirtclusters",
        "kubevirtmachines", "metal3clusters", "metal3machines", "nutanixclusters", "nutanixmachines",
        "ociclusters", "ocimachines", "openstackclusters", "openstackmachines", "proxmoxclusters",
        "proxmoxmachines", "vsphereclusters", "vspheremachines",
    ),
    "bootstrap.cluster.x-k8s.io": ("kubeadmconfigs", "kthreesconfigs", "rke2configs", "talosconfigs"),
}
PROVIDER_RESOURCES = {(group, r) for group, resources in PROVIDERS.items() for r in resources}
NAMESPACED_RESOURCES |= PROVIDER_RESOURCES
CLUSTER_SCOPED_RESOURCES = {
    ("cluster.open-cluster-management.io", "managedclusters"),
    ("runtime.cluster.x-k8s.io", "extensionconfigs"),
}
SA = {"kind": "ServiceAccount", "name": "fse-fleet-status-exporter", "namespace": "monitoring"}

Grant = tuple[str, str, str]


def grants(rules: Iterable[dict[str, Any]]) -> set[Grant]:
    out: set[Grant] = set()
    for rule in rules:
        assert set(rule) == {"apiGroups", "resources", "verbs"}, rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    out.add((group, resource, verb))
    return out


def read_only(resources: Iterable[tuple[str, str]]) -> set[Grant]:
    return {(group, resource, verb) for group, resource in resources for verb in VERBS}


def rbac_kinds(manifests: list[Manifest]) -> list[str]:
    kinds = ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
    return sorted(m["kind"] for m in manifests if m["kind"] in kinds)


def test_infra_machine_pool_defaults_match_values() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert tuple(values["rbac"]["infrastructureMachinePools"]) == INFRA_MACHINE_POOLS


def test_provider_defaults_match_values() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert {p["apiGroup"]: tuple(p["resources"]) for p in values["rbac"]["providers"]} == PROVIDERS


def test_cluster_mode_grants_exactly_the_watched_resources() -> None:
    manifests = render()
    assert rbac_kinds(manifests) == ["ClusterRole", "ClusterRoleBinding"]
    role = one(manifests, "ClusterRole")
    assert grants(role["rules"]) == read_only(NAMESPACED_RESOURCES | CLUSTER_SCOPED_RESOURCES)
    binding = one(manifests, "ClusterRoleBinding")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [SA]


@pytest.mark.parametrize(
    "values",
    [
        None,
        {"namespaces": ["fleet-a"]},
        {"rbac": {"useClusterRole": False}},
        {"autosharding": {"enabled": True}, "replicas": 2},
    ],
    ids=["cluster", "namespaced", "release-namespace", "sharded"],
)
def test_no_write_verb_no_wildcard_no_secret_in_any_mode(values: dict[str, Any] | None) -> None:
    manifests = render(values)
    for role in [*by_kind(manifests, "ClusterRole"), *by_kind(manifests, "Role")]:
        for group, resource, verb in grants(role["rules"]):
            assert verb in VERBS
            assert "*" not in (group, resource, verb)
            assert resource not in ("secrets", "customresourcedefinitions", "configmaps")


def test_namespaced_mode_uses_a_role_per_namespace() -> None:
    manifests = render({"namespaces": ["fleet-a", "fleet-b"]})
    roles = by_kind(manifests, "Role")
    assert sorted(r["metadata"]["namespace"] for r in roles) == ["fleet-a", "fleet-b"]
    for role in roles:
        assert grants(role["rules"]) == read_only(NAMESPACED_RESOURCES)
    bindings = by_kind(manifests, "RoleBinding")
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["fleet-a", "fleet-b"]
    for binding in bindings:
        assert binding["roleRef"]["kind"] == "Role"
        assert binding["roleRef"]["name"] == roles[0]["metadata"]["name"]
        assert binding["subjects"] == [SA]
    # ManagedClusters and ExtensionConfigs are cluster-scoped: only a ClusterRole can grant them, and
    # it grants nothing else.
    assert grants(one(manifests, "ClusterRole")["rules"]) == read_only(CLUSTER_SCOPED_RESOURCES)
    assert one(manifests, "ClusterRoleBinding")["subjects"] == [SA]


def test_a_namespace_listed_twice_is_refused() -> None:
    # values.schema.json has uniqueItems, which Helm enforces before any template runs.
    with pytest.raises(RenderError, match="/namespaces"):
        render({"namespaces": ["fleet-a", "fleet-b", "fleet-a"]})


def test_strictly_namespaced_mode_has_no_cluster_role() -> None:
    manifests = render({"namespaces": ["fleet-a"], "rbac": {"clusterScopedResources": False}})
    assert rbac_kinds(manifests) == ["Role", "RoleBinding"]


def test_release_namespace_mode_grants_in_the_release_namespace() -> None:
    manifests = render({"rbac": {"useClusterRole": False}})
    assert one(manifests, "Role")["metadata"]["namespace"] == "monitoring"
    assert grants(one(manifests, "Role")["rules"]) == read_only(NAMESPACED_RESOURCES)
    assert grants(one(manifests, "ClusterRole")["rules"]) == read_only(CLUSTER_SCOPED_RESOURCES)


def test_rbac_create_false_renders_no_rbac() -> None:
    assert rbac_kinds(render({"rbac": {"create": False}})) == []
    assert rbac_kinds(render({"rbac": {"create": False}, "namespaces": ["fleet-a"]})) == []


def test_infra_machine_pools_and_extra_rules_are_configurable() -> None:
    extra = {"apiGroups": ["infrastructure.example.com"], "resources": ["foomachinepools"], "verbs": ["get"]}
    rbac = {"infrastructureMachinePools": ["dockermachinepools"], "extraRules": [extra]}
    manifests = render({"rbac": rbac})
    expected = (
        {r for r in NAMESPACED_RESOURCES
         if r[0] != "infrastructure.cluster.x-k8s.io" or r in PROVIDER_RESOURCES}
        | {("infrastructure.cluster.x-k8s.io", "dockermachinepools")}
        | CLUSTER_SCOPED_RESOURCES
    )
    extra_grant = {("infrastructure.example.com", "foomachinepools", "get")}
    assert grants(one(manifests, "ClusterRole")["rules"]) == read_only(expected) | extra_grant


def test_provider_groups_are_configurable() -> None:
    """A provider in a group of its own; a group with no resources grants nothing."""
    providers = [{"apiGroup": "vmware.infrastructure.cluster.x-k8s.io", "resources": ["vspheremachines"]},
                 {"apiGroup": "bootstrap.cluster.x-k8s.io", "resources": []}]
    for values in ({"rbac": {"providers": providers}},
                   {"rbac": {"providers": providers}, "namespaces": ["fleet-a"]}):
        role = one(render(values), "Role" if "namespaces" in values else "ClusterRole")
        got = grants(role["rules"])
        assert read_only({("vmware.infrastructure.cluster.x-k8s.io", "vspheremachines")}) <= got
        assert not any(g[0] == "bootstrap.cluster.x-k8s.io" for g in got)
        assert not read_only(PROVIDER_RESOURCES) & got


@pytest.mark.parametrize("providers", [
    [{"apiGroup": "infrastructure.cluster.x-k8s.io", "resources": ["*"]}],
    [{"apiGroup": "*", "resources": ["awsmachines"]}],
    [{"resources": ["awsmachines"]}],
    [{"apiGroup": "infrastructure.cluster.x-k8s.io", "resources": ["awsmachines"], "verbs": ["delete"]}],
], ids=["wildcard-resource", "wildcard-group", "no-group", "verbs"])
def test_provider_entries_are_checked(providers: list[dict[str, Any]]) -> None:
    with pytest.raises(RenderError, match="providers"):
        render({"rbac": {"providers": providers}})


def test_no_infra_machine_pools_drops_the_rule() -> None:
    rules = one(render({"rbac": {"infrastructureMachinePools": [], "providers": []}}), "ClusterRole")["rules"]
    assert all("infrastructure.cluster.x-k8s.io" not in r["apiGroups"] for r in rules)
