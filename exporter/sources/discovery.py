"""What the kube source watches, and where the API server serves it.

Owns the list of watched kinds (``WATCHED``: group, kind, versions in preference order, label
selector), resolving them through API discovery (``/apis/<group>`` then
``/apis/<group>/<version>``) into concrete ``Resource``s (served version, plural, scope, URL
paths), and reading which provider kinds (InfraCluster, InfraMachine, InfraMachinePool,
BootstrapConfig) Clusters, Machines and MachinePools reference. Owns no HTTP client (the
caller passes a ``GetJson`` function) and no list/watch logic (``kube.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from exporter.engine.parse_fields import is_map

CAPI_GROUP: Final = "cluster.x-k8s.io"
CONTROLPLANE_GROUP: Final = "controlplane.cluster.x-k8s.io"
ADDONS_GROUP: Final = "addons.cluster.x-k8s.io"
RUNTIME_GROUP: Final = "runtime.cluster.x-k8s.io"
IPAM_GROUP: Final = "ipam.cluster.x-k8s.io"
INFRA_GROUP: Final = "infrastructure.cluster.x-k8s.io"
WORK_GROUP: Final = "work.open-cluster-management.io"
OCM_CLUSTER_GROUP: Final = "cluster.open-cluster-management.io"
OCM_ADDON_GROUP: Final = "addon.open-cluster-management.io"
MWRS_LABEL: Final = "work.open-cluster-management.io/manifestworkreplicaset"
BOOTSTRAP_GROUP: Final = "bootstrap.cluster.x-k8s.io"
# The contract roles of provider kinds: each is also the --exclude-resource name covering every
# provider kind of that role.
INFRA_CLUSTER: Final = "InfraCluster"
INFRA_MACHINE: Final = "InfraMachine"
INFRA_MACHINE_POOL: Final = "InfraMachinePool"
BOOTSTRAP_CONFIG: Final = "BootstrapConfig"
PROVIDER_ROLES: Final = (INFRA_CLUSTER, INFRA_MACHINE, INFRA_MACHINE_POOL, BOOTSTRAP_CONFIG)
# Where each referencing kind holds its references: (role, path).
_REFERENCES: Final[Mapping[str, tuple[tuple[str, tuple[str, ...]], ...]]] = {
    "Cluster": ((INFRA_CLUSTER, ("spec", "infrastructureRef")),),
    "Machine": (
        (INFRA_MACHINE, ("spec", "infrastructureRef")),
        (BOOTSTRAP_CONFIG, ("spec", "bootstrap", "configRef")),
    ),
    "MachinePool": (
        (INFRA_MACHINE_POOL, ("spec", "template", "spec", "infrastructureRef")),
        (BOOTSTRAP_CONFIG, ("spec", "template", "spec", "bootstrap", "configRef")),
    ),
}

CAPI_VERSIONS: Final = ("v1beta2", "v1beta1")

GetJson = Callable[[str], Awaitable[tuple[int, Any]]]
"""GET a path, return (HTTP status, decoded JSON body or None); raises on connection errors."""


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """A kind to watch. ``versions`` in preference order; empty means the group's preferred one."""

    group: str
    kind: str
    versions: tuple[str, ...] = ()
    label_selector: str = ""


WATCHED: Final[tuple[ResourceSpec, ...]] = (
    *(
        ResourceSpec(CAPI_GROUP, kind, CAPI_VERSIONS)
        for kind in (
            "Cluster",
            "Machine",
            "MachineSet",
            "MachineDeployment",
            "MachinePool",
            "MachineHealthCheck",
            "ClusterClass",
        )
    ),
    ResourceSpec(CONTROLPLANE_GROUP, "KubeadmControlPlane", CAPI_VERSIONS),
    # Optional Cluster API kinds: a hub without their CRDs is served like one without OCM.
    ResourceSpec(ADDONS_GROUP, "ClusterResourceSet", CAPI_VERSIONS),
    ResourceSpec(ADDONS_GROUP, "ClusterResourceSetBinding", CAPI_VERSIONS),
    ResourceSpec(RUNTIME_GROUP, "ExtensionConfig", ("v1beta2", "v1alpha1")),
    ResourceSpec(CAPI_GROUP, "MachineDrainRule", CAPI_VERSIONS),
    ResourceSpec(IPAM_GROUP, "IPAddressClaim", ("v1beta2", "v1beta1", "v1alpha1")),
    ResourceSpec(WORK_GROUP, "ManifestWorkReplicaSet", ("v1alpha1",)),
    ResourceSpec(WORK_GROUP, "ManifestWork", ("v1",), label_selector=MWRS_LABEL),
    ResourceSpec(OCM_CLUSTER_GROUP, "ManagedCluster", ("v1",)),
    ResourceSpec(OCM_CLUSTER_GROUP, "Placement", ("v1beta1",)),
    ResourceSpec(OCM_CLUSTER_GROUP, "PlacementDecision", ("v1beta1",)),
    ResourceSpec(OCM_ADDON_GROUP, "ManagedClusterAddOn", ("v1alpha1",)),
)


@dataclass(frozen=True, slots=True)
class Resource:
    """A spec resolved by discovery: the version the server serves, its plural and scope."""

    spec: ResourceSpec
    version: str
    plural: str
    namespaced: bool

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def api_version(self) -> str:
        return f"{self.spec.group}/{self.version}"

    @property
    def name(self) -> str:
        """``<plural>.<group>``: how the resource is named in logs and self-metrics."""
        return f"{self.plural}.{self.spec.group}"

    def path(self, namespace: str | None) -> str:
        if namespace is None or not self.namespaced:
            return f"/apis/{self.api_version}/{self.plural}"
        return f"/apis/{self.api_version}/namespaces/{namespace}/{self.plural}"


