"""Parsing and computing OCM objects never raise, whatever a random mutation does to them.

Valid objects (an MWRS, its ManifestWorks, a Placement, a ManagedCluster) are mutated at random:
fields deleted, replaced by values of the wrong type or huge strings, conditions injected where
none belong. Everything must still parse (problems recorded, no reader error swallowed) and the
MWRS, ManifestWork, ManagedCluster and Placement rules must return well-formed results.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.engine import mwrs as mwrs_rules
from exporter.engine.model import (
    Base,
    ManagedCluster,
    ManifestWork,
    ManifestWorkReplicaSet,
    Placement,
    Status,
)
from exporter.engine.mwrs import (
    compute_managedcluster,
    compute_manifestwork,
    compute_mwrs,
    compute_placement,
)
from exporter.engine.ocm_objects import ROLLOUT_STATUSES
from exporter.engine.parse import UNREADABLE_OBJECT, project
from exporter.metrics.ocm import MWRS_PHASES
from exporter.metrics.reasons import bounded_reason

from .builders import mwrs_view

NOW = 1_780_000_000.0
# The finding codes the MWRS rules declare (FINDING_*).
FINDING_CODES = {v for k, v in vars(mwrs_rules).items() if k.startswith("FINDING_") and isinstance(v, str)}
CONDITION = {"type": "Progressing", "status": "True", "reason": "R", "message": "m", "observedGeneration": 2,
             "lastTransitionTime": "2026-05-10T08:00:01Z"}
TEMPLATE = {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap"}]},
            "manifestConfigs": [{"conditionRules": [{"condition": "Progressing", "type": "CEL"}]}]}

BASES: list[dict[str, Any]] = [
    {
        "apiVersion": "work.open-cluster-management.io/v1alpha1", "kind": "ManifestWorkReplicaSet",
        "metadata": {"name": "hello", "namespace": "default", "generation": 1},
        "spec": {
            "placementRefs": [
                {"name": "p",
                 "rolloutStrategy": {"type": "Progressive", "progressive": {"minSuccessTime": "1m"}}},
            ],
            "manifestWorkTemplate": TEMPLATE,
        },
        "status": {
            "conditions": [{**CONDITION, "type": "PlacementVerified"},
                           {**CONDITION, "type": "ManifestworkApplied"}],
            "placementSummary": [{"name": "p", "availableDecisionGroups": "1 (2 / 3 clusters applied)",
                                  "summary": {"total": 2, "Applied": 2, "available": 1, "progressing": 1}}],
            "summary": {"total": 2, "applied": 2, "available": 1, "progressing": 1, "degraded": 0},
        },
    },
    {
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": "hello", "namespace": "c1", "generation": 2,
                     "labels": {"work.open-cluster-management.io/manifestworkreplicaset": "default.hello",
                                "work.open-cluster-management.io/placementname": "p"}},
        "spec": TEMPLATE,
        "status": {"conditions": [{**CONDITION, "type": "Applied"}, CONDITION,
                                  {**CONDITION, "type": "Degraded"}]},
    },
    {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
        "metadata": {"name": "p", "namespace": "default"},
        "status": {"numberOfSelectedClusters": 3, "decisionGroups": [{"decisionGroupIndex": 0}],
                   "conditions": [{**CONDITION, "type": "PlacementSatisfied"}]},
    },
    {
        "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": "c1"},
        "status": {"conditions": [{**CONDITION, "type": "ManagedClusterConditionAvailable"}]},
    },
    {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision",
        "metadata": {"name": "p-1", "namespace": "default",
                     "labels": {"cluster.open-cluster-management.io/placement": "p"}},
        "status": {"decisions": [{"clusterName": "c1"}]},
    },
]

_junk = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
        st.sampled_from(["True", "False", "Unknown", "", "1 (2 / 3 clusters applied)",
                         "9 (9 / x clusters applied)", "Progressing", "default.hello", "x" * 200_000]),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(["type", "status", "name", "condition", "total", "Applied", "x"]),
                        children, max_size=4),
    ),
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


def _mutate(obj: Any, path: tuple[Any, ...], action: str, junk: Any) -> Any:
    if not path:
        return obj
    parent: Any = obj
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    # A copy: _WRONG_VALUES holds mutable values ([1], {"x": 1}), and a later mutation inside one
    # would change it for every later example (hypothesis then reports its data generation flaky).
    junk = copy.deepcopy(junk)
    if action == "delete":
        del parent[last]
    elif action == "replace":
        parent[last] = junk
    elif isinstance(parent[last], dict):
        parent[last]["conditions"] = junk
    return obj


def _parse(raw: dict[str, Any]) -> Base | None:
    result = project(raw)
    if result is not None:
        assert not any(p.startswith(UNREADABLE_OBJECT) for p in result.problems), result.problems
        assert len(result.problems) <= 16
    return result


_ACTIONS = st.sampled_from(["delete", "replace", "inject"])
_WRONG_VALUES = ["3", "", -1, 2.5, float("nan"), True, None, [1], {"x": 1}, "x" * 200_000]
_WRONG = st.sampled_from(_WRONG_VALUES[:-1])  # _junk already draws the huge string, rarely: it is slow


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), mutations=st.integers(1, 6))
def test_random_mutations_parse_and_compute(data: st.DataObject, mutations: int) -> None:
    raws = copy.deepcopy(BASES)
    for _ in range(mutations):
        which = data.draw(st.integers(0, len(raws) - 1))
        # sampled_from spreads picks over every field; an index drawn from a wide range would not
        path = data.draw(st.sampled_from(_paths(raws[which])))
        raws[which] = _mutate(raws[which], path, data.draw(_ACTIONS), data.draw(st.one_of(_WRONG, _junk)))
    _parse_and_compute(raws)


def test_every_field_with_every_wrong_type() -> None:
    # Random search rarely hits one given field with one given type: here every field gets each.
    for which, base in enumerate(BASES):
        for path in _paths(base)[1:]:
            for value in _WRONG_VALUES:
                raws = copy.deepcopy(BASES)
                raws[which] = _mutate(raws[which], path, "replace", value)
                _parse_and_compute(raws)


def _parse_and_compute(raws: list[dict[str, Any]]) -> None:
    objects = [o for o in (_parse(r) for r in raws) if o is not None]
    works = [o for o in objects if isinstance(o, ManifestWork)]
    placements = [o for o in objects if isinstance(o, Placement)]
    clusters = [o for o in objects if isinstance(o, ManagedCluster)]
    owner = next((o for o in objects if isinstance(o, ManifestWorkReplicaSet)), None)
    view = mwrs_view(owner, works=works, placements=placements, clusters=clusters)

    if owner is not None:
        computed = compute_mwrs(owner, view, NOW)
        assert [c.type for c in computed.conditions] == ["Progressing", "Ready"]
        # every reason is served as itself, none as Other
        assert all(isinstance(c.status, Status)
                   and bounded_reason(c.type, c.reason, computed=True) == c.reason
                   for c in computed.conditions)
        assert computed.phase in MWRS_PHASES  # a state of the served state set
        assert {f.code for f in computed.findings} <= FINDING_CODES
        assert all(v is None or (isinstance(v, int) and v >= 0) for v in computed.counters.values())
    for work in works:
        assert compute_manifestwork(work, view, NOW).phase in ROLLOUT_STATUSES
    for cluster in clusters:
        assert compute_managedcluster(cluster, NOW).phase in ("Available", "Unavailable", "Unknown")
    for p in placements:
        assert all(v is None or v >= 0 for v in compute_placement(p, NOW).counters.values())
