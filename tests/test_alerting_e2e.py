"""End to end through Alertmanager: what an on-call person receives from the example fleet.

Owns the proof that the shipped routes and inhibitions (alerts/alertmanager.yaml) work with real
components: the exporter serves a temporary copy of examples/, a real Prometheus evaluates the
rule files (`for` shortened in a test copy: 1s, and 4s for the alerts an inhibit rule can mute, so
their inhibitors reach Alertmanager first, as the longer real `for` of most symptoms makes them do)
and sends to two real Alertmanagers started on free loopback ports: one with the shipped
configuration, one with the same routes and no inhibit rules (the baseline the figures compare
with). Their receivers are webhooks served by this test, which asserts on the payloads: one
notification group per workload cluster (per MWRS, per exporter target), every alert with its
summary, description, runbook link (an existing section of docs/runbook.md) and dashboard link (an
existing dashboard UID and its variables); inhibited alerts never reach the receiver until their
inhibitor resolves, which the test causes by editing the copy of examples/. Timings (group_wait
1s, group_interval 2s, evaluation and scrape every second) keep it under a minute.
Does not test the rules' thresholds or `for` (alerts/tests/ with promtool do) nor which alerts the
example fleet raises (tests/test_e2e_prometheus.py does; its EXPECTED_ALERTS is reused here).
Skipped when the prometheus or prometheus-alertmanager binary is missing.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.test_alerts import (
    ALERTMANAGER_CONFIG,
    RULE_FILES,
    RUNBOOK,
    RUNBOOK_PREFIX,
    alertmanager_config,
    alerts,
    dashboard_link,
    dashboards,
    matches,
)
from tests.test_e2e_prometheus import EXPECTED_ALERTS, JOB, Prom, _free_port, _object, _stop, _wait

ROOT = Path(__file__).resolve().parents[1]
PROMETHEUS = shutil.which("prometheus")
ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
# The Cluster whose inhibitor the test resolves: prod-ap-2 is not Available because 2 of its 3
# workers are lost; its MachineDeployment, MachineSet and Machine alerts are inhibited.
RELEASED_FILE = "capi/prod-ap-2-mhc-remediation-blocked.yaml"
RELEASED_CLUSTER = ("fleet-prod", "prod-ap-2")
Key = tuple[str, str]  # (alertname, object) as tests/test_e2e_prometheus.py names alerts


@dataclass
class Webhook:
    """Collects Alertmanager webhook payloads, per receiver path."""

    payloads: list[tuple[str, float, dict[str, Any]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def received(self, path: str) -> list[dict[str, Any]]:
        with self.lock:
            return [p for where, _, p in self.payloads if where == path]

    def alerts(self, path: str, status: str = "firing", since: float = 0.0) -> set[Key]:
        with self.lock:
            return {(a["labels"]["alertname"], _object(a["labels"]))
                    for where, at, p in self.payloads if where == path and at >= since
                    for a in p["alerts"] if a["status"] == status}


def _serve(hook: Webhook) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with hook.lock:
                hook.payloads.append((self.path, time.monotonic(), body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def inhibit_targets() -> set[str]:
    """Alert names some inhibit rule can mute (and that inhibit nothing themselves)."""
    config = alertmanager_config()
    names = {r["alert"] for r in alerts()}
    rules = config["inhibit_rules"]
    sources = {n for r in rules for n in names if matches(r["source_matchers"], {"alertname": n})}
    return {n for r in rules for n in names if matches(r["target_matchers"], {"alertname": n})} - sources


def _shorten_for(text: str, targets: set[str]) -> str:
    out, alert = [], ""
    for line in text.splitlines(keepends=True):
        if m := re.match(r"\s*- alert: (\w+)", line):
            alert = m[1]
        out.append(re.sub(r"^(\s+for:) \S+$", r"\1 " + ("4s" if alert in targets else "1s"), line))
    return "".join(out)


def _am_config(url: str, inhibit: bool) -> dict[str, Any]:
    """The shipped configuration with webhook receivers and test timings."""
    config = alertmanager_config()
    for receiver in config["receivers"]:
        receiver["webhook_configs"] = [{"url": f"{url}/{receiver['name']}", "send_resolved": True}]
    fleet = next(r for r in config["route"]["routes"] if r["receiver"] == "fleet-status")
    fleet.update(group_wait="1s", group_interval="2s", repeat_interval="1h")
    if not inhibit:
        config.pop("inhibit_rules")
    return config


def expected_inhibited(firing: list[dict[str, str]]) -> set[Key]:
    """The firing alerts the shipped inhibit rules mute, by Alertmanager's rule: a target is muted
    while a firing source (another alert) matches its rule with equal values of `equal`."""
    out: set[Key] = set()
    for rule in alertmanager_config()["inhibit_rules"]:
        for target in firing:
            if not matches(rule["target_matchers"], target):
                continue
            for source in firing:
                if source is not target and matches(rule["source_matchers"], source) and all(
                        source.get(k, "") == target.get(k, "") for k in rule["equal"]):
                    out.add((target["alertname"], _object(target)))
                    break
    return out


@dataclass
class Fleet:
    tmp: Path
    prom: Prom
    hook: Webhook
    alertmanager: str
    started: float
    figures: dict[str, Any] = field(default_factory=dict)

    def firing_labels(self) -> list[dict[str, str]]:
        data = json.loads(urllib.request.urlopen(f"{self.prom.base}/api/v1/alerts", timeout=10).read())
        return [a["labels"] for a in data["data"]["alerts"] if a["state"] == "firing"]

    def suppressed(self) -> set[Key]:
        """What the shipped Alertmanager itself reports as inhibited."""
        got = json.loads(urllib.request.urlopen(f"{self.alertmanager}/api/v2/alerts", timeout=10).read())
        return {(a["labels"]["alertname"], _object(a["labels"])) for a in got if a["status"]["inhibitedBy"]}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    if PROMETHEUS is None or ALERTMANAGER is None:
        pytest.skip("prometheus or prometheus-alertmanager is not installed (Debian packages of those names)")
    started = time.monotonic()
    tmp = tmp_path_factory.mktemp("alerting")
    shutil.copytree(ROOT / "examples", tmp / "examples")
    hook = Webhook()
    server = _serve(hook)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        exporter_port, prom_port = _free_port(), _free_port()
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "exporter", "serve", "--from-files", str(tmp / "examples"),
             "--files.poll-interval", "0.5", "--web.listen-address", f"127.0.0.1:{exporter_port}"],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=(tmp / "exporter.log").open("wb")))
        managers = []
        for name, inhibit in (("shipped", True), ("baseline", False)):
            port = _free_port()
            (tmp / f"{name}.yml").write_text(yaml.safe_dump(
                _am_config(f"http://127.0.0.1:{server.server_port}/{name}", inhibit)))
            procs.append(subprocess.Popen(
                [str(ALERTMANAGER), f"--config.file={tmp / f'{name}.yml'}", f"--storage.path={tmp / name}",
                 f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address=", "--log.level=warn"],
                stdout=subprocess.DEVNULL, stderr=(tmp / f"{name}.log").open("wb")))
            managers.append(f"127.0.0.1:{port}")
        targets = inhibit_targets()
        rules = []
        for src in RULE_FILES:
            (tmp / src.name).write_text(_shorten_for(src.read_text(), targets))
            rules.append(str(tmp / src.name))
        (tmp / "prometheus.yml").write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": rules,
            "alerting": {"alertmanagers": [{"static_configs": [{"targets": managers}]}]},
            "scrape_configs": [{"job_name": JOB, "honor_labels": True,
                                "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}]}],
        }))
        procs.append(subprocess.Popen(
            [str(PROMETHEUS), f"--config.file={tmp / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp / 'data'}", f"--web.listen-address=127.0.0.1:{prom_port}",
             "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=(tmp / "prometheus.log").open("wb")))
        prom = Prom(f"http://127.0.0.1:{prom_port}")

        def up() -> bool:
            for proc, log in zip(procs, ("exporter", "shipped", "baseline", "prometheus"), strict=True):
                assert proc.poll() is None, f"{log} exited: " + (tmp / f"{log}.log").read_text()
            for manager in managers:
                urllib.request.urlopen(f"http://{manager}/-/ready", timeout=5)
            return bool(prom.query(f'up{{job="{JOB}"}} == 1'))

        _wait("the exporter, both Alertmanagers and Prometheus", up, 60)
        yield Fleet(tmp, prom, hook, f"http://{managers[0]}", started)
    finally:
        for proc in reversed(procs):
            _stop(proc)
        server.shutdown()
        server.server_close()


def _settled(fleet: Fleet) -> tuple[set[Key], set[Key]]:
    """Waits for the expected alerts to fire (and no other to start firing for 2s), then for both
    receivers to have heard of them; returns the firing and the expected-inhibited sets. Which
    alerts the fleet raises exactly is tests/test_e2e_prometheus.py's to check."""

    def stable() -> list[dict[str, str]] | None:
        first = fleet.firing_labels()
        if not {(a["alertname"], _object(a)) for a in first} >= EXPECTED_ALERTS:
            return None
        time.sleep(2)
        again = fleet.firing_labels()
        return again if sorted(map(str, first)) == sorted(map(str, again)) else None

    try:
        labels = _wait("the expected alerts", stable, 45)
    except AssertionError:
        pytest.fail(f"missing: {sorted(EXPECTED_ALERTS - fleet.prom.firing())}")
    firing = {(a["alertname"], _object(a)) for a in labels}
    inhibited = expected_inhibited(labels)
    _wait("the baseline receiver to get every alert",
          lambda: fleet.hook.alerts("/baseline/fleet-status") >= firing, 30)
    _wait("the shipped receiver to get every alert that is not inhibited",
          lambda: fleet.hook.alerts("/shipped/fleet-status") >= firing - inhibited, 30)
    return firing, inhibited


