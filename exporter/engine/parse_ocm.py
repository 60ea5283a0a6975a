"""Raw Open Cluster Management objects → engine projections.

Owns how ManifestWorkReplicaSet, ManifestWork, ManagedCluster, ManagedClusterAddOn, Placement and
PlacementDecision objects are read, including the JSON quirks of the MWRS status (docs/mwrs-status.md):

- ``summary.applied`` is written ``Applied`` by ocm v1.0.x; both keys are read, ``applied`` wins;
- the controller writes status with merge patches, so summary ints that never changed are
  absent: missing reads as 0; ``desiredTotal`` and ``updated`` are never written and are ignored;
- ``availableDecisionGroups`` is free text ``"<groups> (<applied> / <selected> clusters applied)"``.

A ManifestWork counts as up to date when its spec equals the MWRS template. The engine cannot
afford to keep both specs, so both sides keep ``spec_hash``: a SHA-256 of the canonical JSON of
``workload`` + ``manifestConfigs`` (null, empty-map and empty-list values dropped, so that API
defaulting of empty fields does not make equal specs differ).

Fields present with the wrong type are recorded in ``problems`` and read as missing; an exception
in a reader is left to ``parse.project``'s error policy, the same for every kind. Owns no rules
(``mwrs.py``) and no metadata reading (``parse.py``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Final

from exporter.engine.model import (
    Base,
    ManagedCluster,
    ManagedClusterAddOn,
    ManifestWork,
    ManifestWorkReplicaSet,
    Meta,
    Placement,
    PlacementDecision,
    PlacementRef,
    PlacementSummary,
    RolloutSummary,
)
from exporter.engine.parse_fields import MAX_ID_LIST, Fields, bounded, parse_quantity, word
from exporter.engine.vocabulary import (
    APPLIED,
    PROGRESSING,
)

OWNER_LABEL: Final = "work.open-cluster-management.io/manifestworkreplicaset"
PLACEMENT_LABEL: Final = "work.open-cluster-management.io/placementname"
DECISION_PLACEMENT_LABEL: Final = "cluster.open-cluster-management.io/placement"
# Cluster claim names: the first three are reserved by OCM (cluster/v1alpha1
# ReservedClusterClaimNames), the region one is what the hubs of Red Hat ACM publish.
CLAIM_ID: Final = "id.k8s.io"
CLAIM_PLATFORM: Final = "platform.open-cluster-management.io"
CLAIM_PRODUCT: Final = "product.open-cluster-management.io"
CLAIM_REGION: Final = "region.open-cluster-management.io"
WELL_KNOWN_CLAIMS: Final = frozenset({CLAIM_ID, CLAIM_PLATFORM, CLAIM_PRODUCT, CLAIM_REGION})
MAX_CLAIM: Final = 253  # label values: a claim value may be up to 1024 characters

_DECISION_GROUPS_TEXT = re.compile(r"^\s*(\d{1,9}) \((\d{1,9}) / (\d{1,9}) clusters applied\)\s*$")
_SUMMARY_INTS: Final = ("total", "available", "progressing", "degraded")
_STRATEGY_BLOCKS: Final = {
    "All": "all",
    "Progressive": "progressive",
    "ProgressivePerGroup": "progressivePerGroup",
}
_MAX_DEPTH: Final = 64  # manifests are nested, but never this deep; deeper input is not a real object

_Reader = Callable[[Mapping[str, Any], Meta, Fields], Base]


def project_ocm(raw: Mapping[str, Any], meta: Meta, problems: list[str]) -> Base | None:
    """The projection of one OCM object, or None for a kind this module does not read."""
    reader = _READERS.get(meta.kind)
    if reader is None:
        return None
    return _with_problems(reader(raw, meta, Fields(problems)), problems)


def _with_problems(projection: Base, problems: list[str]) -> Base:
    return replace(projection, problems=tuple(problems)) if problems else projection


# ---- ManifestWorkReplicaSet ----------------------------------------------------------------


def _mwrs(raw: Mapping[str, Any], meta: Meta, f: Fields) -> ManifestWorkReplicaSet:
    status = f.mapping(raw, "status")
    summary_raw = f.mapping(status, "summary") if status is not None else None
    summary, legacy = _summary(f, summary_raw, "status.summary")
    template = f.mapping(raw, "spec.manifestWorkTemplate")
    placement_summaries, legacy_items = _placement_summaries(f, raw)
    return ManifestWorkReplicaSet(
        meta=meta,
        conditions=f.conditions(raw, "status.conditions"),
        placement_refs=_placement_refs(f, raw),
        summary=summary,
        placement_summaries=placement_summaries,
        uses_legacy_applied_key=legacy or legacy_items,
        template_has_progressing_rule=_has_progressing_rule(f, template) if template is not None else None,
        spec_hash=spec_hash(template, f) if template is not None else "",
        status_reported=summary_raw is not None or bool(f.list_(status, "conditions")),
    )


def _summary(f: Fields, raw: Mapping[str, Any] | None, path: str) -> tuple[RolloutSummary, bool]:
    """A summary block: missing ints are 0 (merge patches omit them); returns (summary, legacy key)."""
    if raw is None:
        return RolloutSummary(), False
    values = {key: _count(f, raw, key, path) for key in _SUMMARY_INTS}
    legacy = raw.get("applied") is None and raw.get(APPLIED) is not None
    values["applied"] = _count(f, raw, APPLIED if legacy else "applied", path)
    return RolloutSummary(**values), legacy


def _count(f: Fields, raw: Mapping[str, Any], key: str, path: str) -> int:
    value = raw.get(key)
    if value is None:
        return 0
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not whole or value < 0:
        f.problem(f"{path}.{key}", "non-negative integer", value)
        return 0
    return int(value)


def _placement_refs(f: Fields, raw: Mapping[str, Any]) -> tuple[PlacementRef, ...]:
    refs = []
    for item in f.list_(raw, "spec.placementRefs"):
        name = f.str_(item, "name") if isinstance(item, Mapping) else ""
        if not name:
            f.problem("spec.placementRefs[].name", "string", item)
            continue
        strategy = f.mapping(item, "rolloutStrategy") or {}
        rollout_type = f.str_(strategy, "type") or "All"
        block = f.mapping(strategy, _STRATEGY_BLOCKS.get(rollout_type, "all")) or {}
        refs.append(
            PlacementRef(
                name=name,
                rollout_type=rollout_type,
                progress_deadline=f.str_(block, "progressDeadline") or "None",
            )
        )
    return tuple(refs)


def _placement_summaries(f: Fields, raw: Mapping[str, Any]) -> tuple[tuple[PlacementSummary, ...], bool]:
    """The placementSummary items, and whether any wrote the ocm v1.0.x ``Applied`` key."""
    result, legacy = [], False
    for item in f.list_(raw, "status.placementSummary"):
        name = f.str_(item, "name") if isinstance(item, Mapping) else ""
        if not name:
            f.problem("status.placementSummary[].name", "string", item)
            continue
        text = f.str_(item, "availableDecisionGroups")
        path = f"status.placementSummary[{name}].summary"
        summary, legacy_item = _summary(f, f.mapping(item, "summary"), path)
        legacy = legacy or legacy_item
        groups, _, selected = parse_decision_groups_text(text)
        result.append(
            PlacementSummary(
                name=name,
                summary=summary,
                decision_groups=groups,
                selected_clusters=selected,
            )
        )
    return tuple(result), legacy


def parse_decision_groups_text(text: str) -> tuple[int | None, int | None, int | None]:
    """``"3 (2 / 6 clusters applied)"`` → (3, 2, 6); any other shape → (None, None, None)."""
    match = _DECISION_GROUPS_TEXT.match(text)
    if match is None:
        return None, None, None
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


def _has_progressing_rule(f: Fields, template: Mapping[str, Any]) -> bool:
    """Whether any manifestConfigs[].conditionRules[] produces the ManifestWork Progressing condition."""
    for config in f.list_(template, "manifestConfigs", MAX_ID_LIST):
        for rule in f.list_(config, "conditionRules") if isinstance(config, Mapping) else ():
            if isinstance(rule, Mapping) and rule.get("condition") == PROGRESSING:
                return True
    return False


# ---- ManifestWork, ManagedCluster, Placement, PlacementDecision -----------------------------


def _manifest_work(raw: Mapping[str, Any], meta: Meta, f: Fields) -> ManifestWork:
    spec = f.mapping(raw, "spec")
    return ManifestWork(
        meta=meta,
        cluster_name=meta.namespace,  # a ManifestWork lives in its ManagedCluster's namespace
        conditions=f.conditions(raw, "status.conditions"),
        owner=meta.labels.get(OWNER_LABEL, ""),
        placement_name=meta.labels.get(PLACEMENT_LABEL, ""),
        # The ManifestWorks of one MWRS carry the same spec: one copy of its hash.
        spec_hash=word(spec_hash(spec, f)) if spec is not None else "",
    )


def _managed_cluster(raw: Mapping[str, Any], meta: Meta, f: Fields) -> ManagedCluster:
    conditions = f.conditions(raw, "status.conditions")
    claims = _claims(raw, f)
    return ManagedCluster(
        meta=meta, cluster_name=meta.name, conditions=conditions,
        kubernetes_version=word(bounded(f.str_(raw, "status.version.kubernetes"), MAX_CLAIM)),
        cluster_id=claims.get(CLAIM_ID, ""),
        platform=claims.get(CLAIM_PLATFORM, ""),
        product=claims.get(CLAIM_PRODUCT, ""),
        region=claims.get(CLAIM_REGION, ""),
        capacity_cpu=_quantity(raw, "status.capacity", "cpu", f),
        capacity_memory=_quantity(raw, "status.capacity", "memory", f),
        allocatable_cpu=_quantity(raw, "status.allocatable", "cpu", f),
        allocatable_memory=_quantity(raw, "status.allocatable", "memory", f),
    )


def _claims(raw: Mapping[str, Any], f: Fields) -> dict[str, str]:
    """The well-known claims of status.clusterClaims (others are vendor-specific and unbounded)."""
    found: dict[str, str] = {}
    for item in f.list_(raw, "status.clusterClaims"):
        name = item.get("name") if isinstance(item, Mapping) else None
        if not isinstance(name, str):
            f.problem("status.clusterClaims[].name", "string", name)
            continue
        if name not in WELL_KNOWN_CLAIMS:
            continue
        value = item.get("value")
        if isinstance(value, str):
            # word(): the fleet's clusters share platforms, products and regions
            found.setdefault(name, word(bounded(value, MAX_CLAIM)))
        else:
            f.problem("status.clusterClaims[].value", "string", value)
    return found


def _quantity(raw: Mapping[str, Any], path: str, resource: str, f: Fields) -> float | None:
    resources = f.mapping(raw, path)
    if resources is None or resource not in resources:
        return None
    value = parse_quantity(resources[resource])
    if value is None or value < 0:
        f.problem(f"{path}.{resource}", "non-negative Kubernetes quantity", resources[resource])
        return None
    return value


def _managed_cluster_addon(raw: Mapping[str, Any], meta: Meta, f: Fields) -> ManagedClusterAddOn:
    return ManagedClusterAddOn(
        meta=meta,
        cluster_name=meta.namespace,  # an add-on lives in its ManagedCluster's namespace
        conditions=f.conditions(raw, "status.conditions"),
    )


def _placement(raw: Mapping[str, Any], meta: Meta, f: Fields) -> Placement:
    selected = f.int_(raw, "status.numberOfSelectedClusters")
    if selected is not None and selected < 0:
        f.problem("status.numberOfSelectedClusters", "non-negative integer", selected)
        selected = None
    return Placement(
        meta=meta,
        conditions=f.conditions(raw, "status.conditions"),
        number_of_selected_clusters=selected,
        decision_groups=len(f.list_(raw, "status.decisionGroups", MAX_ID_LIST)),
    )


def _placement_decision(raw: Mapping[str, Any], meta: Meta, f: Fields) -> PlacementDecision:
    placement = meta.labels.get(DECISION_PLACEMENT_LABEL, "")
    if not placement:
        placement = next((o.name for o in meta.owner_refs if o.kind == "Placement"), "")
    return PlacementDecision(meta=meta, placement_name=placement)


# ---- spec hash -------------------------------------------------------------------------------


def spec_hash(spec: Mapping[str, Any], f: Fields | None = None) -> str:
    """A stable hash of a ManifestWork spec's workload + manifestConfigs; "" when unreadable."""
    relevant = {"workload": spec.get("workload"), "manifestConfigs": spec.get("manifestConfigs")}
    canonical = _canonical(relevant, 0)
    if canonical is _UNREADABLE:
        if f is not None:
            f.problem("spec", f"object nested at most {_MAX_DEPTH} levels", spec)
        return ""
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


