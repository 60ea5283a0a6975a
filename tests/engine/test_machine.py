"""Machine rules: one named case per branch of each computed or read-as-reported condition."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from exporter.engine.evaluate_types import Computed
from exporter.engine.machine import compute_machine
from exporter.engine.model import Condition, Gate, Machine, Status
from tests.engine.builders import (
    NOW,
    F,
    T,
    U,
    capi_cluster,
    capi_view,
    cond,
    healthy_machine_conditions,
    kcp,
    machine,
    machine_deployment,
    machine_set,
)

HEALTHY = healthy_machine_conditions()
DRAIN_PDB = ("Drain not completed yet (started at 2023-11-14T21:00:00Z):\n* Pods p1: cannot evict pod as it "
             "would violate the pod's disruption budget.")


def without(*types: str) -> tuple[Condition, ...]:
    return tuple(c for c in HEALTHY if c.type not in types)


def swap(*changed: Condition, **fields: object) -> Machine:
    """A healthy Machine whose conditions of the given types are replaced."""
    return machine(conditions=(*without(*(c.type for c in changed)), *changed), **fields)


def v1(*old: Condition, **fields: object) -> Machine:
    """A Machine stored in the v1beta1 layout only."""
    return machine(layout="v1beta1", v1beta1=old, **fields)


def run(m: Machine, *others: object, now: float = NOW) -> Computed:
    return compute_machine(m, capi_view(m, *others), now)  # type: ignore[arg-type]


def get(result: Computed, type_: str) -> Condition | None:
    return result.condition(type_)


def expect(result: Computed, type_: str, status: Status, reason: str, message: str | None = None) -> None:
    c = get(result, type_)
    assert c is not None, f"{type_} missing"
    assert (c.status, c.reason) == (status, reason), c
    if message is not None:
        assert c.message == message


# ---- inputs read as reported ------------------------------------------------------------------

INPUT_CASES: list[tuple[str, Callable[[], Machine], str, Status, str, str | None]] = [
    ("bootstrap-reported-mirrored",
     lambda: swap(cond("BootstrapConfigReady", F, "X", "m")),
     "BootstrapConfigReady", F, "X", "m"),
    ("bootstrap-not-reported", lambda: machine(conditions=without("BootstrapConfigReady")),
     "BootstrapConfigReady", U, "NotYetReported", "Condition BootstrapConfigReady not yet reported"),
    ("bootstrap-no-config-ref",
     lambda: replace(machine(conditions=without("BootstrapConfigReady")), bootstrap_ref=None),
     "BootstrapConfigReady", T, "DataSecretProvided", ""),
    ("bootstrap-v1beta1-condition-true", lambda: v1(cond("BootstrapReady", T)),
     "BootstrapConfigReady", T, "Ready", ""),
    ("bootstrap-v1beta1-condition-false",
     lambda: v1(cond("BootstrapReady", F, "WaitingForDataSecret", "w")),
     "BootstrapConfigReady", F, "WaitingForDataSecret", "w"),
    ("bootstrap-v1beta1-flag-true", lambda: machine(layout="v1beta1", bootstrap_data_secret_created=True),
     "BootstrapConfigReady", T, "Ready", ""),
    ("bootstrap-v1beta1-flag-false", lambda: machine(layout="v1beta1", bootstrap_data_secret_created=False),
     "BootstrapConfigReady", F, "NotReady", "KubeadmConfig status.initialization.dataSecretCreated is false"),
    ("bootstrap-v1beta1-nothing", lambda: machine(layout="v1beta1"),
     "BootstrapConfigReady", U, "NotYetReported", None),
    ("infra-reported-mirrored", lambda: machine(), "InfrastructureReady", T, "Ready", ""),
    ("infra-not-reported", lambda: machine(conditions=without("InfrastructureReady")),
     "InfrastructureReady", U, "NotYetReported", None),
    ("infra-v1beta1-condition", lambda: v1(cond("InfrastructureReady", T)),
     "InfrastructureReady", T, "Ready", ""),
    ("infra-v1beta1-flag-false", lambda: machine(layout="v1beta1", infrastructure_provisioned=False),
     "InfrastructureReady", F, "NotReady", "DockerMachine status.initialization.provisioned is false"),
    ("infra-v1beta1-flag-true", lambda: machine(layout="v1beta1", infrastructure_provisioned=True),
     "InfrastructureReady", T, "Ready", ""),
    ("node-ready-reported", lambda: machine(), "NodeReady", T, "NodeReady", ""),
    ("node-ready-not-reported", lambda: machine(conditions=without("NodeReady")),
     "NodeReady", U, "NotYetReported", None),
    ("node-ready-from-v1beta1-node-healthy", lambda: v1(cond("NodeHealthy", T)),
     "NodeReady", T, "NodeReady", ""),
    ("node-ready-v1beta1-unhealthy-unknown",
     lambda: v1(cond("NodeHealthy", F, "NodeConditionsFailed")),
     "NodeReady", U, "NotYetReported", None),
    ("node-healthy-not-reported", lambda: machine(conditions=without("NodeHealthy")),
     "NodeHealthy", U, "NotYetReported", None),
    ("node-healthy-v1beta1-false",
     lambda: v1(cond("NodeHealthy", F, "NodeConditionsFailed", "pressure")),
     "NodeHealthy", F, "NodeConditionsFailed", "pressure"),
    ("health-check-reported", lambda: swap(cond("HealthCheckSucceeded", F, "UnhealthyNode")),
     "HealthCheckSucceeded", F, "UnhealthyNode", None),
    ("health-check-v1beta1-true", lambda: v1(cond("HealthCheckSucceeded", T)),
     "HealthCheckSucceeded", T, "HealthCheckSucceeded", None),
    ("owner-remediated-v1beta1",
     lambda: machine(layout="v1beta1", v1beta1=[cond("OwnerRemediated", F, "WaitingForRemediation")]),
     "OwnerRemediated", F, "WaitingForRemediation", None),
    ("updating-reported", lambda: machine(conditions=(*HEALTHY, cond("Updating", T, "InPlaceUpdating"))),
     "Updating", T, "InPlaceUpdating", None),
    ("updating-not-reported", lambda: machine(), "Updating", F, "NotUpdating", ""),
    ("updating-not-reported-update-in-progress", lambda: machine(conditions=without("Updating"),
                                                                 update_in_progress=True),
     "Updating", T, "InPlaceUpdating", "In-place update in progress"),
    ("updating-v1beta1", lambda: machine(layout="v1beta1"), "Updating", F, "NotUpdating", ""),
]


@pytest.mark.parametrize(("build", "type_", "status", "reason", "message"), [c[1:] for c in INPUT_CASES],
                         ids=[c[0] for c in INPUT_CASES])
def test_inputs(build: Callable[[], Machine], type_: str, status: Status, reason: str,
                message: str | None) -> None:
    expect(run(build()), type_, status, reason, message)


def test_reported_input_keeps_its_transition_time() -> None:
    c = Condition("NodeHealthy", F, "NodeNotHealthy", "x", NOW - 50)
    result = run(machine(conditions=(*without("NodeHealthy"), c)))
    assert get(result, "NodeHealthy") == Condition("NodeHealthy", F, "NodeNotHealthy", "x", NOW - 50)


@pytest.mark.parametrize("type_", ["HealthCheckSucceeded", "OwnerRemediated"])
def test_optional_inputs_absent_when_nobody_reports_them(type_: str) -> None:
    assert get(run(machine()), type_) is None


CP_TYPES = [
    ("managed-etcd", lambda: kcp(), {"APIServerPodHealthy", "ControllerManagerPodHealthy",
                                     "SchedulerPodHealthy", "EtcdPodHealthy", "EtcdMemberHealthy"}),
    ("external-etcd", lambda: kcp(external_etcd=True),
     {"APIServerPodHealthy", "ControllerManagerPodHealthy", "SchedulerPodHealthy"}),
    ("no-control-plane-object", lambda: None,
     {"APIServerPodHealthy", "ControllerManagerPodHealthy", "SchedulerPodHealthy"}),
]


@pytest.mark.parametrize(("owner", "types"), [c[1:] for c in CP_TYPES], ids=[c[0] for c in CP_TYPES])
def test_control_plane_machine_pod_conditions(owner: Callable[[], object], types: set[str]) -> None:
    m = machine(control_plane_name="kcp1")
    others = [o for o in (owner(),) if o is not None]
    result = run(m, *others)
    pod_types = {c.type for c in result.conditions if c.type.endswith(("PodHealthy", "MemberHealthy"))}
    assert pod_types == types
    assert all(get(result, t).reason == "NotYetReported" for t in types)  # type: ignore[union-attr]


def test_control_plane_pod_condition_from_v1beta1() -> None:
    m = machine(layout="v1beta1", control_plane_name="kcp1", v1beta1=[cond("APIServerPodHealthy", T)])
    expect(run(m, kcp()), "APIServerPodHealthy", T, "Running")


def test_worker_machine_has_no_pod_conditions() -> None:
    assert get(run(machine()), "APIServerPodHealthy") is None


# ---- UpToDate of worker Machines ---------------------------------------------------------------

def md_machine(**fields: object) -> Machine:
    return machine(conditions=without("UpToDate"), set_name="ms1", deployment_name="md1", **fields)


UP_TO_DATE_CASES = [
    ("same-template", machine_set("ms1", deployment_name="md1"), machine_deployment("md1"), T, "UpToDate",
     ""),
    ("version-differs", machine_set("ms1", deployment_name="md1", version="v1.29.0"),
     machine_deployment("md1", version="v1.30.0"), F, "NotUpToDate", "* Version v1.29.0, v1.30.0 required"),
    ("infra-template-differs", machine_set("ms1", deployment_name="md1", infra="old"),
     machine_deployment("md1", infra="new"), F, "NotUpToDate", "* DockerMachine is not up-to-date"),
    ("version-and-infra-differ", machine_set("ms1", deployment_name="md1", version="v1.29.0", infra="old"),
     machine_deployment("md1", infra="new"), F, "NotUpToDate",
     "* Version v1.29.0, v1.30.0 required\n* DockerMachine is not up-to-date"),
]

UPDATING_UP_TO_DATE_CASES: list[tuple[str, Callable[[], Machine], Status, str, str]] = [
    ("in-place-update-in-progress", lambda: md_machine(update_in_progress=True), F, "Updating",
     "* In-place update in progress"),
    ("in-place-update-names-the-updating-message",
     lambda: machine(conditions=(*without("UpToDate", "Updating"),
                                 cond("Updating", T, "InPlaceUpdating", "Waiting for UpdateMachine")),
                     set_name="ms1", deployment_name="md1", update_in_progress=True),
     F, "Updating", "* Waiting for UpdateMachine"),
    ("kubelet-version-behind",
     lambda: md_machine(version="v1.30.0", node_info={"kubeletVersion": "v1.29.0"}),
     F, "Updating", "* Node.status.nodeInfo.kubeletVersion v1.29.0, v1.30.0 required"),
    ("kubelet-version-matches",
     lambda: md_machine(version="v1.30.0", node_info={"kubeletVersion": "v1.30.0"}),
     T, "UpToDate", ""),
]


@pytest.mark.parametrize(("build", "status", "reason", "message"), [c[1:] for c in UPDATING_UP_TO_DATE_CASES],
                         ids=[c[0] for c in UPDATING_UP_TO_DATE_CASES])
def test_worker_up_to_date_while_updating(build: Callable[[], Machine], status: Status, reason: str,
                                          message: str) -> None:
    expect(run(build(), machine_set("ms1", deployment_name="md1"), machine_deployment("md1")), "UpToDate",
           status, reason, message)


def test_control_plane_up_to_date_while_updating_in_place() -> None:
    m = machine(layout="v1beta1", control_plane_name="kcp1", version="v1.30.0", update_in_progress=True)
    expect(run(m, replace(kcp(), version="v1.30.0")), "UpToDate", F, "Updating",
           "* In-place update in progress")


@pytest.mark.parametrize(("ms", "md", "status", "reason", "message"), [c[1:] for c in UP_TO_DATE_CASES],
                         ids=[c[0] for c in UP_TO_DATE_CASES])
def test_worker_up_to_date(ms: object, md: object, status: Status, reason: str, message: str) -> None:
    expect(run(md_machine(), ms, md), "UpToDate", status, reason, message)


def test_up_to_date_reported_wins() -> None:
    m = machine(conditions=(*without("UpToDate"), cond("UpToDate", F, "NotUpToDate", "* Version x")),
                set_name="ms1", deployment_name="md1")
    expect(run(m, machine_set("ms1", deployment_name="md1"), machine_deployment("md1")), "UpToDate", F,
           "NotUpToDate", "* Version x")


CP_UP_TO_DATE = [
    ("same-version", "v1.30.0", "v1.30.0", T, "UpToDate", ""),
    ("older-version", "v1.29.0", "v1.30.0", F, "NotUpToDate", "* Version v1.29.0, v1.30.0 required"),
]


@pytest.mark.parametrize(("own", "wanted", "status", "reason", "message"), [c[1:] for c in CP_UP_TO_DATE],
                         ids=[c[0] for c in CP_UP_TO_DATE])
def test_control_plane_up_to_date_by_version(own: str, wanted: str, status: Status, reason: str,
                                             message: str) -> None:
    m = machine(layout="v1beta1", control_plane_name="kcp1", version=own)
    expect(run(m, replace(kcp(), version=wanted)), "UpToDate", status, reason, message)


def test_control_plane_up_to_date_absent_without_control_plane() -> None:
    assert get(run(machine(layout="v1beta1", control_plane_name="kcp1", version="v1")), "UpToDate") is None


def test_up_to_date_absent_without_owners() -> None:
    assert get(run(md_machine()), "UpToDate") is None
    assert get(run(machine(conditions=without("UpToDate"))), "UpToDate") is None


# ---- Deleting ---------------------------------------------------------------------------------

DELETING_CASES = [
    ("not-deleting", lambda: machine(), F, "NotDeleting", ""),
    ("reported-stage", lambda: swap(cond("Deleting", T, "DrainingNode", "d"), deleted_ago=60), T,
     "DrainingNode", "d"),
    ("v1beta1-draining", lambda: machine(layout="v1beta1", deleted_ago=60,
                                         v1beta1=[cond("DrainingSucceeded", F, "Draining", "drain msg")]),
     T, "DrainingNode", "drain msg"),
    ("v1beta1-pre-drain-hook", lambda: machine(layout="v1beta1", deleted_ago=60,
                                               v1beta1=[cond("PreDrainDeleteHookSucceeded", F, "Waiting")]),
     T, "WaitingForPreDrainHook", ""),
    ("v1beta1-volume-detach", lambda: machine(layout="v1beta1", deleted_ago=60,
                                              v1beta1=[cond("DrainingSucceeded", T),
                                                       cond("VolumeDetachSucceeded", F, "Waiting", "v")]),
     T, "WaitingForVolumeDetach", "v"),
    ("no-stage-known", lambda: machine(conditions=without("Deleting"), deleted_ago=60), T, "Deleting",
     "Deletion started"),
]


@pytest.mark.parametrize(("build", "status", "reason", "message"), [c[1:] for c in DELETING_CASES],
                         ids=[c[0] for c in DELETING_CASES])
def test_deleting(build: Callable[[], Machine], status: Status, reason: str, message: str) -> None:
    expect(run(build()), "Deleting", status, reason, message)


# ---- Ready ------------------------------------------------------------------------------------

def deleting_machine(reason: str = "DrainingNode", message: str = "", deleted_ago: float = 60,
                     drain_ago: float | None = None, extra: tuple[Condition, ...] = ()) -> Machine:
    own = (*without("Deleting", *(c.type for c in extra)), cond("Deleting", T, reason, message), *extra)
    return machine(conditions=own, deleted_ago=deleted_ago,
                   drain_start_time=None if drain_ago is None else NOW - drain_ago)


READY_CASES: list[tuple[str, Callable[[], Machine], Status, str, str]] = [
    ("all-good", lambda: machine(), T, "Ready", ""),
    ("infrastructure-not-ready",
     lambda: swap(cond("InfrastructureReady", F, "NotReady", "vm")),
     F, "NotReady", "* InfrastructureReady: vm"),
    ("node-health-not-reported", lambda: machine(conditions=without("NodeHealthy")), U, "ReadyUnknown",
     "* NodeHealthy: Condition not yet reported"),
    ("health-check-failed",
     lambda: machine(conditions=(*HEALTHY, cond("HealthCheckSucceeded", F, "UnhealthyNode", "node gone"))),
     F, "NotReady", "* HealthCheckSucceeded: node gone"),
    ("updating-in-place",
     lambda: swap(cond("Updating", T, "InPlaceUpdating", "In-place update in progress")),
     F, "NotReady", "* Updating: In-place update in progress"),
    ("positive-gate-missing", lambda: machine(gates=[Gate("MyGate")]), U, "ReadyUnknown",
     "* MyGate: Condition not yet reported"),
    ("positive-gate-true", lambda: machine(conditions=(*HEALTHY, cond("MyGate", T)), gates=[Gate("MyGate")]),
     T, "Ready", ""),
    ("negative-gate-true",
     lambda: machine(conditions=(*HEALTHY, cond("Blocked", T, "Yes", "blocked")),
                     gates=[Gate("Blocked", negative=True)]), F, "NotReady", "* Blocked: blocked"),
    ("negative-gate-false",
     lambda: machine(conditions=(*HEALTHY, cond("Blocked", F, "No")), gates=[Gate("Blocked", negative=True)]),
     T, "Ready", ""),
    ("gate-read-from-v1beta1",
     lambda: machine(layout="v1beta1", gates=[Gate("MyGate")], bootstrap_data_secret_created=True,
                     infrastructure_provisioned=True,
                     v1beta1=[cond("NodeHealthy", T), cond("MyGate", F, "Nope", "gate msg")]),
     F, "NotReady", "* MyGate: gate msg"),
    ("deleting-stage", lambda: deleting_machine(), F, "NotReady",
     "* Deleting: Machine deletion in progress, stage: DrainingNode"),
    ("deleting-stale", lambda: deleting_machine(deleted_ago=1000), F, "NotReady",
     "* Deleting: Machine deletion in progress since more than 15m, stage: DrainingNode"),
    ("deleting-stale-drain-delay",
     lambda: deleting_machine(message=DRAIN_PDB, deleted_ago=1000, drain_ago=600),
     F, "NotReady", "* Deleting: Machine deletion in progress since more than 15m, stage: DrainingNode, "
     "delay likely due to PodDisruptionBudgets"),
    ("deleting-drain-too-recent-for-delay",
     lambda: deleting_machine(message=DRAIN_PDB, deleted_ago=1000, drain_ago=120), F, "NotReady",
     "* Deleting: Machine deletion in progress since more than 15m, stage: DrainingNode"),
    ("deleting-infrastructure-gone-is-info",
     lambda: deleting_machine(reason="WaitingForInfrastructureDeletion",
                              extra=(cond("InfrastructureReady", F, "ObjectDeleted", "gone"),)),
     F, "NotReady", "* Deleting: Machine deletion in progress, stage: WaitingForInfrastructureDeletion"),
    ("infrastructure-gone-without-deletion-is-issue",
     lambda: swap(cond("InfrastructureReady", F, "ObjectDeleted", "gone")),
     F, "NotReady", "* InfrastructureReady: gone"),
]


@pytest.mark.parametrize(("build", "status", "reason", "message"), [c[1:] for c in READY_CASES],
                         ids=[c[0] for c in READY_CASES])
def test_ready(build: Callable[[], Machine], status: Status, reason: str, message: str) -> None:
    expect(run(build()), "Ready", status, reason, message)


CP_GATES = [Gate("APIServerPodHealthy"), Gate("ControllerManagerPodHealthy"), Gate("SchedulerPodHealthy")]


def cp_gated(messages: tuple[str, str, str]) -> Machine:
    pods = tuple(cond(g.condition_type, F, "Failed", msg) for g, msg in zip(CP_GATES, messages, strict=True))
    return machine(conditions=(*HEALTHY, *pods), gates=CP_GATES, control_plane_name="kcp1")


def test_ready_collapses_identical_control_plane_component_messages() -> None:
    expect(run(cp_gated(("Pod crashing", "Pod crashing", "Pod crashing"))), "Ready", F, "NotReady",
           "* Control plane components: Pod crashing")


def test_ready_keeps_different_control_plane_component_messages() -> None:
    expect(run(cp_gated(("a", "b", "a"))), "Ready", F, "NotReady",
           "* APIServerPodHealthy: a\n* ControllerManagerPodHealthy: b\n* SchedulerPodHealthy: a")


# ---- Available --------------------------------------------------------------------------------

AVAILABLE_CASES: list[tuple[str, Callable[[], Machine], Status, str]] = [
    ("not-ready", lambda: machine(conditions=without("NodeHealthy")), F, "NotReady"),
    ("no-min-ready-seconds", lambda: machine(), T, "Available"),
    ("ready-long-enough", lambda: machine(min_ready_seconds=300), T, "Available"),  # Ready since NOW - 600
    ("ready-too-recently", lambda: machine(min_ready_seconds=900), F, "WaitingForMinReadySeconds"),
    ("ready-time-unknown",
     lambda: machine(conditions=(*without("Ready"), cond("Ready", T, "Ready")), min_ready_seconds=5),
     F, "WaitingForMinReadySeconds"),
    ("v1beta1-latest-of-ready-and-node-healthy",
     lambda: machine(layout="v1beta1", min_ready_seconds=100, bootstrap_data_secret_created=True,
                     infrastructure_provisioned=True,
                     v1beta1=[Condition("Ready", T, "", "", NOW - 1000),
                              Condition("NodeHealthy", T, "", "", NOW - 50)]),
     F, "WaitingForMinReadySeconds"),
    ("v1beta1-ready-long-enough",
     lambda: machine(layout="v1beta1", min_ready_seconds=100, bootstrap_data_secret_created=True,
                     infrastructure_provisioned=True,
                     v1beta1=[Condition("Ready", T, "", "", NOW - 1000),
                              Condition("NodeHealthy", T, "", "", NOW - 500)]),
     T, "Available"),
]


@pytest.mark.parametrize(("build", "status", "reason"), [c[1:] for c in AVAILABLE_CASES],
                         ids=[c[0] for c in AVAILABLE_CASES])
def test_available(build: Callable[[], Machine], status: Status, reason: str) -> None:
    expect(run(build()), "Available", status, reason)


# ---- Paused, phase, counters ------------------------------------------------------------------

@pytest.mark.parametrize(("cluster_paused", "annotated", "status", "message"), [
    (False, False, F, ""),
    (True, False, T, "Cluster spec.paused is set to true"),
    (False, True, T, "Machine has the cluster.x-k8s.io/paused annotation"),
], ids=["not-paused", "cluster-paused", "annotated"])
def test_paused(cluster_paused: bool, annotated: bool, status: Status, message: str) -> None:
    result = run(machine(paused_annotation=annotated), capi_cluster(paused=cluster_paused))
    c = get(result, "Paused")
    assert c is not None and (c.status, c.message) == (status, message)


PHASES: list[tuple[str, Callable[[], Machine], str]] = [
    ("reported", lambda: machine(phase="Running"), "Running"),
    ("pending", lambda: machine(), "Pending"),
    ("provisioning", lambda: machine(bootstrap_data_secret_created=True, infrastructure_provisioned=False),
     "Provisioning"),
    ("provisioned", lambda: machine(provider_id="docker://m1"), "Provisioned"),
    ("running", lambda: machine(provider_id="docker://m1", node_name="n1", infrastructure_provisioned=True),
     "Running"),
    ("updating", lambda: swap(cond("Updating", T, "InPlaceUpdating"), node_name="n1",
                              infrastructure_provisioned=True), "Updating"),
    ("updating-from-annotation", lambda: machine(conditions=without("Updating"), node_name="n1",
                                                 infrastructure_provisioned=True, update_in_progress=True),
     "Updating"),
    ("deleting", lambda: machine(node_name="n1", infrastructure_provisioned=True, deleted_ago=5), "Deleting"),
]


@pytest.mark.parametrize(("build", "phase"), [c[1:] for c in PHASES], ids=[c[0] for c in PHASES])
def test_phase(build: Callable[[], Machine], phase: str) -> None:
    assert run(build()).phase == phase


def test_machine_has_no_counters_and_no_transition_times() -> None:
    result = run(machine())
    assert result.counters == {}
    assert get(result, "Ready").last_transition_time is None  # type: ignore[union-attr]
