"""Families every kind shares, each named in full by the kind that has it, and small extractor helpers.

Owns the condition families (the kube-state-metrics state set and transition time, plus the
reason, computed and mismatch extensions), creation and deletion timestamps, the paused
annotation, the object's labels and annotations as Prometheus labels (kube-state-metrics'
``*_labels`` / ``*_annotations``, with its label-name sanitisation and collision rule), phase
state sets, counters (reported, else computed, with the computed and mismatch extensions) and
findings. Owns no per-kind list (``capi``, ``ocm``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from exporter.engine.model import Status
from exporter.metrics.exposition import Sample
from exporter.metrics.reasons import bounded_reason
from exporter.metrics.spec import FamilySpec, Subject, family

PAUSED_ANNOTATION = "cluster.x-k8s.io/paused"
STATUSES = (Status.TRUE.value, Status.FALSE.value, Status.UNKNOWN.value)


# The samples of one (condition type, status) pair are the same for every object: built once and
# shared, so the exposition's tail table is hit by identity. Bounded: types come from the API.
_TABLE_LIMIT: Final = 4096
_statesets: dict[tuple[str, str], tuple[Sample, ...]] = {}
_transition_labels: dict[tuple[str, str], tuple[str, str]] = {}


def _stateset(type_: str, current: str) -> tuple[Sample, ...]:
    samples = tuple(((type_, status), 1.0 if status == current else 0.0) for status in STATUSES)
    if len(_statesets) >= _TABLE_LIMIT:
        _statesets.clear()
    _statesets[(type_, current)] = samples
    return samples


def _conditions(s: Subject[Any]) -> Iterable[Sample]:
    out: list[Sample] = []
    for eff in s.effective:
        c = eff.condition
        current = c.status._value_  # the plain str: Enum.value is a Python-level property
        samples = _statesets.get((c.type, current))
        out += samples if samples is not None else _stateset(c.type, current)
    return out


def _transition_times(s: Subject[Any]) -> Iterable[Sample]:
    out: list[Sample] = []
    for eff in s.effective:
        c = eff.condition
        if c.last_transition_time is not None:
            key = (c.type, c.status._value_)
            labels = _transition_labels.get(key)
            if labels is None:
                if len(_transition_labels) >= _TABLE_LIMIT:
                    _transition_labels.clear()
                labels = _transition_labels[key] = key
            out.append((labels, c.last_transition_time))
    return out


def _reasons(s: Subject[Any]) -> Iterable[Sample]:
    for eff in s.effective:
        c = eff.condition
        yield (c.type, bounded_reason(c.type, c.reason, computed=eff.computed)), 1.0


# The two flags below are emitted only when true: at seven series per condition type a Machine
# would cost ~85 series, and an absent series reads as "reported" / "no disagreement".
def _computed(s: Subject[Any]) -> Iterable[Sample]:
    for eff in s.effective:
        if eff.computed:
            yield (eff.condition.type,), 1.0


def _mismatch(s: Subject[Any]) -> Iterable[Sample]:
    for eff in s.effective:
        if eff.mismatch:
            yield (eff.condition.type,), 1.0


def _created(s: Subject[Any]) -> Iterable[Sample]:
    ts = s.obj.meta.creation_timestamp
    return [((), ts)] if ts is not None else []


def _deletion(s: Subject[Any]) -> Iterable[Sample]:
    ts = s.obj.meta.deletion_timestamp
    return [((), ts)] if ts is not None else []


def _paused_annotation(s: Subject[Any]) -> Iterable[Sample]:
    if not s.obj.paused_annotation:
        return []
    return [((s.obj.meta.annotations.get(PAUSED_ANNOTATION, "true"),), 1.0)]


def condition_families(
    kind: str, *, status: str, transition: str, reason: str, computed: str = "", mismatch: str = "",
    compat: bool = True,
) -> tuple[FamilySpec, ...]:
    """The condition families of a kind, each named in full by its caller; the computed and
    mismatch ones only where named (a kind with nothing computed has none).

    ``compat``: the names and labels are those of the Cluster API kube-state-metrics config.
    """
    out = [
        family(
            status,
            f"The current status of each condition of a {kind}: the controller's v1beta2 condition, "
            "or the exporter's computed one where the controller reports none.",
            "stateset", ("type", "status"), "status.conditions (effective)", _conditions, compat=compat,
            reads="conditions",
        ),
        family(
            transition,
            f"The lastTransitionTime of each effective condition of a {kind}, in Unix seconds.",
            "gauge", ("type", "status"), "status.conditions[].lastTransitionTime", _transition_times,
            compat=compat, reads="conditions",
        ),
        family(
            reason,
            f"The reason of each effective condition of a {kind} (bounded; unlisted reasons read Other).",
            "info", ("type", "reason"), "status.conditions[].reason", _reasons, reads="conditions",
        ),
    ]
    if computed:
        out.append(family(
            computed,
            f"1 for each {kind} condition the exporter computes because the controller reports none "
            "of that type; absent for the controller's own conditions.",
            "gauge", ("type",), "engine", _computed, reads="conditions",
        ))
    if mismatch:
        out.append(family(
            mismatch,
            f"1 for each {kind} condition whose reported status differs from the status the exporter "
            "computes for it; absent when they agree or only one side exists.",
            "gauge", ("type",), "engine vs status.conditions", _mismatch, reads="result",
        ))
    return tuple(out)


def metadata_families(
    kind: str, *, created: str, deletion: str, paused: str = "", labels: str = "", annotations: str = "",
    compat: bool = True,
) -> tuple[FamilySpec, ...]:
    """Creation and deletion time, and, where named, the paused annotation and the allowlisted
    labels and annotations (for the kinds the allowlist flags can name)."""
    out = [
        family(
            created, f"Unix creation timestamp of a {kind}.", "gauge", (),
            "metadata.creationTimestamp", _created, compat=compat, reads="object",
            fields=("meta.creation_timestamp",),
        ),
        family(
            deletion,
            f"Unix time the deletion of a {kind} was requested; absent while not deleting "
            "(time() minus it is the deletion age).",
            "gauge", (), "metadata.deletionTimestamp", _deletion, reads="object",
            fields=("meta.deletion_timestamp",),
        ),
    ]
    if paused:
        out.append(
            family(
                paused,
                f"Whether a {kind} carries the cluster.x-k8s.io/paused annotation "
                "(series only when present).",
                "info", ("paused_value",), "metadata.annotations['cluster.x-k8s.io/paused']",
                _paused_annotation, compat=True, reads="object",
                fields=("paused_annotation", "meta.annotations"),
            )
        )
    if labels:
        out.append(labels_family(labels, kind, resource_name(kind)))
    if annotations:
        out.append(annotations_family(annotations, kind, resource_name(kind)))
    return tuple(out)


def resource_name(kind: str) -> str:
    """The plural lower-case resource of a kind, as the allowlists name it (``machinedeployments``)."""
    lower = kind.lower()
    return f"{lower}es" if lower.endswith(("s", "sh", "ch", "x")) else f"{lower}s"


# kube-state-metrics' label names for Kubernetes keys: every character outside [a-zA-Z0-9_]
# becomes "_", then camelCase becomes snake_case (an underscore between a lower-case letter or a
# digit and the upper-case letter after it) and everything is lower-cased.
_INVALID_LABEL_CHAR: Final = re.compile(r"[^a-zA-Z0-9_]")
_CAMEL: Final = re.compile(r"([a-z0-9])([A-Z])")
_sanitised: dict[str, str] = {}


def sanitise_label_name(key: str) -> str:
    """The Prometheus label name (without its prefix) kube-state-metrics makes of a Kubernetes key."""
    found = _sanitised.get(key)
    if found is None:
        if len(_sanitised) >= _TABLE_LIMIT:
            _sanitised.clear()
        found = _sanitised[key] = _CAMEL.sub(r"\1_\2", _INVALID_LABEL_CHAR.sub("_", key)).lower()
    return found


def prometheus_labels(prefix: str, entries: Mapping[str, str]) -> tuple[str, ...]:
    """``entries`` as label names and values, alternating, in the order of their sorted keys.

    Names are ``<prefix>_<sanitised key>``. Keys that sanitise to the same name are told apart as
    kube-state-metrics does: in sorted key order, the first becomes ``<name>_conflict1``, the
    second ``<name>_conflict2``, and so on. A name that still repeats (a key that itself reads
    ``<name>_conflict1``) keeps its first value only: a repeated label would fail the scrape.
    """
    names: list[str] = []
    values: list[str] = []
    first: dict[str, int] = {}  # sanitised name -> position of its first key
    count: dict[str, int] = {}
    for key in sorted(entries):
        name = f"{prefix}_{sanitise_label_name(key)}"
        seen = count.get(name, 0)
        if seen:
            if seen == 1:
                names[first[name]] = f"{name}_conflict1"
            count[name] = seen + 1
            name = f"{name}_conflict{seen + 1}"
        else:
            count[name] = 1
            first[name] = len(names)
        names.append(name)
        values.append(entries[key])
    out: list[str] = []
    emitted: set[str] = set()
    for name, value in zip(names, values, strict=True):
        if name not in emitted:
            emitted.add(name)
            out += (name, value)
    return tuple(out)


def _labels(s: Subject[Any]) -> Iterable[Sample]:
    return [(prometheus_labels("label", s.obj.meta.exported_labels), 1.0)]


def _annotations(s: Subject[Any]) -> Iterable[Sample]:
    return [(prometheus_labels("annotation", s.obj.meta.exported_annotations), 1.0)]


def labels_family(name: str, kind: str, resource: str) -> FamilySpec:
    """kube-state-metrics' ``*_labels``: one series per object, value 1, its labels as
    ``label_<key>`` for the keys the allowlist names for ``resource`` (served only then)."""
    return family(
        name,
        f"The labels of a {kind} that --metric-labels-allowlist names for {resource}, as "
        "label_<key> labels (kube-state-metrics' sanitisation); served only when it names some.",
        "info", (), "metadata.labels", _labels, reads="object", fields=("meta.exported_labels",),
        free_labels="label",
    )


def annotations_family(name: str, kind: str, resource: str) -> FamilySpec:
    """kube-state-metrics' ``*_annotations``, as ``labels_family`` for annotations."""
    return family(
        name,
        f"The annotations of a {kind} that --metric-annotations-allowlist names for {resource}, "
        "as annotation_<key> labels; served only when it names some.",
        "info", (), "metadata.annotations", _annotations, reads="object",
        fields=("meta.exported_annotations",), free_labels="annotation",
    )