_UNREADABLE: Final = object()


def _canonical(value: Any, depth: int) -> Any:
    """JSON-ready, key-sorted, with null / {} / [] members dropped (API defaulting may add them)."""
    if depth > _MAX_DEPTH:
        return _UNREADABLE
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            canonical = _canonical(item, depth + 1)
            if canonical is _UNREADABLE:
                return _UNREADABLE
            if canonical is not None and canonical != {} and canonical != []:
                out[str(key)] = canonical
        return out
    if isinstance(value, list | tuple):
        items = []
        for item in value[:MAX_ID_LIST * 10]:
            canonical = _canonical(item, depth + 1)
            if canonical is _UNREADABLE:
                return _UNREADABLE
            items.append(canonical)
        return items
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)  # e.g. a YAML timestamp decoded to datetime: its text is what the API holds


_READERS: Final[Mapping[str, _Reader]] = {
    "ManifestWorkReplicaSet": _mwrs,
    "ManifestWork": _manifest_work,
    "ManagedCluster": _managed_cluster,
    "ManagedClusterAddOn": _managed_cluster_addon,
    "Placement": _placement,
    "PlacementDecision": _placement_decision,
}
# The projection of each kind holding its identity only (``parse.project``'s error policy).
BARE_OCM: Final[Mapping[str, type[Base]]] = {
    "ManifestWorkReplicaSet": ManifestWorkReplicaSet,
    "ManifestWork": ManifestWork,
    "ManagedCluster": ManagedCluster,
    "ManagedClusterAddOn": ManagedClusterAddOn,
    "Placement": Placement,
    "PlacementDecision": PlacementDecision,
}
