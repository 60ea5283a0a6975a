"""The kube source against a real kube-apiserver: live changes, quiet watches, CRDs that come and
go or change their served versions, etcd compaction, API server restarts.

The source runs in-process (``KubeSource`` with a recording sink and timings shrunk as in the
fake-server tests); the server is real. One scenario also runs against the fake API server of
``tests/kubeapi``, and both must end in the same state having seen the same events.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from exporter.sources.kube import KubeSource, KubeSourceConfig, LoopSettings
from tests.kubeapi import CAPI_TYPES, OCM_TYPES, FakeKubeAPI
from tests.kubeapi.fixtures import FAST, RecordingSink, eventually, make_env, simple_project
from tests.realcluster import eras
from tests.realcluster.cluster import Obj, RealCluster

pytestmark = pytest.mark.realcluster

CLUSTERS = "clusters.cluster.x-k8s.io"
MANAGED = "managedclusters.cluster.open-cluster-management.io"
MANAGED_CRD = "managedclusters.cluster.open-cluster-management.io"
REAL = dataclasses.replace(FAST, page_size=500, request_timeout=10.0)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    with RealCluster(tmp_path_factory.mktemp("watch") / "cluster") as c:
        c.install_crds(eras.era("v1beta2").crd_files())
        yield c


def capi_cluster(name: str, ns: str = "ns1") -> Obj:
    return {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": name, "namespace": ns}, "spec": {"paused": False}}


def managed_cluster(name: str) -> Obj:
    return {"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
            "metadata": {"name": name}, "spec": {"hubAcceptsClient": True}}


class Real:
    """A source of the package against the real server, and what the server holds."""

    def __init__(self, cluster: RealCluster, tmp: Path) -> None:
        self.cluster = cluster
        self.sink = RecordingSink()
        self.kubeconfig = cluster.admin_kubeconfig(tmp / "kubeconfig")
        self.sources: list[KubeSource] = []

    async def start(self, loop: LoopSettings = REAL, **config: Any) -> KubeSource:
        config.setdefault("discovery_interval", 0.5)
        source = KubeSource(self.sink, KubeSourceConfig(kubeconfig=str(self.kubeconfig), loop=loop, **config),
                            project=simple_project)
        await source.start()
        self.sources.append(source)
        await eventually(source.all_synced, 30, "first sync")
        return source

    def server_view(self, kind: str, api_version: str = "") -> dict[tuple[str, str, str], str]:
        api_version = api_version or {"Cluster": "cluster.x-k8s.io/v1beta2",
                                      "ManagedCluster": "cluster.open-cluster-management.io/v1"}[kind]
        objects = [o["metadata"] for o in self.cluster.list(api_version, kind)]
        return {(kind, m.get("namespace", ""), m["name"]): m["resourceVersion"] for m in objects}

    def sink_view(self, kind: str) -> dict[tuple[str, str, str], str]:
        return {k: v for k, v in self.sink.view().items() if k[0] == kind}

    async def converged(self, kind: str, timeout: float = 10, api_version: str = "") -> None:
        await eventually(lambda: self.sink_view(kind) == self.server_view(kind, api_version), timeout,
                         f"{kind} converged")

    async def close(self) -> None:
        for source in self.sources:
            await source.stop()


@pytest.fixture
async def real(cluster: RealCluster, tmp_path: Path) -> AsyncIterator[Real]:
    r = Real(cluster, tmp_path)
    yield r
    await r.close()
    for kind, api_version in (("Cluster", "cluster.x-k8s.io/v1beta2"),
                              ("ManagedCluster", "cluster.open-cluster-management.io/v1")):
        try:
            for o in cluster.list(api_version, kind):
                cluster.delete(api_version, kind, o["metadata"].get("namespace"), o["metadata"]["name"])
        except Exception:  # the CRD may be gone: the test that removed it installs it again
            pass


def warnings_from(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name.startswith("exporter.sources") and r.levelno >= logging.WARNING]


# ---- one scenario, two servers ----

async def live_scenario(create: Callable[[Obj], Any], update_labels: Callable[[str, dict[str, str]], Any],
                        delete: Callable[[str], Any], converged: Callable[[], Any]) -> None:
    for i in range(3):
        create(capi_cluster(f"c{i}"))
    await converged()
    create(capi_cluster("c9"))
    update_labels("c1", {"tier": "gold"})
    delete("c0")
    await converged()


async def test_the_same_changes_reach_the_sink_alike_from_the_fake_and_the_real_server(
    real: Real, tmp_path: Path
) -> None:
    c = real.cluster
    source = await real.start()
    await live_scenario(
        c.create,
        lambda name, labels: c.patch("cluster.x-k8s.io/v1beta2", "Cluster", "ns1", name,
                                     {"metadata": {"labels": labels}}),
        lambda name: c.delete("cluster.x-k8s.io/v1beta2", "Cluster", "ns1", name),
        lambda: real.converged("Cluster"),
    )
    real_stats = source.stats.resources[CLUSTERS]

    env = await make_env(tmp_path / "fake")
    try:
        env.api.install(*CAPI_TYPES, *OCM_TYPES)
        fake_source = await env.start_source()
        await eventually(fake_source.all_synced, 10, "first sync from the fake")

        def fake_update(name: str, labels: dict[str, str]) -> None:
            current = next(o for o in env.api.objects("Cluster") if o["metadata"]["name"] == name)
            env.api.update({**current, "metadata": {**current["metadata"], "labels": labels}})

        await live_scenario(env.api.create, fake_update, lambda n: env.api.delete("Cluster", "ns1", n),
                            lambda: env.converged(fake_source))
        fake_stats = fake_source.stats.resources[CLUSTERS]
        assert {k[1:] for k in env.sink.view() if k[0] == "Cluster"} == \
            {k[1:] for k in real.sink_view("Cluster")} == {("ns1", "c1"), ("ns1", "c2"), ("ns1", "c9")}
        changes = ("ADDED", "MODIFIED", "DELETED")
        def counts(stats: Any) -> dict[str, int]:
            return {t: stats.events.get(t, 0) for t in changes}

        assert counts(fake_stats) == counts(real_stats)
        assert fake_stats.relists == real_stats.relists == {}
    finally:
        await env.close()


async def test_a_watch_list_and_the_crds_read_alike_from_the_fake_and_the_real_server(real: Real) -> None:
    # What client-go's informers (kube-state-metrics') ask first: the CRDs, and a watch-list
    # (sendInitialEvents) of each kind, ended by a bookmark annotated k8s.io/initial-events-end.
    c = real.cluster
    for name in ("w1", "w2"):
        c.create(capi_cluster(name))
    path = "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns1/clusters"
    params = {"watch": "true", "sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan",
              "allowWatchBookmarks": "true", "timeoutSeconds": "1"}
    invalid = ({k: v for k, v in params.items() if k != "resourceVersionMatch"},
               {"watch": "true", "resourceVersionMatch": "NotOlderThan", "timeoutSeconds": "1"})
    crd_path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CLUSTERS}"

    def shape(events: list[Obj]) -> list[tuple[Any, ...]]:
        # The fake keeps no managedFields: the objects' metadata is compared by name only.
        return [(e["type"], e["object"]["metadata"].get("name"), e["object"]["metadata"].get("annotations"),
                 sorted(e["object"]["metadata"]) if e["type"] == "BOOKMARK" else None) for e in events]

    def crd_shape(crd: Obj) -> tuple[Any, ...]:
        spec = crd["spec"]
        return (spec["group"], spec["names"]["kind"], spec["names"]["plural"], spec["scope"],
                sorted(v["name"] for v in spec["versions"] if v["served"]))

    status, real_events = c.watch(path, params)
    real_invalid = [c.watch(path, p) for p in invalid]
    real_crd = crd_shape(c.request("GET", crd_path))
    async with FakeKubeAPI() as api, aiohttp.ClientSession(api.url) as http:
        api.install(*CAPI_TYPES)
        for name in ("w1", "w2"):
            api.create(capi_cluster(name))

        async def fake_watch(p: dict[str, str]) -> tuple[int, list[Obj]]:
            async with http.get(path, params=p) as resp:
                body = await resp.read()
            return resp.status, [json.loads(line) for line in body.splitlines() if line.strip()]

        fake_status, fake_events = await fake_watch(params)
        fake_invalid = [await fake_watch(p) for p in invalid]
        async with http.get(crd_path) as resp:
            fake_crd = crd_shape(await resp.json())
    assert status == fake_status == 200
    assert shape(fake_events) == shape(real_events)
    assert [e["type"] for e in real_events] == ["ADDED", "ADDED", "BOOKMARK"]
    assert real_events[-1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    for (real_code, (real_body,)), (fake_code, (fake_body,)) in zip(real_invalid, fake_invalid, strict=True):
        assert fake_code == real_code == 422
        assert (fake_body["reason"], fake_body["message"]) == (real_body["reason"], real_body["message"])
    assert fake_crd == real_crd


async def test_changes_are_followed_within_a_second(real: Real) -> None:
    c = real.cluster
    await real.start()
    for change in (
        lambda: c.create(capi_cluster("fast")),
        lambda: c.patch("cluster.x-k8s.io/v1beta2", "Cluster", "ns1", "fast", {"spec": {"paused": True}}),
        lambda: c.patch("cluster.x-k8s.io/v1beta2", "Cluster", "ns1", "fast",
                        {"status": {"phase": "Provisioned"}}, subresource="status"),
        lambda: c.delete("cluster.x-k8s.io/v1beta2", "Cluster", "ns1", "fast"),
    ):
        change()
        await real.converged("Cluster", timeout=1.0)


# ---- quiet watches ----

async def test_a_quiet_resource_is_rewatched_at_the_server_deadline_without_relists_or_warnings(
    real: Real, caplog: pytest.LogCaptureFixture
) -> None:
    """Nobody writes ManagedClusters: the real server sends no bookmark (etcd's progress
    notification comes every 10 minutes), and the watch stays open until its timeoutSeconds. Its
    watch cache is the ManagedClusters' own: Clusters changing meanwhile do not expire it (what
    the fake's history must model too)."""
    caplog.set_level(logging.DEBUG, logger="exporter.sources")
    real.cluster.create(managed_cluster("quiet"))
    # Scaled down from the defaults (watches of 5-10 minutes, bookmarks only with writes).
    loop = dataclasses.replace(REAL, watch_timeout=(3.0, 3.0), watch_grace=1.0)
    source = await real.start(loop)
    for i in range(20):
        real.cluster.create(capi_cluster(f"busy{i}"))
    await asyncio.sleep(12)
    stats = source.stats.resources[MANAGED]
    assert stats.relists == {}
    assert stats.watch_ends.get("inactivity", 0) == 0
    assert 3 <= stats.watch_requests.get("success", 0) <= 6  # one per 3 s deadline, no storm
    assert stats.events.get("BOOKMARK", 0) == 0  # what the fake must model too
    assert not warnings_from(caplog)
    assert real.sink_view("ManagedCluster") == real.server_view("ManagedCluster")


