"""The fake Kubernetes API server (tests/kubeapi) follows the API semantics the kube source relies on."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.kubeapi import CAPI_TYPES, OCM_TYPES, FakeKubeAPI, handlers, load_manifests

MACHINES = "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns1/machines"
CLUSTERS = "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns1/clusters"


def machine(name: str, ns: str = "ns1", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "Machine",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"clusterName": "c1"},
    }


@pytest.fixture
async def api() -> AsyncIterator[FakeKubeAPI]:
    async with FakeKubeAPI() as server:
        server.install(*CAPI_TYPES, *OCM_TYPES)
        yield server


@pytest.fixture
async def http(api: FakeKubeAPI) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(api.url) as session:
        yield session


async def get(http: aiohttp.ClientSession, path: str, **params: Any) -> tuple[int, Any]:
    async with http.get(path, params={k: str(v) for k, v in params.items()}) as resp:
        return resp.status, await resp.json()


async def read_events(resp: aiohttp.ClientResponse, n: int, timeout: float = 2.0) -> list[dict[str, Any]]:
    out = []
    for _ in range(n):
        line = await asyncio.wait_for(resp.content.readline(), timeout)
        if not line:
            break
        out.append(json.loads(line))
    return out


async def test_discovery_follows_installed_crds(api: FakeKubeAPI, http: aiohttp.ClientSession) -> None:
    status, doc = await get(http, "/apis/cluster.x-k8s.io")
    assert status == 200
    assert doc["preferredVersion"]["version"] == "v1beta2"
    status, doc = await get(http, "/apis/cluster.x-k8s.io/v1beta1")
    kinds = {r["kind"]: r for r in doc["resources"] if "/" not in r["name"]}
    assert kinds["Machine"]["name"] == "machines" and kinds["Machine"]["namespaced"] is True
    _, doc = await get(http, "/apis/cluster.open-cluster-management.io/v1")
    assert {r["kind"]: r["namespaced"] for r in doc["resources"]}["ManagedCluster"] is False
    api.uninstall(group="work.open-cluster-management.io")
    assert (await get(http, "/apis/work.open-cluster-management.io"))[0] == 404
    _, doc = await get(http, "/apis")
    assert "work.open-cluster-management.io" not in {g["name"] for g in doc["groups"]}


async def test_list_pages_are_one_consistent_snapshot(api: FakeKubeAPI, http: aiohttp.ClientSession) -> None:
    for i in range(5):
        api.create(machine(f"m{i}"))
    status, page1 = await get(http, MACHINES, limit=2)
    assert status == 200 and [o["metadata"]["name"] for o in page1["items"]] == ["m0", "m1"]
    assert page1["metadata"]["remainingItemCount"] == 3
    assert page1["items"][0]["apiVersion"] == "cluster.x-k8s.io/v1beta2"  # served at the requested version
    api.delete("Machine", "ns1", "m3")  # after the first page: the list still shows the snapshot
    token = page1["metadata"]["continue"]
    _, page2 = await get(http, MACHINES, limit=2, **{"continue": token})
    _, page3 = await get(http, MACHINES, limit=2, **{"continue": page2["metadata"]["continue"]})
    names = [o["metadata"]["name"] for o in page2["items"] + page3["items"]]
    assert names == ["m2", "m3", "m4"] and "continue" not in page3["metadata"]
    assert page3["metadata"]["resourceVersion"] == page1["metadata"]["resourceVersion"]


async def test_continue_token_expires_with_410(api: FakeKubeAPI, http: aiohttp.ClientSession) -> None:
    for i in range(3):
        api.create(machine(f"m{i}"))
    _, page1 = await get(http, MACHINES, limit=1)
    api.expire_continue_tokens()
    status, body = await get(http, MACHINES, limit=1, **{"continue": page1["metadata"]["continue"]})
    assert status == 410 and body["kind"] == "Status" and body["reason"] == "Expired"


async def test_list_at_exact_resource_version(api: FakeKubeAPI, http: aiohttp.ClientSession) -> None:
    api.create(machine("a"))
    rv = api.store.rv
    api.create(machine("b"))
    api.delete("Machine", "ns1", "a")
    _, exact = await get(http, MACHINES, limit=10, resourceVersion=rv, resourceVersionMatch="Exact")
    assert [o["metadata"]["name"] for o in exact["items"]] == ["a"]
    _, newer = await get(http, MACHINES, resourceVersion=rv, resourceVersionMatch="NotOlderThan")
    assert [o["metadata"]["name"] for o in newer["items"]] == ["b"]
    assert (await get(http, MACHINES, resourceVersion=api.store.rv + 5))[0] == 504
    api.compact()
    assert (await get(http, MACHINES, limit=10, resourceVersion=rv, resourceVersionMatch="Exact"))[0] == 410


async def test_label_selectors(api: FakeKubeAPI, http: aiohttp.ClientSession) -> None:
    api.create(machine("a", role="cp", tier="x"))
    api.create(machine("b", role="worker"))
    api.create(machine("c"))

    async def names(selector: str) -> list[str]:
        _, body = await get(http, MACHINES, labelSelector=selector)
        return [o["metadata"]["name"] for o in body["items"]]

    assert await names("role=cp") == ["a"]
    assert await names("role!=cp") == ["b", "c"]
    assert await names("role") == ["a", "b"]
    assert await names("!role") == ["c"]
    assert await names("role in (cp,worker),tier") == ["a"]


async def test_watch_replays_history_then_streams_and_times_out(
    api: FakeKubeAPI, http: aiohttp.ClientSession
) -> None:
    api.create(machine("a"))
    _, listed = await get(http, MACHINES)
    api.create(machine("b"))
    params = {"watch": "true", "resourceVersion": listed["metadata"]["resourceVersion"]}
    params |= {"allowWatchBookmarks": "true", "timeoutSeconds": "1"}
    async with http.get(MACHINES, params=params) as resp:
        assert resp.status == 200
        (added,) = await read_events(resp, 1)
        assert added["type"] == "ADDED" and added["object"]["metadata"]["name"] == "b"
        api.update({**machine("b", role="x")})
        api.delete("Machine", "ns1", "a")
        api.bookmark()
        events = await read_events(resp, 3)
        assert [e["type"] for e in events] == ["MODIFIED", "DELETED", "BOOKMARK"]
        assert events[2]["object"]["metadata"]["resourceVersion"] == str(api.store.rv)
        rest = await read_events(resp, 5)  # the timeout ends the stream after a last bookmark
        assert [e["type"] for e in rest] == ["BOOKMARK"]


async def test_watch_selector_turns_label_changes_into_added_and_deleted(
    api: FakeKubeAPI, http: aiohttp.ClientSession
) -> None:
    params = {"watch": "1", "resourceVersion": str(api.store.rv), "labelSelector": "keep"}
    async with http.get(MACHINES, params=params) as resp:
        api.create(machine("a"))
        api.update(machine("a", keep="yes"))
        api.update(machine("a"))
        events = await read_events(resp, 2)
    assert [e["type"] for e in events] == ["ADDED", "DELETED"]


async def test_too_old_watch_is_410_as_http_or_in_stream(
    api: FakeKubeAPI, http: aiohttp.ClientSession
) -> None:
    api.create(machine("a"))
    old = api.store.rv
    api.create(machine("b"))
    api.compact()
    status, body = await get(http, MACHINES, watch="true", resourceVersion=old)
    assert status == 410 and body["code"] == 410
    api.expired_watch_as_event = True
    async with http.get(MACHINES, params={"watch": "true", "resourceVersion": str(old)}) as resp:
        assert resp.status == 200
        (err,) = await read_events(resp, 2)
    assert err["type"] == "ERROR" and err["object"]["code"] == 410


async def test_history_limit_expires_a_watch_once_its_own_resources_events_were_dropped() -> None:
    # A real API server keeps a watch cache per resource: a watch from an old version expires when
    # that resource's history no longer reaches back to it, however many other resources changed.
    async with FakeKubeAPI(history_limit=2) as api:
        api.install(*CAPI_TYPES)
        start = api.store.rv
        for i in range(4):
            api.create(machine(f"m{i}"))
        async with aiohttp.ClientSession(api.url) as http:
            assert (await get(http, MACHINES, watch="true", resourceVersion=start))[0] == 410
            params = {"watch": "true", "resourceVersion": str(api.store.rv - 2), "timeoutSeconds": "1"}
            async with http.get(MACHINES, params=params) as resp:
                assert len(await read_events(resp, 2)) == 2
            params = {"watch": "true", "resourceVersion": str(start), "timeoutSeconds": "1"}
            async with http.get(CLUSTERS, params=params) as resp:
                assert resp.status == 200
                assert await resp.read() == b""  # no ERROR event: nothing of Clusters was forgotten
            api.compact()  # compaction forgets every resource's history
            status, _ = await get(http, CLUSTERS, watch="true", resourceVersion=start)
            assert status == 410


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the fake's writes to its responses, in order."""
    sizes: list[int] = []
    write = web.StreamResponse.write

    async def counted(self: web.StreamResponse, data: Any) -> None:
        sizes.append(len(data))
        await write(self, data)

    monkeypatch.setattr(web.StreamResponse, "write", counted)
    return sizes


