"""The catalog holds the kube-state-metrics families Cluster API ships, its own extensions, and
generated docs that match it."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

import exporter
from exporter.metrics import catalog, docs, process, reasons, selfmetrics
from exporter.metrics.capi import CLUSTER_PHASES, MACHINE_PHASES, MD_PHASES, MP_PHASES

ID = ("name", "namespace", "uid")
IDC = (*ID, "cluster_name")
REPLICAS = (
    "status_replicas", "status_replicas_ready", "status_replicas_available", "status_replicas_uptodate",
)
COND = (
    ("status_condition", ("type", "status")), ("status_condition_last_transition_time", ("type", "status")),
    ("created", ()), ("annotation_paused", ("paused_value",)),
)

# The families and labels of the kube-state-metrics config Cluster API ships (v1.14, v1beta2 GVKs).
KSM: dict[str, tuple[tuple[str, ...], list[tuple[str, tuple[str, ...]]]]] = {
    "cluster": (ID, [
        ("info", ("control_plane_endpoint_host", "control_plane_endpoint_port",
                  "control_plane_reference_kind", "control_plane_reference_name",
                  "infrastructure_reference_kind", "infrastructure_reference_name", "topology_classref_name",
                  "topology_classref_namespace", "topology_version")),
        ("spec_paused", ()), ("status_phase", ("phase",)), *COND,
    ]),
    "clusterclass": (ID, [("info", ()), *COND]),
    "kubeadmcontrolplane": (IDC, [
        ("info", ("version",)), ("spec_replicas", ()), ("spec_strategy_rollingupdate_max_surge", ()),
        *((r, ()) for r in REPLICAS), *COND,
    ]),
    "machinedeployment": (IDC, [
        ("info", ("version", "bootstrap_reference_kind", "bootstrap_reference_name",
                  "infrastructure_reference_kind", "infrastructure_reference_name")),
        ("spec_paused", ()), ("spec_replicas", ()), ("spec_strategy_rollingupdate_max_surge", ()),
        ("spec_strategy_rollingupdate_max_unavailable", ()), ("status_phase", ("phase",)),
        *((r, ()) for r in REPLICAS), *COND,
    ]),
    "machineset": (IDC, [
        ("info", ("version", "bootstrap_reference_kind", "bootstrap_reference_name",
                  "infrastructure_reference_kind", "infrastructure_reference_name")),
        ("spec_replicas", ()), *((r, ()) for r in REPLICAS), *COND,
    ]),
    "machinepool": (IDC, [
        ("info", ("version", "bootstrap_configuration_reference_kind",
                  "bootstrap_configuration_reference_name", "infrastructure_reference_kind",
                  "infrastructure_reference_name", "failure_domain")),
        ("spec_replicas", ()), ("status_phase", ("phase",)), *((r, ()) for r in REPLICAS), *COND,
    ]),
    "machine": (IDC, [
        ("info", ("bootstrap_reference_kind", "bootstrap_reference_name", "container_runtime_version",
                  "kernel_version", "kube_proxy_version", "kubelet_version", "os_image", "control_plane_name",
                  "failure_domain", "infrastructure_reference_kind", "infrastructure_reference_name",
                  "provider_id", "version")),
        ("addresses", ("address", "type")), ("status_noderef", ("node_name",)),
        ("status_certificatesexpirydate", ()), ("status_phase", ("phase",)), *COND,
    ]),
    "machinehealthcheck": (IDC, [
        ("info", ("remediation_triggerif_unhealthyinrange",
                  "remediation_triggerif_unhealthylessthanorequalto")),
        ("status_current_healthy", ()), ("status_expected_machines", ()), ("status_remediations_allowed", ()),
        *COND,
    ]),
}
KSM_CASES = [(kind, suffix, ident, labels) for kind, (ident, fams) in KSM.items() for suffix, labels in fams]


def _declared() -> dict[str, tuple[str, ...]]:
    return {
        fam.name: catalog.label_names(spec, fam)
        for spec in catalog.KINDS for fam in spec.families
    }


@pytest.mark.parametrize(("kind", "suffix", "identity", "labels"), KSM_CASES,
                         ids=[f"capi_{k}_{s}" for k, s, _, _ in KSM_CASES])
def test_every_ksm_family_is_served_with_the_same_labels(kind, suffix, identity, labels):
    name = f"capi_{kind}_{suffix}"
    declared = _declared()
    assert name in declared, f"{name} missing from the catalog"
    assert set(declared[name]) == {*identity, *labels}
    fam = next(f for spec in catalog.KINDS for f in spec.families if f.name == name)
    assert fam.compat, f"{name} should be marked as a kube-state-metrics family"


def test_compat_marks_only_ksm_families():
    ksm = {f"capi_{kind}_{suffix}" for kind, suffix, _, _ in KSM_CASES}
    marked = {f.name for spec in catalog.KINDS for f in spec.families if f.compat}
    assert marked == ksm


@pytest.mark.parametrize(("ours", "upstream"), [
    (CLUSTER_PHASES, ("Pending", "Provisioning", "Provisioned", "Deleting", "Failed", "Unknown")),
    (MD_PHASES, ("ScalingUp", "ScalingDown", "Running", "Failed", "Unknown")),
    (MP_PHASES, ("ScalingUp", "ScalingDown", "Running", "Failed", "Unknown")),
    (MACHINE_PHASES, ("Pending", "Provisioning", "Provisioned", "Running", "Updating", "Deleting", "Deleted",
                      "Failed", "Unknown")),
], ids=["cluster", "machinedeployment", "machinepool", "machine"])
def test_phase_state_sets_keep_every_upstream_state(ours, upstream):
    assert set(upstream) <= set(ours)


@pytest.mark.parametrize("name", [
    "capi_cluster_status_controlplane_desired_replicas", "capi_cluster_status_workers_replicas_uptodate",
    "capi_machine_status_condition_reason", "capi_machine_status_condition_computed",
    "capi_machinedeployment_status_condition_mismatch", "capi_machine_deletion_timestamp_seconds",
    "capi_finding", "ocm_manifestworkreplicaset_status_condition", "ocm_manifestworkreplicaset_status_phase",
    "ocm_manifestworkreplicaset_desired_clusters", "ocm_manifestworkreplicaset_rollout_clusters",
    "ocm_manifestworkreplicaset_placement_clusters_available", "ocm_manifestworkreplicaset_finding",
    "ocm_manifestwork_status_condition", "ocm_managedcluster_status_condition", "ocm_managedcluster_info",
    "ocm_placement_status_selected_clusters",
])
def test_extension_families_exist(name):
    assert name in _declared()


def test_findings_family_has_the_documented_labels():
    assert _declared()["capi_finding"] == ("kind", "namespace", "name", "cluster_name", "code", "severity")


def test_no_family_carries_a_message_label():
    for name, labels in _declared().items():
        assert "message" not in labels, name


def test_catalog_is_sound():
    assert catalog.check(catalog.KINDS) == []
    assert catalog.check([catalog.KindSpec("X", "x", ("name", "name"), ())]) == []  # no families, no problem


def test_check_reports_duplicate_labels_and_bad_names():
    fam = catalog.object_families()[0]
    bad = catalog.KindSpec("X", "x", ("type",), (fam.__class__(
        "bad-name_total", "h", "gauge", ("type",), "s", fam.extract),))
    problems = catalog.check([bad])
    assert any("invalid metric name" in p for p in problems)
    assert any("repeated label" in p for p in problems)
    assert any("_total" in p for p in problems)


def test_self_metrics_are_prefixed_and_counters_end_in_total():
    for fam in selfmetrics.FAMILIES:
        assert fam.name.startswith("fleet_status_exporter_")
        assert fam.name.endswith("_total") == (fam.type == "counter")


@pytest.mark.parametrize(("type_", "reason", "want"), [
    ("Available", "NotAvailable", "NotAvailable"),
    ("Available", "SomethingAProviderInvented", "Other"),
    ("Ready", "NotAllClustersAvailable", "NotAllClustersAvailable"),
    ("Ready", "NotYetReported", "NotYetReported"),
    ("MyCustomGate", "NotYetReported", "NotYetReported"),
    ("MyCustomGate", "Whatever", "Other"),
    ("OwnerRemediated", "CannotBeRemediated", "CannotBeRemediated"),
], ids=["allowed", "unlisted", "mwrs-ready", "common", "unknown-type-common", "unknown-type-other",
        "kcp-refuses-remediation"])
def test_reasons_pass_an_allow_list(type_, reason, want):
    assert reasons.bounded_reason(type_, reason) == want


def test_reasons_the_engine_sets_pass_only_for_computed_conditions():
    engine_reason = "ProgressingRuleMissing"
    assert reasons.bounded_reason("Progressing", engine_reason, computed=True) == engine_reason
    assert reasons.bounded_reason("Progressing", "ProgressingRuleMissing") == "Other"
    # A reason mirrored from a provider's object is not an engine constant.
    assert reasons.bounded_reason("InfrastructureReady", "InstanceProvisionStarted", computed=True) == "Other"


def test_docs_are_generated_from_the_catalog():
    assert docs.DEFAULT_PATH.read_text(encoding="utf-8") == docs.generate(), (
        "docs/metrics.md is stale: run python -m exporter.metrics.docs"
    )
    text = docs.generate()
    for name in _declared():
        assert f"`{name}`" in text
    for fam in selfmetrics.FAMILIES:
        assert f"`{fam.name}`" in text


def _string_literals(root: Path) -> Counter[str]:
    """Every string constant of every module under ``root``, counted (f-string parts included)."""
    found: Counter[str] = Counter()
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found[node.value] += 1
    return found


def test_every_family_name_is_one_literal_in_the_package():
    """grep for a family's name finds the one line declaring it: no name is assembled from a prefix
    (it would be found zero times) or repeated elsewhere (found twice)."""
    literals = _string_literals(Path(exporter.__file__).parent)
    families = [*catalog.object_families(), *selfmetrics.FAMILIES, *process.FAMILIES]
    assert len(families) > 300
    wrong = {fam.name: literals[fam.name] for fam in families if literals[fam.name] != 1}
    assert wrong == {}, "family names not written exactly once as a complete string literal"


def test_the_literal_count_sees_assembled_names(tmp_path):
    (tmp_path / "m.py").write_text(
        'P = "capi_x"\nA = f"{P}_info"\nB = "capi_x_created"\nC = ("capi_x_created",)\n', encoding="utf-8",
    )
    literals = _string_literals(tmp_path)
    assert literals["capi_x_info"] == 0
    assert literals["capi_x_created"] == 2
