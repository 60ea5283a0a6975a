"""The engine's value model: conditions, projected objects and evaluation results.

Owns the immutable types every layer exchanges: ``Condition``, the per-kind projections the
sources build from raw API objects (see ``parse.py``), and ``Result``, what the engine computes
for one object. Owns no parsing and no rules. Times are Unix seconds (float) so that the engine,
the store and the renderer never convert; ``now`` is always passed in, never read from a clock.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Final, Generic, TypeVar

# Compiled, the classes below are acyclic (mypyc_attr): no instance refers back to what holds it,
# so none is tracked by the cyclic garbage collector, each is 16 bytes smaller (a collector header)
# and a collection never traverses them. tests/engine/test_untracked.py checks.
from mypy_extensions import mypyc_attr

EMPTY_MAP: Final[Mapping[str, str]] = MappingProxyType({})


def _empty_map() -> Mapping[str, str]:
    # A factory, not a default: Python 3.11 dataclasses reject unhashable defaults (mappingproxy).
    return EMPTY_MAP


NO_COUNTERS: Final[Mapping[str, int | None]] = MappingProxyType({})
"""The counters of a Result without any: one shared mapping, not an empty dict per object."""


def no_counters() -> Mapping[str, int | None]:
    return NO_COUNTERS  # a factory, as ``_empty_map``


class Status(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"

    @classmethod
    def parse(cls, value: object) -> Status:
        """Read a status as the API writes it; anything unexpected is Unknown, never an error."""
        if value is True or value == "True":
            return cls.TRUE
        if value is False or value == "False":
            return cls.FALSE
        return cls.UNKNOWN


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class ConditionShape:
    """A condition's fields but its transition time: the part conditions across a fleet repeat.

    ``Condition`` takes one from ``condition_shape``. On the benchmark fleet at 100 % (with the
    provider objects) ~400,000 conditions hold ~1,000 distinct shapes, where the transition time
    is each object's own: with the shape shared, a condition is 40 bytes rather than 96.
    """

    type: str
    status: Status
    reason: str
    message: str
    observed_generation: int | None
    severity: str

    def __init__(self, type: str, status: Status, reason: str, message: str,  # noqa: A002
                 observed_generation: int | None, severity: str) -> None:
        # written out: see Condition.__init__
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "message", message)
        object.__setattr__(self, "observed_generation", observed_generation)
        object.__setattr__(self, "severity", severity)

    def __eq__(self, other: object) -> bool:  # written out: see Condition.__eq__
        if type(other) is not ConditionShape:
            return NotImplemented
        return (self.type == other.type and self.status == other.status and self.reason == other.reason
                and self.message == other.message and self.observed_generation == other.observed_generation
                and self.severity == other.severity)

    def __hash__(self) -> int:
        return hash((self.type, self.status, self.reason, self.message, self.observed_generation,
                     self.severity))


_T = TypeVar("_T")


class OneCopy(Generic[_T]):
    """The one copy kept of each value that repeats across objects (names, messages, shapes).

    ``one(value)`` gives the copy kept (``value`` itself the first time). What such tables share
    comes and goes with the fleet, so a table keeps two generations of at most ``limit`` values: a
    value found in the older moves to the newer; when the newer is full it becomes the older and
    the older is dropped. A value still looked up stays shared, one no longer looked up is let go
    within two generations, and a copy taken before stays valid, as nothing relies on sharing for
    equality.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.newer: dict[_T, _T] = {}  # read inline where a hit is the common case
        self.older: dict[_T, _T] = {}

    def one(self, value: _T) -> _T:
        found = self.newer.get(value)
        if found is None:
            found = self.older.pop(value, value)
            if len(self.newer) >= self.limit:
                self.older = self.newer
                self.newer = {}
            self.newer[found] = found
        return found

    def __len__(self) -> int:
        return len(self.newer) + len(self.older)

    def clear(self) -> None:
        self.newer = {}
        self.older = {}


# Each shape is its own key: a key of its own would be one more object per distinct message.
# Under churn most new shapes are owners' messages naming the Machines they wait for, each in use
# a short while: what the table keeps beyond the shapes in use is memory held for nothing, so its
# generations are small (a few thousand shapes are in use at 100 % of the benchmark fleet).
MAX_SHAPES: Final = 1 << 12  # per generation (OneCopy)
_shapes: OneCopy[ConditionShape] = OneCopy(MAX_SHAPES)


