"""ManifestWorkReplicaSet Progressing, Ready and phase (seed 004), and what MWRS status hides.

Owns the MWRS rules: the desired cluster count (Σ Placement numberOfSelectedClusters, else the
numbers in placementSummary[].availableDecisionGroups), the ``Progressing`` and ``Ready``
conditions with the reasons and message shapes of the seed's story, the phase of its status
table with a precedence, the counters (summary, per placement, per-cluster rollout status) and
the findings that upstream status does not show. docs/mwrs-status.md is the case table these
rules implement, with the reasoning for the cases the seed leaves open.

Entry points for the orchestrator: ``compute_mwrs`` and, re-exported from ``ocm_objects.py``,
``compute_manifestwork``, ``compute_managedcluster`` and ``compute_placement``.
Owns no parsing (``parse_ocm.py``) and no transition times (``evaluate.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from exporter.engine.conditions import (
    find,
    shown_names,
)
from exporter.engine.evaluate_types import Computed, MwrsView
from exporter.engine.model import Condition, Finding, ManifestWorkReplicaSet, RolloutSummary, Status
from exporter.engine.ocm_objects import (
    RolloutCounts,
    compute_managedcluster,
    compute_manifestwork,
    compute_placement,
    count_rollout,
    owner_value,
)
from exporter.engine.vocabulary import (
    ALL_CLUSTERS_AVAILABLE,
    ALL_CLUSTERS_READY,
    MANIFEST_WORK_APPLIED,
    NO_CLUSTERS_SELECTED,
    NOT_ALL_CLUSTERS_AVAILABLE,
    NOT_YET_REPORTED,
    PAUSED,
    PLACEMENT_DECISION_EMPTY,
    PLACEMENT_DECISION_NOT_FOUND,
    PLACEMENT_NOT_FOUND,
    PLACEMENT_NOT_VERIFIED,
    PLACEMENT_ROLLED_OUT,
    PLACEMENT_SUMMARY_MISSING,
    PLACEMENT_VERIFIED,
    PROGRESSING,
    PROGRESSING_RULE_MISSING,
    READY,
    ROLLING_OUT_TO_CLUSTERS,
    ROLLOUT_DEGRADED,
    SELECTED_CLUSTERS_UNKNOWN,
)
from exporter.engine.vocabulary import (
    FAILED as PHASE_FAILED,
)
from exporter.engine.vocabulary import (
    INVALID_MANIFEST_WORK_NAME as INVALID_MANIFESTWORK_NAME,
)
from exporter.engine.vocabulary import (
    PROGRESSING as PHASE_PROGRESSING,
)
from exporter.engine.vocabulary import (
    READY as PHASE_READY,
)

__all__ = ["compute_managedcluster", "compute_manifestwork", "compute_mwrs", "compute_placement"]


# Conditions the MWRS controller reports, and the reasons the rules read.
MANIFESTWORK_APPLIED = ("ManifestworkApplied", MANIFEST_WORK_APPLIED)  # upstream writes a lower-case w

# Reasons of the seed's story.
# Reasons for the cases the seed leaves open (docs/mwrs-status.md).

# Finding codes (bounded: they become metric labels).
FINDING_INVALID_MANIFESTWORK_NAME = INVALID_MANIFESTWORK_NAME
FINDING_PLACEMENT_NOT_FOUND = PLACEMENT_NOT_FOUND
FINDING_PLACEMENT_NOT_VERIFIED = PLACEMENT_NOT_VERIFIED
FINDING_PLACEMENT_SUMMARY_MISSING = PLACEMENT_SUMMARY_MISSING
FINDING_PROGRESSING_RULE_MISSING = PROGRESSING_RULE_MISSING
FINDING_CLUSTER_UNAVAILABLE = "ManagedClusterUnavailable"

PHASE_UNKNOWN: Final = Status.UNKNOWN.value


MAX_LABEL_VALUE = 63  # a label value longer than this is rejected by the API server


@dataclass(frozen=True, slots=True)
class Facts:
    """What both rules read, gathered once per evaluation."""

    mwrs: ManifestWorkReplicaSet
    desired: int | None  # Σ selected clusters over placementRefs; None when one is unknown
    desired_by_placement: Mapping[str, int | None]
    missing_summaries: tuple[str, ...]  # placementRefs without a placementSummary item
    missing_placements: tuple[str, ...]  # placementRefs whose Placement the view lacks (if it has any)
    invalid_owner: str  # why the owner label is invalid, "" when it is valid
    rule_missing: bool  # the rollout cannot complete: ManifestWorks never get a Progressing condition
    rollout: RolloutCounts | None

    @property
    def summary(self) -> RolloutSummary:
        return self.mwrs.summary

    def reported(self, type_: str) -> Condition | None:
        return find(self.mwrs.conditions, type_)

    def verified_reason(self) -> str:
        verified = self.reported(PLACEMENT_VERIFIED)
        return verified.reason if verified is not None and verified.status is Status.FALSE else ""


def names(kind: str, items: Sequence[str]) -> str:
    """``placement a`` / ``placements a, b, c, ... (2 more)``."""
    shown = shown_names(items)
    return f"{kind} {shown}" if len(items) == 1 else f"{kind}s {shown}"


# ---- facts --------------------------------------------------------------------------------------


def desired_by_placement(mwrs: ManifestWorkReplicaSet, view: MwrsView) -> dict[str, int | None]:
    """Selected clusters per placementRef: the Placement's status, else the placementSummary text."""
    summaries = {s.name: s for s in mwrs.placement_summaries}
    result: dict[str, int | None] = {}
    for ref in mwrs.placement_refs:
        placement = view.placements.get(ref.name)
        selected = placement.number_of_selected_clusters if placement is not None else None
        if selected is None and ref.name in summaries:
            selected = summaries[ref.name].selected_clusters
        result[ref.name] = selected
    return result


