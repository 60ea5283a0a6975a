"""Metric selection: the four flags, what they select, what a denied family costs, the labels families.

Owns the checks of ``exporter.metrics.selection`` and its wiring: flag syntax and errors (exit 2
naming the flag and the value), fully anchored family expressions, self-metrics always served,
denied families never extracted, labels and annotations kept by the projection only when asked
for (and only the keys named), kube-state-metrics' label-name sanitisation and collision rule,
an edited label reaching the scrape, the engine's results unchanged by any of it, and the real
``serve`` on examples/ with the flags (startup log, warning, exposition).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from exporter import cli
from exporter.app import FilteringSink, Pipeline
from exporter.engine.evaluate import evaluate_all
from exporter.engine.model import EMPTY_MAP, Base, Meta, Result
from exporter.engine.parse import MetadataSelection, project
from exporter.engine.rule_inputs import export_only_change
from exporter.metrics import process, selfmetrics
from exporter.metrics.catalog import kind_spec, object_families
from exporter.metrics.common import prometheus_labels, sanitise_label_name
from exporter.metrics.renderer import Renderer, render_object
from exporter.metrics.selection import (
    DEFAULT,
    LEAN,
    RESOURCES,
    Selection,
    parse_key_allowlist,
    parse_patterns,
)
from exporter.metrics.selfmetrics import ExporterStats
from exporter.sources.files import load
from exporter.store import Store

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _names(selection: Selection) -> list[str]:
    return [f.name for f in selection.families()]


# ---- flags -------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,flag,value", [
    (["--metric-allowlist", "capi_(cluster"], "--metric-allowlist", "capi_(cluster"),
    (["--metric-denylist", "capi_cluster_info,*bad"], "--metric-denylist", "*bad"),
    (["--metric-allowlist", "capi_.*", "--metric-denylist", "ocm_.*"], "--metric-allowlist", "capi_.*"),
    (["--metric-labels-allowlist", "pods=[app]"], "--metric-labels-allowlist", "pods"),
    (["--metric-annotations-allowlist", "clusters=[a],nodes=[*]"], "--metric-annotations-allowlist", "nodes"),
    (["--metric-labels-allowlist", "clusters=env"], "--metric-labels-allowlist", "clusters=env"),
    (["--metric-labels-allowlist", "clusters=[env"], "--metric-labels-allowlist", "clusters=[env"),
    (["--metric-labels-allowlist", "clusters=[env],"], "--metric-labels-allowlist", "clusters=[env],"),
    (["--metric-labels-allowlist", "clusters=[env]x"], "--metric-labels-allowlist", "clusters=[env]x"),
    (["--metric-labels-allowlist", "=[env]"], "--metric-labels-allowlist", "=[env]"),
    (["--metric-labels-allowlist", "clusters=[a,,b]"], "--metric-labels-allowlist", "clusters=[a,,b]"),
    (["--metric-labels-allowlist", "clusters=[team*]"], "--metric-labels-allowlist", "team*"),
])
def test_bad_selection_flags_exit_2_naming_the_flag_and_the_value(
        args: list[str], flag: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", "--from-files", str(EXAMPLES), *args]) == 2
    err = capsys.readouterr().err
    assert flag in err and value in err, err
    assert "expected" in err or "exclude each other" in err or "not a pattern" in err, err


def test_the_flags_reach_the_config() -> None:
    config = cli.parse(["serve", "--from-files", str(EXAMPLES),
                        "--metric-denylist", " capi_machine_info ,x_.*",
                        "--metric-labels-allowlist", "clusters=[env, team],machines=[*],clusters=[site]",
                        "--metric-annotations-allowlist", "*=[owner]"])
    assert config.metric_denylist == ("capi_machine_info", "x_.*")
    assert config.metric_allowlist == ()
    assert config.metric_labels_allowlist == (("Cluster", ("env", "team", "site")), ("Machine", ("*",)))
    assert config.metric_annotations_allowlist == tuple((kind, ("owner",)) for kind in RESOURCES.values())


def test_an_empty_key_list_selects_nothing_as_in_kube_state_metrics() -> None:
    found = parse_key_allowlist("--metric-labels-allowlist", "clusters=[],machines=[a]")
    assert found == (("Machine", ("a",)),)
    assert parse_key_allowlist("--metric-labels-allowlist", "") == ()


def test_resources_are_the_plural_lowercase_kinds_the_exporter_serves() -> None:
    assert set(RESOURCES) == {
        "clusters", "clusterclasses", "kubeadmcontrolplanes", "machinedeployments", "machinesets", "machines",
        "machinepools", "machinehealthchecks", "manifestworkreplicasets", "manifestworks", "placements",
        "managedclusters", "managedclusteraddons", "clusterresourcesets", "clusterresourcesetbindings",
        "extensionconfigs", "machinedrainrules", "ipaddressclaims",
    }


# ---- which families ----------------------------------------------------------------------------

def test_expressions_are_anchored_to_the_whole_family_name() -> None:
    names = _names(Selection(allow=parse_patterns("--metric-allowlist", "capi_cluster_status_condition")))
    assert names == ["capi_cluster_status_condition"]  # not _reason, _computed, ... nor other kinds'
    names = _names(Selection(allow=("cluster_info",)))
    assert names == []  # a search would have found capi_cluster_info
    names = _names(Selection(deny=("capi_machine_.*",)))
    assert "capi_machine_info" not in names and "capi_machinedeployment_info" in names


def test_the_default_serves_every_family_but_labels_and_annotations() -> None:
    every = [f.name for f in object_families()]
    default = _names(DEFAULT)
    assert set(every) - set(default) == {f.name for f in object_families() if f.free_labels}
    assert len(every) - len(default) == 2 * len(RESOURCES)
    # A labels family is served once its resource is named, and the family list allows it.
    named = Selection(labels=(("Cluster", ("env",)),))
    assert set(_names(named)) - set(default) == {"capi_cluster_labels"}
    denied = Selection(deny=("capi_cluster_labels",), labels=(("Cluster", ("env",)),))
    assert _names(denied) == default
    assert denied.metadata() == MetadataSelection()  # so the projection keeps nothing


def test_unmatched_allowlist_expressions_are_reported() -> None:
    selection = Selection(allow=("capi_cluster_info", "capi_clustr_.*", "fleet_status_exporter_build_info",
                                 "process_.*", "python_info"))
    assert selection.unmatched() == ["capi_clustr_.*"]


def test_labels_asked_for_a_family_left_out_are_reported() -> None:
    selection = Selection(allow=LEAN, labels=(("Cluster", ("env",)),), annotations=(("Machine", ("*",)),))
    assert selection.unserved() == [
        ("--metric-labels-allowlist", "clusters", "capi_cluster_labels"),
        ("--metric-annotations-allowlist", "machines", "capi_machine_annotations"),
    ]
    assert Selection(allow=(*LEAN, "capi_cluster_labels"), labels=(("Cluster", ("env",)),)).unserved() == []
    assert Selection(labels=(("Cluster", ("env",)),)).unserved() == []


def test_a_denied_family_is_never_extracted() -> None:
    # Its extractor raising would leave the object out: with the family denied it is never called.
    objects = load(EXAMPLES).projections
    machine = next(o for o in objects if o.meta.kind == "Machine")
    spec = kind_spec(machine)
    assert spec is not None
    calls: list[str] = []

    def boom(_: Any) -> Any:
        calls.append("extracted")
        raise AssertionError("a denied family was extracted")

    poisoned = dataclasses.replace(spec, families=tuple(
        dataclasses.replace(f, extract=boom) if f.name == "capi_machine_info" else f for f in spec.families))
    result = Result(machine.key, machine.meta.api_version, machine.meta.uid, machine.cluster_name)
    families = Selection(deny=("capi_machine_info",)).families()
    index = {f.name: i for i, f in enumerate(families)}
    fragments = render_object(poisoned, index, machine, result)
    assert calls == [] and fragments
    with pytest.raises(AssertionError):
        render_object(poisoned, {f.name: i for i, f in enumerate(DEFAULT.families())}, machine, result)


def test_a_denied_family_has_no_header_and_no_lines() -> None:
    objects = load(EXAMPLES).projections
    results = evaluate_all(objects, 1_795_000_000.0)
    by_key = {r.key: r for r in results}
    items = [(o, by_key[o.key]) for o in objects if o.key in by_key]
    full, lean = Renderer(), Renderer(Selection(allow=LEAN).families())
    for renderer in (full, lean):
        renderer.update_group(("fleet", "", ""), items)
    full_body, lean_body = full.render_body().decode(), lean.render_body().decode()
    served = {f.name for f in text_string_to_metric_families(lean_body)}
    assert served == set(LEAN) & {f.name for f in text_string_to_metric_families(full_body)}
    assert "capi_machine_addresses" in full_body and "capi_machine_addresses" not in lean_body
    assert lean.text_bytes < full.text_bytes


# ---- labels and annotations --------------------------------------------------------------------

def test_sanitisation_follows_kube_state_metrics() -> None:
    assert sanitise_label_name("app.kubernetes.io/name") == "app_kubernetes_io_name"
    assert sanitise_label_name("topology.kubernetes.io/zone") == "topology_kubernetes_io_zone"
    assert sanitise_label_name("managedBy") == "managed_by"  # camelCase to snake_case
    assert sanitise_label_name("ABC") == "abc"  # only a lower-case letter or digit before an upper one
    assert sanitise_label_name("v2Beta") == "v2_beta"
    assert sanitise_label_name("größe") == "gr__e"  # every character outside [a-zA-Z0-9_]


def test_keys_that_sanitise_alike_are_numbered_in_sorted_order() -> None:
    labels = prometheus_labels("label", {"team": "x", "a_b": "2", "a.b": "1", "a-b": "0", "z": ""})
    assert labels == ("label_a_b_conflict1", "0", "label_a_b_conflict2", "1", "label_a_b_conflict3", "2",
                      "label_team", "x", "label_z", "")
    # A key that reads like a renamed one cannot make a label repeat (the scrape would fail).
    labels = prometheus_labels("label", {"a.b": "1", "a_b": "2", "a_b_conflict1": "3"})
    names = labels[0::2]
    assert len(names) == len(set(names)) and "label_a_b_conflict2" in names


RAW_MACHINE: dict[str, Any] = {
    "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
    "metadata": {"name": "m1", "namespace": "ns", "uid": "u1",
                 "labels": {"cluster.x-k8s.io/cluster-name": "c1", "env": "prod", "team": "a", "big": "x"},
                 "annotations": {"owner": "ops", "note": "n"}},
    "spec": {"clusterName": "c1"},
}


def test_projections_keep_no_label_unless_asked_and_only_the_keys_named() -> None:
    plain = project(RAW_MACHINE)
    assert plain is not None
    assert plain.meta.exported_labels is EMPTY_MAP and plain.meta.exported_annotations is EMPTY_MAP
    other_kind = project(RAW_MACHINE, selection=MetadataSelection({"Cluster": frozenset({"*"})}))
    assert other_kind is not None and other_kind.meta.exported_labels is EMPTY_MAP
    named = project(RAW_MACHINE, selection=MetadataSelection({"Machine": frozenset({"env", "missing"})},
                                                             {"Machine": frozenset({"*"})}))
    assert named is not None
    assert dict(named.meta.exported_labels) == {"env": "prod"}
    assert dict(named.meta.exported_annotations) == {"owner": "ops", "note": "n"}
    # What the engine reads is the same either way.
    assert named.meta.labels == plain.meta.labels and named.cluster_name == plain.cluster_name


def test_the_engine_results_do_not_depend_on_the_labels_kept() -> None:
    now = 1_795_000_000.0
    every = MetadataSelection({k: frozenset({"*"}) for k in RESOURCES.values()},
                              {k: frozenset({"*"}) for k in RESOURCES.values()})
    plain = evaluate_all(load(EXAMPLES).projections, now)
    labelled = load(EXAMPLES, project=lambda raw: project(raw, selection=every)).projections
    assert any(o.meta.exported_labels for o in labelled)
    assert evaluate_all(labelled, now) == plain


def _pipeline(selection: Selection) -> tuple[Store, Pipeline, Renderer]:
    store = Store(export_only=export_only_change)
    families = selection.families()
    renderer = Renderer(families)
    pipeline = Pipeline(store, FilteringSink(store), renderer, ExporterStats(), lambda _: True)
    return store, pipeline, renderer


def _series(body: bytes, family: str) -> list[dict[str, str]]:
    return [s.labels for f in text_string_to_metric_families(body.decode()) if f.name == family
            for s in f.samples]


def test_an_edited_label_reaches_the_scrape() -> None:
    selection = Selection(labels=(("Machine", ("env",)), ("Cluster", ("*",))))
    kept = selection.metadata()
    store, pipeline, renderer = _pipeline(selection)
    for obj in load(EXAMPLES, project=lambda raw: project(raw, selection=kept)).projections:
        store.upsert(obj)
    asyncio.run(pipeline.run_pass(store.take_dirty(), store.take_exported()))
    raws = [raw for path in sorted(EXAMPLES.rglob("*.yaml")) for raw in yaml.safe_load_all(path.read_text())
            if isinstance(raw, dict) and raw.get("kind") == "Machine"]
    raw = copy.deepcopy(raws[0])
    key = ("Machine", raw["metadata"]["namespace"], raw["metadata"]["name"])
    series = [s for s in _series(renderer.render_body(), "capi_machine_labels") if s["name"] == key[2]]
    assert len(series) == 1 and "label_env" not in series[0]  # named, but the Machine has no env label
    raw["metadata"].setdefault("labels", {})["env"] = "canary"
    raw["metadata"]["labels"]["unlisted"] = "x"
    updated = project(raw, store.get(key), kept)
    assert updated is not None
    store.upsert(updated)
    exported = store.take_exported()
    assert key in exported  # a Machine's label is no rule input: re-rendered, not re-evaluated
    asyncio.run(pipeline.run_pass(store.take_dirty(), exported))
    series = [s for s in _series(renderer.render_body(), "capi_machine_labels") if s["name"] == key[2]]
    assert series == [{"name": key[2], "namespace": key[1], "uid": raw["metadata"].get("uid", ""),
                       "cluster_name": updated.cluster_name, "label_env": "canary"}]


def test_every_object_of_a_named_resource_gets_one_series() -> None:
    selection = Selection(labels=(("Cluster", ("environment", "team")),),
                          annotations=(("ManagedCluster", ("*",)),))
    store, pipeline, renderer = _pipeline(selection)
    for obj in load(EXAMPLES, project=lambda raw: project(raw, selection=selection.metadata())).projections:
        store.upsert(obj)
    asyncio.run(pipeline.run_pass(store.take_dirty(), store.take_exported()))
    body = renderer.render_body()
    labelled = _series(body, "capi_cluster_labels")
    names = {s["name"] for s in _series(body, "capi_cluster_info")}
    assert {s["name"] for s in labelled} == names and len(labelled) == len(names)
    assert {s.get("label_environment") for s in labelled} >= {"prod", "legacy"}
    allowed = {"name", "namespace", "uid", "label_environment", "label_team"}
    assert not [s for s in labelled if set(s) - allowed]
    assert _series(body, "ocm_managedcluster_annotations")
    assert not _series(body, "capi_machine_labels")


# ---- the real serve ----------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_logs_the_selection_and_serves_it(tmp_path: Path) -> None:
    port = _free_port()
    log = tmp_path / "exporter.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "exporter", "serve", "--from-files", str(EXAMPLES),
         "--web.listen-address", f"127.0.0.1:{port}",
         "--metric-allowlist",
         "capi_cluster_info,capi_machine_.*_condition,capi_cluster_labels,capi_clustr_info",
         "--metric-labels-allowlist", "clusters=[environment]",
         "--metric-annotations-allowlist", "machines=[owner]"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    try:
        deadline = time.monotonic() + 30
        body = b""
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
                    if r.status == 200:
                        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as m:
                            body = m.read()
                        break
            except OSError:
                pass
            time.sleep(0.2)
        assert body, log.read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    families = {f.name for f in text_string_to_metric_families(body.decode())}
    # The parser names counters without their _total suffix.
    own = {f.name.removesuffix("_total") for f in (*selfmetrics.FAMILIES, *process.FAMILIES)}
    objects = families - own
    assert objects == {"capi_cluster_info", "capi_machine_status_condition", "capi_cluster_labels"}
    assert {"fleet_status_exporter_build_info", "process_resident_memory_bytes"} <= families  # never filtered
    assert 'label_environment="prod"' in body.decode()
    text = log.read_text()
    assert "metric families selected" in text and "selected=3 " in text, text
    assert "matches no family" in text and "capi_clustr_info" in text, text
    assert "--metric-annotations-allowlist names a resource whose family is not selected" in text, text
    assert "family=capi_machine_annotations" in text, text


def test_meta_fields_for_export_default_to_the_shared_empty_map() -> None:
    meta = Meta("Cluster", "cluster.x-k8s.io/v1beta2", "ns", "c")
    assert meta.exported_labels is EMPTY_MAP and meta.exported_annotations is EMPTY_MAP
    assert isinstance(project(RAW_MACHINE), Base)


@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool (Debian package prometheus)")
def test_every_labels_and_annotations_family_passes_promtool() -> None:
    every = Selection(labels=parse_key_allowlist("--metric-labels-allowlist", "*=[*]"),
                      annotations=parse_key_allowlist("--metric-annotations-allowlist", "*=[*]"))
    objects = load(EXAMPLES, project=lambda raw: project(raw, selection=every.metadata())).projections
    results = {r.key: r for r in evaluate_all(objects, 1_795_000_000.0)}
    renderer = Renderer(every.families())
    renderer.update_group(("fleet", "", ""), [(o, results[o.key]) for o in objects if o.key in results])
    text = renderer.render_body().decode()
    served = {f.name for f in text_string_to_metric_families(text)
              if f.name.endswith(("_labels", "_annotations"))}
    assert len(served) == 2 * len(RESOURCES)  # every kind has objects in examples/
    proc = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True,
                          check=False, timeout=60)
    assert proc.returncode == 0 and not proc.stdout.strip() and not proc.stderr.strip(), (
        proc.stdout + proc.stderr)