def condition_shape(type_: str, status: Status, reason: str, message: str,
                    observed_generation: int | None, severity: str) -> ConditionShape:
    """The shared shape with these fields."""
    return _shapes.one(ConditionShape(type_, status, reason, message, observed_generation, severity))


# A transition time that may be unset, kept as a float field (see Condition.when): NaN for none.
_NO_TIME: Final = math.nan


def _time_or_none(when: float) -> float | None:
    return None if when != when else when


def _same_time(a: float, b: float) -> bool:
    return a == b or (a != a and b != b)  # NaN is not equal to itself


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True, init=False, eq=False, repr=False)
class Condition:
    """One condition, reported by a controller or computed by the engine (metav1 shape + v1beta1 severity).

    Built from its seven fields; it keeps its transition time and a shared ``ConditionShape`` of
    the others, which read as attributes of the condition.
    """

    shape: ConditionShape
    # The transition time, NaN for none. Compiled, a ``float`` field is stored in the object
    # itself, where an optional one points to a float object: 24 bytes for each distinct time
    # (~150,000 at 100 % of the benchmark fleet with the provider objects).
    when: float

    # __init__, __eq__ and __hash__ are written out on the hot value types: compiled (setup.py),
    # these are compiled too, where the ones dataclasses generates stay interpreted, and ``==``
    # would build a tuple of every field per call (docs/performance.md has the figures).
    # tests/engine/test_model_equality.py checks that every argument is kept and compared.
    # ``object.__setattr__``, as in the generated ``__init__`` of a frozen class: the compiler
    # makes it a plain store. ``type``: the name keyword arguments use.
    def __init__(self, type: str, status: Status, reason: str = "", message: str = "",  # noqa: A002
                 last_transition_time: float | None = None, observed_generation: int | None = None,
                 severity: str = "") -> None:
        object.__setattr__(self, "shape",
                           condition_shape(type, status, reason, message, observed_generation, severity))
        object.__setattr__(self, "when", _NO_TIME if last_transition_time is None else last_transition_time)

    @property
    def last_transition_time(self) -> float | None:
        return _time_or_none(self.when)

    @property
    def type(self) -> str:
        return self.shape.type

    @property
    def status(self) -> Status:
        return self.shape.status

    @property
    def reason(self) -> str:
        return self.shape.reason

    @property
    def message(self) -> str:
        return self.shape.message

    @property
    def observed_generation(self) -> int | None:
        return self.shape.observed_generation

    @property
    def severity(self) -> str:
        """v1beta1 conditions only: Error|Warning|Info, set only when False."""
        return self.shape.severity

    def at(self, last_transition_time: float | None) -> Condition:
        """The same condition with another transition time."""
        return Condition(self.type, self.status, self.reason, self.message, last_transition_time,
                         self.observed_generation, self.severity)

    def __eq__(self, other: object) -> bool:
        if type(other) is not Condition:
            return NotImplemented
        if not _same_time(self.when, other.when):
            return False
        return self.shape is other.shape or self.shape == other.shape

    def __hash__(self) -> int:
        # Not of ``when``: the hash of a NaN is that of its float object, one per read.
        return hash((self.shape, self.last_transition_time))

    def __repr__(self) -> str:
        return (f"Condition(type={self.type!r}, status={self.status!r}, reason={self.reason!r}, "
                f"message={self.message!r}, last_transition_time={self.last_transition_time!r}, "
                f"observed_generation={self.observed_generation!r}, severity={self.severity!r})")


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class Ref:
    """An object reference as CAPI writes it (v1beta1: apiVersion; v1beta2: apiGroup)."""

    kind: str
    name: str
    api_group: str = ""
    namespace: str = ""

    def __init__(self, kind: str, name: str, api_group: str = "", namespace: str = "") -> None:
        # written out: see Condition.__init__
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "api_group", api_group)
        object.__setattr__(self, "namespace", namespace)

    def __eq__(self, other: object) -> bool:  # written out: see Condition.__eq__
        if type(other) is not Ref:
            return NotImplemented
        return (self.name == other.name and self.kind == other.kind and self.api_group == other.api_group
                and self.namespace == other.namespace)

    def __hash__(self) -> int:
        return hash((self.kind, self.name, self.api_group, self.namespace))


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class OwnerRef:
    kind: str
    name: str
    api_version: str = ""
    controller: bool = False
    # No uid: nothing reads it, and each provider object would keep its own Machine's copy.


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class Gate:
    """An availabilityGate / readinessGate entry: a condition type and its polarity."""

    condition_type: str
    negative: bool = False


