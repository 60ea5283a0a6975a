"""Generate docs/metrics.md from the catalog: ``python -m exporter.metrics.docs [--check] [PATH]``.

Owns the Markdown layout of the metrics reference (one table per kind, then the self-metrics).
``--check`` exits 1 when the file on disk differs from what the catalog generates, so the docs
cannot drift from the code (a test runs the same comparison). Owns no family definition.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from exporter.metrics import selfmetrics
from exporter.metrics.catalog import KINDS, label_names
from exporter.metrics.reasons import OTHER
from exporter.metrics.spec import FamilySpec, KindSpec

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"

INTRO = f"""# Metrics reference

Generated from `exporter/metrics/catalog.py` by `python -m exporter.metrics.docs`; do not edit by hand.

Families marked **KSM** have the name, labels and meaning of the kube-state-metrics
CustomResourceState configuration Cluster API ships (`capi_<kind>_*`), so existing dashboards and
rules keep working; the others are extensions and never change the meaning of a KSM family.
Coming from that configuration: [migrating-from-kube-state-metrics.md](migrating-from-kube-state-metrics.md)
says, family by family, what maps one to one, what differs and what to change in rules.
Type `stateset` and `info` families are exposed as gauges (text format 0.0.4): a state set has one
series per state with value 1 on the current one; an info family has value 1.

Conventions:

- `*_status_condition` holds the **effective** condition of each type: the controller's v1beta2
  condition when it reports one, else the one the exporter computes (for clusters still on v1beta1,
  for MachinePools, and for the ManifestWorkReplicaSet `Progressing` and `Ready` conditions).
  `*_status_condition_computed` says which is which, `*_status_condition_mismatch` flags types where
  the reported and computed statuses disagree, `*_status_condition_reason` gives the reason through
  a fixed allow-list per condition type (anything else reads `{OTHER}`). Messages are never labels.
- Replica counters follow the same rule: the value the controller reports (`status.readyReplicas`,
  `status.workers.readyReplicas`, ... with v1beta2 meanings), else the one the exporter computes
  from the objects (for clusters still on v1beta1, whose `readyReplicas` counts Ready Nodes, and
  for counters a controller has not written). `*_status_replicas_computed{{counter}}` gives the
  exporter's own count of each counter, `*_status_replicas_mismatch{{counter}}` flags counters where
  it differs from the reported one (a controller lagging behind its Machines).
- Counters that are unset are absent, never 0 (kube-state-metrics writes 0 for some of them).
- Timestamps are Unix seconds; ages are `time() - <timestamp>` in PromQL.
- Deleted objects disappear from the next scrape.
"""


def _labels(spec: KindSpec, fam: FamilySpec) -> str:
    return ", ".join(f"`{label}`" for label in label_names(spec, fam)) or "none"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(spec: KindSpec, families: Sequence[FamilySpec], seen: set[str]) -> list[str]:
    lines = ["| name | type | labels | source | description |", "|---|---|---|---|---|"]
    for fam in families:
        if fam.name in seen:
            continue
        seen.add(fam.name)
        mark = " **KSM**" if fam.compat else ""
        cells = (f"`{fam.name}`{mark}", fam.type, _labels(spec, fam), _cell(fam.source), _cell(fam.help))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def generate() -> str:
    out = [INTRO]
    seen: set[str] = set()
    for spec in KINDS:
        if all(f.name in seen for f in spec.families):
            continue
        infra = spec.kind == "InfraMachinePool"
        out.append(f"## {'Provider machine pools (InfraMachinePool kinds)' if infra else spec.kind}\n")
        out.extend(_table(spec, spec.families, seen))
        out.append("")
    out.append("## Exporter self-metrics\n")
    self_spec = KindSpec("exporter", selfmetrics.P, (), selfmetrics.FAMILIES)
    out.extend(_table(self_spec, selfmetrics.FAMILIES, seen))
    out.append("")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    paths = [a for a in args if a != "--check"]
    path = Path(paths[0]) if paths else DEFAULT_PATH
    text = generate()
    if check:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print(f"{path} is out of date: run python -m exporter.metrics.docs", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