# ---- CRDs ----

async def test_a_crd_deleted_and_created_again(real: Real) -> None:
    c = real.cluster
    c.create(managed_cluster("before"))
    source = await real.start()
    await real.converged("ManagedCluster")
    crd = c.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{MANAGED_CRD}")
    c.delete_crd(MANAGED_CRD)
    await eventually(lambda: not real.sink_view("ManagedCluster"), 10, "ManagedClusters dropped")
    del crd["metadata"]["resourceVersion"], crd["metadata"]["uid"], crd["status"]
    c.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    listing = "/apis/cluster.open-cluster-management.io/v1/managedclusters"
    await eventually(
        lambda: c.request("GET", listing, ok=(200, 404, 429, 503)).get("kind") == "ManagedClusterList",
        30, "served again")
    c.create(managed_cluster("after"))
    await real.converged("ManagedCluster", timeout=20)
    assert set(real.sink_view("ManagedCluster")) == {("ManagedCluster", "", "after")}
    await eventually(source.all_synced, 20, "ready again")


async def test_a_kind_whose_served_versions_change(real: Real) -> None:
    c = real.cluster
    c.create(capi_cluster("versioned"))
    source = await real.start()
    await real.converged("Cluster")
    assert source.stats.resources[CLUSTERS].version == "v1beta2"
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/clusters.cluster.x-k8s.io"

    def serve_v1beta2(served: bool) -> None:
        crd = c.request("GET", path)
        for v in crd["spec"]["versions"]:
            if v["name"] == "v1beta2":
                v["served"] = served
        c.request("PUT", path, crd)

    serve_v1beta2(False)
    try:
        await eventually(lambda: source.stats.resources[CLUSTERS].version == "v1beta1"
                         and source.all_synced(), 30, "switched to v1beta1")
        c.create({**capi_cluster("while-v1beta1"), "apiVersion": "cluster.x-k8s.io/v1beta1"})
        await real.converged("Cluster", api_version="cluster.x-k8s.io/v1beta1")
    finally:
        serve_v1beta2(True)
    await eventually(lambda: source.stats.resources[CLUSTERS].version == "v1beta2"
                     and source.all_synced(), 30, "back on v1beta2")
    await real.converged("Cluster")


