"""Generate docs/metrics.md from the catalog: ``python -m exporter.metrics.docs [--check] [PATH]``.

Owns the Markdown layout of the metrics reference (one table per kind, then the self-metrics).
``--check`` exits 1 when the file on disk differs from what the catalog generates, so the docs
cannot drift from the code (a test runs the same comparison). Owns no family definition.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from exporter.metrics import process, selfmetrics
from exporter.metrics.catalog import KINDS, label_names
from exporter.metrics.reasons import OTHER
from exporter.metrics.selection import LEAN, RESOURCES
from exporter.metrics.spec import FamilySpec, KindSpec

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"

INTRO = f"""# Metrics reference

Generated from `exporter/metrics/catalog.py` by `python -m exporter.metrics.docs`; do not edit by hand.

A family with `yes` in the **KSM** column has the name, labels and meaning of the kube-state-metrics
CustomResourceState configuration Cluster API ships (`capi_<kind>_*`), so existing dashboards and
rules keep working; the others (`no`) are extensions and never change the meaning of a KSM family.
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

## Choosing families and object labels

Every object family below is served by default, except the `*_labels` and `*_annotations`
families, which are served only for the resources an allowlist names. Self-metrics
(`fleet_status_exporter_*`, and the process metrics) are always served.

- `--metric-allowlist=REGEX,...` serves only the families whose **whole name** matches one of the
  comma-separated regular expressions; `--metric-denylist=REGEX,...` serves every family but
  those. They exclude each other. kube-state-metrics searches its expressions anywhere in the
  name; here each is anchored at both ends (`capi_machine_info` selects that family alone, write
  `capi_machine_.*` for all of a kind's), so a selection never picks up a family added later by
  accident. An allowlist expression that matches no family is logged as a warning at start, and
  so is a resource a labels or annotations allowlist names whose family the selection leaves out. A
  family left out is never computed nor held: it costs nothing at render time or in memory.
- `--metric-labels-allowlist` and `--metric-annotations-allowlist` take kube-state-metrics'
  syntax: `clusters=[env,team],machinedeployments=[*]`. The resources are the plural lower-case
  kinds: {", ".join(f"`{r}`" for r in RESOURCES)}; `*=[...]` names all of them. For each named
  resource, every object gets one series of `<prefix>_<kind>_labels` (`_annotations`), value 1,
  with its identity labels and one `label_<key>` (`annotation_<key>`) label per named key it
  carries. Label names are sanitised as kube-state-metrics does (characters outside
  `[a-zA-Z0-9_]` become `_`, camelCase becomes snake_case, all lower case: `app.kubernetes.io/name`
  gives `label_app_kubernetes_io_name`); keys that sanitise to the same name are numbered in
  sorted key order, `label_a_b_conflict1`, `label_a_b_conflict2`, ... `resource=[]` names nothing.
  A key is a label or annotation key or `*`; partial patterns are refused.
- Only the named keys are kept in memory; without these flags no object label beyond those the
  engine reads is kept. `*` keeps every label (or annotation) of every object of the resource:
  memory and series size then grow with whatever the objects carry (annotations such as
  `kubectl.kubernetes.io/last-applied-configuration` hold kilobytes each; values are cut at 4,096
  characters). Values are not bounded by the exporter: a label whose value is unique per object
  (a Machine's name, a provider ID) makes each object's series unique too, which costs nothing
  more here (one series per object either way) but gives Prometheus a new series every time an
  object is replaced, and a label whose value changes often turns each change into a new series
  (its old one goes stale): on thousands of objects that is thousands of new series per change,
  each an index entry in Prometheus until the block holding it expires. Measured figures are below.

### Lean selection

The object families the shipped alert rules (`alerts/*.rules.yaml`) and dashboards
(`dashboards/*.json`) read, and nothing more ({len(LEAN)} of {{families}} families; kept in
`exporter.metrics.selection.LEAN`, checked against the rule and dashboard files and, end to end,
against a real Prometheus evaluating every rule and dashboard query):

```
--metric-allowlist={",".join(LEAN)}
```

{{measured}}
"""


# Measured with python -m tests.benchmark --size-only (see docs/performance.md) and on examples/.
MEASURED = """
Measured on the example fleet (`examples/`, 145 objects) and on the benchmark fleet (`python -m
tests.benchmark --scale 100 --size-only`, 33,296 objects; see docs/performance.md), compiled
build, on one 2-core VM. Series include the ~95 self-metric series; per object is over every
object the exporter watches (kinds the lean selection leaves without a family get no series at
all). Scrape times are medians of quiet scrapes: 20 on `examples/`; on the benchmark fleet, 5 per
run, the median of three runs with their range (raw scrapes vary that much from run to run on
this VM). A gzip scrape of a quiet exporter copies members compressed beforehand.

| | `examples/`, default | `examples/`, lean | benchmark, default | benchmark, lean |
|---|---:|---:|---:|---:|
| objects with series | 145 | 117 | 33,296 | 28,756 |
| series | 8,505 | 5,816 | 1,921,899 | 1,382,888 |
| series per object | 58.7 | 40.1 | 57.7 | 41.5 |
| bytes per scrape, raw | 1.68 MB | 1.13 MB | 364.8 MB | 261.0 MB |
| bytes per scrape, gzip | 151 KB | 82 KB | 20.95 MB | 12.26 MB |
| scrape time, raw (p50) | 2.5 ms | 1.6 ms | 0.53 s (0.47-0.77) | 0.29 s (0.27-0.62) |
| scrape time, gzip (p50) | 0.5 ms | 0.8 ms | 17 ms (17-34) | 9 ms (7-14) |
| resident memory after sync, exporter and worker | | | 250 MiB (250-252) | 226 MiB (225-226) |

Series per object on the benchmark fleet, default / lean: Cluster 104.1 / 94.0,
KubeadmControlPlane 73.0 / 42.0, MachineDeployment 60.0 / 39.0, MachineSet 42.0 / 23.0,
MachinePool 51.0 / 22.0, Machine 67.9 / 53.1, ManifestWorkReplicaSet 55.2 / 45.2,
ManagedCluster 25.0 / 15.0, ManifestWork 21.0 / 0, Placement 13.0 / 0, ClusterClass 17.0 / 0.
What the lean selection keeps is mostly the condition state sets (three series per condition
type), which the rules read: `capi_machine_status_condition` alone is 47 % of its series.

With `--metric-labels-allowlist=machines=[*]` on the benchmark fleet (each Machine carries four
labels, ~330 bytes per series), `capi_machine_labels` adds 20,056 series, 6.6 MB raw and 0.8 MB
gzip per scrape, and 2 MiB of resident memory.
"""


# Prose under a kind's heading, for what its table alone does not say.
HEADINGS: dict[str, str] = {
    "InfrastructureObject":
        "Infrastructure provider objects (InfraCluster, InfraMachine, InfraMachinePool kinds)",
    "BootstrapConfig": "Bootstrap provider configs (BootstrapConfig kinds)",
}
KIND_NOTES: dict[str, str] = {
    "InfrastructureObject": """The objects the Cluster API objects reference, whatever the provider:
a Cluster's `spec.infrastructureRef` (InfraCluster: AWSCluster, DockerCluster, ...), a Machine's
(InfraMachine: AWSMachine, DockerMachine, ...) and a MachinePool's (InfraMachinePool), found through
discovery from those references in the `infrastructure.cluster.x-k8s.io` groups. The `kind` label
is the provider's kind; `capi_infrastructure_object_info` joins an object to its owner
(`owner_kind`, `owner_name`: the Machine, Cluster or MachinePool). `--exclude-resource InfraCluster`,
`InfraMachine` or `InfraMachinePool` leaves those of that role out. Under `--from-files`
every object of those groups is read except templates. Templates are not watched (a
KubeadmControlPlane's or MachineDeployment's infrastructure template has no status; the Machines
made from it reference InfraMachines of their own, which are). Conditions: the contract's `Ready` and
`Paused` (a provider's own types are summarised by its `Ready`; `evaluate` shows the same). Findings:
`InfrastructureTerminalFailure` (see the runbook).
""",
    "BootstrapConfig": """The bootstrap configs Machines and MachinePools reference
(`spec.bootstrap.configRef`: KubeadmConfig and the other bootstrap providers' kinds in the
`bootstrap.cluster.x-k8s.io` groups), found the same way; `--exclude-resource BootstrapConfig`
leaves them out. Findings: `BootstrapDataSecretNotCreated` (no data secret 30 minutes after
creation) and `BootstrapTerminalFailure` (see the runbook).
""",
    "ManagedCluster": """The fleet inventory of an OCM hub: `ocm_managedcluster_info` carries each cluster's
Kubernetes version and well-known claims, `ocm_managedcluster_status_capacity` and `_allocatable`
its CPU and memory. When a cluster was accepted by the hub, joined and became available is the
`ocm_managedcluster_status_condition_last_transition_time` of `HubAcceptedManagedCluster`,
`ManagedClusterJoined` and `ManagedClusterConditionAvailable` with `status="True"` (`time()` minus
the last one is how long each available cluster has been so).
""",
}


def _labels(spec: KindSpec, fam: FamilySpec) -> str:
    names = [f"`{label}`" for label in label_names(spec, fam)]
    if fam.free_labels:
        names.append(f"`{fam.free_labels}_<key>` per allowlisted key")
    return ", ".join(names) or "none"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(spec: KindSpec, families: Sequence[FamilySpec], seen: set[str]) -> list[str]:
    lines = ["| name | KSM | type | labels | source | description |", "|---|---|---|---|---|---|"]
    for fam in families:
        if fam.name in seen:
            continue
        seen.add(fam.name)
        cells = (f"`{fam.name}`", "yes" if fam.compat else "no", fam.type, _labels(spec, fam),
                 _cell(fam.source), _cell(fam.help))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def generate() -> str:
    families = len({f.name for spec in KINDS for f in spec.families})
    out = [INTRO.replace("{families}", str(families)).replace("{measured}", MEASURED.strip())]
    seen: set[str] = set()
    for spec in KINDS:
        if all(f.name in seen for f in spec.families):
            continue
        out.append(f"## {HEADINGS.get(spec.kind, spec.kind)}\n")
        if spec.kind in KIND_NOTES:
            out.append(KIND_NOTES[spec.kind])
        out.extend(_table(spec, spec.families, seen))
        out.append("")
    out.append("## Exporter self-metrics\n")
    self_spec = KindSpec("exporter", selfmetrics.P, (), selfmetrics.FAMILIES)
    out.extend(_table(self_spec, selfmetrics.FAMILIES, seen))
    out.append("")
    out.append(PROCESS_INTRO)
    process_spec = KindSpec("process", "process", (), process.FAMILIES)
    out.extend(_table(process_spec, process.FAMILIES, seen))
    out.append("")
    return "\n".join(out)


PROCESS_INTRO = f"""## Process metrics

The metrics every Prometheus client library gives about its process, with the values
prometheus_client's `ProcessCollector` and `PlatformCollector` read, for the exporter and for its
compression worker (a child process that builds the gzip responses). Each `process_*` series
carries `process="{process.EXPORTER}"` or `process="{process.WORKER}"`; the worker's are absent
while it does not run. The memory to size the pod for is
`sum without (process) (process_resident_memory_bytes)`. `--web.disable-exporter-metrics` leaves
these families out; the self-metrics above are always served (the shipped alerts read them).
"""


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