def _anchors() -> set[str]:
    return {re.sub(r"[^a-z0-9 _-]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.+)$", RUNBOOK.read_text(), re.MULTILINE)}


def test_notifications_come_in_one_group_per_workload_cluster_with_their_links(fleet: Fleet) -> None:
    firing, inhibited = _settled(fleet)
    payloads = fleet.hook.received("/shipped/fleet-status")
    anchors, boards = _anchors(), dashboards()
    clusters: dict[str, set[tuple[str, str]]] = {}
    for payload in payloads:
        group = payload["groupLabels"]
        for alert in payload["alerts"]:
            labels, ann = alert["labels"], alert["annotations"]
            name = labels["alertname"]
            assert {"summary", "description", "runbook_url", "dashboard_url"} <= set(ann), name
            assert all(ann[k] and "<no value>" not in ann[k] for k in ann), (name, ann)
            assert ann["runbook_url"].startswith(RUNBOOK_PREFIX)
            assert ann["runbook_url"][len(RUNBOOK_PREFIX):] in anchors, f"{name}: no runbook section"
            uid, params = dashboard_link(ann["dashboard_url"])
            assert uid in boards and set(params) <= boards[uid], f"{name}: {ann['dashboard_url']}"
            assert all(params.values()), f"{name}: a dashboard variable is empty: {ann['dashboard_url']}"
            # Grouping: every alert of the payload is of the group it was sent in.
            assert all(labels.get(k, "") == v for k, v in group.items()), (group, labels)
            if name.startswith("CAPI"):
                assert set(group) == {"job", "instance", "namespace", "cluster_name"}
                assert labels["job"] == JOB and labels["instance"]
                cluster = (group["namespace"], group["cluster_name"])
                clusters.setdefault(payload["groupKey"], set()).add(cluster)
            elif name.startswith("OCMManifestWorkReplicaSet"):
                assert set(group) == {"job", "instance", "namespace", "name"}
    # One group per workload cluster, and every workload cluster with a notified alert has one.
    notified = {(a["labels"]["namespace"], a["labels"]["cluster_name"])
                for p in payloads for a in p["alerts"] if a["labels"]["alertname"].startswith("CAPI")}
    assert all(len(v) == 1 for v in clusters.values())
    assert sorted(c for v in clusters.values() for c in v) == sorted(notified)
    assert not fleet.hook.received("/shipped/default") and not fleet.hook.received("/baseline/default")

    received = fleet.hook.alerts("/shipped/fleet-status")
    baseline = fleet.hook.alerts("/baseline/fleet-status")
    assert received == firing - inhibited, f"unexpected: {sorted(received - (firing - inhibited))}"
    assert baseline == firing
    assert fleet.suppressed() == inhibited
    # The stories: a broken cluster's symptoms are muted, its cause and its other problems are not.
    assert {("CAPIMachineNotReady", "fleet-prod/prod-ap-2-md-0-z5wbx-b8mqt"),
            ("CAPIMachineDeploymentReplicasMismatch", "fleet-prod/prod-ap-2-md-0"),
            ("CAPIMachineSetReplicasMismatch", "fleet-prod/prod-ap-1-md-0-7c9tq"),
            ("CAPIKubeadmControlPlaneReplicasMismatch", "fleet-prod/prod-ap-1-control-plane"),
            ("CAPIMachineStuckProvisioning", "fleet-staging/staging-ci-runners-6hw2x-j5d2b")} <= inhibited
    assert {("CAPIClusterNotAvailable", "fleet-prod/prod-ap-2"),
            ("CAPIClusterWorkerMachinesUnhealthy", "fleet-prod/prod-ap-2"),
            ("CAPIMachineHealthCheckRemediationBlocked", "fleet-prod/prod-ap-2-md-0-unhealthy"),
            ("CAPIEtcdClusterUnhealthy", "fleet-prod/prod-ap-1-control-plane"),
            ("CAPIKubeadmControlPlaneRolloutStuck", "fleet-prod/prod-us-1-control-plane"),
            ("CAPIMachineStuckDeleting", "fleet-staging/staging-old-1-md-0-k2v8t-d4qnh")} <= received
    # Lifecycle stories: a refused control plane remediation and stuck deletions reach the receiver.
    assert {("CAPIControlPlaneRemediationRetrying", "fleet-prod/prod-ap-3-control-plane"),
            ("CAPIControlPlaneRemediationFailing", "fleet-prod/prod-ap-3-control-plane"),
            ("CAPIClusterStuckDeleting", "fleet-staging/staging-old-2"),
            ("CAPIObjectStuckDeleting", "fleet-staging/staging-old-2-control-plane"),
            ("CAPIObjectStuckDeleting", "fleet-staging/staging-old-2-mp-0"),
            ("OCMManifestWorkReplicaSetStuckDeleting", "app-delivery/payments-batch")} <= received

    def groups(path: str) -> int:
        return len({p["groupKey"] for p in fleet.hook.received(path) if p["status"] == "firing"})

    def per_cluster(keys: set[Key], cluster: str) -> int:
        return sum(1 for _, obj in keys if obj == cluster or obj.startswith(cluster + "-"))

    def posts(path: str, cluster: str) -> int:
        namespace, name = cluster.split("/")
        groups = [p["groupLabels"] for p in fleet.hook.received(path)]
        return sum(1 for g in groups if (g.get("namespace"), g.get("cluster_name")) == (namespace, name))

    fleet.figures.update({
        "alerts firing": len(firing), "alerts inhibited": len(inhibited),
        "alerts notified (shipped)": len(received), "alerts notified (no inhibition)": len(baseline),
        "notification groups (shipped)": groups("/shipped/fleet-status"),
        "notification groups (no inhibition)": groups("/baseline/fleet-status"),
        "notifications (shipped)": len(fleet.hook.received("/shipped/fleet-status")),
        "notifications (no inhibition)": len(fleet.hook.received("/baseline/fleet-status")),
        **{f"{c}: alerts firing / notified; notifications shipped / no inhibition":
           f"{per_cluster(firing, c)} / {per_cluster(received, c)}; "
           f"{posts('/shipped/fleet-status', c)} / {posts('/baseline/fleet-status', c)}"
           for c in ("fleet-prod/prod-ap-1", "fleet-prod/prod-ap-2", "fleet-prod/prod-ap-3",
                     "fleet-staging/staging-ci", "fleet-staging/staging-old-1", "fleet-staging/staging-old-2",
                     "fleet-legacy/legacy-west-1")},
        "seconds from start to settled": round(time.monotonic() - fleet.started, 1),
    })