async def test_a_backlog_of_events_goes_out_in_one_write_before_the_stream_closes(
    api: FakeKubeAPI, http: aiohttp.ClientSession, writes: list[int]
) -> None:
    params = {"watch": "true", "resourceVersion": str(api.store.rv)}
    async with http.get(MACHINES, params=params) as resp:
        await asyncio.sleep(0.01)
        writes.clear()
        for i in range(20):
            api.create(machine(f"m{i}"))
        # Past 64 bits, which orjson refuses: the standard library's encoder writes it.
        api.update({**machine("m0"), "spec": {"clusterName": "c1", "replicas": 2**70}})
        api.close_watches()
        events = await read_events(resp, 22)
    assert [e["object"]["metadata"]["name"] for e in events] == [f"m{i}" for i in range(20)] + ["m0"]
    assert events[-1]["object"]["spec"]["replicas"] == 2**70
    assert len(writes) == 1


async def test_a_large_backlog_goes_out_as_it_is_encoded_not_after_the_last_event(
    api: FakeKubeAPI, http: aiohttp.ClientSession, writes: list[int]
) -> None:
    # A real server's watch handler encodes each event into its response writer, whose buffer
    # goes to the connection whenever it fills; only the flush waits for an empty channel. Held
    # back to the end, a burst of 10,000 benchmark Machines reached the client ~0.3 s late.
    params = {"watch": "true", "resourceVersion": str(api.store.rv)}
    padding = {"metadata": {"annotations": {"pad": "x" * 2000}}}
    async with http.get(MACHINES, params=params) as resp:
        await asyncio.sleep(0.01)
        writes.clear()
        for i in range(200):
            m = machine(f"m{i}")
            api.create({**m, "metadata": {**m["metadata"], **padding["metadata"]}})
        api.close_watches()
        events = await read_events(resp, 201)
    assert len(events) == 200
    assert sum(writes) > 400_000 and len(writes) > 1
    assert max(writes) <= handlers.WRITE_BYTES + 3000  # the bound, and the event that passed it


