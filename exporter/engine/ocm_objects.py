"""The objects around a ManifestWorkReplicaSet: ManifestWorks, ManagedClusters and Placements.

Owns what the engine reports for each of them and what the MWRS rules read from them:

- ManifestWork: the rollout status the MWRS controller gives its cluster (docs/mwrs-status.md,
  "Rollout status of a cluster"): ToApply / Progressing / Succeeded / Failed from its Applied,
  Progressing and Degraded conditions and their observedGeneration, and whether it still carries
  an old template (spec hash); ``compute_manifestwork`` reports that status as the phase. Over
  an MWRS's ManifestWorks, ``count_rollout`` counts statuses, outdated works, works without a
  Progressing condition and works on ManagedClusters that are not Available.
- ManagedCluster: a phase from ManagedClusterConditionAvailable, the condition the MWRS
  controller never reads (a cluster that stopped reporting keeps its ManifestWorks' last status).
- Placement: the selection counters the MWRS's desired cluster count is built from.

Owns no MWRS condition (``mwrs.py``) and no parsing (``parse_ocm.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from exporter.engine.conditions import find
from exporter.engine.evaluate_types import Computed, MwrsView
from exporter.engine.model import (
    Condition,
    ManagedCluster,
    ManifestWork,
    ManifestWorkReplicaSet,
    Placement,
    Status,
)
from exporter.engine.vocabulary import (
    APPLIED as WORK_APPLIED,
)
from exporter.engine.vocabulary import (
    AVAILABLE as PHASE_AVAILABLE,
)
from exporter.engine.vocabulary import (
    AVAILABLE as WORK_AVAILABLE,
)
from exporter.engine.vocabulary import (
    DEGRADED as WORK_DEGRADED,
)
from exporter.engine.vocabulary import (
    FAILED,
    PROGRESSING,
    SUCCEEDED,
    TO_APPLY,
)
from exporter.engine.vocabulary import (
    MANAGED_CLUSTER_CONDITION_AVAILABLE as CLUSTER_AVAILABLE,
)
from exporter.engine.vocabulary import (
    PROGRESSING as WORK_PROGRESSING,
)
from exporter.engine.vocabulary import (
    UNAVAILABLE as PHASE_UNAVAILABLE,
)

ROLLOUT_STATUSES = (TO_APPLY, PROGRESSING, SUCCEEDED, FAILED)




# ---- ManifestWork -------------------------------------------------------------------------------


def owner_value(mwrs: ManifestWorkReplicaSet) -> str:
    """The owner label value the controller writes on its ManifestWorks: ``<namespace>.<name>``."""
    return f"{mwrs.meta.namespace}.{mwrs.meta.name}"


def up_to_date(work: ManifestWork, mwrs: ManifestWorkReplicaSet | None) -> bool | None:
    """Whether the work carries the current template; None when either spec was unreadable."""
    if mwrs is None or not mwrs.spec_hash or not work.spec_hash:
        return None
    return work.spec_hash == mwrs.spec_hash


def _current(c: Condition, generation: int | None) -> bool:
    # The controller compares observedGeneration with generation as Go ints: unset is 0 on both sides.
    return (c.observed_generation or 0) == (generation or 0)


def rollout_status(work: ManifestWork, current_template: bool | None = None, legacy: bool = False) -> str:
    """The rollout status the MWRS controller gives the cluster of this ManifestWork.

    ``current_template`` False means the work carries an old template: the controller skips it
    and rolls the cluster out again (ToApply). ``legacy`` selects the ocm v1.0.x rule (Applied →
    Progressing, Available → Succeeded), used when the MWRS status shows the v1.0.x summary key.
    """
    if current_template is False:
        return TO_APPLY
    generation = work.meta.generation
    applied = find(work.conditions, WORK_APPLIED)
    if applied is None or applied.status is not Status.TRUE or not _current(applied, generation):
        return TO_APPLY
    if legacy:
        available = find(work.conditions, WORK_AVAILABLE)
        return SUCCEEDED if available is not None and available.status is Status.TRUE else PROGRESSING
    progressing = find(work.conditions, WORK_PROGRESSING)
    if progressing is None or not _current(progressing, generation):
        return TO_APPLY
    degraded = find(work.conditions, WORK_DEGRADED)
    if degraded is not None and not _current(degraded, generation):
        return TO_APPLY
    if progressing.status is Status.TRUE:
        return FAILED if degraded is not None and degraded.status is Status.TRUE else PROGRESSING
    if progressing.status is Status.FALSE:
        return SUCCEEDED
    return PROGRESSING  # Unknown: still waiting for the rule to evaluate


def applied_without_progressing(work: ManifestWork) -> bool:
    """Applied True but no Progressing condition: no conditionRule produces it, so it never will."""
    applied = find(work.conditions, WORK_APPLIED)
    return (
        applied is not None
        and applied.status is Status.TRUE
        and find(work.conditions, WORK_PROGRESSING) is None
    )


@dataclass(frozen=True, slots=True)
class RolloutCounts:
    """What an MWRS's ManifestWorks say about its rollout, one entry per cluster status."""

    statuses: Mapping[str, int]
    works: int
    outdated: int
    missing: int  # selected clusters without a ManifestWork yet (counted as ToApply)
    without_progressing: tuple[str, ...]  # cluster names, sorted
    on_unavailable_clusters: tuple[str, ...]  # cluster names, sorted

    def counters(self) -> dict[str, int | None]:
        return {
            "rollout.toApply": self.statuses[TO_APPLY],
            "rollout.progressing": self.statuses[PROGRESSING],
            "rollout.succeeded": self.statuses[SUCCEEDED],
            "rollout.failed": self.statuses[FAILED],
            "rollout.outdated": self.outdated,
            "rollout.missing": self.missing,
            "rollout.withoutProgressing": len(self.without_progressing),
            "rollout.unavailableClusters": len(self.on_unavailable_clusters),
        }


