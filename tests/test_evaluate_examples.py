"""``evaluate`` on the example fleet: the golden JSON, and each example's story in the results.

The golden file is regenerated only on purpose:
``UPDATE_GOLDEN=1 python -m pytest tests/test_evaluate_examples.py``.
"""

from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from exporter.cli import main

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "evaluate-examples.json"
NOW = "2026-11-20T12:00:00Z"


def run_evaluate(output: str) -> str:
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = main(["evaluate", "--from-files", str(ROOT / "examples"), "--now", NOW, "--output", output])
    assert code == 0
    return buf.getvalue()


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return json.loads(run_evaluate("json"))


def test_json_matches_golden(document: dict[str, Any]) -> None:
    text = json.dumps(document, indent=2, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(text)
    assert GOLDEN.exists(), "golden file missing: run with UPDATE_GOLDEN=1 once and review the diff"
    assert text == GOLDEN.read_text()


def test_json_shape_follows_the_stable_interface(document: dict[str, Any]) -> None:
    objects = document["objects"]
    assert objects, "the example fleet evaluates to objects"
    for obj in objects:
        required = {"apiVersion", "kind", "namespace", "name", "reported", "computed", "counters", "phase"}
        assert required <= set(obj)
        for cond in obj["reported"] + obj["computed"]:
            assert set(cond) == {"type", "status", "reason", "message"}
            assert cond["status"] in ("True", "False", "Unknown")
        for value in obj["counters"].values():
            assert value is None or isinstance(value, int)


def find(document: dict[str, Any], kind: str, name: str) -> dict[str, Any]:
    matches = [o for o in document["objects"] if o["kind"] == kind and o["name"] == name]
    assert len(matches) == 1, f"{kind}/{name} not found exactly once"
    return matches[0]


def computed(obj: dict[str, Any], type_: str) -> tuple[str, str]:
    cond = next((c for c in obj["computed"] if c["type"] == type_), None)
    assert cond is not None, f"{obj['kind']}/{obj['name']} computes no {type_}"
    return cond["status"], cond["reason"]


STORIES = [
    # (story, kind, name, condition, status, reason)
    ("healthy cluster is available", "Cluster", "prod-eu-1", "Available", "True", "Available"),
    ("rollout: the cluster reports rolling out", "Cluster", "prod-us-1", "RollingOut", "True", "RollingOut"),
    ("rollout: the old machines are not up to date", "MachineDeployment", "prod-us-1-md-0",
     "MachinesUpToDate", "False", "NotUpToDate"),
    ("failing machine is not ready", "Machine", "prod-ap-1-md-0-7c9tq-ncw5j", "Ready", "False", "NotReady"),
    ("failing machine is being remediated", "MachineDeployment", "prod-ap-1-md-0", "Remediating", "True",
     "Remediating"),
    ("etcd trouble shows on the control plane", "KubeadmControlPlane", "prod-ap-1-control-plane",
     "ControlPlaneComponentsHealthy", "False", "NotHealthy"),
    ("v1beta1-only cluster gets v1beta2 conditions computed", "Cluster", "legacy-west-1", "WorkersAvailable",
     "False", "NotAvailable"),
    ("v1beta1-only machine not ready", "Machine", "legacy-west-1-md-0-bq7n2-z2hct", "Ready", "False",
     "NotReady"),
    ("v1beta1 with status.v1beta2 is healthy", "Cluster", "legacy-east-1", "Available", "True", "Available"),
]


@pytest.mark.parametrize("story,kind,name,type_,status,reason", STORIES, ids=[s[0] for s in STORIES])
def test_example_story_shows_in_computed_conditions(
    document: dict[str, Any], story: str, kind: str, name: str, type_: str, status: str, reason: str
) -> None:
    assert computed(find(document, kind, name), type_) == (status, reason), story


def test_table_output_is_a_tree_with_worst_conditions_first() -> None:
    text = run_evaluate("table")
    line = next(ln for ln in text.splitlines() if ln.startswith("Cluster/legacy-west-1 "))
    assert "Available=False(NotAvailable)" in line
    assert "├─KubeadmControlPlane/" in text and "└─Machine/" in text


def test_table_shows_degraded_true_as_an_issue_and_degraded_false_as_healthy() -> None:
    text = run_evaluate("table")
    lines = text.splitlines()
    addon = next(ln for ln in lines if ln.startswith("ManagedClusterAddOn/governance-policy-framework "))
    # headline first (Available, fine), then the issue: Degraded is True when something is wrong
    assert addon.split()[1] == "Available=True(ManagedClusterAddOnLeaseUpdated)"
    assert "Degraded=True(PolicyControllerRestarting)" in addon
    proxy = next(ln for ln in lines if ln.startswith("ManagedClusterAddOn/cluster-proxy "))
    assert proxy.split()[1] == "Available=False(ProbeUnavailable)"
    work = next(ln for ln in lines if ln.startswith("ManifestWork/hello-web-qp4jw "))
    assert "Degraded=False" not in work  # a healthy ManifestWork's Degraded False is no issue
    assert "    Degraded: Healthy" not in text
