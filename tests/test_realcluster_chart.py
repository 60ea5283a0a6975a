"""The Helm chart installed for real: every object it renders accepted by a real kube-apiserver,
and the exporter, run with the chart's own arguments and a token of the chart's ServiceAccount,
reading everything the chart's RBAC grants and reporting what it does not.

One hub per module: the v1beta2 era's CRDs (Cluster API v1.14, ocm v1.2, the AWS and Docker
providers' kinds the examples reference) with its example objects, and the Prometheus operator's
ServiceMonitor, PodMonitor, PrometheusRule and AlertmanagerConfig CRDs (the last from the same
pinned module). Each install is its own Helm release (their cluster-scoped objects do not collide)
and is applied server-side with strict field validation, as `helm install` would create it. The
exporter runs as a process on the host, with the rendered container's arguments minus the listen
address, which only makes sense in the pod.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.chart import harness
from tests.realcluster import build, eras
from tests.realcluster.cluster import ApiError, Obj, RealCluster
from tests.realcluster.exporter import Exporter, Sample, value

pytestmark = pytest.mark.realcluster

RELEASE_NAMESPACE = "fleet-monitoring"
# Namespaced mode: the Clusters of fleet-prod (not those of fleet-staging), the
# ManifestWorkReplicaSets of app-delivery and the ManifestWorks of one managed cluster, prod-eu-1
# (not those of the others).
WATCHED_NAMESPACES = ["fleet-prod", "app-delivery", "prod-eu-1"]

# What the exporter reads on this hub (its watched kinds whose CRDs are installed, and the
# provider kinds the Clusters, Machines and MachinePools reference), as it names them: <plural>.<group>. Fixed
# here, not derived from the rendered RBAC, so that a rule the chart drops fails the tests.
CAPI = "cluster.x-k8s.io"
OCM_WORK = "work.open-cluster-management.io"
OCM_CLUSTER = "cluster.open-cluster-management.io"
MANAGED_CLUSTERS = f"managedclusters.{OCM_CLUSTER}"
AWS_MACHINE_POOLS = "awsmachinepools.infrastructure.cluster.x-k8s.io"
KUBEADM_CONFIGS = "kubeadmconfigs.bootstrap.cluster.x-k8s.io"
EXTENSION_CONFIGS = "extensionconfigs.runtime.cluster.x-k8s.io"
CLUSTER_SCOPED = {MANAGED_CLUSTERS, EXTENSION_CONFIGS}
EXPECTED_RESOURCES = frozenset({
    *(f"{p}.{CAPI}" for p in ("clusters", "clusterclasses", "machinedeployments", "machinehealthchecks",
                              "machinepools", "machines", "machinesets", "machinedrainrules")),
    "clusterresourcesets.addons.cluster.x-k8s.io", "clusterresourcesetbindings.addons.cluster.x-k8s.io",
    EXTENSION_CONFIGS, "ipaddressclaims.ipam.cluster.x-k8s.io",
    "kubeadmcontrolplanes.controlplane.cluster.x-k8s.io",
    AWS_MACHINE_POOLS,
    # The provider kinds the Clusters and Machines reference, served on this hub.
    *(f"{p}.infrastructure.cluster.x-k8s.io" for p in ("awsclusters", "awsmachines", "dockerclusters",
                                                       "dockermachines")),
    KUBEADM_CONFIGS,
    f"manifestworkreplicasets.{OCM_WORK}", f"manifestworks.{OCM_WORK}",
    MANAGED_CLUSTERS, f"placements.{OCM_CLUSTER}", f"placementdecisions.{OCM_CLUSTER}",
})
# Only the staging Clusters (Docker provider) reference these: a watch of the namespaces
# WATCHED_NAMESPACES never finds them.
STAGING_PROVIDERS = frozenset(
    f"{p}.infrastructure.cluster.x-k8s.io" for p in ("dockerclusters", "dockermachines"))


def expected(namespaces: list[str] | None) -> frozenset[str]:
    return EXPECTED_RESOURCES - STAGING_PROVIDERS if namespaces else EXPECTED_RESOURCES


NAMESPACED_VALUES: dict[str, Any] = {"namespaces": WATCHED_NAMESPACES}
MONITORING_APIS = ("monitoring.coreos.com/v1", "monitoring.coreos.com/v1alpha1")
RBAC_KINDS = {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}


class _YamlValueAsString(yaml.SafeLoader):
    """YAML 1.1 reads a plain `=` as the `value` tag, which PyYAML cannot construct; the
    AlertmanagerConfig CRD has one (the `=` of a matchType enum), Go's YAML reads it as "="."""


