"""The benchmark's fleet generator makes valid, mutually consistent objects (checked at a small scale).

The benchmark itself (``python -m tests.benchmark``) does not run in CI; these tests keep the
objects it serves honest: sizes, identity, links between objects, counters that agree with the
Machines, OCM summaries that agree with the works, every object readable by the engine, and the
change markers readable back from an exposition.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from exporter.engine.parse import project_unguarded
from tests.benchmark import probes
from tests.benchmark.fleet import FleetSize, count_by_kind, generate
from tests.benchmark.mutations import MARKER_BASE, changed, flipped_conditions, recreated

Obj = dict[str, Any]
SCALE = 3


@pytest.fixture(scope="module")
def fleet() -> list[Obj]:
    return list(generate(SCALE, seed=5))


def by_kind(objects: list[Obj], kind: str) -> list[Obj]:
    return [o for o in objects if o["kind"] == kind]


def status_of(obj: Obj, type_: str) -> str | None:
    return next((c["status"] for c in obj["status"].get("conditions", []) if c["type"] == type_), None)


def test_target_fleet_matches_the_design() -> None:
    size = FleetSize.for_scale(100)
    assert (size.clusters, size.machine_deployments, size.machines) == (1000, 2000, 20_000)
    assert (size.machine_pools, size.mwrs, size.managed_clusters) == (200, 500, 2000)
    assert sum(size.workers_of(i) for i in range(size.machine_deployments)) == size.workers
    assert FleetSize.for_scale(10).clusters == 100
    with pytest.raises(ValueError):
        FleetSize.for_scale(0)


def test_sizes_at_small_scale(fleet: list[Obj]) -> None:
    size = FleetSize.for_scale(SCALE)
    counts = count_by_kind(fleet)
    for kind, expected in size.expected_counts().items():
        assert counts[kind] == expected, kind
    scaling_extra = sum(md["spec"]["replicas"] for md in by_kind(fleet, "MachineDeployment")) - size.workers
    assert counts["Machine"] == size.machines + scaling_extra


def test_one_provider_object_per_reference_and_the_rest_unchanged(fleet: list[Obj]) -> None:
    """A DockerCluster per Cluster, a DockerMachine and a KubeadmConfig per Machine, each named as
    its owner references it; without them the fleet is the same objects."""
    counts = count_by_kind(fleet)
    assert counts["DockerCluster"] == counts["Cluster"]
    assert counts["DockerMachine"] == counts["KubeadmConfig"] == counts["Machine"]
    providers = ("DockerCluster", "DockerMachine", "KubeadmConfig")
    keys = {(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"])
            for o in fleet if o["kind"] in providers}
    for m in by_kind(fleet, "Machine"):
        ns = m["metadata"]["namespace"]
        assert ("DockerMachine", ns, m["spec"]["infrastructureRef"]["name"]) in keys
        assert ("KubeadmConfig", ns, m["spec"]["bootstrap"]["configRef"]["name"]) in keys
    for c in by_kind(fleet, "Cluster"):
        assert ("DockerCluster", c["metadata"]["namespace"], c["spec"]["infrastructureRef"]["name"]) in keys
    without = list(generate(SCALE, seed=5, providers=False))
    assert without == [o for o in fleet if o["kind"] not in providers]


def test_same_seed_same_objects_other_seed_other_objects(fleet: list[Obj]) -> None:
    assert list(generate(SCALE, seed=5)) == fleet
    assert list(generate(SCALE, seed=6)) != fleet


def test_identity_is_unique_and_every_object_projects_cleanly(fleet: list[Obj]) -> None:
    keys = Counter((o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in fleet)
    assert max(keys.values()) == 1
    assert len({o["metadata"]["uid"] for o in fleet}) == len(fleet)
    for obj in fleet:
        projection = project_unguarded(obj)
        assert projection is not None, obj["kind"]
        assert projection.problems == (), (obj["kind"], obj["metadata"]["name"], projection.problems)


def test_owner_references_and_labels_point_at_existing_objects(fleet: list[Obj]) -> None:
    uids = {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o["metadata"]["uid"]
        for o in fleet
    }
    for obj in fleet:
        meta = obj["metadata"]
        for ref in meta.get("ownerReferences", []):
            assert uids[(ref["kind"], meta.get("namespace", ""), ref["name"])] == ref["uid"]
        labels = meta.get("labels", {})
        ns = meta.get("namespace", "")
        if "cluster.x-k8s.io/cluster-name" in labels:
            assert ("Cluster", ns, labels["cluster.x-k8s.io/cluster-name"]) in uids
        if obj["kind"] == "Machine" and "cluster.x-k8s.io/set-name" in labels:
            assert ("MachineSet", ns, labels["cluster.x-k8s.io/set-name"]) in uids
            assert ("MachineDeployment", ns, labels["cluster.x-k8s.io/deployment-name"]) in uids


def test_counters_agree_with_the_machines(fleet: list[Obj]) -> None:
    machines = by_kind(fleet, "Machine")
    by_set: dict[str, list[Obj]] = {}
    for m in machines:
        by_set.setdefault(m["metadata"]["labels"].get("cluster.x-k8s.io/set-name", ""), []).append(m)
    for ms in by_kind(fleet, "MachineSet"):
        mine = by_set[ms["metadata"]["name"]]
        assert ms["status"]["replicas"] == len(mine)
        assert ms["status"]["readyReplicas"] == sum(status_of(m, "Ready") == "True" for m in mine)
        assert ms["status"]["upToDateReplicas"] == sum(status_of(m, "UpToDate") == "True" for m in mine)
    for cluster in by_kind(fleet, "Cluster"):
        ns, name = cluster["metadata"]["namespace"], cluster["metadata"]["name"]
        mine = [
            m
            for m in machines
            if m["metadata"]["namespace"] == ns
            and m["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"] == name
        ]
        cp = [m for m in mine if "cluster.x-k8s.io/control-plane" in m["metadata"]["labels"]]
        assert cluster["status"]["controlPlane"]["replicas"] == len(cp)
        assert cluster["status"]["workers"]["replicas"] == len(mine) - len(cp)
        assert cluster["status"]["workers"]["readyReplicas"] == sum(
            status_of(m, "Ready") == "True" for m in mine if m not in cp
        )


def test_scenarios_give_a_condition_mix(fleet: list[Obj]) -> None:
    ready = Counter(status_of(m, "Ready") for m in by_kind(fleet, "Machine"))
    assert ready["True"] > 0.8 * sum(ready.values())
    assert ready["False"] > 0
    phases = Counter(m["status"]["phase"] for m in by_kind(fleet, "Machine"))
    assert phases["Provisioning"] > 0 and phases["Running"] > 0
    rolled_out = Counter(status_of(m, "PlacementRolledOut") for m in by_kind(fleet, "ManifestWorkReplicaSet"))
    assert rolled_out["True"] > 0 and rolled_out["False"] > 0


def test_ocm_objects_agree(fleet: list[Obj]) -> None:
    clusters = {m["metadata"]["name"] for m in by_kind(fleet, "ManagedCluster")}
    works = Counter()
    for w in by_kind(fleet, "ManifestWork"):
        assert w["metadata"]["namespace"] in clusters
        works[w["metadata"]["labels"]["work.open-cluster-management.io/manifestworkreplicaset"]] += 1
    decisions = {
        d["metadata"]["labels"]["cluster.open-cluster-management.io/placement"]: d
        for d in by_kind(fleet, "PlacementDecision")
    }
    placements = {p["metadata"]["name"]: p for p in by_kind(fleet, "Placement")}
    for mwrs in by_kind(fleet, "ManifestWorkReplicaSet"):
        key = f"{mwrs['metadata']['namespace']}.{mwrs['metadata']['name']}"
        assert mwrs["status"]["summary"]["total"] == works[key]
        placement = placements[mwrs["spec"]["placementRefs"][0]["name"]]
        selected = placement["status"]["numberOfSelectedClusters"]
        assert selected == works[key] == len(decisions[placement["metadata"]["name"]]["status"]["decisions"])


def test_a_change_carries_a_marker_that_reads_back(fleet: list[Obj]) -> None:
    machine = next(m for m in by_kind(fleet, "Machine") if status_of(m, "NodeHealthy") == "True")
    new = changed(machine, MARKER_BASE + 1, flip=True)
    assert new["metadata"]["uid"] == machine["metadata"]["uid"]
    assert status_of(new, "NodeHealthy") == status_of(new, "Ready") == "False"
    assert status_of(machine, "Ready") == "True"  # the original is untouched
    back = flipped_conditions(new["status"]["conditions"], "2027-01-01T00:00:00Z")
    assert {c["status"] for c in back if c["type"] in ("Ready", "NodeHealthy")} == {"True"}
    again = recreated(machine, MARKER_BASE + 2, "new-uid")
    assert again["metadata"]["uid"] == "new-uid" and again["metadata"]["name"] == machine["metadata"]["name"]
    ns, name = machine["metadata"]["namespace"], machine["metadata"]["name"]
    text = (
        "# HELP capi_machine_status_certificatesexpirydate x\n"
        "# TYPE capi_machine_status_certificatesexpirydate gauge\n"
        # label order aside, name must not match inside cluster_name
        f'capi_machine_status_certificatesexpirydate{{cluster_name="c",name="{name}",namespace="{ns}",'
        f'uid="u"}} {float(MARKER_BASE + 1):.10g}\n# HELP other y\nother 1\n'
    )
    assert probes.markers(text) == {(ns, name): MARKER_BASE + 1}
    assert probes.series_count(text) == 2
    assert probes.percentile([3.0, 1.0, 2.0], 50) == 2.0


def test_visibility_bounds_a_change_by_the_scrape_that_missed_it_and_the_one_that_showed_it() -> None:
    tracker = probes.Visibility(0)
    tracker.add([{"namespace": "ns", "name": "m1", "marker": 7, "at": 1.0}], 1)
    missed = probes.Scrape(start=2.0, headers=2.5, end=3.0, gzip=False, wire_bytes=0, body=b"")
    tracker.observe(missed, {("ns", "m1"): 6})
    assert tracker.latencies == [] and tracker.lower_bounds == []
    showed = probes.Scrape(start=5.0, headers=6.0, end=7.0, gzip=False, wire_bytes=0, body=b"")
    tracker.observe(showed, {("ns", "m1"): 7})
    assert tracker.latencies == [5.0]  # up to the headers of the scrape that showed it
    assert tracker.lower_bounds == [1.0]  # not applied yet when the scrape that missed it began


def test_series_are_counted_per_kind_by_family_prefix_and_uid() -> None:
    text = (
        "# HELP capi_machine_info x\n# TYPE capi_machine_info gauge\n"
        'capi_machine_info{name="m1",namespace="n",uid="u1",cluster_name="c"} 1\n'
        'capi_machine_status_condition{name="m1",namespace="n",uid="u1",type="Ready",status="True"} 1\n'
        'capi_machinedeployment_info{name="d",namespace="n",uid="u2",cluster_name="c"} 1\n'
        'capi_finding{kind="Machine",namespace="n",name="m1",code="X",severity="warning"} 1\n'
        "fleet_status_exporter_build_info 1\n"
    )
    assert probes.series_by_kind(text) == {
        "Machine": {"series": 2, "objects": 1},
        "MachineDeployment": {"series": 1, "objects": 1},
        "exporter": {"series": 1, "objects": 0},
        "findings": {"series": 1, "objects": 0},
    }