def owned_works(mwrs: ManifestWorkReplicaSet, works: Sequence[ManifestWork]) -> list[ManifestWork]:
    """The MWRS's ManifestWorks, found by owner label (names are not reliable), minus deleting ones."""
    owner = owner_value(mwrs)
    return [w for w in works if w.owner == owner and not w.meta.deleting]


def count_rollout(
    mwrs: ManifestWorkReplicaSet,
    view: MwrsView,
    desired_by_placement: Mapping[str, int | None],
) -> RolloutCounts | None:
    """Counts over the MWRS's ManifestWorks; None when the view holds none (they may not be watched)."""
    works = owned_works(mwrs, view.manifest_works)
    if not works:
        return None
    statuses = dict.fromkeys(ROLLOUT_STATUSES, 0)
    outdated = 0
    legacy = mwrs.uses_legacy_applied_key
    for work in works:
        current = up_to_date(work, mwrs)
        outdated += current is False
        statuses[rollout_status(work, current, legacy)] += 1
    missing = 0
    for placement, desired in desired_by_placement.items():
        placed = sum(1 for w in works if w.placement_name == placement)
        missing += max(0, (desired or 0) - placed)
    statuses[TO_APPLY] += missing
    return RolloutCounts(
        statuses=statuses,
        works=len(works),
        outdated=outdated,
        missing=missing,
        without_progressing=tuple(sorted(w.meta.namespace for w in works if applied_without_progressing(w))),
        on_unavailable_clusters=tuple(
            sorted(
                w.meta.namespace
                for w in works
                if cluster_available(view.managed_clusters.get(w.meta.namespace)) not in (None, Status.TRUE)
            )
        ),
    )


def compute_manifestwork(obj: ManifestWork, view: MwrsView, now: float) -> Computed:
    """A ManifestWork's rollout status as its phase; it has no counters of its own."""
    del now  # the rollout status does not depend on time (soak and deadlines are the controller's)
    mwrs = view.mwrs if view.mwrs is not None and obj.owner == owner_value(view.mwrs) else None
    legacy = mwrs.uses_legacy_applied_key if mwrs is not None else False
    return Computed(phase=rollout_status(obj, up_to_date(obj, mwrs), legacy))


# ---- ManagedCluster and Placement ------------------------------------------------------------

PHASE_UNKNOWN: Final = Status.UNKNOWN.value
_PHASES = {Status.TRUE: PHASE_AVAILABLE, Status.FALSE: PHASE_UNAVAILABLE, Status.UNKNOWN: PHASE_UNKNOWN}


def managed_cluster_phase(cluster: ManagedCluster) -> str:
    """Available / Unavailable / Unknown, as ManagedClusterConditionAvailable says.

    Unknown covers both a condition reported Unknown (the hub stopped receiving the agent's lease,
    reason ManagedClusterLeaseUpdateStopped) and one never reported (cluster not joined yet).
    """
    condition = find(cluster.conditions, CLUSTER_AVAILABLE)
    return _PHASES[condition.status] if condition is not None else PHASE_UNKNOWN


def cluster_available(cluster: ManagedCluster | None) -> Status | None:
    """ManagedClusterConditionAvailable of a cluster; None when the cluster is not known."""
    if cluster is None:
        return None
    condition = find(cluster.conditions, CLUSTER_AVAILABLE)
    return condition.status if condition is not None else Status.UNKNOWN


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
