"""The Helm chart renders valid Kubernetes objects for the default values and every ci/ scenario.

Covers the workload (Deployment or sharded StatefulSet), its arguments, probes and security
context, the Service, the NetworkPolicy, the PodDisruptionBudget, the web-config Secret and
NOTES.txt. RBAC is in test_chart_rbac.py, the Prometheus operator objects and dashboards in
test_chart_monitoring.py, values and schema in test_chart_values.py.
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.chart.harness import (
    CHART,
    KUBE_VERSION,
    Manifest,
    RenderError,
    by_kind,
    ci_values_files,
    container,
    one,
    render,
    render_text,
    workload,
)

# kubernetes-validate ships schemas for built-in kinds only.
CRD_KINDS = {"ServiceMonitor", "PodMonitor", "PrometheusRule", "AlertmanagerConfig"}
SCENARIOS: list[Path | None] = [None, *ci_values_files()]
STANDARD_LABELS = {
    "app.kubernetes.io/name": "fleet-status-exporter",
    "app.kubernetes.io/instance": "fse",
    "app.kubernetes.io/managed-by": "Helm",
    "helm.sh/chart": "fleet-status-exporter-0.1.0",
}


def scenario_id(path: Path | None) -> str:
    return "default" if path is None else path.name.removesuffix("-values.yaml")


@pytest.fixture(scope="module", params=SCENARIOS, ids=scenario_id)
def manifests(request: pytest.FixtureRequest) -> list[Manifest]:
    files = [] if request.param is None else [request.param]
    return render(values_files=files)


def scenario(name: str) -> list[Manifest]:
    return render(values_files=[CHART / "ci" / f"{name}-values.yaml"])


def args_of(manifests: list[Manifest]) -> list[str]:
    return list(container(manifests)["args"])


def test_ci_scenarios_exist() -> None:
    assert [scenario_id(p) for p in ci_values_files()] == [
        "01-namespaced",
        "02-sharded",
        "03-monitoring",
        "04-networkpolicy",
        "05-alerting",
        "06-selection",
        "07-podmonitor",
        "08-kubeconfig",
    ]


def test_core_kinds_validate_against_the_kubernetes_schemas(manifests: list[Manifest]) -> None:
    for manifest in manifests:
        if manifest["kind"] not in CRD_KINDS:
            kubernetes_validate.validate(manifest, KUBE_VERSION, strict=True)


def test_validation_is_strict_about_unknown_fields() -> None:
    # Guards the test above: a misplaced key in a template must fail validation, not pass silently.
    deployment = copy.deepcopy(one(render(), "Deployment"))
    deployment["spec"]["template"]["spec"]["containers"][0]["readinessprobe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBE_VERSION, strict=True)


def test_every_resource_has_the_standard_labels(manifests: list[Manifest]) -> None:
    for manifest in manifests:
        labels = manifest["metadata"]["labels"]
        assert STANDARD_LABELS.items() <= labels.items(), manifest["kind"]


def test_namespaced_resources_live_in_the_release_namespace() -> None:
    for manifest in render():
        if manifest["kind"].startswith("Cluster"):
            assert "namespace" not in manifest["metadata"]
        else:
            assert manifest["metadata"]["namespace"] == "monitoring", manifest["kind"]
            assert manifest["metadata"]["name"] == "fse-fleet-status-exporter"


def test_default_values_render_the_minimal_set() -> None:
    kinds = sorted(m["kind"] for m in render())
    assert kinds == ["ClusterRole", "ClusterRoleBinding", "Deployment", "Service", "ServiceAccount"]


def test_pod_meets_the_restricted_pod_security_standard(manifests: list[Manifest]) -> None:
    pod = workload(manifests)["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is True
    ctx = container(manifests)["securityContext"]
    assert ctx["readOnlyRootFilesystem"] is True
    assert ctx["allowPrivilegeEscalation"] is False
    assert ctx["capabilities"] == {"drop": ["ALL"]}
    assert ctx["runAsUser"] == 65532
    # With a read-only root filesystem, /tmp must be a writable volume.
    mounts = {m["mountPath"]: m["name"] for m in container(manifests)["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]


def test_probes_use_healthz_and_readyz_on_the_metrics_port(manifests: list[Manifest]) -> None:
    c = container(manifests)
    assert c["ports"] == [{"name": "http", "containerPort": 9842, "protocol": "TCP"}]
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http", "scheme": "HTTP"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http", "scheme": "HTTP"}


def test_resources_default_to_requests_and_a_memory_limit() -> None:
    assert container(render())["resources"] == {
        "requests": {"cpu": "100m", "memory": "256Mi"},
        "limits": {"memory": "512Mi"},
    }


def test_default_arguments() -> None:
    assert args_of(render()) == [
        "serve",
        "--web.listen-address=:9842",
        "--log.level=info",
        "--log.format=json",
    ]


def test_service_targets_the_container_port_by_name() -> None:
    manifests = render({"service": {"port": 9100}})
    service = one(manifests, "Service")
    assert service["spec"]["ports"] == [
        {"name": "http", "port": 9100, "targetPort": "http", "protocol": "TCP"}
    ]
    assert service["spec"]["selector"] == workload(manifests)["spec"]["selector"]["matchLabels"]
    assert "--web.listen-address=:9100" in args_of(manifests)
    assert container(manifests)["ports"][0]["containerPort"] == 9100


def test_image_defaults_to_the_app_version() -> None:
    assert container(render())["image"] == "ghcr.io/fleet-status-exporter/fleet-status-exporter:0.1.0"


def test_image_overrides() -> None:
    sha = "a" * 64
    c = container(
        render({"image": {"tag": "1.2.3", "sha": sha}, "global": {"imageRegistry": "mirror.example.com"}})
    )
    assert c["image"] == f"mirror.example.com/fleet-status-exporter/fleet-status-exporter:1.2.3@sha256:{sha}"


def test_image_pull_secrets_accept_names_and_objects() -> None:
    manifests = render({"imagePullSecrets": ["a", {"name": "b"}], "global": {"imagePullSecrets": ["g"]}})
    pod = workload(manifests)["spec"]["template"]["spec"]
    assert pod["imagePullSecrets"] == [{"name": "g"}, {"name": "a"}, {"name": "b"}]


def test_namespaced_scenario_passes_each_namespace_and_exclusion() -> None:
    assert args_of(scenario("01-namespaced")) == [
        "serve",
        "--web.listen-address=:9842",
        "--log.level=debug",
        "--log.format=logfmt",
        "--namespace=fleet-a",
        "--namespace=fleet-b",
        "--exclude-resource=MachineHealthCheck",
    ]


def test_without_cluster_role_the_exporter_watches_the_release_namespace() -> None:
    assert "--namespace=monitoring" in args_of(render({"rbac": {"useClusterRole": False}}))


def test_sharded_scenario_runs_a_statefulset_with_shard_auto() -> None:
    manifests = scenario("02-sharded")
    assert by_kind(manifests, "Deployment") == []
    sts = one(manifests, "StatefulSet")
    assert sts["spec"]["replicas"] == 3
    assert sts["spec"]["serviceName"] == one(manifests, "Service")["metadata"]["name"]
    args = args_of(manifests)
    assert args[-2:] == ["--shard=auto", "--total-shards=3"]
    # --shard auto takes the ordinal from the pod name, which only the downward API provides.
    assert {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in container(
        manifests
    )["env"]


def test_total_shards_follows_replicas() -> None:
    args = args_of(render({"autosharding": {"enabled": True}, "replicas": 5}))
    assert "--total-shards=5" in args


def test_replicas_without_autosharding_stay_a_deployment_without_shard_flags() -> None:
    manifests = render({"replicas": 2})
    assert one(manifests, "Deployment")["spec"]["replicas"] == 2
    assert not [a for a in args_of(manifests) if a.startswith("--shard")]
    assert "env" not in container(manifests)


def test_sharded_scenario_has_a_pod_disruption_budget() -> None:
    manifests = scenario("02-sharded")
    pdb = one(manifests, "PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == workload(manifests)["spec"]["selector"]["matchLabels"]


def test_pdb_min_available_takes_precedence() -> None:
    manifests = render({"podDisruptionBudget": {"enabled": True, "minAvailable": "50%"}})
    pdb = one(manifests, "PodDisruptionBudget")
    assert pdb["spec"] == {
        "minAvailable": "50%",
        "selector": {"matchLabels": {"app.kubernetes.io/name": "fleet-status-exporter",
                                     "app.kubernetes.io/instance": "fse"}},
    }


def egress_ports(rule: dict[str, Any]) -> set[tuple[int, str]]:
    return {(p["port"], p["protocol"]) for p in rule.get("ports", [])}


def test_network_policy_scenario_allows_only_api_server_dns_and_scrapes() -> None:
    policy = one(scenario("04-networkpolicy"), "NetworkPolicy")
    spec = policy["spec"]
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["podSelector"]["matchLabels"]["app.kubernetes.io/name"] == "fleet-status-exporter"
    api, dns = spec["egress"]
    assert egress_ports(api) == {(6443, "TCP")}
    assert api["to"] == [{"ipBlock": {"cidr": "10.0.0.1/32"}}, {"ipBlock": {"cidr": "172.18.0.2/32"}}]
    assert egress_ports(dns) == {(53, "UDP"), (53, "TCP")}
    assert dns["to"] == [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}]
    (ingress,) = spec["ingress"]
    assert ingress["ports"] == [{"port": 9842, "protocol": "TCP"}]
    monitoring = {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}
    assert ingress["from"] == [{"namespaceSelector": monitoring}]


def test_network_policy_defaults_never_cut_off_the_api_server() -> None:
    # An Egress policy without rules would block list/watch; the default allows the usual API
    # server ports to any address.
    spec = one(render({"networkPolicy": {"enabled": True}}), "NetworkPolicy")["spec"]
    api = spec["egress"][0]
    assert "to" not in api
    assert egress_ports(api) == {(443, "TCP"), (6443, "TCP")}
    assert "from" not in spec["ingress"][0]


def test_web_config_from_values_creates_a_secret_and_passes_the_flag() -> None:
    web = {"basic_auth_users": {"prometheus": "$2y$10$abcdefghijklmnopqrstuv"}}
    manifests = render({"webConfig": {"config": web}})
    secret = one(manifests, "Secret")
    assert secret["metadata"]["name"] == "fse-fleet-status-exporter-web-config"
    assert yaml.safe_load(secret["stringData"]["web-config.yml"]) == web
    assert "--web.config.file=/etc/fleet-status-exporter/web/web-config.yml" in args_of(manifests)
    pod = workload(manifests)["spec"]["template"]
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "web-config")
    assert volume["secret"]["secretName"] == secret["metadata"]["name"]
    # Changing the configuration must restart the pods.
    assert len(pod["metadata"]["annotations"]["checksum/web-config"]) == 64


def test_web_config_existing_secret_is_mounted_not_created() -> None:
    manifests = render({"webConfig": {"existingSecret": "my-web-config", "key": "web.yml"}})
    assert by_kind(manifests, "Secret") == []
    assert "--web.config.file=/etc/fleet-status-exporter/web/web.yml" in args_of(manifests)
    volumes = workload(manifests)["spec"]["template"]["spec"]["volumes"]
    volume = next(v for v in volumes if v["name"] == "web-config")
    items = [{"key": "web.yml", "path": "web.yml"}]
    assert volume["secret"] == {"secretName": "my-web-config", "items": items}


def test_extra_args_env_and_volumes_are_appended() -> None:
    manifests = render(
        {
            "extraArgs": ["--kubeconfig=/etc/kubeconfig/config"],
            "env": [{"name": "TZ", "value": "UTC"}],
            "volumes": [{"name": "kubeconfig", "secret": {"secretName": "hub-kubeconfig"}}],
            "volumeMounts": [{"name": "kubeconfig", "mountPath": "/etc/kubeconfig", "readOnly": True}],
        }
    )
    c = container(manifests)
    assert c["args"][-1] == "--kubeconfig=/etc/kubeconfig/config"
    assert c["env"] == [{"name": "TZ", "value": "UTC"}]
    assert c["volumeMounts"][-1]["name"] == "kubeconfig"
    assert workload(manifests)["spec"]["template"]["spec"]["volumes"][-1]["name"] == "kubeconfig"
    kubernetes_validate.validate(workload(manifests), KUBE_VERSION, strict=True)


def test_service_account_can_be_external() -> None:
    manifests = render({"serviceAccount": {"create": False, "name": "shared"}})
    assert by_kind(manifests, "ServiceAccount") == []
    assert workload(manifests)["spec"]["template"]["spec"]["serviceAccountName"] == "shared"
    assert one(manifests, "ClusterRoleBinding")["subjects"][0]["name"] == "shared"


def test_name_overrides() -> None:
    manifests = render({"fullnameOverride": "fleet"})
    assert {m["metadata"]["name"] for m in manifests} == {"fleet"}
    manifests = render({"nameOverride": "fsx"})
    assert workload(manifests)["metadata"]["name"] == "fse-fsx"
    assert workload(manifests)["metadata"]["labels"]["app.kubernetes.io/name"] == "fsx"


@pytest.mark.parametrize("values_file", SCENARIOS, ids=scenario_id)
def test_notes_render(values_file: Path | None) -> None:
    notes = render_text(values_files=[] if values_file is None else [values_file], notes=True)
    assert "kubectl --namespace monitoring port-forward service/fse-fleet-status-exporter 9842" in notes


def test_notes_describe_the_mode() -> None:
    sharded = render_text(values_files=[CHART / "ci" / "02-sharded-values.yaml"], notes=True)
    assert "a StatefulSet with 3 shards" in sharded
    namespaced = render_text(values_files=[CHART / "ci" / "01-namespaced-values.yaml"], notes=True)
    assert "Watched namespaces: fleet-a, fleet-b" in namespaced
    assert "export every object 2 times" in render_text({"replicas": 2}, notes=True)


def test_values_of_the_wrong_shape_fail_the_render() -> None:
    # Helm validates the merged values against values.schema.json before rendering anything.
    with pytest.raises(RenderError, match="values don't meet the specifications of the schema"):
        render({"namespaces": "fleet-a"})


# ---- metric selection, annotation-based scraping, a hub watched through a kubeconfig ----


def test_metric_selection_values_become_the_exporter_flags() -> None:
    args = args_of(scenario("06-selection"))
    assert args[4:] == [
        "--metric-denylist=.*_status_condition_last_transition_time,capi_machine_addresses",
        "--metric-labels-allowlist=clusters=[environment,region],machinedeployments=[*]",
        "--metric-annotations-allowlist=clusters=[cluster.x-k8s.io/managed-by]",
    ]
    allow = args_of(scenario("07-podmonitor"))
    assert allow[4:] == [
        "--metric-allowlist="
        "capi_.*_status_condition,capi_.*_(spec|status)_replicas.*,fleet_status_exporter_.*",
    ]


def test_a_regular_expression_reaches_the_flag_as_written() -> None:
    # YAML would read an unquoted ": " or " #" as structure: the argument is quoted.
    pattern = r"capi_(cluster|machine)_info: x #y \d{2}"
    assert args_of(render({"metricDenylist": [pattern]}))[-1] == f"--metric-denylist={pattern}"


def test_allowlist_and_denylist_together_fail_naming_both_values() -> None:
    with pytest.raises(RenderError) as failed:
        render({"metricAllowlist": ["capi_.*", "ocm_.*"], "metricDenylist": ["capi_machine_.*"]})
    message = str(failed.value)
    assert "metricAllowlist (capi_.*,ocm_.*)" in message
    assert "metricDenylist (capi_machine_.*)" in message


def test_without_selection_values_no_selection_flag_is_passed() -> None:
    assert not [a for a in args_of(render()) if a.startswith("--metric-")]


def test_prometheus_scrape_annotates_the_service_not_the_pods() -> None:
    manifests = render({"service": {"port": 9100}})
    assert one(manifests, "Service")["metadata"]["annotations"] == {
        "prometheus.io/scrape": "true", "prometheus.io/port": "9100", "prometheus.io/path": "/metrics",
    }
    pod = workload(manifests)["spec"]["template"]["metadata"]
    assert not [k for k in pod.get("annotations", {}) if k.startswith("prometheus.io/")]
    # The port annotation is the container port the endpoints resolve to.
    assert container(manifests)["ports"][0]["containerPort"] == 9100


def test_service_annotations_win_over_prometheus_scrape_and_off_means_none() -> None:
    service = one(render({"service": {"annotations": {"prometheus.io/scheme": "https",
                                                      "prometheus.io/path": "/m"}}}), "Service")
    assert service["metadata"]["annotations"] == {
        "prometheus.io/scrape": "true", "prometheus.io/port": "9842", "prometheus.io/path": "/m",
        "prometheus.io/scheme": "https",
    }
    assert "annotations" not in one(scenario("07-podmonitor"), "Service")["metadata"]


def kubeconfig_values(**extra: object) -> dict[str, object]:
    text = "apiVersion: v1\nkind: Config\nclusters: []\n"
    return {"kubeconfig": {"enabled": True, "secret": base64.b64encode(text.encode()).decode(), **extra}}


def test_kubeconfig_from_values_creates_a_secret_mounts_it_and_passes_the_flag() -> None:
    manifests = render(kubeconfig_values())
    secret = one(manifests, "Secret")
    assert secret["metadata"]["name"] == "fse-fleet-status-exporter-kubeconfig"
    assert base64.b64decode(secret["data"]["config"]).decode().startswith("apiVersion: v1")
    assert "--kubeconfig=/etc/fleet-status-exporter/kubeconfig/config" in args_of(manifests)
    pod = workload(manifests)["spec"]["template"]
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "kubeconfig")
    assert volume["secret"] == {"secretName": secret["metadata"]["name"],
                                "items": [{"key": "config", "path": "config"}]}
    mount = next(m for m in container(manifests)["volumeMounts"] if m["name"] == "kubeconfig")
    assert mount == {"name": "kubeconfig", "mountPath": "/etc/fleet-status-exporter/kubeconfig",
                     "readOnly": True}
    # A new kubeconfig restarts the pods.
    assert len(pod["metadata"]["annotations"]["checksum/kubeconfig"]) == 64


def test_kubeconfig_creates_no_rbac_in_the_cluster_the_pod_runs_in() -> None:
    # The grants would be for this cluster, which the exporter does not read.
    for values in (kubeconfig_values(), {**kubeconfig_values(), "namespaces": ["fleet-a"]}):
        kinds = sorted(m["kind"] for m in render(values))
        assert kinds == ["Deployment", "Secret", "Service", "ServiceAccount"]


def test_kubeconfig_existing_secret_is_mounted_not_created() -> None:
    manifests = scenario("08-kubeconfig")
    assert by_kind(manifests, "Secret") == []
    assert "--kubeconfig=/etc/fleet-status-exporter/kubeconfig/kubeconfig" in args_of(manifests)
    volume = next(v for v in workload(manifests)["spec"]["template"]["spec"]["volumes"]
                  if v["name"] == "kubeconfig")
    assert volume["secret"]["secretName"] == "hub-eu-kubeconfig"
    annotations = workload(manifests)["spec"]["template"]["metadata"].get("annotations", {})
    assert "checksum/kubeconfig" not in annotations


def test_kubeconfig_enabled_without_a_secret_fails() -> None:
    with pytest.raises(RenderError, match=r"neither kubeconfig\.secret .* nor kubeconfig\.existingSecret"):
        render({"kubeconfig": {"enabled": True}})


def test_notes_name_the_scrape_mode_and_the_watched_cluster() -> None:
    assert "carries prometheus.io/scrape annotations" in render_text(notes=True)
    podmonitor = render_text(values_files=[CHART / "ci" / "07-podmonitor-values.yaml"], notes=True)
    assert "PodMonitor fse-fleet-status-exporter is created" in podmonitor
    kubeconfig = render_text(values_files=[CHART / "ci" / "08-kubeconfig-values.yaml"], notes=True)
    assert "the one of the kubeconfig in Secret hub-eu-kubeconfig" in kubeconfig
