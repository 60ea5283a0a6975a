"""The ``files`` source: manifests on disk (a file or a directory) into a sink, re-read on change.

Owns reading YAML and JSON the way ``kubectl get -o yaml|json`` writes it: multi-document files,
``kind: List`` (and ``<Kind>List``) with ``items``, directories walked recursively; projecting
each object once with ``exporter.engine.parse.project``; replacing every kind's contents in the
sink when a file changes (modification times and sizes are polled, so edits, additions and
deletions are all seen); and plain counters the composition root turns into self-metrics.

One bad file costs that file only: any failure while reading, parsing or flattening it (a YAML
error, JSON nested too deep for the parser, a file that expands through YAML aliases to more
objects than its size allows, a permission error) is one read error, logged with its path, and
the file keeps the objects of its last good read; the other files still load. A directory that
cannot be listed is a read error too, and its files keep their last good objects; permission
changes (which move a file's ctime, not its mtime) make the next poll read again.
Owns no evaluation and no metrics.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from exporter.engine.model import Base
from exporter.engine.parse import OCM_KINDS, project
from exporter.engine.parse_capi import CAPI_READERS

log = logging.getLogger("exporter.sources.files")

SUFFIXES = (".yaml", ".yml", ".json")
Project = Callable[[Mapping[str, Any]], Base | None]
"""A raw object to its projection (None: unreadable); ``parse.project`` unless the caller binds
a selection of labels to keep."""
# libyaml's loader parses ~10x faster than the pure-Python one; both are "safe" (no object tags).
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# What one file may expand to: one object per this many bytes of its text, plus a floor. Without
# YAML aliases no object is shorter (``{kind: X}``); with them a few hundred bytes can name 10**9
# objects (a ``kind: List`` of aliases of Lists of aliases), which are refused, not projected.
BYTES_PER_OBJECT = 16
MIN_OBJECT_LIMIT = 1_000
# Kinds that label invalid objects in self-metrics; any other kind is counted as "" (unknown).
KNOWN_KINDS: frozenset[str] = frozenset({kind for _, kind in CAPI_READERS} | OCM_KINDS)


class Sink(Protocol):
    def replace(self, kind: str, objects: Iterable[Base], namespace: str | None = None) -> None: ...


@dataclass(slots=True)
class FileStats:
    """What the last read found, for the self-metrics; updated on the event loop only."""

    reads: int = 0
    read_errors: int = 0
    objects: dict[str, int] = field(default_factory=dict)  # kind -> projected objects
    invalid: dict[str, int] = field(default_factory=dict)  # kind ("" when unknown) -> unreadable objects
    synced: bool = False


@dataclass(slots=True)
class Loaded:
    projections: list[Base]
    invalid: dict[str, int]
    errors: list[str]
    by_file: dict[str, list[Base]] = field(default_factory=dict)  # what each file contributed


class ExpansionError(ValueError):
    """A file names more objects than its size allows (YAML aliases)."""


def walk(path: Path) -> tuple[list[Path], list[tuple[Path, OSError]]]:
    """Manifest files under ``path`` (sorted; hidden names and symlinked directories skipped),
    and the directories that could not be listed, with why."""
    if path.is_file():
        return [path], []
    found: list[Path] = []
    unreadable: list[tuple[Path, OSError]] = []
    if not path.is_dir():
        return found, unreadable
    stack = [path]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as entries:
                listed = list(entries)
        except OSError as exc:
            unreadable.append((directory, exc))
            continue
        for entry in listed:
            if entry.name.startswith("."):
                continue
            child = directory / entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(child)
                elif child.suffix in SUFFIXES and entry.is_file():
                    found.append(child)
            except OSError:  # vanished meanwhile, or a symlink into a directory we may not read
                continue
    return sorted(found), sorted(unreadable, key=lambda u: u[0])


def object_limit(text: str) -> int:
    return MIN_OBJECT_LIMIT + len(text) // BYTES_PER_OBJECT


def raw_objects(text: str, suffix: str, limit: int | None = None) -> Iterator[Mapping[str, Any]]:
    """Every object in one file's text; ``List`` documents are flattened.

    Raises ExpansionError once more than ``limit`` (default ``object_limit(text)``) come out.
    """
    limit = object_limit(text) if limit is None else limit
    docs: Iterable[Any] = [json.loads(text)] if suffix == ".json" else yaml.load_all(text, Loader=_LOADER)
    count = 0
    for doc in docs:
        for obj in _flatten(doc):
            count += 1
            if count > limit:
                raise ExpansionError(f"expands to more than {limit} objects (YAML aliases?); refused")
            yield obj


def _flatten(doc: Any) -> Iterator[Mapping[str, Any]]:
    # Iterative: Lists nested thousands deep must not exhaust the interpreter's stack.
    stack: list[Iterator[Any]] = [iter((doc,))]
    while stack:
        item = next(stack[-1], _DONE)
        if item is _DONE:
            stack.pop()
            continue
        if not isinstance(item, Mapping):
            continue
        kind = item.get("kind")
        items = item.get("items")
        if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
            stack.append(iter(items))
            continue
        yield item


_DONE = object()


def load(path: Path, previous: Mapping[str, list[Base]] | None = None, project: Project = project) -> Loaded:
    """Read and project everything under ``path`` (blocking; run in a thread from async code).

    A file that cannot be read (half-written by an editor, a YAML error) keeps the objects it
    held at the last read that succeeded: a typo must not make a cluster vanish from the metrics.
    """
    by_key: dict[tuple[str, ...], Base] = {}
    by_file: dict[str, list[Base]] = {}
    invalid: dict[str, int] = {}
    errors: list[str] = []
    files, unreadable = walk(path)
    for directory, exc in unreadable:
        # Its files cannot be listed: those the last good read found keep their objects.
        prefix = os.path.join(str(directory), "")
        kept_files = {name: objs for name, objs in (previous or {}).items() if name.startswith(prefix)}
        count = sum(len(objs) for objs in kept_files.values())
        note = f"; keeping the {count} objects of its files from the last good read" if count else ""
        errors.append(f"{directory}: cannot list directory: {exc.strerror or exc}{note}")
        by_file.update(kept_files)
    for file in files:
        name = str(file)
        try:
            objects = _read(file, invalid, project)
        except Exception as exc:  # whatever it is, it costs this file only
            kept = (previous or {}).get(name)
            note = f"; keeping its {len(kept)} objects from the last good read" if kept else ""
            errors.append(f"{file}: {_describe(exc)}{note}")
            objects = list(kept or [])
        by_file[name] = objects
    for objects in by_file.values():
        for obj in objects:
            by_key[obj.key] = obj  # the same object in two files: the later file wins
    return Loaded(list(by_key.values()), invalid, errors, by_file)


def _read(file: Path, invalid: dict[str, int], project: Project) -> list[Base]:
    """One file's projections; counts its invalid objects into ``invalid`` only once it is read."""
    raws = list(raw_objects(file.read_text(encoding="utf-8"), file.suffix))
    objects: list[Base] = []
    found: dict[str, int] = {}
    for raw in raws:
        obj = project(raw)  # never raises
        if obj is None:
            if _is_known_kind_without_identity(raw):
                kind = raw.get("kind")
                label = kind if isinstance(kind, str) and kind in KNOWN_KINDS else ""
                found[label] = found.get(label, 0) + 1
            continue
        objects.append(obj)
    for label, n in found.items():
        invalid[label] = invalid.get(label, 0) + n
    return objects


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError | ValueError | yaml.YAMLError):  # their text says what is wrong
        return str(exc)
    text = str(exc)
    return f"{type(exc).__name__}: {text[:500]}" if text else type(exc).__name__