# ---- etcd compaction and API server restarts ----

async def test_a_restart_after_etcd_compaction_relists_once_and_catches_up(real: Real) -> None:
    c = real.cluster
    c.create(capi_cluster("old"))
    source = await real.start()
    await real.converged("Cluster")
    for i in range(5):  # others write: the cluster watch's version falls behind etcd's
        c.create(managed_cluster(f"busy{i}"))
    c.compact_etcd()
    c.stop_apiserver()
    c.start_apiserver()
    c.create(capi_cluster("new"))
    await real.converged("Cluster", timeout=20)
    assert source.stats.resources[CLUSTERS].relists.get("expired", 0) >= 1


async def test_an_api_server_restart_is_caught_up_within_seconds(real: Real) -> None:
    """While its cache initialises the restarted server answers 429 with Retry-After: 1; the
    source waits that second, not a backoff step (0.8 s doubling up to 30 s)."""
    c = real.cluster
    c.create(capi_cluster("steady"))
    loop = dataclasses.replace(REAL, backoff_initial=0.8, backoff_max=30.0, unready_after=3.0)
    source = await real.start(loop)
    await real.converged("Cluster")
    c.stop_apiserver()
    await eventually(lambda: not source.readiness()[0], 10, "unready while the API server is down")
    c.start_apiserver()
    c.create(capi_cluster("after-restart"))
    # Caught up within 5 s of the API server being ready: the backoff has not grown past that.
    await real.converged("Cluster", timeout=5.0)
    await eventually(source.all_synced, 10, "ready again")
