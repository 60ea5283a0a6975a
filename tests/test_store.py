"""The store: atomic per-kind replace, dirty groups, dependents, shard filtering."""

from __future__ import annotations

from exporter.engine.evaluate_types import CapiGroup, MwrsGroup, SingleGroup
from exporter.engine.model import (
    Cluster,
    ClusterClass,
    InfraObject,
    Machine,
    ManagedCluster,
    ManifestWork,
    ManifestWorkReplicaSet,
    Meta,
    Placement,
    PlacementRef,
)
from exporter.store import Store


def meta(kind: str, ns: str, name: str, rv: str = "1") -> Meta:
    return Meta(kind=kind, api_version="x/v1", namespace=ns, name=name, resource_version=rv)


def machine(name: str, cluster: str = "c1", ns: str = "ns", rv: str = "1") -> Machine:
    return Machine(meta=meta("Machine", ns, name, rv), cluster_name=cluster)


def test_upsert_marks_the_objects_group_dirty_once() -> None:
    store = Store()
    store.upsert(Cluster(meta=meta("Cluster", "ns", "c1"), cluster_name="c1"))
    store.upsert(machine("m1"))
    assert store.take_dirty() == {("capi", "ns", "c1")}
    assert store.take_dirty() == set()


def test_group_holds_cluster_and_descendants_only() -> None:
    store = Store()
    store.upsert(Cluster(meta=meta("Cluster", "ns", "c1"), cluster_name="c1"))
    store.upsert(machine("m1"))
    store.upsert(machine("m2", cluster="c2"))
    group = store.build(("capi", "ns", "c1"))
    assert isinstance(group, CapiGroup)
    assert sorted(o.meta.name for o in group.objects) == ["c1", "m1"]


def test_replace_deletes_objects_missing_from_the_new_list() -> None:
    store = Store()
    for name in ("m1", "m2", "m3"):
        store.upsert(machine(name))
    store.take_dirty()
    store.replace("Machine", [machine("m1"), machine("m3", rv="2")])
    assert store.get(("Machine", "ns", "m2")) is None
    assert store.get(("Machine", "ns", "m3")) == machine("m3", rv="2")
    assert store.take_dirty() == {("capi", "ns", "c1")}


def test_replace_of_unchanged_objects_dirties_nothing() -> None:
    store = Store()
    store.upsert(machine("m1"))
    store.take_dirty()
    store.replace("Machine", [machine("m1")])
    assert store.take_dirty() == set()


def test_replace_in_one_namespace_leaves_other_namespaces_alone() -> None:
    store = Store()
    store.upsert(machine("m1", ns="a"))
    store.upsert(machine("m1", ns="b"))
    store.replace("Machine", [], namespace="a")
    assert store.get(("Machine", "a", "m1")) is None
    assert store.get(("Machine", "b", "m1")) is not None


def test_delete_dirties_the_group_and_an_empty_group_builds_to_none() -> None:
    store = Store()
    store.upsert(machine("m1"))
    store.take_dirty()
    store.delete("Machine", "ns", "m1")
    assert store.take_dirty() == {("capi", "ns", "c1")}
    assert store.build(("capi", "ns", "c1")) is None


def test_cluster_class_change_dirties_the_clusters_using_it() -> None:
    store = Store()
    store.upsert(Cluster(meta=meta("Cluster", "ns", "c1"), cluster_name="c1", topology_class="cc"))
    store.upsert(Cluster(meta=meta("Cluster", "ns", "c2"), cluster_name="c2"))
    store.take_dirty()
    store.upsert(ClusterClass(meta=meta("ClusterClass", "ns", "cc")))
    # The class is evaluated on its own (its conditions are exported) and dirties its users.
    assert store.take_dirty() == {("capi", "ns", "c1"), ("ClusterClass", "ns", "cc")}


def test_a_clusters_group_carries_the_cluster_class_its_topology_names() -> None:
    store = Store()
    for ns, name in (("ns", "cc"), ("ns", "other"), ("shared", "cc")):
        store.upsert(ClusterClass(meta=meta("ClusterClass", ns, name)))
    store.upsert(Cluster(meta=meta("Cluster", "ns", "c1"), cluster_name="c1", topology_class="cc"))
    store.upsert(Cluster(meta=meta("Cluster", "ns", "c2"), cluster_name="c2", topology_class="cc",
                         topology_class_namespace="shared"))
    store.upsert(Cluster(meta=meta("Cluster", "ns", "c3"), cluster_name="c3", topology_class="gone"))
    store.upsert(machine("m4", cluster="c4"))  # a group whose Cluster is not (yet) there
    classes = {name: group.cluster_classes for name in ("c1", "c2", "c3", "c4")
               if isinstance(group := store.build(("capi", "ns", name)), CapiGroup)}
    assert classes["c1"] == {("ns", "cc"): store.get(("ClusterClass", "ns", "cc"))}
    assert classes["c2"] == {("shared", "cc"): store.get(("ClusterClass", "shared", "cc"))}
    assert classes["c3"] == classes["c4"] == {}