async def test_faults_errors_stalls_and_drops(api: FakeKubeAPI, http: aiohttp.ClientSession) -> None:
    api.fail("Machine", 429, verbs=["list"], times=1)
    status, body = await get(http, MACHINES)
    assert status == 429 and body["reason"] == "TooManyRequests"
    assert (await get(http, MACHINES))[0] == 200
    api.fail("machines", 403)
    assert (await get(http, MACHINES))[0] == 403
    api.clear_faults()
    params = {"watch": "true", "resourceVersion": str(api.store.rv)}
    async with http.get(MACHINES, params=params) as resp:
        await asyncio.sleep(0.01)
        assert api.stall_watches("Machine") == 1
        api.create(machine("a"))
        with pytest.raises(TimeoutError):
            await read_events(resp, 1, timeout=0.2)
        api.drop_watches()
        with pytest.raises(aiohttp.ClientError):
            await read_events(resp, 1)
    async with http.get(MACHINES, params=params) as resp:
        await asyncio.sleep(0.01)
        api.watch_error(500)
        events = await read_events(resp, 3)
    assert events[-1]["type"] == "ERROR" and events[-1]["object"]["code"] == 500


async def test_bookmarks_only_once_the_resources_cache_version_passes_the_watch_start() -> None:
    # A real API server's watch cache: a quiet resource watched from a list's (global) version gets
    # no bookmark, periodic or at the deadline, until a write to it or etcd's progress notification.
    async with FakeKubeAPI(bookmark_interval=0.05) as api:
        api.install(*CAPI_TYPES, *OCM_TYPES)
        api.create(machine("a"))
        api.create({"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
                    "metadata": {"name": "s1"}})  # moves the global version past every Machine
        async with aiohttp.ClientSession(api.url) as http:
            _, listed = await get(http, MACHINES)
            params = {"watch": "true", "resourceVersion": listed["metadata"]["resourceVersion"],
                      "allowWatchBookmarks": "true", "timeoutSeconds": "1"}
            async with http.get(MACHINES, params=params) as resp:
                assert await read_events(resp, 5) == []  # silence, then the deadline's clean end
            async with http.get(MACHINES, params=params) as resp:
                await asyncio.sleep(0.2)
                assert api.open_watches("Machine") == 1
                api.create({"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
                            "metadata": {"name": "s2"}})  # etcd moves on, the Machine cache does not
                with pytest.raises(TimeoutError):
                    await read_events(resp, 1, timeout=0.2)  # several bookmark periods: none
                api.progress_notify()
                (bookmark,) = await read_events(resp, 1)
                assert bookmark["type"] == "BOOKMARK"
                assert bookmark["object"]["metadata"]["resourceVersion"] == str(api.store.rv)
            # A write to the resource moves its cache too: bookmarks follow the event.
            params["resourceVersion"] = str(api.store.rv)
            async with http.get(MACHINES, params=params) as resp:
                api.create(machine("b"))
                events = await read_events(resp, 2)
        assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]