_YamlValueAsString.add_constructor("tag:yaml.org,2002:value", _YamlValueAsString.construct_yaml_str)


def alertmanager_config_crd(tmp: Path) -> Path:
    """The AlertmanagerConfig CRD of the prometheus-operator module the other CRDs come from,
    rewritten as JSON (which the cluster's CRD reader loads as it is)."""
    source = build.CRD_SOURCES["prometheus-operator"]
    path = (build.module_dir(source.module, source.version)
            / "example/prometheus-operator-crd/monitoring.coreos.com_alertmanagerconfigs.yaml")
    if not path.is_file():
        raise build.Missing(f"{path} not found; run python -m tests.realcluster.build")
    copy = tmp / "alertmanagerconfigs.json"
    copy.write_text(json.dumps(yaml.load(path.read_text(), Loader=_YamlValueAsString)))
    return copy


@dataclass
class Install:
    """One release: what Helm rendered, and what the server refused (``(object, error)``)."""

    release: str
    manifests: list[harness.Manifest]
    rejected: list[tuple[str, str]] = field(default_factory=list)

    @property
    def service_account(self) -> str:
        return str(harness.one(self.manifests, "ServiceAccount")["metadata"]["name"])

    def exporter_args(self) -> list[str]:
        """The container's arguments, without `serve` and what only makes sense in the pod."""
        args = harness.container(self.manifests)["args"]
        assert args[0] == "serve"
        return [a for a in args[1:] if not a.startswith("--web.listen-address")]


@dataclass
class Hub:
    cluster: RealCluster
    objects: list[Obj]
    tmp: Path
    installs: dict[str, Install] = field(default_factory=dict)

    def install(self, release: str, values: Mapping[str, Any] | None = None,
                values_files: tuple[Path, ...] = ()) -> Install:
        """Renders the chart as `helm install <release> --namespace fleet-monitoring` would and
        applies every object (once per release; the namespaces its objects name are created,
        as `--create-namespace` and the user would)."""
        if release in self.installs:
            return self.installs[release]
        manifests = harness.render(values, values_files, release=release, namespace=RELEASE_NAMESPACE)
        install = Install(release, manifests)
        for m in manifests:
            meta = m["metadata"]
            if meta.get("namespace"):
                self.cluster.ensure_namespace(meta["namespace"])
            try:
                self.cluster.apply(m, field_manager="helm")
            except (ApiError, KeyError) as e:
                install.rejected.append((f"{m['kind']} {meta.get('namespace', '')}/{meta['name']}", str(e)))
        self.installs[release] = install
        return install

    def run(self, install: Install, name: str) -> Exporter:
        kubeconfig = self.cluster.token_kubeconfig(
            self.tmp / f"{name}.kubeconfig", RELEASE_NAMESPACE, install.service_account)
        return Exporter(self.tmp / f"{name}.log", "--kubeconfig", str(kubeconfig), *install.exporter_args())

    def allowed(self, install: Install, group: str, resource: str, namespace: str | None) -> bool:
        """Whether the release's ServiceAccount may list the resource there (SubjectAccessReview)."""
        attributes = {"group": group, "resource": resource, "verb": "list"}
        if namespace:
            attributes["namespace"] = namespace
        review = self.cluster.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": f"system:serviceaccount:{RELEASE_NAMESPACE}:{install.service_account}",
                     "groups": ["system:serviceaccounts", f"system:serviceaccounts:{RELEASE_NAMESPACE}",
                                "system:authenticated"],
                     "resourceAttributes": attributes}})
        return bool(review["status"].get("allowed"))

    def await_rbac(self, install: Install, namespaces: list[str] | None, readable: frozenset[str]) -> None:
        """Waits until the API server's authorizer has the release's bindings: an exporter that
        started before would find a resource forbidden and retry it only after 30s."""
        deadline = time.monotonic() + 10
        for name in sorted(readable):
            resource, _, group = name.partition(".")
            scopes = [None] if name == MANAGED_CLUSTERS or not namespaces else namespaces
            for ns in scopes:
                while not self.allowed(install, group, resource, ns):
                    assert time.monotonic() < deadline, f"{name} in {ns or 'all namespaces'} never allowed"
                    time.sleep(0.05)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    tmp = tmp_path_factory.mktemp("chart-hub")
    era = eras.era("v1beta2")
    with RealCluster(tmp / "cluster") as cluster:
        cluster.install_crds([*era.crd_files(), *build.crd_files("prometheus-operator"),
                              alertmanager_config_crd(tmp)])
        cluster.ensure_namespace(RELEASE_NAMESPACE)
        objects = eras.load(cluster, eras.read_objects(era.files()))
        yield Hub(cluster, objects, tmp)


