"""Which metric families are served, and which object labels and annotations they carry.

Owns the syntax and meaning of ``--metric-allowlist`` / ``--metric-denylist`` (comma-separated
regular expressions, each matched against the whole family name) and of
``--metric-labels-allowlist`` / ``--metric-annotations-allowlist`` (kube-state-metrics' syntax,
``clusters=[env,team],machines=[*]``, with the plural lower-case resource names of the kinds the
exporter watches), and ``Selection``, what they select: the object families the renderer is
built with (a family not selected is never extracted nor stored), and the labels and annotations
the projection keeps (``MetadataSelection``). Self-metrics are never filtered. Errors are
``ValueError`` naming the flag and the value; ``exporter.config`` turns them into exit status 2.
Owns no rendering and no parsing of objects.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from exporter.engine.parse import ALL_KEYS, NO_SELECTION, MetadataSelection
from exporter.metrics import process, selfmetrics
from exporter.metrics.catalog import KINDS, object_families
from exporter.metrics.common import resource_name
from exporter.metrics.spec import FamilySpec, is_lean

KeyAllowlist = tuple[tuple[str, tuple[str, ...]], ...]
"""(kind, keys) pairs, kinds in catalog order; keys may be ``("*",)``: every key."""

# Resource name -> kind, for the kinds whose objects have *_labels / *_annotations families.
RESOURCES: Final[Mapping[str, str]] = MappingProxyType({
    resource_name(spec.kind): spec.kind for spec in KINDS
    if any(f.free_labels for f in spec.families)
})
_FREE: Final = {f.name: f.free_labels for f in object_families() if f.free_labels}
# The kind of each *_labels / *_annotations family.
_FREE_KIND: Final = {f.name: spec.kind for spec in KINDS for f in spec.families if f.free_labels}
_ENTRY: Final = re.compile(r"\s*([^=\[\],\s]+)\s*=\s*\[([^\[\]]*)\]\s*(,|$)")


def parse_patterns(flag: str, value: str) -> tuple[str, ...]:
    """The regular expressions of a family allow- or denylist; each must compile."""
    patterns = tuple(dict.fromkeys(p.strip() for p in value.split(",") if p.strip()))
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{flag} {value!r}: {pattern!r} is not a valid regular expression ({exc}); "
                             "expected comma-separated regular expressions over family names, "
                             "e.g. capi_cluster_.*,capi_machine_status_condition") from None
    return patterns


def parse_key_allowlist(flag: str, value: str) -> KeyAllowlist:
    """``resource=[key,...],...`` as (kind, keys) pairs; ``*=[...]`` names every resource."""
    what = "label" if "labels" in flag else "annotation"
    expected = (f"expected resource=[{what}-key,...] entries separated by commas, e.g. "
                f"clusters=[env,team],machinedeployments=[*]; resources: {', '.join(RESOURCES)}")
    by_kind: dict[str, dict[str, None]] = {}
    pos, text = 0, value.strip()
    while pos < len(text):
        match = _ENTRY.match(text, pos)
        if match is None:
            raise ValueError(f"{flag} {value!r}: malformed at {text[pos:pos + 30]!r}; {expected}")
        resource, keys_text, sep = match.group(1), match.group(2), match.group(3)
        pos = match.end()
        if sep == "," and pos == len(text):
            raise ValueError(f"{flag} {value!r}: trailing comma; {expected}")
        keys = [k.strip() for k in keys_text.split(",")] if keys_text.strip() else []
        for key in keys:
            if not key:
                raise ValueError(f"{flag} {value!r}: empty key in {resource}=[{keys_text}]; {expected}")
            if "*" in key and key != ALL_KEYS:
                raise ValueError(f"{flag} {value!r}: {key!r}: a key is a {what} key or * (every key), "
                                 "not a pattern")
        if resource == "*":
            kinds = list(RESOURCES.values())
        elif resource in RESOURCES:
            kinds = [RESOURCES[resource]]
        else:
            raise ValueError(f"{flag} {value!r}: unknown resource {resource!r}; expected one of "
                             f"{', '.join(RESOURCES)} or *")
        for kind in kinds:
            by_kind.setdefault(kind, {}).update(dict.fromkeys(keys))
    order = list(RESOURCES.values())
    return tuple(
        (kind, (ALL_KEYS,) if ALL_KEYS in keys else tuple(keys))
        for kind, keys in sorted(by_kind.items(), key=lambda item: order.index(item[0]))
        if keys  # resource=[] names no key: nothing to serve, as in kube-state-metrics
    )


def describe(allowlist: KeyAllowlist) -> str:
    """``allowlist`` in the flag's syntax (``clusters=[env,team]``)."""
    return ",".join(f"{resource_name(kind)}=[{','.join(keys)}]" for kind, keys in allowlist)


