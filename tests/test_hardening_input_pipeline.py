"""One bad object never stops the rest in ``serve``: a failure while evaluating one group or
rendering one object is contained to it (counted in fleet_status_exporter_errors_total, logged
once with its name, the others still exported), and a background task that fails is restarted
rather than ending the process."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from exporter import app as app_module
from exporter.app import FilteringSink, Pipeline
from exporter.engine import parse, parse_ocm
from exporter.engine.grouping import GroupKey
from exporter.metrics.renderer import Renderer
from exporter.metrics.selfmetrics import ExporterStats, render
from exporter.sources.files import FileSource, load
from exporter.store import Store

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
NOW = 1_795_176_000.0


def cluster(name: str, ns: str = "ns") -> dict[str, Any]:
    meta = {"name": name, "namespace": ns}
    return {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": meta}


def machine(name: str, cluster_name: str) -> dict[str, Any]:
    return {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": {"name": name, "namespace": "ns",
                         "labels": {"cluster.x-k8s.io/cluster-name": cluster_name}},
            "spec": {"clusterName": cluster_name}}


async def _loaded_pipeline(tmp_path: Path) -> tuple[Pipeline, Store]:
    store = Store()
    sink = FilteringSink(store)
    pipeline = Pipeline(store, sink, Renderer(), ExporterStats(), lambda _key: True)
    pipeline.clock = lambda: NOW
    source = FileSource(tmp_path, sink)
    await source.poll_once()
    return pipeline, store


def _error_count(stats: ExporterStats, stage: str) -> float:
    body = render(stats, [], rendered_objects=0, cached_objects=0).decode()
    for line in body.splitlines():
        if line.startswith(f'fleet_status_exporter_errors_total{{stage="{stage}"}}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def test_an_object_that_cannot_be_rendered_costs_only_itself(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # json.dumps writes the lone surrogate as \ud800, which json.loads reads back as one.
    docs = [cluster("c1"), machine("good", "c1"), machine("bad\ud800", "c1"), cluster("c2")]
    (tmp_path / "fleet.json").write_text(json.dumps({"kind": "List", "items": docs}))
    pipeline, store = await _loaded_pipeline(tmp_path)
    groups = store.take_dirty()
    with caplog.at_level(logging.WARNING, logger="exporter.app"):
        await pipeline.run_pass(set(groups))
        await pipeline.run_pass(set(groups))  # the same failure again: not logged again
    body = pipeline.renderer.render_body().decode()
    assert 'name="good"' in body and 'name="c1"' in body and 'name="c2"' in body
    assert "bad" not in body
    failures = [r for r in caplog.records if "bad" in r.getMessage() + str(getattr(r, "object", ""))]
    assert len(failures) == 1, [r.getMessage() for r in caplog.records]
    assert _error_count(pipeline.stats, "render") == 2


async def test_a_group_whose_evaluation_raises_costs_only_that_group(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = [cluster("c1"), machine("m1", "c1"), cluster("c2"), machine("m2", "c2")]
    (tmp_path / "fleet.json").write_text(json.dumps({"kind": "List", "items": docs}))
    pipeline, store = await _loaded_pipeline(tmp_path)
    real = app_module.evaluate_group_reusing

    def failing(group: Any, *args: Any) -> Any:
        if any(obj.meta.name == "c2" for obj in getattr(group, "objects", ())):
            raise ZeroDivisionError("a bug in a rule")
        return real(group, *args)

    monkeypatch.setattr(app_module, "evaluate_group_reusing", failing)
    groups: set[GroupKey] = store.take_dirty()
    with caplog.at_level(logging.WARNING, logger="exporter.app"):
        await pipeline.run_pass(set(groups))
        await pipeline.run_pass(set(groups))
    body = pipeline.renderer.render_body().decode()
    assert 'name="m1"' in body and 'name="c1"' in body
    assert 'name="c2"' not in body and 'name="m2"' not in body
    logged = [r for r in caplog.records if "ZeroDivisionError" in str(getattr(r, "error", ""))]
    assert len(logged) == 1 and "c2" in str(getattr(logged[0], "group", ""))
    assert _error_count(pipeline.stats, "evaluate") == 2

    monkeypatch.setattr(app_module, "evaluate_group_reusing", real)  # fixed: the group comes back
    await pipeline.run_pass(set(groups))
    assert 'name="m2"' in pipeline.renderer.render_body().decode()


def _mwrs(name: str, conditions: object = ()) -> dict[str, Any]:
    return {"apiVersion": "work.open-cluster-management.io/v1alpha1", "kind": "ManifestWorkReplicaSet",
            "metadata": {"name": name, "namespace": "ns"}, "status": {"conditions": conditions}}


@pytest.mark.pure_python
@pytest.mark.parametrize(("broken", "malformed"), [
    ("Machine", _mwrs("bad-fields", conditions="not a list")),
    ("ManifestWorkReplicaSet", {**cluster("bad-fields"), "status": {"conditions": "not a list"}}),
], ids=["capi", "ocm"])
async def test_an_object_whose_reading_raises_is_logged_once_and_counted_apart_from_bad_input(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, broken: str,
    malformed: dict[str, Any],
) -> None:
    def boom(*_: object) -> Any:
        raise ZeroDivisionError("a bug in a reader")

    # One kind's reader has a bug; an object of another kind has a malformed field (bad input).
    monkeypatch.setattr(parse, "CAPI_READERS", {key: (boom if key[1] == broken else reader)
                                                for key, reader in parse.CAPI_READERS.items()})
    if broken == "ManifestWorkReplicaSet":
        monkeypatch.setitem(parse_ocm._READERS, broken, boom)  # type: ignore[index]
    docs = [cluster("c1"), machine("m1", "c1"), _mwrs("w1"), malformed]
    fleet = tmp_path / "fleet.json"
    fleet.write_text(json.dumps({"kind": "List", "items": docs}))
    store = Store()
    stats = ExporterStats()
    sink = FilteringSink(store, errors=stats.errors)
    pipeline = Pipeline(store, sink, Renderer(), stats, lambda _key: True)
    pipeline.clock = lambda: NOW
    source = FileSource(tmp_path, sink)
    with caplog.at_level(logging.WARNING, logger="exporter.app"):
        await source.poll_once()
        fleet.write_text(json.dumps({"kind": "List", "items": docs}, indent=1))  # read again
        await source.poll_once()
    await pipeline.run_pass(store.take_dirty())

    assert _error_count(stats, "parse") == 2  # each read of the one object; the malformed one is not a bug
    assert source.stats.invalid == {}  # nor is either of them invalid input
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    name = "ns/m1" if broken == "Machine" else "ns/w1"
    assert getattr(errors[0], "object", "") == f"{broken} {name}"
    assert "ZeroDivisionError: a bug in a reader" in str(getattr(errors[0], "error", ""))
    malformed = [r for r in caplog.records if "bad-fields" in r.getMessage()]
    assert len(malformed) == 1 and malformed[0].levelno == logging.WARNING
    # Both are still exported, by their identity, with a finding each.
    body = pipeline.renderer.render_body().decode()
    short = name.split("/")[1]
    finding = "capi_finding" if broken == "Machine" else "ocm_manifestworkreplicaset_finding"
    assert any(line.startswith(finding) and f'name="{short}"' in line and 'code="MalformedField"' in line
               for line in body.splitlines())
    assert 'name="bad-fields"' in body and 'name="c1"' in body


async def test_a_failing_background_task_is_restarted_not_ended() -> None:
    stats = ExporterStats()
    runs: list[int] = []

    async def flaky() -> None:
        runs.append(1)
        if len(runs) < 3:
            raise RuntimeError("boom")

    await asyncio.wait_for(app_module.supervised("flaky", flaky, stats, backoff=0.0), 5)
    assert len(runs) == 3
    assert _error_count(stats, "task") == 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _metrics(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            return str(resp.read().decode())
    except OSError:
        return ""


def test_serve_keeps_serving_the_good_files_beside_hostile_ones(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    shutil.copytree(EXAMPLES / "capi", fleet)
    (fleet / "deep.json").write_text("[" * 100_000)
    (fleet / "surrogate.json").write_text(json.dumps(cluster("lone\ud800")))
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "exporter", "--from-files", str(fleet), "--web.listen-address",
         f"127.0.0.1:{port}", "--files.poll-interval", "0.2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
    )
    try:
        body = ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            body = _metrics(port)
            if "capi_cluster_info" in body and 'fleet_status_exporter_errors_total{stage="render"}' in body:
                break
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
        assert 'capi_cluster_info{name="prod-eu-1"' in body
        assert "lone" not in body
        assert 'fleet_status_exporter_list_total{resource="Cluster",result="error"} 1' in body
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_loaded_fixture_is_valid(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text(json.dumps(cluster("lone\ud800")))
    assert [o.meta.name for o in load(tmp_path).projections] == ["lone\ud800"]


async def test_a_provider_object_of_an_unexpected_shape_is_exported_as_far_as_it_can_be_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Conditions a string, provisioned a string: logged once with the object's name, a
    MalformedField finding per field, and what can be read (its failure, its owner) exported."""
    odd = {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachine",
           "metadata": {"name": "m1", "namespace": "ns", "uid": "u1",
                        "labels": {"cluster.x-k8s.io/cluster-name": "c1"},
                        "ownerReferences": [{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
                                             "name": "m1", "uid": "mu", "controller": True}]},
           "status": {"conditions": "Ready", "initialization": {"provisioned": "yes"},
                      "failureReason": "CreateError"}}
    (tmp_path / "fleet.json").write_text(json.dumps({"kind": "List", "items": [cluster("c1"), odd]}))
    with caplog.at_level(logging.WARNING, logger="exporter.app"):
        pipeline, store = await _loaded_pipeline(tmp_path)
        await pipeline.run_pass(store.take_dirty())
        source = FileSource(tmp_path, pipeline.sink)
        await source.poll_once()  # read again: not logged again
    body = pipeline.renderer.render_body().decode()
    ident = 'kind="AWSMachine",name="m1",namespace="ns",uid="u1",cluster_name="c1"'
    assert f'capi_infrastructure_object_info{{{ident},owner_kind="Machine",owner_name="m1"}} 1' in body
    assert f'capi_infrastructure_object_status_failure{{{ident},reason="CreateError"}} 1' in body
    assert "capi_infrastructure_object_status_provisioned{" not in body
    assert "capi_infrastructure_object_status_condition{" not in body
    assert ('capi_finding{kind="AWSMachine",namespace="ns",name="m1",cluster_name="c1",code="MalformedField",'
            'severity="warning"} 2') in body
    logged = [r.getMessage() for r in caplog.records if "fields read as missing" in r.getMessage()]
    assert len(logged) == 1 and "AWSMachine ns/m1" in logged[0] and "status.conditions" in logged[0], logged
