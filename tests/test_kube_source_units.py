"""Pieces of the kube source on their own: backoff, discovery resolution, MachinePool references, config."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from exporter.sources import discovery
from exporter.sources.discovery import (
    BOOTSTRAP_GROUP,
    INFRA_GROUP,
    Resource,
    ResourceSpec,
    provider_refs,
    resolve,
)
from exporter.sources.informer import Backoff, LoopSettings, ResourceLoop, WatchStats
from exporter.sources.kube import KubeSourceConfig, connect
from tests.kubeapi import FakeKubeAPI
from tests.kubeapi.fixtures import RecordingSink, obj, simple_project


def test_backoff_doubles_with_jitter_caps_and_resets(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr("exporter.sources.informer.time.monotonic", lambda: now[0])
    settings = LoopSettings(backoff_initial=0.8, backoff_factor=2.0, backoff_max=30.0, backoff_jitter=1.0,
                            backoff_reset_after=120.0)
    rand = iter([0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.99, 0.0])
    b = Backoff(settings, lambda: next(rand))
    assert [b.next_delay() for _ in range(2)] == [0.8, 1.6]
    assert b.next_delay() == pytest.approx(3.2 * 1.5)  # jitter stretches up to 2x
    assert [b.next_delay() for _ in range(4)] == [6.4, 12.8, 25.6, 30.0]  # capped
    assert b.next_delay() == 30.0
    now[0] += 121.0  # healthy for longer than the reset period
    assert b.next_delay() == 0.8


FOOS = {"name": "foos", "kind": "Foo", "namespaced": True}
BARS = {"name": "bars", "kind": "Bar", "namespaced": False}


async def test_discovery_prefers_versions_in_order_and_reports_missing_groups() -> None:
    docs: dict[str, tuple[int, Any]] = {
        "/apis/g.io": (200, {"versions": [{"version": "v1beta1"}, {"version": "v1beta2"}],
                             "preferredVersion": {"version": "v1beta2"}}),
        "/apis/g.io/v1beta2": (200, {"resources": [FOOS, {**FOOS, "name": "foos/status"}]}),
        "/apis/g.io/v1beta1": (200, {"resources": [FOOS, BARS]}),
        "/apis/broken.io": (503, None),
    }

    async def get(path: str) -> tuple[int, Any]:
        return docs.get(path, (404, None))

    foo, bar = (ResourceSpec("g.io", kind, ("v1beta2", "v1beta1")) for kind in ("Foo", "Bar"))
    missing, broken = ResourceSpec("absent.io", "X", ("v1",)), ResourceSpec("broken.io", "Y", ("v1",))
    result = await resolve(get, [foo, bar, missing, broken])
    assert result.found[foo] is not None and result.found[foo].version == "v1beta2"
    assert result.found[bar] is not None and result.found[bar].version == "v1beta1"  # only served there
    assert result.found[bar].path("ns") == "/apis/g.io/v1beta1/bars"  # cluster scoped: no namespace
    assert result.found[foo].path("ns") == "/apis/g.io/v1beta2/namespaces/ns/foos"
    assert result.found[missing] is None
    assert broken not in result.found and "503" in result.failed["broken.io"]


def test_provider_refs_read_both_reference_styles() -> None:
    def pool(ref: object) -> dict[str, Any]:
        return {"spec": {"template": {"spec": {"infrastructureRef": ref}}}}

    def refs(kind: str, raw: dict[str, Any]) -> list[tuple[str, ResourceSpec]]:
        found, bad = provider_refs(kind, raw)
        assert bad == []
        return found

    v1beta2 = refs("MachinePool", pool({"apiGroup": INFRA_GROUP, "kind": "DockerMachinePool", "name": "p"}))
    v1beta1 = refs("MachinePool", pool({"apiVersion": f"{INFRA_GROUP}/v1beta1", "kind": "AzureMachinePool"}))
    assert v1beta2 == [("InfraMachinePool", ResourceSpec(INFRA_GROUP, "DockerMachinePool"))]
    assert v1beta1 == [("InfraMachinePool", ResourceSpec(INFRA_GROUP, "AzureMachinePool"))]
    assert refs("MachinePool", pool({"apiGroup": "other.io", "kind": "X"})) == []
    assert refs("MachinePool", {"spec": {"template": "oops"}}) == []
    assert refs("MachinePool", {}) == []
    cluster = {"spec": {"infrastructureRef": {"apiGroup": INFRA_GROUP, "kind": "AWSCluster"}}}
    assert refs("Cluster", cluster) == [("InfraCluster", ResourceSpec(INFRA_GROUP, "AWSCluster"))]
    machine = {"spec": {
        "infrastructureRef": {"apiVersion": f"vmware.{INFRA_GROUP}/v1beta1", "kind": "VSphereMachine"},
        "bootstrap": {"configRef": {"apiGroup": BOOTSTRAP_GROUP, "kind": "KubeadmConfig", "name": "m"}},
    }}
    assert refs("Machine", machine) == [
        ("InfraMachine", ResourceSpec(f"vmware.{INFRA_GROUP}", "VSphereMachine")),
        ("BootstrapConfig", ResourceSpec(BOOTSTRAP_GROUP, "KubeadmConfig")),
    ]
    # A bootstrap reference into the infrastructure group is no BootstrapConfig (and vice versa).
    assert refs("Machine", {"spec": {"bootstrap": {"configRef": {"apiGroup": INFRA_GROUP, "kind": "X"}}}}) \
        == []
    assert refs("MachineSet", machine) == []


def test_provider_refs_name_a_kind_with_one_spec_each_time() -> None:
    machine = {"spec": {"infrastructureRef": {"apiGroup": INFRA_GROUP, "kind": "DockerMachine", "name": "a"}}}
    other = {"spec": {"infrastructureRef": {"apiGroup": INFRA_GROUP, "kind": "DockerMachine", "name": "b"}}}
    (_, first), = provider_refs("Machine", machine)[0]
    (_, again), = provider_refs("Machine", other)[0]
    assert again is first  # the source's dict of kinds then finds it without comparing fields
    assert first == ResourceSpec(INFRA_GROUP, "DockerMachine")


def test_provider_refs_without_kind_or_group_are_reported() -> None:
    machine = {"spec": {
        "infrastructureRef": {"name": "m", "kind": "DockerMachine"},
        "bootstrap": {"configRef": {"apiGroup": BOOTSTRAP_GROUP, "name": "m"}},
    }}
    found, bad = provider_refs("Machine", machine)
    assert found == []
    assert bad == ["spec.infrastructureRef names no apiGroup (or apiVersion)",
                   "spec.bootstrap.configRef names no kind"]
    found, bad = provider_refs("Cluster", {"spec": {"infrastructureRef": "DockerCluster"}})
    assert (found, bad) == ([], ["spec.infrastructureRef is not an object"])


def test_watched_kinds_cover_the_brief() -> None:
    kinds = {s.kind: s for s in discovery.WATCHED}
    assert kinds["ManifestWork"].label_selector == discovery.MWRS_LABEL
    assert kinds["Machine"].versions == ("v1beta2", "v1beta1")
    assert {"Cluster", "KubeadmControlPlane", "ManifestWorkReplicaSet", "ManagedCluster"} <= set(kinds)


async def test_connect_uses_kubeconfig_env_outside_a_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = FakeKubeAPI()
    path = api.write_kubeconfig(tmp_path / "cfg")  # never started: connect() contacts nothing
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(path))
    transport = await connect(KubeSourceConfig())
    try:
        assert transport.api_client.configuration.host == api.url
        assert transport.api_client.configuration.api_key["BearerToken"].endswith("fake-token")
    finally:
        await transport.close()
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    with pytest.raises(Exception):  # noqa: B017 - kubernetes_asyncio raises its own ConfigException
        await connect(KubeSourceConfig())


async def test_connect_in_a_pod_uses_the_service_account_and_rereads_its_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import certifi

    from exporter.sources import kube_client

    kube_client.load()
    from kubernetes_asyncio.config import incluster_config

    token = tmp_path / "token"
    token.write_text("sa-1")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", certifi.where())
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    transport = await connect(KubeSourceConfig())
    try:
        assert transport.api_client.configuration.host == "https://10.96.0.1:443"
        assert transport.credentials.kind == "token file"
        assert await transport.credentials.header() == "Bearer sa-1"
        token.write_text("sa-2\n")  # the kubelet rotated the projected token
        assert await transport.credentials.rejected("Bearer sa-1")  # a 401: read again
        assert await transport.credentials.header() == "Bearer sa-2"
    finally:
        await transport.close()


def test_connect_loads_no_generated_api_or_model_class_until_one_is_asked_for(tmp_path: Path) -> None:
    # A fresh interpreter: this one may have imported the whole package already.
    path = FakeKubeAPI().write_kubeconfig(tmp_path / "cfg")
    script = f"""
