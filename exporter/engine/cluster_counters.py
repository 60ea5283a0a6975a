"""The Cluster's ``controlPlane`` and ``workers`` replica counters, bubbled up from its objects.

Owns which objects a Cluster counts and how (§4.5 of the status rules) and the helpers that tell
which objects are the Cluster's control plane, its directly owned MachineSets and its stand-alone
worker Machines. Owns no condition (see ``cluster.py``).

controlPlane:
  * A KubeadmControlPlane named by spec.controlPlaneRef: its counters as the engine computed them
    (they count its Machines), falling back to what it reports.
  * A control plane kind the engine does not watch: the Cluster's own status.controlPlane (the
    Cluster controller copied it from that object), else unset.
  * A referenced control plane that is missing, or a topology whose controlPlaneRef is not set
    yet: all unset, as upstream.
  * No control plane object: the control plane Machines are counted, each one "desired".
workers: the sum over MachinePools, MachineDeployments, MachineSets owned directly by the Cluster
and stand-alone worker Machines (each one desired replica); a counter none of them sets stays unset.
``unavailableReplicas`` (both groups) = desiredReplicas - availableReplicas, floored at 0: the
capacity still missing, as the v1beta1 contract defined it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from exporter.engine import machine_rollup as rollup
from exporter.engine.evaluate_types import GroupView
from exporter.engine.model import Base, Cluster, Counters, KubeadmControlPlane, Machine
from exporter.engine.vocabulary import (
    AVAILABLE,
    READY,
    UP_TO_DATE,
)

KCP_KIND = "KubeadmControlPlane"
FIELDS = ("desiredReplicas", "replicas", "readyReplicas", "availableReplicas", "upToDateReplicas")


def control_plane_object(cluster: Cluster, view: GroupView) -> KubeadmControlPlane | None:
    ref = cluster.control_plane_ref
    if ref is None or ref.kind != KCP_KIND:
        return None
    return next((k for k in view.control_planes if k.meta.name == ref.name), None)


def has_topology(cluster: Cluster) -> bool:
    return bool(cluster.topology_class or cluster.topology_version)


def owned_by_cluster(obj: Base, cluster: Cluster) -> bool:
    return any(o.kind == "Cluster" and o.name == cluster.meta.name for o in obj.meta.owner_refs)


def standalone_workers(cluster: Cluster, view: GroupView) -> list[Machine]:
    return [m for m in view.machines if not m.control_plane and owned_by_cluster(m, cluster)]


def cluster_machine_sets(cluster: Cluster, view: GroupView) -> list[Base]:
    return [ms for ms in view.machine_sets if owned_by_cluster(ms, cluster)]


def _from_counters(c: Counters) -> dict[str, int | None]:
    return dict(zip(FIELDS, (c.desired, c.replicas, c.ready, c.available, c.up_to_date), strict=True))


def _of(view: GroupView, obj: Base, reported: Counters) -> dict[str, int | None]:
    """An object's counters as the engine computed them; what it reports where the engine did not."""
    values = _from_counters(reported)
    computed = view.computed(obj.key)
    if computed is not None:
        values.update({k: computed.counters[k] for k in FIELDS if k in computed.counters})
    return values


def _machine_counts(view: GroupView, machines: Iterable[Machine]) -> dict[str, int | None]:
    listed = list(machines)
    if not listed:
        return dict.fromkeys(FIELDS)
    return {
        "desiredReplicas": len(listed),
        "replicas": len(listed),
        "readyReplicas": rollup.count_true(view, listed, READY),
        "availableReplicas": rollup.count_true(view, listed, AVAILABLE),
        "upToDateReplicas": rollup.count_true(view, listed, UP_TO_DATE),
    }


def control_plane(cluster: Cluster, view: GroupView) -> dict[str, int | None]:
    ref = cluster.control_plane_ref
    if ref is None and has_topology(cluster):
        return dict.fromkeys(FIELDS)
    if ref is None:
        return _machine_counts(view, view.control_plane_machines())
    if ref.kind != KCP_KIND:
        reported = cluster.reported_control_plane
        return _from_counters(reported) if reported is not None else dict.fromkeys(FIELDS)
    kcp = control_plane_object(cluster, view)
    if kcp is None:
        return dict.fromkeys(FIELDS)
    return _of(view, kcp, kcp.reported)


def workers(cluster: Cluster, view: GroupView) -> dict[str, int | None]:
    parts = [_of(view, mp, mp.reported) for mp in view.machine_pools]
    parts += [_of(view, md, md.reported) for md in view.machine_deployments]
    parts += [_of(view, ms, ms.reported) for ms in view.machine_sets if owned_by_cluster(ms, cluster)]
    loose = standalone_workers(cluster, view)
    if loose:
        parts.append(_machine_counts(view, loose))
    return {k: _sum(p[k] for p in parts) for k in FIELDS}


def _sum(values: Iterable[int | None]) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _unavailable(values: Mapping[str, int | None]) -> int | None:
    desired, available = values.get("desiredReplicas"), values.get("availableReplicas")
    if desired is None or available is None:
        return None
    return max(desired - available, 0)


def cluster_counters(cluster: Cluster, view: GroupView) -> dict[str, int | None]:
    """Both groups under dotted keys: ``controlPlane.readyReplicas``, ``workers.desiredReplicas``, ..."""
    out: dict[str, int | None] = {}
    groups = (("controlPlane", control_plane(cluster, view)), ("workers", workers(cluster, view)))
    for prefix, values in groups:
        for k in FIELDS:
            out[f"{prefix}.{k}"] = values[k]
        out[f"{prefix}.unavailableReplicas"] = _unavailable(values)
    return out
