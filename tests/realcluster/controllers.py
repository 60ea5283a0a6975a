"""The Cluster API controllers on a RealCluster, without cert-manager.

Owns: installing what the managers of one Cluster API release need (``build.CAPI_BINARIES``, v1.14,
or ``build.CAPI_V1BETA1_BINARIES``, v1.10: ``RELEASES``), read from the same module versions as the
binaries (their CRDs with the contract labels and conversion webhooks their
kustomizations add, their Mutating/ValidatingWebhookConfigurations pointed at loopback URLs with the
cluster's CA as caBundle), and running the managers: webhook servers on loopback with a serving
certificate of the cluster's CA, feature gates, health probes, one log file each. Does not own the
objects a test creates nor any assertion.

The Docker provider runs its in-memory backend: DevCluster and DevMachine objects with
``backend.inMemory`` are simulated workload clusters whose API servers the provider serves itself
(``POD_IP`` 127.0.0.1, ports 20000-30000, a debug server on 19000; upstream binds them on every
interface and the ports are fixed, so two runs on one machine at once would collide).
"""

from __future__ import annotations

import base64
import contextlib
import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.realcluster import build
from tests.realcluster.cluster import Obj, Process, RealCluster, free_port

CORE_MODULE = "sigs.k8s.io/cluster-api"
TEST_MODULE = "sigs.k8s.io/cluster-api/test"
# What the upstream e2e configuration enables for the in-memory tests (ClusterTopology is off by
# default; MachinePool is on by default, named so a default change upstream cannot drop it).
FEATURE_GATES = "ClusterTopology=true,MachinePool=true"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"


@dataclass(frozen=True)
class Manager:
    binary: str  # in build.CAPI_BINARIES
    module: str  # the Go module holding its config/ (pinned by tests/realcluster/capi/go.mod)
    folder: str  # the folder of the module holding config/crd and config/webhook
    args: tuple[str, ...] = ()


# The workload clusters' time runs about ten times faster than a real one's (a Machine starts in
# about 16 s), and so does the KubeadmControlPlane's etcd call timeout: at upstream's 15 s, a call
# to the etcd member of a Machine just removed blocks its reconcile, and its status, for 15 s.
ETCD_CALL_TIMEOUT = "--etcd-call-timeout-duration=5s"

MANAGERS = (
    Manager("capi-core-manager", CORE_MODULE, "core"),
    Manager("capi-kubeadm-bootstrap-manager", CORE_MODULE, "bootstrap/kubeadm"),
    Manager("capi-kubeadm-control-plane-manager", CORE_MODULE, "controlplane/kubeadm", (ETCD_CALL_TIMEOUT,)),
    Manager("capd-manager", TEST_MODULE, "infrastructure/docker"),
)
# Cluster API v1.10 (``build.CAPI_V1BETA1_BINARIES``): the core manager's config/ is the module's own.
MANAGERS_V1BETA1 = (
    Manager("capi-core-manager", CORE_MODULE, ""),
    *MANAGERS[1:],
)
# The managers of each go.mod under tests/realcluster that pins a Cluster API release.
RELEASES = {"capi": MANAGERS, "capi110": MANAGERS_V1BETA1}


def config_dir(manager: Manager, pins: str = "capi") -> Path:
    module = build.module_dir(manager.module, build.pinned_version(pins, manager.module))
    return module / manager.folder / "config"


def crds(manager: Manager, webhook_url: str, ca_bundle: str, pins: str = "capi") -> list[Obj]:
    """The manager's CRDs as its kustomization builds them: its resources, its labels (the
    contract labels the topology controller reads), and a conversion webhook on the CRDs its
    ``webhook_in_*`` patches name, here pointed at ``webhook_url``."""
    root = config_dir(manager, pins) / "crd"
    kustomization = yaml.safe_load((root / "kustomization.yaml").read_text())
    labels: dict[str, str] = {}
    for entry in kustomization.get("labels") or []:
        labels.update(entry.get("pairs") or {})
    converted = set()
    for patch in kustomization.get("patches") or []:
        if Path(patch["path"]).name.startswith("webhook_in_"):
            converted.add(yaml.safe_load((root / patch["path"]).read_text())["metadata"]["name"])
    out = []
    for resource in kustomization["resources"]:
        crd = yaml.safe_load((root / resource).read_text())
        crd["metadata"].setdefault("labels", {}).update(labels)
        if crd["metadata"]["name"] in converted:
            crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"url": f"{webhook_url}/convert", "caBundle": ca_bundle}}}
        out.append(crd)
    missing = converted - {c["metadata"]["name"] for c in out}
    if missing:
        raise build.Missing(f"{root}: conversion patches for CRDs not in resources: {sorted(missing)}")
    return out


