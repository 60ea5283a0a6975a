"""The engine against the live Cluster API controllers: the core, KubeadmControlPlane, kubeadm
bootstrap and Docker (in-memory backend) managers run on a real API server
(``tests/realcluster/controllers.py``), bring up a ClusterClass-based cluster of 3 control plane and
2 worker Machines, then scale its workers to 3, make one of them unhealthy (its Node not Ready) for
its MachineHealthCheck to remediate, scale down to 1, upgrade its Kubernetes version through the
ClusterClass topology, delete a worker Machine by hand (it is replaced) and finally the Cluster,
while the exporter watches the same server. The scenario runs once per era (``RELEASES``): Cluster
API v1.14 (``tests/realcluster/capi``, v1beta2 storage) and v1.10 (``tests/realcluster/capi110``,
v1beta1 storage with the v1beta2 conditions under ``status.v1beta2``).

Every ``SAMPLE_EVERY`` seconds the test reads the exporter's ``capi_*_status_condition_mismatch``
series, and evaluates a snapshot of the objects with the engine in-process to compare status, reason
and message of every condition both the controllers report and the engine computes. Each difference
must resolve within a propagation delay (the controllers write one object after another; the engine
reads them all at once): ``PROPAGATION`` seconds for statuses and reasons, ``MESSAGE_PROPAGATION``
for messages, the one known exception being the "is blocked because" lines of preflight checks that
live in controller memory (docs/upstream-differences.md). The test prints what it compared and every
difference it saw, with how long it lasted (``report.json`` in its temporary directory too).

A real Prometheus scrapes the exporter with the shipped rules, ``for`` scaled down (``scaled_for``):
scaling and the upgrade must raise no page, the unhealthy Machine shows as not Ready (pending) and
the remediation raises no alert, nothing may fire once a Machine is replaced, and the Cluster being
deleted must not be reported not available.

Marker ``capi``: skipped unless pytest runs with ``--capi`` (``make test-capi``, which also builds
the managers once per machine: ``make capi-tools``).
"""

from __future__ import annotations

import base64
import json
import re
import ssl
import subprocess
import time
import urllib.parse
import urllib.request
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

NAMESPACE = "capi-test"
CLUSTER = "in-memory"
CONTROL_PLANE = 3
# The worker MachineHealthCheck's timeout for a Node not Ready once the remediation step sets it: the
# ClusterClass's is 300 s; the scenario's time runs about ten times faster (``scaled_for``), and a
# thirtieth keeps the step short.
UNHEALTHY_TIMEOUT = 10


@dataclass(frozen=True)
class Release:
    """A Cluster API release whose managers ``tests/realcluster/<pins>/go.mod`` pins, with the
    in-memory templates of its test module in the same folder."""

    name: str
    pins: str
    group_version: str  # cluster.x-k8s.io/<version>, the version the release stores
    # The in-memory provider's upgrade pair of the release's test module
    # (KUBERNETES_VERSION_UPGRADE_FROM/_TO in test/e2e/config/docker.yaml).
    version: str
    upgraded: str

    @property
    def api(self) -> str:
        return f"cluster.x-k8s.io/{self.group_version}"

    @property
    def data(self) -> Path:
        return build.HERE / self.pins

    @property
    def kinds(self) -> tuple[tuple[str, str], ...]:
        return (*((self.api, k) for k in ("Cluster", "ClusterClass", "MachineDeployment", "MachineSet",
                                           "Machine", "MachinePool", "MachineHealthCheck")),
                (f"controlplane.cluster.x-k8s.io/{self.group_version}", "KubeadmControlPlane"))

    def status(self, obj: Obj) -> dict[str, Any]:
        """Where the object's v1beta2 status lives: ``status.v1beta2`` in v1beta1 storage."""
        status = obj.get("status") or {}
        return dict((status.get("v1beta2") or {}) if self.group_version == "v1beta1" else status)

    def health_check(self, timeout: int) -> dict[str, Any]:
        """A MachineDeployment topology's health check: a Node not Ready for ``timeout`` seconds."""
        if self.group_version == "v1beta1":
            return {"machineHealthCheck": {"enable": True, "unhealthyConditions": [
                {"type": "Ready", "status": s, "timeout": f"{timeout}s"} for s in ("False", "Unknown")]}}
        return {"healthCheck": {"enabled": True, "checks": {"unhealthyNodeConditions": [
            {"type": "Ready", "status": s, "timeoutSeconds": timeout} for s in ("False", "Unknown")]}}}