@dataclass(frozen=True, slots=True)
class Selection:
    """What the four flags select; the default serves every family but ``*_labels`` / ``*_annotations``."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    labels: KeyAllowlist = ()
    annotations: KeyAllowlist = ()

    def __post_init__(self) -> None:
        if self.allow and self.deny:
            raise ValueError(f"--metric-allowlist {','.join(self.allow)!r} and --metric-denylist "
                             f"{','.join(self.deny)!r}: they exclude each other; give one of them")

    def selects(self, name: str) -> bool:
        """Whether the family ``name`` passes the allow- or denylist (the key allowlists aside)."""
        if self.allow:
            return any(re.fullmatch(p, name) for p in self.allow)
        return not any(re.fullmatch(p, name) for p in self.deny)

    def families(self) -> tuple[FamilySpec, ...]:
        """The object families to render, in catalog order."""
        named = {"label": {k for k, _ in self.labels}, "annotation": {k for k, _ in self.annotations}}
        return tuple(
            f for f in object_families()
            if self.selects(f.name) and (not f.free_labels or _FREE_KIND[f.name] in named[f.free_labels])
        )

    def metadata(self, families: Iterable[FamilySpec] | None = None) -> MetadataSelection:
        """The labels and annotations projections keep: only for the kinds whose family is served."""
        served = {f.name for f in (self.families() if families is None else families) if f.free_labels}
        kinds: dict[str, set[str]] = {"label": set(), "annotation": set()}
        for name in served:
            kinds[_FREE[name]].add(_FREE_KIND[name])
        labels = {k: frozenset(keys) for k, keys in self.labels if k in kinds["label"]}
        annotations = {k: frozenset(keys) for k, keys in self.annotations if k in kinds["annotation"]}
        if not labels and not annotations:
            return NO_SELECTION
        return MetadataSelection(MappingProxyType(labels), MappingProxyType(annotations))

    def unserved(self) -> list[tuple[str, str, str]]:
        """(flag, resource, family) for each resource a key allowlist names whose family the
        allow- or denylist leaves out: its labels would be asked for and never served."""
        out: list[tuple[str, str, str]] = []
        for flag, allowlist, free in (("--metric-labels-allowlist", self.labels, "labels"),
                                      ("--metric-annotations-allowlist", self.annotations, "annotations")):
            for kind, _ in allowlist:
                name = next(n for n, k in _FREE_KIND.items() if k == kind and n.endswith(f"_{free}"))
                if not self.selects(name):
                    out.append((flag, resource_name(kind), name))
        return out

    def unmatched(self) -> list[str]:
        """Allowlist expressions that match no family (self-metrics included): likely typos."""
        names = [f.name for f in (*object_families(), *selfmetrics.FAMILIES, *process.FAMILIES)]
        return [p for p in self.allow if not any(re.fullmatch(p, n) for n in names)]


DEFAULT: Final = Selection()

# The object families the shipped alert rules (alerts/*.rules.yaml) and dashboards
# (dashboards/*.json) read, nothing more, in catalog order (each marked ``lean`` where it is declared):
# ``--metric-allowlist`` with ``",".join(LEAN)`` keeps every rule and panel working
# (tests/test_lean_selection.py checks both against the files and against a real Prometheus).
# docs/metrics.md prints the value.
LEAN: Final[tuple[str, ...]] = tuple(
    f.name for f in object_families() if is_lean(f.name)
)
