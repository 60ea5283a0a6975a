"""The files source reads what kubectl writes and keeps the store equal to the files on disk."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from exporter.sources.files import FileSource, load, raw_objects
from exporter.store import Store


def cluster(name: str, ns: str = "ns") -> dict:
    meta = {"name": name, "namespace": ns}
    return {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": meta}


def machine(name: str, cluster_name: str = "c1", version: str = "v1.30.0") -> dict:
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
        "metadata": {"name": name, "namespace": "ns",
                     "labels": {"cluster.x-k8s.io/cluster-name": cluster_name}},
        "spec": {"clusterName": cluster_name, "version": version},
    }


def write(path: Path, *docs: dict) -> None:
    path.write_text(yaml.safe_dump_all(docs))
    # Bump the mtime explicitly: two writes within one clock tick must still look different.
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_multi_document_yaml_list_and_json_are_flattened():
    text = yaml.safe_dump_all([cluster("a"), {"apiVersion": "v1", "kind": "List",
                                              "items": [cluster("b"), {"kind": "MachineList",
                                                                      "items": [machine("m1")]}]}, None])
    assert [o["metadata"]["name"] for o in raw_objects(text, ".yaml")] == ["a", "b", "m1"]
    as_json = json.dumps({"kind": "List", "items": [cluster("c")]})
    assert [o["metadata"]["name"] for o in raw_objects(as_json, ".json")] == ["c"]


def test_directories_are_walked_and_hidden_or_foreign_files_skipped(tmp_path):
    (tmp_path / "sub").mkdir()
    write(tmp_path / "a.yaml", cluster("a"))
    write(tmp_path / "sub" / "b.yml", cluster("b"))
    (tmp_path / "notes.txt").write_text("not a manifest")
    (tmp_path / ".hidden").mkdir()
    write(tmp_path / ".hidden" / "c.yaml", cluster("c"))
    loaded = load(tmp_path)
    assert sorted(o.meta.name for o in loaded.projections) == ["a", "b"]
    assert loaded.errors == []


def test_a_broken_file_is_reported_and_the_others_still_load(tmp_path):
    write(tmp_path / "good.yaml", cluster("a"), machine("m1"))
    (tmp_path / "bad.yaml").write_text("kind: [unclosed\n")
    write(tmp_path / "nameless.yaml", {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
                                       "metadata": {"namespace": "ns"}},
          {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ignored"}})
    loaded = load(tmp_path)
    assert sorted(o.meta.name for o in loaded.projections) == ["a", "m1"]
    assert len(loaded.errors) == 1 and "bad.yaml" in loaded.errors[0]
    assert loaded.invalid == {"Machine": 1}


async def test_store_follows_edits_additions_and_deletions(tmp_path):
    store = Store()
    write(tmp_path / "c1.yaml", cluster("c1"), machine("m1"), machine("m2"))
    source = FileSource(tmp_path, store, poll_interval=0.01)
    assert await source.poll_once()
    assert source.synced
    assert store.count_by_kind() == {"Cluster": 1, "Machine": 2}
    assert not await source.poll_once(), "nothing changed: no reload"

    write(tmp_path / "c1.yaml", cluster("c1"), machine("m1", version="v1.31.0"))
    store.take_dirty()
    assert await source.poll_once()
    assert store.get(("Machine", "ns", "m2")) is None
    assert store.get(("Machine", "ns", "m1")).version == "v1.31.0"
    assert store.take_dirty() == {("capi", "ns", "c1")}

    write(tmp_path / "c2.yaml", cluster("c2"))
    assert await source.poll_once()
    assert store.get(("Cluster", "ns", "c2")) is not None

    (tmp_path / "c1.yaml").unlink()
    assert await source.poll_once()
    assert store.count_by_kind().get("Machine", 0) == 0
    assert store.get(("Cluster", "ns", "c1")) is None
    assert source.stats.objects == {"Cluster": 1}
    assert source.stats.reads == 4


async def test_a_file_that_turns_unreadable_keeps_its_last_good_objects(tmp_path):
    """A half-written file (an editor saving, a typo) must not make its clusters vanish."""
    store = Store()
    write(tmp_path / "c1.yaml", cluster("c1"), machine("m1"))
    source = FileSource(tmp_path, store, poll_interval=0.01)
    assert await source.poll_once()
    (tmp_path / "c1.yaml").write_text("kind: [unclosed\n")
    os.utime(tmp_path / "c1.yaml", ns=(0, 10**18))
    assert await source.poll_once()
    assert store.get(("Machine", "ns", "m1")) is not None
    assert source.stats.read_errors == 1
    write(tmp_path / "c1.yaml", cluster("c1"))  # fixed, and m1 really removed
    assert await source.poll_once()
    assert store.get(("Machine", "ns", "m1")) is None


@pytest.mark.parametrize("name", ["missing-dir", "missing.yaml"])
async def test_a_missing_path_loads_nothing(tmp_path, name):
    store = Store()
    source = FileSource(tmp_path / name, store)
    assert await source.poll_once()
    assert len(store) == 0 and source.synced


async def test_provider_roles_are_excluded_from_files_as_from_the_api():
    """--exclude-resource InfraMachine leaves out every InfraMachine kind (AWSMachine), not the
    InfraCluster (AWSCluster) nor the bootstrap configs; the same names the kube source takes."""
    from exporter.app import FilteringSink

    store = Store()
    sink = FilteringSink(store, exclude=("InfraMachine",))
    examples = Path(__file__).resolve().parent.parent / "examples"
    source = FileSource(examples / "capi" / "prod-us-1-rolling-upgrade.yaml", sink)
    await source.poll_once()
    kinds = set(store.count_by_kind())
    assert {"AWSCluster", "KubeadmConfig", "Machine"} <= kinds
    assert "AWSMachine" not in kinds