import asyncio, sys
from exporter.sources.kube import KubeSourceConfig, connect

async def main():
    transport = await connect(KubeSourceConfig(kubeconfig={str(path)!r}))
    await transport.close()

asyncio.run(main())
loaded = [m for m in sys.modules if m.startswith("kubernetes_asyncio.client.")]
assert not any(".models." in m or ".api." in m for m in loaded), loaded
assert len(loaded) < 10, loaded
import kubernetes_asyncio.client as client
from kubernetes_asyncio.client.models import V1Pod
assert client.CoreV1Api.__name__ == "CoreV1Api" and V1Pod.__name__ == "V1Pod"
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


class _Page:
    def __init__(self, body: dict[str, Any]) -> None:
        self.status, self._body = 200, body
        self.headers: dict[str, str] = {}

    async def read(self) -> bytes:
        return json.dumps(self._body).encode()

    def release(self) -> None:
        pass


async def test_the_next_list_page_is_requested_while_the_current_one_is_projected() -> None:
    pages = [
        {"metadata": {"continue": "p2" if i == 0 else "", "resourceVersion": "7"},
         "items": [obj("Machine", f"m{i}-{j}") for j in range(3)]}
        for i in range(2)
    ]
    requested: list[str] = []

    class Transport:
        async def get(self, path: str, params: list[tuple[str, str]], timeout: Any) -> _Page:
            token = dict(params).get("continue", "")
            requested.append(token)
            return _Page(pages[1 if token else 0])

    seen: list[tuple[str, int]] = []

    def project(raw: Any, previous: Any = None) -> Any:
        time.sleep(0.01)  # slow enough that a page takes longer than one slice of the event loop
        seen.append((raw["metadata"]["name"], len(requested)))
        return simple_project(raw)

    sink = RecordingSink()
    resource = Resource(ResourceSpec("cluster.x-k8s.io", "Machine"), "v1beta2", "machines", True)
    settings = LoopSettings(page_size=3)
    loop = ResourceLoop(resource, None, Transport(), sink, project, WatchStats(), settings)
    assert await loop._list() == "7"
    assert requested == ["", "p2"]
    # The second page was asked for before the first page's last object was projected.
    assert dict(seen)["m0-2"] == 2
    assert sorted(key[-1] for key in sink.view()) == [f"m{i}-{j}" for i in range(2) for j in range(3)]