RELEASES = (
    Release("v1.14.2", "capi", "v1beta2", "v1.36.4", "v1.37.0"),
    # v1beta1 storage, the v1beta2 conditions under status.v1beta2; its workload versions are those
    # of its test module's e2e configuration (KubeadmControlPlane v1.10 supports up to v1.33).
    Release("v1.10.6", "capi110", "v1beta1", "v1.32.2", "v1.33.0"),
)
SAMPLE_EVERY = 2.0
PROPAGATION = 10.0  # how long a status or reason difference may last, in seconds
# A KubeadmControlPlane copies its Machines' conditions into MachinesReady and Available only on its
# next reconcile, after the workload cluster's health checks: 8 s seen while the cluster comes up,
# 14-16 s while the control plane rolls out its upgrade.
MESSAGE_PROPAGATION = 20.0
# The Cluster controller (v1.10 and v1.14 alike) maps a control plane Machine's change to its Cluster
# only while the control plane is not initialized and the Machine has a nodeRef: the Cluster's
# control plane Machine aggregates follow the next change of its KubeadmControlPlane, infrastructure,
# MachineDeployments or cluster cache instead. 16 s seen (v1.10) while the workload cluster came up
# and the cluster cache had not reconnected to it.
LATE_CLUSTER_CONDITIONS = ("ControlPlaneMachinesReady", "ControlPlaneMachinesUpToDate")
LATE_PROPAGATION = 30.0
PHASE_WITHIN = 420.0
STEADY = 20.0  # sampled on after each phase is done
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


def snapshot(cluster: RealCluster, release: Release) -> list[Obj]:
    return [o for api_version, kind in release.kinds for o in cluster.list(api_version, kind)]


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


def message_lag(span: Span, resolved: bool) -> float | None:
    """How far the controller's message fell behind the engine's over a difference: for each sample
    of it, the time until the controller writes what the engine computed at that sample or later
    (its message plus preflight lines counts), the longest of these; None when it never does.

    While objects keep changing (a Machine's provisioning stages 2 s apart during an upgrade) an
    object that copies its Machines' conditions on its next reconcile is one step behind at every
    sample, so a difference on one condition lasts as long as the changes do: what bounds the
    controllers is how long each step takes to reach them."""
    def catches_up(i: int, j: int) -> bool:
        theirs = span.seen[j][1][1]
        return any(theirs == ours or preflight_lines_only(ours, theirs) for _, (ours, _) in span.seen[i:j+1])

    longest = 0.0
    for i, (at, _) in enumerate(span.seen):
        caught = next((span.seen[j][0] for j in range(i, len(span.seen)) if catches_up(i, j)),
                      span.last if resolved else None)
        if caught is None:
            return None
        longest = max(longest, caught - at)
    return longest


def condition(release: Release, objects: list[Obj], kind: str, name: str, type_: str) -> str | None:
    for o in objects:
        if o["kind"] == kind and o["metadata"]["name"] == name:
            for c in release.status(o).get("conditions") or []:
                if c["type"] == type_:
                    return str(c["status"])
    return None


def settled(release: Release, workers: int, version: str) -> Callable[[list[Obj]], bool]:
    """The Cluster's control plane and workers report all their replicas (``CONTROL_PLANE`` and
    ``workers``) available and up to date, every Machine runs ``version``, and the Cluster is
    Available, its topology reconciled, and no longer scaling or rolling out."""
    def done(objects: list[Obj]) -> bool:
        clusters = [o for o in objects if o["kind"] == "Cluster" and o["metadata"]["name"] == CLUSTER]
        status = release.status(clusters[0]) if clusters else {}
        counts = ((status.get("controlPlane") or {}, CONTROL_PLANE), (status.get("workers") or {}, workers))
        machines = [o for o in objects if o["kind"] == "Machine"]
        return (all(replicas.get(f) == n for replicas, n in counts
                    for f in ("desiredReplicas", "replicas", "availableReplicas", "upToDateReplicas"))
                and len(machines) == CONTROL_PLANE + workers
                and all(m["spec"].get("version") == version for m in machines)
                and condition(release, objects, "Cluster", CLUSTER, "Available") == "True"
                and condition(release, objects, "Cluster", CLUSTER, "TopologyReconciled") == "True"
                and all(condition(release, objects, "Cluster", CLUSTER, t) == "False"
                        for t in ("ScalingUp", "ScalingDown", "RollingOut")))
    return done


