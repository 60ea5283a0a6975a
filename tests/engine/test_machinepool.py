"""MachinePool rules: counters, conditions, phase and the seed 003 contract findings, one case per branch."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from exporter.engine.evaluate_types import Computed
from exporter.engine.machinepool import compute_machinepool
from exporter.engine.model import Base, Condition, MachinePool

from .builders import (
    NOW,
    F,
    T,
    capi_cluster,
    capi_view,
    cond,
    healthy_machine_conditions,
    infra_machine_pool,
    machine_pool,
    pool_machine,
)


def run(mp: MachinePool, *objects: Base) -> Computed:
    return compute_machinepool(mp, capi_view(mp, *objects), NOW)


def with_(*replace_: Condition) -> list[Condition]:
    by_type = {c.type: c for c in healthy_machine_conditions()}
    by_type.update({c.type: c for c in replace_})
    return list(by_type.values())


STALE = cond("UpToDate", F, "NotUpToDate", "* Version v1.29.0, v1.30.0 required")
NOT_READY = cond("Ready", F, "NotReady", "* NodeHealthy: Node not ready")


@dataclass
class Case:
    id: str
    type: str
    want: tuple[str, str, str] | None
    mp: MachinePool = field(default_factory=machine_pool)
    objects: list[Base] = field(default_factory=lambda: [infra_machine_pool()])


CASES = [
    # Available
    Case("available-replicas-unset", "Available",
         ("Unknown", "WaitingForReplicasSet", "Waiting for spec.replicas set"), machine_pool(replicas=None)),
    Case("available-status-replicas-unset", "Available",
         ("Unknown", "WaitingForAvailableReplicasSet", "Waiting for status.replicas set"),
         machine_pool(status_replicas=None)),
    Case("available-infrastructure-not-provisioned-is-zero", "Available",
         ("False", "NotAvailable", "0 available replicas, at least 3 required (spec.replicas is 3)"),
         machine_pool(status_replicas=None, provisioned=False)),
    Case("available-enough", "Available", ("True", "Available", "")),
    Case("available-missing-replicas", "Available",
         ("False", "NotAvailable", "2 available replicas, at least 3 required (spec.replicas is 3)"),
         machine_pool(status_replicas=2)),
    Case("available-deleting", "Available", ("False", "NotAvailable", "Deletion in progress"),
         machine_pool(status_replicas=2, deleted_ago=10.0)),
    Case("available-counts-machine-pool-machines", "Available",
         ("False", "NotAvailable", "1 available replicas, at least 2 required (spec.replicas is 2)"),
         machine_pool(replicas=2, status_replicas=2),
         [infra_machine_pool(replicas=2), pool_machine("p1"),
          pool_machine("p2", conditions=with_(NOT_READY, cond("Available", F, "NotReady")))]),
    # ScalingUp
    Case("scaling-up-replicas-unset", "ScalingUp",
         ("Unknown", "WaitingForReplicasSet", "Waiting for spec.replicas set"), machine_pool(replicas=None)),
    Case("scaling-up-not", "ScalingUp", ("False", "NotScalingUp", "")),
    Case("scaling-up-from-2-to-3", "ScalingUp", ("True", "ScalingUp", "Scaling up from 2 to 3 replicas"),
         machine_pool(status_replicas=2)),
    Case("scaling-up-before-the-pool-reports", "ScalingUp",
         ("True", "ScalingUp", "Scaling up from 0 to 3 replicas"), machine_pool(status_replicas=None)),
    Case("scaling-up-not-while-deleting", "ScalingUp", ("False", "NotScalingUp", ""),
         machine_pool(status_replicas=2, deleted_ago=10.0)),
    # ScalingDown
    Case("scaling-down-replicas-unset", "ScalingDown",
         ("Unknown", "WaitingForReplicasSet", "Waiting for spec.replicas set"), machine_pool(replicas=None)),
    Case("scaling-down-not", "ScalingDown", ("False", "NotScalingDown", "")),
    Case("scaling-down-from-4-to-3", "ScalingDown",
         ("True", "ScalingDown", "Scaling down from 4 to 3 replicas"),
         machine_pool(status_replicas=4)),
    Case("scaling-down-to-0-while-deleting-with-stale-machine", "ScalingDown",
         ("True", "ScalingDown", "Scaling down from 1 to 0 replicas\n"
                                 "* Machine p1 is in deletion since more than 15m"),
         machine_pool(replicas=1, status_replicas=1, deleted_ago=3600.0),
         [pool_machine("p1", deleted_ago=1200.0)]),
    # Machine roll-ups exist only with MachinePool Machines
    Case("machines-ready-without-pool-machines", "MachinesReady", None),
    Case("machines-ready-one-not-ready", "MachinesReady",
         ("False", "NotReady", "* Machine p2:\n  * NodeHealthy: Node not ready"),
         objects=[pool_machine("p1"), pool_machine("p2", conditions=with_(NOT_READY))]),
    Case("machines-up-to-date-without-pool-machines", "MachinesUpToDate", None),
    Case("machines-up-to-date-stale", "MachinesUpToDate",
         ("False", "NotUpToDate", "* Machine p1:\n  * Version v1.29.0, v1.30.0 required"),
         objects=[pool_machine("p1", conditions=with_(STALE)), pool_machine("p2")]),
    Case("rolling-out-without-pool-machines", "RollingOut", None),
    Case("rolling-out-not", "RollingOut", ("False", "NotRollingOut", ""), objects=[pool_machine("p1")]),
    Case("rolling-out-one", "RollingOut",
         ("True", "RollingOut", "Rolling out 1 not up-to-date replicas\n* Version v1.29.0, v1.30.0 required"),
         objects=[pool_machine("p1", conditions=with_(STALE)), pool_machine("p2")]),
    # InfrastructureReady
    Case("infrastructure-ready-mirrors-pool-ready", "InfrastructureReady",
         ("False", "ScaleSetNotReady", "2 of 3 instances running"),
         objects=[infra_machine_pool(conditions=[
             cond("Ready", F, "ScaleSetNotReady", "2 of 3 instances running")])]),
    Case("infrastructure-ready-v1beta1-true-gets-reason", "InfrastructureReady", ("True", "Ready", ""),
         objects=[infra_machine_pool(v1beta1=[cond("Ready", T)])]),
    Case("infrastructure-ready-from-provisioned-flag", "InfrastructureReady", ("True", "Ready", "")),
    Case("infrastructure-ready-from-v1beta1-ready-flag", "InfrastructureReady", ("True", "Ready", ""),
         objects=[infra_machine_pool(provisioned=None, ready=True)]),
    Case("infrastructure-ready-not-provisioned", "InfrastructureReady",
         ("False", "NotReady", "DockerMachinePool status.initialization.provisioned is false"),
         objects=[infra_machine_pool(provisioned=False)]),
    Case("infrastructure-ready-pool-not-watched-uses-machine-pool-flag", "InfrastructureReady",
         ("True", "Ready", ""), objects=[]),
    Case("infrastructure-ready-terminal-failure", "InfrastructureReady",
         ("False", "TerminalFailure", "DockerMachinePool reports a terminal failure: InvalidConfiguration: "
                                      "bad image"),
         objects=[infra_machine_pool(failure_reason="InvalidConfiguration", failure_message="bad image")]),
    # Deleting
    Case("deleting-not", "Deleting", ("False", "NotDeleting", "")),
    Case("deleting-machines", "Deleting", ("True", "Deleting", "Deleting 2 Machines"),
         machine_pool(deleted_ago=10.0), [pool_machine("p1"), pool_machine("p2")]),
    Case("deleting-waiting-for-infrastructure", "Deleting",
         ("True", "WaitingForInfrastructureDeletion", "Waiting for DockerMachinePool to be deleted"),
         machine_pool(deleted_ago=10.0)),
    Case("deleting-completed", "Deleting", ("True", "DeletionCompleted", "Deletion completed"),
         machine_pool(deleted_ago=10.0), []),
    # Paused
    Case("paused-not", "Paused", ("False", "NotPaused", "")),
    Case("paused-annotation", "Paused",
         ("True", "Paused", "MachinePool has the cluster.x-k8s.io/paused annotation"),
         machine_pool(paused=True)),
    Case("paused-cluster", "Paused", ("True", "Paused", "Cluster spec.paused is set to true"),
         objects=[capi_cluster(paused=True)]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_condition(case: Case) -> None:
    got = run(case.mp, *case.objects).condition(case.type)
    if case.want is None:
        assert got is None
        return
    assert got is not None
    assert (got.status.value, got.reason, got.message) == case.want


@pytest.mark.parametrize(
    "mp,objects,want",
    [
        (machine_pool(), [], {"desiredReplicas": 3, "replicas": 3, "readyReplicas": 3, "availableReplicas": 3,
                              "upToDateReplicas": 3}),
        (machine_pool(status_replicas=None), [],
         {"desiredReplicas": 3, "replicas": None, "readyReplicas": None, "availableReplicas": None,
          "upToDateReplicas": 3}),
        (machine_pool(status_replicas=3),
         [pool_machine("p1"),
          pool_machine("p2", conditions=with_(NOT_READY, cond("Available", F, "NotReady"))),
          pool_machine("p3", conditions=with_(STALE))],
         {"desiredReplicas": 3, "replicas": 3, "readyReplicas": 2, "availableReplicas": 2,
          "upToDateReplicas": 2}),
    ],
    ids=["without-pool-machines", "pool-not-reported-yet", "with-pool-machines"],
)
def test_counters(mp: MachinePool, objects: list[Base], want: dict[str, int | None]) -> None:
    assert run(mp, *objects).counters == want


@pytest.mark.parametrize(
    "mp,want",
    [
        (machine_pool(phase="Running"), "Running"),
        (machine_pool(phase="", deleted_ago=5.0), "Deleting"),
        (machine_pool(failure_reason="InsufficientCapacity"), "Failed"),
        (machine_pool(v1beta1_ready_replicas=3), "Running"),
        (machine_pool(v1beta1_ready_replicas=1), "ScalingUp"),
        (machine_pool(replicas=1, v1beta1_ready_replicas=3), "ScalingDown"),
        (machine_pool(v1beta1_ready_replicas=1, replicas_managed_externally=True), "Scaling"),
        (machine_pool(replicas=1, v1beta1_ready_replicas=3, replicas_managed_externally=True), "Scaling"),
        (machine_pool(v1beta1_ready_replicas=3, replicas_managed_externally=True), "Running"),
        (machine_pool(provisioned=False, node_refs=("n1",)), "Provisioned"),
        (machine_pool(provisioned=False, bootstrap_data_secret_created=True), "Provisioning"),
        (machine_pool(provisioned=False), "Pending"),
    ],
    ids=["reported", "deleting", "failed", "running", "scaling-up", "scaling-down",
         "autoscaled-more-desired-is-scaling", "autoscaled-fewer-desired-is-scaling",
         "autoscaled-at-desired-is-running", "provisioned", "provisioning", "pending"],
)
def test_phase(mp: MachinePool, want: str) -> None:
    assert run(mp).phase == want


def codes(mp: MachinePool, *objects: Base) -> dict[str, str]:
    return {f.code: f.severity for f in run(mp, *objects).findings}


@pytest.mark.parametrize(
    "mp,objects,want",
    [
        (machine_pool(), [infra_machine_pool()], {}),
        (machine_pool(), [], {"InfraMachinePoolNotFound": "warning"}),
        (machine_pool(age=60.0), [], {}),
        (machine_pool(deleted_ago=5.0), [], {}),
        (machine_pool(), [infra_machine_pool(provider_ids=["a", "b"])],
         {"ProviderIDListMismatch": "warning"}),
        (machine_pool(provider_ids=["docker://mp1-0"], status_replicas=3, provisioned=True), [],
         {"ProviderIDListMismatch": "warning", "InfraMachinePoolNotFound": "warning"}),
        (machine_pool(provider_ids=["docker://mp1-0", "docker://mp1-1", "docker://other"]),
         [infra_machine_pool()], {"ProviderIDListMismatch": "warning"}),
        (machine_pool(provisioned=False), [infra_machine_pool(provisioned=False)],
         {"InfraMachinePoolNotProvisioned": "warning"}),
        (machine_pool(provisioned=False), [infra_machine_pool(provisioned=False, age=120.0)], {}),
        (machine_pool(provisioned=False), [infra_machine_pool(provisioned=None, ready=True)], {}),
        (machine_pool(), [infra_machine_pool(failure_reason="InvalidConfiguration")],
         {"InfraMachinePoolTerminalFailure": "critical"}),
        (machine_pool(failure_message="instance type not offered"), [infra_machine_pool()],
         {"InfraMachinePoolTerminalFailure": "critical"}),
        (machine_pool(), [infra_machine_pool(v1beta1=[Condition("Ready", F, "ASGProvisionFailed", "quota",
                                                                severity="Error")])],
         {"InfraMachinePoolTerminalFailure": "critical"}),
        (machine_pool(), [infra_machine_pool(conditions=[cond("Ready", F, "WaitingForInstances")])], {}),
        (machine_pool(v1beta1=[Condition("ReplicasReady", F, "WaitingForReplicasReady",
                                         last_transition_time=NOW - 7200)]), [infra_machine_pool()],
         {"ReplicasNotConverging": "warning"}),
        (machine_pool(v1beta1=[Condition("ReplicasReady", F, "WaitingForReplicasReady",
                                         last_transition_time=NOW - 300)]), [infra_machine_pool()], {}),
    ],
    ids=["healthy", "infra-not-found", "infra-not-found-within-grace", "infra-gone-while-deleting",
         "infra-provider-ids-short", "machine-pool-provider-ids-short",
         "machine-pool-list-differs-from-infra",
         "not-provisioned-after-grace", "not-provisioned-within-grace", "provisioned-by-v1beta1-ready",
         "infra-failure-reason", "machine-pool-failure-message", "v1beta1-ready-failed-with-error-severity",
         "ready-false-not-terminal", "replicas-not-converging", "replicas-converging-within-grace"],
)
def test_contract_findings(mp: MachinePool, objects: list[Base], want: dict[str, str]) -> None:
    assert codes(mp, *objects) == want


def test_terminal_failure_finding_names_the_failure() -> None:
    found = run(machine_pool(), infra_machine_pool(failure_reason="InvalidConfiguration",
                                                   failure_message="bad image")).findings
    assert [f.message for f in found] == [
        "DockerMachinePool reports a terminal failure: InvalidConfiguration: bad image"]
