"""Projections share what repeats across objects, and sharing never changes what is projected."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from exporter.engine import model, parse_fields
from exporter.engine.model import EMPTY_MAP, BootstrapConfig, Condition, Machine, MachineSet, OneCopy, Status
from exporter.engine.parse import project
from exporter.engine.parse_capi import NODE_INFO_KEYS
from exporter.engine.parse_fields import recall, remember, shared_map, word
from exporter.metrics import capi

T0 = "2024-05-01T10:00:00Z"
CORE = "cluster.x-k8s.io"


def machine_raw(name: str, set_name: str = "md-0-abc", node_uid: str = "u") -> dict[str, Any]:
    # Every string is built afresh, as the JSON decoder does for each object.
    decoded: dict[str, Any] = json.loads(json.dumps({
        "apiVersion": f"{CORE}/v1beta2",
        "kind": "Machine",
        "metadata": {
            "name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "42",
            "labels": {"cluster.x-k8s.io/cluster-name": "c1", "cluster.x-k8s.io/deployment-name": "md-0",
                       "cluster.x-k8s.io/set-name": set_name, "app": "ignored"},
            "ownerReferences": [{"apiVersion": f"{CORE}/v1beta2", "kind": "MachineSet", "name": set_name,
                                 "uid": "set-uid", "controller": True}],
        },
        "spec": {
            "clusterName": "c1", "version": "v1.33.1", "failureDomain": "fd1",
            "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfig",
                                        "name": name}},
            "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachine",
                                  "name": name},
        },
        "status": {
            "phase": "Running",
            "nodeRef": {"name": name},
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"},
                          {"type": "Hostname", "address": name}],
            "nodeInfo": {"kubeletVersion": "v1.33.1", "osImage": "Ubuntu", "bootID": node_uid,
                         "machineID": node_uid, "architecture": "amd64"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "fine",
                            "lastTransitionTime": T0, "observedGeneration": 1}],
            "deprecated": {"v1beta1": {"conditions": [{"type": "Ready", "status": "True",
                                                       "lastTransitionTime": T0}]}},
        },
    }))
    return decoded


def machines() -> tuple[Machine, Machine]:
    a, b = project(machine_raw("m-1", node_uid="n1")), project(machine_raw("m-2", node_uid="n2"))
    assert isinstance(a, Machine) and isinstance(b, Machine)
    return a, b


def test_repeated_strings_are_one_object() -> None:
    a, b = machines()
    assert a.meta.kind is b.meta.kind
    assert a.meta.api_version is b.meta.api_version
    assert a.meta.namespace is b.meta.namespace
    assert a.cluster_name is b.cluster_name
    assert a.phase is b.phase and a.version is b.version and a.failure_domain is b.failure_domain
    ca, cb = a.conditions[0], b.conditions[0]
    assert ca.type is cb.type and ca.reason is cb.reason and ca.message is cb.message
    assert a.bootstrap_ref is not None and b.bootstrap_ref is not None
    assert a.bootstrap_ref.kind is b.bootstrap_ref.kind
    assert a.bootstrap_ref.api_group is b.bootstrap_ref.api_group


def test_names_equal_to_the_object_name_share_it() -> None:
    a, _ = machines()
    assert a.bootstrap_ref is not None and a.infrastructure_ref is not None
    assert a.bootstrap_ref.name is a.meta.name
    assert a.infrastructure_ref.name is a.meta.name
    assert a.node_name is a.meta.name
    assert a.addresses[a.addresses.index("Hostname") + 1] is a.meta.name
    # A provider object is named after the Machine owning it (what its info family's owner_name reads).
    infra = project(json.loads(json.dumps({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DockerMachine",
        "metadata": {"name": "m-1", "namespace": "ns", "labels": {"cluster.x-k8s.io/cluster-name": "c1"},
                     "ownerReferences": [{"apiVersion": f"{CORE}/v1beta2", "kind": "Machine", "name": "m-1",
                                          "uid": "machine-uid", "controller": True}]},
        "status": {"initialization": {"provisioned": True}}})))
    assert infra is not None and infra.meta.owner == ("Machine", "m-1")
    assert infra.meta.owner_refs[0].name is infra.meta.name
    # Its bootstrap config's data secret is named after the config.
    config = project(json.loads(json.dumps({
        "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2", "kind": "KubeadmConfig",
        "metadata": {"name": "m-1", "namespace": "ns", "labels": {"cluster.x-k8s.io/cluster-name": "c1"}},
        "status": {"dataSecretName": "m-1", "initialization": {"dataSecretCreated": True}}})))
    assert isinstance(config, BootstrapConfig) and config.data_secret_name == "m-1"
    assert config.data_secret_name is config.meta.name


def test_equal_maps_owner_refs_and_counters_are_shared() -> None:
    a, b = machines()
    assert a.meta.labels is b.meta.labels
    assert a.meta.owner_refs is b.meta.owner_refs
    assert a.node_info is b.node_info  # the per-Node ids are not kept, so the rest is equal
    assert a.meta.annotations is EMPTY_MAP
    c = project(machine_raw("m-3", set_name="md-0-other"))
    assert c is not None and c.meta.labels is not a.meta.labels
    assert c.meta.labels["cluster.x-k8s.io/set-name"] == "md-0-other"
    raw_set = {"apiVersion": f"{CORE}/v1beta2", "kind": "MachineSet",
               "metadata": {"name": "s", "namespace": "ns"}, "spec": {"replicas": 3},
               "status": {"replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "upToDateReplicas": 3}}
    s1, s2 = project(copy.deepcopy(raw_set)), project(json.loads(json.dumps(raw_set)))
    assert isinstance(s1, MachineSet) and isinstance(s2, MachineSet)
    assert s1.reported is s2.reported


def test_sharing_changes_no_value() -> None:
    a, _ = machines()
    again = project(machine_raw("m-1", node_uid="n1"))
    assert again == a
    assert dict(a.meta.labels) == {"cluster.x-k8s.io/cluster-name": "c1",
                                   "cluster.x-k8s.io/deployment-name": "md-0",
                                   "cluster.x-k8s.io/set-name": "md-0-abc"}
    assert [(o.kind, o.name, o.api_version, o.controller) for o in a.meta.owner_refs] == [
        ("MachineSet", "md-0-abc", f"{CORE}/v1beta2", True)]
    assert a.conditions[0].message == "fine"
    assert a.meta.resource_version == ""  # read by nothing, unique per object: not kept


def test_node_info_keeps_what_the_machine_info_metric_exports() -> None:
    a, _ = machines()
    assert dict(a.node_info) == {"kubeletVersion": "v1.33.1", "osImage": "Ubuntu"}
    assert set(capi._NODE_INFO) <= NODE_INFO_KEYS



def test_an_update_of_the_status_keeps_the_last_metadata_and_a_change_of_it_does_not() -> None:
    # The store's, renderer's and pipeline's dicts hold the first projection's key (and with it
    # its name): a new Meta per update would keep two of each per changed object.
    a, _ = machines()
    status = machine_raw("m-1", node_uid="n1")
    status["status"]["conditions"][0]["message"] = "changed"
    updated = project(status, a)
    assert updated is not None and updated != a
    assert updated.meta is a.meta and updated.key is a.key
    relabelled = machine_raw("m-1", node_uid="n1")
    relabelled["metadata"]["labels"]["cluster.x-k8s.io/set-name"] = "md-0-new"
    moved = project(relabelled, a)
    assert moved is not None and moved.meta is not a.meta
    assert moved.meta.labels["cluster.x-k8s.io/set-name"] == "md-0-new" and moved.key == a.key

def test_key_is_built_once() -> None:
    a, _ = machines()
    assert a.key == ("Machine", "ns", "m-1")
    assert a.key is a.key is a.meta.key


def test_conditions_equal_but_for_their_time_share_the_rest() -> None:
    ready = Condition("Ready", Status.TRUE, "Ready", "fine", 1.0, 1)
    later = Condition("Ready", Status.TRUE, "Ready", "fine", 2.0, 1)
    assert ready != later and ready.shape is later.shape
    assert ready.at(2.0) == later and ready.at(2.0).shape is later.shape
    a, b = machines()
    assert a.conditions[0].shape is b.conditions[0].shape
    assert Condition("Ready", Status.TRUE, "Ready", "other", 1.0, 1).shape is not ready.shape


def test_a_condition_equals_one_built_after_the_shapes_started_over() -> None:
    first = Condition("Ready", Status.FALSE, "NotReady", "m", 1.0, 2, "Warning")
    model._shapes.clear()
    again = Condition("Ready", Status.FALSE, "NotReady", "m", 1.0, 2, "Warning")
    assert again.shape is not first.shape
    assert again == first and hash(again) == hash(first)
    assert again != Condition("Ready", Status.FALSE, "NotReady", "m", 1.0, 2, "Error")


def _fresh(text: str) -> str:
    copy = "".join(list(text))  # an equal string, not the same object (for two characters or more)
    assert copy is not text
    return copy


def test_a_value_still_looked_up_stays_shared_across_generations() -> None:
    table: OneCopy[str] = OneCopy(2)
    kept = table.one(_fresh("ready"))
    for i in range(20):  # ten generations of other values, "ready" looked up in each
        table.one(f"other-{i}")
        assert table.one(_fresh("ready")) is kept
    assert len(table) <= 2 * 2


def test_a_value_no_longer_looked_up_is_let_go_within_two_generations() -> None:
    table: OneCopy[str] = OneCopy(2)
    gone = table.one(_fresh("gone"))
    for i in range(5):  # more than two generations of others
        table.one(f"other-{i}")
    assert gone not in table.newer and gone not in table.older
    again = table.one(_fresh("gone"))
    assert again == gone and again is not gone  # a new copy; the old one is still equal


def test_a_value_found_in_the_older_generation_moves_to_the_newer() -> None:
    table: OneCopy[str] = OneCopy(1)
    first = table.one(_fresh("alpha"))
    table.one("beta")  # "alpha" is now in the older generation
    assert first in table.older
    assert table.one(_fresh("alpha")) is first
    assert first in table.newer and first not in table.older


@pytest.fixture
def small_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_fields, "MAX_SHARED", 4)
    monkeypatch.setattr(parse_fields, "_words", OneCopy(4))
    monkeypatch.setattr(parse_fields, "_shared", {})
    monkeypatch.setattr(model, "_shapes", OneCopy(4))


@pytest.mark.pure_python
@pytest.mark.usefixtures("small_tables")
def test_tables_are_bounded() -> None:
    for i in range(50):
        assert word(f"w{i}") == f"w{i}"
        assert remember(("t", i), i) == i
        assert shared_map(["k", str(i)])["k"] == str(i)
        assert Condition(f"T{i}", Status.TRUE).type == f"T{i}"
    assert len(parse_fields._words) <= 2 * 4  # two generations
    assert len(parse_fields._shared) <= 4
    assert len(model._shapes) <= 2 * 4
    assert recall(("t", 49)) is None or recall(("t", 49)) == 49
    assert shared_map([]) is EMPTY_MAP


@pytest.mark.usefixtures("small_tables")
def test_projection_is_the_same_when_the_tables_start_over() -> None:
    first = [project(machine_raw(f"m-{i}")) for i in range(10)]
    assert first == [project(machine_raw(f"m-{i}")) for i in range(10)]


def _fleet_machines() -> list[dict[str, Any]]:
    from tests.benchmark.fleet import generate

    return [o for o in generate(1, 5) if o["kind"] == "Machine"]


def test_a_projection_with_its_previous_one_is_what_a_projection_without_it_is() -> None:
    # Every kind of change the benchmark makes (a marker, a Node flip both ways, a recreate)
    # and a malformed condition: equal projections, with the unchanged conditions reused.
    from tests.benchmark.mutations import Mutator, changed, recreated

    mutator = Mutator(7)
    reused = 0
    for i, raw in enumerate(_fleet_machines()):
        before = project(raw)
        assert before is not None
        if i % 4 == 3:
            new = recreated(raw, mutator.next_marker(), f"again-{i}")
        else:
            new = changed(raw, mutator.next_marker(), flip=i % 2 == 1)
        if i % 5 == 0:
            new["status"]["conditions"][0]["status"] = 7  # unreadable: a problem, never reused
        decoded = json.loads(json.dumps(new))
        plain, hinted = project(json.loads(json.dumps(new))), project(decoded, before)
        assert hinted == plain
        assert hinted is not None and plain is not None
        for listed, previous in ((hinted.conditions, before.conditions),
                                 (hinted.v1beta1_conditions, before.v1beta1_conditions)):
            for c in listed:
                same = [p for p in previous if p == c]
                if same:
                    assert any(p is c for p in same), "an equal condition is the previous one"
                    reused += 1
                else:
                    assert not any(p is c for p in previous)
    assert reused > 100


def test_an_unchanged_object_projects_to_its_previous_projection() -> None:
    raw = _fleet_machines()[0]
    before = project(raw)
    again = project(json.loads(json.dumps(raw)), before)
    assert again is before
    # A change anywhere gives a new projection, sharing the conditions lists it did not touch.
    touched = json.loads(json.dumps(raw))
    touched["spec"]["version"] = "v9.9.9"
    after = project(touched, before)
    assert after is not before and after is not None and before is not None
    assert after.version == "v9.9.9"
    assert after.conditions is before.conditions and after.v1beta1_conditions is before.v1beta1_conditions


@pytest.mark.parametrize("field,value", [
    ("status", "Unknown"), ("reason", "SomethingElse"), ("message", "another message"),
    ("lastTransitionTime", "2031-01-01T00:00:00Z"), ("observedGeneration", 99), ("severity", "Warning"),
])
def test_a_condition_changed_in_any_one_field_is_read_anew(field: str, value: Any) -> None:
    raw = _fleet_machines()[0]
    # v1beta1 conditions of the types a v1beta2 Machine keeps (the deletion stages).
    raw["status"]["deprecated"]["v1beta1"]["conditions"] = [
        {"type": t, "status": "False", "reason": "Waiting", "message": "m", "severity": "Info",
         "lastTransitionTime": "2030-01-01T00:00:00Z"}
        for t in ("DrainingSucceeded", "VolumeDetachSucceeded")
    ]
    before = project(raw)
    assert before is not None
    for path in (("status", "conditions"), ("status", "deprecated", "v1beta1", "conditions")):
        changed = json.loads(json.dumps(raw))
        listed = changed
        for step in path:
            listed = listed[step]
        listed[1][field] = value
        hinted, plain = project(changed, before), project(json.loads(json.dumps(changed)))
        assert hinted == plain and hinted is not None
        new = hinted.conditions if path[1] == "conditions" else hinted.v1beta1_conditions
        old = before.conditions if path[1] == "conditions" else before.v1beta1_conditions
        assert new[1] is not old[1] and new[0] is old[0]
