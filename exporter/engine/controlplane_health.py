"""KubeadmControlPlane health: ControlPlaneComponentsHealthy, EtcdClusterHealthy and Available.

Owns the aggregation of the per-Machine conditions KCP writes on its Machines
(``APIServerPodHealthy``, ``ControllerManagerPodHealthy``, ``SchedulerPodHealthy``,
``EtcdPodHealthy``, ``EtcdMemberHealthy``) into the KCP-level conditions, row by row of the
``ControlPlaneComponentsHealthy`` transition table (seeds/002), and the approximate ``Available``.
Owns no counter, scaling or deletion rule (see ``controlplane.py``).

Rows of the seed 002 table whose guard is visible in objects are computed:
  * not initialized (flag false or Initialized not True) → Unknown ``InspectionFailed``;
  * some Machine reports a component False → False ``NotHealthy`` with per-Machine bullets;
  * some Machine with a providerID reports a component Unknown → Unknown ``HealthUnknown``;
  * every reporting Machine True → True ``Healthy``;
  * no Machine reporting → Unknown ``HealthUnknown`` "No Machines reporting control plane status".
Rows whose guard needs the workload cluster are *read as reported*: the ClusterCache probe
(``ConnectionDown`` "Remote connection not established yet" / "Last successful probe at ..."),
workload connection errors (``InspectionFailed`` "Please check controller logs for errors"),
failing to list Nodes ("Failed to get Nodes hosting ..."), and Nodes without a Machine
("* Control plane Node <n> does not have a corresponding Machine"). When the KCP reports one of
those, the computed condition keeps it: the Machine conditions it would aggregate are stale then.
"""

from __future__ import annotations

from collections.abc import Sequence

from exporter.engine.conditions import find, plain
from exporter.engine.evaluate_types import GroupView
from exporter.engine.machine_rollup import list_names
from exporter.engine.model import Base, Condition, KubeadmControlPlane, Machine, Status
from exporter.engine.vocabulary import (
    API_SERVER_POD_HEALTHY as APISERVER_POD_HEALTHY,
)
from exporter.engine.vocabulary import (
    AVAILABLE,
    CERTIFICATES_AVAILABLE,
    CONNECTION_DOWN,
    CONTROL_PLANE_COMPONENTS_HEALTHY,
    CONTROLLER_MANAGER_POD_HEALTHY,
    ETCD_CLUSTER_HEALTHY,
    ETCD_MEMBER_HEALTHY,
    ETCD_POD_HEALTHY,
    HEALTH_UNKNOWN,
    HEALTHY,
    INITIALIZED,
    INSPECTION_FAILED,
    NOT_AVAILABLE,
    NOT_HEALTHY,
    SCHEDULER_POD_HEALTHY,
)
from exporter.engine.vocabulary import (
    AVAILABLE as AVAILABLE_REASON,
)

WAITING_FOR_INITIALIZATION = "Waiting for Cluster control plane to be initialized"
ALL_COMPONENTS = "Control plane components"
_KCP_LEVEL_PREFIXES = ("* Control plane Node ", "* Etcd member ")


def reported(obj: Base, type_: str) -> Condition | None:
    """The object's own condition: v1beta2 where it has them, else the v1beta1 one of that type."""
    return find(obj.reported_conditions, type_)


def component_types(kcp: KubeadmControlPlane) -> tuple[str, ...]:
    base = (APISERVER_POD_HEALTHY, CONTROLLER_MANAGER_POD_HEALTHY, SCHEDULER_POD_HEALTHY)
    return base if kcp.external_etcd else (*base, ETCD_POD_HEALTHY)


def _initialized(kcp: KubeadmControlPlane, view: GroupView) -> bool:
    condition = view.effective(kcp.key, INITIALIZED)
    return kcp.initialized is True and (condition is None or condition.status is Status.TRUE)


def _read_as_reported(kcp: KubeadmControlPlane, type_: str) -> Condition | None:
    """The KCP's own condition when it stems from a workload-cluster probe the engine cannot redo."""
    own = reported(kcp, type_)
    if own is None or own.status is not Status.UNKNOWN:
        return None
    if own.reason == CONNECTION_DOWN:
        return own
    if own.reason == INSPECTION_FAILED and own.message != WAITING_FOR_INITIALIZATION:
        return own
    return None


