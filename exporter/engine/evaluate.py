"""Evaluate groups of projected objects into Results: the engine's only entry point.

Owns the order in which kinds are evaluated inside a group (children before parents), the
``lastTransitionTime`` bookkeeping of computed conditions (the one place it happens: rules never
set it), turning parse problems into findings, grouping a flat list of projections for one-shot
evaluation, and the reuse of a Machine's previous result when nothing it depends on changed
(``Memo``: what one evaluation of a group leaves for the next, kept by the caller). Owns no rule
and does no I/O; ``now`` is an argument.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
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
    provider_objects,
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
    BootstrapConfig,
    Condition,
    Finding,
    InfraObject,
    Machine,
    ManagedCluster,
    ManifestWork,
    ObjectKey,
    Placement,
    Result,
)
from exporter.engine.rule_inputs import export_only_change, machine_reads_clock, owner_inputs
from exporter.engine.visibility import Unreadable, unseen_inputs, withhold

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
# Owners whose results may be reused (``rule_inputs.owner_inputs`` lists what their rules read).
_OWNERS: frozenset[str] = frozenset({"MachineSet", "MachineDeployment", "KubeadmControlPlane"})

_SINGLE: Mapping[type[Base], Callable[[Any, float], Computed]] = {
    ManagedCluster: mwrs.compute_managedcluster,
    Placement: mwrs.compute_placement,
    InfraObject: provider_objects.compute_infra_object,
    BootstrapConfig: provider_objects.compute_bootstrap_config,
}


@dataclass(frozen=True, slots=True)
class Memo:
    """What one evaluation of a Cluster API group keeps for the next evaluation of that group.

    ``context``: the group's objects other than Machines, as evaluated. ``machines``: per Machine,
    the projection evaluated, what its rules computed and the Result given. ``owners``: the same
    for MachineSets, MachineDeployments and KubeadmControlPlanes, with everything their rules read
    (``rule_inputs.owner_inputs``) instead of the projection.
    """

    context: Mapping[ObjectKey, Base]
    machines: Mapping[ObjectKey, tuple[Machine, Computed, Result]]
    owners: Mapping[ObjectKey, tuple[tuple[object, ...], Computed, Result]]


def memo_seeing(memo: Memo, changed: Iterable[Base]) -> Memo:
    """``memo`` holding the ``changed`` Machines in place of the projections it kept of them, where
    they differ from those only in fields no rule reads (``export_only_change``).

    The pipeline renders such changes without evaluating the group, so the memo kept the
    projection it was evaluated from alive beside the store's until the group's next evaluation
    (~1,800 Machines after 10,000 changes at 100 % of the benchmark fleet). As nothing a rule
    reads differs, every reuse the memo allowed it still allows, and owners that held the older
    copy among their inputs may be reused where they were computed again. Any other change (a
    field rules read: the group is dirty again) leaves the memo as it is.
    """
    # Per change on the per-event path: nothing is copied unless a projection is replaced, and
    # only the owners' inputs that hold a replaced one are built again.
    replaced: dict[int, Machine] = {}  # id of the projection kept -> the newer one
    for obj in changed:
        if isinstance(obj, Machine):
            kept = memo.machines.get(obj.key)
            if kept is not None and kept[0] is not obj and export_only_change(kept[0], obj):
                replaced[id(kept[0])] = obj
    if not replaced:
        return memo
    machines = dict(memo.machines)
    for obj in replaced.values():
        _, computed, result = machines[obj.key]
        machines[obj.key] = (obj, computed, result)
    owners = dict(memo.owners)
    for key, (inputs, computed, result) in memo.owners.items():
        if any(id(x) in replaced for x in inputs):
            owners[key] = (tuple(replaced.get(id(x), x) for x in inputs), computed, result)
    return Memo(context=memo.context, machines=machines, owners=owners)


def evaluate_group(
    group: Group, previous: Mapping[ObjectKey, Result], now: float, unreadable: Unreadable = ()
) -> list[Result]:
    """Evaluate every object of one group; ``previous`` holds the last results of these objects.

    ``unreadable``: (kind, namespace) pairs the source cannot read (namespace "": anywhere);
    values computed over those kinds are withheld (``visibility``).
    """
    return evaluate_group_reusing(group, previous, now, None, unreadable)[0]


def evaluate_group_reusing(
    group: Group, previous: Mapping[ObjectKey, Result], now: float, memo: Memo | None,
    unreadable: Unreadable = (),
) -> tuple[list[Result], Memo | None]:
    """``evaluate_group``, reusing what ``memo`` (the previous evaluation's) says still holds.

    The results are those ``evaluate_group`` gives. A Machine is computed again unless it, the
    group's objects of other kinds and, where its rules read the clock, ``now`` are unchanged
    (``rule_inputs``); its owners always are. Returns the memo to pass next time (None for groups
    other than Cluster API ones).
    """
    if isinstance(group, CapiGroup):
        return _evaluate_capi(group, previous, now, memo, unreadable)
    if isinstance(group, MwrsGroup):
        return _evaluate_mwrs(group, previous, now, unreadable), None
    return _evaluate_single(group, previous, now, unreadable), None


def evaluate_all(projections: Iterable[Base], now: float, unreadable: Unreadable = ()) -> list[Result]:
    """One-shot evaluation of a whole fleet (the ``evaluate`` command, tests)."""
    results: list[Result] = []
    for group in group_projections(projections):
        results.extend(evaluate_group(group, {}, now, unreadable))
    results.sort(key=lambda r: (r.namespace, r.cluster_name, r.kind, r.name))
    return results


def _evaluate_capi(
    group: CapiGroup, previous: Mapping[ObjectKey, Result], now: float, memo: Memo | None,
    unreadable: Unreadable,
) -> tuple[list[Result], Memo]:
    view = GroupView(group)
    by_kind: dict[str, list[Base]] = {}
    for obj in group.objects:
        by_kind.setdefault(obj.meta.kind, []).append(obj)
    context = {obj.key: obj for obj in group.objects if obj.meta.kind != "Machine"}
    # Equal values compare by identity first: the store hands over the same objects while unchanged.
    kept = memo.machines if memo is not None and memo.context == context else {}
    kept_owners = memo.owners if memo is not None else {}
    machines: dict[ObjectKey, tuple[Machine, Computed, Result]] = {}
    owners: dict[ObjectKey, tuple[tuple[object, ...], Computed, Result]] = {}
    results: list[Result] = []
    for kind, compute in _CAPI_ORDER:
        for obj in by_kind.get(kind, ()):
            before = _previous(previous, obj)
            reused: tuple[Computed, Result] | None = None
            inputs: tuple[object, ...] | None = None
            unseen = unseen_inputs(obj, unreadable)
            if unseen:  # computed afresh and withheld; never kept for reuse
                computed = withhold(obj, compute(obj, view, now), unseen)
                view.record(obj.key, computed)
                results.append(finish(obj, computed, before, now))
                continue
            if isinstance(obj, Machine):
                last = kept.get(obj.key)
                if last is not None and not machine_reads_clock(obj, view) and (
                    last[0] is obj or export_only_change(last[0], obj)
                ):
                    reused = last[1], last[2]
            elif kind in _OWNERS:
                inputs = owner_inputs(obj, view)
                was = kept_owners.get(obj.key)
                # Tuples compare element by element, by identity first: unchanged objects and
                # reused Computeds are the very same objects.
                if inputs is not None and was is not None and was[0] == inputs:
                    reused = was[1], was[2]
            if reused is not None:
                computed = reused[0]
                # finish of the same inputs gives the Result it gave (transition times carry over).
                result = reused[1] if before is reused[1] else finish(obj, computed, before, now)
            else:
                computed = compute(obj, view, now)
                result = finish(obj, computed, before, now)
            view.record(obj.key, computed)
            if isinstance(obj, Machine):
                machines[obj.key] = (obj, computed, result)
            elif inputs is not None:
                owners[obj.key] = (inputs, computed, result)
            results.append(result)
    # Kinds without rules of their own (InfraMachinePool) still get a Result: their reported
    # conditions and any parse problems are worth exporting.
    for obj in group.objects:
        if obj.meta.kind not in _RULED:
            results.append(finish(obj, Computed(), _previous(previous, obj), now))
    return results, Memo(context=context, machines=machines, owners=owners)


def _evaluate_mwrs(
    group: MwrsGroup, previous: Mapping[ObjectKey, Result], now: float, unreadable: Unreadable
) -> list[Result]:
    view = MwrsView(group)
    results: list[Result] = []
    for work in group.manifest_works:
        computed = _visible(work, mwrs.compute_manifestwork(work, view, now), unreadable)
        results.append(finish(work, computed, _previous(previous, work), now))
    if group.mwrs is not None:
        computed = _visible(group.mwrs, mwrs.compute_mwrs(group.mwrs, view, now), unreadable)
        results.append(finish(group.mwrs, computed, _previous(previous, group.mwrs), now))
    return results


def _visible(obj: Base, computed: Computed, unreadable: Unreadable) -> Computed:
    unseen = unseen_inputs(obj, unreadable)
    return withhold(obj, computed, unseen) if unseen else computed


def _evaluate_single(
    group: SingleGroup, previous: Mapping[ObjectKey, Result], now: float, unreadable: Unreadable
) -> list[Result]:
    obj = group.obj
    compute = _SINGLE.get(type(obj))
    if isinstance(obj, ManifestWork):
        computed = mwrs.compute_manifestwork(obj, MwrsView(MwrsGroup(mwrs=None, manifest_works=(obj,))), now)
    elif compute is not None:
        computed = compute(obj, now)
    else:
        computed = Computed()
    return [finish(obj, _visible(obj, computed, unreadable), _previous(previous, obj), now)]


def _previous(previous: Mapping[ObjectKey, Result], obj: Base) -> Result | None:
    """The object's last Result; none when the object was deleted and created again since (new uid)."""
    before = previous.get(obj.key)
    return before if before is not None and before.uid == obj.meta.uid else None


def finish(obj: Base, computed: Computed, previous: Result | None, now: float) -> Result:
    """Attach identity, reported conditions and transition times to what the rules computed."""
    findings = computed.findings
    if obj.problems:
        findings = (
            *findings,
            *(Finding(MALFORMED_FIELD, problem, "warning") for problem in obj.problems),
        )
    meta = obj.meta
    return Result(
        key=meta.key,  # the projection's own tuple: one per object, not one more per Result
        api_version=meta.api_version,
        uid=meta.uid,
        cluster_name=obj.cluster_name,
        reported=obj.reported_conditions,
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
    filled = [_with_transition_time(c, reported.get(c.type), before.get(c.type), now) for c in conditions]
    # The very conditions of the previous Result, or those the rules gave: that tuple, not one
    # more (~30,000 at 100 % of the benchmark fleet), and comparing Results stops at identity.
    for same in (previous.computed if previous is not None else (), conditions):
        if len(same) == len(filled) and all(a is b for a, b in zip(same, filled, strict=True)):
            return same
    return tuple(filled)


def _with_transition_time(
    c: Condition, reported: Condition | None, before: Condition | None, now: float
) -> Condition:
    """A computed condition keeps the time its status last changed.

    Taken from the controller's condition of the same type when both agree on the status (the
    controller saw the change first), else carried over from the previous evaluation while the
    status holds, else ``now``: the first time the engine saw this status. When the previous
    evaluation's condition is equal to the result, that object is returned: nothing is rebuilt,
    and comparing the new Result with the previous one stops at identity.

    Where the controller's condition also agrees on reason, message and severity (nearly every
    computed condition of a healthy v1beta2 fleet), the result is the controller's condition
    itself, its observedGeneration included: nothing reads a computed condition's generation, and
    one object instead of two for each is ~270,000 fewer at fleet size.
    """
    if c.last_transition_time is not None:
        return c
    if reported is not None and reported.status is c.status and reported.last_transition_time:
        if (reported.reason == c.reason and reported.message == c.message
                and reported.severity == c.severity):
            return reported
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
    return c.at(when)