def phase_family(name: str, kind: str, phases: Sequence[str], *, compat: bool = True,
                 computed_only: bool = False) -> FamilySpec:
    """``computed_only``: the kind's objects report no phase of their own (the engine's is the only one)."""
    def extract(s: Subject[Any]) -> Iterable[Sample]:
        phase = s.result.phase
        if phase is None and not computed_only:
            phase = s.obj.phase
        if not phase:
            return []
        return [((p,), 1.0 if p == phase else 0.0) for p in phases]

    return family(
        name,
        f"The phase of a {kind}, one series per known phase ({', '.join(phases)}).",
        "stateset", ("phase",), "status.phase", extract, compat=compat,
        reads="result" if computed_only else "both", fields=() if computed_only else ("phase",),
    )


CounterReader = Callable[[Any], int | None]
"""Reads one counter as the object reports it (its status), None where the object reports none."""


def counter_family(
    name: str, help_text: str, key: str, *, compat: bool = False, reported: CounterReader | None = None,
    source: str = "",
) -> FamilySpec:
    """A gauge of ``Result.counters[key]``; absent while the counter is unset (never 0).

    With ``reported``, the object's own value wins where it reports one, as the controller's
    condition wins over the computed one: the engine's count is then in the ``_computed`` family.
    """
    source = source or f"status.{key}"
    if reported is None:
        def extract(s: Subject[Any]) -> Iterable[Sample]:
            value = s.result.counters.get(key)
            return [((), float(value))] if value is not None else []

        return family(name, help_text, "gauge", (), source, extract, compat=compat, reads="result")

    read = reported  # a name of its own: mypy does not carry the narrowing into the closure

    def effective(s: Subject[Any]) -> Iterable[Sample]:
        value = read(s.obj)
        if value is None:
            value = s.result.counters.get(key)
        return [((), float(value))] if value is not None else []

    return family(name, help_text, "gauge", (), source, effective, compat=compat)