def replaced(release: Release, deleted: str, workers: int, version: str) -> Callable[[list[Obj]], bool]:
    """The Machine ``deleted`` is gone and the Cluster settled again with a replacement."""
    steady = settled(release, workers, version)
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


def worker_machine(cluster: RealCluster, release: Release) -> Obj:
    machines = [m for m in cluster.list(release.api, "Machine")
                if "cluster.x-k8s.io/control-plane" not in (m["metadata"].get("labels") or {})]
    assert machines, "no worker Machine"
    return machines[0]


def scale_workers(cluster: RealCluster, release: Release, replicas: int, *,
                  health_check: bool = False) -> None:
    """The Cluster's worker MachineDeployment with ``replicas``; ``health_check``: with its
    MachineHealthCheck remediating a Node not Ready for ``UNHEALTHY_TIMEOUT`` seconds instead of the
    ClusterClass's 300 s."""
    md = {"class": "default-worker", "name": "md-0", "replicas": replicas,
          **(release.health_check(UNHEALTHY_TIMEOUT) if health_check else {})}
    cluster.patch(release.api, "Cluster", NAMESPACE, CLUSTER,
                  {"spec": {"topology": {"workers": {"machineDeployments": [md]}}}})


def upgrade(cluster: RealCluster, release: Release, version: str) -> None:
    cluster.patch(release.api, "Cluster", NAMESPACE, CLUSTER, {"spec": {"topology": {"version": version}}})


def health_check_set(release: Release) -> Callable[[list[Obj]], bool]:
    """The worker MachineHealthCheck has the Cluster's ``UNHEALTHY_TIMEOUT``."""
    def done(objects: list[Obj]) -> bool:
        for o in objects:
            if o["kind"] == "MachineHealthCheck" and "md-0" in o["metadata"]["name"]:
                spec = o["spec"]
                conditions = (spec.get("unhealthyConditions") or [] if release.group_version == "v1beta1"
                              else (spec.get("checks") or {}).get("unhealthyNodeConditions") or [])
                return any(c.get("timeout") == f"{UNHEALTHY_TIMEOUT}s"
                           or c.get("timeoutSeconds") == UNHEALTHY_TIMEOUT for c in conditions)
        return False
    return done


def node_not_ready(cluster: RealCluster, workdir: Path, node: str) -> None:
    """The workload cluster's Node turns not Ready, as a kubelet that stopped posting would leave
    it: written through the in-memory provider's API server for the workload cluster, with the
    credentials of the Cluster's kubeconfig Secret."""
    secret = cluster.request("GET", f"/api/v1/namespaces/{NAMESPACE}/secrets/{CLUSTER}-kubeconfig")
    kubeconfig = yaml.safe_load(base64.b64decode(secret["data"]["value"]))
    server = kubeconfig["clusters"][0]["cluster"]
    user = kubeconfig["users"][0]["user"]
    workdir.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, field_ in (("ca.crt", server["certificate-authority-data"]),
                         ("client.crt", user["client-certificate-data"]),
                         ("client.key", user["client-key-data"])):
        files[name] = workdir / name
        files[name].write_bytes(base64.b64decode(field_))
    context = ssl.create_default_context(cafile=str(files["ca.crt"]))
    context.check_hostname = False  # checked against its CA only, whatever names it carries
    context.load_cert_chain(str(files["client.crt"]), str(files["client.key"]))

    def call(method: str, body: Any = None) -> Any:
        req = urllib.request.Request(f"{server['server']}/api/v1/nodes/{node}", method=method,
                                     headers={"Accept": "application/json"})
        if body is not None:
            req.data = json.dumps(body).encode()
            req.add_header("Content-Type", "application/merge-patch+json")
        with urllib.request.urlopen(req, context=context, timeout=10) as r:
            return json.loads(r.read())

    conditions = call("GET")["status"]["conditions"]
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for c in conditions:
        if c["type"] == "Ready":
            c.update(status="False", reason="KubeletNotReady", message="kubelet stopped posting node status",
                     lastTransitionTime=now)
    # A merge patch (v1.10's provider serves updates in protobuf only) replaces the whole list.
    call("PATCH", {"status": {"conditions": conditions}})


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


