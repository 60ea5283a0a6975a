"""The lifecycle inputs of the alerts in alerts/capi-lifecycle.rules.yaml: where each is read in
every layout, what the engine derives (whether the last remediated Machine still exists), and the
families that export them, with the series they cost per object.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from exporter.engine.controlplane import compute_kubeadmcontrolplane
from exporter.engine.evaluate import evaluate_all
from exporter.engine.model import KubeadmControlPlane, Machine
from exporter.engine.parse import project
from exporter.engine.vocabulary import LAST_REMEDIATION_MACHINE_PRESENT
from exporter.metrics import capi
from exporter.metrics.spec import FamilySpec, KindSpec, Subject
from tests.engine.builders import NOW, capi_meta, capi_view, control_plane, cp_machine
from tests.engine.test_parse import CP, T0, T0_EPOCH, mixed_status, raw, v1_status, v2_status

REMEDIATION = {"v1beta2": {"machine": "cp-old", "time": T0, "retryCount": 2},
               "v1beta1": {"machine": "cp-old", "timestamp": T0, "retryCount": 2}}
KCP_LAYOUTS = [
    ("v1beta2", "v1beta2", {"rollout": {"before": {"certificatesExpiryDays": 21}}},
     v2_status(lastRemediation=REMEDIATION["v1beta2"])),
    ("v1beta1+v1beta2", "v1beta1", {"rolloutBefore": {"certificatesExpiryDays": 21}},
     mixed_status(lastRemediation=REMEDIATION["v1beta1"])),
    ("v1beta1", "v1beta1", {"rolloutBefore": {"certificatesExpiryDays": 21}},
     v1_status(lastRemediation=REMEDIATION["v1beta1"])),
]


@pytest.mark.parametrize(("layout", "version", "spec", "status"), KCP_LAYOUTS,
                         ids=[c[0] for c in KCP_LAYOUTS])
def test_kcp_rollout_before_and_last_remediation_in_every_layout(
    layout: str, version: str, spec: dict[str, Any], status: dict[str, Any]
) -> None:
    p = project(raw("KubeadmControlPlane", version, status, spec=spec, group=CP))
    assert isinstance(p, KubeadmControlPlane) and p.layout == layout
    assert p.certificates_expiry_days == 21
    assert (p.last_remediation_machine, p.last_remediation_time, p.last_remediation_retry_count) == (
        "cp-old", T0_EPOCH, 2)


def test_kcp_without_them_reads_none() -> None:
    p = project(raw("KubeadmControlPlane", "v1beta2", v2_status(), spec={}, group=CP))
    assert isinstance(p, KubeadmControlPlane)
    assert (p.certificates_expiry_days, p.last_remediation_time, p.last_remediation_retry_count) == (
        None, None, None)


@pytest.mark.parametrize(("version", "status"), [("v1beta2", v2_status), ("v1beta1", v1_status)])
def test_machine_drain_start_and_certificates_expiry(version: str, status: Any) -> None:
    p = project(raw("Machine", version, status(deletion={"nodeDrainStartTime": T0},
                                               certificatesExpiryDate=T0)))
    assert isinstance(p, Machine)
    assert (p.drain_start_time, p.certificates_expiry) == (T0_EPOCH, T0_EPOCH)


# ---- the remediated Machine, bounded: present (1) or gone (0) -----------------------------------


def _remediated(machine: str) -> KubeadmControlPlane:
    return dataclasses.replace(control_plane(), last_remediation_machine=machine,
                               last_remediation_time=NOW - 600, last_remediation_retry_count=1)


def test_last_remediated_machine_present_while_it_exists_deleting_or_not() -> None:
    deleting = dataclasses.replace(cp_machine("cp-a"), meta=capi_meta("Machine", "cp-a", deleted_ago=60))
    machines = (deleting, cp_machine("cp-b"), cp_machine("cp-c"))
    kcp = _remediated("cp-a")
    assert compute_kubeadmcontrolplane(kcp, capi_view(kcp, *machines), NOW).counters[
        LAST_REMEDIATION_MACHINE_PRESENT] == 1
    gone = _remediated("cp-old")
    assert compute_kubeadmcontrolplane(gone, capi_view(gone, *machines), NOW).counters[
        LAST_REMEDIATION_MACHINE_PRESENT] == 0


def test_no_last_remediation_no_counter() -> None:
    kcp = control_plane()
    computed = compute_kubeadmcontrolplane(kcp, capi_view(kcp, cp_machine("cp-a")), NOW)
    assert LAST_REMEDIATION_MACHINE_PRESENT not in computed.counters


def test_a_machine_of_another_control_plane_does_not_count() -> None:
    kcp = _remediated("cp-a")
    other = cp_machine("cp-a", kcp_name="kcp2")
    assert compute_kubeadmcontrolplane(kcp, capi_view(kcp, other), NOW).counters[
        LAST_REMEDIATION_MACHINE_PRESENT] == 0


# ---- families: what they serve, and how many series per object --------------------------------


def _family(spec: KindSpec, name: str) -> FamilySpec:
    return next(f for f in spec.families if f.name == name)


def _samples(spec: KindSpec, name: str, obj: Any) -> list[Any]:
    result = next(r for r in evaluate_all([obj], NOW) if r.key == obj.key)
    return list(_family(spec, name).extract(Subject(obj, result)))


def test_kcp_families_one_series_each_only_when_set() -> None:
    kcp = dataclasses.replace(_remediated("cp-old"), certificates_expiry_days=21)
    assert _samples(capi.KCP, "capi_kubeadmcontrolplane_spec_rollout_before_certificates_expiry_seconds",
                    kcp) == [((), 21 * 86400.0)]
    assert _samples(capi.KCP, "capi_kubeadmcontrolplane_status_last_remediation_timestamp_seconds",
                    kcp) == [((), NOW - 600)]
    assert _samples(capi.KCP, "capi_kubeadmcontrolplane_status_last_remediation_retries", kcp) == [((), 1.0)]
    assert _samples(capi.KCP, "capi_kubeadmcontrolplane_status_last_remediation_machine_present",
                    kcp) == [((), 0.0)]
    plain = control_plane()
    for name in ("capi_kubeadmcontrolplane_spec_rollout_before_certificates_expiry_seconds",
                 "capi_kubeadmcontrolplane_status_last_remediation_timestamp_seconds",
                 "capi_kubeadmcontrolplane_status_last_remediation_retries",
                 "capi_kubeadmcontrolplane_status_last_remediation_machine_present"):
        assert _samples(capi.KCP, name, plain) == [], name


def test_machine_drain_family_only_while_draining() -> None:
    name = "capi_machine_status_deletion_node_drain_start_time_seconds"
    draining = dataclasses.replace(cp_machine("cp-a"), drain_start_time=NOW - 120)
    assert _samples(capi.MACHINE, name, draining) == [((), NOW - 120)]
    assert _samples(capi.MACHINE, name, cp_machine("cp-b")) == []
