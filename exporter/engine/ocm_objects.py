"""What the engine reports for the OCM objects around a ManifestWorkReplicaSet.

Owns ``compute_managedcluster`` (a phase from ManagedClusterConditionAvailable, the condition the
MWRS controller never reads: a cluster that stopped reporting keeps its ManifestWorks' last status)
and ``compute_placement`` (the selection counters an MWRS's desired cluster count is built from).
Both objects' own conditions are exported as reported; nothing is computed on top of them.

Owns no MWRS rule (``mwrs.py``) and no per-cluster rollout status (``mwrs_rollout.py``).
"""

from __future__ import annotations

from exporter.engine.conditions import find
from exporter.engine.evaluate_types import Computed
from exporter.engine.model import ManagedCluster, Placement, Status

CLUSTER_AVAILABLE = "ManagedClusterConditionAvailable"

PHASE_AVAILABLE = "Available"
PHASE_UNAVAILABLE = "Unavailable"
PHASE_UNKNOWN = "Unknown"

_PHASES = {Status.TRUE: PHASE_AVAILABLE, Status.FALSE: PHASE_UNAVAILABLE, Status.UNKNOWN: PHASE_UNKNOWN}


def managed_cluster_phase(cluster: ManagedCluster) -> str:
    """Available / Unavailable / Unknown, as ManagedClusterConditionAvailable says.

    Unknown covers both a condition reported Unknown (the hub stopped receiving the agent's lease,
    reason ManagedClusterLeaseUpdateStopped) and one never reported (cluster not joined yet).
    """
    condition = find(cluster.conditions, CLUSTER_AVAILABLE)
    return _PHASES[condition.status] if condition is not None else PHASE_UNKNOWN


def compute_managedcluster(obj: ManagedCluster, now: float) -> Computed:
    del now  # availability is the hub's judgement, read as reported
    return Computed(phase=managed_cluster_phase(obj))


def compute_placement(obj: Placement, now: float) -> Computed:
    """Selection counters; both stay None (never 0) until the scheduler has written a status."""
    del now
    scheduled = obj.number_of_selected_clusters is not None
    return Computed(
        counters={
            "numberOfSelectedClusters": obj.number_of_selected_clusters,
            "decisionGroups": obj.decision_groups if scheduled else None,
        }
    )