def _invalid_owner(mwrs: ManifestWorkReplicaSet) -> str:
    applied = next((c for t in MANIFESTWORK_APPLIED if (c := find(mwrs.conditions, t)) is not None), None)
    if applied is not None and applied.reason == INVALID_MANIFESTWORK_NAME:
        return applied.message or f'ManifestWork owner label value "{owner_value(mwrs)}" is not valid'
    # Releases before the InvalidManifestWorkName reason fail the same way without saying so.
    if len(owner_value(mwrs)) > MAX_LABEL_VALUE:
        return (
            f'ManifestWork owner label value "{owner_value(mwrs)}" (namespace.name) is longer than '
            f"{MAX_LABEL_VALUE} characters: no ManifestWork can be created"
        )
    return ""


def _rule_missing(mwrs: ManifestWorkReplicaSet, rollout: RolloutCounts | None) -> bool:
    if mwrs.uses_legacy_applied_key:
        return False  # ocm v1.0.x rolls out on Applied/Available and needs no Progressing rule
    if mwrs.template_has_progressing_rule is not None:
        return not mwrs.template_has_progressing_rule
    return rollout is not None and rollout.works > 0 and len(rollout.without_progressing) == rollout.works


def gather(mwrs: ManifestWorkReplicaSet, view: MwrsView) -> Facts:
    by_placement = desired_by_placement(mwrs, view)
    values = list(by_placement.values())
    desired = None if any(v is None for v in values) else sum(v for v in values if v is not None)
    verified = find(mwrs.conditions, PLACEMENT_VERIFIED)
    if desired is None and verified is not None and verified.reason == PLACEMENT_DECISION_EMPTY:
        desired = 0  # the controller found no decisions at all
    summarised = {s.name for s in mwrs.placement_summaries}
    rollout = count_rollout(mwrs, view, by_placement)
    return Facts(
        mwrs=mwrs,
        desired=desired,
        desired_by_placement=by_placement,
        missing_summaries=tuple(r.name for r in mwrs.placement_refs if r.name not in summarised),
        missing_placements=tuple(
            r.name for r in mwrs.placement_refs if view.placements and r.name not in view.placements
        ),
        invalid_owner=_invalid_owner(mwrs),
        rule_missing=_rule_missing(mwrs, rollout),
        rollout=rollout,
    )


# ---- rules --------------------------------------------------------------------------------------


def _blocked(facts: Facts) -> tuple[Status, str, str] | None:
    """The cases where the counts cannot be read as a rollout; both conditions then say the same."""
    mwrs = facts.mwrs
    if facts.invalid_owner:
        return Status.FALSE, INVALID_MANIFESTWORK_NAME, facts.invalid_owner
    if not mwrs.status_reported:
        return Status.UNKNOWN, NOT_YET_REPORTED, "No status reported by the MWRS controller yet"
    reason = facts.verified_reason()
    if reason == PLACEMENT_DECISION_NOT_FOUND:
        which = names("Placement", facts.missing_placements) if facts.missing_placements else "A Placement"
        message = f"{which} not found: cluster counts are frozen at their last values"
        return Status.UNKNOWN, PLACEMENT_NOT_FOUND, message
    if reason and reason != PLACEMENT_DECISION_EMPTY:
        message = f"PlacementVerified is False ({reason}): cluster counts are stale"
        return Status.UNKNOWN, PLACEMENT_NOT_VERIFIED, message
    if facts.missing_summaries and facts.desired != 0:
        return (
            Status.UNKNOWN,
            PLACEMENT_SUMMARY_MISSING,
            f"No rollout summary for {names('placement', facts.missing_summaries)}: "
            "the controller could not roll out to it",
        )
    if facts.desired is None:
        unknown = [name for name, n in facts.desired_by_placement.items() if n is None]
        message = f"Number of clusters selected by {names('placement', unknown)} unknown"
        return Status.UNKNOWN, SELECTED_CLUSTERS_UNKNOWN, message
    if facts.desired == 0:
        refs = [r.name for r in mwrs.placement_refs]
        target = names("placement", refs) if refs else "the placements"
        return Status.FALSE, NO_CLUSTERS_SELECTED, f"No clusters selected by {target}"
    return None