def _kcp_level_errors(kcp: KubeadmControlPlane, type_: str) -> list[str]:
    """KCP-level bullets (Nodes or etcd members without a Machine): only the workload cluster knows them."""
    own = reported(kcp, type_)
    if own is None or own.status is not Status.FALSE:
        return []
    return [line for line in own.message.split("\n") if line.startswith(_KCP_LEVEL_PREFIXES)]


def machine_health(
    target_type: str,
    kcp: KubeadmControlPlane,
    view: GroupView,
    machines: Sequence[Machine],
    source_types: Sequence[str],
    *,
    note: str,
    all_conditions_label: str,
) -> Condition:
    """Aggregate per-Machine component/etcd conditions into one KCP condition (seed 002 rows)."""
    if not _initialized(kcp, view):
        return Condition(target_type, Status.UNKNOWN, INSPECTION_FAILED, WAITING_FOR_INITIALIZATION)
    as_reported = _read_as_reported(kcp, target_type)
    if as_reported is not None:
        return Condition(target_type, as_reported.status, as_reported.reason, as_reported.message)
    with_issue: set[str] = set()
    with_unknown: set[str] = set()
    with_info: set[str] = set()
    by_message: dict[str, list[str]] = {}
    for machine in machines:
        lines: list[str] = []
        present: list[Condition] = [c for t in source_types if (c := reported(machine, t)) is not None]
        for c in present:
            if c.status is Status.TRUE:
                with_info.add(machine.meta.name)
                continue
            if c.status is Status.UNKNOWN and not machine.provider_id:
                # Still provisioning: pods and etcd may come up before the Node registers.
                with_info.add(machine.meta.name)
                continue
            (with_issue if c.status is Status.FALSE else with_unknown).add(machine.meta.name)
            lines.append(f"  * {c.type}: {c.message or f'condition is {c.status}'}")
        if not lines:
            continue
        distinct = {c.message for c in present}
        if len(present) > 1 and len(distinct) == 1 and all_conditions_label:
            lines = [f"  * {all_conditions_label}: {distinct.pop()}"]
        by_message.setdefault("\n".join(lines), []).append(machine.meta.name)
    kcp_errors = _kcp_level_errors(kcp, target_type)
    message = _health_message(by_message, kcp_errors)
    if with_issue or kcp_errors:
        return Condition(target_type, Status.FALSE, NOT_HEALTHY, message)
    if with_unknown:
        return Condition(target_type, Status.UNKNOWN, HEALTH_UNKNOWN, message)
    if with_info:
        return plain(target_type, Status.TRUE, HEALTHY)
    return Condition(target_type, Status.UNKNOWN, HEALTH_UNKNOWN, f"No Machines reporting {note} status")


def _health_message(by_message: dict[str, list[str]], kcp_errors: list[str]) -> str:
    # Most shared message first; ties broken by the Machine names.
    ordered = sorted(by_message.items(), key=lambda item: (-len(item[1]), ",".join(sorted(item[1]))))
    blocks = []
    for text, names in ordered:
        label = "Machine" if len(names) == 1 else "Machines"
        blocks.append(f"* {label} {list_names(names, 3)}:\n{text}")
    return "\n".join([*blocks, *kcp_errors])


def control_plane_components_healthy(
    kcp: KubeadmControlPlane, view: GroupView, machines: Sequence[Machine]
) -> Condition:
    return machine_health(CONTROL_PLANE_COMPONENTS_HEALTHY, kcp, view, machines, component_types(kcp),
                          note="control plane", all_conditions_label=ALL_COMPONENTS)


def etcd_cluster_healthy(
    kcp: KubeadmControlPlane, view: GroupView, machines: Sequence[Machine]
) -> Condition | None:
    """None for external etcd: KCP leaves that condition to whoever manages the etcd cluster."""
    if kcp.external_etcd:
        return None
    return machine_health(ETCD_CLUSTER_HEALTHY, kcp, view, machines, (ETCD_MEMBER_HEALTHY,),
                          note="etcd member", all_conditions_label="")