def _is_known_kind_without_identity(raw: Mapping[str, Any]) -> bool:
    # Objects of kinds the exporter does not read (ConfigMaps next to the manifests) are not invalid.
    api_version = raw.get("apiVersion")
    meta = raw.get("metadata")
    named = isinstance(meta, Mapping) and isinstance(meta.get("name"), str) and bool(meta.get("name"))
    ours = isinstance(api_version, str) and (
        "cluster.x-k8s.io" in api_version or "open-cluster-management.io" in api_version
    )
    return ours and not (named and isinstance(raw.get("kind"), str))


Fingerprint = tuple[tuple[str, int, int, int], ...]


def fingerprint(path: Path) -> Fingerprint:
    """Paths with modification time, change time and size: any edit, addition or removal
    changes it, and so does a permission change (it moves the ctime), which may make a file or
    directory readable again. Directories that cannot be listed are in it, by their ctime."""
    out: list[tuple[str, int, int, int]] = []
    files, unreadable = walk(path) if path.exists() else ([], [])
    for entry in [*files, *(d for d, _ in unreadable)]:
        try:
            st = entry.stat()
        except OSError:
            continue
        out.append((str(entry), st.st_mtime_ns, st.st_ctime_ns, st.st_size))
    return tuple(out)


class FileSource:
    """Feeds a sink from manifests, polling them for changes every ``poll_interval`` seconds."""

    def __init__(self, path: Path, sink: Sink, *, poll_interval: float = 2.0,
                 project: Project = project) -> None:
        self.path = path
        self.project = project
        self.sink = sink
        self.poll_interval = poll_interval
        self.stats = FileStats()
        self._kinds: set[str] = set()
        self._seen: Fingerprint | None = None
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
        loaded = await asyncio.to_thread(load, self.path, self._last_good, self.project)
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
        self.stats.synced = True
        for error in loaded.errors:
            log.error("cannot read manifest file", extra={"error": error})
        for kind, n in sorted(loaded.invalid.items()):
            log.warning("objects without kind or name skipped", extra={"kind": kind, "count": n})
        log.info(
            "manifests loaded" if first else "manifests changed, reloaded",
            extra={"path": str(self.path), "objects": len(loaded.projections), "kinds": self.stats.objects},
        )
