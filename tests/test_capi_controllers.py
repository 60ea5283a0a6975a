"""The engine against the live Cluster API controllers: the core, KubeadmControlPlane, kubeadm
bootstrap and Docker (in-memory backend) managers of ``tests/realcluster/capi`` run on a real API
server (``tests/realcluster/controllers.py``), bring up a ClusterClass-based cluster of 3 control
plane and 2 worker Machines, then scale its workers to 3 and down to 1 and upgrade its Kubernetes
version through the ClusterClass topology, delete a worker Machine by hand (it is replaced) and
finally the Cluster, while the exporter watches the same server.

Every ``SAMPLE_EVERY`` seconds the test reads the exporter's ``capi_*_status_condition_mismatch``
series, and evaluates a snapshot of the objects with the engine in-process to compare status, reason
and message of every condition both the controllers report and the engine computes. Each difference
must resolve within a propagation delay (the controllers write one object after another; the engine
reads them all at once): ``PROPAGATION`` seconds for statuses and reasons, ``MESSAGE_PROPAGATION``
for messages, the one known exception being the "is blocked because" lines of preflight checks that
live in controller memory (docs/upstream-differences.md). The test prints what it compared and every
difference it saw, with how long it lasted (``report.json`` in its temporary directory too).

A real Prometheus scrapes the exporter with the shipped rules, ``for`` scaled down (``scaled_for``):
scaling and the upgrade must raise no page, nothing may fire once the deleted Machine is replaced,
and the Cluster being deleted must not be reported not available.

Marker ``capi``: skipped unless pytest runs with ``--capi`` (``make test-capi``, which also builds
the managers once per machine: ``make capi-tools``).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.engine.evaluate import evaluate_group
from exporter.engine.grouping import group_projections
from exporter.engine.parse import project_unguarded
from tests.realcluster import build
from tests.realcluster.cluster import Obj, RealCluster, free_port
from tests.realcluster.controllers import Controllers, load_manifests
from tests.realcluster.exporter import Exporter, Sample
from tests.test_e2e_prometheus import JOB, PROMETHEUS, RULE_FILES, _get, _object, _stop, _wait

pytestmark = [pytest.mark.capi, pytest.mark.realcluster]

DATA = build.HERE / "capi"
NAMESPACE = "capi-test"
CLUSTER = "in-memory"
# The in-memory provider's upgrade pair of the test module (KUBERNETES_VERSION_UPGRADE_FROM/_TO in
# test/e2e/config/docker.yaml).
KUBERNETES_VERSION = "v1.36.4"
UPGRADED_VERSION = "v1.37.0"
CONTROL_PLANE = 3
SAMPLE_EVERY = 2.0
PROPAGATION = 10.0  # how long a status or reason difference may last, in seconds
# A KubeadmControlPlane copies its Machines' conditions into MachinesReady and Available only on its
# next reconcile, after the workload cluster's health checks: 8 s seen while the cluster comes up,
# 14-16 s while the control plane rolls out its upgrade.
MESSAGE_PROPAGATION = 20.0
PHASE_WITHIN = 420.0
STEADY = 20.0  # sampled on after each phase is done
KINDS = (
    *(("cluster.x-k8s.io/v1beta2", k) for k in (
        "Cluster", "ClusterClass", "MachineDeployment", "MachineSet", "Machine", "MachinePool",
        "MachineHealthCheck")),
    ("controlplane.cluster.x-k8s.io/v1beta2", "KubeadmControlPlane"),
)

Key = tuple[str, ...]
Alert = tuple[str, str, str, str]  # (state, alertname, severity, object) as Prometheus has it


@dataclass
class Span:
    first: float
    last: float
    values: list[Any] = field(default_factory=list)  # each distinct detail seen while it lasted
    seen: list[tuple[float, Any]] = field(default_factory=list)  # (time, detail) of every sample


@dataclass
class Differences:
    """Differences seen over samples: each lasts from the first sample it appears in to the
    first sample without it."""

    open: dict[Key, Span] = field(default_factory=dict)
    closed: list[tuple[Key, Span]] = field(default_factory=list)

    def observe(self, at: float, current: Mapping[Key, Any]) -> None:
        for key in list(self.open):
            if key not in current:
                span = self.open.pop(key)
                span.last = at
                self.closed.append((key, span))
        for key, detail in current.items():
            span = self.open.setdefault(key, Span(at, at))
            span.last = at
            span.seen.append((at, detail))
            if detail not in span.values:
                span.values.append(detail)

    def all(self) -> list[tuple[Key, Span, bool]]:
        return [(k, s, True) for k, s in self.closed] + [(k, s, False) for k, s in self.open.items()]

    def longest(self) -> float:
        return max((s.last - s.first for _, s, _ in self.all()), default=0.0)


def snapshot(cluster: RealCluster) -> list[Obj]:
    return [o for api_version, kind in KINDS for o in cluster.list(api_version, kind)]


def compare(objects: list[Obj], now: float) -> tuple[dict[Key, tuple[str, str]], set[Key]]:
    """What the engine computes against what the controllers report, for every condition type
    both have: (differences by (kind, namespace, name, type, field) as (engine, controller)),
    and the conditions compared."""
    projections = [p for o in objects if (p := project_unguarded(o)) is not None]
    differences: dict[Key, tuple[str, str]] = {}
    compared: set[Key] = set()
    for group in group_projections(projections):
        for r in evaluate_group(group, {}, now):
            reported = {c.type: c for c in r.reported}
            for c in r.computed:
                theirs = reported.get(c.type)
                if theirs is None:
                    continue
                compared.add((r.kind, r.namespace, r.name, c.type))
                for name, ours, got in (("status", c.status.value, theirs.status.value),
                                        ("reason", c.reason, theirs.reason),
                                        ("message", c.message, theirs.message)):
                    if ours != got:
                        differences[(r.kind, r.namespace, r.name, c.type, name)] = (ours, got)
    return differences, compared


def exporter_mismatches(samples: set[Sample]) -> dict[Key, str]:
    out: dict[Key, str] = {}
    for name, labels, value in samples:
        if name.startswith("capi_") and name.endswith("_status_condition_mismatch") and float(value) == 1:
            ls = dict(labels)
            out[(name, ls.get("namespace", ""), ls["name"], ls["type"])] = value
    return out


def preflight_lines_only(engine: str, controller: str) -> bool:
    """The controller's message is the engine's plus the lines of the preflight checks it ran in
    memory, which no object shows."""
    return controller.startswith(engine + " is blocked because:\n")


def unexplained_seconds(span: Span) -> float | None:
    """The longest stretch of a message difference that preflight lines do not explain (from its
    first such sample to the next sample without it); None when they explain every sample."""
    longest: float | None = None
    start: float | None = None
    for at, (ours, theirs) in [*span.seen, (span.last, ("", ""))]:
        explained = ours == theirs or preflight_lines_only(ours, theirs)
        if explained and start is not None:
            longest = max(longest or 0.0, at - start)
            start = None
        elif not explained and start is None:
            start = at
    return longest


def condition(objects: list[Obj], kind: str, name: str, type_: str) -> str | None:
    for o in objects:
        if o["kind"] == kind and o["metadata"]["name"] == name:
            for c in (o.get("status") or {}).get("conditions") or []:
                if c["type"] == type_:
                    return str(c["status"])
    return None


def settled(workers: int, version: str = KUBERNETES_VERSION) -> Callable[[list[Obj]], bool]:
    """The Cluster's control plane and workers report all their replicas (``CONTROL_PLANE`` and
    ``workers``) available and up to date, every Machine runs ``version``, and the Cluster is
    Available, its topology reconciled, and no longer scaling or rolling out."""
    def done(objects: list[Obj]) -> bool:
        clusters = [o for o in objects if o["kind"] == "Cluster" and o["metadata"]["name"] == CLUSTER]
        status = (clusters[0].get("status") or {}) if clusters else {}
        counts = ((status.get("controlPlane") or {}, CONTROL_PLANE), (status.get("workers") or {}, workers))
        machines = [o for o in objects if o["kind"] == "Machine"]
        return (all(replicas.get(f) == n for replicas, n in counts
                    for f in ("desiredReplicas", "replicas", "availableReplicas", "upToDateReplicas"))
                and len(machines) == CONTROL_PLANE + workers
                and all(m["spec"].get("version") == version for m in machines)
                and condition(objects, "Cluster", CLUSTER, "Available") == "True"
                and condition(objects, "Cluster", CLUSTER, "TopologyReconciled") == "True"
                and all(condition(objects, "Cluster", CLUSTER, t) == "False"
                        for t in ("ScalingUp", "ScalingDown", "RollingOut")))
    return done


def replaced(deleted: str, workers: int, version: str) -> Callable[[list[Obj]], bool]:
    """The Machine ``deleted`` is gone and the Cluster settled again with a replacement."""
    steady = settled(workers, version)
    return lambda objects: (steady(objects) and not any(
        o["kind"] == "Machine" and o["metadata"]["name"] == deleted for o in objects))


def gone(objects: list[Obj]) -> bool:
    """Nothing of the Cluster is left but the ClusterClass and objects whose owners are all gone:
    the controllers delete the rest themselves, and leave those (the control plane's
    MachineHealthCheck) to the garbage collector, which the test's API server does not run."""
    uids = {o["metadata"]["uid"] for o in objects}

    def left(o: Obj) -> bool:
        owners = o["metadata"].get("ownerReferences") or []
        return not owners or any(ref["uid"] in uids for ref in owners)

    return not any(o["kind"] != "ClusterClass" and left(o) for o in objects)


