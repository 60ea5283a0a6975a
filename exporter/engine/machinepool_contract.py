"""The InfraMachinePool contract (seeds/003) checked from objects, as Findings a user can alert on.

Owns the MachinePool findings and the ``InfrastructureReady`` condition the engine computes for a
MachinePool from its infrastructure pool (the contract says the pool's ``Ready`` "will be mirrored
in MachinePool's InfrastructureReady condition", which upstream has not implemented). Owns no
replica or scaling rule (see ``machinepool.py``).

Finding codes (bounded, they become metric labels):
  * ``InfraMachinePoolNotFound``: the pool named by spec.template.spec.infrastructureRef is not
    among the watched objects, ``PROVISIONING_GRACE_SECONDS`` after the MachinePool was created
    and while it is not deleting. It also fires when the pool's kind is not watched at all.
  * ``ProviderIDListMismatch``: spec.providerIDList does not have status.replicas entries (on the
    infrastructure pool, or on a provisioned MachinePool), or the MachinePool's list differs from
    its pool's (the core controller has not copied it over).
  * ``InfraMachinePoolNotProvisioned``: neither status.initialization.provisioned (v1beta2
    contract) nor status.ready (v1beta1 contract) is true ``PROVISIONING_GRACE_SECONDS`` after the
    pool was created. Ten minutes: the default MachineHealthCheck node startup timeout, so a pool
    still not provisioned then is as late as a Machine that would be remediated.
  * ``InfraMachinePoolTerminalFailure`` (critical): failureReason/failureMessage on the pool (or
    surfaced on the MachinePool), or a pool ``Ready`` condition False with a reason ending in
    "Failed"/"Failure" and, for v1beta1 conditions, severity Error (the v1beta2 contract leaves
    terminal failures to provider-documented conditions; this is the common provider shape).
  * ``ReplicasNotConverging``: the MachinePool's v1beta1 ``ReplicasReady`` condition has been False
    for more than ``CONVERGENCE_GRACE_SECONDS`` (30 minutes): the controller's own record of when
    the ready replica count last matched spec.replicas, the only time the objects keep for it.
"""

from __future__ import annotations

from exporter.engine.conditions import find, plain
from exporter.engine.model import Condition, Finding, InfraMachinePool, MachinePool, Status
from exporter.engine.vocabulary import (
    FAILED,
    INFRASTRUCTURE_READY,
    NOT_READY,
    READY,
    REPLICAS_READY,
    TERMINAL_FAILURE,
)

INFRA_MACHINE_POOL_NOT_FOUND = "InfraMachinePoolNotFound"
PROVIDER_ID_LIST_MISMATCH = "ProviderIDListMismatch"
INFRA_MACHINE_POOL_NOT_PROVISIONED = "InfraMachinePoolNotProvisioned"
INFRA_MACHINE_POOL_TERMINAL_FAILURE = "InfraMachinePoolTerminalFailure"
REPLICAS_NOT_CONVERGING = "ReplicasNotConverging"

PROVISIONING_GRACE_SECONDS = 600.0
CONVERGENCE_GRACE_SECONDS = 1800.0

_FAILURE_SUFFIXES = (FAILED, "Failure")


def findings(mp: MachinePool, infra: InfraMachinePool | None, now: float) -> tuple[Finding, ...]:
    found = [
        _not_found(mp, infra, now),
        _provider_id_mismatch(mp, infra),
        _not_provisioned(mp, infra, now),
        _terminal_failure(mp, infra),
        _not_converging(mp, now),
    ]
    return tuple(f for f in found if f is not None)


def _age(created: float | None, now: float) -> float:
    return now - created if created is not None else 0.0


def _not_found(mp: MachinePool, infra: InfraMachinePool | None, now: float) -> Finding | None:
    ref = mp.infrastructure_ref
    if ref is None or infra is not None or mp.meta.deleting:
        return None
    if _age(mp.meta.creation_timestamp, now) <= PROVISIONING_GRACE_SECONDS:
        return None
    return Finding(INFRA_MACHINE_POOL_NOT_FOUND, f"{ref.kind} {ref.name} not found (is its kind watched?)")


