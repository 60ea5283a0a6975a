"""The InfraCluster / InfraMachine / BootstrapConfig contract findings, one case per rule branch,
evaluated through ``evaluate_all`` as the exporter evaluates them."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.engine.evaluate import evaluate_all
from exporter.engine.grouping import group_key
from exporter.engine.model import Base
from exporter.engine.parse import project_unguarded
from exporter.engine.provider_objects import DATA_SECRET_GRACE_SECONDS
from exporter.engine.rule_inputs import alone_reads_clock

NOW = 1_800_000_000.0
INFRA = "infrastructure.cluster.x-k8s.io/v1beta2"
BOOTSTRAP = "bootstrap.cluster.x-k8s.io/v1beta2"
OWNER = [{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "name": "m1", "uid": "u",
          "controller": True}]


def obj(kind: str, api_version: str, status: dict[str, Any] | None, *, age: float = 3600.0,
        deleting: bool = False) -> Base:
    def stamp(t: float) -> str:
        import datetime

        return datetime.datetime.fromtimestamp(t, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    metadata: dict[str, Any] = {"name": "m1", "namespace": "ns", "uid": "x",
                                "labels": {"cluster.x-k8s.io/cluster-name": "c1"}, "ownerReferences": OWNER,
                                "creationTimestamp": stamp(NOW - age)}
    if deleting:
        metadata["deletionTimestamp"] = stamp(NOW - 60)
    raw: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": metadata}
    if status is not None:
        raw["status"] = status
    p = project_unguarded(raw)
    assert p is not None
    return p


def findings(p: Base) -> dict[str, tuple[str, str]]:
    [result] = evaluate_all([p], NOW)
    return {f.code: (f.severity, f.message) for f in result.findings}


CASES = [
    ("infra-healthy-v1beta2", obj("AWSMachine", INFRA, {"initialization": {"provisioned": True}}), {}),
    ("infra-failure-reason-v1beta1", obj("AWSMachine", INFRA, {"ready": False, "failureReason": "CreateError",
                                                              "failureMessage": "instance type not offered"}),
     {"InfrastructureTerminalFailure": ("critical", "AWSMachine m1 (owned by Machine m1) reports a terminal "
                                                    "failure: CreateError: instance type not offered")}),
    ("infra-failure-message-only", obj("DockerCluster", INFRA, {"failureMessage": "boom"}),
     {"InfrastructureTerminalFailure": ("critical", "DockerCluster m1 (owned by Machine m1) reports a "
                                                    "terminal failure: boom")}),
    ("infra-failure-v1beta2-deprecated", obj("AWSMachine", INFRA, {
        "initialization": {"provisioned": False},
        "deprecated": {"v1beta1": {"failureReason": "UpdateError"}}}),
     {"InfrastructureTerminalFailure": ("critical", "AWSMachine m1 (owned by Machine m1) reports a terminal "
                                                    "failure: UpdateError")}),
    ("infra-not-provisioned-is-no-finding", obj("AWSMachine", INFRA, {"ready": False}, age=86400), {}),
    ("bootstrap-created-v1beta2",
     obj("KubeadmConfig", BOOTSTRAP, {"initialization": {"dataSecretCreated": True}}), {}),
    ("bootstrap-ready-v1beta1", obj("KubeadmConfig", BOOTSTRAP, {"ready": True}), {}),
    ("bootstrap-secret-name-only", obj("KubeadmConfig", BOOTSTRAP, {"dataSecretName": "m1"}), {}),
    ("bootstrap-no-secret-past-bound", obj("KubeadmConfig", BOOTSTRAP, {"ready": False}),
     {"BootstrapDataSecretNotCreated": ("warning", "KubeadmConfig m1 (owned by Machine m1) has not created "
                                                   "its bootstrap data secret 60m after creation")}),
    ("bootstrap-no-status-past-bound", obj("KubeadmConfig", BOOTSTRAP, None),
     {"BootstrapDataSecretNotCreated": ("warning", "KubeadmConfig m1 (owned by Machine m1) has not created "
                                                   "its bootstrap data secret 60m after creation")}),
    ("bootstrap-no-secret-within-bound", obj("KubeadmConfig", BOOTSTRAP, {"ready": False},
                                             age=DATA_SECRET_GRACE_SECONDS), {}),
    ("bootstrap-no-secret-deleting", obj("KubeadmConfig", BOOTSTRAP, {"ready": False}, deleting=True), {}),
    ("bootstrap-failure",
     obj("KubeadmConfig", BOOTSTRAP, {"ready": True, "failureReason": "InvalidConfiguration"}),
     {"BootstrapTerminalFailure": ("critical", "KubeadmConfig m1 (owned by Machine m1) reports a terminal "
                                               "failure: InvalidConfiguration")}),
]


@pytest.mark.parametrize(("name", "p", "expected"), CASES, ids=[c[0] for c in CASES])
def test_provider_object_findings(name: str, p: Base, expected: dict[str, tuple[str, str]]) -> None:
    assert findings(p) == expected


def test_provider_objects_are_evaluated_on_their_own() -> None:
    """No rule of another kind reads them: a change re-evaluates only the object itself."""
    p = obj("AWSMachine", INFRA, {"ready": True})
    assert group_key(p) == ("AWSMachine", "ns", "m1")


def test_unexpected_status_shape_is_a_finding_and_the_rest_is_still_evaluated() -> None:
    p = obj("AWSMachine", INFRA, {"conditions": "Ready", "failureReason": "CreateError"})
    assert set(findings(p)) == {"InfrastructureTerminalFailure", "MalformedField"}


LATER = (60.0, DATA_SECRET_GRACE_SECONDS, 40 * 86400.0)


@pytest.mark.parametrize(("name", "p", "expected"), CASES, ids=[c[0] for c in CASES])
def test_an_object_said_not_to_read_the_clock_evaluates_the_same_at_any_time(
    name: str, p: Base, expected: dict[str, tuple[str, str]]
) -> None:
    # The periodic re-evaluation skips such objects: their Results must not depend on ``now``.
    if not alone_reads_clock(p):
        assert all(evaluate_all([p], NOW + later) == evaluate_all([p], NOW) for later in LATER)


def test_a_bootstrap_config_reads_the_clock_until_its_secret_exists_or_it_is_deleting() -> None:
    waiting = obj("KubeadmConfig", BOOTSTRAP, {"ready": False}, age=60.0)
    assert alone_reads_clock(waiting)
    # What the periodic re-evaluation is for: time alone raises the finding.
    assert evaluate_all([waiting], NOW + DATA_SECRET_GRACE_SECONDS) != evaluate_all([waiting], NOW)
    created = {"initialization": {"dataSecretCreated": True}}
    assert not alone_reads_clock(obj("KubeadmConfig", BOOTSTRAP, created))
    assert not alone_reads_clock(obj("KubeadmConfig", BOOTSTRAP, {"ready": False}, deleting=True))
    assert not alone_reads_clock(obj("AWSMachine", INFRA, {"ready": False}))
