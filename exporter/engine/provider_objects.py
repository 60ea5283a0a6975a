"""The InfraCluster, InfraMachine and BootstrapConfig contracts checked from the objects themselves,
as Findings a user can alert on.

Provider objects (AWSMachine, DockerCluster, KubeadmConfig, ...) are read as reported: their own
conditions, provisioned / data-secret flags and failure fields go to the metrics as they are.
What the contracts let the engine say besides:

  * ``InfrastructureTerminalFailure`` (critical): the object sets status.failureReason or
    status.failureMessage (v1beta1 contract; v1beta2 keeps them under
    status.deprecated.v1beta1). The contract calls these terminal: the controller will not retry,
    and the Machine (or Cluster) that references the object will not recover by itself.
  * ``BootstrapDataSecretNotCreated`` (warning): a bootstrap config that has not created its
    data secret (neither status.initialization.dataSecretCreated nor, v1beta1, status.ready nor
    status.dataSecretName) ``DATA_SECRET_GRACE_SECONDS`` after its creation: its Machine cannot
    boot. Deleting objects are left alone.

The finding is the provider object's own, named by its kind, and its message names the object
that owns it (the controller ownerReference: the Machine or Cluster). No rule of another kind
reads these objects, so each is evaluated on its own. Pure: ``now`` is an argument.
"""

from __future__ import annotations

from typing import Final

from exporter.engine.evaluate_types import Computed
from exporter.engine.model import Base, BootstrapConfig, Finding, InfraObject

INFRASTRUCTURE_TERMINAL_FAILURE: Final = "InfrastructureTerminalFailure"
BOOTSTRAP_DATA_SECRET_NOT_CREATED: Final = "BootstrapDataSecretNotCreated"
BOOTSTRAP_TERMINAL_FAILURE: Final = "BootstrapTerminalFailure"
# Worker bootstrap configs wait for the control plane to be initialized before they produce
# data; a new cluster gets there well within this.
DATA_SECRET_GRACE_SECONDS: Final = 1800.0

_NO_FINDINGS: Final = Computed()


def _owned_by(obj: Base) -> str:
    kind, name = obj.meta.owner
    return f" (owned by {kind} {name})" if kind else ""


def failure(obj: InfraObject | BootstrapConfig) -> str:
    """The terminal failure an object reports, "" if none."""
    return ": ".join(part for part in (obj.failure_reason, obj.failure_message) if part)


def compute_infra_object(obj: InfraObject, now: float) -> Computed:
    found = failure(obj)
    if not found:
        return _NO_FINDINGS
    return Computed(findings=(Finding(
        INFRASTRUCTURE_TERMINAL_FAILURE,
        f"{obj.meta.kind} {obj.meta.name}{_owned_by(obj)} reports a terminal failure: {found}",
        "critical",
    ),))


def compute_bootstrap_config(obj: BootstrapConfig, now: float) -> Computed:
    findings: list[Finding] = []
    found = failure(obj)
    if found:
        findings.append(Finding(
            BOOTSTRAP_TERMINAL_FAILURE,
            f"{obj.meta.kind} {obj.meta.name}{_owned_by(obj)} reports a terminal failure: {found}",
            "critical",
        ))
    created = obj.meta.creation_timestamp
    if (
        obj.secret_created is not True
        and not obj.meta.deleting
        and created is not None
        and now - created > DATA_SECRET_GRACE_SECONDS
    ):
        findings.append(Finding(
            BOOTSTRAP_DATA_SECRET_NOT_CREATED,
            f"{obj.meta.kind} {obj.meta.name}{_owned_by(obj)} has not created its bootstrap data "
            f"secret {int((now - created) // 60)}m after creation",
        ))
    return Computed(findings=tuple(findings)) if findings else _NO_FINDINGS
