"""The families of provider objects: the infrastructure objects (InfraCluster, InfraMachine and
InfraMachinePool kinds: AWSCluster, DockerMachine, ...) and bootstrap configs (KubeadmConfig, ...)
the Cluster API objects reference, one family set per contract with the object's kind as a label.

Owns which families those objects have and how each is read from the projection and its Result:
what their contracts define (provisioned / data secret created, terminal failures, conditions as
reported), their owner for joins (``owner_kind``, ``owner_name``) and the metadata families.
Owns no rule (``exporter.engine.provider_objects``) and no formatting.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any, Final

from exporter.engine.parse_capi import CONTRACT_CONDITIONS
from exporter.metrics.capi import FINDINGS
from exporter.metrics.common import condition_families, field_family, info_family, metadata_families
from exporter.metrics.exposition import Sample
from exporter.metrics.spec import FamilySpec, KindSpec, Subject, family, lean

IDENTITY: Final = ("kind", "name", "namespace", "uid", "cluster_name")
# The v1beta1 contract's MachineStatusError and ClusterStatusError values; others read Other.
FAILURE_REASONS: Final = frozenset({
    "InvalidConfiguration", "UnsupportedChange", "InsufficientResources", "CreateError", "UpdateError",
    "DeleteError", "JoinClusterTimeoutError",
})


def _flag(value: bool | None) -> float | None:
    return None if value is None else float(value)


def _provisioned(o: Any) -> float | None:
    # v1beta2 contract first; a v1beta1 provider sets only status.ready
    return _flag(o.provisioned if o.provisioned is not None else o.ready)


def _failure(s: Subject[Any]) -> Iterable[Sample]:
    o = s.obj
    if not o.failure_reason and not o.failure_message:
        return []
    reason = o.failure_reason if o.failure_reason in FAILURE_REASONS or not o.failure_reason else "Other"
    return [((reason,), 1.0)]


def _contract_conditions(fam: FamilySpec, help_text: str) -> FamilySpec:
    """A condition family limited to the types the contracts define: a provider's own types
    (InstanceReady, ContainerProvisioned, DataSecretAvailable, ...) are summarised by its Ready,
    and their reasons would read Other; one object per Machine makes every series count. The
    projections keep only these (``parse_capi.CONTRACT_CONDITIONS``) but an InfraMachinePool keeps
    all of its conditions for the MachinePool contract checks."""
    inner = fam.extract

    def extract(s: Subject[Any]) -> Iterable[Sample]:
        return [sample for sample in inner(s) if sample[0][0] in CONTRACT_CONDITIONS]

    return replace(fam, extract=extract, source=f"{fam.source}: Ready and Paused", help=help_text)


_CONDITION_TEXTS: Final = ("status (a state set)", "lastTransitionTime", "reason")


def _families(
    what: str, status: FamilySpec, *, info: str, failure: str, condition: str, transition: str, reason: str,
    created: str, deletion: str,
) -> tuple[FamilySpec, ...]:
    """``what``: the kind of object, as the shared families' help texts name it after "a"."""
    an = f"an {what}" if what[0] in "aeiou" else f"a {what}"
    return (
        info_family(
            info,
            f"Information about {an}: the object that owns it (its controller ownerReference: the "
            "Cluster, Machine or MachinePool referencing it), to join on.",
            ("owner_kind", "owner_name"), lambda o: o.meta.owner, "metadata.ownerReferences", compat=False,
            fields=("meta.owner",),
        ),
        status,
        family(
            failure,
            f"1 while {an} reports a terminal failure (v1beta1 contract status.failureReason or "
            "failureMessage; reason empty when only a message is set, Other when not one of the "
            "contract's values); absent otherwise.",
            "info", ("reason",), "status.failureReason, status.failureMessage", _failure, reads="object",
            fields=("failure_reason", "failure_message"),
        ),
        # Conditions as reported: nothing is computed for these objects.
        *(_contract_conditions(f, f"The {text} of the Ready and Paused conditions of {an}, as reported "
                                  f"(the conditions its contract defines){tail}.")
          for f, text, tail in zip(condition_families(what, status=condition, transition=transition,
                                                      reason=reason, compat=False), _CONDITION_TEXTS,
                                   ("", ", in Unix seconds", " (bounded; unlisted reasons read Other)"),
                                   strict=True)),
        *metadata_families(what, created=created, deletion=deletion, compat=False),
        FINDINGS,
    )


def _data_secret(o: Any) -> float | None:
    return _flag(o.secret_created)


INFRA_OBJECT: Final = KindSpec("InfrastructureObject", "capi_infrastructure_object", IDENTITY, _families(
    "provider infrastructure object (kind: AWSCluster, DockerMachine, ...)",
    field_family(
        lean("capi_infrastructure_object_status_provisioned"),
        "1 when an infrastructure provider object is provisioned, 0 while it is not: "
        "status.initialization.provisioned (v1beta2 contract), else status.ready (v1beta1); absent "
        "while it reports neither.",
        "status.initialization.provisioned, else status.ready", _provisioned,
        fields=("provisioned", "ready"),
    ),
    info=lean("capi_infrastructure_object_info"),
    failure=lean("capi_infrastructure_object_status_failure"),
    condition="capi_infrastructure_object_status_condition",
    transition="capi_infrastructure_object_status_condition_last_transition_time",
    reason="capi_infrastructure_object_status_condition_reason",
    created="capi_infrastructure_object_created",
    deletion="capi_infrastructure_object_deletion_timestamp_seconds",
))
BOOTSTRAP_CONFIG: Final = KindSpec("BootstrapConfig", "capi_bootstrap_config", IDENTITY, _families(
    "bootstrap provider config (kind: KubeadmConfig, ...)",
    field_family(
        "capi_bootstrap_config_status_data_secret_created",
        "1 once a bootstrap config has created the data secret its Machine boots from, 0 while it "
        "has not: status.initialization.dataSecretCreated (v1beta2 contract), else status.ready or "
        "status.dataSecretName (v1beta1); absent while it reports none of them.",
        "status.initialization.dataSecretCreated, else status.ready, status.dataSecretName", _data_secret,
        fields=("secret_created",),
    ),
    info=lean("capi_bootstrap_config_info"),
    failure="capi_bootstrap_config_status_failure",
    condition="capi_bootstrap_config_status_condition",
    transition="capi_bootstrap_config_status_condition_last_transition_time",
    reason="capi_bootstrap_config_status_condition_reason",
    created="capi_bootstrap_config_created",
    deletion="capi_bootstrap_config_deletion_timestamp_seconds",
))