async def test_restart_answers_429_with_retry_after_while_the_cache_initialises(
    api: FakeKubeAPI, http: aiohttp.ClientSession
) -> None:
    api.create(machine("a"))
    params = {"watch": "true", "resourceVersion": str(api.store.rv), "timeoutSeconds": "5"}
    async with http.get(MACHINES, params=params) as resp:
        await asyncio.sleep(0.01)
        assert api.restart(initializing=0.3) == 1
        with pytest.raises(aiohttp.ClientError):
            await read_events(resp, 1)  # the restart cut the stream
    for verb_params in ({}, params):
        async with http.get(MACHINES, params=verb_params) as resp:
            assert resp.status == 429 and resp.headers["Retry-After"] == "1"
            assert (await resp.json())["message"] == "storage is (re)initializing"
    assert (await get(http, "/apis/cluster.x-k8s.io"))[0] == 200  # discovery is served meanwhile
    await asyncio.sleep(0.3)
    assert (await get(http, MACHINES))[0] == 200
    api.fail("Machine", 503, verbs=["watch"], times=1, retry_after=2)
    async with http.get(MACHINES, params=params) as resp:
        assert resp.status == 503 and resp.headers["Retry-After"] == "2"


async def test_down_and_up_on_the_same_port(api: FakeKubeAPI) -> None:
    port = api.port
    await api.stop()
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.ClientConnectionError):
            await http.get(f"http://127.0.0.1:{port}/apis")
        await api.start()
        assert api.port == port
        async with http.get(f"{api.url}/apis") as resp:
            assert resp.status == 200


async def test_http_writes_and_cluster_scoped_paths(api: FakeKubeAPI, http: aiohttp.ClientSession) -> None:
    mc = {"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster"}
    mc["metadata"] = {"name": "s1"}
    path = "/apis/cluster.open-cluster-management.io/v1/managedclusters"
    async with http.post(path, json=mc) as resp:
        assert resp.status == 201
    assert [o["metadata"]["name"] for o in (await get(http, path))[1]["items"]] == ["s1"]
    async with http.delete(f"{path}/s1") as resp:
        assert resp.status == 200
    assert api.objects("ManagedCluster") == []


def test_manifest_loading_handles_lists_and_multi_documents(tmp_path: Any) -> None:
    (tmp_path / "a.yaml").write_text(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: cluster.x-k8s.io/v1beta1\n  kind: Cluster\n"
        "  metadata: {name: c1, namespace: ns}\n---\n"
        "apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: FooMachinePool\n"
        "metadata: {name: p, namespace: ns}\n"
    )
    objects = load_manifests(tmp_path)
    assert [o["kind"] for o in objects] == ["Cluster", "FooMachinePool"]
    api = FakeKubeAPI()
    api.load(objects)
    assert api.resource("FooMachinePool").plural == "foomachinepools"
    assert api.resource("Cluster").versions == ("v1beta2", "v1beta1")


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WATCH_LIST = {"watch": "true", "sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan",
              "allowWatchBookmarks": "true", "timeoutSeconds": "5"}


