"""values.yaml, values.schema.json, the ci/ scenarios, Chart.yaml and the chart README agree.

Helm validates the merged values against values.schema.json on install, upgrade, lint and
template; these tests do the same with jsonschema (draft-07), check that the schema types every
value and rejects wrong types and unknown keys, and that the README's values table documents
exactly the keys values.yaml has.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.chart.harness import CHART, ci_values_files

SCHEMA = json.loads((CHART / "values.schema.json").read_text())
DEFAULTS = yaml.safe_load((CHART / "values.yaml").read_text())
VALIDATOR = jsonschema.Draft7Validator(SCHEMA)
# Maps holding Kubernetes structures (a security context, a label selector, ...): typed and
# documented as one value, not key by key.
WHOLE = {
    "securityContext",
    "containerSecurityContext",
    "resources",
    "livenessProbe",
    "readinessProbe",
    "networkPolicy.dns.podSelector",
}


def coalesce(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Helm's merge of user values into defaults: maps merge, null deletes."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = coalesce(out[key], value)
        else:
            out[key] = value
    return out


def errors(values: dict[str, Any]) -> list[str]:
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(values)]


def leaf_paths(values: dict[str, Any], prefix: str = "") -> Iterator[str]:
    """Dotted paths of the scalars, lists, empty maps and WHOLE maps."""
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and path not in WHOLE:
            yield from leaf_paths(value, f"{path}.")
        else:
            yield path


def schema_at(path: str) -> dict[str, Any]:
    node: dict[str, Any] = SCHEMA
    for part in path.split("."):
        node = node["properties"][part]
    return node


def test_schema_is_a_valid_draft_07_schema() -> None:
    assert SCHEMA["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.Draft7Validator.check_schema(SCHEMA)


def test_defaults_validate() -> None:
    assert errors(DEFAULTS) == []


@pytest.mark.parametrize("path", ci_values_files(), ids=lambda p: p.name)
def test_ci_scenarios_validate_after_merging(path: Path) -> None:
    assert errors(coalesce(DEFAULTS, yaml.safe_load(path.read_text()))) == []


def test_every_value_has_a_typed_schema_entry() -> None:
    untyped = []
    for path in leaf_paths(DEFAULTS):
        try:
            node = schema_at(path)
        except KeyError:
            untyped.append(path)
            continue
        if "type" not in node and "oneOf" not in node:
            untyped.append(path)
    assert untyped == []


def test_schema_has_no_entry_without_a_default() -> None:
    # A schema entry for a value that values.yaml does not have is a typo or a stale entry.
    # "global" is the exception Helm itself adds for subcharts.
    assert set(SCHEMA["properties"]) - {"global"} == set(DEFAULTS) - {"global"}


@pytest.mark.parametrize(
    "override",
    [
        {"replicas": "3"},
        {"replicas": 0},
        {"service": {"port": "9842"}},
        {"service": {"port": 70000}},
        {"logLevel": "verbose"},
        {"logFormat": "text-color"},
        {"telemetryPath": "metrics"},
        {"namespaces": "fleet-a"},
        {"namespaces": ["Fleet_A"]},
        {"autosharding": {"enabled": "yes"}},
        {"autosharding": {"enable": True}},
        {"replica": 2},
        {"image": {"pullPolicy": "Sometimes"}},
        {"image": {"sha": "sha256:abc"}},
        {"prometheus": {"monitor": {"interval": "30 seconds"}}},
        {"prometheus": {"monitor": {"honorLabels": "true"}}},
        {"prometheusRule": {"runbookUrlBase": ""}},
        {"dashboards": {"labelValue": 1}},
        {"networkPolicy": {"kubeAPIServer": {"ports": ["https"]}}},
        {"podDisruptionBudget": {"maxUnavailable": 1.5}},
        {"rbac": {"infrastructureMachinePools": ["DockerMachinePool"]}},
        {"webConfig": {"mountPath": "relative/path"}},
        {"livenessProbe": {"httpGet": {"scheme": "TCP"}}},
        {"customLabels": {"team": 1}},
        {"prometheusRule": {"dashboardUrlBase": ""}},
        {"prometheusRule": {"disabled": {"CAPIClusterPaused": "yes"}}},
        {"prometheusRule": {"rules": {"capi-cluster": "off"}}},
        {"prometheusRule": {"additionalRuleLabels": {"team": 1}}},
        {"prometheusRule": {"additionalRuleGroupAnnotations": {"capi-cluster": {"bad-name": "x"}}}},
        {"prometheusRule": {"additionalPrometheusRulesMap": {"team": ["groups"]}}},
        {"alertmanagerConfig": {"receivers": [{"webhookConfigs": []}]}},
        {"alertmanagerConfig": {"config": ["route"]}},
        {"alertmanagerConfig": {"route": {}}},
        {"metricAllowlist": "capi_.*"},
        {"metricDenylist": ["capi_(a|b),x"]},
        {"metricLabelsAllowlist": ["clusters"]},
        {"metricLabelsAllowlist": ["clusters=[env],machines=[*]"]},
        {"metricAnnotationsAllowList": ["clusters=env"]},
        {"prometheusScrape": "true"},
        {"prometheus": {"podMonitor": {"targetLabels": ["x"]}}},
        {"prometheus": {"podMonitor": {"interval": "30 seconds"}}},
        {"kubeconfig": {"secret": "not base64!"}},
        {"kubeconfig": {"mountPath": "relative"}},
        {"kubeconfig": {"key": "a/b"}},
    ],
    ids=lambda o: json.dumps(o, separators=(",", ":")),
)
def test_schema_rejects_wrong_values(override: dict[str, Any]) -> None:
    assert errors(coalesce(DEFAULTS, override)) != []


@pytest.mark.parametrize(
    "override",
    [
        {"podDisruptionBudget": {"enabled": True, "minAvailable": "50%"}},
        {"imagePullSecrets": ["a", {"name": "b"}]},
        {"securityContext": {"supplementalGroups": [1000]}},
        {"webConfig": {"config": {"tls_server_config": {"cert_file": "/c", "key_file": "/k"}}}},
        {"prometheus": {"monitor": {"interval": "1m30s", "scheme": "https"}}},
        {"prometheusRule": {"additionalPrometheusRulesMap": {"a": "groups: []\n", "b": {"groups": []}}}},
        {"alertmanagerConfig": {"enabled": True, "config": "route: {receiver: x}\n"}},
        {"metricAllowlist": ["capi_.*_status_condition", "capi_machine_info(_x)?"]},
        {"metricLabelsAllowlist": ["clusters=[env, team]", "*=[*]", "machinepools=[]"]},
        {"kubeconfig": {"enabled": True, "secret": "YXBpVmVyc2lvbjogdjEK\nYQ=="}},
    ],
    ids=lambda o: json.dumps(o, separators=(",", ":")),
)
def test_schema_accepts_valid_variants(override: dict[str, Any]) -> None:
    assert errors(coalesce(DEFAULTS, override)) == []


def readme_keys() -> set[str]:
    text = (CHART / "README.md").read_text()
    section = text.split("## Values", 1)[1]
    return set(re.findall(r"^\| `([A-Za-z0-9_.]+)` \|", section, flags=re.MULTILINE))


def test_readme_documents_every_value() -> None:
    assert set(leaf_paths(DEFAULTS)) - readme_keys() == set()


def test_readme_documents_no_unknown_value() -> None:
    # securityContext.enabled is the chart's own switch inside a WHOLE map, so it has its own row.
    known = set(leaf_paths(DEFAULTS)) | {"securityContext.enabled"}
    assert readme_keys() - known == set()


def test_chart_metadata() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2"
    assert chart["name"] == CHART.name
    assert re.fullmatch(r"\d+\.\d+\.\d+", chart["version"])
    assert isinstance(chart["appVersion"], str)
    pyproject = (CHART.parents[1] / "pyproject.toml").read_text()
    version = re.search(r'^version = "([^"]+)"', pyproject, flags=re.MULTILINE)
    assert version is not None
    assert chart["appVersion"] == version.group(1), "the image tag defaults to appVersion"


def test_helmignore_keeps_test_scenarios_out_of_the_package() -> None:
    ignored = (CHART / ".helmignore").read_text().split()
    assert "ci/" in ignored
    assert "sync-files.sh" in ignored
