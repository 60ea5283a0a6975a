"""The kube source against the fake API server over loopback HTTP: sync, live changes, discovery.

After every scenario the sink holds exactly what the server holds (within the watched scope).
Fault scenarios (410, outages, stalls, error statuses) are in test_kube_source_faults.py.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from exporter.sources.discovery import BOOTSTRAP_GROUP, INFRA_GROUP, WATCHED
from exporter.sources.kube import KubeSource, KubeSourceConfig
from tests.kubeapi import CAPI_TYPES, INFRA_TYPES, OCM_TYPES, ResourceType, load_manifests
from tests.kubeapi.fixtures import FAST, INVALID_LABEL, MWRS_LABEL, SourceEnv, eventually, make_env, obj


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[SourceEnv]:
    e = await make_env(tmp_path)
    e.api.install(*CAPI_TYPES, *OCM_TYPES)
    yield e
    await e.close()


def small_fleet(env: SourceEnv) -> None:
    api = env.api
    api.create(obj("Cluster", "c1"))
    for i in range(5):  # more than one page at page_size=2
        api.create(obj("Machine", f"m{i}"))
    api.create(obj("KubeadmControlPlane", "c1-cp"))
    api.create(obj("ManifestWorkReplicaSet", "mwrs"))
    api.create(obj("ManifestWork", "owned", ns="spoke1", **{MWRS_LABEL: "ns1.mwrs"}))
    api.create(obj("ManifestWork", "not-owned", ns="spoke1"))
    api.create(obj("ManagedCluster", "spoke1"))
    api.create(obj("Placement", "all"))


async def test_initial_sync_lists_in_pages_then_watches_from_the_list_version(env: SourceEnv) -> None:
    small_fleet(env)
    source = await env.start_source()
    await env.converged(source)
    assert ("ManifestWork", "spoke1", "not-owned") not in env.sink.objects  # label selector applied
    lists = [r for r in env.api.requests if r.verb == "list" and r.kind == "Machine"]
    assert [r.params.get("limit") for r in lists] == ["2", "2", "2"]
    assert "continue" in lists[1].params and "resourceVersion" not in lists[0].params
    watch = next(r for r in env.api.requests if r.verb == "watch" and r.kind == "Machine")
    assert watch.params["allowWatchBookmarks"] == "true" and watch.params["timeoutSeconds"] == "1"
    newest_machine = max(int(m["metadata"]["resourceVersion"]) for m in env.api.objects("Machine"))
    assert int(watch.params["resourceVersion"]) >= newest_machine
    mw = next(r for r in env.api.requests if r.verb == "list" and r.kind == "ManifestWork")
    assert mw.params["labelSelector"] == MWRS_LABEL
    stats = source.stats.resources["machines.cluster.x-k8s.io"]
    assert stats.synced and stats.object_count == 5 and stats.version == "v1beta2"
    assert source.synced["managedclusters.cluster.open-cluster-management.io"] is True
    # one atomic replace per resource, not one call per object
    assert ("replace", ("Machine", None, 5)) in env.sink.calls
    assert not any(c == ("upsert", ("Machine", "ns1", "m0")) for c in env.sink.calls)


async def test_managed_cluster_addons_are_discovered_listed_and_watched(env: SourceEnv) -> None:
    small_fleet(env)
    env.api.create(obj("ManagedClusterAddOn", "cluster-proxy", ns="spoke1"))
    source = await env.start_source()
    await env.converged(source)
    assert source.synced["managedclusteraddons.addon.open-cluster-management.io"] is True
    assert ("ManagedClusterAddOn", "spoke1", "cluster-proxy") in env.sink.objects
    listed = next(r for r in env.api.requests if r.verb == "list" and r.kind == "ManagedClusterAddOn")
    assert "labelSelector" not in listed.params  # every add-on, on every cluster
    env.api.create(obj("ManagedClusterAddOn", "application-manager", ns="spoke1"))
    env.api.delete("ManagedClusterAddOn", "spoke1", "cluster-proxy")
    await env.converged(source)
    assert ("ManagedClusterAddOn", "spoke1", "application-manager") in env.sink.objects
    assert ("ManagedClusterAddOn", "spoke1", "cluster-proxy") not in env.sink.objects


async def test_live_adds_updates_and_deletes(env: SourceEnv) -> None:
    small_fleet(env)
    source = await env.start_source()
    await env.converged(source)
    api = env.api
    api.create(obj("Machine", "m9"))
    api.update(obj("Cluster", "c1", extra="1"))
    api.delete("Machine", "ns1", "m0")
    api.delete("ManagedCluster", "", "spoke1")
    api.update(obj("ManifestWork", "owned", ns="spoke1"))  # label removed: leaves the selector
    api.update(obj("ManifestWork", "not-owned", ns="spoke1", **{MWRS_LABEL: "ns1.mwrs"}))  # enters it
    await env.converged(source)
    assert ("ManifestWork", "spoke1", "owned") not in env.sink.objects
    events = source.stats.resources["machines.cluster.x-k8s.io"].events
    assert events["ADDED"] >= 1 and events["DELETED"] >= 1
    assert source.stats.resources["machines.cluster.x-k8s.io"].last_event_time is not None


async def test_server_timeouts_rewatch_without_relisting(env: SourceEnv) -> None:
    env.api.max_watch_timeout = 0.2
    small_fleet(env)
    source = await env.start_source()
    await env.converged(source)
    await eventually(lambda: env.api.count("watch", "Machine") >= 3, what="watches re-opened")
    env.api.create(obj("Machine", "late"))
    await env.converged(source)
    assert env.api.count("list", "Machine") == 3  # the three pages of the only list
    assert source.stats.resources["machines.cluster.x-k8s.io"].watch_ends["timeout"] >= 2


async def test_quiet_resources_rewatch_at_the_server_deadline_silently(
    env: SourceEnv, caplog: pytest.LogCaptureFixture
) -> None:
    # Nobody writes Machines: the API server sends their watches no bookmark (its cache version
    # never passes the list's), so each watch is silent until its timeoutSeconds (1 s here).
    small_fleet(env)
    source = await env.start_source()
    await env.converged(source)
    lists, watches = env.api.count("list", "Machine"), env.api.count("watch", "Machine")
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="exporter.sources"):
        await asyncio.sleep(3.5)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert env.api.count("list", "Machine") == lists  # no relist
    rewatches = [r for r in env.api.requests if r.verb == "watch" and r.kind == "Machine"][watches:]
    assert 3 <= len(rewatches) <= 4  # one per server deadline, not more often
    assert {r.params["resourceVersion"] for r in rewatches} == {rewatches[0].params["resourceVersion"]}
    stats = source.stats.resources["machines.cluster.x-k8s.io"]
    assert stats.watch_ends["timeout"] >= 3 and "stuck" not in stats.watch_ends
    assert "BOOKMARK" not in stats.events
    assert source.readiness()[0]
    await env.converged(source)  # data still served
    env.api.create(obj("Machine", "late"))
    await env.converged(source)


async def test_a_quiet_resource_is_not_relisted_when_other_resources_fill_the_history(tmp_path: Path) -> None:
    # The API server keeps a history per resource (a watch cache each): however many Clusters
    # change, the Machines' history still reaches back to their list, and they re-watch from it.
    env = await make_env(tmp_path, history_limit=5)
    try:
        env.api.install(*CAPI_TYPES, *OCM_TYPES)
        small_fleet(env)
        source = await env.start_source()
        await env.converged(source)
        lists, watches = env.api.count("list", "Machine"), env.api.count("watch", "Machine")
        for i in range(20):
            env.api.create(obj("Cluster", f"busy{i}"))
        await eventually(lambda: env.api.count("watch", "Machine") >= watches + 2, what="Machines re-watched")
        await env.converged(source)
        assert env.api.count("list", "Machine") == lists
        assert source.stats.resources["machines.cluster.x-k8s.io"].relists == {}
    finally:
        await env.close()


async def test_namespace_scoping_replaces_only_its_namespace(env: SourceEnv) -> None:
    for ns in ("ns1", "ns2", "other"):
        env.api.create(obj("Machine", "m", ns=ns))
    env.api.create(obj("ManagedCluster", "spoke1"))
    source = await env.start_source(namespaces=("ns1", "ns2"))
    await env.converged(source)
    assert ("Machine", "other", "m") not in env.sink.objects
    assert ("ManagedCluster", "", "spoke1") in env.sink.objects  # cluster scoped: still watched
    paths = {r.namespace for r in env.api.requests if r.kind == "Machine"}
    assert paths == {"ns1", "ns2"}
    env.api.delete("Machine", "ns1", "m")
    env.api.create(obj("Machine", "n", ns="ns2"))
    env.api.watch_error(410, "Machine")  # both namespaces relist, each replacing only its own
    await env.converged(source)
    assert source.stats.resources["machines.cluster.x-k8s.io"].relists["expired"] == 2


async def test_prefers_v1beta2_and_falls_back_to_v1beta1(tmp_path: Path) -> None:
    e = await make_env(tmp_path)
    try:
        old = [ResourceType(t.group, t.kind, t.plural, ("v1beta1",), t.namespaced) for t in CAPI_TYPES]
        e.api.install(*old)
        e.api.create(obj("Cluster", "c1", api_version="cluster.x-k8s.io/v1beta1"))
        source = await e.start_source()
        await e.converged(source)
        assert e.sink.objects[("Cluster", "ns1", "c1")].meta.api_version == "cluster.x-k8s.io/v1beta1"
        e.api.install(*CAPI_TYPES)  # upgrade: v1beta2 now served too
        await eventually(lambda: source.stats.resources["clusters.cluster.x-k8s.io"].version == "v1beta2")
        await eventually(
            lambda: e.sink.objects[("Cluster", "ns1", "c1")].meta.api_version == "cluster.x-k8s.io/v1beta2"
        )
    finally:
        await e.close()


async def test_infra_machine_pools_are_found_from_machine_pool_references(env: SourceEnv) -> None:
    env.api.install(*INFRA_TYPES)
    infra = "infrastructure.cluster.x-k8s.io"
    refs = {
        "mp1": {"apiGroup": infra, "kind": "DockerMachinePool"},
        "mp2": {"apiVersion": f"{infra}/v1beta1", "kind": "AzureMachinePool"},  # v1beta1 style; opted out
    }
    for name, ref in refs.items():
        pool = obj("MachinePool", name)
        pool["spec"] = {"template": {"spec": {"infrastructureRef": {**ref, "name": name}}}}
        env.api.create(pool)
    env.api.create(obj("DockerMachinePool", "mp1"))
    env.api.create(obj("AzureMachinePool", "mp2", api_version=f"{infra}/v1beta1"))
    source = await env.start_source(exclude_kinds=frozenset({"AzureMachinePool"}))
    await eventually(lambda: ("DockerMachinePool", "ns1", "mp1") in env.sink.objects)
    await env.converged(source)
    assert source.synced["dockermachinepools.infrastructure.cluster.x-k8s.io"] is True
    assert not any(r.kind == "AzureMachinePool" for r in env.api.requests)


async def test_unreadable_objects_are_counted_once_and_kept_out(env: SourceEnv) -> None:
    env.api.create(obj("Machine", "bad", **{INVALID_LABEL: "x"}))
    env.api.create(obj("Machine", "good"))
    source = await env.start_source()
    await env.converged(source)
    env.api.update(obj("Machine", "bad", **{INVALID_LABEL: "y"}))
    env.api.create(obj("Machine", "bad2", **{INVALID_LABEL: "x"}))
    await eventually(lambda: source.stats.resources["machines.cluster.x-k8s.io"].invalid_objects == 2)
    await env.converged(source)
    stats = source.stats.resources["machines.cluster.x-k8s.io"]
    assert stats.invalid_objects == 2 and stats.object_count == 3  # seen, even if unreadable



async def test_the_unreadable_count_follows_objects_fixed_deleted_and_broken_again(
    env: SourceEnv, caplog: pytest.LogCaptureFixture
) -> None:
    """The gauge is of the objects present and unreadable now, and nothing is kept for an object
    once it is gone or read fine: one broken again is counted and logged again; one still broken
    across a relist is logged once."""
    caplog.set_level(logging.WARNING, logger="exporter")
    env.api.create(obj("Machine", "bad", **{INVALID_LABEL: "x"}))
    env.api.create(obj("Machine", "bad2", **{INVALID_LABEL: "x"}))
    env.api.create(obj("Machine", "good"))
    source = await env.start_source()
    await env.converged(source)
    stats = source.stats.resources["machines.cluster.x-k8s.io"]
    assert (stats.invalid_objects, stats.object_count) == (2, 3)

    await env.api.stop()  # a change behind compacted history: the relist finds both still unreadable
    env.api.update(obj("Machine", "good", changed="yes"))
    env.api.compact()
    await env.api.start()
    await env.converged(source)
    assert stats.relists["expired"] == 1
    assert stats.invalid_objects == 2

    env.api.update(obj("Machine", "bad"))  # fixed
    env.api.delete("Machine", "ns1", "bad2")
    await eventually(lambda: ("Machine", "ns1", "bad") in env.sink.objects)
    await eventually(lambda: stats.invalid_objects == 0)
    assert stats.object_count == 2

    env.api.update(obj("Machine", "bad", **{INVALID_LABEL: "y"}))  # broken again
    await eventually(lambda: stats.invalid_objects == 1)
    await env.converged(source)
    assert ("Machine", "ns1", "bad") not in env.sink.objects and stats.object_count == 2
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("skipping unreadable")]
    assert sum("ns1/bad " in m for m in logged) == 2, logged
    assert sum("ns1/bad2 " in m for m in logged) == 1, logged

async def test_excluded_kinds_are_not_requested(env: SourceEnv) -> None:
    small_fleet(env)
    source = await env.start_source(exclude_kinds=frozenset({"ManifestWork", "Placement"}))
    await env.converged(source)
    assert not any(r.kind in ("ManifestWork", "Placement") for r in env.api.requests)


async def test_real_projection_into_the_real_store(env: SourceEnv) -> None:
    store_mod = pytest.importorskip("exporter.store")
    store = store_mod.Store()
    cluster = obj("Cluster", "c1")
    cp_ref = {"apiGroup": "controlplane.cluster.x-k8s.io", "kind": "KubeadmControlPlane", "name": "c1-cp"}
    cluster["spec"] = {"controlPlaneRef": cp_ref}
    env.api.create(cluster)
    machine = obj("Machine", "m1", **{"cluster.x-k8s.io/cluster-name": "c1"})
    machine["spec"] = {"clusterName": "c1"}
    env.api.create(machine)
    source = KubeSource(store, KubeSourceConfig(kubeconfig=str(env.kubeconfig), loop=FAST))
    await source.start()
    try:
        await eventually(source.all_synced)
        await eventually(lambda: store.get(("Machine", "ns1", "m1")) is not None)
        assert store.get(("Cluster", "ns1", "c1")).meta.api_version == "cluster.x-k8s.io/v1beta2"
        env.api.delete("Machine", "ns1", "m1")
        await eventually(lambda: store.get(("Machine", "ns1", "m1")) is None)
    finally:
        await source.stop()


async def test_example_fleet_through_the_fake_api(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parent.parent / "examples"
    if not examples.is_dir():
        pytest.skip("no examples/ directory")
    from exporter.engine.parse import project
    from exporter.store import Store

    e = await make_env(tmp_path)
    store = Store()
    source = KubeSource(store, KubeSourceConfig(kubeconfig=str(e.kubeconfig), loop=FAST))
    try:
        e.api.load(load_manifests(examples))
        # Provider kinds (AWSMachinePool, AWSMachine, KubeadmConfig, ...): the referenced ones
        providers = {t.kind for t in e.api.resources.values() if t.group in (INFRA_GROUP, BOOTSTRAP_GROUP)}
        watched = {s.kind for s in WATCHED} | providers
        expected = set()
        for raw in e.api.objects():
            owned = MWRS_LABEL in (raw["metadata"].get("labels") or {})
            if raw["kind"] not in watched or (raw["kind"] == "ManifestWork" and not owned):
                continue
            if (p := project(raw)) is not None:
                expected.add(p.key)
        assert len(expected) > 50
        await source.start()
        await eventually(lambda: source.all_synced() and all(store.get(k) is not None for k in expected))
        assert len(store) == len(expected)
    finally:
        await source.stop()
        await e.close()


async def test_large_objects_arrive_through_the_watch(env: SourceEnv) -> None:
    # Objects may reach the API server's limit (1.5 MiB by default; managedFields and
    # last-applied annotations make them big): far more than an HTTP client's line buffer.
    small_fleet(env)
    source = await env.start_source()
    await env.converged(source)
    big = obj("Machine", "big")
    big["metadata"]["annotations"] = {"example.com/blob": "x" * (1536 << 10)}
    env.api.create(big)
    env.api.create(obj("Machine", "after-big"))
    await env.converged(source)
    stats = source.stats.resources["machines.cluster.x-k8s.io"]
    assert stats.events["ADDED"] == 2
    assert stats.watch_ends.get("dropped", 0) == 0