class WatchLines:
    """A transport whose every request is a watch stream of these lines (buffered: no waiting)."""

    def __init__(self, lines: list[bytes]) -> None:
        self.lines = lines

    async def get(self, path: str, params: list[tuple[str, str]], timeout: Any) -> Any:
        lines = self.lines

        class Content:
            async def readany(self) -> bytes:  # everything buffered at once, as a backlog is
                chunk = b"".join(lines)
                lines.clear()
                return chunk

        class Stream:
            status, content = 200, Content()

            def close(self) -> None:
                pass

        return Stream()


async def test_a_watch_backlog_lets_other_tasks_run_while_it_is_handled() -> None:
    # A backlog is read in one chunk and handled without suspending; the loop must yield anyway.
    events = [json.dumps({"type": "MODIFIED", "object": obj("Machine", f"m{i}")}).encode() + b"\n"
              for i in range(20)]

    order: list[str] = []

    def project(raw: Any, previous: Any = None) -> Any:
        time.sleep(0.004)  # several events to a slice of the event loop
        order.append("event")
        return simple_project(raw)

    async def ticker() -> None:
        while True:
            order.append("tick")
            await asyncio.sleep(0)

    resource = Resource(ResourceSpec("cluster.x-k8s.io", "Machine"), "v1beta2", "machines", True)
    loop = ResourceLoop(resource, None, WatchLines(events), RecordingSink(), project, WatchStats(),
                        LoopSettings())
    ticks = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    try:
        loop._rv = "1"
        await loop._watch()
    finally:
        ticks.cancel()
    first, last = order.index("event"), len(order) - order[::-1].index("event")
    assert order.count("event") == 20
    assert "tick" in order[first:last]


