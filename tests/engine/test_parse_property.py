"""project() never raises and stays bounded, whatever a random mutation does to a valid object.

Covers every kind project() dispatches, CAPI and OCM (the OCM readers are reached through it).
"""

from __future__ import annotations

import copy
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.engine.model import Base
from exporter.engine.parse import project, project_unguarded
from exporter.engine.parse_fields import MAX_STRING
from tests.engine.test_parse import CORE, CP, mixed_status, raw, v1_status, v2_status

_SPEC = {
    "replicas": 3, "paused": False, "clusterName": "c1", "version": "v1.30.0", "providerID": "p",
    "readinessGates": [{"conditionType": "X", "polarity": "Negative"}],
    "availabilityGates": [{"conditionType": "Y"}],
    "bootstrap": {"configRef": {"apiGroup": "b", "kind": "K", "name": "n"}},
    "infrastructureRef": {"apiVersion": "i/v1", "kind": "K", "name": "n"},
    "controlPlaneRef": {"apiGroup": CP, "kind": "KubeadmControlPlane", "name": "k"},
    "topology": {"classRef": {"name": "cc"}, "class": "cc", "version": "v1.30.0"},
    "rollout": {"strategy": {"type": "RollingUpdate",
                             "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}},
    "strategy": {"rollingUpdate": {"maxSurge": 1}}, "minReadySeconds": 3,
    "template": {"spec": {"version": "v1.30.0", "minReadySeconds": 1,
                          "bootstrap": {"configRef": {"kind": "K", "name": "n"}}}},
    "checks": {"nodeStartupTimeoutSeconds": 600}, "nodeStartupTimeout": "10m", "maxUnhealthy": "40%",
    "remediation": {"triggerIf": {"unhealthyLessThanOrEqualTo": 2}}, "providerIDList": ["a"],
    "kubeadmConfigSpec": {"clusterConfiguration": {"etcd": {"local": {}}}},
    "placementRefs": [{"name": "p", "rolloutStrategy": {"type": "Progressive",
                                                        "progressive": {"maxConcurrency": "25%"}}}],
    "manifestWorkTemplate": {"workload": {"manifests": [{"kind": "ConfigMap"}]},
                             "manifestConfigs": [{"conditionRules": [{"type": "Progressing"}]}]},
}
_STATUS_EXTRA = {
    "replicas": 3, "readyReplicas": 2, "availableReplicas": 2, "upToDateReplicas": 1, "updatedReplicas": 1,
    "unavailableReplicas": 1, "phase": "Running", "nodeRef": {"name": "n"}, "nodeRefs": [{"name": "n"}],
    "initialization": {"infrastructureProvisioned": True, "provisioned": True},
    "controlPlane": {"desiredReplicas": 3},
    "lastRemediation": {"machine": "m", "time": "2024-01-01T00:00:00Z"},
    "expectedMachines": 3, "currentHealthy": 2, "targets": ["m"], "nodeInfo": {"kubeletVersion": "v1"},
    "addresses": [{"type": "InternalIP", "address": "1.2.3.4"}], "deletion": {"nodeDrainStartTime": "x"},
    "summary": {"total": 2, "Applied": 1, "available": 1}, "numberOfSelectedClusters": 2,
    "placementSummary": [{"name": "p", "availableDecisionGroups": "1 (2 / 2 clusters applied)",
                          "summary": {"total": 2}}],
    "decisions": [{"clusterName": "c", "reason": ""}], "decisionGroups": [{"decisionGroupIndex": 0}],
}
_KINDS = [("Cluster", CORE), ("ClusterClass", CORE), ("Machine", CORE), ("MachineSet", CORE),
          ("MachineDeployment", CORE), ("MachinePool", CORE), ("MachineHealthCheck", CORE),
          ("KubeadmControlPlane", CP), ("AWSMachinePool", "infrastructure.cluster.x-k8s.io"),
          ("ManifestWorkReplicaSet", "work.open-cluster-management.io"),
          ("ManifestWork", "work.open-cluster-management.io"),
          ("ManagedCluster", "cluster.open-cluster-management.io"),
          ("Placement", "cluster.open-cluster-management.io"),
          ("PlacementDecision", "cluster.open-cluster-management.io")]
_LAYOUTS = [("v1beta2", v2_status), ("v1beta1", mixed_status), ("v1beta1", v1_status)]


def _base(kind_index: int, layout_index: int) -> dict[str, Any]:
    kind, group = _KINDS[kind_index]
    version, status = _LAYOUTS[layout_index]
    obj = raw(kind, version, status(**_STATUS_EXTRA), spec=copy.deepcopy(_SPEC), group=group,
              annotations={"cluster.x-k8s.io/paused": "true"}, creationTimestamp="2024-01-01T00:00:00Z",
              deletionTimestamp="2024-01-01T00:10:00Z", ownerReferences=[{"kind": "Cluster", "name": "c"}])
    return obj


_junk = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
        st.sampled_from(["True", "False", "Unknown", "Maybe", "", "25%", "-5%", "1e9", "2024-13-45T99:99:99Z",
                         "x" * 200_000]),
    ),
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.sampled_from(["type", "status", "name", "kind", "x"]),
                                               children, max_size=4)),
    max_leaves=8,
)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(obj, dict):
        for key, value in obj.items():
            found.extend(_paths(value, (*prefix, key)))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            found.extend(_paths(value, (*prefix, index)))
    return found


def _mutate(obj: dict[str, Any], path: tuple[Any, ...], action: str, junk: Any) -> Any:
    if not path:
        return junk if action == "replace" else obj
    parent: Any = obj
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if action == "delete":
        del parent[last]
    elif action == "replace":
        parent[last] = junk
    elif isinstance(parent[last], dict):
        parent[last]["conditions"] = junk  # an unexpected field where conditions are looked for
    return obj


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind_index=st.integers(0, len(_KINDS) - 1),
    layout_index=st.integers(0, len(_LAYOUTS) - 1),
    picks=st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(["delete", "replace", "inject"]), _junk),
                   min_size=1, max_size=4),
)
def test_random_mutations_never_raise(kind_index: int, layout_index: int,
                                      picks: list[tuple[int, str, Any]]) -> None:
    obj: Any = _base(kind_index, layout_index)
    for index, action, junk in picks:
        if not isinstance(obj, dict):
            break
        paths = _paths(obj)
        obj = _mutate(obj, paths[index % len(paths)], action, junk)
    result = project_unguarded(obj)  # unguarded: a bug must fail here, not be swallowed
    assert result is None or isinstance(result, Base)
    if result is not None:
        for c in (*result.conditions, *result.v1beta1_conditions):
            assert len(c.message) <= MAX_STRING and len(c.reason) <= MAX_STRING
            assert c.last_transition_time is None or math.isfinite(c.last_transition_time)
        assert len(result.problems) <= 16
    assert project(obj) == result


_TOP_KEYS = st.sampled_from(["kind", "metadata", "apiVersion", "status"])


@given(st.one_of(_junk, st.dictionaries(_TOP_KEYS, _junk)))
def test_arbitrary_values_never_raise(value: Any) -> None:
    result = project_unguarded(value)
    assert result is None or isinstance(result, Base)
