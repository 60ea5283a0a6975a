"""Evaluate groups of projected objects into Results: the engine's only entry point.

Owns the order in which kinds are evaluated inside a group (children before parents), the
``lastTransitionTime`` bookkeeping of computed conditions (the one place it happens: rules never
set it), turning parse problems into findings, and grouping a flat list of projections for
one-shot evaluation. Owns no rule and does no I/O; ``now`` is an argument.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from exporter.engine import (
    cluster,
    controlplane,
    machine,
    machinedeployment,
    machinehealthcheck,
    machinepool,
    machineset,
    mwrs,
)
from exporter.engine.evaluate_types import (
    CapiGroup,
    Computed,
    Group,
    GroupView,
    MwrsGroup,
    MwrsView,
    SingleGroup,
)
from exporter.engine.grouping import group_projections
from exporter.engine.model import (
    Base,
    Condition,
    Finding,
    ManagedCluster,
    ManifestWork,
    ObjectKey,
    Placement,
    Result,
)

MALFORMED_FIELD = "MalformedField"

# Children first: a parent's rules read the results of its children through the view.
_CAPI_ORDER: tuple[tuple[str, Callable[[Any, GroupView, float], Computed]], ...] = (
    ("Machine", machine.compute_machine),
    ("MachineSet", machineset.compute_machineset),
    ("MachineDeployment", machinedeployment.compute_machinedeployment),
    ("KubeadmControlPlane", controlplane.compute_kubeadmcontrolplane),
    ("MachinePool", machinepool.compute_machinepool),
    ("MachineHealthCheck", machinehealthcheck.compute_machinehealthcheck),
    ("Cluster", cluster.compute_cluster),
)

_RULED: frozenset[str] = frozenset(kind for kind, _ in _CAPI_ORDER)

_SINGLE: Mapping[type[Base], Callable[[Any, float], Computed]] = {
    ManagedCluster: mwrs.compute_managedcluster,
    Placement: mwrs.compute_placement,
}


def evaluate_group(group: Group, previous: Mapping[ObjectKey, Result], now: float) -> list[Result]:
    """Evaluate every object of one group; ``previous`` holds the last results of these objects."""
    if isinstance(group, CapiGroup):
        return _evaluate_capi(group, previous, now)
    if isinstance(group, MwrsGroup):
        return _evaluate_mwrs(group, previous, now)
    return _evaluate_single(group, previous, now)


def evaluate_all(projections: Iterable[Base], now: float) -> list[Result]:
    """One-shot evaluation of a whole fleet (the ``evaluate`` command, tests)."""
    results: list[Result] = []
    for group in group_projections(projections):
        results.extend(evaluate_group(group, {}, now))
    results.sort(key=lambda r: (r.namespace, r.cluster_name, r.kind, r.name))
    return results


def _evaluate_capi(group: CapiGroup, previous: Mapping[ObjectKey, Result], now: float) -> list[Result]:
    view = GroupView(group)
    by_kind: dict[str, list[Base]] = {}
    for obj in group.objects:
        by_kind.setdefault(obj.meta.kind, []).append(obj)
    results: list[Result] = []
    for kind, compute in _CAPI_ORDER:
        for obj in by_kind.get(kind, ()):
            computed = compute(obj, view, now)
            view.record(obj.key, computed)
            results.append(finish(obj, computed, previous.get(obj.key), now))
    # Kinds without rules of their own (InfraMachinePool) still get a Result: their reported
    # conditions and any parse problems are worth exporting.
    for obj in group.objects:
        if obj.meta.kind not in _RULED:
            results.append(finish(obj, Computed(), previous.get(obj.key), now))
    return results


def _evaluate_mwrs(group: MwrsGroup, previous: Mapping[ObjectKey, Result], now: float) -> list[Result]:
    view = MwrsView(group)
    results: list[Result] = []
    for work in group.manifest_works:
        results.append(finish(work, mwrs.compute_manifestwork(work, view, now), previous.get(work.key), now))
    if group.mwrs is not None:
        computed = mwrs.compute_mwrs(group.mwrs, view, now)
        results.append(finish(group.mwrs, computed, previous.get(group.mwrs.key), now))
    return results


def _evaluate_single(group: SingleGroup, previous: Mapping[ObjectKey, Result], now: float) -> list[Result]:
    obj = group.obj
    compute = _SINGLE.get(type(obj))
    if isinstance(obj, ManifestWork):
        computed = mwrs.compute_manifestwork(obj, MwrsView(MwrsGroup(mwrs=None, manifest_works=(obj,))), now)
    elif compute is not None:
        computed = compute(obj, now)
    else:
        computed = Computed()
    return [finish(obj, computed, previous.get(obj.key), now)]


def finish(obj: Base, computed: Computed, previous: Result | None, now: float) -> Result:
    """Attach identity, reported conditions and transition times to what the rules computed."""
    reported = obj.conditions if obj.has_v1beta2_conditions else obj.v1beta1_conditions
    findings = computed.findings
    if obj.problems:
        findings = (
            *findings,
            *(Finding(MALFORMED_FIELD, problem, "warning") for problem in obj.problems),
        )
    meta = obj.meta
    return Result(
        key=(meta.kind, meta.namespace, meta.name),
        api_version=meta.api_version,
        uid=meta.uid,
        cluster_name=obj.cluster_name,
        reported=reported,
        computed=_with_transition_times(computed.conditions, obj, previous, now),
        counters=computed.counters,
        phase=computed.phase,
        findings=findings,
        layout=obj.layout,
    )


def _with_transition_times(
    conditions: tuple[Condition, ...], obj: Base, previous: Result | None, now: float
) -> tuple[Condition, ...]:
    """Every computed condition with the time its status last changed (see below)."""
    if not conditions:
        return conditions
    # reversed: the first condition of a type wins, as a linear search would find it
    reported = {r.type: r for r in reversed(obj.conditions)} if obj.has_v1beta2_conditions else {}
    before = {c.type: c for c in reversed(previous.computed)} if previous is not None else {}
    return tuple([
        _with_transition_time(c, reported.get(c.type), before.get(c.type), now) for c in conditions
    ])


def _with_transition_time(
    c: Condition, reported: Condition | None, before: Condition | None, now: float
) -> Condition:
    """A computed condition keeps the time its status last changed.

    Taken from the controller's condition of the same type when both agree on the status (the
    controller saw the change first), else carried over from the previous evaluation while the
    status holds, else ``now``: the first time the engine saw this status. When the previous
    evaluation's condition is equal to the result, that object is returned: nothing is rebuilt,
    and comparing the new Result with the previous one stops at identity.
    """
    if c.last_transition_time is not None:
        return c
    if reported is not None and reported.status is c.status and reported.last_transition_time:
        when = reported.last_transition_time
    elif before is not None and before.status is c.status and before.last_transition_time is not None:
        when = before.last_transition_time
    else:
        when = now
    if (
        before is not None
        and before.last_transition_time == when
        and before.status is c.status
        and before.reason == c.reason
        and before.message == c.message
        and before.observed_generation == c.observed_generation
        and before.severity == c.severity
    ):
        return before
    return Condition(
        type=c.type,
        status=c.status,
        reason=c.reason,
        message=c.message,
        last_transition_time=when,
        observed_generation=c.observed_generation,
        severity=c.severity,
    )