def test_inhibited_alerts_arrive_once_their_inhibitor_resolves(fleet: Fleet) -> None:
    _, inhibited = _settled(fleet)
    released = {k for k in inhibited if k[1].startswith("/".join(RELEASED_CLUSTER) + "-")}
    assert released and len(released) < len(inhibited)
    before = fleet.hook.alerts("/shipped/fleet-status")
    assert not before & inhibited, "an inhibited alert reached the receiver"
    # Resolve the inhibitor: the controller now reports prod-ap-2 Available.
    path = fleet.tmp / "examples" / RELEASED_FILE
    docs = list(yaml.safe_load_all(path.read_text()))
    cluster = next(d for d in docs
                   if d and d["kind"] == "Cluster" and d["metadata"]["name"] == RELEASED_CLUSTER[1])
    available = next(c for c in cluster["status"]["conditions"] if c["type"] == "Available")
    available.update(status="True", reason="Available", message="")
    edited = time.monotonic()
    path.write_text(yaml.safe_dump_all(docs, sort_keys=True))

    _wait("the inhibitor to resolve in Prometheus",
          lambda: ("CAPIClusterNotAvailable", "/".join(RELEASED_CLUSTER)) not in fleet.prom.firing(), 30)
    _wait("the released alerts to reach the receiver",
          lambda: fleet.hook.alerts("/shipped/fleet-status", since=edited) >= released, 30)
    assert ("CAPIClusterNotAvailable", "/".join(RELEASED_CLUSTER)) in fleet.hook.alerts(
        "/shipped/fleet-status", status="resolved", since=edited)
    # The other clusters' symptoms stay muted.
    assert not fleet.hook.alerts("/shipped/fleet-status") & (inhibited - released)
    assert fleet.suppressed() == inhibited - released
    fleet.figures.update({
        "released alerts": len(released),
        "seconds from the file edit to the released notification": round(time.monotonic() - edited, 1),
        "seconds in all": round(time.monotonic() - fleet.started, 1),
    })
    print("\nalerting figures: " + json.dumps(fleet.figures, indent=1))


def test_the_shipped_configuration_is_what_the_test_loads() -> None:
    assert ALERTMANAGER_CONFIG == ROOT / "alerts" / "alertmanager.yaml"
    assert _am_config("http://x", inhibit=True)["inhibit_rules"] == alertmanager_config()["inhibit_rules"]
