"""Replica counters follow the rule conditions follow: the kube-state-metrics families carry what the
object reports, the engine's count where it reports none, and the engine's own count and any
disagreement show in ``*_status_replicas_computed`` and ``*_status_replicas_mismatch``.

The objects are the example fleet's manifests, changed the way a lagging controller leaves them:
a Machine turned not Ready while its MachineSet, MachineDeployment and Cluster still report it
ready, and a KubeadmControlPlane reporting fewer ready replicas than its Machines show.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.engine.evaluate import evaluate_all
from exporter.engine.parse import project
from exporter.metrics.renderer import render_fleet
from exporter.sources.files import raw_objects

ROOT = Path(__file__).resolve().parents[1]
NOW = 1_795_392_000.0
HEALTHY = ROOT / "examples" / "capi" / "prod-eu-1-healthy.yaml"
LEGACY = ROOT / "examples" / "capi" / "legacy-west-1-v1beta1-capi-1.8.yaml"
MS, MD, KCP = "prod-eu-1-md-0-q7mns-8cz5h", "prod-eu-1-md-0-q7mns", "prod-eu-1-x4lzp"
WORKER = "prod-eu-1-md-0-q7mns-8cz5h-9fkxp"

Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


def manifests(path: Path) -> list[dict[str, Any]]:
    return [dict(o) for o in raw_objects(path.read_text(encoding="utf-8"), path.suffix)]


def find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def scrape(objects: list[dict[str, Any]], unreadable: frozenset[tuple[str, str]] = frozenset()) -> Series:
    projections = [p for p in (project(o) for o in objects) if p is not None]
    body = render_fleet(projections, evaluate_all(projections, NOW, unreadable)).decode()
    out: Series = {}
    for fam in text_string_to_metric_families(body):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def values(series: Series, metric: str, name: str) -> Iterator[tuple[Mapping[str, str], float]]:
    for (n, labels), v in series.items():
        if n == metric and ("name", name) in labels:
            yield dict(labels), v


def one(series: Series, metric: str, name: str, **want: str) -> float | None:
    found = [v for labels, v in values(series, metric, name) if want.items() <= labels.items()]
    assert len(found) <= 1, (metric, name, want, found)
    return found[0] if found else None


def mismatched(series: Series, prefix: str, name: str) -> dict[str, float]:
    return {labels["counter"]: v for labels, v in values(series, f"{prefix}_status_replicas_mismatch", name)}


@pytest.fixture(scope="module")
def lagging() -> Series:
    objects = manifests(HEALTHY)
    worker = find(objects, "Machine", WORKER)
    for c in worker["status"]["conditions"]:
        if c["type"] == "Ready":
            c.update(status="False", reason="NotReady", message="* NodeHealthy: Node not ready")
    # The control plane controller has not counted its third Machine as ready yet.
    find(objects, "KubeadmControlPlane", KCP)["status"]["readyReplicas"] = 2
    return scrape(objects)


def test_a_machineset_reporting_more_ready_replicas_than_its_machines_shows_its_own(lagging: Series) -> None:
    assert one(lagging, "capi_machineset_status_replicas_ready", MS) == 3  # status.readyReplicas
    assert one(lagging, "capi_machineset_status_replicas_computed", MS, counter="readyReplicas") == 2
    assert mismatched(lagging, "capi_machineset", MS) == {"readyReplicas": 1.0}
    # Where both agree the engine's count is still there, without a mismatch.
    assert one(lagging, "capi_machineset_status_replicas_computed", MS, counter="replicas") == 3
    assert one(lagging, "capi_machineset_status_replicas", MS) == 3


def test_a_machinedeployment_shows_its_reported_count_and_the_machinesets_sum(lagging: Series) -> None:
    assert one(lagging, "capi_machinedeployment_status_replicas_ready", MD) == 3
    assert one(lagging, "capi_machinedeployment_status_replicas_computed", MD, counter="readyReplicas") == 2
    assert mismatched(lagging, "capi_machinedeployment", MD) == {"readyReplicas": 1.0}


def test_a_control_plane_reporting_fewer_ready_replicas_shows_its_own(lagging: Series) -> None:
    assert one(lagging, "capi_kubeadmcontrolplane_status_replicas_ready", KCP) == 2
    assert one(lagging, "capi_kubeadmcontrolplane_status_replicas_computed", KCP,
               counter="readyReplicas") == 3
    assert mismatched(lagging, "capi_kubeadmcontrolplane", KCP) == {"readyReplicas": 1.0}


def test_a_cluster_shows_its_reported_workers_and_the_engine_count_beside_them(lagging: Series) -> None:
    reported = find(manifests(HEALTHY), "Cluster", "prod-eu-1")["status"]["workers"]["readyReplicas"]
    assert one(lagging, "capi_cluster_status_workers_replicas_ready", "prod-eu-1") == reported
    assert one(lagging, "capi_cluster_status_replicas_computed", "prod-eu-1",
               counter="workers.readyReplicas") == reported - 1
    assert mismatched(lagging, "capi_cluster", "prod-eu-1") == {"workers.readyReplicas": 1.0}
    # The control plane counters the Cluster reports agree with the KubeadmControlPlane's Machines.
    assert one(lagging, "capi_cluster_status_controlplane_replicas_ready", "prod-eu-1") == 3


def test_objects_that_agree_with_their_machines_have_no_mismatch() -> None:
    series = scrape(manifests(HEALTHY))
    assert not [k for k in series if k[0].endswith("_status_replicas_mismatch")]
    assert one(series, "capi_machineset_status_replicas_computed", MS, counter="readyReplicas") == 3


def test_an_object_that_reports_no_counter_shows_the_engine_count_without_a_mismatch() -> None:
    objects = manifests(HEALTHY)
    ms = find(objects, "MachineSet", MS)
    for key in ("readyReplicas", "availableReplicas", "upToDateReplicas", "replicas"):
        del ms["status"][key]
    series = scrape(objects)
    assert one(series, "capi_machineset_status_replicas_ready", MS) == 3
    assert one(series, "capi_machineset_status_replicas", MS) == 3
    assert mismatched(series, "capi_machineset", MS) == {}


def test_v1beta1_ready_counts_mean_ready_nodes_so_the_engine_count_stands() -> None:
    # CAPI v1.5-v1.8 objects: status.readyReplicas counts Machines with a Ready Node, not the
    # v1beta2 Ready summary; the engine's count is the effective one and nothing mismatches.
    objects = manifests(LEGACY)
    ms = next(o for o in objects if o["kind"] == "MachineSet")
    ms["status"]["readyReplicas"] = 99
    series = scrape(objects)
    name = ms["metadata"]["name"]
    computed = one(series, "capi_machineset_status_replicas_computed", name, counter="readyReplicas")
    assert computed is not None and computed != 99
    assert one(series, "capi_machineset_status_replicas_ready", name) == computed
    assert mismatched(series, "capi_machineset", name) == {}


def test_counters_withheld_for_an_unreadable_kind_leave_the_reported_ones() -> None:
    # The exporter may not read MachineSets: what it would count over them is withheld, what the
    # MachineDeployment reports is still a fact.
    objects = [o for o in manifests(HEALTHY) if o["kind"] != "MachineSet"]
    series = scrape(objects, frozenset({("MachineSet", "")}))
    assert one(series, "capi_machinedeployment_status_replicas_ready", MD) == 3
    assert list(values(series, "capi_machinedeployment_status_replicas_computed", MD)) == []
    assert mismatched(series, "capi_machinedeployment", MD) == {}
