"""Every metric the Cluster API dashboards and the community alert rules query is served for the
example fleet, with the labels those queries select on.

Sources: Cluster API hack/observability Grafana dashboards "Cluster API State" and "Cluster API
Performance", and the giantswarm CAPI alert rules (see docs/metrics.md, families marked KSM).
Queries for families Cluster API itself dropped (``*_status_replicas_unavailable``,
``*_status_replicas_updated``, ``*_replicas_fully_labeled``) or for v1beta1-only conditions
(Cluster ``Ready``, ``ControlPlaneReady``) are broken upstream too and are listed separately.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.metrics.catalog import object_families
from tests.test_exposition_golden import exposition

Matcher = Callable[[dict[str, str]], bool]


def sel(**want: str) -> Matcher:
    """Label matchers in PromQL spirit: "x" equals, "!x" differs, "~re" matches."""
    def match(labels: dict[str, str]) -> bool:
        for name, spec in want.items():
            value = labels.get(name, "")
            if spec.startswith("!"):
                if value == spec[1:]:
                    return False
            elif spec.startswith("~"):
                if not re.fullmatch(spec[1:], value):
                    return False
            elif value != spec:
                return False
        return True
    return match


KINDS = ("cluster", "kubeadmcontrolplane", "machinedeployment", "machineset", "machinepool", "machine",
         "machinehealthcheck")
# (query it comes from, metric, matcher)
QUERIES: list[tuple[str, str, Matcher]] = [
    # Cluster API State dashboard: overview counts, conditions by type, versions, replicas, phases.
    *((f"sum(capi_{k}_info)", f"capi_{k}_info", sel()) for k in (*KINDS, "clusterclass")),
    *((f'sum(capi_{k}_status_condition{{status="True"}}==1) by (type)', f"capi_{k}_status_condition",
       sel(status="True", type="~.+")) for k in ("cluster", "kubeadmcontrolplane", "machinedeployment",
                                                   "machineset", "machine", "machinehealthcheck")),
    *((f"capi_{k}_spec_replicas", f"capi_{k}_spec_replicas", sel())
      for k in ("kubeadmcontrolplane", "machinedeployment", "machineset", "machinepool")),
    *((f"capi_{k}_{s}", f"capi_{k}_{s}", sel())
      for k in ("kubeadmcontrolplane", "machinedeployment", "machineset", "machinepool")
      for s in ("status_replicas", "status_replicas_ready", "status_replicas_available",
                "status_replicas_uptodate")),
    *((f"capi_{k}_status_phase==1 by (phase)", f"capi_{k}_status_phase", sel(phase="~.+"))
      for k in ("cluster", "machinedeployment", "machinepool", "machine")),
    *((f"capi_machinehealthcheck_{s}", f"capi_machinehealthcheck_{s}", sel())
      for s in ("status_expected_machines", "status_current_healthy")),
    ('capi_machine_info{control_plane_name!=""}', "capi_machine_info", sel(control_plane_name='!')),
    ("capi_kubeadmcontrolplane_info by (version)", "capi_kubeadmcontrolplane_info", sel(version="~v.+")),
    ("capi_machine_info by (version)", "capi_machine_info", sel(version="~v.+")),
    # Cluster API Performance dashboard: time from creation to a condition first True.
    *((f'capi_{k}_status_condition_last_transition_time{{status="True",type="{t}"}} - capi_{k}_created',
       f"capi_{k}_status_condition_last_transition_time", sel(status="True", type=t))
      for k, t in (("cluster", "InfrastructureReady"), ("cluster", "ControlPlaneAvailable"),
                   ("kubeadmcontrolplane", "Available"), ("machine", "BootstrapConfigReady"),
                   ("machine", "InfrastructureReady"), ("machine", "NodeHealthy"),
                   ("machine", "NodeReady"))),
    *((f"capi_{k}_created", f"capi_{k}_created", sel())
      for k in ("cluster", "kubeadmcontrolplane", "machine")),
    # Community alert rules and the guards the kubernetes-mixin style adds to them.
    ('ClusterUnhealthyPhase: capi_cluster_status_phase{phase!="Provisioned"} > 0',
     "capi_cluster_status_phase", sel(phase="!Provisioned")),
    ("MachineDeploymentPaused: capi_machinedeployment_annotation_paused > 0",
     "capi_machinedeployment_annotation_paused", sel(paused_value="~.*")),
    ('MachineUnhealthyPhase: capi_machine_status_phase{phase!~"Running"} > 0', "capi_machine_status_phase",
     sel(phase="~(?!Running).*")),
    ("MachineDeploymentReplicasMismatch: spec_replicas != status_replicas_available",
     "capi_machinedeployment_status_replicas_available", sel()),
    ("MachinePoolReplicasMismatch", "capi_machinepool_status_replicas_available", sel()),
    ("KubeadmControlPlaneReplicasMismatch", "capi_kubeadmcontrolplane_status_replicas_ready", sel()),
    ("unless capi_cluster_spec_paused == 1", "capi_cluster_spec_paused", sel()),
    ("unless capi_machinedeployment_spec_paused == 1", "capi_machinedeployment_spec_paused", sel()),
    ("changes(capi_machinedeployment_status_replicas_uptodate[10m]) == 0",
     "capi_machinedeployment_status_replicas_uptodate", sel()),
]
BROKEN_UPSTREAM = (
    "capi_kubeadmcontrolplane_status_replicas_unavailable",
    "capi_machinedeployment_status_replicas_unavailable",
    "capi_machinepool_status_replicas_unavailable", "capi_machineset_status_replicas_fully_labeled",
    "capi_machinedeployment_status_replicas_updated",
)


@pytest.fixture(scope="module")
def series() -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {}
    for fam in text_string_to_metric_families(exposition()):
        for s in fam.samples:
            out.setdefault(s.name, []).append(s.labels)
    return out


@pytest.mark.parametrize(("query", "metric", "matcher"), QUERIES, ids=[q for q, _, _ in QUERIES])
def test_upstream_query_finds_data_for_the_example_fleet(series, query, metric, matcher):
    found = series.get(metric, [])
    assert found, f"{metric} (queried by {query}) is not served for examples/"
    assert any(matcher(labels) for labels in found), f"no {metric} series matches {query}"


def test_families_dropped_upstream_stay_dropped():
    names = {f.name for f in object_families()}
    assert not names & set(BROKEN_UPSTREAM)
