"""Helpers for tests that run a source against the fake API server.

Owns a recording sink with the store's replace/upsert/delete semantics, a minimal projector (so
source tests do not depend on the engine's parsing), small object builders, fast loop settings,
``eventually`` polling and the comparison of what a sink holds with what the server holds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from exporter.engine.model import Base, Meta
from exporter.sources.informer import LoopSettings
from exporter.sources.kube import KubeSource, KubeSourceConfig
from tests.kubeapi.server import FakeKubeAPI

Key = tuple[str, str, str]

FAST = LoopSettings(
    page_size=2,
    watch_timeout=(1.0, 1.0),
    watch_grace=0.5,
    request_timeout=2.0,
    backoff_initial=0.01,
    backoff_factor=2.0,
    backoff_max=0.05,
    backoff_jitter=1.0,
    backoff_reset_after=1.0,
    min_watch_duration=0.0,
    unready_after=2.0,
)

INVALID_LABEL = "test/unreadable"
MWRS_LABEL = "work.open-cluster-management.io/manifestworkreplicaset"


def simple_project(raw: Mapping[str, Any], previous: Base | None = None) -> Base | None:
    """Identity and resourceVersion only; objects labelled ``test/unreadable`` read as invalid."""
    meta = raw.get("metadata") or {}
    if not raw.get("kind") or not meta.get("name") or INVALID_LABEL in (meta.get("labels") or {}):
        return None
    return Base(
        Meta(
            kind=str(raw["kind"]),
            api_version=str(raw.get("apiVersion", "")),
            namespace=str(meta.get("namespace") or ""),
            name=str(meta["name"]),
            uid=str(meta.get("uid", "")),
            resource_version=str(meta.get("resourceVersion", "")),
        )
    )


class RecordingSink:
    """A dict of projections with the same replace semantics as ``exporter.store.Store``."""

    def __init__(self) -> None:
        self.objects: dict[Key, Base] = {}
        self.calls: list[tuple[str, Any]] = []

    def replace(self, kind: str, objects: Iterable[Base], namespace: str | None = None) -> None:
        incoming = list(objects)
        self.calls.append(("replace", (kind, namespace, len(incoming))))
        for key in [k for k in self.objects if k[0] == kind and (namespace is None or k[1] == namespace)]:
            del self.objects[key]
        for obj in incoming:
            self.objects[obj.key] = obj

    def upsert(self, obj: Base) -> None:
        self.calls.append(("upsert", obj.key))
        self.objects[obj.key] = obj

    def delete(self, kind: str, namespace: str, name: str) -> None:
        self.calls.append(("delete", (kind, namespace, name)))
        self.objects.pop((kind, namespace, name), None)

    def get(self, key: Key) -> Base | None:
        return self.objects.get(key)

    def view(self) -> dict[Key, str]:
        return {k: o.meta.resource_version for k, o in self.objects.items()}


def server_view(
    api: FakeKubeAPI,
    namespaces: Iterable[str] = (),
    exclude: Iterable[str] = (),
) -> dict[Key, str]:
    """What a correct source shows of the server: MWRS-owned ManifestWorks only, readable objects."""
    wanted_ns, excluded = set(namespaces), set(exclude)
    out: dict[Key, str] = {}
    for obj in api.objects():
        meta = obj["metadata"]
        ns, labels = meta.get("namespace") or "", meta.get("labels") or {}
        rt = api.resource(obj["kind"], obj["apiVersion"].split("/")[0])
        if obj["kind"] in excluded or INVALID_LABEL in labels:
            continue
        if obj["kind"] == "ManifestWork" and MWRS_LABEL not in labels:
            continue
        if wanted_ns and rt.namespaced and ns not in wanted_ns:
            continue
        out[(obj["kind"], ns, meta["name"])] = meta["resourceVersion"]
    return out


async def eventually(check: Callable[[], object], timeout: float = 4.0, what: str = "") -> None:
    """Poll ``check`` until it returns truthy; fail with ``what`` after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        await asyncio.sleep(0.01)