def _condition(type_: str, status: Status, reason: str, message: str) -> Condition:
    return Condition(type=type_, status=status, reason=reason, message=message)


def progressing_condition(facts: Facts) -> Condition:
    """Progressing: True while clusters remain to roll out, False once every selected cluster completed."""
    blocked = _blocked(facts)
    if blocked is not None:
        return _condition(PROGRESSING, *blocked)
    s, desired = facts.summary, facts.desired or 0
    reaching = f"{s.total} of {desired} clusters reporting progressing state"
    if s.degraded > 0:
        return _condition(PROGRESSING, Status.TRUE, ROLLOUT_DEGRADED,
                          f"{s.degraded} of {desired} clusters reporting degraded state")
    if facts.rule_missing:
        return _condition(
            PROGRESSING, Status.TRUE, PROGRESSING_RULE_MISSING,
            f"{reaching}; the rollout cannot complete: the ManifestWork template has no conditionRule "
            "for the Progressing condition",
        )
    if s.progressing > 0 or s.available < s.total or s.total == 0:
        return _condition(PROGRESSING, Status.TRUE, ROLLING_OUT_TO_CLUSTERS, reaching)
    if s.total < desired and any(r.rollout_type != "All" for r in facts.mwrs.placement_refs):
        # Every reached cluster is done and none is progressing: the controller is waiting for
        # minSuccessTime, maxConcurrency or the next decision group before it reaches the others.
        return _condition(PROGRESSING, Status.TRUE, PAUSED, "Rollout is paused to wait for progressive rules")
    rolled_out = facts.reported(PLACEMENT_ROLLED_OUT)
    if s.total != desired or (rolled_out is not None and rolled_out.status is Status.FALSE):
        return _condition(PROGRESSING, Status.TRUE, ROLLING_OUT_TO_CLUSTERS, reaching)
    return _condition(PROGRESSING, Status.FALSE, ALL_CLUSTERS_READY,
                      f"{s.total} of {desired} clusters reporting Completed state")


def ready_condition(facts: Facts) -> Condition:
    """Ready: True when the current ManifestWorks are available on every selected cluster, none degraded."""
    blocked = _blocked(facts)
    if blocked is not None:
        return _condition(READY, *blocked)
    s, desired = facts.summary, facts.desired or 0
    available = f"ManifestWorks available in {s.available}/{desired} clusters"
    if s.degraded > 0:
        # Seed 004 gives Ready two reasons; the degraded clusters are told by the message and the
        # phase (Failed), so consumers matching the seed's reasons keep working.
        return _condition(READY, Status.FALSE, NOT_ALL_CLUSTERS_AVAILABLE,
                          f"{available}, degraded in {s.degraded}/{desired} clusters")
    if s.available >= desired:
        return _condition(READY, Status.TRUE, ALL_CLUSTERS_AVAILABLE, available)
    return _condition(READY, Status.FALSE, NOT_ALL_CLUSTERS_AVAILABLE, available)


def phase(progressing: Condition, ready: Condition) -> str:
    """Failed > Progressing > Ready > Unknown (docs/mwrs-status.md, "Phase")."""
    if progressing.reason == ROLLOUT_DEGRADED or ready.reason == INVALID_MANIFESTWORK_NAME:
        return PHASE_FAILED
    if progressing.status is Status.TRUE:
        return PHASE_PROGRESSING
    if ready.status is Status.TRUE:
        return PHASE_READY
    return PHASE_UNKNOWN


# ---- findings: what upstream status hides ------------------------------------------------------


def _counts_current(facts: Facts) -> bool:
    """Whether the controller got as far as writing counts (not stopped earlier, not empty)."""
    return facts.mwrs.status_reported and not facts.invalid_owner and facts.desired != 0


