"""The Machine conditions the engine reads rather than computes, in every storage layout.

Owns how a Machine's inputs are obtained: BootstrapConfigReady, InfrastructureReady, NodeReady,
NodeHealthy, HealthCheckSucceeded, OwnerRemediated, the control plane pod/etcd conditions and
Updating are copied from the Machine's v1beta2 conditions (Updating, when not reported, from the
in-place update annotations upstream sets); when the Machine is stored only in the
v1beta1 layout they are derived from the v1beta1 condition with the same meaning (and from the
bootstrapReady / infrastructureReady flags). Also owns the Deleting condition (deletion stage) and
UpToDate for Machines that do not report it (templates of a MachineDeployment's MachineSet, or the
version of a control plane; then an in-place update or a kubelet behind spec.version). Owns no
summary (``machine.py``).

v1beta1 → v1beta2 correspondences used (status and message kept, True gets the v1beta2 reason):
BootstrapReady → BootstrapConfigReady; InfrastructureReady, NodeHealthy, HealthCheckSucceeded,
OwnerRemediated and the *PodHealthy / EtcdMemberHealthy conditions keep their names. NodeReady has
no v1beta1 counterpart; a True v1beta1 NodeHealthy implies a Ready Node, so it gives NodeReady True.
"""

from __future__ import annotations

from typing import Final

from exporter.engine.conditions import find, mirror, not_yet_reported, plain
from exporter.engine.evaluate_types import GroupView
from exporter.engine.model import Condition, Machine, Ref, Status
from exporter.engine.vocabulary import (
    API_SERVER_POD_HEALTHY,
    BOOTSTRAP_CONFIG_READY,
    BOOTSTRAP_READY,
    CONTROLLER_MANAGER_POD_HEALTHY,
    DATA_SECRET_PROVIDED,
    DELETING,
    ETCD_MEMBER_HEALTHY,
    ETCD_POD_HEALTHY,
    HEALTH_CHECK_SUCCEEDED,
    HEALTHY,
    IN_PLACE_UPDATING,
    INFRASTRUCTURE_READY,
    MACHINE_DELETION_STAGES,
    NODE_HEALTHY,
    NODE_READY,
    NOT_DELETING,
    NOT_READY,
    NOT_UP_TO_DATE,
    NOT_UPDATING,
    OWNER_REMEDIATED,
    READY,
    RUNNING,
    SCHEDULER_POD_HEALTHY,
    UP_TO_DATE,
    UPDATING,
)
from exporter.engine.vocabulary import (
    DELETING as DELETING_REASON,
)
from exporter.engine.vocabulary import (
    UPDATING as UPDATING_REASON,
)

POD_CONDITIONS: Final = (API_SERVER_POD_HEALTHY, CONTROLLER_MANAGER_POD_HEALTHY, SCHEDULER_POD_HEALTHY)
ETCD_CONDITIONS: Final = (ETCD_POD_HEALTHY, ETCD_MEMBER_HEALTHY)
# Readiness gates on these collapse into "Control plane components" in Ready's message.
CONTROL_PLANE_COMPONENTS: Final = ("APIServer", "ControllerManager", "Scheduler", ETCD_POD_HEALTHY)

# UPDATING as a reason: UpToDate False while the Machine catches up in place.

# v1beta2 type → (v1beta1 type, reason of a True v1beta2 condition).
_V1BETA1: Final = {
    BOOTSTRAP_CONFIG_READY: (BOOTSTRAP_READY, READY),
    INFRASTRUCTURE_READY: (INFRASTRUCTURE_READY, READY),
    NODE_HEALTHY: (NODE_HEALTHY, NODE_HEALTHY),
    HEALTH_CHECK_SUCCEEDED: (HEALTH_CHECK_SUCCEEDED, HEALTH_CHECK_SUCCEEDED),
    OWNER_REMEDIATED: (OWNER_REMEDIATED, ""),
    **{t: (t, RUNNING) for t in (*POD_CONDITIONS, ETCD_POD_HEALTHY)},
    ETCD_MEMBER_HEALTHY: (ETCD_MEMBER_HEALTHY, HEALTHY),
}