def counter_check_families(
    kind: str, counters: Sequence[tuple[str, CounterReader]], *, computed: str, mismatch: str
) -> tuple[FamilySpec, FamilySpec]:
    """The engine's own value of each counter of ``counters`` and where the object reports another.

    The counter families show the reported value where there is one: these two keep the engine's
    count and a disagreement (a controller lagging behind its Machines) visible. ``counter`` is the
    status field name (``readyReplicas``, ``workers.readyReplicas``): a fixed set per kind.
    """
    keys = tuple(key for key, _ in counters)

    def engine(s: Subject[Any]) -> Iterable[Sample]:
        found = s.result.counters
        out: list[Sample] = []
        for key in keys:
            value = found.get(key)
            if value is not None:
                out.append(((key,), float(value)))
        return out

    def differs(s: Subject[Any]) -> Iterable[Sample]:
        found = s.result.counters
        out: list[Sample] = []
        for key, read in counters:
            mine, theirs = found.get(key), read(s.obj)
            if mine is not None and theirs is not None and mine != theirs:
                out.append(((key,), 1.0))
        return out

    return (
        family(
            computed,
            f"The replica counters of a {kind} as the exporter computes them from its objects, one series "
            "per counter (status field name); absent where the exporter computes none.",
            "gauge", ("counter",), "engine", engine, reads="result",
        ),
        family(
            mismatch,
            f"1 for each replica counter of a {kind} whose reported value differs from the one the "
            "exporter computes; absent when they agree or only one side exists.",
            "gauge", ("counter",), "engine vs status", differs,
        ),
    )


