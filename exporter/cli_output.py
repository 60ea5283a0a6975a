"""Output of the ``evaluate`` command: the JSON document and the at-a-glance tree.

Owns the JSON shape of design.md (``{"objects": [...]}`` with reported and computed conditions,
counters and phase per object) and the ``clusterctl describe``-like table: one line per object,
its worst conditions first, reasons and messages shown. Text from objects reaches a terminal
only escaped (``printable``): names, reasons and messages cannot move the cursor, colour the
screen or break a line. One object that cannot be rendered is left out and named in ``errors``;
the others are printed. Owns no evaluation.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from exporter.engine.conditions import Priority, display_priority
from exporter.engine.model import (
    Base,
    Condition,
    KubeadmControlPlane,
    Machine,
    MachineDeployment,
    MachinePool,
    MachineSet,
    ObjectKey,
    Result,
)
from exporter.engine.vocabulary import (
    AVAILABLE,
    DISCOVERED,
    MACHINES_READY,
    MANAGED_CLUSTER_CONDITION_AVAILABLE,
    READY,
    REMEDIATION_ALLOWED,
)
from exporter.metrics.spec import effective_conditions as effective

# The condition that sums an object up, shown first on its line.
HEADLINE = {
    "Cluster": AVAILABLE,
    "KubeadmControlPlane": AVAILABLE,
    "MachineDeployment": AVAILABLE,
    "MachinePool": AVAILABLE,
    "MachineSet": MACHINES_READY,
    "Machine": READY,
    "MachineHealthCheck": REMEDIATION_ALLOWED,
    "ClusterResourceSet": "ResourcesApplied",
    "ExtensionConfig": DISCOVERED,
    "IPAddressClaim": READY,
    "ManifestWorkReplicaSet": READY,
    "ManifestWork": AVAILABLE,
    "ManagedCluster": MANAGED_CLUSTER_CONDITION_AVAILABLE,
    "ManagedClusterAddOn": AVAILABLE,
    "Placement": "PlacementSatisfied",
}
MESSAGE_WIDTH = 100
_T = TypeVar("_T")


def printable(text: str) -> str:
    """``text`` with every character that is not printable (control and format characters, line
    and paragraph separators, lone surrogates) written as a Python escape (``\\x1b``, ``\\u202e``)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def _escape(c: str) -> str:
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def rfc3339(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition_json(c: Condition) -> dict[str, str]:
    return {"type": c.type, "status": c.status.value, "reason": c.reason, "message": c.message}


def result_json(r: Result) -> dict[str, Any]:
    return {
        "apiVersion": r.api_version,
        "kind": r.kind,
        "namespace": r.namespace,
        "name": r.name,
        "reported": [condition_json(c) for c in r.reported],
        "computed": [condition_json(c) for c in r.computed],
        "counters": dict(r.counters),
        "phase": r.phase,
        "findings": [{"code": f.code, "severity": f.severity, "message": f.message} for f in r.findings],
    }


def render_json(results: Sequence[Result], errors: list[str] | None = None) -> str:
    # ensure_ascii (the default) writes any string, lone surrogates included, as \uXXXX escapes.
    objects = _contained(results, result_json, errors)
    return json.dumps({"objects": objects}, indent=2, sort_keys=False) + "\n"


def _contained(results: Iterable[Result], render: Callable[[Result], _T],
               errors: list[str] | None) -> list[_T]:
    """``render`` of each result; one that raises is left out and named in ``errors``."""
    out: list[_T] = []
    for r in results:
        try:
            out.append(render(r))
        except Exception as exc:
            if errors is not None:
                errors.append(f"{printable(r.kind)} {printable(r.namespace)}/{printable(r.name)}: "
                              f"cannot render: {type(exc).__name__}: {printable(str(exc))[:200]}")
    return out


def effective_conditions(r: Result) -> list[Condition]:
    """Reported v1beta2 conditions, plus computed ones the controller does not report."""
    return [e.condition for e in effective(r)]


def _worst_first(r: Result) -> list[Condition]:
    conditions = effective_conditions(r)
    headline = HEADLINE.get(r.kind)
    return sorted(
        conditions,
        key=lambda c: (c.type != headline, display_priority(c), c.type),
    )


def _line(depth_prefix: str, cont_prefix: str, r: Result) -> list[str]:
    conditions = _worst_first(r)
    shown = [c for c in conditions[:1]] + [c for c in conditions[1:] if display_priority(c) < Priority.INFO]
    p = printable
    label = f"{depth_prefix}{p(r.kind)}/{p(r.name)}"
    status = "  ".join(f"{p(c.type)}={c.status.value}({p(c.reason)})" for c in shown) or "-"
    extra = f"  phase={p(r.phase)}" if r.phase else ""
    lines = [f"{label:<60} {status}{extra}"]
    pad = cont_prefix + "  "
    for c in shown:
        if c.message and (display_priority(c) < Priority.INFO):
            for text in c.message.splitlines()[:6]:
                lines.append(f"{pad}{p(c.type)}: {p(text[:MESSAGE_WIDTH])}")
    for f in r.findings:
        lines.append(f"{pad}! {p(f.code)} ({p(f.severity)}): {p(f.message[:MESSAGE_WIDTH])}")
    return lines


def _parent_of(obj: Base, by_key: Mapping[ObjectKey, Base]) -> ObjectKey | None:
    ns = obj.meta.namespace
    if isinstance(obj, Machine):
        for kind, name in (
            ("MachineSet", obj.set_name),
            ("KubeadmControlPlane", obj.control_plane_name),
            ("MachinePool", obj.pool_name),
        ):
            if name and (kind, ns, name) in by_key:
                return (kind, ns, name)
    if isinstance(obj, MachineSet) and obj.deployment_name:
        key = ("MachineDeployment", ns, obj.deployment_name)
        if key in by_key:
            return key
    if isinstance(obj, KubeadmControlPlane | MachineDeployment | MachinePool) or obj.cluster_name:
        key = ("Cluster", ns, obj.cluster_name)
        if key in by_key and key != obj.key:
            return key
    return None


def render_table(results: Sequence[Result], projections: Iterable[Base],
                 errors: list[str] | None = None) -> str:
    """The tree view: Clusters with their descendants, then the OCM objects."""
    by_key = {p.key: p for p in projections}
    result_of = {r.key: r for r in results}
    children: dict[ObjectKey | None, list[ObjectKey]] = {}
    for r in results:
        obj = by_key.get(r.key)
        parent = _parent_of(obj, by_key) if obj is not None else None
        if parent is not None and parent not in result_of:
            parent = None
        children.setdefault(parent, []).append(r.key)
    order = {"Cluster": 0, "KubeadmControlPlane": 1, "MachineDeployment": 2, "MachinePool": 3,
             "MachineSet": 4, "Machine": 5, "MachineHealthCheck": 6}
    for keys in children.values():
        keys.sort(key=lambda k: (order.get(k[0], 9), k[1], k[2]))
    lines: list[str] = [f"{'NAME':<60} CONDITIONS (worst first)"]

    def walk(key: ObjectKey, prefix: str, last: bool, top: bool) -> None:
        branch = "" if top else ("└─" if last else "├─")
        kids = children.get(key, [])
        child_prefix = prefix if top else prefix + ("  " if last else "│ ")
        # Message lines sit under their object, keeping the tree's vertical bars intact.
        render = lambda r: _line(prefix + branch, child_prefix + ("│ " if kids else "  "), r)  # noqa: E731
        for rendered in _contained([result_of[key]], render, errors):
            lines.extend(rendered)
        for i, kid in enumerate(kids):
            walk(kid, child_prefix, i == len(kids) - 1, False)

    roots = sorted(children.get(None, []), key=lambda k: (k[0] != "Cluster", k[1], order.get(k[0], 9), k[2]))
    current_ns = None
    for root in roots:
        if root[1] != current_ns:
            current_ns = root[1]
            lines.append(f"\n# namespace {printable(current_ns) or '(cluster-scoped)'}")
        walk(root, "", True, True)
    return "\n".join(lines) + "\n"


def render_evaluation(results: Sequence[Result], projections: Iterable[Base], output: str,
                      errors: list[str] | None = None) -> str:
    """The document for ``output``; objects that cannot be rendered are named in ``errors``."""
    if output == "json":
        return render_json(results, errors)
    if output == "table":
        return render_table(results, projections, errors)
    raise ValueError(f"unknown output format {output!r}: use json or table")
