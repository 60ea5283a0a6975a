"""The example fleet on a real kube-apiserver: stored as written, and exported as from files.

For each era (Cluster API v1beta1 storage with an ocm v1.0 hub; v1beta2 storage with ocm v1.2),
the real API server gets that era's upstream CRDs and its example files, written as controllers
write them. The server validates, defaults and prunes them; what it stores must be what the
example says, and the exporter watching it must serve what ``serve --from-files`` serves.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.realcluster import eras
from tests.realcluster.cluster import Obj, RealCluster
from tests.realcluster.exporter import Exporter, Sample

pytestmark = pytest.mark.realcluster

# Metadata only the server writes; everything else must come back as the example wrote it.
SERVER_WRITTEN = ("resourceVersion", "managedFields", "deletionGracePeriodSeconds")


@dataclass
class Loaded:
    era: eras.Era
    cluster: RealCluster
    examples: list[Obj]
    stored: list[Obj]
    tmp: Path
    started: float


@pytest.fixture(scope="module", params=[e.name for e in eras.ERAS])
def loaded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    era = eras.era(request.param)
    tmp = tmp_path_factory.mktemp(f"era-{era.name}")
    started = time.time()
    with RealCluster(tmp / "cluster") as cluster:
        cluster.install_crds(era.crd_files())
        examples = list(eras.read_objects(era.files()))
        yield Loaded(era, cluster, examples, eras.load(cluster, examples), tmp, started)


def test_the_eras_together_hold_every_example_file() -> None:
    every = set(eras.EXAMPLES.glob("*/*.yaml"))
    held = [set(e.files()) for e in eras.ERAS]
    assert set.union(*held) == every
    assert set.intersection(*held) == {eras.EXAMPLES / "ocm" / "managed-clusters.yaml"}


def _without_server_fields(obj: Obj) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items() if k not in SERVER_WRITTEN}
    return {**obj, "metadata": meta}


def test_the_server_stores_every_example_as_written(loaded: Loaded) -> None:
    """No field pruned, no default added, nothing changed: the examples are what hubs store."""
    differences = []
    for example, stored in zip(loaded.examples, loaded.stored, strict=True):
        want, got = _without_server_fields(example), _without_server_fields(stored)
        if want != got:
            meta = example["metadata"]
            name = f"{example['kind']} {meta.get('namespace', '')}/{meta['name']}"
            differences.append(f"{name}: {_first_difference(want, got)}")
    assert not differences, "\n".join(differences)


def _first_difference(want: Any, got: Any, path: str = "") -> str:
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            if key not in got:
                return f"{path}.{key} pruned"
            if key not in want:
                return f"{path}.{key} added by the server: {got[key]!r}"
            if want[key] != got[key]:
                return _first_difference(want[key], got[key], f"{path}.{key}")
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            if w != g:
                return _first_difference(w, g, f"{path}[{i}]")
    return f"{path}: {want!r} became {got!r}"


def _comparable(samples: set[Sample], since: float) -> set[Sample]:
    """The object families; a timestamp taken while the test ran (the time a computed condition
    was first computed, which differs between two processes) compares as "recent"."""
    kept = set()
    for name, labels, value in samples:
        if name.startswith(("fleet_status_exporter_", "process_", "python_")):
            continue
        if name.endswith("_last_transition_time") and float(value) >= since:
            value = "recent"
        kept.add((name, labels, value))
    return kept


def test_metrics_from_the_server_equal_metrics_from_files(loaded: Loaded) -> None:
    files = loaded.tmp / "files"
    files.mkdir(exist_ok=True)
    for path in loaded.era.files():
        shutil.copy(path, files / path.name)
    kubeconfig = loaded.cluster.admin_kubeconfig(loaded.tmp / "kubeconfig")
    with (Exporter(loaded.tmp / "kube.log", "--kubeconfig", str(kubeconfig)) as from_kube,
          Exporter(loaded.tmp / "files.log", "--from-files", str(files)) as from_files):
        from_kube.wait_ready()
        from_files.wait_ready()
        kube = _comparable(from_kube.samples(), loaded.started)
        local = _comparable(from_files.samples(), loaded.started)
    assert len(kube) > 1000
    only_kube, only_files = sorted(kube - local), sorted(local - kube)
    assert not only_kube and not only_files, (
        f"only from the server: {only_kube[:10]}\nonly from files: {only_files[:10]}")
