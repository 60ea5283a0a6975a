"""Scrapes taken while the source delivers a burst of events never mix two versions of one object,
and deleted objects vanish from the next scrape.

Real store, engine, renderer and server (aiohttp test client); the "source" is a task writing
projections into the store the way the kube source does (upsert/delete), as fast as it can.
"""

from __future__ import annotations

import asyncio
import re

from prometheus_client.parser import text_string_to_metric_families

from exporter.app import FilteringSink, Pipeline
from exporter.engine.parse import project
from exporter.metrics.renderer import Renderer
from exporter.metrics.selfmetrics import ExporterStats
from exporter.store import Store
from exporter.web import Exposition, make_app

CLUSTERS = 4
MDS_PER_CLUSTER = 3
VERSIONS = 40


def raw_cluster(name: str) -> dict:
    return {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"}}


def raw_md(cluster: str, name: str, version: int) -> dict:
    # Every field the metrics read carries the version, so a mixed scrape is visible.
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                     "labels": {"cluster.x-k8s.io/cluster-name": cluster}},
        "spec": {"clusterName": cluster, "replicas": version,
                 "template": {"spec": {"clusterName": cluster, "version": f"v1.{version}.0"}}},
        "status": {"replicas": version, "readyReplicas": version, "availableReplicas": version,
                   "upToDateReplicas": version},
    }


def versions_by_object(text: str) -> dict[str, set[int]]:
    """Every version number each MachineDeployment shows in one scrape, across its families."""
    seen: dict[str, set[int]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if not s.name.startswith("capi_machinedeployment_") or "name" not in s.labels:
                continue
            name = s.labels["name"]
            if s.name == "capi_machinedeployment_info":
                match = re.fullmatch(r"v1\.(\d+)\.0", s.labels["version"])
                assert match
                seen.setdefault(name, set()).add(int(match.group(1)))
            elif s.name == "capi_machinedeployment_spec_replicas":
                seen.setdefault(name, set()).add(int(s.value))
    return seen


async def test_burst_of_events_never_mixes_versions_and_deletions_vanish(aiohttp_client):
    store = Store()
    sink = FilteringSink(store)
    renderer = Renderer()
    stats = ExporterStats()
    pipeline = Pipeline(store, sink, renderer, stats, lambda _key: True)
    client = await aiohttp_client(make_app(Exposition(renderer, stats, lambda: True, list)))
    names = [(f"c{c}", f"c{c}-md{m}") for c in range(CLUSTERS) for m in range(MDS_PER_CLUSTER)]
    for c in range(CLUSTERS):
        sink.upsert(project(raw_cluster(f"c{c}")))

    scraped = asyncio.Event()

    async def source() -> None:
        for version in range(1, VERSIONS + 1):
            for cluster, name in names:
                sink.upsert(project(raw_md(cluster, name, version)))
                await asyncio.sleep(0)
            if version % 8 == 0:
                # Bursts of 8 versions between scrapes: otherwise the whole burst can finish
                # before the first scrape returns and the test would see no change at all.
                scraped.clear()
                await scraped.wait()

    async def eventually(check, timeout: float = 5.0) -> bool:
        deadline = asyncio.get_running_loop().time() + timeout
        while asyncio.get_running_loop().time() < deadline:
            if check(await (await client.get("/metrics")).text()):
                return True
            await asyncio.sleep(0.01)
        return False

    evaluation = asyncio.create_task(pipeline.run(debounce=0.001))
    writer = asyncio.create_task(source())
    scrapes = 0
    observed: set[int] = set()
    try:
        while not writer.done() or scrapes < 3:
            text = await (await client.get("/metrics")).text()
            scrapes += 1
            scraped.set()
            for name, versions in versions_by_object(text).items():
                assert len(versions) == 1, f"{name} shows versions {sorted(versions)} in one scrape"
                observed |= versions
        await writer
        final = {name: {VERSIONS} for _, name in names}
        assert await eventually(lambda text: versions_by_object(text) == final), "last versions not served"
        assert len(observed) > 2, "the scrapes should have seen the objects change"

        deleted = names[::2]
        for _, name in deleted:
            sink.delete("MachineDeployment", "ns", name)
        passes = pipeline.stats.evaluations
        while pipeline.stats.evaluations == passes:
            await asyncio.sleep(0.002)
        # The pass that saw the deletions has completed: the very next scrape must not show them.
        text = await (await client.get("/metrics")).text()
        for _, name in deleted:
            assert f'name="{name}"' not in text
        for _, name in names[1::2]:
            assert f'capi_machinedeployment_info{{name="{name}"' in text
    finally:
        evaluation.cancel()
        writer.cancel()
