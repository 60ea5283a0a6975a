"""One bad manifest never stops the rest: the files source and ``evaluate`` contain a failure to
the file or object that caused it (counted, reported with its name), bound what a file may expand
to, keep unreadable directories' objects visible and re-read files that become readable again,
and print object names in the table with their control characters escaped."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.cli import main
from exporter.sources.files import FileSource, load
from exporter.store import Store

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
NOW = "2026-11-20T12:00:00Z"


def cluster(name: str, ns: str = "ns") -> dict[str, Any]:
    meta = {"name": name, "namespace": ns}
    return {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": meta}


def write(path: Path, *docs: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump_all(docs))


def alias_bomb(levels: int) -> str:
    """A ``kind: List`` whose items alias a List of ten aliases, ``levels`` deep: 10**levels objects."""
    lines = ["apiVersion: v1", "kind: List",
             "x0: &o0 {apiVersion: cluster.x-k8s.io/v1beta2, kind: Cluster,"
             " metadata: {name: c, namespace: n}}"]
    for i in range(1, levels + 1):
        lines.append(f"x{i}: &o{i} {{kind: List, items: [{', '.join([f'*o{i - 1}'] * 10)}]}}")
    lines.append(f"items: [*o{levels}]")
    return "\n".join(lines) + "\n"


# ---- a file that cannot be parsed or projected costs that file only ---------------------------


def test_deeply_nested_json_is_a_read_error_of_that_file_and_the_others_load(tmp_path: Path) -> None:
    write(tmp_path / "good.yaml", cluster("a"))
    (tmp_path / "deep.json").write_text("[" * 100_000)
    loaded = load(tmp_path)
    assert [o.meta.name for o in loaded.projections] == ["a"]
    assert len(loaded.errors) == 1 and "deep.json" in loaded.errors[0]


async def test_serve_source_survives_a_deeply_nested_manifest(tmp_path: Path) -> None:
    store = Store()
    write(tmp_path / "good.yaml", cluster("a"))
    (tmp_path / "deep.json").write_text("[" * 100_000)
    source = FileSource(tmp_path, store, poll_interval=0.01)
    assert await source.poll_once()
    assert store.get(("Cluster", "ns", "a")) is not None
    assert source.stats.read_errors == 1


def test_evaluate_prints_the_good_files_and_names_the_bad_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(EXAMPLES / "capi", tmp_path / "capi")
    (tmp_path / "deep.json").write_text("[" * 100_000)
    assert main(["evaluate", "--from-files", str(tmp_path), "--now", NOW, "--output", "json"]) == 1
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "deep.json" in err
    kinds = {o["kind"] for o in json.loads(out)["objects"]}
    assert {"Cluster", "Machine"} <= kinds


# ---- YAML aliases cannot expand a small file into millions of objects ------------------------


def test_an_alias_bomb_is_refused_with_the_file_named_and_the_others_load(tmp_path: Path) -> None:
    (tmp_path / "bomb.yaml").write_text(alias_bomb(5))  # ~550 bytes, 100,000 objects
    write(tmp_path / "good.yaml", cluster("a"))
    loaded = load(tmp_path)
    assert [o.meta.name for o in loaded.projections] == ["a"]
    assert len(loaded.errors) == 1 and "bomb.yaml" in loaded.errors[0]
    assert "objects" in loaded.errors[0]
    assert loaded.by_file[str(tmp_path / "bomb.yaml")] == []


def test_a_large_plain_list_is_not_taken_for_a_bomb(tmp_path: Path) -> None:
    items = [cluster(f"c{i}") for i in range(3_000)]
    (tmp_path / "many.json").write_text(json.dumps({"kind": "List", "items": items}, separators=(",", ":")))
    loaded = load(tmp_path)
    assert loaded.errors == [] and len(loaded.projections) == 3_000


# ---- unreadable directories and files: visible, kept, recovered ----------------------------


@pytest.fixture
def unreadable(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[Path]]:
    """Paths that raise PermissionError when listed or read (the tests run as root, where chmod
    does not deny anything)."""
    denied: set[Path] = set()
    real_scandir: Callable[..., Any] = os.scandir
    real_read_text = Path.read_text

    def scandir(path: Any = ".") -> Any:
        if Path(path) in denied:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    def read_text(self: Path, *args: Any, **kwargs: Any) -> str:
        if self in denied:
            raise PermissionError(13, "Permission denied", str(self))
        return real_read_text(self, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(Path, "read_text", read_text)
    yield denied


async def test_an_unreadable_subdirectory_is_reported_keeps_its_objects_and_recovers(
    tmp_path: Path, unreadable: set[Path]
) -> None:
    store = Store()
    (tmp_path / "sub").mkdir()
    write(tmp_path / "a.yaml", cluster("a"))
    write(tmp_path / "sub" / "b.yaml", cluster("b"))
    source = FileSource(tmp_path, store, poll_interval=0.01)
    assert await source.poll_once()
    assert store.get(("Cluster", "ns", "b")) is not None

    unreadable.add(tmp_path / "sub")
    await source.poll_once()
    assert source.stats.read_errors == 1, "the unreadable directory is counted"
    assert store.get(("Cluster", "ns", "b")) is not None, "its objects are kept from the last good read"

    unreadable.clear()
    write(tmp_path / "sub" / "b.yaml", cluster("b2"))  # changed meanwhile
    assert await source.poll_once()
    assert store.get(("Cluster", "ns", "b2")) is not None and store.get(("Cluster", "ns", "b")) is None
    assert source.stats.read_errors == 1


def test_an_unreadable_subdirectory_is_an_error_on_the_first_read(
    tmp_path: Path, unreadable: set[Path]
) -> None:
    (tmp_path / "sub").mkdir()
    write(tmp_path / "a.yaml", cluster("a"))
    write(tmp_path / "sub" / "b.yaml", cluster("b"))
    unreadable.add(tmp_path / "sub")
    loaded = load(tmp_path)
    assert [o.meta.name for o in loaded.projections] == ["a"]
    assert len(loaded.errors) == 1 and "sub" in loaded.errors[0]


async def test_a_file_that_becomes_readable_again_is_read(tmp_path: Path, unreadable: set[Path]) -> None:
    store = Store()
    write(tmp_path / "a.yaml", cluster("a"))
    unreadable.add(tmp_path / "a.yaml")  # created unreadable (mode 000), made readable later
    source = FileSource(tmp_path, store, poll_interval=0.01)
    assert await source.poll_once()
    assert source.stats.read_errors == 1 and store.get(("Cluster", "ns", "a")) is None
    unreadable.clear()
    os.chmod(tmp_path / "a.yaml", 0o644)  # a chmod changes neither the size nor the mtime
    assert await source.poll_once()
    assert store.get(("Cluster", "ns", "a")) is not None


# ---- self-metric labels from files are bounded ---------------------------------------------


def test_invented_kinds_do_not_multiply_self_metric_series(tmp_path: Path) -> None:
    from exporter.app import file_resources
    from exporter.metrics.selfmetrics import ExporterStats, render

    docs: list[dict[str, Any]] = []
    for i in range(1_000):
        docs.append({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
                     "kind": f"Invented{i}MachinePool", "metadata": {"name": f"p{i}", "namespace": "ns"}})
        docs.append({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": f"Nameless{i}", "metadata": {}})
    (tmp_path / "many.json").write_text(json.dumps({"kind": "List", "items": docs}))
    source = FileSource(tmp_path, Store())
    source.apply(load(tmp_path))
    resources_stats = file_resources(source.stats)
    body = render(ExporterStats(), resources_stats, rendered_objects=0, cached_objects=0).decode()
    series = [line for line in body.splitlines() if line and not line.startswith("#")]
    resources = {line.split('resource="', 1)[1].split('"', 1)[0] for line in series if 'resource="' in line}
    assert len(resources) <= 70, f"{len(resources)} resource label values"
    assert len(series) < 500, f"{len(series)} series"
    objects = sum(float(line.rsplit(" ", 1)[1]) for line in series
                  if line.startswith("fleet_status_exporter_objects{"))
    invalid = sum(float(line.rsplit(" ", 1)[1]) for line in series
                  if line.startswith("fleet_status_exporter_invalid_objects{"))
    assert (objects, invalid) == (1_000, 1_000), "every object is still counted"


# ---- evaluate --output table escapes what object names and messages hold ---------------------


@pytest.mark.parametrize("name", ["evil\x1b[2J\x1b[31mred", "two\nlines", "bell\x07", "rtl\u202eoverride",
                                  "lone\ud800surrogate", "cr\rreturn"])
def test_table_output_escapes_control_characters_in_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    doc = cluster(name)
    doc["status"] = {"conditions": [{"type": "Available", "status": "False", "reason": "Bad\x1bReason",
                                     "message": "msg\x1b[0m\rover", "lastTransitionTime": NOW}]}
    (tmp_path / "c.json").write_text(json.dumps({"kind": "List", "items": [doc, cluster("plain")]}))
    assert main(["evaluate", "--from-files", str(tmp_path), "--now", NOW, "--output", "table"]) == 0
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x1b\x07\r\u202e\ud800")
    lines = out.splitlines()
    assert sum("Cluster/" in line for line in lines) == 2, "one line per object"
    assert any(line.startswith("Cluster/plain") for line in lines)