async def test_each_projection_is_given_the_objects_previous_one() -> None:
    # The informer keeps every object's last projection and hands it to the next projection of
    # that object (what lets parse.project reuse what did not change); a deleted object has none.
    def versioned(name: str, rv: str) -> dict[str, Any]:
        raw = obj("Machine", name)
        raw["metadata"]["resourceVersion"] = rv
        return raw

    events = [json.dumps({"type": t, "object": versioned(name, rv)}).encode() + b"\n"
              for t, name, rv in (("ADDED", "m1", "2"), ("MODIFIED", "m1", "3"), ("DELETED", "m1", "4"),
                                  ("ADDED", "m1", "5"), ("MODIFIED", "m2", "6"))]

    given: list[tuple[str, str | None]] = []

    def project(raw: Any, previous: Any = None) -> Any:
        given.append((raw["metadata"]["resourceVersion"],
                      previous.meta.resource_version if previous is not None else None))
        return simple_project(raw)

    resource = Resource(ResourceSpec("cluster.x-k8s.io", "Machine"), "v1beta2", "machines", True)
    loop = ResourceLoop(resource, None, WatchLines(events), RecordingSink(), project, WatchStats(),
                        LoopSettings())
    loop._rv = "1"
    await loop._watch()
    assert given == [("2", None), ("3", "2"), ("5", None), ("6", None)]


def test_objects_are_counted_readable_or_not_through_every_kind_of_event() -> None:
    # The count (fleet_status_exporter_objects) includes objects present but unreadable, which the
    # sink does not hold; an object that turns unreadable leaves the sink and stays counted.
    def event(etype: str, name: str, readable: bool = True) -> dict[str, Any]:
        raw = obj("Machine", name)
        if not readable:
            raw["metadata"]["labels"] = {"unreadable": "yes"}
        return {"type": etype, "object": raw}

    def project(raw: Any, previous: Any = None) -> Any:
        return None if raw["metadata"].get("labels", {}).get("unreadable") else simple_project(raw)

    sink = RecordingSink()
    resource = Resource(ResourceSpec("cluster.x-k8s.io", "Machine"), "v1beta2", "machines", True)
    loop = ResourceLoop(resource, None, WatchLines([]), sink, project, WatchStats(), LoopSettings())
    steps = [
        (event("ADDED", "m1"), 1),
        (event("ADDED", "b1", readable=False), 2),
        (event("MODIFIED", "b1", readable=False), 2),
        (event("MODIFIED", "b1"), 2),
        (event("MODIFIED", "m1", readable=False), 2),
        (event("DELETED", "m1", readable=False), 1),
        (event("DELETED", "never-seen"), 1),
        (event("DELETED", "b1"), 0),
    ]
    counts = []
    for e, _ in steps:
        loop._handle(e, "1")
        counts.append(loop.stats.objects[""])
    assert counts == [n for _, n in steps]
    assert sink.objects == {}
