"""The two generations of management cluster the examples come from, and loading them for real.

A hub stores each kind in one version and prunes what its CRD schema does not know, so one
server cannot hold v1beta1-era and v1beta2-era objects side by side without the conversion
webhooks of running controllers. Each example file therefore belongs to the era whose CRDs
store it as written; together the eras hold every file of ``examples/``.

Owns: the eras (which CRD sources, which example files), reading example files into objects,
and loading them into a ``RealCluster`` as controllers would have written them (the object,
its status, and a DELETE for those being deleted). Does not own assertions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.realcluster import build
from tests.realcluster.cluster import Obj, RealCluster

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@dataclass(frozen=True)
class Era:
    name: str
    crd_sources: tuple[str, ...]  # keys of build.CRD_SOURCES
    examples: tuple[str, ...]  # globs under examples/
    exclude: tuple[str, ...] = ()

    def files(self) -> list[Path]:
        excluded = {p for g in self.exclude for p in EXAMPLES.glob(g)}
        return sorted({p for g in self.examples for p in EXAMPLES.glob(g)} - excluded)

    def crd_files(self) -> list[Path]:
        return [f for source in self.crd_sources for f in build.crd_files(source)]


ERAS = (
    # Cluster API v1.8-v1.10 hubs (v1beta1 storage) with an ocm v1.0 hub's ManifestWorkReplicaSet.
    Era("v1beta1", ("capi-v1beta1", "ocm-v1.0"),
        ("capi/legacy-*.yaml", "ocm/cert-bundle-legacy-summary.yaml", "ocm/managed-clusters.yaml")),
    # Current hubs: Cluster API v1.14 (v1beta2 storage), ocm v1.2, the AWS and Docker providers.
    Era("v1beta2", ("capi-v1beta2", "ocm-v1.2", "aws-machinepool", "capd"),
        ("capi/*.yaml", "ocm/*.yaml"), exclude=("capi/legacy-*.yaml", "ocm/cert-bundle-legacy-summary.yaml")),
)


def era(name: str) -> Era:
    return next(e for e in ERAS if e.name == name)


def read_objects(files: Iterable[Path]) -> Iterator[Obj]:
    for path in files:
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict):
                continue
            if doc.get("kind") == "List":
                yield from (item for item in doc.get("items") or [] if isinstance(item, dict))
            else:
                yield doc


# Metadata the server assigns, that the examples carry as their objects' history left it.
HISTORY = ("uid", "creationTimestamp", "generation", "deletionTimestamp")


def load(cluster: RealCluster, objects: Iterable[Obj]) -> list[Obj]:
    """Writes the objects as their controllers would have (the object, then its status; a
    DELETE for those being deleted), then restores the metadata only their history could have
    produced; returns what the server stores."""
    written = []
    for obj in objects:
        kept = cluster.create(obj)
        meta: dict[str, Any] = obj.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            cluster.delete(kept["apiVersion"], kept["kind"], kept["metadata"].get("namespace"),
                           kept["metadata"]["name"])
        history = {k: meta[k] for k in HISTORY if k in meta}
        if history:
            cluster.rewrite_history(kept, history)
        written.append(kept)
    return [cluster.get(o["apiVersion"], o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])
            for o in written]