def _names(objects: list[Obj], kind: str, namespaces: list[str] | None = None) -> set[tuple[str, str]]:
    return {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects
            if o["kind"] == kind and (namespaces is None or o["metadata"]["namespace"] in namespaces)}


def _series(samples: set[Sample], family: str) -> set[tuple[str, str]]:
    """(namespace, name) of every series of the family."""
    out = set()
    for name, labels, _ in samples:
        if name == family:
            d = dict(labels)
            out.add((d.get("namespace", ""), d["name"]))
    return out


def _by_resource(samples: set[Sample], family: str) -> dict[str, float]:
    return {dict(labels)["resource"]: float(v) for name, labels, v in samples
            if name == f"fleet_status_exporter_{family}"}


def _unsynced(samples: set[Sample], expected: frozenset[str]) -> list[str]:
    synced = _by_resource(samples, "resource_synced")
    return sorted(r for r in expected if synced.get(r) != 1.0)


# ---- every rendered object accepted ----

SCENARIOS = {
    "cluster-wide": ({}, ()),
    "namespaced": (NAMESPACED_VALUES, ()),
    "release-namespace-only": ({"rbac": {"useClusterRole": False}}, ()),
    # Every optional object: ServiceMonitor, PrometheusRules (with an additional rule file and
    # every per-alert and per-group setting), AlertmanagerConfig, dashboards, NetworkPolicy, PDB,
    # StatefulSet, web-config Secret.
    "everything-on": ({
        "prometheus": {"monitor": {"enabled": True, "interval": "30s", "scrapeTimeout": "25s",
                                   "basicAuth": {"username": {"name": "scrape", "key": "user"},
                                                 "password": {"name": "scrape", "key": "password"}}}},
        "prometheusRule": {
            "enabled": True, "dashboardUrlBase": "https://grafana.internal/d/",
            "jobSelector": 'job="fleet-status-exporter",cluster="hub-eu"',
            "disabled": {"CAPIClusterPaused": True}, "rules": {"ocm.rules": True},
            "additionalRuleLabels": {"team": "platform"}, "additionalRuleAnnotations": {"hub": "hub-eu"},
            "additionalRuleGroupLabels": {"fleet-status-exporter": {"severity": "info"}},
            "additionalPrometheusRulesMap": {"team": "groups:\n  - name: team\n    rules:\n"
                                                     "      - record: team:up:sum\n        expr: sum(up)\n"}},
        "alertmanagerConfig": {"enabled": True, "additionalLabels": {"alertmanagerConfig": "fleet"},
                               "receivers": [{"name": "fleet-status", "webhookConfigs": [
                                   {"url": "http://alert-router.fleet-monitoring.svc:8080/fleet",
                                    "sendResolved": True}]}]},
        "dashboards": {"enabled": True},
        "networkPolicy": {"enabled": True}, "podDisruptionBudget": {"enabled": True},
        "autosharding": {"enabled": True}, "replicas": 2,
        "webConfig": {"config": {"basic_auth_users": {"prometheus": "$2y$10$abcdefghijklmnopqrstuv"}}},
    }, ()),
    **{f"ci-{p.name.removesuffix('-values.yaml')}": ({}, (p,)) for p in harness.ci_values_files()},
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_the_server_accepts_every_rendered_object(hub: Hub, scenario: str) -> None:
    values, files = SCENARIOS[scenario]
    install = hub.install(f"fse-{scenario}"[:40].rstrip("-"), values, files)
    kinds = {m["kind"] for m in install.manifests}
    assert {"Service", "ServiceAccount"} <= kinds and kinds & {"Deployment", "StatefulSet"}, kinds
    assert not install.rejected, "\n".join(f"{what}: {error}" for what, error in install.rejected)


@pytest.mark.parametrize("scenario", ["everything-on", "ci-05-alerting"])
def test_the_monitoring_objects_are_stored_as_rendered(hub: Hub, scenario: str) -> None:
    """The Prometheus operator's schemas keep every field the chart writes (a field the schema
    does not know would be pruned by a server that does not validate strictly): the
    ServiceMonitor, every PrometheusRule and the AlertmanagerConfig translated from
    alerts/alertmanager.yaml."""
    install = hub.install(f"fse-{scenario}", *SCENARIOS[scenario])
    assert not install.rejected, install.rejected
    checked: dict[str, int] = {}
    for m in install.manifests:
        if m["apiVersion"] not in MONITORING_APIS:
            continue
        meta = m["metadata"]
        stored = hub.cluster.get(m["apiVersion"], m["kind"], meta["namespace"], meta["name"])
        assert stored["spec"] == m["spec"], meta["name"]
        checked[m["kind"]] = checked.get(m["kind"], 0) + 1
    assert checked["AlertmanagerConfig"] == 1 and checked["PrometheusRule"] >= 2, checked


def test_the_pod_monitor_is_stored_as_rendered(hub: Hub) -> None:
    install = hub.install("fse-ci-07-podmonitor", *SCENARIOS["ci-07-podmonitor"])
    assert not install.rejected, install.rejected
    (pm,) = [m for m in install.manifests if m["kind"] == "PodMonitor"]
    meta = pm["metadata"]
    stored = hub.cluster.get(pm["apiVersion"], "PodMonitor", meta["namespace"], meta["name"])
    assert stored["spec"] == pm["spec"]


# ---- the exporter with the chart's arguments and ServiceAccount ----


def test_cluster_wide_the_exporter_reads_every_resource(hub: Hub) -> None:
    install = hub.install("fse-cluster-wide", *SCENARIOS["cluster-wide"])
    assert not install.rejected
    assert not any(a.startswith("--namespace") for a in install.exporter_args())
    hub.await_rbac(install, None, EXPECTED_RESOURCES)
    with hub.run(install, "cluster-wide") as exporter:
        exporter.wait_ready(timeout=30)
        samples = exporter.samples()
        ready_body = exporter.get("/readyz")[1]
    assert _unsynced(samples, EXPECTED_RESOURCES) == []
    assert _by_resource(samples, "resource_unreadable") == {}, ready_body
    assert _series(samples, "capi_cluster_info") == _names(hub.objects, "Cluster")
    mwrs = _names(hub.objects, "ManifestWorkReplicaSet")
    assert _series(samples, "ocm_manifestworkreplicaset_info") == mwrs
    assert _series(samples, "ocm_manifestwork_info") == _names(hub.objects, "ManifestWork")
    managed = {o["metadata"]["name"] for o in hub.objects if o["kind"] == "ManagedCluster"}
    assert {n for _, n in _series(samples, "ocm_managedcluster_info")} == managed


def test_namespaced_the_exporter_reads_its_namespaces_only(hub: Hub) -> None:
    install = hub.install("fse-namespaced", *SCENARIOS["namespaced"])
    assert not install.rejected
    assert [a for a in install.exporter_args() if a.startswith("--namespace")] == [
        f"--namespace={ns}" for ns in WATCHED_NAMESPACES]
    hub.await_rbac(install, WATCHED_NAMESPACES, expected(WATCHED_NAMESPACES))
    with hub.run(install, "namespaced") as exporter:
        exporter.wait_ready(timeout=30)
        samples = exporter.samples()
        ready_body = exporter.get("/readyz")[1]
    assert _unsynced(samples, expected(WATCHED_NAMESPACES)) == []
    assert _by_resource(samples, "resource_unreadable") == {}, ready_body
    clusters = _series(samples, "capi_cluster_info")
    assert clusters == _names(hub.objects, "Cluster", WATCHED_NAMESPACES)
    assert clusters and _names(hub.objects, "Cluster", ["fleet-staging"])  # some left out
    works = _series(samples, "ocm_manifestwork_info")
    assert works == _names(hub.objects, "ManifestWork", WATCHED_NAMESPACES)
    assert works != _names(hub.objects, "ManifestWork")
    mwrs = _names(hub.objects, "ManifestWorkReplicaSet")
    assert _series(samples, "ocm_manifestworkreplicaset_info") == mwrs
    # Every object series comes from a watched namespace (ManagedClusters have none).
    outside = {(n, ns) for n, labels, _ in samples if not n.startswith("fleet_status_exporter_")
               for k, ns in labels if k == "namespace" and ns not in WATCHED_NAMESPACES}
    assert not outside, sorted(outside)[:10]


def test_a_hub_watched_through_the_chart_kubeconfig_secret(hub: Hub) -> None:
    """Installed with kubeconfig.enabled, the chart grants nothing where it runs; the exporter reads
    the hub through the kubeconfig of the Secret it created, whose user the hub's admin granted
    (here: the ServiceAccount of another release, with the chart's own rules)."""
    grants = hub.install("fse-hub-grants", {})
    hub.await_rbac(grants, None, EXPECTED_RESOURCES)
    issued = hub.cluster.token_kubeconfig(hub.tmp / "hub-grants.kubeconfig", RELEASE_NAMESPACE,
                                          grants.service_account)
    config = yaml.safe_load(issued.read_text())
    cluster = config["clusters"][0]["cluster"]
    # Self-contained, as the Secret must be: the CA inline, not a path on this host.
    cluster["certificate-authority-data"] = base64.b64encode(
        Path(cluster.pop("certificate-authority")).read_bytes()).decode()
    encoded = base64.b64encode(yaml.safe_dump(config).encode()).decode()
    install = hub.install("fse-kubeconfig", {"kubeconfig": {"enabled": True, "secret": encoded}})
    assert not install.rejected, install.rejected
    assert not [m for m in install.manifests if m["kind"] in RBAC_KINDS]
    (rendered,) = [m for m in install.manifests if m["kind"] == "Secret"]
    stored = hub.cluster.get("v1", "Secret", RELEASE_NAMESPACE, rendered["metadata"]["name"])
    mounted = hub.tmp / "kubeconfig-mount" / "config"
    mounted.parent.mkdir(exist_ok=True)
    mounted.write_bytes(base64.b64decode(stored["data"]["config"]))
    # The container's arguments with the mount path on this host.
    args = [f"--kubeconfig={mounted}" if a == "--kubeconfig=/etc/fleet-status-exporter/kubeconfig/config"
            else a for a in install.exporter_args()]
    assert f"--kubeconfig={mounted}" in args
    with Exporter(hub.tmp / "kubeconfig.log", *args) as exporter:
        exporter.wait_ready(timeout=30)
        samples = exporter.samples()
    assert _unsynced(samples, EXPECTED_RESOURCES) == []
    assert _by_resource(samples, "resource_unreadable") == {}
    assert _series(samples, "capi_cluster_info") == _names(hub.objects, "Cluster")


# ---- a resource the chart's RBAC does not grant ----

FORBIDDEN: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    # Namespaced mode without the ClusterRole for the cluster-scoped ManagedClusters and ExtensionConfigs.
    "managedclusters": ({**NAMESPACED_VALUES, "rbac": {"clusterScopedResources": False}},
                        (EXTENSION_CONFIGS, MANAGED_CLUSTERS)),
    # An InfraMachinePool list that leaves out the provider whose pools the MachinePools reference,
    # cluster-wide (one scope) and namespaced (one scope per watched namespace).
    "awsmachinepools": ({"rbac": {"infrastructureMachinePools": ["dockermachinepools", "azuremachinepools"]}},
                        (AWS_MACHINE_POOLS,)),
    "awsmachinepools-namespaced": ({**NAMESPACED_VALUES, "rbac": {"infrastructureMachinePools": [
        "dockermachinepools"]}}, (AWS_MACHINE_POOLS,)),
    # A provider list that leaves out the bootstrap group: the KubeadmConfigs the Machines reference.
    "kubeadmconfigs": ({"rbac": {"providers": [{"apiGroup": "infrastructure.cluster.x-k8s.io", "resources": [
        "awsclusters", "awsmachines", "dockerclusters", "dockermachines"]}]}}, (KUBEADM_CONFIGS,)),
}