@dataclass(frozen=True, slots=True)
class Resolution:
    """The outcome of one discovery pass.

    ``found`` maps every spec whose group answered to its Resource, or None when the group or
    kind is not installed; specs of groups whose discovery failed are absent (``failed`` says
    why) so that the caller keeps what it had for them.
    """

    found: Mapping[ResourceSpec, Resource | None]
    failed: Mapping[str, str]


class DiscoveryError(Exception):
    """A discovery document could not be read (any status but 200 and 404)."""


def _served_versions(group_doc: Any) -> tuple[str, list[str]]:
    """(preferred version, all served versions) of an APIGroup document."""
    versions = [str(v.get("version", "")) for v in group_doc.get("versions") or [] if isinstance(v, dict)]
    preferred = str((group_doc.get("preferredVersion") or {}).get("version", "")) or (versions or [""])[0]
    return preferred, [v for v in versions if v]


async def _resolve_group(
    get: GetJson, group: str, specs: list[ResourceSpec]
) -> dict[ResourceSpec, Resource | None]:
    status, doc = await get(f"/apis/{group}")
    if status == 404:
        return dict.fromkeys(specs)
    if status != 200 or not isinstance(doc, dict):
        raise DiscoveryError(f"GET /apis/{group}: HTTP {status}")
    preferred, served = _served_versions(doc)
    lists: dict[str, dict[str, tuple[str, bool]]] = {}

    async def kinds_in(version: str) -> dict[str, tuple[str, bool]]:
        if version not in lists:
            status, body = await get(f"/apis/{group}/{version}")
            if status == 404:
                lists[version] = {}
            elif status != 200 or not isinstance(body, dict):
                raise DiscoveryError(f"GET /apis/{group}/{version}: HTTP {status}")
            else:
                lists[version] = {
                    str(r.get("kind")): (str(r.get("name")), bool(r.get("namespaced")))
                    for r in body.get("resources") or []
                    if isinstance(r, dict) and "/" not in str(r.get("name", ""))  # skip subresources
                }
        return lists[version]

    out: dict[ResourceSpec, Resource | None] = {}
    for spec in specs:
        wanted = spec.versions or (preferred, *(v for v in served if v != preferred))
        out[spec] = None
        for version in wanted:
            if version in served and spec.kind in (kinds := await kinds_in(version)):
                plural, namespaced = kinds[spec.kind]
                out[spec] = Resource(spec, version, plural, namespaced)
                break
    return out


async def resolve(get: GetJson, specs: Iterable[ResourceSpec]) -> Resolution:
    """Resolve ``specs`` group by group; one group failing does not hide the others."""
    by_group: dict[str, list[ResourceSpec]] = {}
    for spec in specs:
        by_group.setdefault(spec.group, []).append(spec)
    found: dict[ResourceSpec, Resource | None] = {}
    failed: dict[str, str] = {}
    for group, group_specs in by_group.items():
        try:
            found.update(await _resolve_group(get, group, group_specs))
        except (DiscoveryError, OSError, TimeoutError, ValueError) as e:
            failed[group] = str(e) or type(e).__name__
        except Exception as e:  # aiohttp.ClientError and friends: reported, retried next pass
            failed[group] = f"{type(e).__name__}: {e}"
    return Resolution(found, failed)


def _in_group(group: str, provider_group: str) -> bool:
    return group == provider_group or group.endswith(f".{provider_group}")


def provider_refs(kind: str, raw: Mapping[str, Any]) -> tuple[list[tuple[str, ResourceSpec]], list[str]]:
    """The provider kinds a raw Cluster, Machine or MachinePool references, with their roles, and
    what is wrong with the references that cannot be followed (no kind, no group).

    v1beta2 references carry ``apiGroup``, v1beta1 ones ``apiVersion``; the served version is left
    to discovery (the group's preferred one), as the referenced version may be outdated. Only the
    provider groups (``infrastructure.cluster.x-k8s.io``, ``bootstrap.cluster.x-k8s.io`` and groups
    under them) are followed.
    """
    found: list[tuple[str, ResourceSpec]] = []
    bad: list[str] = []
    for role, path in _REFERENCES.get(kind, ()):
        ref: Any = raw
        for key in path:
            ref = ref.get(key) if is_map(ref) else None
        if ref is None:
            continue
        where = ".".join(path)
        if not is_map(ref):
            bad.append(f"{where} is not an object")
            continue
        ref_kind = ref.get("kind")
        group = ref.get("apiGroup") or str(ref.get("apiVersion") or "").rpartition("/")[0]
        if not isinstance(group, str) or not group:
            bad.append(f"{where} names no apiGroup (or apiVersion)")
            continue
        if not isinstance(ref_kind, str) or not ref_kind:
            bad.append(f"{where} names no kind")
            continue
        provider_group = BOOTSTRAP_GROUP if role == BOOTSTRAP_CONFIG else INFRA_GROUP
        if _in_group(group, provider_group):
            found.append((role, _spec(group, ref_kind)))
    return found, bad


# One ResourceSpec per referenced kind: every Machine event names the same two, and the caller
# looks them up in a dict, which then finds the very object rather than comparing fields.
@functools.lru_cache(maxsize=1024)
def _spec(group: str, kind: str) -> ResourceSpec:
    return ResourceSpec(group, kind)
