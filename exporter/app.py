"""The composition root: wires a source, the store, the engine, the renderer and the server.

Owns the evaluation loop (take the groups changed since the last pass after a short debounce,
evaluate them, hand the results to the renderer; re-render objects changed only in fields no rule
reads with their previous Result; re-evaluate every group once a minute, a slice per pass,
because time-dependent rules change with the clock alone). Until the source first reports sync
the loop evaluates only in rare progress passes, then everything listed at once; readiness
follows that pass. Also owns start-up and graceful shutdown on SIGTERM or SIGINT, and the
adapters that turn each source's plain counters into self-metrics.

Containment, one point per stage: an object whose reading raises is kept with its identity only
(``exporter.engine.parse``, reported by ``FilteringSink``), a group whose evaluation raises is left
out of the metrics (``Pipeline.evaluate_group``) and an object whose rendering raises is left out
by the renderer; each is counted (``fleet_status_exporter_errors_total{stage}``) and logged once with its name
until it recovers, and the rest is exported. Every background task runs ``supervised``: an
exception is logged and the task restarted after a backoff, so only a signal (or a task that
returns, on purpose) ends the process.
The only module that knows every layer; it holds no business rule.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Protocol

from aiohttp import web

from exporter import runtime, webconfig
from exporter.batching import DEBOUNCE_SECONDS, Batcher
from exporter.buildinfo import current as current_build
from exporter.config import Config, ConfigError
from exporter.engine.evaluate import Memo, evaluate_group_reusing, memo_seeing
from exporter.engine.grouping import GroupKey
from exporter.engine.model import Base, ObjectKey, Result, is_bare
from exporter.engine.parse import UNREADABLE_OBJECT, project
from exporter.engine.rule_inputs import alone_reads_clock, export_only_change
from exporter.landing import page as landing_page
from exporter.logging_setup import setup as setup_logging
from exporter.metrics.catalog import object_families
from exporter.metrics.process import ProcessMetrics
from exporter.metrics.publisher import Publisher
from exporter.metrics.renderer import Renderer
from exporter.metrics.selection import Selection, describe
from exporter.metrics.selfmetrics import ExporterStats, ResourceStats
from exporter.sharding import keep_shard
from exporter.sources.files import FileSource, FileStats
from exporter.store import Store
from exporter.timeslice import TimeSlice
from exporter.web import Exposition, LimitedSite, make_app, make_probe_app

log = logging.getLogger("exporter.app")
MAX_LOGGED_OBJECTS = 10_000

RESYNC_SECONDS = 60.0  # time-based rules (minReadySeconds, stale deletion) move with the clock alone
# Before the source's first sync, evaluate at most this often, and leave at least PROGRESS_SPACING
# times the last such pass's duration before the next one.
PROGRESS_SECONDS = 15.0
PROGRESS_SPACING = 3.0
# From SIGTERM to exit at most this long (Kubernetes' grace period is 30 s): open connections get
# part of it, then whatever still runs (a thread parsing a large initial load) is abandoned.
SHUTDOWN_SECONDS = 5.0


class Stoppable(Protocol):
    async def stop(self) -> None: ...


class FilteringSink:
    """The store as sources see it, with --namespace and --exclude-resource applied.

    The kube source already scopes its watches; the files source reads whatever the manifests
    hold, so the same filter applies to both here, and so does the report of what the parser
    could not read (``exporter.engine.parse``'s error policy): malformed fields are logged once
    per object; an object whose reading raised is logged once as an error and counted in
    ``errors["parse"]`` each time it is read (``fleet_status_exporter_errors_total``).
    """

    def __init__(self, store: Store, *, namespaces: Iterable[str] = (), exclude: Iterable[str] = (),
                 errors: dict[str, int] | None = None) -> None:
        self.store = store
        self.namespaces = frozenset(namespaces)
        self.exclude = frozenset(exclude)
        self.errors = errors if errors is not None else {}  # stage -> failures, as ExporterStats.errors
        self._logged: set[tuple[ObjectKey, bool]] = set()  # (object, whether its reading raised)

    def _accept(self, obj: Base) -> bool:
        # Provider objects are also excluded by their contract role (InfraMachine, BootstrapConfig, ...).
        if obj.meta.kind in self.exclude or getattr(obj, "role", None) in self.exclude:
            return False
        if obj.problems:
            self._report_problems(obj)
        # Cluster-scoped objects (ManagedClusters) are needed whatever the namespaces.
        return not self.namespaces or not obj.meta.namespace or obj.meta.namespace in self.namespaces

    def replace(self, kind: str, objects: Iterable[Base], namespace: str | None = None) -> None:
        self.store.replace(kind, [o for o in objects if self._accept(o)], namespace)

    def upsert(self, obj: Base) -> None:
        if self._accept(obj):
            self.store.upsert(obj)

    def delete(self, kind: str, namespace: str, name: str) -> None:
        self.store.delete(kind, namespace, name)

    def get(self, key: ObjectKey) -> Base | None:
        return self.store.get(key)

    def _report_problems(self, obj: Base) -> None:
        """Logged once per object (a bound, not a cache: forgotten all at once past it)."""
        raised = obj.problems[0].startswith(UNREADABLE_OBJECT)
        if raised:
            self.errors["parse"] = self.errors.get("parse", 0) + 1
        if (obj.key, raised) in self._logged:
            return
        if len(self._logged) >= MAX_LOGGED_OBJECTS:
            self._logged.clear()
        self._logged.add((obj.key, raised))
        meta = obj.meta
        if raised:
            log.error("cannot read an object (a bug); it is exported with its identity only",
                      extra={"object": _printable(f"{meta.kind} {meta.namespace}/{meta.name}"),
                             "error": _printable(obj.problems[0])})
            return
        # The fields are read as missing, the rest of the object is exported, and each is a
        # MalformedField finding.
        log.warning("%s %s/%s: fields read as missing (a MalformedField finding each): %s",
                    meta.kind, meta.namespace, meta.name, "; ".join(obj.problems))


class Rotation:
    """Every group the rules may change with time alone (``Pipeline.clocked_groups``) once per
    ``period``, a slice at a time.

    A slice per pass rather than every group at once: at fleet size all groups take about a
    second of CPU, which in one go is a spike of latency for the events that queue behind it.
    Each round walks the groups there were when it began, at the pace that finishes it in
    ``period``; groups created since wait for the next round (their updates evaluate them anyway).
    Each kind of group (``key[0]``) is spread evenly over the round: a Cluster API group costs
    ~50 times a provider object's, and in key order the round spent most of a minute on the ~41,000
    provider objects of the benchmark fleet, then ~0.3 s of CPU within 2.5 s on its 1,000 Clusters.
    """

    def __init__(self, period: float) -> None:
        self.period = period
        self._queue: list[GroupKey] = []
        self._rate = 0.0  # groups per second in this round
        self._owed = 0.0
        self._last: float | None = None
        self._next_round = 0.0

    def begins_round(self, now: float) -> bool:
        """Whether ``take`` at ``now`` begins a round, and so needs the groups there are."""
        return self._last is not None and not self._queue and now >= self._next_round

    def take(self, now: float, all_groups: Iterable[GroupKey]) -> set[GroupKey]:
        """The groups due by ``now`` (monotonic seconds); ``all_groups`` is read when a round begins."""
        last, self._last = self._last, now
        if last is None:
            self._next_round = now + self.period  # the first round begins one period in
            return set()
        if not self._queue:
            if now < self._next_round:
                return set()
            self._queue = interleaved(all_groups)
            self._queue.reverse()  # popped from the end: in order
            self._rate = len(self._queue) / self.period if self.period > 0 else float(len(self._queue))
            self._owed = 0.0
            self._next_round = now + self.period
            return set()
        self._owed += (now - last) * self._rate
        count = min(int(self._owed), len(self._queue))
        self._owed -= count
        return {self._queue.pop() for _ in range(count)}


def interleaved(groups: Iterable[GroupKey]) -> list[GroupKey]:
    """Every group once, in key order within each kind (``key[0]``), each kind spread evenly over
    the list: the i-th of a kind's n groups at (i + 1/2) / n of it."""
    by_kind: dict[str, list[GroupKey]] = {}
    for key in sorted(groups):
        by_kind.setdefault(key[0], []).append(key)
    placed = [((i + 0.5) / len(keys), key) for keys in by_kind.values() for i, key in enumerate(keys)]
    placed.sort()
    return [key for _, key in placed]


async def _nothing() -> None:
    pass


class Pipeline:
    """store → engine → renderer, one dirty group at a time."""

    def __init__(
        self, store: Store, sink: FilteringSink, renderer: Renderer, stats: ExporterStats,
        keep: Callable[[GroupKey], bool], relieve: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.store, self.sink, self.renderer, self.stats, self.keep = store, sink, renderer, stats, keep
        # Awaited between groups: compresses pending lines past the renderer's limit (the
        # publisher's ``relieve``), and holds the pass while they are far past it.
        self.relieve = relieve or _nothing
        # The last Result of every object evaluated, but bare ones (``bare_result``): with none
        # here, an object's next evaluation carries no transition time over, as from a bare one.
        self.previous: dict[ObjectKey, Result] = {}
        # Per Cluster API group, what its last evaluation leaves for the next (engine-owned data).
        self._memos: dict[GroupKey, Memo] = {}
        self.clock: Callable[[], float] = time.time  # the engine's ``now``; tests set their own
        self.source_synced: Callable[[], bool] = lambda: True
        # (kind, namespace) the source may not read: the engine withholds what it computes over them.
        self.unreadable: Callable[[], frozenset[tuple[str, str]]] = frozenset
        # Ready once everything the source had listed when it reported sync has been evaluated.
        self.ready = False
        # Once ready, passes wait out bursts of changes (see exporter/batching.py).
        self.batcher = Batcher()
        self._failing: set[GroupKey] = set()  # groups whose evaluation raised, logged already
        self._render_failures = 0  # the renderer's failures already counted

    def evaluate_group(self, key: GroupKey, now: float) -> None:
        """Evaluate and render one group; if that raises, the group is left out of the metrics
        (counted, logged once until it evaluates again) and the other groups are unaffected."""
        try:
            self._evaluate_group(key, now)
        except Exception as exc:
            self.stats.errors["evaluate"] = self.stats.errors.get("evaluate", 0) + 1
            if key not in self._failing:
                self._failing.add(key)
                log.error("cannot evaluate a group; its objects are left out of the metrics",
                          extra={"group": _printable("/".join(key)), "error": _printable(repr(exc)[:300])},
                          exc_info=True)
            for old in self.renderer.objects_of(key):
                self.previous.pop(old, None)
            self._memos.pop(key, None)
            self.renderer.remove_group(key)
            return
        if key in self._failing:
            self._failing.discard(key)
            log.info("group evaluates again", extra={"group": _printable("/".join(key))})

    def _count_render_failures(self) -> None:
        for key, error in self.renderer.take_failed():
            log.error("cannot render an object; it is left out of the metrics",
                      extra={"object": _printable("/".join(key)), "error": _printable(error)})
        failures = self.renderer.failures
        self.stats.errors["render"] = self.stats.errors.get("render", 0) + failures - self._render_failures
        self._render_failures = failures

    def _evaluate_group(self, key: GroupKey, now: float) -> None:
        group = self.store.build(key)
        before = self.renderer.objects_of(key)  # the group's objects as last evaluated
        if group is None:
            self._memos.pop(key, None)
            self.renderer.remove_group(key)
            self._let_go(key, before, now)
            return
        # ``previous`` still holds this group's last Results: computed conditions carry their
        # transition times over from them while their status holds.
        results, memo = evaluate_group_reusing(group, self.previous, now, self._memos.get(key),
                                               self.unreadable())
        if memo is not None:
            self._memos[key] = memo
        items: list[tuple[Base, Result]] = []
        for result in results:
            obj = self.store.get(result.key)
            if obj is not None:
                items.append((obj, result))
                if is_bare(result):
                    self.previous.pop(result.key, None)
                else:
                    self.previous[result.key] = result
        self.renderer.update_group(key, items)
        self._let_go(key, before, now)

    def _let_go(self, key: GroupKey, before: Iterable[ObjectKey], now: float) -> None:
        """Forget the objects that left group ``key`` since ``before``.

        One that moved to another group of this shard (a ManifestWork its MWRS adopts) was just
        dropped with this group's lines, maybe after that group rendered it in this very pass:
        that group is evaluated again, which renders it there.
        """
        moved: set[GroupKey] = set()
        for old in set(before).difference(self.renderer.objects_of(key)):
            now_in = self.store.group_of(old)
            if now_in is not None and now_in != key and self.keep(now_in):
                moved.add(now_in)
            else:
                self.previous.pop(old, None)
        for group in sorted(moved):
            self.evaluate_group(group, now)

    async def render_exported(self, exported: Mapping[ObjectKey, GroupKey], evaluated: set[GroupKey],
                              now: float) -> None:
        """Re-render objects changed in export-only fields, each with its previous Result.

        No rule reads those fields, so evaluating their groups again at the time of their last
        evaluation would give every object the Result it has (the store's state is what that
        evaluation saw, but for fields no rule reads). What time alone changes waits for the
        periodic re-evaluation, as it does in groups that saw no update at all. Only the changed
        objects are rendered again. A group evaluated in this pass anyway is left to that
        evaluation; a group where a changed object has no previous Result is evaluated.

        Time-sliced like the evaluation: after a stall the watch catches up with hundreds of such
        changes (~90 us each), tens of ms in one stretch. An object the source updates again
        meanwhile is rendered as it is now; if that update changed fields rules read, its group
        is dirty and the next pass evaluates it, as after any update.
        """
        by_group: dict[GroupKey, list[ObjectKey]] = {}
        for key, group in exported.items():
            if group not in evaluated:
                by_group.setdefault(group, []).append(key)
        time_slice = TimeSlice()
        for group, keys in by_group.items():
            pairs = [(self.store.get(key), self.previous.get(key)) for key in keys]
            items = [(obj, result) for obj, result in pairs if obj is not None and result is not None]
            if len(items) < len(keys) or not self.renderer.update_objects(group, items):
                self.evaluate_group(group, now)
            elif (memo := self._memos.get(group)) is not None:
                self._memos[group] = memo_seeing(memo, [obj for obj, _ in items])
            await self.relieve()
            await time_slice.pause()

    async def run_pass(
        self, groups: set[GroupKey], exported: Mapping[ObjectKey, GroupKey] | None = None
    ) -> None:
        started = time.perf_counter()
        now = self.clock()
        if exported:
            await self.render_exported(exported, groups, now)
        # A group takes a few ms, so a count of groups would let a large pass hold the loop for
        # seconds; time bounds each stretch of evaluation instead.
        time_slice = TimeSlice()
        for key in sorted(groups):
            self.evaluate_group(key, now)
            await self.relieve()
            await time_slice.pause()
        self._count_render_failures()
        self.stats.evaluations += 1
        self.stats.evaluated_groups += len(groups)
        self.stats.last_evaluation_duration = time.perf_counter() - started
        log.debug("evaluation pass", extra={"groups": len(groups), "objects": len(self.renderer),
                                            "seconds": round(self.stats.last_evaluation_duration, 4)})

    async def clocked_groups(self) -> list[GroupKey]:
        """The groups time alone may change: all but the objects evaluated alone whose rules do not
        read the clock (at 100 % of the benchmark fleet, the ~21,000 infrastructure objects and most
        of the ~20,000 bootstrap configs).

        Drawn up a kind at a time, time-sliced: going over every stored object at once held the
        loop ~20-27 ms at that size, once a round.
        """
        groups = self.store.shared_groups()
        time_slice = TimeSlice()
        for kind in self.store.kinds():
            await time_slice.pause()
            groups += self.store.alone_groups(kind, alone_if=alone_reads_clock)
        return groups

    async def run(
        self, *, debounce: float = DEBOUNCE_SECONDS, resync: float = RESYNC_SECONDS,
        progress: float = PROGRESS_SECONDS,
    ) -> None:
        self.batcher.debounce = debounce
        rotation = Rotation(resync)
        next_progress = time.monotonic() + progress
        while True:
            if self.ready:
                await self.batcher.wait(lambda: self.store.generation)
            else:
                await asyncio.sleep(self.batcher.debounce)
            synced = self.source_synced()
            if not synced and not self.ready:
                # Until the first sync most groups lack kinds still being listed and would be
                # evaluated again when those arrive; only a rare pass, so that /metrics shows
                # progress on a hub whose lists take minutes.
                if time.monotonic() < next_progress:
                    continue
                started = time.monotonic()
                groups, exported = self.store.take_dirty(), self.store.take_exported()
                if groups or exported:
                    await self.run_pass(groups, exported)
                ended = time.monotonic()
                # A pass over most of a huge fleet can take seconds: keep such passes to a fraction
                # of the listing time.
                next_progress = ended + max(progress, PROGRESS_SPACING * (ended - started))
                continue
            now = time.monotonic()
            clocked = await self.clocked_groups() if rotation.begins_round(now) else []
            groups = self.store.take_dirty()
            exported = self.store.take_exported()
            groups |= rotation.take(now, clocked)
            if groups or exported:
                await self.run_pass(groups, exported)
            self.ready = self.ready or synced


def _printable(text: str) -> str:
    """``text`` safe to log: lone surrogates (from a JSON manifest) as escapes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


async def supervised(name: str, run: Callable[[], Awaitable[None]], stats: ExporterStats, *,
                     backoff: float = 1.0, backoff_max: float = 30.0) -> None:
    """Run ``run()`` until it returns; after an exception, log it, count it and run it again.

    Waits ``backoff`` seconds before a restart, doubling to ``backoff_max`` while the task keeps
    failing within that long of starting. A return ends this too: only on purpose.
    """
    delay = backoff
    while True:
        started = time.monotonic()
        try:
            await run()
            return
        except Exception as exc:
            stats.errors["task"] = stats.errors.get("task", 0) + 1
            if time.monotonic() - started > backoff_max:
                delay = backoff  # it ran well for a while: not a crash loop
            log.error("task failed; restarting it", exc_info=True,
                      extra={"task": name, "error": _printable(repr(exc)[:300]), "retry_seconds": delay})
        await asyncio.sleep(delay)
        delay = min(delay * 2, backoff_max)


def file_resources(stats: FileStats) -> list[ResourceStats]:
    kinds = sorted(stats.objects.keys() | stats.invalid.keys())
    lists = {"success": stats.reads - min(stats.reads, stats.read_errors), "error": stats.read_errors}
    return [
        # Every re-read after the first replaces the kind's contents: a relist caused by a change.
        ResourceStats(resource=kind or "unknown", synced=stats.synced, lists=lists,
                      relists={"changed": max(stats.reads - 1, 0)},
                      objects=stats.objects.get(kind, 0), invalid_objects=stats.invalid.get(kind, 0))
        for kind in kinds
    ]


def kube_resources(source_stats: object) -> list[ResourceStats]:
    """Adapter for the kube source's ``SourceStats`` (plain counters by resource name)."""
    out: list[ResourceStats] = []
    for name, rs in sorted(getattr(source_stats, "resources", {}).items()):
        out.append(ResourceStats(
            resource=name, synced=bool(rs.synced), lists=dict(rs.list_requests),
            watches=dict(rs.watch_requests), events=dict(rs.events), relists=dict(rs.relists),
            objects=rs.object_count, invalid_objects=rs.invalid_objects, last_event_time=rs.last_event_time,
            unreadable=rs.unreadable_reason,
        ))
    # Referenced provider kinds the API server does not serve: unreadable, nothing to sync.
    out.extend(ResourceStats(resource=name, served=False, unreadable="not_served")
               for name in sorted(getattr(source_stats, "not_served", ())))
    return out


def summary(config: Config, source: str) -> list[tuple[str, str]]:
    """The configuration a person checks first, for the landing page."""
    return [
        ("Source", source),
        ("Namespaces", ", ".join(config.namespaces) or "all"),
        ("Shard", f"{config.shard} of {config.total_shards} (counted from 0)"),
        ("Excluded resources", ", ".join(config.exclude_resources) or "none"),
        ("Exporter metrics", "left out (--web.disable-exporter-metrics)" if config.disable_exporter_metrics
         else "process_* and python_info served"),
    ]


def serve(config: Config) -> int:
    setup_logging(config.log_level, config.log_format)
    for message in config.deprecations:
        log.warning(message)
    libc = runtime.glibc()
    runtime.configure_malloc(libc)  # before any thread exists
    runtime.configure_switching()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    code = 0
    try:
        code = loop.run_until_complete(_serve(config, libc))
    except ConfigError as exc:
        log.error("invalid configuration", extra={"error": str(exc)})
        code = 2
    except KeyboardInterrupt:
        code = 0
    finally:
        _close_loop(loop)
    _exit_if_threads_linger(code)
    return code


def _close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """asyncio.run's cleanup, but without waiting for the default executor's threads: a thread
    still parsing a large initial load would hold the exit for as long as it takes."""
    try:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.wait(pending, timeout=1.0))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def _exit_if_threads_linger(code: int) -> None:
    """Exit now when threads still run (the interpreter would join them at exit, however long)."""
    deadline = time.monotonic() + 1.0
    for thread in threading.enumerate():
        if thread is threading.main_thread() or thread.daemon:
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
    lingering = [t.name for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive()
                 and not t.daemon]
    if lingering:
        log.warning("exiting with work still running in threads", extra={"threads": lingering})
        logging.shutdown()
        os._exit(code)


async def _serve(config: Config, libc: runtime.Glibc | None) -> int:
    web_cfg = webconfig.load(config.web_config_file) if config.web_config_file else None
    keep = keep_shard(config.shard, config.total_shards)
    store = Store(keep=keep, export_only=export_only_change)
    stats = ExporterStats(shard=config.shard, total_shards=config.total_shards)
    sink = FilteringSink(store, namespaces=config.namespaces, exclude=config.exclude_resources,
                         errors=stats.errors)
    selection = Selection(config.metric_allowlist, config.metric_denylist, config.metric_labels_allowlist,
                          config.metric_annotations_allowlist)
    families = selection.families()
    renderer = Renderer(families)
    # Labels and annotations are kept in projections only for the kinds whose family is served.
    projector = functools.partial(project, selection=selection.metadata(families))
    publisher = Publisher(renderer)
    pipeline = Pipeline(store, sink, renderer, stats, keep, publisher.relieve)
    build = current_build()
    log.info("starting", extra={"version": build.version, "revision": build.revision, "branch": build.branch,
                                "implementation": build.implementation,
                                "source": "files" if config.from_files else "kube",
                                "shard": config.shard, "total_shards": config.total_shards})
    _log_selection(selection, len(families))

    tasks: list[asyncio.Task[None]] = []
    stoppable: list[Stoppable] = []
    if config.from_files is not None:
        files = FileSource(config.from_files, sink, poll_interval=config.files_poll_interval,
                           project=projector)
        source_synced: Callable[[], bool] = lambda: files.synced  # noqa: E731
        source_ready: Callable[[], tuple[bool, list[str]]] = (  # noqa: E731
            lambda: (files.synced, [] if files.synced else ["files: not read yet"]))
        resources: Callable[[], Iterable[ResourceStats]] = lambda: file_resources(files.stats)  # noqa: E731
        tasks.append(asyncio.create_task(supervised("files", files.run, stats), name="files"))
        source = f"files: {config.from_files.resolve()}"
    else:
        from exporter.sources.kube import KubeSource, KubeSourceConfig, SourceStats, origin

        source = f"Kubernetes API: {origin(str(config.kubeconfig) if config.kubeconfig else None)}"

        kube_stats = SourceStats()
        kube = KubeSource(sink, KubeSourceConfig(
            kubeconfig=str(config.kubeconfig) if config.kubeconfig else None,
            namespaces=config.namespaces, exclude_kinds=frozenset(config.exclude_resources),
        ), stats=kube_stats, project=projector)
        try:
            await kube.start()
        except Exception as exc:
            log.error("cannot connect to the Kubernetes API", extra={"error": str(exc)})
            return 1
        stoppable.append(kube)
        source_synced = kube.all_synced
        source_ready = kube.readiness
        pipeline.unreadable = kube.unreadable
        resources = lambda: kube_resources(kube_stats)  # noqa: E731

    pipeline.source_synced = source_synced

    def ready_detail() -> list[str]:
        lines = source_ready()[1]
        if source_synced() and not pipeline.ready:
            lines.append("evaluation: the first pass over the listed objects is not complete")
        return lines

    await publisher.start()
    exposition = Exposition(renderer, stats, lambda: pipeline.ready and source_ready()[0], resources,
                            publisher, ready_detail)
    if not config.disable_exporter_metrics:
        exposition.process = ProcessMetrics(lambda: publisher.worker.worker_pid)
    exposition.landing = landing_page(config.telemetry_path, summary(config, source), build)
    runner = web.AppRunner(make_app(exposition, web_cfg, telemetry_path=config.telemetry_path),
                           handle_signals=False, access_log=None, shutdown_timeout=SHUTDOWN_SECONDS / 2)
    await runner.setup()
    site = LimitedSite(runner, config.listen_host or None, config.listen_port, web_config=web_cfg,
                       ssl_context=web_cfg.ssl_context() if web_cfg else None)
    probe_runner = web.AppRunner(make_probe_app(exposition), handle_signals=False, access_log=None,
                                 shutdown_timeout=1.0)
    try:
        await site.start()
        if config.probe_port is not None:
            await probe_runner.setup()
            await LimitedSite(probe_runner, config.probe_host or None, config.probe_port).start()
    except OSError as exc:
        log.error("cannot listen", extra={"address": f"{config.listen_host}:{config.listen_port}",
                                          "probe_address": f"{config.probe_host}:{config.probe_port}",
                                          "error": str(exc)})
        await probe_runner.cleanup()
        await runner.cleanup()
        await publisher.stop()
        return 1
    log.info("listening", extra={
        "address": f"{config.listen_host or '0.0.0.0'}:{config.listen_port}",
        "telemetry_path": config.telemetry_path,
        "tls": bool(web_cfg and web_cfg.tls), "basic_auth": bool(web_cfg and web_cfg.users),
    })

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    tasks.append(asyncio.create_task(supervised("evaluation", pipeline.run, stats), name="evaluation"))

    def background(name: str, run: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
        return asyncio.create_task(supervised(name, run, stats), name=name)

    reporter = background("sync-report", lambda: _report_sync(source_synced, store, renderer))
    collector = background("gc", lambda: runtime.manage_gc(lambda: pipeline.ready))
    trimmer = background("malloc-trim", lambda: runtime.trim_periodically(libc))
    stopper = asyncio.create_task(stop.wait())
    # The source and the evaluation loop run until cancelled: either ending means something broke.
    done, _ = await asyncio.wait([stopper, *tasks], return_when=asyncio.FIRST_COMPLETED)
    failed = [t for t in done if t is not stopper]
    for t in failed:
        log.error("task ended unexpectedly", extra={"task": t.get_name(), "error": repr(t.exception())})
    log.info("shutting down", extra={"reason": "signal" if stopper in done else "task failure"})
    for t in [stopper, reporter, collector, trimmer, *tasks]:
        t.cancel()

    async def cleanup() -> None:
        # A task waiting on a thread (a file source's initial load) ends at once, its thread
        # abandoned; the rest within the shutdown deadline.
        ended, _ = await asyncio.wait([reporter, collector, trimmer, *tasks],
                                      timeout=SHUTDOWN_SECONDS / 4)
        for t in ended:
            if not t.cancelled():
                t.exception()  # retrieved: logged above if it mattered
        for s in stoppable:
            await s.stop()
        await probe_runner.cleanup()
        await runner.cleanup()
        await publisher.stop()
        if web_cfg is not None:
            web_cfg.close()

    try:
        await asyncio.wait_for(cleanup(), SHUTDOWN_SECONDS)
    except TimeoutError:
        log.warning("shutdown did not complete in time; exiting", extra={"seconds": SHUTDOWN_SECONDS})
    return 1 if failed else 0


def _log_selection(selection: Selection, selected: int) -> None:
    """How many object families the flags select (self-metrics are always served), and typos."""
    log.info("metric families selected", extra={
        "selected": selected, "families": len(object_families()),
        "allowlist": ",".join(selection.allow), "denylist": ",".join(selection.deny),
        "labels_allowlist": describe(selection.labels),
        "annotations_allowlist": describe(selection.annotations),
    })
    for pattern in selection.unmatched():
        log.warning("--metric-allowlist expression matches no family", extra={"expression": pattern})
    for flag, resource, family in selection.unserved():
        log.warning(f"{flag} names a resource whose family is not selected; add it to --metric-allowlist "
                    "or take it off --metric-denylist", extra={"resource": resource, "family": family})


async def _report_sync(synced: Callable[[], bool], store: Store, renderer: Renderer) -> None:
    """Log sync progress until the source has listed everything, then once with the totals."""
    started = time.monotonic()
    while not synced():
        await asyncio.sleep(5.0 if time.monotonic() - started > 5 else 0.2)
        if not synced() and time.monotonic() - started > 5:
            log.info("waiting for the first list of every resource", extra={"objects": store.count_by_kind()})
    await asyncio.sleep(DEBOUNCE_SECONDS * 4)
    log.info("synced", extra={"objects": store.count_by_kind(), "rendered_objects": len(renderer),
                              "seconds": round(time.monotonic() - started, 3)})
