"""The exporter's own metrics (``fleet_status_exporter_*``): declarations and scrape-time rendering.

Owns the self-metric families (declared as data next to the object catalog, documented with it),
``ResourceStats`` (what a source reports per watched resource: list/watch results, events,
relists, objects, invalid objects, sync state, whether it may be read) and ``ExporterStats``
(scrapes, evaluations, contained errors). These few series are rendered fresh at every scrape.
Their labels are bounded: at most ``MAX_RESOURCES`` resource values (the resources with the most
objects keep their name, the rest are summed into ``resource="other"``), so manifests with
invented kinds cannot multiply the series. Owns no source: a source, or an adapter in the
composition root, turns its own counters into ``ResourceStats``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from exporter.buildinfo import BuildInfo, current
from exporter.metrics.exposition import Sample, header, sample_lines
from exporter.metrics.spec import FamilySpec, MetricType, family

P = "fleet_status_exporter"
MAX_RESOURCES: Final = 64  # resource label values, "other" included
OTHER: Final = "other"
# Where a failure was contained (errors_total{stage}): one object's reading (kept with its
# identity only), one evaluation group, one object's rendering, one background task (restarted).
STAGES: Final = ("parse", "evaluate", "render", "task")
BUILD_LABELS: Final = ("version", "revision", "branch", "build_date", "python_version", "implementation")


@dataclass(slots=True)
class ResourceStats:
    """One watched resource (a kind) as its source reports it."""

    resource: str
    synced: bool = False
    lists: Mapping[str, int] = field(default_factory=dict)  # result (success|error) -> count
    watches: Mapping[str, int] = field(default_factory=dict)
    events: Mapping[str, int] = field(default_factory=dict)  # event type -> count
    relists: Mapping[str, int] = field(default_factory=dict)  # cause (expired|error|changed) -> count
    objects: int | None = None
    invalid_objects: int = 0
    last_event_time: float | None = None
    unreadable: str | None = None  # forbidden | not_found: its list or watch answers 403 / 404; not_served
    served: bool = True  # False: a referenced provider kind the API server does not serve (not watched)


@dataclass(slots=True)
class ExporterStats:
    """Mutable counters the server and the evaluation loop update (event loop thread only)."""

    last_scrape_duration: float | None = None
    last_scrape_bytes: int | None = None
    last_evaluation_duration: float | None = None
    evaluations: int = 0
    evaluated_groups: int = 0
    shard: int = 0
    total_shards: int = 1
    errors: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STAGES, 0))  # stage -> failures
    build: BuildInfo = field(default_factory=current)


def _none(_: object) -> Iterable[Sample]:
    return ()


def _decl(name: str, help_text: str, type_: MetricType, labels: tuple[str, ...] = ()) -> FamilySpec:
    return family(name, help_text, type_, labels, "exporter", _none, identity=False)


BUILD_INFO: Final = _decl(
    "fleet_status_exporter_build_info",
    "The exporter's version, the revision and branch it was built from, when, the Python it runs on, "
    "and whether its engine and metrics run compiled (mypyc) or as pure Python.", "info", BUILD_LABELS,
)
SCRAPE_DURATION: Final = _decl(
    "fleet_status_exporter_scrape_duration_seconds",
    "How long the previous unfiltered /metrics scrape took to build its body.", "gauge",
)
SCRAPE_BYTES: Final = _decl(
    "fleet_status_exporter_scrape_response_bytes",
    "The uncompressed size of the previous unfiltered /metrics response.", "gauge",
)
RESOURCE_SYNCED: Final = _decl(
    "fleet_status_exporter_resource_synced",
    "1 while a resource's data is current: its first list has completed and it has not failed to "
    "reach the API server (connection errors, 401, 5xx, 429) for longer than 60s; 0 otherwise.",
    "gauge", ("resource",),
)
RESOURCE_UNREADABLE: Final = _decl(
    "fleet_status_exporter_resource_unreadable",
    "1 while the exporter may not read a resource (in some watched namespace): its list or watch "
    "answers 403 (reason forbidden: RBAC) or 404 (not_found), or it is a provider kind some object "
    "references that the API server does not serve (not_served, resource <Kind>.<group>); retried, "
    "not held against readiness.", "gauge", ("resource", "reason"),
)
LISTS: Final = _decl(
    "fleet_status_exporter_list_total", "List requests per resource and result (success|error).",
    "counter", ("resource", "result"),
)
WATCHES: Final = _decl(
    "fleet_status_exporter_watch_total", "Watch requests per resource and result.", "counter",
    ("resource", "result"),
)
EVENTS: Final = _decl(
    "fleet_status_exporter_events_total", "Watch events received per resource and type.", "counter",
    ("resource", "type"),
)
RELISTS: Final = _decl(
    "fleet_status_exporter_relists_total",
    "Relists of a resource by cause: expired (410 Gone), error, changed (files).", "counter",
    ("resource", "cause"),
)
OBJECTS: Final = _decl(
    "fleet_status_exporter_objects", "Objects of a resource held by the exporter.", "gauge", ("resource",),
)
INVALID_OBJECTS: Final = _decl(
    "fleet_status_exporter_invalid_objects",
    "Objects of a resource present but unreadable (no identity, wrong shape), left out of the "
    "metrics until they are read fine; each is logged once.", "gauge", ("resource",),
)
LAST_EVENT: Final = _decl(
    "fleet_status_exporter_last_event_timestamp_seconds",
    "When the last completed list, watch event or bookmark of a resource arrived (Unix seconds). Not "
    "the age of its data: the API server sends no bookmark on a resource nobody writes, so this stays "
    "old while the watch is current.", "gauge", ("resource",),
)
ERRORS: Final = _decl(
    "fleet_status_exporter_errors_total",
    "Failures contained to what caused them, by stage: an object read with its identity only because "
    "reading it raised (parse: a bug, apart from invalid_objects), an evaluation group (evaluate) or an "
    "object (render) left out of the metrics, or a background task restarted (task); each is logged "
    "with its name.", "counter", ("stage",),
)
EVALUATION_DURATION: Final = _decl(
    "fleet_status_exporter_evaluation_duration_seconds", "How long the last evaluation pass took.", "gauge",
)
EVALUATIONS: Final = _decl("fleet_status_exporter_evaluations_total", "Evaluation passes run.", "counter")
EVALUATED_GROUPS: Final = _decl(
    "fleet_status_exporter_evaluated_groups_total",
    "Evaluation groups (a Cluster with its objects, an MWRS with its works) evaluated.", "counter",
)
RENDERED_OBJECTS: Final = _decl(
    "fleet_status_exporter_rendered_objects_total",
    "Objects whose exposition lines were rendered again after a change.", "counter",
)
CACHED_OBJECTS: Final = _decl(
    "fleet_status_exporter_cached_objects", "Objects whose rendered lines the exporter holds.", "gauge",
)
SHARD_ORDINAL: Final = _decl(
    "fleet_status_exporter_shard_ordinal", "The shard this process serves (0-based).", "gauge",
)
TOTAL_SHARDS: Final = _decl(
    "fleet_status_exporter_total_shards", "The number of shards the objects are divided into.", "gauge",
)
FAMILIES: tuple[FamilySpec, ...] = (
    BUILD_INFO, SCRAPE_DURATION, SCRAPE_BYTES, RESOURCE_SYNCED, RESOURCE_UNREADABLE, LISTS, WATCHES,
    EVENTS, RELISTS, OBJECTS, INVALID_OBJECTS, LAST_EVENT, ERRORS, EVALUATION_DURATION, EVALUATIONS,
    EVALUATED_GROUPS, RENDERED_OBJECTS, CACHED_OBJECTS, SHARD_ORDINAL, TOTAL_SHARDS,
)
_HEADERS = {f.name: header(f.name, f.help, f.exposition_type) for f in FAMILIES}
_LABELS = {f.name: f.labels for f in FAMILIES}


def render(
    stats: ExporterStats,
    resources: Iterable[ResourceStats],
    *,
    rendered_objects: int,
    cached_objects: int,
    names: Collection[str] | None = None,
) -> bytes:
    """The self-metrics block of one scrape (only the families in ``names`` when it is given)."""
    res = bounded(resources)
    samples: dict[FamilySpec, list[Sample]] = {
        BUILD_INFO: [(build_labels(stats.build), 1.0)],
        SCRAPE_DURATION: _opt(stats.last_scrape_duration),
        SCRAPE_BYTES: _opt(stats.last_scrape_bytes),
        RESOURCE_SYNCED: [((r.resource,), float(r.synced)) for r in res if r.served],
        RESOURCE_UNREADABLE: [((r.resource, r.unreadable), 1.0) for r in res if r.unreadable],
        LISTS: _by(res, lambda r: r.lists),
        WATCHES: _by(res, lambda r: r.watches),
        EVENTS: _by(res, lambda r: r.events),
        RELISTS: _by(res, lambda r: r.relists),
        OBJECTS: [((r.resource,), float(r.objects)) for r in res if r.objects is not None],
        INVALID_OBJECTS: [((r.resource,), float(r.invalid_objects)) for r in res if r.served],
        LAST_EVENT: [
            ((r.resource,), r.last_event_time) for r in res if r.last_event_time is not None
        ],
        ERRORS: [((stage,), float(n)) for stage, n in sorted(stats.errors.items())],
        EVALUATION_DURATION: _opt(stats.last_evaluation_duration),
        EVALUATIONS: [((), float(stats.evaluations))],
        EVALUATED_GROUPS: [((), float(stats.evaluated_groups))],
        RENDERED_OBJECTS: [((), float(rendered_objects))],
        CACHED_OBJECTS: [((), float(cached_objects))],
        SHARD_ORDINAL: [((), float(stats.shard))],
        TOTAL_SHARDS: [((), float(stats.total_shards))],
    }
    chunks: list[bytes] = []
    for fam, items in samples.items():
        name = fam.name
        if items and (names is None or name in names):
            chunks.append(_HEADERS[name])
            chunks.append(sample_lines(name, "", _LABELS[name], items).encode())
    return b"".join(chunks)


def build_labels(build: BuildInfo) -> tuple[str, ...]:
    return (build.version, build.revision, build.branch, build.build_date, build.python_version,
            build.implementation)


def bounded(resources: Iterable[ResourceStats], limit: int = MAX_RESOURCES) -> list[ResourceStats]:
    """At most ``limit`` resources, sorted by name: beyond that, those with the fewest objects
    are summed into one named ``other``."""
    res = list(resources)
    if len(res) <= limit:
        return sorted(res, key=lambda r: r.resource)
    res.sort(key=lambda r: (-(r.objects or 0), r.resource))
    kept, rest = res[:limit - 1], res[limit - 1:]
    other = ResourceStats(
        resource=OTHER, synced=all(r.synced for r in rest),
        lists=_sum(r.lists for r in rest), watches=_sum(r.watches for r in rest),
        events=_sum(r.events for r in rest), relists=_sum(r.relists for r in rest),
        objects=sum(r.objects or 0 for r in rest) if any(r.objects is not None for r in rest) else None,
        invalid_objects=sum(r.invalid_objects for r in rest),
        last_event_time=max((r.last_event_time for r in rest if r.last_event_time is not None), default=None),
        unreadable=min((r.unreadable for r in rest if r.unreadable), default=None),
    )
    return sorted([*kept, other], key=lambda r: r.resource)


def _sum(maps: Iterable[Mapping[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for m in maps:
        for key, n in m.items():
            out[key] = out.get(key, 0) + n
    return out


def _opt(value: float | None) -> list[Sample]:
    return [((), float(value))] if value is not None else []


def _by(res: Iterable[ResourceStats], read: Callable[[ResourceStats], Mapping[str, int]]) -> list[Sample]:
    return [((r.resource, key), float(n)) for r in res for key, n in sorted(read(r).items())]