def seen_in_prometheus(base: str, query: str) -> bool:
    """Whether ``query`` had a sample in Prometheus over the last 10 minutes."""
    q = urllib.parse.urlencode({"query": f"max_over_time(({query})[10m:1s])"})
    return bool(_get(f"{base}/api/v1/query?{q}")["data"]["result"])


@pytest.fixture(params=RELEASES, ids=[r.name for r in RELEASES])
def release(request: pytest.FixtureRequest) -> Release:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def management(tmp_path: Path, release: Release) -> Iterator[tuple[RealCluster, Controllers, Exporter, str]]:
    with (RealCluster(tmp_path / "cluster") as cluster,
          Controllers(cluster, tmp_path / "controllers", pins=release.pins) as controllers):
        kubeconfig = cluster.admin_kubeconfig(tmp_path / "exporter-kubeconfig")
        with Exporter(tmp_path / "exporter.log", "--kubeconfig", str(kubeconfig)) as exporter:
            exporter.wait_ready()
            with prometheus(tmp_path / "prometheus", f"127.0.0.1:{exporter.port}") as prom:
                yield cluster, controllers, exporter, prom


def test_the_engine_says_what_the_controllers_say_while_a_cluster_comes_up_and_scales(
        management: tuple[RealCluster, Controllers, Exporter, str], release: Release, tmp_path: Path) -> None:
    cluster, controllers, exporter, prom = management
    cluster.ensure_namespace(NAMESPACE)
    for obj in load_manifests(release.data / "clusterclass-in-memory.yaml"):
        obj["metadata"]["namespace"] = NAMESPACE
        cluster.apply(obj)
    for obj in load_manifests(release.data / "cluster-in-memory.yaml", CLUSTER_NAME=CLUSTER,
                              NAMESPACE=NAMESPACE, KUBERNETES_VERSION=release.version,
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
            objects = snapshot(cluster, release)
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

    version, upgraded = release.version, release.upgraded
    sample_until("available", settled(release, 2, version))
    scale_workers(cluster, release, 3)
    sample_until("scaled up to 3 workers", settled(release, 3, version))
    # One of three workers unhealthy: its MachineHealthCheck marks it and its MachineSet replaces it.
    scale_workers(cluster, release, 3, health_check=True)
    sample_until("health check set", health_check_set(release))
    unhealthy = worker_machine(cluster, release)
    unhealthy_name = unhealthy["metadata"]["name"]
    node_not_ready(cluster, tmp_path / "workload", unhealthy["status"]["nodeRef"]["name"])
    remediating = "unhealthy worker Machine remediated"
    sample_until(remediating, replaced(release, unhealthy_name, 3, version))
    scale_workers(cluster, release, 1, health_check=True)
    sample_until("scaled down to 1 worker", settled(release, 1, version))
    upgrade(cluster, release, upgraded)
    sample_until(f"upgraded to {upgraded}", settled(release, 1, upgraded))
    rollouts = ["scaled up to 3 workers", "scaled down to 1 worker", f"upgraded to {upgraded}"]
    machine = worker_machine(cluster, release)["metadata"]["name"]
    cluster.delete(release.api, "Machine", NAMESPACE, machine)
    replacing = "worker Machine deleted and replaced"
    sample_until(replacing, replaced(release, machine, 1, upgraded))
    marked = {c: seen_in_prometheus(prom, f'capi_machine_status_condition{{namespace="{NAMESPACE}",'
                                          f'name="{unhealthy_name}",type="{c}",status="False"}} == 1')
              for c in ("HealthCheckSucceeded", "OwnerRemediated")}
    cluster.delete(release.api, "Cluster", NAMESPACE, CLUSTER)
    deleting = "Cluster deleted"
    sample_until(deleting, gone)

    kinds = sorted({k[0] for k in compared})

    def longest_in(phase: str, differences: Differences, fields: tuple[str, ...] = ()) -> float:
        """The longest difference that began during ``phase``, of ``fields`` when given."""
        start, end = spans[phase]
        return round(max((s.last - s.first for k, s, _ in differences.all()
                          if start <= s.first < end and (not fields or k[4] in fields)), default=0.0), 1)

    def message_lag_in(phase: str) -> float | None:
        start, end = spans[phase]
        lags = [message_lag(s, resolved) for k, s, resolved in engine.all()
                if start <= s.first < end and k[4] == "message"]
        return None if None in lags else round(max((lag for lag in lags if lag is not None), default=0.0), 1)

    report = {
        "release": release.name,
        "phase_seconds": phases, "samples": samples,
        "conditions_compared": len(compared),
        "kinds_compared": kinds,
        "longest_exported_mismatch_seconds": round(exported.longest(), 1),
        "longest_by_phase": {phase: {"exported": longest_in(phase, exported),
                                     "status_or_reason": longest_in(phase, engine, ("status", "reason")),
                                     "message": longest_in(phase, engine, ("message",)),
                                     "message_lag": message_lag_in(phase)}
                             for phase in spans},
        "exported_mismatches": [[*k, round(s.last - s.first, 1), resolved]
                                for k, s, resolved in exported.all()],
        "engine_differences": [
            {"object": "/".join(k[:3]), "type": k[3], "field": k[4], "seconds": round(s.last - s.first, 1),
             "resolved": resolved, "engine_vs_controller": s.values,
             **({"lag_seconds": None if (lag := message_lag(s, resolved)) is None else round(lag, 1)}
                if k[4] == "message" else {})}
            for k, s, resolved in engine.all()],
    }
    report["alerts"] = {phase: {"seen": sorted(map(list, seen_alerts[phase])),
                                "firing_at_the_end": sorted(map(list, left_firing[phase]))}
                        for phase in phases}
    report["machine_health_check_marks"] = marked
    (tmp_path / "report.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))

    assert {"Cluster", "KubeadmControlPlane", "MachineDeployment", "MachineSet", "Machine"} <= set(kinds)

    def bound(kind: str, type_: str, usual: float) -> float:
        """``usual``, or ``LATE_PROPAGATION`` for ``LATE_CLUSTER_CONDITIONS`` (``kind``: a kind or
        an exported mismatch family)."""
        cluster = kind in ("Cluster", "capi_cluster_status_condition_mismatch")
        return LATE_PROPAGATION if cluster and type_ in LATE_CLUSTER_CONDITIONS else usual

    too_long = [(k, s.last - s.first) for k, s, resolved in exported.all()
                if not resolved or s.last - s.first > bound(k[0], k[3], PROPAGATION)]
    assert not too_long, f"exporter mismatches lasting over {PROPAGATION}s or unresolved: {too_long}"
    lasting = [(k, s.values, s.last - s.first) for k, s, resolved in engine.all() if k[4] != "message"
               and (not resolved or s.last - s.first > bound(k[0], k[3], PROPAGATION))]
    assert not lasting, f"status or reason differences lasting over {PROPAGATION}s or unresolved: {lasting}"
    lasting = [(k, s.values, lag) for k, s, resolved in engine.all() if k[4] == "message"
               and ((lag := message_lag(s, resolved)) is None
                    or lag > bound(k[0], k[3], MESSAGE_PROPAGATION))]
    assert not lasting, f"messages the controllers wrote over {MESSAGE_PROPAGATION}s late or never: {lasting}"

    # The alerts about the scenario's objects; the exporter's own (FleetStatusExporterStaleData: no
    # successful watch in the unscaled 30m window of a Prometheus started with the test) are not.
    ours = {phase: {a for a in found if a[3].startswith(f"{NAMESPACE}/")}
            for phase, found in seen_alerts.items()}
    pages = {phase: found for phase in rollouts
             if (found := {a for a in ours[phase] if a[0] == "firing" and a[2] == "critical"})}
    assert not pages, f"scaling and the upgrade raised pages: {pages}"
    recovered = {a for a in left_firing[replacing] if a[3].startswith(f"{NAMESPACE}/")}
    assert not recovered, f"alerts firing once the Machine was replaced: {recovered}"
    assert all(marked.values()), f"the MachineHealthCheck's marks on {unhealthy_name}, seen: {marked}"
    # An operator sees the unhealthy Machine (CAPIMachineNotReady pending until it is deleted), and an
    # automatic remediation that succeeds raises nothing firing: it is not theirs to act on.
    not_ready = ("pending", "CAPIMachineNotReady", "warning", f"{NAMESPACE}/{unhealthy_name}")
    assert not_ready in ours[remediating], f"the unhealthy Machine never seen not Ready: {ours[remediating]}"
    fired = {a for a in ours[remediating] if a[0] == "firing"}
    assert not fired, f"alerts firing during an automatic remediation: {fired}"
    unavailable = {a for a in ours[deleting] if a[1] == "CAPIClusterNotAvailable"}
    assert not unavailable, f"the Cluster being deleted was reported not available: {unavailable}"