def available(kcp: KubeadmControlPlane, view: GroupView, machines: Sequence[Machine], now: float
              ) -> Condition:
    """KCP ``Available``, approximately: the etcd member list lives only in the workload cluster.

    Approximation: every CP Machine with a Node is taken to host one voting etcd member, so quorum
    is computed over those Machines and their ``EtcdMemberHealthy``; the checks that need the
    member list itself (members without a Machine, "Waiting for etcd to report the list of
    members", learners) are not made. While Available holds, a Machine whose health conditions
    turned bad less than 10s ago is still counted healthy in the message, as upstream does against
    flakes. When the KCP reports ``Available`` that one is the effective condition anyway.
    """
    if kcp.initialized is not True:
        return Condition(AVAILABLE, Status.FALSE, NOT_AVAILABLE, "Control plane not yet initialized")
    managed = not kcp.external_etcd
    types = (*component_types(kcp), ETCD_MEMBER_HEALTHY) if managed else component_types(kcp)
    provisioned = [m for m in machines if m.provider_id]
    k8s_healthy = sum(1 for m in provisioned if all(_true(m, t) for t in types))
    k8s_bad = sum(1 for m in provisioned if not all(_true(m, t) for t in types) and _surfaced(m, types, now))
    members = [m for m in machines if m.node_name]
    etcd_healthy = sum(1 for m in members if _true(m, ETCD_MEMBER_HEALTHY))
    etcd_bad = sum(1 for m in members
                   if not _true(m, ETCD_MEMBER_HEALTHY) and _surfaced(m, (ETCD_MEMBER_HEALTHY,), now))
    quorum = len(members) // 2 + 1
    certificates = certificates_available(kcp, view)
    certificates_ok = certificates is not None and certificates.status is Status.TRUE
    etcd_ok = not managed or etcd_healthy >= quorum
    if not kcp.meta.deleting and etcd_ok and k8s_healthy >= 1 and certificates_ok:
        # Issues younger than 10s are not surfaced yet: those Machines count as healthy here.
        notes = []
        if managed and etcd_bad:
            notes.append(_etcd_line(len(members) - etcd_bad, len(members), quorum))
        if k8s_bad:
            shown = len(provisioned) - k8s_bad
            verb = "has" if shown == 1 else "have"
            notes.append(f"* {shown} of {len(machines)} Machines {verb} healthy control plane "
                         "components, at least 1 required")
        return Condition(AVAILABLE, Status.TRUE, AVAILABLE_REASON, "\n".join(notes))
    problems = []
    if kcp.meta.deleting:
        problems.append("* Control plane metadata.deletionTimestamp is set")
    if not certificates_ok:
        problems.append("* Control plane certificates are not available")
    if managed and etcd_healthy < quorum:
        problems.append(_etcd_line(etcd_healthy, len(members), quorum))
    if k8s_healthy < 1:
        problems.append("* There are no Machines with healthy control plane components, at least 1 required")
    return Condition(AVAILABLE, Status.FALSE, NOT_AVAILABLE, "\n".join(problems))


def certificates_available(kcp: KubeadmControlPlane, view: GroupView) -> Condition | None:
    """Read as reported (certificate Secrets are not watched); a v1beta1 KCP has it as a v1beta1 one."""
    own = view.effective(kcp.key, CERTIFICATES_AVAILABLE)
    return own or find(kcp.v1beta1_conditions, CERTIFICATES_AVAILABLE)


def _true(machine: Machine, type_: str) -> bool:
    c = reported(machine, type_)
    return c is not None and c.status is Status.TRUE


SURFACE_AFTER_SECONDS = 10.0


def _surfaced(machine: Machine, types: Sequence[str], now: float) -> bool:
    """Whether the oldest of these conditions that is not True turned so more than 10s ago."""
    times = [c.last_transition_time for t in types
             if (c := reported(machine, t)) is not None and c.status is not Status.TRUE]
    if not times:
        return False
    known = [t for t in times if t is not None]
    return len(known) < len(times) or now - min(known) > SURFACE_AFTER_SECONDS


def _etcd_line(healthy: int, total: int, quorum: int) -> str:
    required = f"at least {quorum} healthy member required for etcd quorum"
    if healthy == 0:
        return f"* There are no healthy etcd member, {required}"
    if healthy == 1:
        return f"* 1 of {total} etcd members is healthy, {required}"
    return f"* {healthy} of {total} etcd members are healthy, {required}"
