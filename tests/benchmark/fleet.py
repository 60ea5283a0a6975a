"""The benchmark fleet: its size at a given scale, and the shared pieces of object generation.

Owns ``FleetSize`` (the design's target fleet, scaled to 10 %, 50 % or 100 %), ``Gen`` (a seeded
source of names, uids and timestamps so two runs serve identical objects), the metav1 condition
helper and ``generate`` (every object of the fleet, in the order a real hub would create them).
The per-family object shapes live in ``fleet_capi.py`` and ``fleet_ocm.py``; serving and mutating
the objects belong to ``apiserver.py``.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]

# A fixed "now" so generated timestamps, and therefore computed ages, do not depend on the run day.
EPOCH = 1_793_000_000.0  # 2026-10-26T...Z
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet Kubernetes uses for generateName


@dataclass(frozen=True)
class FleetSize:
    """How many objects of each kind; ``for_scale(100)`` is the target fleet of docs/performance.md."""

    scale: int
    clusters: int
    md_per_cluster: int
    cp_replicas: int
    workers: int  # worker Machines over all MachineDeployments
    pool_every: int  # one MachinePool per this many Clusters
    managed_clusters: int
    mwrs: int
    clusters_per_namespace: int = 20
    mwrs_per_namespace: int = 50

    @classmethod
    def for_scale(cls, scale: int) -> FleetSize:
        if not 1 <= scale <= 100:
            raise ValueError(f"scale is a percentage of the target fleet (1-100), not {scale}")

        def part(n: int) -> int:
            return max(1, round(n * scale / 100))

        return cls(
            scale=scale,
            clusters=part(1000),
            md_per_cluster=2,
            cp_replicas=3,
            workers=part(17_000),  # + 3 control plane Machines per Cluster = 20,000 at 100 %
            pool_every=5,
            managed_clusters=part(2000),
            mwrs=part(500),
        )

    @property
    def machine_deployments(self) -> int:
        return self.clusters * self.md_per_cluster

    @property
    def machines(self) -> int:
        return self.workers + self.clusters * self.cp_replicas

    @property
    def machine_pools(self) -> int:
        return len(range(0, self.clusters, self.pool_every))

    def workers_of(self, md_index: int) -> int:
        """Worker replicas of the ``md_index``-th MachineDeployment (fleet-wide index)."""
        base, extra = divmod(self.workers, self.machine_deployments)
        return base + (1 if md_index < extra else 0)

    def expected_counts(self) -> dict[str, int]:
        """Objects per kind before scenario-dependent extras (scaling Machines add a few)."""
        return {
            "Cluster": self.clusters,
            "KubeadmControlPlane": self.clusters,
            "MachineDeployment": self.machine_deployments,
            "MachineSet": self.machine_deployments,
            "MachinePool": self.machine_pools,
            "ManagedCluster": self.managed_clusters,
            "ManifestWorkReplicaSet": self.mwrs,
            "Placement": self.mwrs,
            "PlacementDecision": self.mwrs,
        }


class Gen:
    """Seeded randomness: the same seed gives byte-identical objects."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def suffix(self, n: int = 5) -> str:
        return "".join(self.rng.choice(SUFFIX_ALPHABET) for _ in range(n))

    def ago(self, low_s: float, high_s: float) -> str:
        """An RFC3339 time between ``high_s`` and ``low_s`` seconds before EPOCH."""
        return rfc3339(EPOCH - self.rng.uniform(low_s, high_s))

    def pick(self, weights: dict[str, float]) -> str:
        return self.rng.choices(list(weights), list(weights.values()))[0]


def rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def cond(
    type_: str,
    status: bool | None,
    reason: str,
    message: str = "",
    *,
    ltt: str,
    generation: int | None = None,
) -> Obj:
    """A metav1 condition (the v1beta2 shape); ``status`` None is Unknown."""
    out: Obj = {
        "type": type_,
        "status": "Unknown" if status is None else ("True" if status else "False"),
        "lastTransitionTime": ltt,
        "reason": reason,
        "message": message,
    }
    if generation is not None:
        out["observedGeneration"] = generation
    return out


def v1beta1_cond(type_: str, ok: bool, reason: str = "", *, ltt: str, severity: str = "Warning") -> Obj:
    """A v1beta1 CAPI condition, as kept under status.deprecated.v1beta1.conditions."""
    if ok:
        return {"type": type_, "status": "True", "lastTransitionTime": ltt}
    return {
        "type": type_,
        "status": "False",
        "severity": severity,
        "reason": reason,
        "lastTransitionTime": ltt,
    }


def owner(api_version: str, kind: str, name: str, uid: str, controller: bool = True) -> Obj:
    ref: Obj = {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}
    if controller:
        ref.update(controller=True, blockOwnerDeletion=True)
    return ref


def generate(scale: int, seed: int = 1, providers: bool = True) -> Iterator[Obj]:
    """Every object of the fleet at ``scale`` percent, deterministic for a given seed.

    ``providers``: with the provider objects the Clusters and Machines reference (a DockerCluster
    per Cluster, a DockerMachine and a KubeadmConfig per Machine); the other objects are the same
    either way.
    """
    from tests.benchmark.fleet_capi import capi_objects
    from tests.benchmark.fleet_ocm import ocm_objects
    from tests.benchmark.fleet_providers import with_providers

    size = FleetSize.for_scale(scale)
    gen = Gen(seed)
    capi = capi_objects(size, gen)
    yield from with_providers(capi) if providers else capi
    yield from ocm_objects(size, gen)


def count_by_kind(objects: list[Obj]) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in objects:
        out[o["kind"]] = out.get(o["kind"], 0) + 1
    return out