@pytest.mark.parametrize("case", list(FORBIDDEN))
def test_a_resource_the_chart_does_not_grant_is_reported_not_waited_for(hub: Hub, case: str) -> None:
    values, forbidden = FORBIDDEN[case]
    install = hub.install(f"fse-without-{case}", values)
    assert not install.rejected
    namespaces = values.get("namespaces")

    def scopes(name: str) -> list[str | None]:
        return [None] if name in CLUSTER_SCOPED or not namespaces else list(namespaces)

    for name in forbidden:
        resource, _, group = name.partition(".")
        assert not any(hub.allowed(install, group, resource, ns) for ns in scopes(name))
    hub.await_rbac(install, namespaces, expected(namespaces) - set(forbidden))
    with hub.run(install, f"without-{case}") as exporter:
        exporter.wait_ready(timeout=20)
        status, body = exporter.get("/readyz")
        samples = exporter.samples()
        log = exporter.log_text()
    assert status == 200
    wheres = [name + (f" in namespace {ns}" if ns else "") for name in forbidden for ns in scopes(name)]
    # /readyz lists each forbidden scope, and nothing else.
    assert body.splitlines()[0] == "ready"
    assert sorted(line.partition(": forbidden")[0] for line in body.splitlines()[1:]) == sorted(wheres), body
    # ... with the server's whole message, which names what is missing.
    for line in body.splitlines()[1:]:
        resource, _, group = line.partition(": forbidden")[0].split(" ")[0].partition(".")
        assert f'cannot list resource "{resource}" in API group "{group}"' in line, line
    # Everything else is read; only the forbidden resources are missing.
    assert _unsynced(samples, expected(namespaces)) == sorted(forbidden)
    for name in forbidden:
        assert value(samples, "fleet_status_exporter_resource_unreadable", resource=name,
                     reason="forbidden") == 1.0
    assert _by_resource(samples, "resource_unreadable") == dict.fromkeys(forbidden, 1.0)
    # One warning per forbidden scope, naming the resource (and the namespace); nothing worse.
    logged = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    warned = sorted(d["msg"].partition(" (")[0] for d in logged
                    if any(name in d["msg"] for name in forbidden) and d["level"] not in ("debug", "info"))
    assert warned == sorted(f"cannot list {w}" for w in wheres), log[-3000:]
    assert [d for d in logged if d["level"] in ("error", "critical")] == []