# Of variable length for the compiler's sake: mypyc stores a fixed-length tuple unboxed and builds
# a new tuple object at every read, and a key must stay one object (it is read for every index
# entry and every lookup). Always three items.
ObjectKey = tuple[str, ...]
"""(kind, namespace, name): the identity of an object in the store and in results."""


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True, eq=False)  # __eq__ written out; unhashable (mappings)
class Meta:
    """The metadata every projected object keeps."""

    kind: str
    api_version: str  # group/version as served, e.g. cluster.x-k8s.io/v1beta2
    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""
    generation: int | None = None
    creation_timestamp: float | None = None
    deletion_timestamp: float | None = None
    labels: Mapping[str, str] = field(default_factory=_empty_map)
    # only the annotations the engine reads
    annotations: Mapping[str, str] = field(default_factory=_empty_map)
    owner_refs: tuple[OwnerRef, ...] = ()
    # The labels and annotations the user asked to export (--metric-labels-allowlist,
    # --metric-annotations-allowlist), as read; no rule reads them. Empty unless asked for.
    exported_labels: Mapping[str, str] = field(default_factory=_empty_map)
    exported_annotations: Mapping[str, str] = field(default_factory=_empty_map)
    # (kind, namespace, name), built once: the store indexes an object under its key several
    # times, and a tuple per lookup would be a copy per index entry.
    key: ObjectKey = field(init=False, repr=False, compare=False)

    def __init__(self, kind: str, api_version: str, namespace: str, name: str, uid: str = "",
                 resource_version: str = "", generation: int | None = None,
                 creation_timestamp: float | None = None, deletion_timestamp: float | None = None,
                 labels: Mapping[str, str] = EMPTY_MAP, annotations: Mapping[str, str] = EMPTY_MAP,
                 owner_refs: tuple[OwnerRef, ...] = (), exported_labels: Mapping[str, str] = EMPTY_MAP,
                 exported_annotations: Mapping[str, str] = EMPTY_MAP) -> None:
        # written out: see Condition.__init__
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "api_version", api_version)
        object.__setattr__(self, "namespace", namespace)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "uid", uid)
        object.__setattr__(self, "resource_version", resource_version)
        object.__setattr__(self, "generation", generation)
        object.__setattr__(self, "creation_timestamp", creation_timestamp)
        object.__setattr__(self, "deletion_timestamp", deletion_timestamp)
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "annotations", annotations)
        object.__setattr__(self, "owner_refs", owner_refs)
        object.__setattr__(self, "exported_labels", exported_labels)
        object.__setattr__(self, "exported_annotations", exported_annotations)
        object.__setattr__(self, "key", (kind, namespace, name))

    def __eq__(self, other: object) -> bool:  # written out: see Condition.__eq__
        if type(other) is not Meta:
            return NotImplemented
        # Two Metas are compared for one object, at every update (parse._meta, the store): what an
        # update may change first; the identity, equal then, last. Projections keep no
        # resourceVersion ("" in both).
        return (self.generation == other.generation and self.uid == other.uid
                and self.deletion_timestamp == other.deletion_timestamp
                and self.creation_timestamp == other.creation_timestamp
                and self.resource_version == other.resource_version and self.name == other.name
                and self.namespace == other.namespace and self.kind == other.kind
                and self.api_version == other.api_version
                and self.labels == other.labels and self.annotations == other.annotations
                and self.owner_refs == other.owner_refs
                and self.exported_labels == other.exported_labels
                and self.exported_annotations == other.exported_annotations)

    @property
    def deleting(self) -> bool:
        return self.deletion_timestamp is not None

    @property
    def owner(self) -> tuple[str, str]:
        """(kind, name) of the owner: the controller ownerReference, else the first one."""
        refs = self.owner_refs
        found = next((r for r in refs if r.controller), None) or (refs[0] if refs else None)
        return (found.kind, found.name) if found is not None else ("", "")

    @property
    def api_version_short(self) -> str:
        """The version part of apiVersion: v1beta1, v1beta2, v1alpha1, v1."""
        return self.api_version.rsplit("/", 1)[-1]


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class Finding:
    """Something wrong with an object that its own status does not say.

    ``code`` is a bounded CamelCase identifier (it becomes a metric label); ``message`` is for
    humans only and never a label.
    """

    code: str
    message: str
    severity: str = "warning"  # warning | info | critical: how bad it is for the operator


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class Counters:
    """Replica counters with v1beta2 meanings; None means "not set", never 0."""

    desired: int | None = None  # spec.replicas
    replicas: int | None = None
    ready: int | None = None
    available: int | None = None
    up_to_date: int | None = None