def findings(facts: Facts) -> tuple[Finding, ...]:
    result = []
    if facts.invalid_owner:
        result.append(Finding(FINDING_INVALID_MANIFESTWORK_NAME, facts.invalid_owner, "critical"))
    reason = facts.verified_reason()
    if reason == PLACEMENT_DECISION_NOT_FOUND:
        which = names("Placement", facts.missing_placements) if facts.missing_placements else "A Placement"
        result.append(Finding(
            FINDING_PLACEMENT_NOT_FOUND,
            f"{which} not found: the controller stops, summary, placementSummary, PlacementRolledOut "
            "and ManifestworkApplied keep their last values",
            "critical",
        ))
    elif reason and reason != PLACEMENT_DECISION_EMPTY:
        message = f"PlacementVerified is False ({reason}): the rollout handler failed"
        result.append(Finding(FINDING_PLACEMENT_NOT_VERIFIED, message, "warning"))
    elif facts.missing_summaries and _counts_current(facts):
        result.append(Finding(
            FINDING_PLACEMENT_SUMMARY_MISSING,
            f"{names('placement', facts.missing_summaries).capitalize()} missing from placementSummary: "
            "its clusters are left out of every count",
            "warning",
        ))
    without = facts.rollout.without_progressing if facts.rollout is not None else ()
    if facts.rule_missing or (without and not facts.mwrs.uses_legacy_applied_key):
        detail = f": {names('cluster', without)} Applied without one" if without else ""
        result.append(Finding(
            FINDING_PROGRESSING_RULE_MISSING,
            "ManifestWorks carry no Progressing condition (no conditionRule for it in the template), "
            f"so their clusters stay ToApply and the rollout never completes{detail}",
            "warning",
        ))
    stale = facts.rollout.on_unavailable_clusters if facts.rollout is not None else ()
    if stale:
        result.append(Finding(
            FINDING_CLUSTER_UNAVAILABLE,
            f"ManifestWorks on {names('cluster', stale)} whose ManagedClusterConditionAvailable is not True "
            "are still counted with their last reported status",
            "warning",
        ))
    return tuple(result)


# ---- counters -----------------------------------------------------------------------------------

_SUMMARY_FIELDS = ("total", "applied", "available", "progressing", "degraded")


def counters(facts: Facts) -> dict[str, int | None]:
    """Summary and per-placement counts (None until reported), plus per-cluster rollout counts."""
    reported = facts.mwrs.status_reported
    result: dict[str, int | None] = {"desiredClusters": facts.desired}
    for field in _SUMMARY_FIELDS:
        result[f"summary.{field}"] = getattr(facts.summary, field) if reported else None
    summaries = {s.name: s.summary for s in facts.mwrs.placement_summaries}
    for name, desired in facts.desired_by_placement.items():
        prefix = f"placements[{name}]"
        result[f"{prefix}.desiredClusters"] = desired
        summary = summaries.get(name)
        for field in _SUMMARY_FIELDS:
            result[f"{prefix}.{field}"] = getattr(summary, field) if summary is not None else None
    if facts.rollout is not None:
        result.update(facts.rollout.counters())
    return result


def anchored(derived: Condition, obj: ManifestWorkReplicaSet) -> Condition:
    """Date a derived condition from the controller's PlacementRolledOut when they tell the same story.

    A rollout that is not complete (PlacementRolledOut False) has been in that state since its
    transition time, and so has Ready False / Progressing True; a complete one has been Ready
    since it completed. Anchoring to the controller's time keeps "not Ready for longer than the
    rollout's progressDeadline" true across exporter restarts. Otherwise the evaluator dates the
    condition from when it first saw it.
    """
    rolled_out = next((c for c in obj.conditions if c.type == PLACEMENT_ROLLED_OUT), None)
    if rolled_out is None or rolled_out.last_transition_time is None:
        return derived
    incomplete = rolled_out.status is Status.FALSE
    bad_state = (derived.type == READY and derived.status is Status.FALSE) or (
        derived.type == PROGRESSING and derived.status is Status.TRUE
    )
    good_state = (derived.type == READY and derived.status is Status.TRUE) or (
        derived.type == PROGRESSING and derived.status is Status.FALSE
    )
    if (incomplete and bad_state) or (rolled_out.status is Status.TRUE and good_state):
        return derived.at(rolled_out.last_transition_time)
    return derived


def compute_mwrs(obj: ManifestWorkReplicaSet, view: MwrsView, now: float) -> Computed:
    del now  # progressDeadline needs per-cluster timing the MWRS status does not give
    facts = gather(obj, view)
    progressing = anchored(progressing_condition(facts), obj)
    ready = anchored(ready_condition(facts), obj)
    return Computed(
        conditions=(progressing, ready),
        counters=counters(facts),
        phase=phase(progressing, ready),
        findings=findings(facts),
    )
