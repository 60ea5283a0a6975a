"""The benchmark run at one scale: start the fleet API server and the real ``serve``, then measure.

Owns the order of the phases and what each records (see docs/performance.md for the meaning of
every figure): time to ready and to a complete /metrics; the exposition's size; quiet scrape
latency; CPU per event over a paced stream (with ``--ksm``, kube-state-metrics' beside the
exporter's); a burst of changes for throughput and CPU per event; churn at a fixed rate with full
scrapes back to back (scrape latency under load, event-loop stalls) and the marker family alone
polled beside them (event-to-scrape latency), then slower full scrapes until the churn time is
up, sampling RSS all along. The instruments are ``probes.py``'s;
the prometheus_client comparison is ``baseline.py``'s; formatting and budgets are ``report.py``'s.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from exporter.sources.discovery import PROVIDER_ROLES
from tests.benchmark import ksm, probes
from tests.benchmark.mutations import MARKER_FAMILY
from tests.benchmark.probes import Child, Scrape, StallProbe, percentile
from tests.benchmark.profile import Profiler, summarize


@dataclass
class Options:
    scale: int = 100
    quick: bool = False
    churn_minutes: float = 10.0
    rate: float = 500.0
    burst: int = 10_000
    scrapes: int = 30  # quiet scrapes of each kind (raw, gzip)
    window: float = 60.0  # seconds of back-to-back scrapes while churning
    slow_interval: float = 15.0  # scrape interval for the rest of the churn (a Prometheus-like pace)
    seed: int = 1
    exporter_cmd: tuple[str, ...] = (sys.executable, "-m", "exporter", "serve")
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="fse-bench-")))
    full: bool = True  # False: only ready, size and the burst (the per-event comparison scale)
    paced_rate: float = 200.0  # changes per second of the per-event cost phase
    paced_seconds: float = 10.0
    profile: bool = False  # py-spy the exporter during the burst and the churn
    burst_limit: float = 120.0  # seconds to wait for a burst to be processed
    size_only: bool = False  # only ready, size (series per kind) and quiet scrapes
    # False: the exporter leaves the provider objects out (--exclude-resource of their roles); the
    # fleet, served by the API server, is the same
    provider_objects: bool = True
    # kube-state-metrics beside the exporter (``ksm.py``): CPU per event of both, over paced streams
    ksm: bool = False
    ksm_rate: float = 300.0
    ksm_rounds: int = 3
    cpu_only: bool = False  # only ready, size and the per-event CPU (paced, and the comparison with --ksm)


# How often the churn phase scrapes the marker family alone to time event-to-scrape, and the burst
# phase to see when every change shows.
FAMILY_POLL_SECONDS = 0.25
# How long a process's idle CPU rate is measured before a paced stream: /proc counts CPU in ticks
# of 10 ms, so over 1 s the rate (0, 1 or 2 ticks of the exporter's own timers) moved a figure of
# ~3,000 events by ~35 us.
IDLE_SECONDS = 3.0
BURST_POLL_SECONDS = 0.2
SELF_PREFIX = "fleet_status_exporter_"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_child(cmd: list[str], log: Path, stdout: int | None = None) -> Child:
    fh = log.open("wb")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(cmd, stdout=stdout if stdout is not None else fh, stderr=fh, env=env)
    return Child(proc, log)


class Run:
    """One scale's measurement; ``result`` collects every figure as plain JSON values."""

    def __init__(self, opts: Options) -> None:
        self.o = opts
        self.dir = opts.workdir / f"scale-{opts.scale}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.result: dict[str, Any] = {"scale": opts.scale, "mode": "quick" if opts.quick else "full",
                                       "provider_objects": opts.provider_objects}
        self.port = free_port()
        self.control = f"http://127.0.0.1:{free_port()}"
        self.metrics_url = f"http://127.0.0.1:{self.port}/metrics"
        self.marker_url = f"{self.metrics_url}?name[]={MARKER_FAMILY}"  # the marker family alone
        self.api: Child | None = None
        self.exporter: Child | None = None

    # ---- lifecycle ----

    def start_api(self) -> dict[str, Any]:
        cport = self.control.rsplit(":", 1)[1]
        cmd = [
            sys.executable,
            "-m",
            "tests.benchmark.apiserver",
            "--scale",
            str(self.o.scale),
            "--seed",
            str(self.o.seed),
            "--control-port",
            cport,
            "--kubeconfig-out",
            str(self.dir / "kubeconfig"),
        ]
        self.api = start_child(cmd, self.dir / "apiserver.log", stdout=subprocess.PIPE)
        assert self.api.proc.stdout is not None
        line = self.api.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the fleet API server did not start:\n{self.api.log_tail()}")
        info: dict[str, Any] = json.loads(line)
        self.result["objects_in_api"] = sum(info["counts"].values())
        self.result["objects_by_kind"] = info["counts"]
        return info

    def stop(self) -> None:
        for child in (self.exporter, self.api):
            if child is not None:
                child.stop()

    async def control_post(self, session: aiohttp.ClientSession, path: str, body: dict[str, Any]) -> Any:
        async with session.post(self.control + path, json=body) as resp:
            resp.raise_for_status()
            return await resp.json()

    async def control_get(self, session: aiohttp.ClientSession, path: str) -> Any:
        async with session.get(self.control + path) as resp:
            resp.raise_for_status()
            return await resp.json()

    # ---- phases ----

    async def time_to_ready(self, session: aiohttp.ClientSession, kubeconfig: str) -> None:
        cmd = [
            *self.o.exporter_cmd,
            "--kubeconfig",
            kubeconfig,
            "--web.listen-address",
            f"127.0.0.1:{self.port}",
        ]
        if not self.o.provider_objects:
            cmd += [f"--exclude-resource={role}" for role in PROVIDER_ROLES]
        start = time.monotonic()
        self.exporter = start_child(cmd, self.dir / "exporter.log")
        ready = await self._wait_status(session, "/readyz", start, 600)
        self.result["ready_seconds"] = ready - start
        # Ready means every first list is done; the first complete exposition may come a little later.
        previous = -1
        while True:
            s = await probes.scrape(session, self.metrics_url, False)
            n = probes.series_count(s.text())
            if n == previous and n > 0:
                break
            previous = n
            await asyncio.sleep(0.2)
        self.result["complete_metrics_seconds"] = s.headers - start

    async def _wait_status(
        self, session: aiohttp.ClientSession, path: str, start: float, limit: float
    ) -> float:
        url = f"http://127.0.0.1:{self.port}{path}"
        while time.monotonic() - start < limit:
            assert self.exporter is not None
            if not self.exporter.alive():
                raise RuntimeError(f"the exporter exited:\n{self.exporter.log_tail()}")
            try:
                async with session.get(url) as resp:
                    if resp.status == 200:
                        return time.monotonic()
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.02)
        raise TimeoutError(
            f"{path} not 200 within {limit}s:\n{self.exporter.log_tail() if self.exporter else ''}"
        )

    async def size(self, session: aiohttp.ClientSession) -> None:
        raw = await probes.scrape(session, self.metrics_url, False)
        gz = await probes.scrape(session, self.metrics_url, True)
        text = raw.text()
        (self.dir / "metrics.txt").write_text(text)
        self.result.update(
            series=probes.series_count(text),
            objects_served=probes.object_count(text),
            bytes_raw=raw.wire_bytes,
            bytes_gzip=gz.wire_bytes if gz.gzip else None,
            self_metrics_after_sync=probes.self_metrics(text),
        )
        assert self.exporter is not None
        self.result["memory_after_sync_mib"] = probes.memory_mib(self.exporter.pid)

    async def quiet_scrapes(self, session: aiohttp.ClientSession) -> None:
        assert self.exporter is not None
        probe = StallProbe(self.port)
        probe.start()
        await asyncio.sleep(0.2)
        raw, gz = await self._scrape_series(session, self.o.scrapes)
        records = probe.stop()
        self.result["quiet"] = _latencies(raw, gz) | {
            "stall_during_scrape_s": probes.worst_during(records, [(s.start, s.end) for s in raw + gz]),
            "healthz_p50_s": percentile([r[1] for r in records], 50),
        }

    async def _scrape_series(
        self, session: aiohttp.ClientSession, n: int
    ) -> tuple[list[Scrape], list[Scrape]]:
        raw: list[Scrape] = []
        gz: list[Scrape] = []
        for _ in range(n):
            for use_gzip, out in ((False, raw), (True, gz)):
                s = await probes.scrape(session, self.metrics_url, use_gzip)
                s.body = b""  # only the timings are kept
                out.append(s)
        return raw, gz

    async def burst(self, session: aiohttp.ClientSession) -> None:
        """N changes made at once; processed when the marker family shows every one of them.

        The marker family alone (``name[]``) is polled every BURST_POLL_SECONDS: the first poll
        showing every marker ends the burst (an upper bound, within a poll of the true end). The
        exporter's CPU going idle is not the end: at fleet size the once-a-minute re-evaluation of
        time-dependent rules keeps it just above any idle threshold for most of a minute.
        """
        assert self.exporter is not None and self.api is not None
        pid = self.exporter.pid
        await self._wait_idle(pid, 5.0)
        passes0 = await self._passes(session)
        cpu0, own_cpu0 = probes.cpu_seconds(pid), probes.cpu_seconds(pid, descendants=False)
        loop_cpu0 = probes.main_thread_cpu_seconds(pid)
        ticks0 = probes.machine_ticks()
        with Profiler(pid, self.dir / "profile-burst.txt", self.o.profile):
            b = await self.control_post(session, "/burst", {"n": self.o.burst})
            # The API server's CPU from here on is its streaming of the events (encoding, writing).
            api_cpu0 = probes.cpu_seconds(self.api.pid)
            changes = (await self.control_get(session, f"/changes?since={b['first_index']}"))["changes"]
            latest: dict[tuple[str, str], int] = {}
            for c in changes:
                key = (c["namespace"], c["name"])
                latest[key] = max(latest.get(key, -1), c["marker"])
            visible = 0
            while True:
                s = await probes.scrape(session, self.marker_url, False)
                seen = probes.markers(s.text())
                visible = sum(1 for key, marker in latest.items() if seen.get(key, -1) >= marker)
                if visible == len(latest) or s.start - b["end"] > self.o.burst_limit:
                    done, cpu1, ticks1 = s.headers, probes.cpu_seconds(pid), probes.machine_ticks()
                    own_cpu1 = probes.cpu_seconds(pid, descendants=False)
                    loop_cpu1 = probes.main_thread_cpu_seconds(pid)
                    api_cpu1 = probes.cpu_seconds(self.api.pid)
                    break
                await asyncio.sleep(max(s.start + BURST_POLL_SECONDS - time.monotonic(), 0))
        passes1 = await self._passes(session)
        complete = visible == len(latest)
        # Unfinished within the limit: the rate is a lower bound from the share that did show.
        events = b["events"] if complete else b["events"] * visible / max(len(latest), 1)
        # The server makes every change in one request before its loop streams any: the stream
        # begins when the request returns.
        processing = max(done - b["end"], 1e-9)
        self.result["burst"] = {
            "changes": self.o.burst,
            "events": b["events"],
            "api_emit_seconds": b["end"] - b["start"],
            "api_stream_cpu_seconds": api_cpu1 - api_cpu0,
            "cpu_stolen_share": probes.stolen_share(ticks0, ticks1),
            "processing_seconds": processing,
            "events_per_second": events / processing,
            "cpu_seconds": cpu1 - cpu0,
            "cpu_us_per_event": (cpu1 - cpu0) / max(events, 1) * 1e6,
            # Of that CPU, the compression worker's (the exporter's descendants).
            "worker_cpu_seconds": (cpu1 - cpu0) - (own_cpu1 - own_cpu0),
            # Of the exporter's own, its event loop's (the rest: the threads exchanging batches
            # with the worker).
            "loop_cpu_seconds": loop_cpu1 - loop_cpu0,
            "not_visible_after": len(latest) - visible,
            "complete": complete,
            # Evaluation passes and group evaluations from before the burst to its end (the
            # periodic re-evaluation of time-dependent rules adds a few groups per pass).
            "passes": passes1[0] - passes0[0],
            "group_evaluations": passes1[1] - passes0[1],
        }
        if self.o.profile:
            self.result["profile_burst"] = summarize(self.dir / "profile-burst.txt")

    async def _passes(self, session: aiohttp.ClientSession) -> tuple[float, float]:
        """The exporter's evaluation passes and evaluated groups so far (its self-metrics)."""
        names = (f"{SELF_PREFIX}evaluations_total", f"{SELF_PREFIX}evaluated_groups_total")
        url = f"{self.metrics_url}?" + "&".join(f"name[]={n}" for n in names)
        found = probes.self_metrics((await probes.scrape(session, url, False)).text())
        return found.get(names[0], 0.0), found.get(names[1], 0.0)

    async def paced(self, session: aiohttp.ClientSession) -> None:
        """Exporter CPU per event at a rate it keeps up with, without scrapes: the per-event cost.

        A burst lets changes to one group coalesce (more so on a small fleet), so the comparison
        across scales uses a paced stream where almost every change is processed on its own.
        """
        assert self.exporter is not None
        with Profiler(self.exporter.pid, self.dir / "profile-paced.txt", self.o.profile):
            measured = await self._paced_cpu(session, {"exporter": self.exporter.pid}, self.o.paced_rate)
        self.result["paced"] = measured["exporter"]
        if self.o.profile:
            self.result["profile_paced"] = summarize(self.dir / "profile-paced.txt")

    async def _paced_cpu(self, session: aiohttp.ClientSession, pids: dict[str, int],
                         rate: float) -> dict[str, dict[str, Any]]:
        """CPU per event of each process (with its descendants) over one paced stream of
        ``paced_seconds`` at ``rate`` changes per second, each process's idle CPU rate subtracted."""
        for pid in pids.values():
            await self._wait_idle(pid, 10.0)
        t0, idle0 = time.monotonic(), {name: probes.cpu_seconds(pid) for name, pid in pids.items()}
        await asyncio.sleep(IDLE_SECONDS)
        idle_rate = {name: (probes.cpu_seconds(pid) - idle0[name]) / (time.monotonic() - t0)
                     for name, pid in pids.items()}
        cpu0 = {name: probes.cpu_seconds(pid) for name, pid in pids.items()}
        own0 = {name: probes.cpu_seconds(pid, descendants=False) for name, pid in pids.items()}
        started = await self.control_post(session, "/churn", {"rate": rate})
        await asyncio.sleep(self.o.paced_seconds)
        stopped = await self.control_post(session, "/churn/stop", {})
        done = {name: await self._wait_idle(pid, self.o.burst_limit) for name, pid in pids.items()}
        own1 = {name: probes.cpu_seconds(pid, descendants=False) for name, pid in pids.items()}
        changes = (await self.control_get(session, f"/changes?since={started['index']}"))["changes"]
        events = sum(c["events"] for c in changes[: stopped["index"] - started["index"]])
        out: dict[str, dict[str, Any]] = {}
        for name, (busy_until, cpu1) in done.items():
            spent = cpu1 - cpu0[name] - idle_rate[name] * (busy_until - started["started"])
            out[name] = {
                "rate": rate,
                "events": events,
                "cpu_seconds": spent,
                "idle_cpu_rate": idle_rate[name],
                "cpu_us_per_event": spent / max(events, 1) * 1e6,
                # The process alone, without its descendants (the exporter's compression worker),
                # idle CPU not subtracted.
                "own_cpu_seconds": own1[name] - own0[name],
                "drain_seconds": max(busy_until - stopped["stopped"], 0.0),
            }
        return out

    async def beside_ksm(self, session: aiohttp.ClientSession, kubeconfig: str) -> None:
        """CPU per event of the exporter and of kube-state-metrics watching the same API server,
        over paced streams (``ksm_rounds`` each, no scrapes), one process measured at a time.

        Each stream is measured with the other process stopped (SIGSTOP): both on the two cores
        at once, each one's cache misses and the other's garbage collector (kube-state-metrics'
        heap is ~2 GiB at 100 %) would count in both figures. The stopped one reads the stream
        it missed once it continues, before the next stream. The order alternates from round to
        round, so that drift in the machine's load is shared. kube-state-metrics is stopped
        afterwards, before any other phase.
        """
        assert self.exporter is not None
        started = time.monotonic()
        runner = ksm.KubeStateMetrics(self.dir, kubeconfig)
        try:
            runner.start()
            machines = int(self.result["objects_by_kind"].get("Machine", 0))
            await runner.wait_synced(session, machines, self.o.burst_limit)
            record: dict[str, Any] = {"version": runner.version(), "config": str(runner.config),
                                      "ready_seconds": time.monotonic() - started,
                                      "machines_served": machines}
            pids = {"exporter": self.exporter.pid, "ksm": runner.pid}
            rounds: list[dict[str, dict[str, Any]]] = []
            for i in range(self.o.ksm_rounds):
                measured: dict[str, dict[str, Any]] = {}
                for name in ("exporter", "ksm") if i % 2 == 0 else ("ksm", "exporter"):
                    other = pids["ksm" if name == "exporter" else "exporter"]
                    profile = self.o.profile and name == "exporter" and "profile_ksm" not in self.result
                    with probes.stopped(other), Profiler(pids[name], self.dir / "profile-ksm.txt", profile):
                        measured |= await self._paced_cpu(session, {name: pids[name]}, self.o.ksm_rate)
                    if profile:
                        self.result["profile_ksm"] = summarize(self.dir / "profile-ksm.txt")
                    await self._wait_idle(other, self.o.burst_limit)  # it catches up
                rounds.append(measured)
            record["memory_mib"] = probes.memory_mib(runner.pid)
        finally:
            runner.stop()
        record["rounds"] = rounds
        for name in pids:
            values = [r[name]["cpu_us_per_event"] for r in rounds]
            record[f"{name}_cpu_us_per_event"] = statistics.median(values)
            record[f"{name}_cpu_us_per_event_range"] = (min(values), max(values))
        record["rate"] = self.o.ksm_rate
        self.result["ksm"] = record

    async def _wait_idle(self, pid: int, limit: float, quiet: float = 0.5) -> tuple[float, float]:
        """Wait until ``pid`` used < 2 % CPU for ``quiet`` s; returns (last busy time, CPU then)."""
        start = time.monotonic()
        last_cpu, last_busy, busy_cpu = probes.cpu_seconds(pid), time.monotonic(), probes.cpu_seconds(pid)
        while time.monotonic() - start < limit:
            await asyncio.sleep(0.01)
            now, cpu = time.monotonic(), probes.cpu_seconds(pid)
            if cpu - busy_cpu > 0.02 * (now - last_busy) + 1 / probes.CLK_TCK:
                last_busy, busy_cpu = now, cpu
            elif now - last_busy >= quiet:
                return last_busy, busy_cpu
            last_cpu = cpu
        return time.monotonic(), last_cpu

    async def _poll_marker_family(self, session: aiohttp.ClientSession,
                                  tracker: probes.Visibility) -> list[tuple[float, float]]:
        """Scrape only the marker family (``name[]``) every FAMILY_POLL_SECONDS until cancelled.

        Each poll's markers go to a task that matches them with the changes made, so that asking
        the API server for those (busy making the churn) never delays the next poll. Returns each
        poll's start time and seconds to its headers (a list the caller gets back on cancellation,
        once every poll is matched).
        """
        starts: list[tuple[float, float]] = []
        polls: asyncio.Queue[tuple[probes.Scrape, dict[tuple[str, str], int]]] = asyncio.Queue()
        matcher = asyncio.create_task(self._match_markers(session, tracker, polls))
        try:
            while True:
                s = await probes.scrape(session, self.marker_url, False)
                starts.append((s.start, s.headers - s.start))
                polls.put_nowait((s, probes.markers(s.text())))
                s.body = b""
                await asyncio.sleep(max(s.start + FAMILY_POLL_SECONDS - time.monotonic(), 0))
        except asyncio.CancelledError:
            # Every poll matched, or the matcher's error (it ends by no other way).
            joined = asyncio.ensure_future(polls.join())
            await asyncio.wait([joined, matcher], return_when=asyncio.FIRST_COMPLETED)
            joined.cancel()
            if matcher.done():
                matcher.result()
            matcher.cancel()
            return starts

    async def _match_markers(self, session: aiohttp.ClientSession, tracker: probes.Visibility,
                             polls: asyncio.Queue[tuple[probes.Scrape, dict[tuple[str, str], int]]]) -> None:
        """Match each poll, in order, with the changes made by the time it is matched."""
        while True:
            s, seen = await polls.get()
            batch = await self.control_get(session, f"/changes?since={tracker.next}")
            tracker.add(batch["changes"], batch["next"])
            tracker.observe(s, seen)
            polls.task_done()

    async def churn(self, session: aiohttp.ClientSession) -> None:
        assert self.exporter is not None
        pid = self.exporter.pid
        started = await self.control_post(session, "/churn", {"rate": self.o.rate})
        probe = StallProbe(self.port)
        probe.start()
        profiler = Profiler(pid, self.dir / "profile-churn.txt", self.o.profile)
        profiler.__enter__()
        family = probes.Visibility(started["index"])
        watcher = asyncio.create_task(self._poll_marker_family(session, family))
        rss: list[tuple[float, float]] = []
        raw: list[Scrape] = []
        gz: list[Scrape] = []
        t0 = time.monotonic()
        started_unix = time.time()
        ticks0 = probes.machine_ticks()
        end = t0 + self.o.churn_minutes * 60
        sampler = asyncio.create_task(_sample_rss(pid, t0, rss))
        use_gzip = False
        while time.monotonic() < end:
            in_window = time.monotonic() - t0 < self.o.window
            # Only the timings are kept: a 100 % body is ~490 MB raw, and keeping or parsing each
            # one here would take the measuring client seconds of the CPU the exporter shares with
            # it, and delay the marker polls beside them.
            s = await probes.scrape(session, self.metrics_url, use_gzip, keep=False)
            (gz if use_gzip else raw).append(s)
            use_gzip = not use_gzip
            if not in_window:
                await asyncio.sleep(max(min(s.start + self.o.slow_interval, end) - time.monotonic(), 0))
        sampler.cancel()
        watcher.cancel()
        polls: list[tuple[float, float]] = await watcher  # it returns its polls when cancelled
        family_polls = [start for start, _ in polls]
        intervals = [b - a for a, b in itertools.pairwise(family_polls)]
        answers = [h for _, h in polls]
        stopped = await self.control_post(session, "/churn/stop", {})
        ticks1 = probes.machine_ticks()
        records = probe.stop()
        profiler.__exit__()
        if self.o.profile:
            self.result["profile_churn"] = summarize(self.dir / "profile-churn.txt")
        windows = [(s.start, s.end) for s in raw + gz]
        starts = sorted(s.start for s in raw + gz)
        made = stopped["index"] - started["index"]
        self.result["churn"] = _latencies(raw, gz) | {
            "minutes": self.o.churn_minutes,
            "rate": self.o.rate,
            "changes": made,
            "achieved_rate": made / max(time.monotonic() - t0, 1e-9),
            # Measured on the marker family alone, polled every FAMILY_POLL_SECONDS: a raw scrape
            # sends its headers right after its snapshot, so these bounds are ~a poll apart.
            "event_to_scrape_p50_s": percentile(family.latencies, 50),
            "event_to_scrape_p99_s": percentile(family.latencies, 99),
            "event_to_scrape_samples": len(family.latencies),
            "event_to_scrape_lower_p50_s": percentile(family.lower_bounds, 50),
            "event_to_scrape_lower_p99_s": percentile(family.lower_bounds, 99),
            "family_poll_interval_p50_s": percentile(intervals, 50),
            "family_poll_interval_p99_s": percentile(intervals, 99),
            # How long a poll waits for its snapshot: the part of event-to-scrape the exporter's
            # answer takes, rather than the change's way to it.
            "family_poll_headers_p50_s": percentile(answers, 50),
            "family_poll_headers_p99_s": percentile(answers, 99),
            "never_seen": family.older_than(family_polls[-1] - 2.0) if family_polls else made,
            "poll_interval_p50_s": percentile([b - a for a, b in itertools.pairwise(starts)], 50),
            "stall_during_scrape_s": probes.worst_during(records, windows),
            # (monotonic start, seconds): to line them up with the exporter's log or a profile
            "slowest_stalls_during_scrapes": probes.slowest_during(records, windows),
            "stall_any_s": max((r[1] for r in records), default=float("nan")),
            "rss_samples_mib": rss,
            # (seconds into the churn, seconds to the headers, seconds in all), slowest first: the
            # body was built when the headers left, the rest is the write. The wall clock of the
            # churn's start lines them up with the exporter's log.
            "slowest_gzip_scrapes": [(s.start - t0, s.headers - s.start, s.seconds)
                                     for s in sorted(gz, key=lambda s: -s.seconds)[:5]],
            "churn_started_unix": started_unix,
            "cpu_stolen_share": probes.stolen_share(ticks0, ticks1),
        }
        self.result["memory_after_churn_mib"] = probes.memory_mib(pid)
        await asyncio.sleep(2.0)  # the last changes' watch events are in flight
        s = await probes.scrape(session, self.metrics_url, False)
        text = s.text()
        self.result["self_metrics_after_churn"] = probes.self_metrics(text)
        # Every change of the churn is in the full body once it stopped, not only in its family.
        final = probes.Visibility(started["index"])
        batch = await self.control_get(session, f"/changes?since={final.next}")
        final.add(batch["changes"], batch["next"])
        final.observe(s, probes.markers(text))
        self.result["churn"]["full_body_missing"] = final.older_than(s.start)

    async def run(self) -> dict[str, Any]:
        # Before anything else runs and after everything stopped: the machine's speed (probes).
        self.result["reference_cpu_seconds"] = [probes.reference_cpu_seconds()]
        info = self.start_api()
        try:
            async with probes.client_session() as session:
                await self.time_to_ready(session, info["kubeconfig"])
                await self.size(session)
                if self.o.size_only:
                    text = (self.dir / "metrics.txt").read_text()
                    self.result["series_by_kind"] = probes.series_by_kind(text)
                    await self.quiet_scrapes(session)
                    return self.result
                if self.o.full and not self.o.cpu_only:
                    await self.quiet_scrapes(session)
                await self.paced(session)
                if self.o.ksm:
                    await self.beside_ksm(session, info["kubeconfig"])
                if self.o.cpu_only:
                    return self.result
                await self.burst(session)
                if self.o.full:
                    await self.churn(session)
        finally:
            self.stop()
            self.result["reference_cpu_seconds"].append(probes.reference_cpu_seconds())
        return self.result


async def _sample_rss(pid: int, t0: float, out: list[tuple[float, float]], every: float = 1.0) -> None:
    while True:
        out.append((time.monotonic() - t0, probes.memory_mib(pid)["VmRSS"]))
        await asyncio.sleep(every)


def _latencies(raw: list[Scrape], gz: list[Scrape]) -> dict[str, Any]:
    return {
        "scrapes_raw": len(raw),
        "scrapes_gzip": len(gz),
        "scrape_raw_p50_s": percentile([s.seconds for s in raw], 50),
        "scrape_raw_p99_s": percentile([s.seconds for s in raw], 99),
        "scrape_gzip_p50_s": percentile([s.seconds for s in gz], 50),
        "scrape_gzip_p99_s": percentile([s.seconds for s in gz], 99),
    }