# --------------------------------------------------------------------------------------------
# Projections: what the engine and the metrics need of each kind, already read from whichever
# layout (v1beta1 / v1beta1+status.v1beta2 / v1beta2) the object was stored in. `conditions` are
# the v1beta2 (metav1) conditions; `v1beta1_conditions` the old ones with severity.
# `layout` says where they came from: "v1beta2", "v1beta1+v1beta2" (CAPI 1.9/1.10), "v1beta1".
# `problems` lists fields that were present but unreadable (wrong type): the object is still
# evaluated with those fields treated as missing.
# --------------------------------------------------------------------------------------------


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class Base:
    meta: Meta
    cluster_name: str = ""
    conditions: tuple[Condition, ...] = ()
    v1beta1_conditions: tuple[Condition, ...] = ()
    layout: str = "v1beta2"
    observed_generation: int | None = None
    paused_annotation: bool = False
    problems: tuple[str, ...] = ()

    @property
    def key(self) -> ObjectKey:
        return self.meta.key

    @property
    def has_v1beta2_conditions(self) -> bool:
        return self.layout != "v1beta1"

    @property
    def reported_conditions(self) -> tuple[Condition, ...]:
        """The object's own conditions: its v1beta2 ones, else its v1beta1 ones (a Result's ``reported``)."""
        return self.conditions if self.has_v1beta2_conditions else self.v1beta1_conditions


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class Cluster(Base):
    spec_paused: bool = False
    control_plane_ref: Ref | None = None
    infrastructure_ref: Ref | None = None
    topology_class: str = ""  # spec.topology.classRef.name (v1beta1: spec.topology.class)
    topology_class_namespace: str = ""
    topology_version: str = ""
    topology_upgrade_step: str = ""  # annotation topology.internal.cluster.x-k8s.io/upgrade-step
    availability_gates: tuple[Gate, ...] | None = None  # None = field unset (ClusterClass gates apply)
    control_plane_endpoint_host: str = ""
    control_plane_endpoint_port: int | None = None
    infrastructure_provisioned: bool | None = None
    control_plane_initialized: bool | None = None
    phase: str = ""
    reported_control_plane: Counters | None = None  # status.controlPlane (v1beta2) as stored
    reported_workers: Counters | None = None


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class ClusterClass(Base):
    availability_gates: tuple[Gate, ...] | None = None


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True, eq=False)  # __eq__ written out; unhashable (mappings)
class Machine(Base):
    control_plane: bool = False  # label cluster.x-k8s.io/control-plane present
    control_plane_name: str = ""
    deployment_name: str = ""
    set_name: str = ""
    pool_name: str = ""
    version: str = ""
    provider_id: str = ""
    failure_domain: str = ""
    min_ready_seconds: int = 0
    readiness_gates: tuple[Gate, ...] = ()
    bootstrap_ref: Ref | None = None
    infrastructure_ref: Ref | None = None
    infrastructure_provisioned: bool | None = None
    bootstrap_data_secret_created: bool | None = None
    node_name: str = ""
    # kubeletVersion, kernelVersion, osImage, ...
    node_info: Mapping[str, str] = field(default_factory=_empty_map)
    # type, address, type, address...: one tuple per Machine rather than one more per address
    # (~2 MiB at 100 % of the benchmark fleet, two addresses per Machine).
    addresses: tuple[str, ...] = ()
    phase: str = ""
    certificates_expiry: float | None = None
    drain_start_time: float | None = None
    failure_reason: str = ""
    failure_message: str = ""
    # An in-place update is in progress: upstream's annotation, or its UpdateMachine hook pending.
    update_in_progress: bool = False

    def __init__(self, meta: Meta, cluster_name: str = "", conditions: tuple[Condition, ...] = (),
                 v1beta1_conditions: tuple[Condition, ...] = (), layout: str = "v1beta2",
                 observed_generation: int | None = None, paused_annotation: bool = False,
                 problems: tuple[str, ...] = (), control_plane: bool = False,
                 control_plane_name: str = "", deployment_name: str = "", set_name: str = "",
                 pool_name: str = "", version: str = "", provider_id: str = "", failure_domain: str = "",
                 min_ready_seconds: int = 0, readiness_gates: tuple[Gate, ...] = (),
                 bootstrap_ref: Ref | None = None, infrastructure_ref: Ref | None = None,
                 infrastructure_provisioned: bool | None = None,
                 bootstrap_data_secret_created: bool | None = None, node_name: str = "",
                 node_info: Mapping[str, str] = EMPTY_MAP, addresses: tuple[str, ...] = (),
                 phase: str = "", certificates_expiry: float | None = None,
                 drain_start_time: float | None = None, failure_reason: str = "", failure_message: str = "",
                 update_in_progress: bool = False) -> None:
        # written out (see Condition.__init__): every watch event of a Machine builds one
        object.__setattr__(self, "meta", meta)
        object.__setattr__(self, "cluster_name", cluster_name)
        object.__setattr__(self, "conditions", conditions)
        object.__setattr__(self, "v1beta1_conditions", v1beta1_conditions)
        object.__setattr__(self, "layout", layout)
        object.__setattr__(self, "observed_generation", observed_generation)
        object.__setattr__(self, "paused_annotation", paused_annotation)
        object.__setattr__(self, "problems", problems)
        object.__setattr__(self, "control_plane", control_plane)
        object.__setattr__(self, "control_plane_name", control_plane_name)
        object.__setattr__(self, "deployment_name", deployment_name)
        object.__setattr__(self, "set_name", set_name)
        object.__setattr__(self, "pool_name", pool_name)
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "provider_id", provider_id)
        object.__setattr__(self, "failure_domain", failure_domain)
        object.__setattr__(self, "min_ready_seconds", min_ready_seconds)
        object.__setattr__(self, "readiness_gates", readiness_gates)
        object.__setattr__(self, "bootstrap_ref", bootstrap_ref)
        object.__setattr__(self, "infrastructure_ref", infrastructure_ref)
        object.__setattr__(self, "infrastructure_provisioned", infrastructure_provisioned)
        object.__setattr__(self, "bootstrap_data_secret_created", bootstrap_data_secret_created)
        object.__setattr__(self, "node_name", node_name)
        object.__setattr__(self, "node_info", node_info)
        object.__setattr__(self, "addresses", addresses)
        object.__setattr__(self, "phase", phase)
        object.__setattr__(self, "certificates_expiry", certificates_expiry)
        object.__setattr__(self, "drain_start_time", drain_start_time)
        object.__setattr__(self, "failure_reason", failure_reason)
        object.__setattr__(self, "failure_message", failure_message)
        object.__setattr__(self, "update_in_progress", update_in_progress)

    def __eq__(self, other: object) -> bool:  # written out: see Condition.__eq__
        if type(other) is not Machine:
            return NotImplemented
        return (self.meta == other.meta and self.conditions == other.conditions
                and self.cluster_name == other.cluster_name
                and self.v1beta1_conditions == other.v1beta1_conditions
                and self.layout == other.layout and self.observed_generation == other.observed_generation
                and self.paused_annotation == other.paused_annotation and self.problems == other.problems
                and self.control_plane == other.control_plane
                and self.control_plane_name == other.control_plane_name
                and self.deployment_name == other.deployment_name and self.set_name == other.set_name
                and self.pool_name == other.pool_name and self.version == other.version
                and self.provider_id == other.provider_id and self.failure_domain == other.failure_domain
                and self.min_ready_seconds == other.min_ready_seconds
                and self.readiness_gates == other.readiness_gates
                and self.bootstrap_ref == other.bootstrap_ref
                and self.infrastructure_ref == other.infrastructure_ref
                and self.infrastructure_provisioned == other.infrastructure_provisioned
                and self.bootstrap_data_secret_created == other.bootstrap_data_secret_created
                and self.node_name == other.node_name and self.node_info == other.node_info
                and self.addresses == other.addresses and self.phase == other.phase
                and self.certificates_expiry == other.certificates_expiry
                and self.drain_start_time == other.drain_start_time
                and self.failure_reason == other.failure_reason
                and self.failure_message == other.failure_message
                and self.update_in_progress == other.update_in_progress)


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class MachineSet(Base):
    deployment_name: str = ""
    replicas: int | None = None  # spec.replicas
    version: str = ""
    bootstrap_ref: Ref | None = None  # template's config/configRef
    infrastructure_ref: Ref | None = None
    reported: Counters = Counters()  # status.*Replicas with v1beta2 meaning (None where unknown)


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class RollingUpdate:
    max_surge: int | str | None = None  # int or "N%"
    max_unavailable: int | str | None = None


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class MachineDeployment(Base):
    replicas: int | None = None
    spec_paused: bool = False
    strategy_type: str = "RollingUpdate"  # RollingUpdate | OnDelete
    rolling_update: RollingUpdate = RollingUpdate()
    min_ready_seconds: int = 0
    version: str = ""
    bootstrap_ref: Ref | None = None
    infrastructure_ref: Ref | None = None
    phase: str = ""
    reported: Counters = Counters()
    rollout_after: float | None = None  # spec.rollout.after: Machines of older MachineSets roll out


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class KubeadmControlPlane(Base):
    replicas: int | None = None
    version: str = ""
    max_surge: int | str | None = None
    # status.initialization.controlPlaneInitialized / v1beta1 status.initialized
    initialized: bool | None = None
    external_etcd: bool = False  # spec.kubeadmConfigSpec.clusterConfiguration.etcd.external set
    reported: Counters = Counters()
    # status.lastRemediation: the Machine KCP last remediated, when, and how many retries in a row
    last_remediation_machine: str = ""
    last_remediation_time: float | None = None
    last_remediation_retry_count: int | None = None
    # spec.rollout.before.certificatesExpiryDays (v1beta1: spec.rolloutBefore.certificatesExpiryDays)
    certificates_expiry_days: int | None = None


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class MachinePool(Base):
    replicas: int | None = None
    version: str = ""
    failure_domains: tuple[str, ...] = ()
    provider_id_list: tuple[str, ...] = ()
    bootstrap_ref: Ref | None = None
    infrastructure_ref: Ref | None = None
    infrastructure_provisioned: bool | None = None  # status.initialization.infrastructureProvisioned
    bootstrap_data_secret_created: bool | None = None
    node_refs: tuple[str, ...] = ()
    phase: str = ""
    reported: Counters = Counters()
    failure_reason: str = ""
    failure_message: str = ""
    v1beta1_ready_replicas: int | None = None  # Ready-Node count (deprecated.v1beta1 / v1beta1 status): phase
    # the cluster.x-k8s.io/replicas-managed-by annotation, read as upstream reads it: phase Scaling
    replicas_managed_externally: bool = False


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class InfraMachinePool(Base):
    """A provider's machine pool object (any kind a MachinePool's infrastructureRef names)."""

    provider_id_list: tuple[str, ...] = ()
    replicas: int | None = None  # status.replicas
    provisioned: bool | None = None  # status.initialization.provisioned (v1beta2 contract)
    ready: bool | None = None  # status.ready (v1beta1 contract)
    failure_reason: str = ""
    failure_message: str = ""

    @property
    def role(self) -> str:
        return "InfraMachinePool"


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class InfraObject(Base):
    """A provider's infrastructure object a Cluster or Machine references (spec.infrastructureRef):
    an InfraCluster or InfraMachine kind (AWSCluster, DockerMachine, ...), read by its contract."""

    provisioned: bool | None = None  # status.initialization.provisioned (v1beta2 contract)
    ready: bool | None = None  # status.ready (v1beta1 contract)
    failure_reason: str = ""  # v1beta1 contract: a terminal failure
    failure_message: str = ""
    has_status: bool = True

    @property
    def role(self) -> str:
        """The contract the kind follows, from its name as the contracts name them (AWSCluster is
        an InfraCluster): how ``--exclude-resource`` names it."""
        return "InfraCluster" if self.meta.kind.endswith("Cluster") else "InfraMachine"


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class BootstrapConfig(Base):
    """A bootstrap provider's config a Machine or MachinePool references (spec.bootstrap.configRef):
    KubeadmConfig and the other BootstrapConfig kinds, read by their contract."""

    data_secret_created: bool | None = None  # status.initialization.dataSecretCreated (v1beta2 contract)
    ready: bool | None = None  # status.ready (v1beta1 contract)
    data_secret_name: str = ""  # status.dataSecretName
    failure_reason: str = ""
    failure_message: str = ""
    has_status: bool = True

    @property
    def role(self) -> str:
        return "BootstrapConfig"

    @property
    def secret_created(self) -> bool | None:
        """Whether the data secret exists, by either contract; None when the status says nothing."""
        if self.data_secret_created is True or self.ready is True or self.data_secret_name:
            return True
        if self.data_secret_created is False or self.ready is False:
            return False
        return None


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class MachineHealthCheck(Base):
    unhealthy_less_than_or_equal_to: int | str | None = None
    unhealthy_in_range: str = ""
    expected_machines: int | None = None
    current_healthy: int | None = None
    remediations_allowed: int | None = None