def _provider_id_mismatch(mp: MachinePool, infra: InfraMachinePool | None) -> Finding | None:
    problems = []
    if infra is not None and infra.replicas is not None and len(infra.provider_id_list) != infra.replicas:
        problems.append(f"{infra.meta.kind} {infra.meta.name} lists {len(infra.provider_id_list)} "
                        f"provider IDs for status.replicas {infra.replicas}")
    replicas = mp.reported.replicas
    if mp.infrastructure_provisioned and replicas is not None and len(mp.provider_id_list) != replicas:
        problems.append(f"MachinePool lists {len(mp.provider_id_list)} provider IDs "
                        f"for status.replicas {replicas}")
    if (
        infra is not None
        and mp.infrastructure_provisioned
        and set(mp.provider_id_list) != set(infra.provider_id_list)
    ):
        problems.append(f"MachinePool spec.providerIDList differs from {infra.meta.kind} {infra.meta.name}'s")
    if not problems:
        return None
    return Finding(PROVIDER_ID_LIST_MISMATCH, "; ".join(problems))


def provisioned(infra: InfraMachinePool) -> bool:
    return infra.provisioned is True or infra.ready is True


def _not_provisioned(mp: MachinePool, infra: InfraMachinePool | None, now: float) -> Finding | None:
    if infra is None or provisioned(infra) or mp.meta.deleting or infra.meta.deleting:
        return None
    created = infra.meta.creation_timestamp or mp.meta.creation_timestamp
    age = _age(created, now)
    if age <= PROVISIONING_GRACE_SECONDS:
        return None
    return Finding(INFRA_MACHINE_POOL_NOT_PROVISIONED,
                   f"{infra.meta.kind} {infra.meta.name} not provisioned {int(age // 60)}m after creation")


def terminal_failure(mp: MachinePool, infra: InfraMachinePool | None) -> str:
    """What the pool (or the MachinePool's copy of it) says about a terminal failure, "" if nothing."""
    for obj in (infra, mp):
        if obj is not None and (obj.failure_reason or obj.failure_message):
            return ": ".join(part for part in (obj.failure_reason, obj.failure_message) if part)
    if infra is None:
        return ""
    for c in (find(infra.conditions, READY), find(infra.v1beta1_conditions, READY)):
        if c is None or c.status is not Status.FALSE or not c.reason.endswith(_FAILURE_SUFFIXES):
            continue
        if c.severity in ("", "Error"):
            return ": ".join(part for part in (c.reason, c.message) if part)
    return ""


def _terminal_failure(mp: MachinePool, infra: InfraMachinePool | None) -> Finding | None:
    failure = terminal_failure(mp, infra)
    if not failure:
        return None
    kind = infra.meta.kind if infra is not None else "infrastructure"
    return Finding(INFRA_MACHINE_POOL_TERMINAL_FAILURE, f"{kind} reports a terminal failure: {failure}",
                   "critical")


def _not_converging(mp: MachinePool, now: float) -> Finding | None:
    c = find(mp.v1beta1_conditions, REPLICAS_READY)
    if c is None or c.status is not Status.FALSE or c.last_transition_time is None or mp.meta.deleting:
        return None
    stuck = now - c.last_transition_time
    if stuck <= CONVERGENCE_GRACE_SECONDS:
        return None
    return Finding(REPLICAS_NOT_CONVERGING,
                   f"ready replicas have not matched spec.replicas for {int(stuck // 60)}m"
                   + (f": {c.message}" if c.message else ""))


def infrastructure_ready(mp: MachinePool, infra: InfraMachinePool | None) -> Condition | None:
    """The pool's Ready as the MachinePool's InfrastructureReady; a terminal failure wins.

    When the pool is not among the watched objects the MachinePool's own
    status.initialization.infrastructureProvisioned decides (as upstream's mirror fallback does),
    so an unwatched provider kind does not read as a missing pool; ``InfraMachinePoolNotFound``
    says that instead.
    """
    ref = mp.infrastructure_ref
    if ref is None:
        return None
    failure = terminal_failure(mp, infra)
    if failure:
        return Condition(INFRASTRUCTURE_READY, Status.FALSE, TERMINAL_FAILURE,
                         f"{ref.kind} reports a terminal failure: {failure}")
    if infra is not None:
        own = find(infra.conditions, READY) or find(infra.v1beta1_conditions, READY)
        if own is not None:
            reason = own.reason or (READY if own.status is Status.TRUE else NOT_READY)
            return Condition(INFRASTRUCTURE_READY, own.status, reason, own.message, own.last_transition_time)
        is_provisioned = provisioned(infra)
    else:
        is_provisioned = mp.infrastructure_provisioned is True
    if is_provisioned:
        return plain(INFRASTRUCTURE_READY, Status.TRUE, READY)
    return Condition(INFRASTRUCTURE_READY, Status.FALSE, NOT_READY,
                     f"{ref.kind} status.initialization.provisioned is false")
