"""Seed 002: the KubeadmControlPlane ``ControlPlaneComponentsHealthy`` transition table, row by row.

One test per row whose guard is visible in objects, named after the row. The rows whose guard
needs the workload cluster (ClusterCache probe timings, connection errors, listing Nodes, a Node
without a Machine) cannot be recomputed: the engine reads them as reported, which the last tests
check (the KCP's own condition is kept instead of aggregating stale Machine conditions).
"""

from __future__ import annotations

import pytest

from exporter.engine.controlplane import compute_kubeadmcontrolplane
from exporter.engine.model import Condition, KubeadmControlPlane, Machine

from .builders import NOW, F, T, U, capi_view, cond, control_plane, cp_machine

TYPE = "ControlPlaneComponentsHealthy"
WAITING = "Waiting for Cluster control plane to be initialized"


def components_healthy(kcp: KubeadmControlPlane, *machines: Machine) -> Condition:
    got = compute_kubeadmcontrolplane(kcp, capi_view(kcp, *machines), NOW).condition(TYPE)
    assert got is not None
    return got


def pods(**bad: Condition) -> list[Condition]:
    """All four component conditions True except the ones given by type."""
    names = ("APIServerPodHealthy", "ControllerManagerPodHealthy", "SchedulerPodHealthy", "EtcdPodHealthy")
    return [bad.get(n, cond(n, T, "PodRunning")) for n in names]


def shape(c: Condition) -> tuple[str, str, str]:
    return (c.status.value, c.reason, c.message)


@pytest.mark.parametrize(
    "kcp",
    [
        control_plane(initialized=False),
        control_plane(initialized=None),
        control_plane(conditions=[cond("Initialized", F, "NotInitialized")]),
    ],
    ids=["initialization-flag-false", "initialization-flag-unset", "initialized-condition-not-true"],
)
def test_row_not_initialized_reports_inspection_failed(kcp: KubeadmControlPlane) -> None:
    got = components_healthy(kcp, cp_machine("m1", components=F, message="Pod does not exist"))
    assert shape(got) == ("Unknown", "InspectionFailed", WAITING)


@pytest.mark.parametrize(
    "machines,message",
    [
        (
            [cp_machine("m1", components=None, extra=pods(
                APIServerPodHealthy=cond("APIServerPodHealthy", F, "PodDoesNotExist", "Pod does not exist"))),
             cp_machine("m2")],
            "* Machine m1:\n  * APIServerPodHealthy: Pod does not exist",
        ),
        (
            [cp_machine("m1", components=F, message="Waiting to be scheduled"),
             cp_machine("m2", components=F, message="Waiting to be scheduled"), cp_machine("m3")],
            "* Machines m1, m2:\n  * Control plane components: Waiting to be scheduled",
        ),
        (
            [cp_machine("m1", components=F)],
            "* Machine m1:\n  * Control plane components: ",
        ),
        (
            [cp_machine("m1", components=None,
                        extra=[cond("SchedulerPodHealthy", F, "PodFailed", "CrashLoopBackOff"),
                               cond("EtcdPodHealthy", U, "PodInspectionFailed",
                                    "Pod is reporting Unknown status")])],
            "* Machine m1:\n  * SchedulerPodHealthy: CrashLoopBackOff\n"
            "  * EtcdPodHealthy: Pod is reporting Unknown status",
        ),
    ],
    ids=["one-component-false", "same-message-collapsed-across-machines", "empty-messages-collapse",
         "false-wins-over-unknown"],
)
def test_row_machine_with_false_component_is_not_healthy(machines: list[Machine], message: str) -> None:
    got = components_healthy(control_plane(), *machines)
    assert shape(got) == ("False", "NotHealthy", message)


def test_row_false_component_without_message_says_condition_is_false() -> None:
    # One condition only: with several, identical (empty) messages collapse as upstream does.
    m1 = cp_machine("m1", components=None, extra=[cond("APIServerPodHealthy", F, "PodProvisioning")])
    got = components_healthy(control_plane(), m1)
    assert got.message == "* Machine m1:\n  * APIServerPodHealthy: condition is False"


def test_row_unknown_component_on_machine_with_provider_id_is_health_unknown() -> None:
    m1 = cp_machine("m1", components=U, message="Node is unreachable")
    got = components_healthy(control_plane(), m1, cp_machine("m2"))
    assert shape(got) == ("Unknown", "HealthUnknown", "* Machine m1:\n  * Control plane components: "
                                                        "Node is unreachable")


def test_row_unknown_component_on_machine_without_provider_id_counts_as_provisioning() -> None:
    m1 = cp_machine("m1", components=U, message="Waiting for the Node", provider_id="")
    got = components_healthy(control_plane(), m1, cp_machine("m2"))
    assert shape(got) == ("True", "Healthy", "")


def test_row_all_machines_true_is_healthy() -> None:
    got = components_healthy(control_plane(), cp_machine("m1"), cp_machine("m2"), cp_machine("m3"))
    assert shape(got) == ("True", "Healthy", "")


def test_row_external_etcd_does_not_require_etcd_pod() -> None:
    m1 = cp_machine("m1", components=None, etcd=None,
                    extra=[cond(t, T) for t in ("APIServerPodHealthy", "ControllerManagerPodHealthy",
                                                "SchedulerPodHealthy")])
    m1_bad_etcd_pod = cp_machine("m2", components=None, etcd=None,
                                 extra=[*m1.conditions[-3:], cond("EtcdPodHealthy", F, "", "ignored")])
    got = components_healthy(control_plane(external_etcd=True), m1, m1_bad_etcd_pod)
    assert shape(got) == ("True", "Healthy", "")


@pytest.mark.parametrize(
    "machines",
    [[], [cp_machine("m1", components=None, etcd=None)]],
    ids=["no-machines", "machines-not-reporting"],
)
def test_row_no_machines_reporting_is_health_unknown(machines: list[Machine]) -> None:
    got = components_healthy(control_plane(), *machines)
    assert shape(got) == ("Unknown", "HealthUnknown", "No Machines reporting control plane status")


# ---- rows read as reported -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "reported",
    [
        cond(TYPE, U, "ConnectionDown", "Remote connection not established yet"),
        cond(TYPE, U, "ConnectionDown", "Last successful probe at 2026-01-01T00:00:00Z"),
        cond(TYPE, U, "InspectionFailed", "Please check controller logs for errors"),
        cond(TYPE, U, "InspectionFailed", "Failed to get Nodes hosting control plane components: timeout"),
    ],
    ids=["probe-never-succeeded", "probe-grace-period-expired", "workload-connection-error",
         "listing-nodes-failed"],
)
def test_workload_cluster_rows_are_read_as_reported(reported: Condition) -> None:
    got = components_healthy(control_plane(conditions=[reported]), cp_machine("m1"))
    assert shape(got) == shape(reported)


def test_node_without_machine_row_is_kept_from_the_reported_message() -> None:
    reported = cond(TYPE, F, "NotHealthy",
                    "* Machine m1:\n  * APIServerPodHealthy: old\n"
                    "* Control plane Node n9 does not have a corresponding Machine")
    got = components_healthy(control_plane(conditions=[reported]), cp_machine("m1"))
    assert shape(got) == ("False", "NotHealthy",
                          "* Control plane Node n9 does not have a corresponding Machine")


def test_stale_reported_initialization_wait_is_recomputed_once_initialized() -> None:
    reported = cond(TYPE, U, "InspectionFailed", WAITING)
    got = components_healthy(control_plane(conditions=[reported]), cp_machine("m1"))
    assert shape(got) == ("True", "Healthy", "")