# Kinds read as reported (no rules): their own conditions, info and metadata.


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class ClusterResourceSet(Base):
    """Applies ConfigMaps and Secrets to the Clusters its selector matches (addons.cluster.x-k8s.io)."""

    strategy: str = ""  # spec.strategy: ApplyOnce or Reconcile


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class ClusterResourceSetBinding(Base):
    """The ClusterResourceSets applied to one Cluster (``cluster_name``); it has no status."""

    bindings: int | None = None  # the number of spec.bindings entries, one per ClusterResourceSet


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class ExtensionConfig(Base):
    """A Runtime Extension server registered with Cluster API (runtime.cluster.x-k8s.io, cluster-scoped)."""

    handlers: int | None = None  # the number of status.handlers its discovery found


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class MachineDrainRule(Base):
    """How the Pods it selects are drained from the Machines it selects; it has no status."""

    behavior: str = ""  # spec.drain.behavior: Drain, Skip or WaitCompleted
    order: int | None = None  # spec.drain.order: lower orders are drained first


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class IPAddressClaim(Base):
    """A request for an IP address from an IPAM provider's pool (ipam.cluster.x-k8s.io)."""

    pool_kind: str = ""  # spec.poolRef
    pool_name: str = ""
    address_name: str = ""  # status.addressRef.name: the IPAddress allocated, once it is