async def test_every_installed_type_has_its_crd(api: FakeKubeAPI, http: aiohttp.ClientSession) -> None:
    # Clients that find custom resources through their CRDs (kube-state-metrics) list and watch them.
    status, listed = await get(http, CRDS)
    assert status == 200
    crds = {o["metadata"]["name"]: o for o in listed["items"]}
    machines = crds["machines.cluster.x-k8s.io"]
    assert machines["spec"]["group"] == "cluster.x-k8s.io" and machines["spec"]["scope"] == "Namespaced"
    assert (machines["spec"]["names"]["kind"], machines["spec"]["names"]["plural"]) == ("Machine", "machines")
    assert [(v["name"], v["served"], v["storage"]) for v in machines["spec"]["versions"]] == \
        [("v1beta2", True, True), ("v1beta1", True, False)]
    assert crds["managedclusters.cluster.open-cluster-management.io"]["spec"]["scope"] == "Cluster"
    status, doc = await get(http, "/apis/apiextensions.k8s.io/v1")
    assert status == 200 and "customresourcedefinitions" in {r["name"] for r in doc["resources"]}
    api.install(*CAPI_TYPES)  # unchanged: no write
    assert (await get(http, CRDS))[1]["metadata"]["resourceVersion"] == listed["metadata"]["resourceVersion"]
    params = {"watch": "true", "resourceVersion": listed["metadata"]["resourceVersion"]}
    async with http.get(CRDS, params=params) as resp:
        api.uninstall(group="work.open-cluster-management.io")
        events = await read_events(resp, 2)
    assert {(e["type"], e["object"]["metadata"]["name"]) for e in events} == {
        ("DELETED", "manifestworks.work.open-cluster-management.io"),
        ("DELETED", "manifestworkreplicasets.work.open-cluster-management.io"),
    }
    assert (await get(http, f"{CRDS}/machines.cluster.x-k8s.io"))[0] == 200


async def test_watch_list_sends_the_objects_then_the_bookmark_that_ends_them(
    api: FakeKubeAPI, http: aiohttp.ClientSession
) -> None:
    # client-go's informers open with a watch-list (sendInitialEvents) since Kubernetes 1.35.
    for name in ("a", "b"):
        api.create(machine(name))
    current = api.store.rv
    async with http.get(MACHINES, params=WATCH_LIST) as resp:
        assert resp.status == 200
        events = await read_events(resp, 3)
        api.create(machine("c"))
        (later,) = await read_events(resp, 1)
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in events] == \
        [("ADDED", "a"), ("ADDED", "b"), ("BOOKMARK", None)]
    end = events[2]["object"]
    assert end["metadata"] == {"resourceVersion": str(current),
                               "annotations": {"k8s.io/initial-events-end": "true"}}
    assert end["kind"] == "Machine" and end["apiVersion"] == "cluster.x-k8s.io/v1beta2"
    assert later["type"] == "ADDED" and later["object"]["metadata"]["name"] == "c"
    # sendInitialEvents=false from no version: only what happens next.
    quiet = {**WATCH_LIST, "sendInitialEvents": "false"}
    async with http.get(MACHINES, params=quiet) as resp:
        api.create(machine("d"))
        (first,) = await read_events(resp, 1)
    assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "d"


async def test_watch_list_options_are_validated_as_a_real_server_does(
    api: FakeKubeAPI, http: aiohttp.ClientSession
) -> None:
    without_match = {k: v for k, v in WATCH_LIST.items() if k != "resourceVersionMatch"}
    status, body = await get(http, MACHINES, **without_match)
    assert status == 422 and body["reason"] == "Invalid"
    assert "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan" in body["message"]
    only_match = {"watch": "true", "resourceVersionMatch": "NotOlderThan"}
    status, body = await get(http, MACHINES, **only_match)
    assert status == 422 and "forbidden for watch unless sendInitialEvents is provided" in body["message"]
    status, body = await get(http, MACHINES, **{**WATCH_LIST, "resourceVersion": str(api.store.rv + 5)})
    assert status == 504 and body["message"].startswith("Too large resource version")
