"""What rules read, as far as incremental evaluation needs to know it.

Owns ``EXPORT_ONLY`` (per projection type, the fields only the metrics render) with
``export_only_change``, the test the store applies to an update, and what tells ``evaluate`` when
a previous result may be reused: ``machine_reads_clock`` for Machines, ``owner_inputs`` for
MachineSets, MachineDeployments and KubeadmControlPlanes, and ``alone_reads_clock``, which tells
the periodic re-evaluation which objects evaluated alone time can change. The decisions sit next
to the rules because only they know what they read; the store and the pipeline act on them. Owns
no rule, no orchestration and no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from operator import attrgetter
from typing import Any, Final

from exporter.engine.evaluate_types import GroupView
from exporter.engine.machine_inputs import ETCD_CONDITIONS, POD_CONDITIONS
from exporter.engine.model import (
    READ_AS_REPORTED,
    Base,
    BootstrapConfig,
    InfraObject,
    KubeadmControlPlane,
    Machine,
    MachineDeployment,
    MachineSet,
    Meta,
    Status,
)
from exporter.engine.vocabulary import (
    UP_TO_DATE as _UP_TO_DATE,
)

# Fields of a projection that nothing in the engine reads for that kind: not its own rules, not
# the roll-ups of its owners (MachineSet, MachineDeployment, KubeadmControlPlane, MachinePool,
# Cluster read Machines through ``GroupView``), not the rules of dependents in other groups, not
# ``evaluate.finish`` (which copies identity, cluster name, conditions, layout and problems into
# the Result) and not grouping (``grouping.group_key`` reads the cluster name). Only the metrics
# render them. An update that changes nothing else leaves every Result of every group as it was,
# so the object is re-rendered with its previous Result instead of re-evaluating its group.
#
# Any field not listed counts as read, so a field added to a projection is safe by default. Before
# adding one here, check every rule module (``grep -w <field> exporter/engine/*.py``), including
# the owners' roll-ups; tests/test_incremental.py proves the list against full evaluations and
# checks that adding a field rules read makes it fail. "meta.<f>" names a field of ``Meta``.
#
# Machine, audited field by field: the rules read the conditions (both layouts), layout, phase,
# the linking labels as projected (control_plane*, set_name, deployment_name, pool_name),
# version, providerID, nodeRef name, the kubelet version (nodeInfo: UpToDate), whether an in-place
# update is in progress, minReadySeconds, readiness gates, bootstrap and infrastructure refs and
# flags, drain start, the paused annotation, creation and deletion timestamps and owner references
# (stand-alone workers); finish reads apiVersion, uid and problems.
EXPORT_ONLY: Final[Mapping[type[Base], frozenset[str]]] = {
    Machine: frozenset({
        "certificates_expiry",  # status.certificatesExpiryDate: a gauge of its own
        "addresses",  # capi_machine_status_addresses
        "failure_domain",  # capi_machine_info
        # MachinePool rules read the failure fields of the pool and of its infrastructure object,
        # never those of a Machine.
        "failure_reason",
        "failure_message",
        # Rules compare a condition's observedGeneration, never a Machine's (only ManifestWork rules
        # read metadata.generation).
        "observed_generation",
        "meta.generation",
        "meta.labels",  # the labels rules need are projected into fields of their own
        "meta.annotations",
        "meta.exported_labels",  # --metric-labels-allowlist: capi_machine_labels only
        "meta.exported_annotations",
        "meta.resource_version",
    }),
}

_Getter = Callable[[Any], Any]


def _getters(cls: type[Base], export_only: frozenset[str]) -> tuple[_Getter, _Getter]:
    """attrgetters of every compared field of ``cls`` and of its Meta, the listed ones left out."""
    # ``meta`` field by field below, not as one value.
    own = [f.name for f in fields(cls) if f.compare and f.name != "meta" and f.name not in export_only]
    meta = [f.name for f in fields(Meta) if f.compare and f"meta.{f.name}" not in export_only]
    # Two names at least each (a tuple of values then, whatever the count): meta and kind are
    # never exported only.
    return attrgetter(*own), attrgetter(*meta)


_Compiled = dict[type[Base], tuple[_Getter, _Getter]]


def compile_export_only(table: Mapping[type[Base], frozenset[str]]) -> _Compiled:
    """The getters ``export_only_change`` compares with, for a table shaped as ``EXPORT_ONLY``."""
    known = {f.name for f in fields(Meta)}
    for cls, names in table.items():
        own = {f.name for f in fields(cls)}
        unknown = [n for n in names if n not in own and n.removeprefix("meta.") not in known]
        if unknown or any(n in ("meta", "meta.kind", "meta.namespace", "meta.name") for n in names):
            raise ValueError(f"{cls.__name__}: not a field, or an identity field: {sorted(names)}")
    return {cls: _getters(cls, names) for cls, names in table.items()}


_COMPILED: _Compiled = compile_export_only(EXPORT_ONLY)


def export_only_change(old: Base, new: Base, table: _Compiled | None = None) -> bool:
    """True when ``new`` differs from ``old`` (same key) in ``EXPORT_ONLY`` fields only.

    Also True when they are equal; callers test equality first when that case matters.
    """
    getters = (table if table is not None else _COMPILED).get(type(new))
    if getters is None or type(old) is not type(new):
        return False
    own, meta = getters
    return bool(own(old) == own(new) and meta(old.meta) == meta(new.meta))


# ``machine.compute_machine`` reads the Machine itself and the group's objects of other kinds (the
# Cluster's spec.paused, control planes, MachineSets and MachineDeployments), never another
# Machine, and ``now`` only in the two places below. ``evaluate`` reuses a Machine's Computed when
# those inputs are unchanged since the group's previous evaluation; a rule that starts reading
# another Machine or the clock elsewhere must change this.


_TIMELESS: Final[tuple[type[Base], ...]] = (InfraObject, *READ_AS_REPORTED)


def alone_reads_clock(obj: Base) -> bool:
    """Whether time alone can change what evaluating ``obj`` on its own gives (for the objects
    ``grouping`` evaluates alone; the periodic re-evaluation leaves the others be).

    No rule reads ``now`` for an infrastructure object or for the kinds read as reported; a
    bootstrap config's does while the config has no data secret and is not deleting (its grace
    period, then how long it has waited). The other kinds' rules are taken to read it.
    """
    if isinstance(obj, _TIMELESS):
        return False
    if isinstance(obj, BootstrapConfig):
        return obj.secret_created is not True and not obj.meta.deleting
    return True


def machine_reads_clock(m: Machine, view: GroupView) -> bool:
    """Whether time alone can change what ``compute_machine`` gives for ``m``.

    ``now`` is read by Available while spec.minReadySeconds is set (how long Ready has held), by
    Ready's deletion message (stale deletion, drain delays) while the Machine is deleting, and by
    UpToDate while its MachineDeployment sets spec.rollout.after.
    """
    if m.meta.deletion_timestamp is not None or m.min_ready_seconds > 0:
        return True
    return bool(m.deployment_name) and any(
        d.rollout_after is not None for d in view.machine_deployments if d.meta.name == m.deployment_name)


# The rules of a MachineSet, a MachineDeployment and a KubeadmControlPlane read the object itself,
# the Cluster, the Machines the view navigates to from the object (their conditions, reported and
# computed) and, for a MachineDeployment, its MachineSets' computed counters. ``now`` is read only
# for Machines in deletion (stale deletion messages) and for Machines too young to have reported
# UpToDate (``machine_rollup.up_to_date_candidates``, which reads it as reported); a deleting
# KubeadmControlPlane also lists the worker Machines and MachinePools, and a KubeadmControlPlane's
# Available leaves a Machine's health issue out of its message for 10s (``controlplane_health``).
# ``owner_inputs`` returns all
# of that, so that equal inputs mean an equal Computed; a rule that starts reading anything else
# must add it here.
_CONTROL_PLANE_HEALTH: Final = (*POD_CONDITIONS, *ETCD_CONDITIONS)


def owner_inputs(obj: Base, view: GroupView) -> tuple[object, ...] | None:
    """Everything the rules of this owner read, in a comparable tuple; None when they read more.

    None for other kinds, and when the result can change with the clock alone. Machines must have
    been recorded in ``view`` already (they are evaluated first).
    """
    extra: tuple[object, ...] = ()
    if isinstance(obj, MachineSet):
        machines = view.machines_of_set(obj)
    elif isinstance(obj, MachineDeployment):
        machines = view.machines_of_deployment(obj)
        extra = tuple((ms, view.computed(ms.key)) for ms in view.sets_of_deployment(obj))
    elif isinstance(obj, KubeadmControlPlane) and obj.meta.deletion_timestamp is None:
        machines = view.machines_of_control_plane(obj)
        if any(_unhealthy(view, m) for m in machines):
            return None
    else:
        return None
    for m in machines:
        if m.meta.deletion_timestamp is not None or (
            m.meta.creation_timestamp is not None and view.as_reported(m.key, _UP_TO_DATE) is None
        ):
            return None
    # Each Machine and what its rules computed, one after the other: a pair per Machine would be
    # ~40,000 more tuples kept in the memos at 100 % of the benchmark fleet (~2 MiB).
    inputs: list[object] = [obj, view.cluster, extra]
    for m in machines:
        inputs.append(m)
        inputs.append(view.computed(m.key))
    return tuple(inputs)


def _unhealthy(view: GroupView, m: Machine) -> bool:
    """A control plane health condition of the Machine that is not True: time may surface it."""
    return any((c := view.as_reported(m.key, t)) is not None and c.status is not Status.TRUE
               for t in _CONTROL_PLANE_HEALTH)
