"""The Cluster's ``Available`` summary and the Cluster conditions the engine reads as reported.

Owns ``Available`` (summary of Deleting, RemoteConnectionProbe, InfrastructureReady,
ControlPlaneAvailable, WorkersAvailable, TopologyReconciled and the availability gates, with the
upstream priority overrides) and the conditions whose inputs are outside the watched objects:

  * ``RemoteConnectionProbe``: the ClusterCache's live probe of the workload API server. Reported
    value, else Unknown ``NotYetReported`` (no v1beta1 counterpart exists).
  * ``InfrastructureReady``: mirrored by the Cluster controller from the infrastructure cluster,
    which the engine does not watch. Reported value; for clusters without v1beta2 conditions the
    v1beta1 ``InfrastructureReady`` condition (a True one gets reason ``Ready``, v1beta1 leaves it
    empty); else the fallback built from status.initialization.infrastructureProvisioned (v1beta1:
    status.infrastructureReady); else NotYetReported. A topology Cluster without an
    infrastructureRef yet is computed: False ``ObjectDoesNotExist``.
  * ``TopologyReconciled``: set by the topology controller. Reported value (v1beta1 fallback as
    above); NotYetReported for a topology Cluster that has none; absent without a topology.

Owns no other Cluster rule (see ``cluster.py``).
"""

from __future__ import annotations

from collections.abc import Iterable

from exporter.engine import cluster_counters as counts
from exporter.engine.conditions import (
    Priority,
    Reasons,
    find,
    not_yet_reported,
    plain,
    summary,
)
from exporter.engine.evaluate_types import GroupView
from exporter.engine.model import Cluster, Condition, Gate, Status
from exporter.engine.vocabulary import (
    AVAILABLE,
    AVAILABLE_UNKNOWN,
    CLUSTER_CLASS_NOT_RECONCILED,
    CONTROL_PLANE_AVAILABLE,
    DELETING,
    INFRASTRUCTURE_READY,
    NOT_AVAILABLE,
    NOT_READY,
    NOT_YET_REPORTED,
    OBJECT_DELETED,
    OBJECT_DOES_NOT_EXIST,
    READY,
    RECONCILE_FAILED,
    RECONCILE_SUCCEEDED,
    REMOTE_CONNECTION_PROBE,
    TOPOLOGY_RECONCILED,
    WORKERS_AVAILABLE,
)

_GONE_WHILE_DELETING = (INFRASTRUCTURE_READY, CONTROL_PLANE_AVAILABLE)
DEFAULT_GATES = (DELETING, REMOTE_CONNECTION_PROBE, INFRASTRUCTURE_READY, CONTROL_PLANE_AVAILABLE,
                 WORKERS_AVAILABLE, TOPOLOGY_RECONCILED)

AVAILABLE_REASONS = Reasons(NOT_AVAILABLE, AVAILABLE_UNKNOWN, AVAILABLE)
# Only these TopologyReconciled reasons are problems; the others (upgrades pending, hooks) are progress.
TOPOLOGY_ISSUE_REASONS = frozenset({RECONCILE_FAILED, CLUSTER_CLASS_NOT_RECONCILED,
                                    "TopologyReconcileFailed"})
GONE_REASONS = frozenset({OBJECT_DELETED, OBJECT_DOES_NOT_EXIST})
_V1BETA1_TRUE_REASONS = {INFRASTRUCTURE_READY: READY, TOPOLOGY_RECONCILED: RECONCILE_SUCCEEDED}


def _own(cluster: Cluster, type_: str) -> Condition | None:
    """The Cluster's v1beta2 condition, else its v1beta1 one with a reason on True."""
    if cluster.has_v1beta2_conditions:
        c = find(cluster.conditions, type_)
        if c is not None:
            return c
    old = find(cluster.v1beta1_conditions, type_)
    if old is None:
        return None
    reason = old.reason or _V1BETA1_TRUE_REASONS.get(type_, "")
    return Condition(type_, old.status, reason, old.message, old.last_transition_time)


def remote_connection_probe(cluster: Cluster) -> Condition:
    own = find(cluster.conditions, REMOTE_CONNECTION_PROBE) if cluster.has_v1beta2_conditions else None
    return own or not_yet_reported(REMOTE_CONNECTION_PROBE)


def infrastructure_ready(cluster: Cluster) -> Condition:
    ref = cluster.infrastructure_ref
    if ref is None and counts.has_topology(cluster):
        message = "" if cluster.meta.deleting else "Waiting for cluster topology to be reconciled"
        return Condition(INFRASTRUCTURE_READY, Status.FALSE, OBJECT_DOES_NOT_EXIST, message)
    own = _own(cluster, INFRASTRUCTURE_READY)
    if own is not None:
        return own
    if cluster.infrastructure_provisioned is True:
        return plain(INFRASTRUCTURE_READY, Status.TRUE, READY)
    if cluster.infrastructure_provisioned is False and ref is not None:
        return Condition(INFRASTRUCTURE_READY, Status.FALSE, NOT_READY,
                         f"{ref.kind} status.initialization.provisioned is false")
    return not_yet_reported(INFRASTRUCTURE_READY)


def topology_reconciled(cluster: Cluster) -> Condition | None:
    own = _own(cluster, TOPOLOGY_RECONCILED)
    if own is not None:
        return own
    return not_yet_reported(TOPOLOGY_RECONCILED) if counts.has_topology(cluster) else None


def read_as_reported(cluster: Cluster) -> list[Condition]:
    topology = topology_reconciled(cluster)
    found = [remote_connection_probe(cluster), infrastructure_ready(cluster)]
    return [*found, topology] if topology is not None else found


def availability_gates(cluster: Cluster, view: GroupView) -> tuple[Gate, ...]:
    """spec.availabilityGates; when unset (not when empty), the ClusterClass's."""
    if cluster.availability_gates is not None:
        return cluster.availability_gates
    if not cluster.topology_class:
        return ()
    key = (cluster.topology_class_namespace or cluster.meta.namespace, cluster.topology_class)
    cluster_class = view.cluster_classes.get(key)
    if cluster_class is None or cluster_class.availability_gates is None:
        return ()
    return cluster_class.availability_gates


def available(cluster: Cluster, view: GroupView, computed: Iterable[Condition]) -> Condition:
    """The summary; computed conditions take precedence over reported ones, gates come as reported."""
    inputs = {c.type: c for c in cluster.conditions} if cluster.has_v1beta2_conditions else {}
    # A computed placeholder for a missing input stays missing: the summary words it as upstream does.
    inputs.update({c.type: c for c in computed if c.reason != NOT_YET_REPORTED})
    gates = availability_gates(cluster, view)
    for_types = list(dict.fromkeys([*DEFAULT_GATES, *(g.condition_type for g in gates)]))
    negative = frozenset({DELETING, *(g.condition_type for g in gates if g.negative)})
    deleting = cluster.meta.deleting

    def override(c: Condition) -> Priority | None:
        # While deleting, the infrastructure and control plane objects are expected to go away.
        if deleting and c.type in _GONE_WHILE_DELETING and c.reason in GONE_REASONS:
            return Priority.INFO
        topology_progress = c.status is Status.FALSE and c.reason not in TOPOLOGY_ISSUE_REASONS
        if c.type == TOPOLOGY_RECONCILED and topology_progress:
            return Priority.INFO
        return None

    ignore = frozenset() if counts.has_topology(cluster) else frozenset({TOPOLOGY_RECONCILED})
    return summary(AVAILABLE, inputs.values(), for_types=for_types, reasons=AVAILABLE_REASONS,
                   negative=negative, ignore_if_missing=ignore, override=override)
