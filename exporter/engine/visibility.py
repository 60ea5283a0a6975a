"""Partial views: what the engine publishes when it cannot see every object a value depends on.

A kind the source may not read (403: RBAC not granted; 404) is not empty, only unseen: a
MachineDeployment whose MachineSets cannot be listed would otherwise be computed as having no
replicas, and read ScalingUp True where the full view says False. So every value an object's rules
compute by aggregating over objects of an unreadable kind (in the object's namespace, or in all
namespaces) is withheld, never published as fact:

- each such computed condition becomes Unknown with reason ``InputsUnreadable`` and a message
  naming the kinds, unless the object's controller reports that condition type itself (v1beta2):
  then the engine computes nothing for it, the reported one stays the effective one, and no
  mismatch is flagged;
- counters computed from other objects are withheld (absent), except the object's own
  ``desiredReplicas`` (spec.replicas); a computed phase is withheld unless reported;
- findings the rules derived are dropped, and one ``InputsUnreadable`` finding (warning) says
  which kinds are missing.

Conditions an object's rules compute from the object alone (``Paused``, and the Cluster's
conditions read as reported) are kept. Owns the dependency table; does no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Final

from exporter.engine.evaluate_types import Computed
from exporter.engine.model import Base, Condition, Finding, MachinePool, Status
from exporter.engine.vocabulary import (
    INFRASTRUCTURE_READY,
    INPUTS_UNREADABLE,
    PAUSED,
    REMOTE_CONNECTION_PROBE,
    TOPOLOGY_RECONCILED,
)

# The kinds each kind's rules aggregate over, directly or through a child's computed values.
DEPENDS_ON: Final[Mapping[str, frozenset[str]]] = {
    "MachineSet": frozenset({"Machine"}),
    "MachineDeployment": frozenset({"MachineSet", "Machine"}),
    "KubeadmControlPlane": frozenset({"Machine"}),
    "MachinePool": frozenset({"Machine"}),  # and its InfraMachinePool's kind, see ``depends_on``
    "MachineHealthCheck": frozenset({"Machine"}),
    "Cluster": frozenset(
        {"KubeadmControlPlane", "MachineDeployment", "MachineSet", "Machine", "MachinePool"}
    ),
    "ManifestWorkReplicaSet": frozenset({"ManifestWork", "Placement", "PlacementDecision", "ManagedCluster"}),
    "ManifestWork": frozenset({"ManagedCluster"}),
}

# Kinds whose inputs live in other namespaces (ManifestWorks sit in their managed cluster's).
_ANY_NAMESPACE: Final = frozenset({"ManifestWorkReplicaSet"})

# Computed condition types that read only the object itself (and the Cluster's pause).
_OWN: Final[Mapping[str, frozenset[str]]] = {
    "Cluster": frozenset({PAUSED, INFRASTRUCTURE_READY, REMOTE_CONNECTION_PROBE, TOPOLOGY_RECONCILED}),
}
_ALWAYS_OWN: Final = frozenset({PAUSED})
_KEPT_COUNTERS: Final = frozenset({"desiredReplicas"})

Unreadable = Collection[tuple[str, str]]
"""(kind, namespace) pairs the source cannot read; namespace "" means every namespace."""


def depends_on(obj: Base) -> frozenset[str]:
    kinds = DEPENDS_ON.get(obj.meta.kind, frozenset())
    if isinstance(obj, MachinePool) and obj.infrastructure_ref is not None and obj.infrastructure_ref.kind:
        kinds = kinds | {obj.infrastructure_ref.kind}
    return kinds


def unseen_inputs(obj: Base, unreadable: Unreadable) -> tuple[str, ...]:
    """The kinds ``obj``'s computed values depend on that cannot be read where it lives."""
    if not unreadable:
        return ()
    kinds = depends_on(obj)
    if not kinds:
        return ()
    anywhere = obj.meta.kind in _ANY_NAMESPACE
    namespace = obj.meta.namespace
    return tuple(sorted({k for k, ns in unreadable if k in kinds and (anywhere or ns in ("", namespace))}))


def withhold(obj: Base, computed: Computed, unseen: tuple[str, ...]) -> Computed:
    """``computed`` with every value that depends on ``unseen`` kinds withheld (see the module)."""
    names = ", ".join(unseen)
    message = (f"not computed: the exporter may not read {names}, so it would be computed from an "
               "incomplete view")
    own = _OWN.get(obj.meta.kind, _ALWAYS_OWN)
    reported = {c.type for c in obj.conditions} if obj.has_v1beta2_conditions else set()
    conditions: list[Condition] = []
    for c in computed.conditions:
        if c.type in own:
            conditions.append(c)
        elif c.type not in reported:
            conditions.append(Condition(c.type, Status.UNKNOWN, INPUTS_UNREADABLE, message))
    counters = {k: v for k, v in computed.counters.items() if k in _KEPT_COUNTERS}
    phase = getattr(obj, "phase", None)
    finding = Finding(INPUTS_UNREADABLE, f"conditions, counters and findings computed from {names} are "
                      f"withheld: the exporter may not read {names}", "warning")
    return Computed(conditions=tuple(conditions), counters=counters,
                    phase=phase if isinstance(phase, str) and phase else None, findings=(finding,))
