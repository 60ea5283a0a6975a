"""The ``files`` source: manifests on disk (a file or a directory) into a sink, re-read on change.

Owns reading YAML and JSON the way ``kubectl get -o yaml|json`` writes it: multi-document files,
``kind: List`` (and ``<Kind>List``) with ``items``, directories walked recursively; projecting
each object once with ``exporter.engine.parse.project``; replacing every kind's contents in the
sink when a file changes (modification times and sizes are polled, so edits, additions and
deletions are all seen); and plain counters the composition root turns into self-metrics. A file
that fails to parse is logged with its path and keeps the objects of its last good read; the
other files still load.
Owns no evaluation and no metrics.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from exporter.engine.model import Base
from exporter.engine.parse import project

log = logging.getLogger("exporter.sources.files")

SUFFIXES = (".yaml", ".yml", ".json")
# libyaml's loader parses ~10x faster than the pure-Python one; both are "safe" (no object tags).
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Sink(Protocol):
    def replace(self, kind: str, objects: Iterable[Base], namespace: str | None = None) -> None: ...


@dataclass(slots=True)
class FileStats:
    """What the last read found, for the self-metrics; updated on the event loop only."""

    reads: int = 0
    read_errors: int = 0
    objects: dict[str, int] = field(default_factory=dict)  # kind -> projected objects
    invalid: dict[str, int] = field(default_factory=dict)  # kind ("" when unknown) -> unreadable objects
    last_change_time: float | None = None
    synced: bool = False


@dataclass(slots=True)
class Loaded:
    projections: list[Base]
    invalid: dict[str, int]
    errors: list[str]
    by_file: dict[str, list[Base]] = field(default_factory=dict)  # what each file contributed


def manifest_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES and not _hidden(p, path))


def _hidden(p: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in p.relative_to(root).parts)


def raw_objects(text: str, suffix: str) -> Iterator[Mapping[str, Any]]:
    """Every object in one file's text; ``List`` documents are flattened."""
    docs: Iterable[Any] = [json.loads(text)] if suffix == ".json" else yaml.load_all(text, Loader=_LOADER)
    for doc in docs:
        yield from _flatten(doc)


def _flatten(doc: Any) -> Iterator[Mapping[str, Any]]:
    if not isinstance(doc, Mapping):
        return
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        for item in doc["items"]:
            yield from _flatten(item)
        return
    yield doc


def load(path: Path, previous: Mapping[str, list[Base]] | None = None) -> Loaded:
    """Read and project everything under ``path`` (blocking; run in a thread from async code).

    A file that cannot be read (half-written by an editor, a YAML error) keeps the objects it
    held at the last read that succeeded: a typo must not make a cluster vanish from the metrics.
    """
    by_key: dict[tuple[str, ...], Base] = {}
    by_file: dict[str, list[Base]] = {}
    invalid: dict[str, int] = {}
    errors: list[str] = []
    for file in manifest_files(path):
        name = str(file)
        try:
            raws = list(raw_objects(file.read_text(encoding="utf-8"), file.suffix))
        except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
            kept = (previous or {}).get(name)
            note = f"; keeping its {len(kept)} objects from the last good read" if kept else ""
            errors.append(f"{file}: {exc}{note}")
            objects = list(kept or [])
        else:
            objects = []
            for raw in raws:
                obj = project(raw)
                if obj is None:
                    if _is_known_kind_without_identity(raw):
                        kind = raw.get("kind")
                        label = kind if isinstance(kind, str) else ""
                        invalid[label] = invalid.get(label, 0) + 1
                    continue
                objects.append(obj)
        by_file[name] = objects
        for obj in objects:
            by_key[obj.key] = obj  # the same object in two files: the later file wins
    return Loaded(list(by_key.values()), invalid, errors, by_file)


def _is_known_kind_without_identity(raw: Mapping[str, Any]) -> bool:
    # Objects of kinds the exporter does not read (ConfigMaps next to the manifests) are not invalid.
    api_version = raw.get("apiVersion")
    meta = raw.get("metadata")
    named = isinstance(meta, Mapping) and isinstance(meta.get("name"), str) and bool(meta.get("name"))
    ours = isinstance(api_version, str) and (
        "cluster.x-k8s.io" in api_version or "open-cluster-management.io" in api_version
    )
    return ours and not (named and isinstance(raw.get("kind"), str))


def fingerprint(path: Path) -> tuple[tuple[str, int, int], ...]:
    """Paths with modification time and size: any edit, addition or removal changes it."""
    out = []
    for file in manifest_files(path) if path.exists() else []:
        try:
            st = file.stat()
        except OSError:
            continue
        out.append((str(file), st.st_mtime_ns, st.st_size))
    return tuple(out)


class FileSource:
    """Feeds a sink from manifests, polling them for changes every ``poll_interval`` seconds."""

    def __init__(self, path: Path, sink: Sink, *, poll_interval: float = 2.0) -> None:
        self.path = path
        self.sink = sink
        self.poll_interval = poll_interval
        self.stats = FileStats()
        self._kinds: set[str] = set()
        self._seen: tuple[tuple[str, int, int], ...] | None = None
        self._last_good: dict[str, list[Base]] = {}

    @property
    def synced(self) -> bool:
        return self.stats.synced

    async def run(self) -> None:
        while True:
            await self.poll_once()
            await asyncio.sleep(self.poll_interval)

    async def poll_once(self) -> bool:
        """Re-read when anything changed since the last poll; returns whether it did."""
        current = await asyncio.to_thread(fingerprint, self.path)
        if current == self._seen:
            return False
        loaded = await asyncio.to_thread(load, self.path, self._last_good)
        self._last_good = loaded.by_file
        self._seen = current
        self.apply(loaded)
        return True

    def apply(self, loaded: Loaded) -> None:
        by_kind: dict[str, list[Base]] = {}
        for obj in loaded.projections:
            by_kind.setdefault(obj.meta.kind, []).append(obj)
        # Kinds that vanished from the files are replaced by nothing: their objects were deleted.
        for kind in sorted(self._kinds | by_kind.keys()):
            self.sink.replace(kind, by_kind.get(kind, []))
        self._kinds = set(by_kind)
        first = not self.stats.synced
        self.stats.reads += 1
        self.stats.read_errors += len(loaded.errors)
        self.stats.objects = {kind: len(objs) for kind, objs in by_kind.items()}
        self.stats.invalid = dict(loaded.invalid)
        self.stats.last_change_time = time.time()
        self.stats.synced = True
        for error in loaded.errors:
            log.error("cannot read manifest file", extra={"error": error})
        for kind, n in sorted(loaded.invalid.items()):
            log.warning("objects without kind or name skipped", extra={"kind": kind, "count": n})
        log.info(
            "manifests loaded" if first else "manifests changed, reloaded",
            extra={"path": str(self.path), "objects": len(loaded.projections), "kinds": self.stats.objects},
        )
