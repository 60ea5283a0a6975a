"""Resource types the fake API server knows how to install, and manifest loading.

Owns the CRD-like definitions of the Cluster API and Open Cluster Management kinds the exporter
watches (group, plural, served versions, scope), a guess for unknown kinds (lowercase plural,
namespaced) and reading YAML/JSON manifests (multi-document, ``kind: List``). It does not serve
anything; ``server.py`` installs these types and stores the objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from tests.kubeapi.state import ResourceType, version_priority

CAPI = "cluster.x-k8s.io"
CONTROLPLANE = "controlplane.cluster.x-k8s.io"
INFRA = "infrastructure.cluster.x-k8s.io"
BOOTSTRAP = "bootstrap.cluster.x-k8s.io"
WORK = "work.open-cluster-management.io"
OCM_CLUSTER = "cluster.open-cluster-management.io"
OCM_ADDON = "addon.open-cluster-management.io"
ADDONS = "addons.cluster.x-k8s.io"
RUNTIME = "runtime.cluster.x-k8s.io"
IPAM = "ipam.cluster.x-k8s.io"
APIEXTENSIONS = "apiextensions.k8s.io"

CAPI_VERSIONS = ("v1beta2", "v1beta1")


def _capi(kind: str, plural: str, versions: tuple[str, ...] = CAPI_VERSIONS) -> ResourceType:
    return ResourceType(CAPI, kind, plural, versions)


CAPI_TYPES: tuple[ResourceType, ...] = (
    _capi("Cluster", "clusters"),
    _capi("Machine", "machines"),
    _capi("MachineSet", "machinesets"),
    _capi("MachineDeployment", "machinedeployments"),
    _capi("MachinePool", "machinepools"),
    _capi("MachineHealthCheck", "machinehealthchecks"),
    _capi("ClusterClass", "clusterclasses"),
    _capi("MachineDrainRule", "machinedrainrules"),
    ResourceType(CONTROLPLANE, "KubeadmControlPlane", "kubeadmcontrolplanes", CAPI_VERSIONS),
    ResourceType(ADDONS, "ClusterResourceSet", "clusterresourcesets", CAPI_VERSIONS),
    ResourceType(ADDONS, "ClusterResourceSetBinding", "clusterresourcesetbindings", CAPI_VERSIONS),
    ResourceType(RUNTIME, "ExtensionConfig", "extensionconfigs", ("v1beta2", "v1alpha1"), namespaced=False),
    ResourceType(IPAM, "IPAddressClaim", "ipaddressclaims", ("v1beta2", "v1beta1", "v1alpha1")),
)

INFRA_TYPES: tuple[ResourceType, ...] = (
    ResourceType(INFRA, "DockerMachinePool", "dockermachinepools", CAPI_VERSIONS),
    ResourceType(INFRA, "AWSManagedMachinePool", "awsmanagedmachinepools", ("v1beta2",)),
    ResourceType(INFRA, "AzureMachinePool", "azuremachinepools", ("v1beta1",)),
    ResourceType(INFRA, "DockerCluster", "dockerclusters", CAPI_VERSIONS),
    ResourceType(INFRA, "DockerMachine", "dockermachines", CAPI_VERSIONS),
    ResourceType(INFRA, "AWSMachine", "awsmachines", ("v1beta2",)),
)

BOOTSTRAP_TYPES: tuple[ResourceType, ...] = (
    ResourceType(BOOTSTRAP, "KubeadmConfig", "kubeadmconfigs", CAPI_VERSIONS),
)

OCM_TYPES: tuple[ResourceType, ...] = (
    ResourceType(WORK, "ManifestWorkReplicaSet", "manifestworkreplicasets", ("v1alpha1",)),
    ResourceType(WORK, "ManifestWork", "manifestworks", ("v1",)),
    ResourceType(OCM_CLUSTER, "ManagedCluster", "managedclusters", ("v1",), namespaced=False),
    ResourceType(OCM_CLUSTER, "Placement", "placements", ("v1beta1",)),
    ResourceType(OCM_CLUSTER, "PlacementDecision", "placementdecisions", ("v1beta1",)),
    ResourceType(OCM_ADDON, "ManagedClusterAddOn", "managedclusteraddons", ("v1alpha1",)),
)

# Served by every API server: one CustomResourceDefinition per installed type (server.py writes
# them), which clients that discover custom resources from their CRDs list and watch.
CRD_TYPE = ResourceType(APIEXTENSIONS, "CustomResourceDefinition", "customresourcedefinitions", ("v1",),
                        namespaced=False)

KNOWN: dict[tuple[str, str], ResourceType] = {
    (t.group, t.kind): t for t in (*CAPI_TYPES, *INFRA_TYPES, *BOOTSTRAP_TYPES, *OCM_TYPES)
}
CLUSTER_SCOPED_KINDS = {
    "ManagedCluster", "ManagedClusterSet", "Namespace", "ClusterManagementAddOn", "ExtensionConfig",
}


def crd_object(t: ResourceType, document: dict[str, Any] | None = None) -> dict[str, Any]:
    """The CustomResourceDefinition serving ``t``: ``document`` when the type was installed from
    one, else one made from the type (every version served, the preferred one stored), established."""
    if document is not None:
        crd = {k: v for k, v in document.items() if k != "status"}
        crd["metadata"] = {k: v for k, v in (document.get("metadata") or {}).items()
                           if k in ("name", "labels", "annotations")}
    else:
        versions = sorted(t.versions, key=version_priority)
        crd = {
            "apiVersion": f"{APIEXTENSIONS}/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{t.plural}.{t.group}"},
            "spec": {
                "group": t.group,
                "names": {"kind": t.kind, "listKind": f"{t.kind}List", "plural": t.plural,
                          "singular": t.singular},
                "scope": "Namespaced" if t.namespaced else "Cluster",
                "versions": [{"name": v, "served": True, "storage": v == versions[0]} for v in versions],
            },
        }
    names = crd["spec"]["names"]
    crd["status"] = {
        "acceptedNames": names,
        "conditions": [{"type": "NamesAccepted", "status": "True", "reason": "NoConflicts"},
                       {"type": "Established", "status": "True", "reason": "InitialNamesAccepted"}],
        "storedVersions": [v["name"] for v in crd["spec"]["versions"] if v.get("storage")],
    }
    return crd


def split_api_version(api_version: str) -> tuple[str, str]:
    """``group/version`` → (group, version); core ``v1`` → ("", "v1")."""
    group, _, version = api_version.rpartition("/")
    return group, version


def pluralize(kind: str) -> str:
    low = kind.lower()
    if low.endswith("y") and low[-2:-1] not in "aeiou":
        return low[:-1] + "ies"
    if low.endswith(("s", "x", "ch", "sh")):
        return low + "es"
    return low + "s"


def type_for(api_version: str, kind: str) -> ResourceType:
    """The resource type for an object: a known one (with every version it serves) or a guess."""
    group, version = split_api_version(api_version)
    known = KNOWN.get((group, kind))
    if known is not None:
        versions = known.versions if version in known.versions else (*known.versions, version)
        return ResourceType(group, kind, known.plural, versions, known.namespaced)
    return ResourceType(group, kind, pluralize(kind), (version,), kind not in CLUSTER_SCOPED_KINDS)


def types_for_objects(objects: Iterable[dict[str, Any]]) -> list[ResourceType]:
    """The resource types needed to serve ``objects``, merging the versions they use."""
    found: dict[tuple[str, str], ResourceType] = {}
    for obj in objects:
        t = type_for(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if not t.group:
            continue  # core kinds are not served by the fake
        prev = found.get((t.group, t.kind))
        if prev is not None:
            versions = tuple(sorted(set(prev.versions) | set(t.versions), key=version_priority))
            t = ResourceType(t.group, t.kind, t.plural, versions, t.namespaced)
        found[(t.group, t.kind)] = t
    return list(found.values())


def _flatten(doc: Any) -> Iterator[dict[str, Any]]:
    if not isinstance(doc, dict):
        return
    if doc.get("kind") == "List" or (str(doc.get("kind", "")).endswith("List") and "items" in doc):
        for item in doc.get("items") or []:
            yield from _flatten(item)
    elif doc.get("kind") and doc.get("apiVersion"):
        yield doc


def load_manifests(path: str | Path) -> list[dict[str, Any]]:
    """Every object in a file or a directory tree of .yaml/.yml/.json files, in a stable order."""
    root = Path(path)
    files = [root]
    if root.is_dir():
        files = sorted(p for p in root.rglob("*") if p.suffix in {".yaml", ".yml", ".json"})
    objects: list[dict[str, Any]] = []
    for file in files:
        with file.open(encoding="utf-8") as fh:
            for doc in yaml.safe_load_all(fh):
                objects.extend(_flatten(doc))
    return objects