def obj(kind: str, name: str, ns: str = "ns1", api_version: str = "", **labels: str) -> dict[str, Any]:
    groups = {
        "KubeadmControlPlane": "controlplane.cluster.x-k8s.io/v1beta2",
        "ManifestWorkReplicaSet": "work.open-cluster-management.io/v1alpha1",
        "ManifestWork": "work.open-cluster-management.io/v1",
        "ManagedCluster": "cluster.open-cluster-management.io/v1",
        "ManagedClusterAddOn": "addon.open-cluster-management.io/v1alpha1",
        "Placement": "cluster.open-cluster-management.io/v1beta1",
        "DockerMachinePool": "infrastructure.cluster.x-k8s.io/v1beta1",
        "DockerCluster": "infrastructure.cluster.x-k8s.io/v1beta2",
        "DockerMachine": "infrastructure.cluster.x-k8s.io/v1beta2",
        "AWSMachine": "infrastructure.cluster.x-k8s.io/v1beta2",
        "KubeadmConfig": "bootstrap.cluster.x-k8s.io/v1beta2",
        "ClusterResourceSet": "addons.cluster.x-k8s.io/v1beta2",
        "ClusterResourceSetBinding": "addons.cluster.x-k8s.io/v1beta2",
        "ExtensionConfig": "runtime.cluster.x-k8s.io/v1beta2",
        "IPAddressClaim": "ipam.cluster.x-k8s.io/v1beta2",
    }
    meta: dict[str, Any] = {"name": name, "labels": dict(labels)}
    if kind not in ("ManagedCluster", "ExtensionConfig"):
        meta["namespace"] = ns
    version = api_version or groups.get(kind, "cluster.x-k8s.io/v1beta2")
    return {"apiVersion": version, "kind": kind, "metadata": meta, "spec": {}}


class SourceEnv:
    """A fake API server, a recording sink and the kube sources started against them."""

    def __init__(self, api: FakeKubeAPI, kubeconfig: Path) -> None:
        self.api, self.kubeconfig = api, kubeconfig
        self.sink = RecordingSink()
        self.sources: list[KubeSource] = []
        self.namespaces: tuple[str, ...] = ()
        self.exclude: frozenset[str] = frozenset()
        self.loop_settings = FAST

    async def start_source(self, **config: Any) -> KubeSource:
        config.setdefault("discovery_interval", 0.1)
        config.setdefault("loop", self.loop_settings)
        self.namespaces = config.get("namespaces", ())
        self.exclude = config.get("exclude_kinds", frozenset())
        source = KubeSource(
            self.sink, KubeSourceConfig(kubeconfig=str(self.kubeconfig), **config), project=simple_project
        )
        await source.start()
        self.sources.append(source)
        return source

    def matches_server(self) -> bool:
        return self.sink.view() == server_view(self.api, self.namespaces, self.exclude)

    async def converged(self, source: KubeSource | None = None, timeout: float = 4.0) -> None:
        """Wait until the sink shows exactly the server's state (and ``source`` is synced)."""
        await eventually(
            lambda: (source is None or source.all_synced()) and self.matches_server(), timeout, "convergence"
        )
        await asyncio.sleep(0.05)  # and it stays so: no late, stale event undoes it
        assert self.sink.view() == server_view(self.api, self.namespaces, self.exclude)

    async def watching(self, kind: str, n: int = 1) -> None:
        """Wait until ``n`` watches of ``kind`` are open on the server."""
        await eventually(lambda: self.api.open_watches(kind) == n, what=f"{n} open {kind} watch(es)")

    async def close(self) -> None:
        for source in self.sources:
            await source.stop()
        await self.api.stop()


async def make_env(tmp_path: Path, **api_options: Any) -> SourceEnv:
    api_options.setdefault("max_watch_timeout", 5.0)
    api_options.setdefault("bookmark_interval", 0.1)
    api = FakeKubeAPI(**api_options)
    await api.start()
    return SourceEnv(api, api.write_kubeconfig(tmp_path))