def worker_machine(cluster: RealCluster) -> str:
    machines = [m for m in cluster.list("cluster.x-k8s.io/v1beta2", "Machine")
                if "cluster.x-k8s.io/control-plane" not in (m["metadata"].get("labels") or {})]
    assert machines, "no worker Machine to delete"
    return str(machines[0]["metadata"]["name"])


def scale_workers(cluster: RealCluster, replicas: int) -> None:
    md = {"class": "default-worker", "name": "md-0", "replicas": replicas}
    cluster.patch("cluster.x-k8s.io/v1beta2", "Cluster", NAMESPACE, CLUSTER,
                  {"spec": {"topology": {"workers": {"machineDeployments": [md]}}}})


def upgrade(cluster: RealCluster, version: str) -> None:
    cluster.patch("cluster.x-k8s.io/v1beta2", "Cluster", NAMESPACE, CLUSTER,
                  {"spec": {"topology": {"version": version}}})


def scaled_for(rules: str) -> str:
    """The rules with every ``for`` a tenth of the shipped one (15m becomes 90s): an in-memory
    Machine starts in about 16 s (the ClusterClass's startupDuration: VM 10 s, node, etcd and API
    server 2 s each) where a real one takes a few minutes."""
    seconds = {"m": 6, "h": 360}
    scaled = re.sub(r"^(\s+for:) (\d+)([mh])$", lambda m: f"{m[1]} {int(m[2]) * seconds[m[3]]}s", rules,
                    flags=re.MULTILINE)
    assert not re.search(r"^\s+for: (?!\d+s$)", scaled, flags=re.MULTILINE), "a `for` left unscaled"
    return scaled


