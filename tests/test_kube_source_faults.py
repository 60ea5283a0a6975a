"""The kube source under faults: 410s, outages, compaction, stalls, error statuses, late CRDs.

Every scenario ends with the sink showing exactly the server's state. Time is driven by small
injected timeouts and backoffs (tests.kubeapi.fixtures.FAST), never by long sleeps.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.kubeapi import CAPI_TYPES, OCM_TYPES
from tests.kubeapi.fixtures import FAST, SourceEnv, eventually, make_env, obj

MACHINES = "machines.cluster.x-k8s.io"
# A backoff far longer than the fake server's Retry-After (1 s): tells which of the two was waited.
SLOW_BACKOFF = replace(FAST, backoff_initial=4.0, backoff_max=8.0, backoff_jitter=0.0)


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[SourceEnv]:
    e = await make_env(tmp_path)
    e.api.install(*CAPI_TYPES, *OCM_TYPES)
    e.loop_settings = replace(FAST, watch_timeout=(30.0, 30.0))  # no routine re-watch during a scenario
    for i in range(4):
        e.api.create(obj("Machine", f"m{i}"))
    e.api.create(obj("Cluster", "c1"))
    e.api.create(obj("ManagedCluster", "spoke1"))
    yield e
    await e.close()


def machine_watch_versions(env: SourceEnv) -> list[str]:
    watches = [r for r in env.api.requests if r.verb == "watch" and r.kind == "Machine"]
    return [r.params["resourceVersion"] for r in watches]


def assert_relisted_after_410(env: SourceEnv) -> None:
    """After a Machine watch got HTTP 410, the next request was a list, and no watch reused that version."""
    reqs = [r for r in env.api.requests if r.kind == "Machine" and r.verb in ("list", "watch")]
    gone = next(i for i, r in enumerate(reqs) if r.verb == "watch" and r.status == 410)
    assert reqs[gone + 1].verb == "list"
    stale = reqs[gone].params["resourceVersion"]
    assert stale not in [r.params.get("resourceVersion") for r in reqs[gone + 1 :] if r.verb == "watch"]


async def test_deletes_while_disconnected_behind_compacted_history_http_410(env: SourceEnv) -> None:
    source = await env.start_source()
    await env.converged(source)
    await env.api.stop()
    env.api.delete("Machine", "ns1", "m0")
    env.api.delete("ManagedCluster", "", "spoke1")
    env.api.update(obj("Machine", "m1", changed="yes"))
    env.api.create(obj("Machine", "new"))
    env.api.compact()
    await env.api.start()
    await env.converged(source)
    stats = source.stats.resource(MACHINES)
    assert stats.relists["expired"] == 1 and stats.watch_requests["expired"] == 1
    assert ("Machine", "ns1", "m0") not in env.sink.objects
    assert_relisted_after_410(env)


async def test_in_stream_error_410_relists(env: SourceEnv) -> None:
    source = await env.start_source()
    await env.converged(source)
    lists_before = env.api.count("list", "Machine")
    stale = machine_watch_versions(env)[-1]
    await env.watching("Machine")
    assert env.api.stall_watches("Machine") == 1  # the deletion below is never delivered ...
    env.api.delete("Machine", "ns1", "m2")
    env.api.compact()
    env.api.expired_watch_as_event = True
    env.api.drop_watches("Machine")  # ... and the re-watch answers 200 + ERROR 410 in the stream
    await env.converged(source)
    stats = source.stats.resource(MACHINES)
    assert stats.events["ERROR"] >= 1 and stats.relists["expired"] == 1
    assert env.api.count("list", "Machine") > lists_before
    assert ("Machine", "ns1", "m2") not in env.sink.objects
    assert not [v for v in machine_watch_versions(env)[1:] if int(v) < int(stale)]


async def test_error_event_on_a_live_watch_relists(env: SourceEnv) -> None:
    source = await env.start_source()
    await env.converged(source)
    watches = env.api.count("watch", "Machine")
    await env.watching("Machine")
    assert env.api.watch_error(410, "Machine") == 1
    await eventually(lambda: source.stats.resource(MACHINES).relists.get("expired") == 1)
    await eventually(lambda: env.api.count("watch", "Machine") > watches)
    await env.watching("Machine")
    assert env.api.watch_error(500, "Machine") == 1  # a non-410 error relists too, after a backoff
    await eventually(lambda: source.stats.resource(MACHINES).relists.get("error") == 1)
    env.api.create(obj("Machine", "after"))
    await env.converged(source)


def _logged(caplog: pytest.LogCaptureFixture, *parts: str) -> bool:
    return any(all(part in r.getMessage() for part in parts) for r in caplog.records)


async def test_undecodable_watch_line_rewatches_from_the_last_version(
    env: SourceEnv, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="exporter.sources.kube")
    source = await env.start_source()
    await env.converged(source)
    lists = env.api.count("list", "Machine")
    await env.watching("Machine")
    assert env.api.send_raw(b'{"type": "MODIFIED", "object": {"metadata": {"na\n', "Machine") == 1
    await eventually(lambda: _logged(caplog, "watch of", "machines"), what="error logged")
    env.api.create(obj("Machine", "after-garble"))
    await env.converged(source)
    assert env.api.count("list", "Machine") == lists  # the stream is resumed, nothing is lost


async def test_list_answering_500_then_429_for_a_while(
    env: SourceEnv, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="exporter.sources.kube")
    env.api.fail("Machine", 500, verbs=["list"], times=3)
    env.api.fail("Cluster", 429, verbs=["list"], times=2)
    source = await env.start_source()
    await env.converged(source)
    assert source.stats.resource(MACHINES).list_requests["error"] == 3
    assert source.stats.resources["clusters.cluster.x-k8s.io"].list_requests["error"] == 2
    assert _logged(caplog, "list of", "machines", "500")


async def test_429_on_watch_rewatches_without_relisting(env: SourceEnv) -> None:
    source = await env.start_source()
    await env.converged(source)
    lists = env.api.count("list", "Machine")
    env.api.fail("Machine", 429, verbs=["watch"], times=2)
    env.api.close_watches("Machine")
    env.api.create(obj("Machine", "later"))
    await eventually(lambda: env.api.count("watch", "Machine") >= 4, what="re-watch after 429s")
    await env.converged(source)
    assert env.api.count("list", "Machine") == lists


async def test_stalled_watch_is_reconnected_a_grace_period_after_its_deadline(
    env: SourceEnv, caplog: pytest.LogCaptureFixture
) -> None:
    env.loop_settings = replace(FAST, watch_timeout=(1.0, 1.0), watch_grace=0.5)
    source = await env.start_source()
    await env.converged(source)
    await env.watching("Machine")
    assert env.api.stall_watches("Machine") == 1  # not even its timeoutSeconds ends it
    stalled_at = asyncio.get_running_loop().time()
    env.api.create(obj("Machine", "while-stalled"))
    env.api.delete("Machine", "ns1", "m3")
    await env.converged(source)
    assert asyncio.get_running_loop().time() - stalled_at > 0.4  # not before the deadline + grace
    stats = source.stats.resource(MACHINES)
    assert stats.watch_ends["stuck"] == 1
    assert "expired" not in stats.relists  # re-watched from its version: no relist needed
    assert any("stuck" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


async def test_restart_catch_up_follows_retry_after_not_the_backoff(env: SourceEnv) -> None:
    env.loop_settings = replace(SLOW_BACKOFF, watch_timeout=(30.0, 30.0))
    source = await env.start_source()
    await env.converged(source)
    lists = env.api.count("list")
    assert env.api.restart(initializing=0.3) >= 1
    env.api.create(obj("Machine", "after-restart"))
    await env.converged(source, timeout=3.0)  # Retry-After (1 s), not the 4 s backoff
    assert any(r.verb == "watch" and r.status == 429 for r in env.api.requests)
    assert env.api.count("list") == lists  # every watch resumed from its version
    assert source.readiness()[0]


async def test_start_while_the_cache_initialises_lists_after_retry_after(env: SourceEnv) -> None:
    env.loop_settings = SLOW_BACKOFF
    env.api.restart(initializing=0.3)
    source = await env.start_source()
    await env.converged(source, timeout=3.0)  # Retry-After (1 s), not the 4 s backoff
    assert source.stats.resource(MACHINES).list_requests["error"] >= 1


async def test_503_with_retry_after_on_watch_rewatches_without_relisting(env: SourceEnv) -> None:
    env.loop_settings = replace(SLOW_BACKOFF, watch_timeout=(30.0, 30.0))
    source = await env.start_source()
    await env.converged(source)
    lists = env.api.count("list", "Machine")
    env.api.fail("Machine", 503, verbs=["watch"], times=2, retry_after=1)
    loop = asyncio.get_running_loop()
    started = loop.time()
    env.api.close_watches("Machine")
    env.api.create(obj("Machine", "later"))
    await env.converged(source, timeout=3.5)  # two Retry-After waits, no backoff
    assert loop.time() - started > 1.5
    assert env.api.count("list", "Machine") == lists
    assert not source.stats.resource(MACHINES).relists


async def test_retry_after_is_bounded_by_the_longest_backoff(env: SourceEnv) -> None:
    source = await env.start_source()  # FAST: backoff_max 0.05 s
    await env.converged(source)
    env.api.fail("Machine", 429, verbs=["watch"], times=3, retry_after=30)
    env.api.close_watches("Machine")
    env.api.create(obj("Machine", "later"))
    await env.converged(source, timeout=2.0)


async def test_ocm_not_installed_then_installed_then_removed(tmp_path: Path) -> None:
    e = await make_env(tmp_path)
    try:
        e.api.install(*CAPI_TYPES)
        e.api.create(obj("Cluster", "c1"))
        source = await e.start_source()
        await e.converged(source)  # ready without OCM: only available resources count
        assert not any(name.endswith("open-cluster-management.io") for name in source.synced)
        e.api.install(*OCM_TYPES)
        e.api.create(obj("ManifestWorkReplicaSet", "mwrs"))
        e.api.create(obj("ManagedCluster", "spoke1"))
        await e.converged(source)
        assert source.synced["manifestworkreplicasets.work.open-cluster-management.io"] is True
        e.api.uninstall(group="work.open-cluster-management.io")
        await e.converged(source)
        assert ("ManifestWorkReplicaSet", "ns1", "mwrs") not in e.sink.objects
        assert "manifestworkreplicasets.work.open-cluster-management.io" not in source.synced
    finally:
        await e.close()


async def test_optional_capi_kinds_absent_then_installed_then_removed(tmp_path: Path) -> None:
    addons = "addons.cluster.x-k8s.io"
    optional = {addons, "runtime.cluster.x-k8s.io", "ipam.cluster.x-k8s.io"}
    e = await make_env(tmp_path)
    try:
        # a CAPI release before v1.9 serves cluster.x-k8s.io without MachineDrainRules
        e.api.install(*(t for t in CAPI_TYPES if t.group not in optional and t.kind != "MachineDrainRule"))
        e.api.create(obj("Cluster", "c1"))
        source = await e.start_source()
        await e.converged(source)  # a hub without the ClusterResourceSet CRDs is ready
        assert not any(name.endswith(tuple(optional)) for name in source.synced)
        assert source.stats.discovery_requests.get("error", 0) == 0
        e.api.install(*(t for t in CAPI_TYPES if t.group in optional or t.kind == "MachineDrainRule"))
        e.api.create(obj("ClusterResourceSet", "cni"))
        e.api.create(obj("ClusterResourceSetBinding", "c1"))
        e.api.create(obj("ExtensionConfig", "hooks"))
        e.api.create(obj("MachineDrainRule", "storage-last"))
        e.api.create(obj("IPAddressClaim", "m1-eth0"))
        await e.converged(source)  # found by the next discovery pass, without a restart
        assert source.synced[f"clusterresourcesets.{addons}"] is True
        assert ("ClusterResourceSetBinding", "ns1", "c1") in e.sink.objects
        assert ("ExtensionConfig", "", "hooks") in e.sink.objects
        assert ("MachineDrainRule", "ns1", "storage-last") in e.sink.objects
        assert ("IPAddressClaim", "ns1", "m1-eth0") in e.sink.objects
        e.api.uninstall(group=addons)
        await e.converged(source)
        assert ("ClusterResourceSet", "ns1", "cni") not in e.sink.objects
        assert ("ExtensionConfig", "", "hooks") in e.sink.objects  # another group: kept
        assert ("Cluster", "ns1", "c1") in e.sink.objects
        assert f"clusterresourcesets.{addons}" not in source.synced
    finally:
        await e.close()


async def test_api_server_down_at_start_then_up(env: SourceEnv) -> None:
    await env.api.stop()
    source = await env.start_source()
    await eventually(lambda: source.stats.discovery_requests.get("error", 0) >= 2, what="failed discovery")
    assert not source.all_synced() and env.sink.objects == {}
    await env.api.start()
    await env.converged(source)


async def test_expired_continue_token_restarts_the_list(env: SourceEnv) -> None:
    original = env.api.store.take_snapshot

    def expire_first(token: str):  # type: ignore[no-untyped-def]
        env.api.store.take_snapshot = original  # only the first continue expires
        env.api.expire_continue_tokens()
        return original(token)

    env.api.store.take_snapshot = expire_first  # type: ignore[method-assign]
    source = await env.start_source()
    await env.converged(source)
    assert sum(s.list_requests.get("expired", 0) for s in source.stats.resources.values()) == 1


async def test_dropped_connections_reconnect_and_catch_up(env: SourceEnv) -> None:
    source = await env.start_source()
    await env.converged(source)
    for i in range(3):
        env.api.drop_watches()
        env.api.create(obj("Machine", f"burst{i}"))
        env.api.delete("Machine", "ns1", f"m{i}")
    await env.converged(source)
    assert source.stats.resource(MACHINES).watch_ends["dropped"] >= 1
    assert "expired" not in source.stats.resource(MACHINES).relists


async def test_provider_kinds_followed_from_references_installed_late_and_removed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """InfraCluster, InfraMachine and BootstrapConfig kinds are found from the references of
    Clusters and Machines (both reference styles), whatever the provider: one not served is
    counted, one forbidden is unreadable while the rest keeps working, one installed later is
    watched without a restart, one removed takes only its own objects."""
    from tests.kubeapi import BOOTSTRAP_TYPES, INFRA_TYPES

    infra, bootstrap = "infrastructure.cluster.x-k8s.io", "bootstrap.cluster.x-k8s.io"
    aws = next(t for t in INFRA_TYPES if t.kind == "AWSMachine")
    e = await make_env(tmp_path)
    try:
        e.api.install(*CAPI_TYPES, *(t for t in INFRA_TYPES if t is not aws), *BOOTSTRAP_TYPES)
        cluster = obj("Cluster", "c1")
        cluster["spec"] = {"infrastructureRef": {"apiGroup": infra, "kind": "DockerCluster", "name": "c1"}}
        e.api.create(cluster)
        e.api.create(obj("DockerCluster", "c1"))
        refs = {
            "m1": {"apiGroup": infra, "kind": "DockerMachine"},
            "m2": {"apiVersion": f"{infra}/v1beta1", "kind": "AWSMachine"},  # v1beta1 style, not served yet
            "m3": {"kind": "DockerMachine"},  # no group: cannot be followed
        }
        for name, ref in refs.items():
            machine = obj("Machine", name)
            machine["spec"] = {"infrastructureRef": {**ref, "name": name},
                               "bootstrap": {"configRef": {"apiGroup": bootstrap, "kind": "KubeadmConfig",
                                                           "name": name}}}
            e.api.create(machine)
            e.api.create(obj("KubeadmConfig", name))
        e.api.create(obj("DockerMachine", "m1"))
        e.api.fail("KubeadmConfig", 403)  # RBAC grants the infrastructure group only
        source = await e.start_source()
        await eventually(source.all_synced)
        await eventually(lambda: ("DockerMachine", "ns1", "m1") in e.sink.objects)
        assert ("DockerCluster", "ns1", "c1") in e.sink.objects
        assert source.synced[f"dockermachines.{infra}"] is True
        assert source.stats.not_served == {f"AWSMachine.{infra}"}
        assert source.stats.resources[f"kubeadmconfigs.{bootstrap}"].unreadable_reason == "forbidden"
        assert source.unreadable() == {("KubeadmConfig", "")}
        bad = [r for r in caplog.records if "cannot follow its references" in r.getMessage()]
        assert len(bad) == 1 and "Machine ns1/m3" in bad[0].getMessage()
        e.api.update(obj("Machine", "m3", changed="yes") | {"spec": {"infrastructureRef": refs["m3"]}})
        e.api.clear_faults()
        await eventually(lambda: ("KubeadmConfig", "ns1", "m2") in e.sink.objects, what="granted later")

        e.api.install(aws)  # the provider is installed later: found by the next discovery pass
        e.api.create(obj("AWSMachine", "m2"))
        await eventually(lambda: ("AWSMachine", "ns1", "m2") in e.sink.objects, what="AWSMachine watched")
        await e.converged(source)
        assert source.stats.not_served == set()

        e.api.uninstall(kind="DockerMachine")  # the provider is removed: only its objects go
        await e.converged(source)
        assert ("DockerMachine", "ns1", "m1") not in e.sink.objects
        assert f"dockermachines.{infra}" not in source.synced
        for kept in (("DockerCluster", "ns1", "c1"), ("AWSMachine", "ns1", "m2"),
                     ("KubeadmConfig", "ns1", "m1"), ("Machine", "ns1", "m1"), ("Cluster", "ns1", "c1")):
            assert kept in e.sink.objects, kept
        bad = [r for r in caplog.records if "cannot follow its references" in r.getMessage()]
        assert len(bad) == 1  # the update of m3 did not log it again
    finally:
        await e.close()


async def test_excluded_provider_roles_are_not_requested(tmp_path: Path) -> None:
    from tests.kubeapi import BOOTSTRAP_TYPES, INFRA_TYPES

    e = await make_env(tmp_path)
    try:
        e.api.install(*CAPI_TYPES, *INFRA_TYPES, *BOOTSTRAP_TYPES)
        machine = obj("Machine", "m1")
        machine["spec"] = {
            "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachine",
                                  "name": "m1"},
            "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfig",
                                        "name": "m1"}},
        }
        e.api.create(machine)
        e.api.create(obj("DockerMachine", "m1"))
        e.api.create(obj("KubeadmConfig", "m1"))
        source = await e.start_source(exclude_kinds=frozenset({"BootstrapConfig"}))
        await eventually(lambda: ("DockerMachine", "ns1", "m1") in e.sink.objects)
        await eventually(source.all_synced)
        assert not any(r.kind == "KubeadmConfig" for r in e.api.requests)
    finally:
        await e.close()