def reported(m: Machine, type_: str) -> Condition | None:
    """The Machine's own condition of a v1beta2 type, from whichever layout it is stored in."""
    if m.has_v1beta2_conditions:
        return find(m.conditions, type_)
    source_type, true_reason = _V1BETA1.get(type_, (type_, ""))
    old = find(m.v1beta1_conditions, source_type)
    if old is None:
        return None
    reason = true_reason if old.status is Status.TRUE and true_reason else old.reason
    return Condition(type_, old.status, reason, old.message, old.last_transition_time)


def inputs(m: Machine, view: GroupView, now: float) -> tuple[Condition, ...]:
    """Every read-as-reported condition of the Machine; optional ones only when known."""
    result = [bootstrap_config_ready(m), infrastructure_ready(m), node_ready(m),
              mirror(reported(m, NODE_HEALTHY), NODE_HEALTHY)]
    result.extend(c for c in (reported(m, HEALTH_CHECK_SUCCEEDED), reported(m, OWNER_REMEDIATED))
                  if c is not None)
    if m.control_plane:
        result.extend(mirror(reported(m, t), t) for t in _control_plane_types(m, view))
    up_to_date = control_plane_up_to_date(m, view) if m.control_plane else worker_up_to_date(m, view, now)
    if up_to_date is not None:
        result.append(up_to_date)
    return tuple(result)


def _control_plane_types(m: Machine, view: GroupView) -> tuple[str, ...]:
    kcp = next((k for k in view.control_planes if k.meta.name == m.control_plane_name), None)
    if kcp is not None and not kcp.external_etcd:
        return (*POD_CONDITIONS, *ETCD_CONDITIONS)
    # Without a managed-etcd control plane the etcd conditions exist only if someone reports them.
    return (*POD_CONDITIONS, *(t for t in ETCD_CONDITIONS if reported(m, t) is not None))


def bootstrap_config_ready(m: Machine) -> Condition:
    own = reported(m, BOOTSTRAP_CONFIG_READY)
    if own is not None:
        return mirror(own, BOOTSTRAP_CONFIG_READY)
    if m.bootstrap_ref is None:  # spec.bootstrap.dataSecretName given directly
        return plain(BOOTSTRAP_CONFIG_READY, Status.TRUE, DATA_SECRET_PROVIDED)
    if m.has_v1beta2_conditions:
        return not_yet_reported(BOOTSTRAP_CONFIG_READY)
    return _from_flag(BOOTSTRAP_CONFIG_READY, m.bootstrap_data_secret_created, m.bootstrap_ref,
                      "status.initialization.dataSecretCreated is false")


def infrastructure_ready(m: Machine) -> Condition:
    own = reported(m, INFRASTRUCTURE_READY)
    if own is not None:
        return mirror(own, INFRASTRUCTURE_READY)
    if m.has_v1beta2_conditions:
        return not_yet_reported(INFRASTRUCTURE_READY)
    return _from_flag(INFRASTRUCTURE_READY, m.infrastructure_provisioned, m.infrastructure_ref,
                      "status.initialization.provisioned is false")


def _from_flag(type_: str, flag: bool | None, ref: Ref | None, false_message: str) -> Condition:
    """The mirror's fallback: the Machine's initialization flag (v1beta1: the *Ready flag)."""
    if flag is None:
        return not_yet_reported(type_)
    if flag:
        return plain(type_, Status.TRUE, READY)
    kind = ref.kind if ref is not None else "Object"
    return Condition(type_, Status.FALSE, NOT_READY, f"{kind} {false_message}")


def node_ready(m: Machine) -> Condition:
    own = reported(m, NODE_READY)
    if own is not None:
        return mirror(own, NODE_READY)
    if not m.has_v1beta2_conditions:
        healthy = reported(m, NODE_HEALTHY)
        if healthy is not None and healthy.status is Status.TRUE:
            return Condition(NODE_READY, Status.TRUE, NODE_READY, "", healthy.last_transition_time)
    return not_yet_reported(NODE_READY)


def updating(m: Machine) -> Condition:
    """In-place update in progress (CAPI 1.12+): reported, else from the annotations upstream sets."""
    own = reported(m, UPDATING) if m.has_v1beta2_conditions else None
    if own is not None:
        return mirror(own, UPDATING)
    if m.update_in_progress:
        return Condition(UPDATING, Status.TRUE, IN_PLACE_UPDATING, "In-place update in progress")
    return plain(UPDATING, Status.FALSE, NOT_UPDATING)