# The Cluster API kinds above evaluated each on its own: no rule reads them, so a change to one
# re-evaluates only itself, not its Cluster's group.
READ_AS_REPORTED: tuple[type[Base], ...] = (
    ClusterResourceSet, ClusterResourceSetBinding, ExtensionConfig, MachineDrainRule, IPAddressClaim,
)


# ---- Open Cluster Management ---------------------------------------------------------------


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class RolloutSummary:
    """An MWRS summary block; missing ints read as 0 (the controller writes merge patches)."""

    total: int = 0
    applied: int = 0
    available: int = 0
    progressing: int = 0
    degraded: int = 0


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class PlacementSummary:
    name: str
    summary: RolloutSummary = RolloutSummary()
    # availableDecisionGroups is free text "<groups> (<applied> / <selected> clusters applied)";
    # two of its numbers, None when the text has another shape.
    decision_groups: int | None = None
    selected_clusters: int | None = None


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class PlacementRef:
    name: str
    rollout_type: str = "All"  # All | Progressive | ProgressivePerGroup
    progress_deadline: str = "None"


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class ManifestWorkReplicaSet(Base):
    placement_refs: tuple[PlacementRef, ...] = ()
    summary: RolloutSummary = RolloutSummary()
    placement_summaries: tuple[PlacementSummary, ...] = ()
    uses_legacy_applied_key: bool = False  # summary written as "Applied" (ocm v1.0.x)
    template_has_progressing_rule: bool | None = None  # None: template not readable
    spec_hash: str = ""  # of the template's workload + manifestConfigs; "" when unreadable
    status_reported: bool = True  # status.summary or status.conditions present


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class ManifestWork(Base):
    owner: str = ""  # label work.open-cluster-management.io/manifestworkreplicaset (<ns>.<name>)
    placement_name: str = ""  # label work.open-cluster-management.io/placementname
    spec_hash: str = ""  # of spec.workload + spec.manifestConfigs, comparable with the MWRS's


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class ManagedCluster(Base):
    kubernetes_version: str = ""  # status.version.kubernetes
    # The well-known cluster claims (status.clusterClaims[] by name), "" when not claimed:
    # id.k8s.io, platform.open-cluster-management.io, product.open-cluster-management.io and
    # region.open-cluster-management.io.
    cluster_id: str = ""
    platform: str = ""
    product: str = ""
    region: str = ""
    # status.capacity / status.allocatable: CPU in cores, memory in bytes; None when unset.
    capacity_cpu: float | None = None
    capacity_memory: float | None = None
    allocatable_cpu: float | None = None
    allocatable_memory: float | None = None


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class ManagedClusterAddOn(Base):
    """An add-on installed on one managed cluster; it lives in that cluster's namespace
    (``cluster_name``). Its conditions are read as reported."""


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class Placement(Base):
    number_of_selected_clusters: int | None = None
    decision_groups: int = 0


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True)
class PlacementDecision(Base):
    placement_name: str = ""


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@mypyc_attr(acyclic=True)
@dataclass(frozen=True, slots=True, eq=False)  # __eq__ written out; unhashable (mappings)
class Result:
    """What the engine computed for one object.

    ``computed`` holds every condition the engine computes for the object, whether or not its
    controller reports it too; ``reported`` are the object's own v1beta2 conditions (v1beta1 ones
    when it has no others). ``counters`` use status field names (``replicas``, ``readyReplicas``,
    ``controlPlane.desiredReplicas``, ...) and hold None for unset counters, never 0.
    """

    key: ObjectKey
    api_version: str
    uid: str
    cluster_name: str
    reported: tuple[Condition, ...] = ()
    computed: tuple[Condition, ...] = ()
    counters: Mapping[str, int | None] = field(default_factory=no_counters)
    phase: str | None = None
    findings: tuple[Finding, ...] = ()
    layout: str = "v1beta2"  # where `reported` came from; "v1beta1" means old-style conditions

    def __init__(self, key: ObjectKey, api_version: str, uid: str, cluster_name: str,
                 reported: tuple[Condition, ...] = (), computed: tuple[Condition, ...] = (),
                 counters: Mapping[str, int | None] | None = None, phase: str | None = None,
                 findings: tuple[Finding, ...] = (), layout: str = "v1beta2") -> None:
        # written out: see Condition.__init__
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "api_version", api_version)
        object.__setattr__(self, "uid", uid)
        object.__setattr__(self, "cluster_name", cluster_name)
        object.__setattr__(self, "reported", reported)
        object.__setattr__(self, "computed", computed)
        object.__setattr__(self, "counters", NO_COUNTERS if counters is None else counters)
        object.__setattr__(self, "phase", phase)
        object.__setattr__(self, "findings", findings)
        object.__setattr__(self, "layout", layout)

    def __eq__(self, other: object) -> bool:  # written out: see Condition.__eq__
        if type(other) is not Result:
            return NotImplemented
        return (self.computed == other.computed and self.reported == other.reported
                and self.counters == other.counters and self.key == other.key
                and self.api_version == other.api_version and self.uid == other.uid
                and self.cluster_name == other.cluster_name and self.phase == other.phase
                and self.findings == other.findings and self.layout == other.layout)

    @property
    def kind(self) -> str:
        return self.key[0]

    @property
    def namespace(self) -> str:
        return self.key[1]

    @property
    def name(self) -> str:
        return self.key[2]


def bare_result(obj: Base) -> Result:
    """The Result of an object the engine computes nothing for: its identity and reported conditions.

    Such a Result (``is_bare``) holds nothing the object does not: the pipeline keeps none of
    them among its previous Results and the renderer keeps None for one, making it again from
    the object when read: ~41,000 Results fewer at 100 % of the benchmark fleet (the provider
    objects). It is what ``evaluate.finish`` gives an object with nothing computed and no parse
    problem (tests/engine/test_bare_results.py checks).
    """
    meta = obj.meta
    return Result(meta.key, meta.api_version, meta.uid, obj.cluster_name, obj.reported_conditions,
                  layout=obj.layout)


def is_bare(result: Result) -> bool:
    """Whether ``result`` is ``bare_result`` of its object: nothing computed, found or counted."""
    return not result.computed and not result.findings and not result.counters and result.phase is None
