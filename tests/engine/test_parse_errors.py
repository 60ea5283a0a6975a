"""The parser's one error policy, for every kind (exporter/engine/parse.py):

- no identity: None (the source counts and skips the object);
- a field of the wrong type: recorded in ``problems`` and read as missing, the rest still read;
- an exception while reading (a bug): the object with its identity only and one problem that
  starts with ``UNREADABLE_OBJECT``; ``project_unguarded`` lets it through, for tests to see.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from exporter.engine import parse, parse_capi, parse_ocm
from exporter.engine.model import (
    Base,
    BootstrapConfig,
    Cluster,
    InfraObject,
    Machine,
    ManagedCluster,
    ManifestWorkReplicaSet,
)
from exporter.engine.parse import UNREADABLE_OBJECT, project, project_unguarded

CREATED = "2026-11-20T12:00:00Z"


def _raw(api_version: str, kind: str, **rest: Any) -> dict[str, Any]:
    meta = {"name": "obj1", "namespace": "ns1", "uid": "u1", "creationTimestamp": CREATED}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **rest}


# (kind, raw object with one malformed field, its projection type, a valid field and its value)
MALFORMED: list[tuple[str, dict[str, Any], type[Base], Callable[[Any], object], object]] = [
    ("Cluster", _raw("cluster.x-k8s.io/v1beta2", "Cluster", spec={"paused": True},
                     status={"conditions": "not a list"}),
     Cluster, lambda o: o.spec_paused, True),
    ("Machine", _raw("cluster.x-k8s.io/v1beta2", "Machine", spec={"clusterName": "c1", "version": "v1.32.0"},
                     status={"nodeRef": "not an object"}),
     Machine, lambda o: o.version, "v1.32.0"),
    ("DockerMachine", _raw("infrastructure.cluster.x-k8s.io/v1beta2", "DockerMachine",
                           status={"initialization": {"provisioned": True}, "conditions": 5}),
     InfraObject, lambda o: o.provisioned, True),
    ("KubeadmConfig", _raw("bootstrap.cluster.x-k8s.io/v1beta2", "KubeadmConfig",
                           status={"initialization": {"dataSecretCreated": True}, "conditions": {}}),
     BootstrapConfig, lambda o: o.data_secret_created, True),
    ("ManifestWorkReplicaSet", _raw("work.open-cluster-management.io/v1alpha1", "ManifestWorkReplicaSet",
                                    spec={"placementRefs": [{"name": "p1"}]}, status={"conditions": "x"}),
     ManifestWorkReplicaSet, lambda o: [r.name for r in o.placement_refs], ["p1"]),
    ("ManagedCluster", _raw("cluster.open-cluster-management.io/v1", "ManagedCluster",
                            status={"version": {"kubernetes": "v1.32.1"}, "conditions": 7}),
     ManagedCluster, lambda o: o.kubernetes_version, "v1.32.1"),
]


@pytest.mark.parametrize(("raw", "type_", "read", "want"), [case[1:] for case in MALFORMED],
                         ids=[case[0] for case in MALFORMED])
def test_a_malformed_field_keeps_the_object_read_as_far_as_it_can_be(
    raw: dict[str, Any], type_: type[Base], read: Callable[[Any], object], want: object
) -> None:
    obj = project_unguarded(raw)  # bad input is no exception: the unguarded form reads it too
    assert type(obj) is type_
    assert (obj.meta.namespace, obj.meta.name) == ("ns1", "obj1")
    assert obj.meta.creation_timestamp is not None
    assert read(obj) == want
    assert obj.problems and not any(p.startswith(UNREADABLE_OBJECT) for p in obj.problems)
    assert project(raw) == obj


@pytest.mark.parametrize("raw", [case[1] for case in MALFORMED], ids=[case[0] for case in MALFORMED])
@pytest.mark.parametrize("unnamed", [{"namespace": "ns1"}, {"name": ["obj1"]}, "not an object"],
                         ids=["no-name", "name-not-a-string", "metadata-not-an-object"])
def test_an_object_without_identity_gives_none(raw: dict[str, Any], unnamed: object) -> None:
    assert project({**raw, "metadata": unnamed}) is None


def _boom(*_: object) -> Any:
    raise ZeroDivisionError("a bug in a reader")


def _capi_reader_raises(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    readers = {key: (_boom if key[1] == kind else reader) for key, reader in parse.CAPI_READERS.items()}
    monkeypatch.setattr(parse, "CAPI_READERS", readers)


def _provider_reader_raises(monkeypatch: pytest.MonkeyPatch, _kind: str) -> None:
    monkeypatch.setattr(parse_capi, "_provider_layout", _boom)


def _ocm_reader_raises(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    monkeypatch.setitem(parse_ocm._READERS, kind, _boom)  # type: ignore[index]


BREAK = {
    "Cluster": _capi_reader_raises, "Machine": _capi_reader_raises,
    "DockerMachine": _provider_reader_raises, "KubeadmConfig": _provider_reader_raises,
    "ManifestWorkReplicaSet": _ocm_reader_raises, "ManagedCluster": _ocm_reader_raises,
}


@pytest.mark.pure_python
@pytest.mark.parametrize(("kind", "raw", "type_"), [case[:3] for case in MALFORMED],
                         ids=[case[0] for case in MALFORMED])
def test_a_reader_that_raises_keeps_the_object_with_its_identity_only(
    monkeypatch: pytest.MonkeyPatch, kind: str, raw: dict[str, Any], type_: type[Base]
) -> None:
    BREAK[kind](monkeypatch, kind)
    with pytest.raises(ZeroDivisionError):
        project_unguarded(raw)
    obj = project(raw)
    assert type(obj) is type_
    assert (obj.meta.kind, obj.meta.namespace, obj.meta.name, obj.meta.uid) == (kind, "ns1", "obj1", "u1")
    assert obj == type_(meta=obj.meta, problems=obj.problems)  # nothing else read
    assert len(obj.problems) == 1
    assert obj.problems[0].startswith(f"{UNREADABLE_OBJECT}: ZeroDivisionError: a bug in a reader")