def _updating_up_to_date(m: Machine, in_progress: bool) -> Condition | None:
    """UpToDate False ``Updating`` of a Machine whose spec is current: an in-place update running,
    else a kubelet that does not run spec.version yet; None when neither."""
    if in_progress:
        c = updating(m)
        text = c.message if c.status is Status.TRUE and c.message else "In-place update in progress"
        return Condition(UP_TO_DATE, Status.FALSE, UPDATING_REASON, f"* {text}")
    kubelet = m.node_info.get("kubeletVersion", "")
    if kubelet and kubelet != m.version:
        return Condition(UP_TO_DATE, Status.FALSE, UPDATING_REASON,
                         f"* Node.status.nodeInfo.kubeletVersion {kubelet}, {m.version} required")
    return None


def deleting(m: Machine) -> Condition:
    """Deleting with the stage the controller reports, or the one the v1beta1 conditions show."""
    if not m.meta.deleting:
        return plain(DELETING, Status.FALSE, NOT_DELETING)
    own = find(m.conditions, DELETING) if m.has_v1beta2_conditions else None
    if own is not None and own.status is Status.TRUE:
        return Condition(DELETING, Status.TRUE, own.reason or DELETING_REASON, own.message,
                         own.last_transition_time)
    for source_type, stage in MACHINE_DELETION_STAGES:
        old = find(m.v1beta1_conditions, source_type)
        if old is not None and old.status is Status.FALSE:
            return Condition(DELETING, Status.TRUE, stage, old.message)
    return Condition(DELETING, Status.TRUE, DELETING_REASON, "Deletion started")


def worker_up_to_date(m: Machine, view: GroupView, now: float) -> Condition | None:
    """UpToDate of a MachineDeployment's Machine: its MachineSet's template against the deployment's.

    Reported when the Machine has it; else compared from the objects (version, bootstrap and
    infrastructure templates, a spec.rollout.after passed since the MachineSet was created), which
    is all the management cluster shows; None when the Machine has
    no MachineSet and MachineDeployment (upstream sets no UpToDate then).
    """
    own = reported(m, UP_TO_DATE)
    if own is not None:
        return mirror(own, UP_TO_DATE)
    if not m.set_name or not m.deployment_name:
        return None
    ms = next((s for s in view.machine_sets if s.meta.name == m.set_name), None)
    md = next((d for d in view.machine_deployments if d.meta.name == m.deployment_name), None)
    if ms is None or md is None:
        return None
    diffs = []
    if md.version and ms.version != md.version:
        diffs.append(f"* Version {ms.version or '<unset>'}, {md.version} required")
    for current, wanted in ((ms.bootstrap_ref, md.bootstrap_ref),
                            (ms.infrastructure_ref, md.infrastructure_ref)):
        if wanted is not None and (current is None or (current.kind, current.name) != (wanted.kind,
                                                                                        wanted.name)):
            diffs.append(f"* {wanted.kind.removesuffix('Template')} is not up-to-date")
    after, created = md.rollout_after, ms.meta.creation_timestamp
    if after is not None and after < now and created is not None and created < after:
        diffs.append("* MachineDeployment spec.rolloutAfter expired")
    if diffs:
        return Condition(UP_TO_DATE, Status.FALSE, NOT_UP_TO_DATE, "\n".join(diffs))
    # The Machine controller reads the Updating condition it has just set.
    return _updating_up_to_date(m, updating(m).status is Status.TRUE) or plain(UP_TO_DATE, Status.TRUE,
                                                                             UP_TO_DATE)


def control_plane_up_to_date(m: Machine, view: GroupView) -> Condition | None:
    """UpToDate of a control plane Machine: reported, else its version against the control plane's."""
    own = reported(m, UP_TO_DATE)
    if own is not None:
        return mirror(own, UP_TO_DATE)
    kcp = next((k for k in view.control_planes if k.meta.name == m.control_plane_name), None)
    if kcp is None or not kcp.version or not m.version:
        return None
    if m.version != kcp.version:
        message = f"* Version {m.version}, {kcp.version} required"
        return Condition(UP_TO_DATE, Status.FALSE, NOT_UP_TO_DATE, message)
    # The KubeadmControlPlane reads the annotations, not the Machine's Updating condition.
    return _updating_up_to_date(m, m.update_in_progress) or plain(UP_TO_DATE, Status.TRUE,
                                                                  UP_TO_DATE)