def webhook_configurations(manager: Manager, webhook_url: str, ca_bundle: str,
                           pins: str = "capi") -> list[Obj]:
    """The manager's admission webhook configurations, each webhook's service turned into
    ``webhook_url`` + its path, named after the manager (upstream's kustomize adds a prefix)."""
    path = config_dir(manager, pins) / "webhook" / "manifests.yaml"
    out = []
    for doc in yaml.safe_load_all(path.read_text()):
        if not doc:
            continue
        doc["metadata"]["name"] = f"{manager.binary}-{doc['metadata']['name']}"
        for hook in doc["webhooks"]:
            service = hook["clientConfig"]["service"]
            hook["clientConfig"] = {"url": webhook_url + service["path"], "caBundle": ca_bundle}
        out.append(doc)
    return out


class Running:
    def __init__(self, manager: Manager, process: Process, health_port: int) -> None:
        self.manager, self.process, self.health_port = manager, process, health_port

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2) as r:
                return int(r.status) == 200
        except (OSError, urllib.error.HTTPError):
            return False


class Controllers:
    """``with Controllers(cluster, workdir):`` installs and runs every manager of the release that
    ``tests/realcluster/<pins>/go.mod`` pins (``RELEASES``)."""

    def __init__(self, cluster: RealCluster, workdir: Path, feature_gates: str = FEATURE_GATES,
                 pins: str = "capi") -> None:
        self.cluster, self.dir, self.pins = cluster, workdir, pins
        self.managers = RELEASES[pins]
        workdir.mkdir(parents=True, exist_ok=True)
        self.kubeconfig = cluster.admin_kubeconfig(workdir / "kubeconfig")
        cert, key = cluster.pki.serving("webhook")
        self.ca_bundle = base64.b64encode(cluster.pki.ca.read_bytes()).decode()
        self.running: list[Running] = []
        self._args = ["--leader-elect=false", f"--feature-gates={feature_gates}",
                      f"--webhook-cert-dir={cert.parent}", f"--webhook-cert-name={cert.name}",
                      f"--webhook-key-name={key.name}", "--insecure-diagnostics"]

    def __enter__(self) -> Controllers:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float = 120) -> None:
        ports = {m.binary: free_port() for m in self.managers}
        url = {m.binary: f"https://127.0.0.1:{ports[m.binary]}" for m in self.managers}
        self.cluster.install_crd_objects(
            [c for m in self.managers for c in crds(m, url[m.binary], self.ca_bundle, self.pins)])
        for m in self.managers:
            for config in webhook_configurations(m, url[m.binary], self.ca_bundle, self.pins):
                plural = config["kind"].lower() + "s"
                self.cluster.request("POST", f"{ADMISSION}/{plural}", config)
        for m in self.managers:
            health = free_port()
            process = Process(m.binary, [
                str(build.binary(m.binary, self.pins)), f"--kubeconfig={self.kubeconfig}",
                f"--webhook-port={ports[m.binary]}", f"--health-addr=127.0.0.1:{health}",
                f"--diagnostics-address=127.0.0.1:{free_port()}", *self._args, *m.args,
            ], self.dir / f"{m.binary}.log", env={
                "POD_IP": "127.0.0.1", "POD_NAMESPACE": "capi-system", "POD_NAME": m.binary})
            process.start()
            self.running.append(Running(m, process, health))
        deadline = time.monotonic() + timeout
        for r in self.running:
            while not r.ready():
                self.check()
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{r.manager.binary} not ready after {timeout}s\n{self.tails()}")
                time.sleep(0.2)

    def stop(self) -> None:
        for r in reversed(self.running):
            r.process.stop()

    def check(self) -> None:
        """Raises, with every manager's log tail, when one has exited."""
        for r in self.running:
            try:
                r.process.check()
            except RuntimeError as e:
                raise RuntimeError(f"{e}\n{self.tails()}") from None

    def tails(self, lines: int = 25) -> str:
        out = []
        for r in self.running:
            with contextlib.suppress(OSError):
                text = r.process.log.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {r.process.log} (last {len(text)} lines)\n" + "\n".join(text))
        return "\n".join(out)


def load_manifests(path: Path, **values: Any) -> list[Obj]:
    """The objects of a data file, with ``${NAME}`` replaced by ``values``."""
    text = path.read_text()
    for name, value in values.items():
        text = text.replace("${" + name + "}", str(value))
    unset = sorted(set(re.findall(r"[$][{](\w+)", text)))
    if unset:
        raise ValueError(f"{path}: no value for {', '.join(unset)}")
    return [doc for doc in yaml.safe_load_all(text) if doc]
