"""Raw API object → engine projection, for every kind the engine reads.

Owns the dispatch by kind, the metadata every projection keeps (only the labels and annotations
the engine reads, so memory stays bounded, plus those a ``MetadataSelection`` names for export,
which no rule reads), and the error policy every kind follows, which makes ``project`` never raise:

- an object whose identity (kind, name) cannot be read gives None: the source counts and skips it;
- a field of the wrong type or shape is recorded in ``problems`` (a MalformedField finding each)
  and read as missing; the rest of the object is read and exported;
- an exception while reading an object whose identity was read is a bug, not bad input: the
  object is kept with its identity only and one problem starting with ``UNREADABLE_OBJECT``,
  which the composition root logs with the object's name and counts apart from bad input.

The three CAPI storage layouts it normalises (see ``parse_capi.py`` for the per-kind paths):

- ``v1beta2`` (CAPI 1.11+): metav1 conditions in ``status.conditions``, old ones under
  ``status.deprecated.v1beta1``;
- ``v1beta1+v1beta2`` (CAPI 1.9/1.10): v1beta1 objects carrying ``status.v1beta2.*``;
- ``v1beta1`` (CAPI 1.5-1.8): only the old conditions (with severity) and flat counters.

Counters are read by *meaning*: a projection's ``Counters`` always hold v1beta2 meanings.
Unknown kinds give None.
Owns no rules (the per-kind modules), no per-kind paths (``parse_capi.py``) and no field decoding
(``parse_fields.py``); OCM kinds are delegated to ``parse_ocm.project_ocm``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final

from exporter.engine.model import (
    EMPTY_MAP,
    Base,
    BootstrapConfig,
    Cluster,
    ClusterClass,
    ClusterResourceSet,
    ClusterResourceSetBinding,
    ExtensionConfig,
    InfraMachinePool,
    InfraObject,
    IPAddressClaim,
    KubeadmControlPlane,
    Machine,
    MachineDeployment,
    MachineDrainRule,
    MachineHealthCheck,
    MachinePool,
    MachineSet,
    Meta,
    OwnerRef,
)
from exporter.engine.parse_capi import (
    CAPI_READERS,
    PAUSED_ANNOTATION,
    PENDING_HOOKS_ANNOTATION,
    REPLICAS_MANAGED_BY_ANNOTATION,
    UPDATE_IN_PROGRESS_ANNOTATION,
    UPGRADE_STEP_ANNOTATION,
    Reader,
    bootstrap_config,
    infra_machine_pool,
    infra_object,
)
from exporter.engine.parse_fields import (
    MAX_STRING,
    Fields,
    bounded,
    is_map,
    recall,
    remember,
    shared_map,
    word,
)
from exporter.engine.parse_ocm import BARE_OCM, project_ocm

# Provider groups, matched by suffix: a provider may serve its kinds from a group of its own
# under these (vmware.infrastructure.cluster.x-k8s.io).
INFRA_GROUP: Final = "infrastructure.cluster.x-k8s.io"
BOOTSTRAP_GROUP: Final = "bootstrap.cluster.x-k8s.io"
OCM_KINDS: Final = frozenset(
    {"ManifestWorkReplicaSet", "ManifestWork", "ManagedCluster", "ManagedClusterAddOn", "Placement",
     "PlacementDecision"}
)
KEPT_ANNOTATIONS: Final = frozenset(
    {PAUSED_ANNOTATION, REPLICAS_MANAGED_BY_ANNOTATION, UPGRADE_STEP_ANNOTATION,
     UPDATE_IN_PROGRESS_ANNOTATION, PENDING_HOOKS_ANNOTATION}
)
KEPT_LABEL_PREFIXES: Final = (
    "cluster.x-k8s.io/",
    "work.open-cluster-management.io/",
    "cluster.open-cluster-management.io/",
)
_MAX_LABELS: Final = 64
_MAX_OWNERS: Final = 16
_NO_MAP: Final[Mapping[str, Any]] = MappingProxyType({})
ALL_KEYS: Final = "*"
UNREADABLE_OBJECT: Final = "<reader error>"  # how the problem recorded when reading raised begins
_MAX_ERROR: Final = 300
# The projection of each kind holding its identity only: what an object becomes when reading it raised.
_BARE: Final[Mapping[str, type[Base]]] = MappingProxyType({
    "Cluster": Cluster, "ClusterClass": ClusterClass, "Machine": Machine, "MachineSet": MachineSet,
    "MachineDeployment": MachineDeployment, "MachinePool": MachinePool,
    "MachineHealthCheck": MachineHealthCheck, "KubeadmControlPlane": KubeadmControlPlane,
    "ClusterResourceSet": ClusterResourceSet, "ClusterResourceSetBinding": ClusterResourceSetBinding,
    "ExtensionConfig": ExtensionConfig, "MachineDrainRule": MachineDrainRule,
    "IPAddressClaim": IPAddressClaim, **BARE_OCM,
})
_BARE_PROVIDER: Final[Mapping[Reader, type[Base]]] = MappingProxyType({
    infra_object: InfraObject, infra_machine_pool: InfraMachinePool, bootstrap_config: BootstrapConfig,
})


def _no_keys() -> Mapping[str, frozenset[str]]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class MetadataSelection:
    """The label and annotation keys to keep for export, per kind (``Cluster``, ``ManifestWork``).

    A kind's keys are matched exactly; a set holding ``ALL_KEYS`` keeps every key. Kinds not
    listed keep none. Kept maps land in ``Meta.exported_labels`` / ``exported_annotations``.
    """

    labels: Mapping[str, frozenset[str]] = field(default_factory=_no_keys)
    annotations: Mapping[str, frozenset[str]] = field(default_factory=_no_keys)


NO_SELECTION: Final = MetadataSelection()


def project(raw: Mapping[str, Any], previous: Base | None = None,
            selection: MetadataSelection = NO_SELECTION) -> Base | None:
    """The projection of one raw object, or None (no identity, or a kind the engine ignores).

    ``previous``: the object's last projection, if the caller has it. An update mostly repeats
    what the object held: its equal conditions are taken from ``previous`` rather than built
    again, and a projection equal to ``previous`` is ``previous`` itself. The result is equal to
    what ``project(raw)`` gives either way. ``selection``: the labels and annotations to keep
    for export besides those the engine reads. Never raises (see the module's error policy).
    """
    try:
        return project_unguarded(raw, previous, selection)
    except Exception as error:  # a bug costs one object's details, never the object or the source
        return _identity_only(raw, error)


def _identity_only(raw: Mapping[str, Any], error: Exception) -> Base | None:
    """The object with its identity only and the error as its one problem; None where even its
    identity cannot be read or its kind is not one the engine reads."""
    try:
        meta = _meta(raw, Fields(), NO_SELECTION)
        if meta is None:
            return None
        bare = _BARE.get(meta.kind)
        if bare is None:
            reader = _provider_reader(_group(meta), meta.kind)
            bare = _BARE_PROVIDER.get(reader) if reader is not None else None
        if bare is None:
            return None
        text = f"{UNREADABLE_OBJECT}: {type(error).__name__}: {error}"
        return bare(meta=meta, problems=(bounded(text, _MAX_ERROR),))
    except Exception:
        return None


def _group(meta: Meta) -> str:
    return meta.api_version.rsplit("/", 1)[0] if "/" in meta.api_version else ""


def project_unguarded(raw: Mapping[str, Any], previous: Base | None = None,
                      selection: MetadataSelection = NO_SELECTION) -> Base | None:
    """``project`` without its guard: raises what a reader raises (tests call it to see bugs)."""
    if not is_map(raw):
        return None
    reusable = (previous.conditions, previous.v1beta1_conditions) if previous is not None else ()
    fields = Fields(previous=reusable)
    meta = _meta(raw, fields, selection, previous.meta if previous is not None else None)
    if meta is None:
        return None
    group = _group(meta)
    if meta.kind in OCM_KINDS:
        return project_ocm(raw, meta, fields.problems)
    reader = CAPI_READERS.get((group, meta.kind)) or _provider_reader(group, meta.kind)
    if reader is None:
        return None
    projection = reader(raw, meta, fields)
    if fields.problems:
        projection = replace(projection, problems=tuple(fields.problems))
    # Equal (the conditions reused, the comparison stops at them): the store, the engine and the
    # renderer then see the very object they hold.
    if previous is not None and type(previous) is type(projection) and previous == projection:
        return previous
    return projection


def _provider_reader(group: str, kind: str) -> Reader | None:
    """The contract a provider kind follows, by its group (and, for pools, its name); templates
    (AWSMachineTemplate, KubeadmConfigTemplate) have no status and are not read."""
    if kind.endswith("Template"):
        return None
    if in_group(group, INFRA_GROUP):
        return infra_machine_pool if kind.endswith("MachinePool") else infra_object
    if in_group(group, BOOTSTRAP_GROUP):
        return bootstrap_config
    return None


def in_group(group: str, provider_group: str) -> bool:
    """``group`` is ``provider_group`` or a group under it."""
    return group == provider_group or group.endswith(f".{provider_group}")


# ---- metadata every kind shares ---------------------------------------------------------------


def _meta(raw: Mapping[str, Any], f: Fields, selection: MetadataSelection,
          previous: Meta | None = None) -> Meta | None:
    """The object's metadata; ``previous`` itself when equal (see below)."""
    kind, name = f.str_(raw, "kind"), f.str_(raw, "metadata.name")
    if not kind or not name:
        return None
    f.name = name
    # One pass over each map, keeping only what the engine reads (string_map's rules, filtered),
    # flattened so that equal maps of sibling objects are shared (see shared_map).
    raw_labels = f.mapping(raw, "metadata.labels") or _NO_MAP
    labels: list[str] = []
    for k, v in raw_labels.items():
        if isinstance(k, str) and isinstance(v, str) and k.startswith(KEPT_LABEL_PREFIXES):
            labels += (k, bounded(v, 63))
    raw_annotations = f.mapping(raw, "metadata.annotations") or _NO_MAP
    annotations: list[str] = []
    for k, v in raw_annotations.items():
        if k in KEPT_ANNOTATIONS and isinstance(v, str):
            annotations += (k, bounded(v, 256))
    exported_labels = exported_annotations = EMPTY_MAP
    if selection.labels or selection.annotations:
        keys = selection.labels.get(kind)
        if keys is not None:
            exported_labels = _selected(raw_labels, keys)
        keys = selection.annotations.get(kind)
        if keys is not None:
            exported_annotations = _selected(raw_annotations, keys)
    namespace = f.str_(raw, "metadata.namespace")
    # resourceVersion is not kept: nothing downstream reads it, and it is unique per object.
    meta = Meta(
        kind=word(kind),
        api_version=f.word_(raw, "apiVersion"),
        namespace=word(namespace) if namespace else "",
        name=name,
        uid=f.str_(raw, "metadata.uid"),
        generation=f.int_(raw, "metadata.generation"),
        creation_timestamp=f.time(raw, "metadata.creationTimestamp"),
        deletion_timestamp=f.time(raw, "metadata.deletionTimestamp"),
        labels=shared_map(labels[:2 * _MAX_LABELS]),
        annotations=shared_map(annotations),
        owner_refs=_owner_refs(f, raw),
        exported_labels=exported_labels,
        exported_annotations=exported_annotations,
    )
    # An update of the status leaves the metadata as it was. The last projection's is then kept:
    # its key is the one the store's, the renderer's and the pipeline's dicts hold, and its name
    # and uid the strings a reused Result holds. A new Meta would add a key and both strings per
    # changed object (~200 bytes) while the dicts keep the old ones.
    return previous if previous is not None and previous == meta else meta


def _selected(raw: Mapping[str, Any], keys: frozenset[str]) -> Mapping[str, str]:
    """The string entries of ``raw`` whose keys are in ``keys`` (all with ``ALL_KEYS``), shared."""
    every = ALL_KEYS in keys
    flat: list[str] = []
    for k, v in raw.items():
        if isinstance(k, str) and isinstance(v, str) and (every or k in keys):
            flat += (k, bounded(v, MAX_STRING))
    return shared_map(flat)


def _owner_refs(f: Fields, raw: object) -> tuple[OwnerRef, ...]:
    items = f.list_(raw, "metadata.ownerReferences", _MAX_OWNERS)
    if not items:
        return ()
    # The children of one owner carry the same references: read the fields, then share the tuple.
    # A provider object is named after the Machine that owns it: the owner's name is then the
    # object's own string rather than a copy of it, one per object, and the Machine's
    # infrastructure object and bootstrap config share one tuple.
    fields: list[Any] = ["owners"]
    for item in items:
        if not is_map(item):
            f.problem("metadata.ownerReferences[]", "object", item)
            continue
        name = f.str_(item, "name")
        fields += (f.str_(item, "kind"), f.name if name == f.name else name, f.str_(item, "apiVersion"),
                   f.bool_(item, "controller") is True)
    key = tuple(fields)
    found: tuple[OwnerRef, ...] | None = recall(key)
    if found is None:
        found = remember(key, tuple(
            OwnerRef(kind=word(fields[i]), name=fields[i + 1], api_version=word(fields[i + 2]),
                     controller=fields[i + 3])
            for i in range(1, len(fields), 4)
        ))
    return found