@contextmanager
def prometheus(workdir: Path, target: str) -> Iterator[str]:
    """A real Prometheus scraping ``target`` every second with the shipped rules, ``for`` scaled."""
    assert PROMETHEUS, "the prometheus binary is not installed (Debian package prometheus)"
    workdir.mkdir()
    rules = []
    for src in RULE_FILES:
        (workdir / src.name).write_text(scaled_for(src.read_text()))
        rules.append(str(workdir / src.name))
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"}, "rule_files": rules,
              "scrape_configs": [{"job_name": JOB, "honor_labels": True,
                                  "static_configs": [{"targets": [target]}]}]}
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
    base = f"http://127.0.0.1:{free_port()}"
    proc = subprocess.Popen(
        [PROMETHEUS, f"--config.file={workdir / 'prometheus.yml'}", f"--storage.tsdb.path={workdir / 'data'}",
         f"--web.listen-address={base.removeprefix('http://')}", "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=(workdir / "prometheus.log").open("wb"))
    try:
        def scraped() -> bool:
            assert proc.poll() is None, "prometheus exited: " + (workdir / "prometheus.log").read_text()
            query = urllib.parse.urlencode({"query": f'up{{job="{JOB}"}} == 1'})
            return bool(_get(f"{base}/api/v1/query?{query}")["data"]["result"])

        _wait("Prometheus to scrape the exporter", scraped, 30)
        yield base
    finally:
        _stop(proc)


def alerts(base: str) -> set[Alert]:
    """Every alert Prometheus has pending or firing."""
    return {(a["state"], a["labels"]["alertname"], a["labels"].get("severity", ""), _object(a["labels"]))
            for a in _get(f"{base}/api/v1/alerts")["data"]["alerts"]}


@pytest.fixture
def management(tmp_path: Path) -> Iterator[tuple[RealCluster, Controllers, Exporter, str]]:
    with (RealCluster(tmp_path / "cluster") as cluster,
          Controllers(cluster, tmp_path / "controllers") as controllers):
        kubeconfig = cluster.admin_kubeconfig(tmp_path / "exporter-kubeconfig")
        with Exporter(tmp_path / "exporter.log", "--kubeconfig", str(kubeconfig)) as exporter:
            exporter.wait_ready()
            with prometheus(tmp_path / "prometheus", f"127.0.0.1:{exporter.port}") as prom:
                yield cluster, controllers, exporter, prom


def test_the_engine_says_what_the_controllers_say_while_a_cluster_comes_up_and_scales(
        management: tuple[RealCluster, Controllers, Exporter, str], tmp_path: Path) -> None:
    cluster, controllers, exporter, prom = management
    cluster.ensure_namespace(NAMESPACE)
    for obj in load_manifests(DATA / "clusterclass-in-memory.yaml"):
        obj["metadata"]["namespace"] = NAMESPACE
        cluster.apply(obj)
    for obj in load_manifests(DATA / "cluster-in-memory.yaml", CLUSTER_NAME=CLUSTER, NAMESPACE=NAMESPACE,
                              KUBERNETES_VERSION=KUBERNETES_VERSION,
                              CONTROL_PLANE_MACHINE_COUNT=CONTROL_PLANE, WORKER_MACHINE_COUNT=2):
        cluster.apply(obj)

    started = time.monotonic()
    exported, engine = Differences(), Differences()
    compared: set[Key] = set()
    samples = 0
    phases: dict[str, float] = {}
    seen_alerts: dict[str, set[Alert]] = {}  # pending or firing at any sample of a step
    left_firing: dict[str, set[Alert]] = {}  # firing when a step ends
    spans: dict[str, tuple[float, float]] = {}  # each step's first and last sample

    def sample_until(phase: str, done: Callable[[list[Obj]], bool]) -> None:
        """Samples until ``done`` holds, then STEADY seconds more."""
        nonlocal compared, samples
        phase_started = time.monotonic()
        first = phase_started - started
        done_at: float | None = None
        while done_at is None or time.monotonic() < done_at + STEADY:
            tick = time.monotonic()
            controllers.check()
            mismatches = exporter_mismatches(exporter.samples())
            objects = snapshot(cluster)
            differences, seen = compare(objects, time.time())
            at = tick - started
            exported.observe(at, mismatches)
            engine.observe(at, differences)
            compared |= seen
            seen_alerts.setdefault(phase, set()).update(alerts(prom))
            samples += 1
            if done_at is None and done(objects):
                done_at = time.monotonic()
                phases[phase] = round(done_at - phase_started, 1)
            if done_at is None and time.monotonic() - phase_started > PHASE_WITHIN:
                raise AssertionError(f"{phase}: not done after {PHASE_WITHIN:.0f}s\n{controllers.tails()}")
            time.sleep(max(0.0, SAMPLE_EVERY - (time.monotonic() - tick)))
        left_firing[phase] = {a for a in alerts(prom) if a[0] == "firing"}
        spans[phase] = (first, time.monotonic() - started)

    sample_until("available", settled(2))
    scale_workers(cluster, 3)
    sample_until("scaled up to 3 workers", settled(3))
    scale_workers(cluster, 1)
    sample_until("scaled down to 1 worker", settled(1))
    upgrade(cluster, UPGRADED_VERSION)
    sample_until(f"upgraded to {UPGRADED_VERSION}", settled(1, UPGRADED_VERSION))
    rollouts = ["scaled up to 3 workers", "scaled down to 1 worker", f"upgraded to {UPGRADED_VERSION}"]
    machine = worker_machine(cluster)
    cluster.delete("cluster.x-k8s.io/v1beta2", "Machine", NAMESPACE, machine)
    replacing = "worker Machine deleted and replaced"
    sample_until(replacing, replaced(machine, 1, UPGRADED_VERSION))
    cluster.delete("cluster.x-k8s.io/v1beta2", "Cluster", NAMESPACE, CLUSTER)
    deleting = "Cluster deleted"
    sample_until(deleting, gone)

    kinds = sorted({k[0] for k in compared})

    def longest_in(phase: str, differences: Differences, fields: tuple[str, ...] = ()) -> float:
        """The longest difference that began during ``phase``, of ``fields`` when given."""
        start, end = spans[phase]
        return round(max((s.last - s.first for k, s, _ in differences.all()
                          if start <= s.first < end and (not fields or k[4] in fields)), default=0.0), 1)

    report = {
        "phase_seconds": phases, "samples": samples,
        "conditions_compared": len(compared),
        "kinds_compared": kinds,
        "longest_exported_mismatch_seconds": round(exported.longest(), 1),
        "longest_by_phase": {phase: {"exported": longest_in(phase, exported),
                                     "status_or_reason": longest_in(phase, engine, ("status", "reason")),
                                     "message": longest_in(phase, engine, ("message",))}
                             for phase in spans},
        "exported_mismatches": [[*k, round(s.last - s.first, 1), resolved]
                                for k, s, resolved in exported.all()],
        "engine_differences": [
            {"object": "/".join(k[:3]), "type": k[3], "field": k[4], "seconds": round(s.last - s.first, 1),
             "resolved": resolved, "engine_vs_controller": s.values}
            for k, s, resolved in engine.all()],
    }
    report["alerts"] = {phase: {"seen": sorted(map(list, seen_alerts[phase])),
                                "firing_at_the_end": sorted(map(list, left_firing[phase]))}
                        for phase in phases}
    (tmp_path / "report.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))

    assert {"Cluster", "KubeadmControlPlane", "MachineDeployment", "MachineSet", "Machine"} <= set(kinds)
    too_long = [(k, s.last - s.first) for k, s, resolved in exported.all()
                if not resolved or s.last - s.first > PROPAGATION]
    assert not too_long, f"exporter mismatches lasting over {PROPAGATION}s or unresolved: {too_long}"
    lasting = [(k, s.values, s.last - s.first) for k, s, resolved in engine.all()
               if k[4] != "message" and (not resolved or s.last - s.first > PROPAGATION)]
    assert not lasting, f"status or reason differences lasting over {PROPAGATION}s or unresolved: {lasting}"
    lasting = [(k, s.values, seconds) for k, s, resolved in engine.all()
               if k[4] == "message" and (seconds := unexplained_seconds(s)) is not None
               and (not resolved or seconds > MESSAGE_PROPAGATION)]
    assert not lasting, f"message differences lasting over {MESSAGE_PROPAGATION}s or unresolved: {lasting}"

    # The alerts about the scenario's objects; the exporter's own (FleetStatusExporterStaleData: no
    # successful watch in the unscaled 30m window of a Prometheus started with the test) are not.
    ours = {phase: {a for a in found if a[3].startswith(f"{NAMESPACE}/")}
            for phase, found in seen_alerts.items()}
    pages = {phase: found for phase in rollouts
             if (found := {a for a in ours[phase] if a[0] == "firing" and a[2] == "critical"})}
    assert not pages, f"scaling and the upgrade raised pages: {pages}"
    recovered = {a for a in left_firing[replacing] if a[3].startswith(f"{NAMESPACE}/")}
    assert not recovered, f"alerts firing once the Machine was replaced: {recovered}"
    unavailable = {a for a in ours[deleting] if a[1] == "CAPIClusterNotAvailable"}
    assert not unavailable, f"the Cluster being deleted was reported not available: {unavailable}"
