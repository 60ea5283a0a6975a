"""Structural pruning and defaulting in the fake API server (``tests/kubeapi/schema.py``).

The unit tests pin each rule on small hand-written schemas. The real-cluster tests write the
same objects (every example of an era, and hand-made ones with unknown fields and absent
defaulted fields) to the fake, given the era's real CRDs, and to a real kube-apiserver with the
same CRDs: both must store the same object, apart from the metadata only a server assigns.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from tests.kubeapi import FakeKubeAPI, ResourceType
from tests.kubeapi.schema import apply_defaults, prune, prune_and_default, version_schemas

Obj = dict[str, Any]

STRING = {"type": "string"}


def obj_schema(**properties: Any) -> Obj:
    return {"type": "object", "properties": properties}


# ---- pruning -------------------------------------------------------------------------------


def test_unknown_fields_are_dropped_at_every_depth() -> None:
    schema = obj_schema(spec=obj_schema(a=STRING, inner=obj_schema(b=STRING)))
    got = prune_and_default(
        {"top": 1, "spec": {"a": "x", "junk": 2, "inner": {"b": "y", "deeper": {"c": 3}}}}, schema)
    assert got == {"spec": {"a": "x", "inner": {"b": "y"}}}


def test_an_object_without_properties_is_emptied() -> None:
    schema = obj_schema(status={"type": "object"})
    assert prune_and_default({"status": {"anything": 1}}, schema) == {"status": {}}


def test_root_keeps_api_version_kind_and_metadata_as_is() -> None:
    schema = obj_schema(spec=obj_schema(), metadata={"type": "object", "properties": {"name": STRING}})
    obj = {"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "n", "labels": {"a": "b"}},
           "spec": {"x": 1}}
    assert prune_and_default(obj, schema) == {**obj, "spec": {}}


def test_type_meta_is_kept_only_at_the_root_and_in_embedded_resources() -> None:
    schema = obj_schema(
        plain=obj_schema(name=STRING),
        embedded={"type": "object", "x-kubernetes-embedded-resource": True, "properties": {"data": STRING}},
    )
    type_meta = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "uid": "u"}}
    got = prune_and_default({"plain": {**type_meta, "name": "p"},
                             "embedded": {**type_meta, "data": "d", "junk": 1}}, schema)
    assert got == {"plain": {"name": "p"}, "embedded": {**type_meta, "data": "d"}}


def test_embedded_metadata_keeps_only_object_meta_fields_and_root_metadata_is_kept_as_is() -> None:
    schema = obj_schema(embedded={"type": "object", "x-kubernetes-embedded-resource": True,
                                  "x-kubernetes-preserve-unknown-fields": True})
    meta = {"name": "n", "labels": {"a": "b"}, "finalizers": ["f"], "uid": "u"}
    obj = {"metadata": {**meta, "junk": 1}, "embedded": {"metadata": {**meta, "junk": 1}, "other": 1}}
    got = prune_and_default(obj, schema)
    assert got == {"metadata": {**meta, "junk": 1}, "embedded": {"metadata": meta, "other": 1}}


def test_preserve_unknown_fields_keeps_unknown_keys_but_prunes_known_ones() -> None:
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
              "properties": {"known": obj_schema(a=STRING)}}
    got = prune_and_default({"free": {"deep": [1, {"x": 2}]}, "known": {"a": "x", "junk": 1}}, schema)
    assert got == {"free": {"deep": [1, {"x": 2}]}, "known": {"a": "x"}}


def test_preserve_unknown_fields_does_not_reach_into_known_children() -> None:
    schema = obj_schema(open={"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                              "properties": {"closed": obj_schema()}})
    got = prune_and_default({"open": {"closed": {"junk": 1}, "other": {"kept": 1}}}, schema)
    assert got == {"open": {"closed": {}, "other": {"kept": 1}}}


def test_additional_properties_keep_every_key_and_prune_each_value() -> None:
    schema = obj_schema(labels={"type": "object", "additionalProperties": obj_schema(a=STRING)})
    got = prune_and_default({"labels": {"k1": {"a": "x", "junk": 1}, "k2": {}}}, schema)
    assert got == {"labels": {"k1": {"a": "x"}, "k2": {}}}


def test_array_items_are_pruned_with_the_items_schema() -> None:
    schema = obj_schema(list={"type": "array", "items": obj_schema(a=STRING)})
    got = prune_and_default({"list": [{"a": "1", "b": 2}, {"c": 3}]}, schema)
    assert got == {"list": [{"a": "1"}, {}]}


def test_combinators_do_not_make_a_field_known() -> None:
    schema = {"type": "object", "properties": {"a": STRING},
              "anyOf": [{"properties": {"b": STRING}}], "allOf": [{"properties": {"c": STRING}}]}
    assert prune_and_default({"a": "1", "b": "2", "c": "3"}, schema) == {"a": "1"}


def test_a_value_of_the_wrong_type_is_left_to_validation() -> None:
    schema = obj_schema(spec=obj_schema(a=STRING))
    assert prune_and_default({"spec": "not an object"}, schema) == {"spec": "not an object"}


# ---- defaulting ----------------------------------------------------------------------------


def test_a_default_fills_an_absent_field_and_never_overrides_a_present_one() -> None:
    schema = obj_schema(spec=obj_schema(a={"type": "integer", "default": 3}, b={**STRING, "default": "d"}))
    assert prune_and_default({"spec": {"b": "mine"}}, schema) == {"spec": {"a": 3, "b": "mine"}}


def test_defaults_apply_only_inside_objects_that_exist() -> None:
    schema = obj_schema(spec=obj_schema(a={"type": "integer", "default": 3}))
    assert prune_and_default({}, schema) == {}


def test_defaults_reach_every_array_item_and_additional_property_value() -> None:
    item = obj_schema(mode={**STRING, "default": "Poll"}, name=STRING)
    schema = obj_schema(list={"type": "array", "items": item},
                        map={"type": "object", "additionalProperties": item})
    got = prune_and_default({"list": [{"name": "a"}, {"mode": "Push"}], "map": {"k": {}}}, schema)
    assert got == {"list": [{"name": "a", "mode": "Poll"}, {"mode": "Push"}], "map": {"k": {"mode": "Poll"}}}


def test_a_defaulted_object_gets_the_defaults_of_its_own_fields() -> None:
    schema = obj_schema(strategy={
        "type": "object", "default": {"type": "All", "all": {}},
        "properties": {"type": STRING, "all": obj_schema(maxFailures={"type": "integer", "default": 0})},
    })
    assert prune_and_default({}, schema) == {"strategy": {"type": "All", "all": {"maxFailures": 0}}}


def test_a_default_is_copied_not_shared() -> None:
    schema = obj_schema(a={"type": "object", "default": {"x": []}, "properties": {"x": {"type": "array"}}})
    first = prune_and_default({}, schema)
    first["a"]["x"].append(1)
    assert prune_and_default({}, schema) == {"a": {"x": []}}


def test_a_null_is_defaulted_or_dropped_unless_the_field_is_nullable() -> None:
    schema = obj_schema(defaulted={**STRING, "default": "d"}, plain=STRING,
                        nullable={**STRING, "nullable": True, "default": "d"})
    got = prune_and_default({"defaulted": None, "plain": None, "nullable": None}, schema)
    assert got == {"defaulted": "d", "nullable": None}


def test_defaults_are_not_applied_under_unknown_fields() -> None:
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
              "properties": {"a": obj_schema(b={**STRING, "default": "d"})}}
    assert prune_and_default({"x": {"a": {}}}, schema) == {"x": {"a": {}}}


def test_the_input_is_not_changed() -> None:
    schema = obj_schema(spec=obj_schema(a={**STRING, "default": "d"}))
    obj = {"spec": {"junk": 1}}
    prune_and_default(obj, schema)
    assert obj == {"spec": {"junk": 1}}


def test_prune_and_apply_defaults_work_in_place_on_any_value() -> None:
    items = [{"a": "1", "b": 2}]
    prune(items, {"type": "array", "items": obj_schema(a=STRING)})
    apply_defaults(items, {"type": "array", "items": obj_schema(c={**STRING, "default": "c"})})
    assert items == [{"a": "1", "c": "c"}]


# ---- the fake server with CRDs -------------------------------------------------------------


OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def crd(kind: str = "Widget", group: str = "example.io") -> Obj:
    spec = {"type": "object", "properties": {"size": {"type": "integer", "default": 1}, "name": STRING}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{kind.lower()}s.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": f"{kind.lower()}s"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": True, "storage": True,
                 "schema": {"openAPIV3Schema": obj_schema(spec=spec, status={"type": "object"})}},
                {"name": "v1beta1", "served": True, "storage": False,
                 "schema": {"openAPIV3Schema": OPEN}},
                {"name": "v1alpha1", "served": False, "storage": False,
                 "schema": {"openAPIV3Schema": obj_schema()}},
            ],
        },
    }


def widget(version: str = "v1", **spec: Any) -> Obj:
    return {"apiVersion": f"example.io/{version}", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "ns"}, "spec": spec, "status": {"x": 1}}


def test_version_schemas_are_those_of_served_versions() -> None:
    assert sorted(version_schemas(crd())) == ["v1", "v1beta1"]


def test_install_crds_installs_the_type_with_its_served_versions_and_scope() -> None:
    api = FakeKubeAPI()
    (rt,) = api.install_crds([crd()])
    assert (rt.group, rt.kind, rt.plural, rt.versions, rt.namespaced) == (
        "example.io", "Widget", "widgets", ("v1", "v1beta1"), True)
    assert api.resource("Widget") == rt


def test_writes_of_a_crd_type_are_pruned_and_defaulted_by_the_written_version() -> None:
    api = FakeKubeAPI()
    api.install_crds([crd()])
    stored = api.create(widget(junk=1))
    assert stored["spec"] == {"size": 1} and stored["status"] == {}
    assert stored["metadata"]["name"] == "w" and stored["metadata"]["uid"]
    updated = api.update(widget("v1beta1", junk=2, size=5))
    assert updated["spec"] == {"junk": 2, "size": 5}, "v1beta1 preserves unknown fields"


def test_types_without_a_schema_store_objects_as_written() -> None:
    api = FakeKubeAPI()
    api.install(ResourceType("example.io", "Widget", "widgets", ("v1",)))
    stored = api.create(widget(junk=1))
    assert stored["spec"] == {"junk": 1} and stored["status"] == {"x": 1}


def test_reinstalling_a_type_without_schema_keeps_its_crd_schema_and_uninstall_drops_it() -> None:
    api = FakeKubeAPI()
    api.install_crds([crd()])
    api.load([widget(junk=1)])
    assert api.objects("Widget")[0]["spec"] == {"size": 1}
    api.uninstall(kind="Widget")
    assert api.schemas == {}


async def test_http_create_update_and_status_writes_are_pruned_and_defaulted() -> None:
    async with FakeKubeAPI() as api, aiohttp.ClientSession() as http:
        api.install_crds([crd()])
        base = f"{api.url}/apis/example.io/v1/namespaces/ns/widgets"
        async with http.post(base, json=widget(junk=1)) as resp:
            assert resp.status == 201
            assert (await resp.json())["spec"] == {"size": 1}
        async with http.put(f"{base}/w", json=widget(size=2, junk=1)) as resp:
            assert (await resp.json())["spec"] == {"size": 2}
        async with http.put(f"{base}/w/status", json={**widget(), "status": {"junk": 1}}) as resp:
            body = await resp.json()
            assert body["status"] == {} and body["spec"] == {"size": 1}
        assert api.objects("Widget")[0]["spec"] == {"size": 1}


# ---- the fake against a real API server ----------------------------------------------------

# Metadata only a server assigns; the rest of what both store must be equal.
SERVER_ASSIGNED = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")
# What RealCluster.create sends of an object's metadata (the rest only a server may write).
WRITABLE_METADATA = ("name", "generateName", "namespace", "labels", "annotations", "finalizers",
                     "ownerReferences")


def _meta(obj: Obj, keep: Any) -> Obj:
    return {**obj, "metadata": {k: v for k, v in (obj.get("metadata") or {}).items() if keep(k)}}


def _comparable(obj: Obj) -> Obj:
    return _meta(obj, lambda k: k not in SERVER_ASSIGNED)


def _name(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{obj['kind']} {meta.get('namespace', '')}/{meta['name']} ({obj['apiVersion']})"


def _placement_ref(**extra: Any) -> Obj:
    return {"name": "placement", **extra}


def hand_made(era: str) -> list[Obj]:
    """Objects with unknown fields at several depths and absent defaulted fields."""
    summary = {"Applied": 1, "applied": 1, "total": 1} if era == "v1beta2" else {"Applied": 1, "total": 1}
    manifest = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cm", "namespace": "default", "labels": {"a": "b"}},
                "data": {"k": "v"}, "anything": {"kept": True}}
    config = {"resourceIdentifier": {"group": "", "resource": "configmaps", "name": "cm",
                                     "namespace": "default", "junk": 1},
              "feedbackRules": [{"type": "JSONPaths", "jsonPaths": [{"name": "d", "path": ".data"}]}],
              "junk": {"x": 1}}
    mwrs = {
        "apiVersion": "work.open-cluster-management.io/v1alpha1",
        "kind": "ManifestWorkReplicaSet",
        "metadata": {"name": "handmade-mwrs", "namespace": "schema-test"},
        "junkAtRoot": 1,
        "spec": {
            "junk": "x",
            "placementRefs": [
                _placement_ref(rolloutStrategy={"type": "All", "all": {"progressDeadline": "None"}}),
                {"name": "no-strategy", "junk": 1},
                _placement_ref(name="progressive", rolloutStrategy={
                    "type": "Progressive", "progressive": {"maxConcurrency": 2, "junk": 1}}),
            ],
            "manifestWorkTemplate": {"workload": {"manifests": [manifest]},
                                     "manifestConfigs": [config], "junk": []},
        },
        "status": {"summary": summary, "junk": {"a": 1},
                   "conditions": [{"type": "PlacementVerified", "status": "True", "reason": "AsExpected",
                                   "message": "", "lastTransitionTime": "2025-01-01T00:00:00Z",
                                   "junk": 1}]},
    }
    work = {
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {"name": "handmade-work", "namespace": "schema-test", "labels": {"x": "y"}},
        "spec": {"workload": {"manifests": [manifest,
                                          {**manifest, "metadata": {"name": "cm2", "junk": 1, "uid": "u"}}]},
                 "manifestConfigs": [config, {**config, "feedbackScrapeType": "Watch"}],
                 "deleteOption": {"junk": 1}},
        "status": {"junk": 1, "resourceStatus": {"manifests": [
            {"resourceMeta": {"kind": "ConfigMap", "name": "cm", "ordinal": 0, "junk": 1}, "conditions": [],
             "statusFeedback": {"values": [{"name": "d", "fieldValue": {
                 "type": "JsonRaw", "jsonRaw": "{}", "junk": 1}}]}}]}},
    }
    capi = "cluster.x-k8s.io/v1beta2" if era == "v1beta2" else "cluster.x-k8s.io/v1beta1"
    cluster = {
        "apiVersion": capi, "kind": "Cluster",
        "metadata": {"name": "handmade-cluster", "namespace": "schema-test"},
        "spec": {"junk": 1, "paused": False, "topology": None},
        "status": {"junk": 1, "phase": "Provisioned"},
    }
    return [mwrs, work, cluster]


@dataclass
class Written:
    era: str
    inputs: list[Obj]
    real: list[Obj]
    fake: list[Obj]


@pytest.fixture(scope="module", params=["v1beta1", "v1beta2"])
def written(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Written]:
    from tests.realcluster import eras
    from tests.realcluster.cluster import RealCluster

    era = eras.era(request.param)
    inputs = [*eras.read_objects(era.files()), *hand_made(era.name)]
    fake = FakeKubeAPI()
    fake.install_crds(era.crd_files())
    with RealCluster(tmp_path_factory.mktemp(f"schema-{era.name}")) as cluster:
        cluster.install_crds(era.crd_files())
        real = [cluster.create(copy.deepcopy(o)) for o in inputs]
    stored = [fake.create(_meta(copy.deepcopy(o), lambda k: k in WRITABLE_METADATA)) for o in inputs]
    yield Written(era.name, inputs, real, stored)


def _first_difference(want: Any, got: Any, path: str = "") -> str:
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            if key not in got:
                return f"{path}.{key} missing: {want[key]!r}"
            if key not in want:
                return f"{path}.{key} extra: {got[key]!r}"
            if want[key] != got[key]:
                return _first_difference(want[key], got[key], f"{path}.{key}")
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            if w != g:
                return _first_difference(w, g, f"{path}[{i}]")
    return f"{path}: {want!r} != {got!r}"


def _differences(written: Written, names: set[str] | None = None) -> list[str]:
    out = []
    for obj, real, fake in zip(written.inputs, written.real, written.fake, strict=True):
        if names is not None and obj["metadata"]["name"] not in names:
            continue
        want, got = _comparable(real), _comparable(fake)
        if want != got:
            out.append(f"{_name(obj)}: fake differs from real at {_first_difference(want, got)}")
    return out


HAND_MADE = {"handmade-mwrs", "handmade-work", "handmade-cluster"}


@pytest.mark.realcluster
def test_the_fake_stores_every_example_as_the_real_server_does(written: Written) -> None:
    examples = {o["metadata"]["name"] for o in written.inputs} - HAND_MADE
    assert len(examples) > 10
    assert not _differences(written, examples), "\n".join(_differences(written, examples))


@pytest.mark.realcluster
def test_the_fake_prunes_and_defaults_hand_made_objects_as_the_real_server_does(written: Written) -> None:
    differences = _differences(written, HAND_MADE)
    assert not differences, "\n".join(differences)
    # The inputs do exercise pruning and defaulting: the real server changed every one of them.
    for obj, real in zip(written.inputs, written.real, strict=True):
        if obj["metadata"]["name"] in HAND_MADE:
            assert _meta(obj, lambda k: k in WRITABLE_METADATA) != _comparable(real), _name(obj)


@pytest.mark.realcluster
def test_both_prune_summary_applied_under_ocm_1_2_keep_it_under_1_0_and_default_rollouts(
    written: Written,
) -> None:
    (real,) = [r for r in written.real if r["metadata"]["name"] == "handmade-mwrs"]
    (fake,) = [f for f in written.fake if f["metadata"]["name"] == "handmade-mwrs"]
    expected = {"v1beta1": {"Applied": 1, "total": 1}, "v1beta2": {"applied": 1, "total": 1}}[written.era]
    assert real["status"]["summary"] == fake["status"]["summary"] == expected
    refs = {r["name"]: r for r in fake["spec"]["placementRefs"]}
    assert refs["placement"]["rolloutStrategy"]["all"]["maxFailures"] == 0
    assert refs["no-strategy"]["rolloutStrategy"]["all"] == {
        "progressDeadline": "None", "maxFailures": 0, "minSuccessTime": "0"}