def field_family(
    name: str, help_text: str, source: str, read: Callable[[Any], float | None], *, compat: bool = False,
    fields: Sequence[str] = (),
) -> FamilySpec:
    """A gauge read from one projection field; absent while unset. ``fields``: what ``read`` reads."""

    def extract(s: Subject[Any]) -> Iterable[Sample]:
        value = read(s.obj)
        return [((), float(value))] if value is not None else []

    return family(name, help_text, "gauge", (), source, extract, compat=compat, reads="object", fields=fields)


def info_family(
    name: str, help_text: str, labels: Sequence[str], read: Callable[[Any], Sequence[str]], source: str,
    *, compat: bool = True, fields: Sequence[str] = (),
) -> FamilySpec:
    """One series whose labels ``read`` gives; ``fields``: what ``read`` reads."""

    def extract(s: Subject[Any]) -> Iterable[Sample]:
        return [(tuple(read(s.obj)), 1.0)]

    return family(name, help_text, "info", labels, source, extract, compat=compat, reads="object",
                  fields=fields)


def findings_family(name: str, domain: str, with_cluster: bool) -> FamilySpec:
    """Findings of any kind of one domain in one family, one series per (code, severity)."""
    labels = ("kind", "namespace", "name", *(("cluster_name",) if with_cluster else ()), "code", "severity")

    def extract(s: Subject[Any]) -> Iterable[Sample]:
        findings = s.result.findings
        if not findings:  # most objects: no Counter to make (~1 us) at each of their renders
            return []
        meta = s.obj.meta
        ident = (meta.kind, meta.namespace, meta.name, *((s.obj.cluster_name,) if with_cluster else ()))
        # Several findings may share a code (one per malformed field): their count is the value.
        counts = Counter((f.code, f.severity) for f in findings)
        return [((*ident, code, severity), float(n)) for (code, severity), n in sorted(counts.items())]

    return family(
        name,
        f"Problems the exporter found with a {domain} object that its own status does not say "
        "(contract violations, malformed fields, misconfigurations): the number of findings per code.",
        "gauge", labels, "engine findings", extract, identity=False,
        fields=("meta.kind", "meta.namespace", "meta.name", *(("cluster_name",) if with_cluster else ())),
    )


def int_or_percent(value: int | str | None) -> float | None:
    """kube-state-metrics reads "25%" as 0.25 and 1 as 1; the same here, for drop-in dashboards."""
    if value is None:
        return None
    if isinstance(value, int):
        return float(value)
    text = value.strip()
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        return None