def mwrs_fixture(store: Store) -> None:
    store.upsert(
        ManifestWorkReplicaSet(
            meta=meta("ManifestWorkReplicaSet", "apps", "hello"), placement_refs=(PlacementRef("p"),)
        )
    )
    store.upsert(ManifestWork(meta=meta("ManifestWork", "cluster1", "hello-x"), owner="apps.hello"))
    store.upsert(ManagedCluster(meta=meta("ManagedCluster", "", "cluster1")))
    store.upsert(Placement(meta=meta("Placement", "apps", "p")))
    store.take_dirty()


def test_mwrs_group_gathers_works_by_owner_label_placements_and_managed_clusters() -> None:
    store = Store()
    mwrs_fixture(store)
    group = store.build(("mwrs", "apps", "hello"))
    assert isinstance(group, MwrsGroup)
    assert [w.meta.name for w in group.manifest_works] == ["hello-x"]
    assert list(group.placements) == ["p"]
    assert list(group.managed_clusters) == ["cluster1"]


def test_an_object_evaluated_alone_is_its_own_group_under_its_own_key() -> None:
    store = Store()
    store.upsert(Cluster(meta=meta("Cluster", "ns", "c1"), cluster_name="c1"))
    infra = InfraObject(meta=meta("DockerMachine", "ns", "m1"), cluster_name="c1")
    store.upsert(infra)
    assert store.take_dirty() == {("capi", "ns", "c1"), infra.key}
    assert next(g for g in store.all_groups() if g == infra.key) is infra.key  # no tuple of its own
    group = store.build(infra.key)
    assert isinstance(group, SingleGroup) and group.obj is infra
    changed = InfraObject(meta=meta("DockerMachine", "ns", "m1", rv="2"), cluster_name="c1", ready=True)
    store.upsert(changed)
    assert store.take_dirty() == {infra.key}
    assert isinstance(group := store.build(infra.key), SingleGroup) and group.obj is changed
    store.delete("DockerMachine", "ns", "m1")
    assert store.take_dirty() == {infra.key}
    assert store.build(infra.key) is None
    assert store.all_groups() == [("capi", "ns", "c1")]


def test_a_manifest_work_that_gains_its_owner_leaves_its_own_group_for_the_mwrs() -> None:
    store = Store()
    mwrs_fixture(store)
    orphan = ManifestWork(meta=meta("ManifestWork", "cluster1", "late"))
    store.upsert(orphan)
    assert store.take_dirty() == {orphan.key}
    assert isinstance(store.build(orphan.key), SingleGroup)
    store.upsert(ManifestWork(meta=meta("ManifestWork", "cluster1", "late", rv="2"), owner="apps.hello"))
    assert store.take_dirty() == {orphan.key, ("mwrs", "apps", "hello")}
    assert store.build(orphan.key) is None
    group = store.build(("mwrs", "apps", "hello"))
    assert isinstance(group, MwrsGroup)
    assert sorted(w.meta.name for w in group.manifest_works) == ["hello-x", "late"]
    assert orphan.key not in store.all_groups()


def test_managed_cluster_and_placement_changes_dirty_the_mwrs_that_read_them() -> None:
    store = Store()
    mwrs_fixture(store)
    store.upsert(ManagedCluster(meta=meta("ManagedCluster", "", "cluster1", rv="2")))
    assert ("mwrs", "apps", "hello") in store.take_dirty()
    store.upsert(Placement(meta=meta("Placement", "apps", "p", rv="2")))
    assert ("mwrs", "apps", "hello") in store.take_dirty()
    store.upsert(Placement(meta=meta("Placement", "apps", "other", rv="2")))
    assert ("mwrs", "apps", "hello") not in store.take_dirty()


def test_shard_filter_hides_groups_of_other_shards() -> None:
    store = Store(keep=lambda g: g[2] == "c1")
    store.upsert(machine("m1"))
    store.upsert(machine("m2", cluster="c2"))
    assert store.take_dirty() == {("capi", "ns", "c1")}
    assert store.all_groups() == [("capi", "ns", "c1")]
