"""Readiness of the kube source: resources it may not read, and an API server it cannot reach.

A resource whose list (or watch) answers 403 or 404 is unreadable: logged once, counted, retried
slowly, and not held against readiness. Failing to reach the API server (connection errors, 5xx,
429) makes the source unready only once it has lasted ``LoopSettings.unready_after``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from exporter.app import kube_resources
from exporter.metrics import selfmetrics
from exporter.metrics.selfmetrics import ExporterStats
from tests.kubeapi import CAPI_TYPES, OCM_TYPES
from tests.kubeapi.fixtures import FAST, SourceEnv, eventually, make_env, obj

MACHINES = "machines.cluster.x-k8s.io"
MACHINESETS = "machinesets.cluster.x-k8s.io"


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[SourceEnv]:
    e = await make_env(tmp_path)
    e.api.install(*CAPI_TYPES, *OCM_TYPES)
    e.loop_settings = replace(FAST, watch_timeout=(30.0, 30.0))
    for i in range(2):
        e.api.create(obj("Machine", f"m{i}"))
        e.api.create(obj("Machine", f"m{i}", ns="ns2"))
    e.api.create(obj("MachineSet", "ms1"))
    e.api.create(obj("Cluster", "c1"))
    yield e
    await e.close()


def warnings_about(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and name in r.getMessage()]


async def test_forbidden_resource_is_reported_once_retried_and_not_held_against_readiness(
    env: SourceEnv, caplog: pytest.LogCaptureFixture
) -> None:
    fault = env.api.fail("MachineSet", 403)
    source = await env.start_source()
    env.exclude = frozenset({"MachineSet"})  # what the sink can show while it is forbidden
    await env.converged(source)  # ready without it
    await eventually(lambda: fault.hits >= 4, what="the forbidden resource retried")
    ready, lines = source.readiness()
    assert ready
    (line,) = [x for x in lines if MACHINESETS in x]
    assert "forbidden" in line and "get/list/watch" in line
    (warning,) = warnings_about(caplog, MACHINESETS)  # once, however many retries
    assert "grant get, list and watch" in warning and "all namespaces" in warning
    stats = source.stats.resources[MACHINESETS]
    assert stats.unreadable == {"": "forbidden"} and not stats.synced
    rendered = selfmetrics.render(ExporterStats(), kube_resources(source.stats), rendered_objects=0,
                                  cached_objects=0).decode()
    assert f'fleet_status_exporter_resource_unreadable{{resource="{MACHINESETS}",reason="forbidden"}} 1' \
        in rendered
    assert "resource_unreadable{resource=\"machines." not in rendered

    env.api.clear_faults()  # RBAC granted: picked up at the next retry
    env.exclude = frozenset()
    await env.converged(source)
    await eventually(lambda: not stats.unreadable, what="unreadable cleared")
    assert stats.synced and not [x for x in source.readiness()[1] if MACHINESETS in x]
    assert "resource_unreadable" not in selfmetrics.render(
        ExporterStats(), kube_resources(source.stats), rendered_objects=0, cached_objects=0).decode()


async def test_forbidden_namespace_scope_names_the_namespace(
    env: SourceEnv, caplog: pytest.LogCaptureFixture
) -> None:
    env.api.fail("Machine", 403, namespace="ns2")
    source = await env.start_source(namespaces=("ns1", "ns2"))
    await eventually(lambda: source.all_synced() and ("Machine", "ns1", "m1") in env.sink.objects)
    ready, lines = source.readiness()
    assert ready and any(MACHINES in x and "namespace ns2" in x for x in lines)
    (warning,) = warnings_about(caplog, MACHINES)
    assert "namespace ns2" in warning
    assert source.stats.resources[MACHINES].unreadable == {"ns2": "forbidden"}
    assert not any(k[1] == "ns2" for k in env.sink.objects)


async def test_list_not_found_and_watch_forbidden_are_unreadable_too(env: SourceEnv) -> None:
    env.api.fail("Machine", 404, verbs=["list"])  # the CRD went away between discovery and list
    env.api.fail("Cluster", 403, verbs=["watch"])  # RBAC grants list but not watch
    source = await env.start_source()
    await eventually(source.all_synced)
    clusters = "clusters.cluster.x-k8s.io"
    await eventually(lambda: source.stats.resources[clusters].unreadable == {"": "forbidden"})
    assert source.stats.resources[MACHINES].unreadable == {"": "not_found"}
    assert source.readiness()[0]


async def test_unreachable_api_server_makes_the_source_unready_after_a_bound(env: SourceEnv) -> None:
    env.loop_settings = replace(env.loop_settings, unready_after=0.5)
    source = await env.start_source()
    await env.converged(source)
    assert source.readiness() == (True, [])
    await env.api.stop()
    await eventually(lambda: source.stats.resources[MACHINES].failing_since, what="failure noticed")
    assert source.readiness()[0]  # a brief outage (an API server restart) does not flap readiness
    await eventually(lambda: not source.readiness()[0], what="unready")
    lines = source.readiness()[1]
    assert any(MACHINES in x and "failing for" in x for x in lines)
    assert source.all_synced()  # listed once: what it serves is only getting old
    await env.api.start()
    env.api.create(obj("Machine", "back"))
    await env.converged(source)
    await eventually(lambda: source.readiness() == (True, []), what="ready again")


async def test_not_ready_until_every_readable_resource_is_listed(env: SourceEnv) -> None:
    env.api.fail("Machine", 500, verbs=["list"])
    source = await env.start_source()
    await eventually(lambda: source.stats.resources.get(MACHINES) is not None
                     and source.stats.resources[MACHINES].list_requests.get("error", 0) >= 2)
    ready, lines = source.readiness()
    assert not ready and any(MACHINES in x and "not listed yet" in x and "HTTP 500" in x for x in lines)
    env.api.clear_faults()
    await env.converged(source)
    await asyncio.sleep(0)
    assert source.readiness() == (True, [])
