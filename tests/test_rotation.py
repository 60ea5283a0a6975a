"""The periodic re-evaluation: every group time may change once per period, in slices, never all at once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from exporter import app
from exporter.app import FilteringSink, Pipeline, Rotation, interleaved
from exporter.engine.parse import project
from exporter.engine.rule_inputs import alone_reads_clock
from exporter.metrics.renderer import Renderer
from exporter.metrics.selfmetrics import ExporterStats
from exporter.store import Store
from exporter.timeslice import TimeSlice


def groups(n: int) -> list[tuple[str, str, str]]:
    return [("capi", "ns", f"c{i:03}") for i in range(n)]


def test_every_group_once_per_period_a_slice_per_tick() -> None:
    fleet = groups(100)
    rotation = Rotation(period=10.0)
    taken: list[tuple[float, set[tuple[str, str, str]]]] = []
    for tick in range(0, 801):  # 40 s in 50 ms ticks
        t = tick * 0.05
        taken.append((t, rotation.take(t, fleet)))
    # Nothing during the first period (the start-up pass evaluated everything).
    assert not any(s for t, s in taken if t < 10.0)
    assert max(len(s) for _, s in taken) <= 2  # 100 groups over 200 ticks: never a big pass
    order = [(t, g) for t, s in taken for g in sorted(s)]
    assert len(order) >= 290
    for r in range(2):  # rounds follow one another, each group exactly once in each
        round_ = order[r * 100:(r + 1) * 100]
        assert [g for _, g in round_] == fleet
        assert 9.8 <= round_[-1][0] - round_[0][0] <= 10.1  # spread over the whole period
    third = [g for _, g in order[200:]]
    assert third == fleet[:len(third)]  # under way at 40 s, in the same order


def test_groups_that_appear_wait_for_the_next_round_and_vanished_ones_are_harmless() -> None:
    fleet = groups(10)
    rotation = Rotation(period=1.0)
    assert not rotation.begins_round(0.0)
    rotation.take(0.0, fleet)
    assert not rotation.begins_round(0.5)
    assert rotation.begins_round(1.0)  # the caller draws up the groups only then
    assert rotation.take(1.0, fleet) == set()  # the round is drawn up now
    assert not rotation.begins_round(1.05)
    fleet.append(("capi", "ns", "new"))
    first: set[tuple[str, str, str]] = set()
    for i in range(1, 21):
        first |= rotation.take(1.0 + i * 0.05, fleet)
    assert first == set(fleet[:10])  # the new group is not in this round, every old one is
    later: set[tuple[str, str, str]] = set()
    for i in range(21, 60):
        later |= rotation.take(1.0 + i * 0.05, fleet)
    assert ("capi", "ns", "new") in later


def test_each_kind_of_group_is_spread_over_the_whole_period() -> None:
    # 10 Cluster API groups among 90 provider objects (whose keys sort first): a Cluster API group
    # costs far more than a provider object, so taking them all in one stretch of the round is a
    # spike of CPU; each kind is spread instead, in key order within the kind.
    clusters = groups(10)
    providers = [("DockerMachine", "ns", f"m{i:03}") for i in range(90)]
    rotation = Rotation(period=10.0)
    rotation.take(0.0, providers + clusters)
    taken: list[tuple[float, tuple[str, ...]]] = []
    for tick in range(1, 400):
        t = 10.0 + tick * 0.05
        taken.extend((t, g) for g in sorted(rotation.take(t, providers + clusters)))
    first_round = taken[:100]
    assert sorted(g for _, g in first_round) == sorted(providers + clusters)
    cluster_times = [t for t, g in first_round if g[0] == "capi"]
    assert [g for _, g in first_round if g[0] == "capi"] == clusters
    start = first_round[0][0]
    for quarter in range(4):  # 2 or 3 Cluster API groups in each quarter of the round
        low, high = start + quarter * 2.5, start + (quarter + 1) * 2.5
        assert 2 <= sum(1 for t in cluster_times if low <= t < high) <= 3
    assert [g for _, g in first_round if g[0] == "DockerMachine"] == providers


def test_interleaved_keeps_every_group_once() -> None:
    mixed = [("mwrs", "a", "w"), ("capi", "ns", "c2"), ("ClusterClass", "ns", "cc"), ("capi", "ns", "c1")]
    out = interleaved(mixed)
    assert sorted(out) == sorted(mixed) and len(out) == len(mixed)
    assert [g for g in out if g[0] == "capi"] == [("capi", "ns", "c1"), ("capi", "ns", "c2")]


def test_the_pipeline_rotates_only_groups_time_alone_may_change() -> None:
    def raw(kind: str, api_version: str, name: str, status: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"apiVersion": api_version, "kind": kind, "status": status or {},
                "metadata": {"name": name, "namespace": "ns", "uid": name,
                             "creationTimestamp": "2026-01-01T00:00:00Z",
                             "labels": {"cluster.x-k8s.io/cluster-name": "c1"}}}

    infra, bootstrap = "infrastructure.cluster.x-k8s.io/v1beta2", "bootstrap.cluster.x-k8s.io/v1beta2"
    store = Store()
    for r in (raw("Machine", "cluster.x-k8s.io/v1beta2", "m1"),
              raw("DockerMachine", infra, "m1", {"initialization": {"provisioned": True}}),
              raw("KubeadmConfig", bootstrap, "m1", {"initialization": {"dataSecretCreated": True}}),
              raw("KubeadmConfig", bootstrap, "m2", {"initialization": {"dataSecretCreated": False}})):
        p = project(r)
        assert p is not None
        store.upsert(p)
    pipeline = Pipeline(store, FilteringSink(store), Renderer(), ExporterStats(), lambda _: True)
    assert len(store.all_groups()) == 4
    clocked = asyncio.run(pipeline.clocked_groups())
    assert sorted(clocked) == [("KubeadmConfig", "ns", "m2"), ("capi", "ns", "c1")]


def test_the_groups_of_a_round_are_drawn_up_a_kind_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # Over every stored object at once the listing held the loop ~20-27 ms at 100 % of the
    # benchmark fleet; between kinds it lets other tasks run (here every slice is used up).
    store = Store()
    kinds = [("ClusterClass", "cluster.x-k8s.io/v1beta2"),
             ("Placement", "cluster.open-cluster-management.io/v1beta1"),
             ("ManagedCluster", "cluster.open-cluster-management.io/v1")]
    for kind, api_version in kinds:
        for i in range(3):
            namespace = "" if kind == "ManagedCluster" else "ns"
            p = project({"apiVersion": api_version, "kind": kind, "status": {},
                         "metadata": {"name": f"o{i}", "namespace": namespace, "uid": f"{kind}{i}",
                                      "creationTimestamp": "2026-01-01T00:00:00Z"}})
            assert p is not None
            store.upsert(p)
    assert len(store.kinds()) == len(kinds)
    pipeline = Pipeline(store, FilteringSink(store), Renderer(), ExporterStats(), lambda _: True)
    monkeypatch.setattr(app, "TimeSlice", lambda: TimeSlice(0.0))
    ticks = 0

    async def other_task() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    async def main() -> list[tuple[str, ...]]:
        other = asyncio.create_task(other_task())
        await asyncio.sleep(0)
        before = ticks
        try:
            groups = await pipeline.clocked_groups()
        finally:
            other.cancel()
        assert ticks - before >= len(kinds) - 1
        return groups

    assert sorted(asyncio.run(main())) == sorted(store.all_groups(alone_if=alone_reads_clock)) != []
