"""Measuring instruments: child processes, /proc readings, timed scrapes, an event-loop stall probe,
and reading markers and series out of an exposition.

Owns how each figure is taken, not when (``harness.py``): RSS and CPU from ``/proc/<pid>`` (the
exporter's and its compression worker's together), a
scrape timed to its headers and its last byte with the body kept compressed when gzip was asked
for, and a /healthz poller in a separate process (its latency during a scrape bounds how long the
exporter's event loop was blocked; it runs apart so the measuring client's own pauses do not
count).
"""

from __future__ import annotations

import contextlib
import gzip
import http.client
import multiprocessing as mp
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import aiohttp

from tests.benchmark.mutations import MARKER_FAMILY, marker_of

CLK_TCK = os.sysconf("SC_CLK_TCK")


# ---- processes --------------------------------------------------------------------------------


@dataclass
class Child:
    """A child process started by the harness; stopped with SIGTERM, then SIGKILL."""

    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout)

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (the exporter and its compression worker)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                todo.extend(int(c) for c in task.read_text().split())
    return out


def _status_mib(pid: int) -> dict[str, float]:
    out: dict[str, float] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024
    return out


def memory_mib(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (peak RSS) in MiB of ``pid`` and its descendants together, and of each part.

    ``VmRSS``/``VmHWM``: the sums over the process tree (the peak sum is an upper bound: each
    process's peak may come at a different time); ``exporter_*``: the process alone.
    """
    own = _status_mib(pid)
    out = {"exporter_VmRSS": own.get("VmRSS", 0.0), "exporter_VmHWM": own.get("VmHWM", 0.0),
           "VmRSS": 0.0, "VmHWM": 0.0}
    for p in process_tree(pid):
        status = own if p == pid else _status_mib(p)
        out["VmRSS"] += status.get("VmRSS", 0.0)
        out["VmHWM"] += status.get("VmHWM", 0.0)
    return out


@contextlib.contextmanager
def stopped(pid: int) -> Iterator[None]:
    """``pid`` and its descendants stopped (SIGSTOP) while the block runs, continued after."""
    tree = process_tree(pid)
    for p in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGSTOP)
    try:
        yield
    finally:
        for p in tree:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGCONT)


def cpu_seconds(pid: int, descendants: bool = True) -> float:
    """User + system CPU time of ``pid`` and (unless not ``descendants``) its living descendants so far."""
    total = 0.0
    for p in process_tree(pid) if descendants else [pid]:
        total += _stat_cpu(Path(f"/proc/{p}/stat"))
    return total


def main_thread_cpu_seconds(pid: int) -> float:
    """User + system CPU time of the main thread of ``pid`` alone (the exporter's event loop)."""
    return _stat_cpu(Path(f"/proc/{pid}/task/{pid}/stat"))


def _stat_cpu(stat: Path) -> float:
    with contextlib.suppress(OSError):
        fields = stat.read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    return 0.0


def machine_ticks() -> tuple[int, int]:
    """(ticks stolen by the hypervisor, all ticks) of every CPU so far, from /proc/stat (0, 0 elsewhere).

    On a virtual machine the host may run other guests on the cores this one counts as busy: the
    share stolen over a phase tells a slow run of the machine from a slow run of the exporter.
    """
    with contextlib.suppress(OSError, ValueError, IndexError):
        fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return fields[7], sum(fields[:8])  # user nice system idle iowait irq softirq steal
    return 0, 0


def stolen_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of the machine's CPU time the hypervisor took between two ``machine_ticks``."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else float("nan")


def reference_workload(rounds: int = 60_000) -> int:
    """A fixed piece of pure-Python work of the exporter's kind: small dicts of strings built,
    formatted into label pairs, compared with the last ones and joined. Returns a checksum."""
    kept: dict[str, tuple[str, ...]] = {}
    total = 0
    for i in range(rounds):
        key = f"fleet-{i % 97:02d}/wl-{i % 1009:04d}"
        fields = {"type": "Ready", "status": "True" if i % 3 else "False", "reason": f"R{i % 7}",
                  "message": ""}
        row = tuple(f'{k}="{v}"' for k, v in fields.items())
        if kept.get(key) != row:
            kept[key] = row
            total += len(",".join(row))
    return total


def reference_cpu_seconds(repeat: int = 3, workload: Callable[[], object] = reference_workload) -> float:
    """The CPU time of ``workload`` in this process, the least of ``repeat`` runs: the machine's
    speed when a run took its figures.

    Figures of CPU per event only compare between runs on machines of the same speed. A virtual
    machine of the same type is not always one: its cores may share a physical core or a cache
    with other guests, which no counter of the guest reports (the CPU stolen stays near zero), and
    the same code then reads slower in everything. The least of a few runs is the speed with the
    least interference.
    """
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        workload()
        best = min(best, time.process_time() - started)
    return best


# ---- scrapes ----------------------------------------------------------------------------------


@dataclass
class Scrape:
    start: float
    headers: float  # when the response headers arrived: the body was built by then
    end: float
    gzip: bool
    wire_bytes: int
    body: bytes  # as received (compressed when ``gzip``)

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def text(self) -> str:
        raw = gzip.decompress(self.body) if self.gzip else self.body
        return raw.decode()


async def scrape(session: aiohttp.ClientSession, url: str, use_gzip: bool, *, keep: bool = True) -> Scrape:
    """One scrape, timed; ``keep=False`` counts the body's bytes and drops them as they arrive
    (joining a 100 % raw body, ~490 MB, holds the measuring loop for a copy of it)."""
    headers = {
        "Accept-Encoding": "gzip" if use_gzip else "identity",
        "Accept": "text/plain;version=0.0.4;q=1,*/*;q=0.1",
    }
    start = time.monotonic()
    async with session.get(url, headers=headers) as resp:
        got_headers = time.monotonic()
        resp.raise_for_status()
        if keep:
            body = await resp.read()
            size = len(body)
        else:
            body, size = b"", 0
            async for chunk in resp.content.iter_any():
                size += len(chunk)
        end = time.monotonic()
        compressed = resp.headers.get("Content-Encoding", "") == "gzip"
    return Scrape(start, got_headers, end, compressed, size, body)


def client_session() -> aiohttp.ClientSession:
    # auto_decompress off: the timed part is the transfer; decompression happens afterwards.
    return aiohttp.ClientSession(auto_decompress=False, timeout=aiohttp.ClientTimeout(total=120))


# ---- event-loop stall probe -------------------------------------------------------------------


def _poll_healthz(port: int, interval: float, conn: Connection) -> None:
    records: list[tuple[float, float]] = []
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while not conn.poll():
        start = time.monotonic()
        try:
            client.request("GET", "/healthz")
            client.getresponse().read()
        except (OSError, http.client.HTTPException):
            client.close()
            client = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            continue
        records.append((start, time.monotonic() - start))
        time.sleep(interval)
    conn.send(records)


class StallProbe:
    """Polls /healthz every ``interval`` seconds from another process; ``stop`` returns (start, latency)."""

    def __init__(self, port: int, interval: float = 0.005) -> None:
        self.parent, child = mp.Pipe()
        self.proc = mp.get_context("fork").Process(
            target=_poll_healthz, args=(port, interval, child), daemon=True
        )

    def start(self) -> None:
        self.proc.start()

    def stop(self) -> list[tuple[float, float]]:
        self.parent.send("stop")
        records: list[tuple[float, float]] = self.parent.recv()
        self.proc.join(5)
        return records


def worst_during(records: Sequence[tuple[float, float]], windows: Sequence[tuple[float, float]]) -> float:
    """The longest probe latency among probes that overlapped one of ``windows``."""
    return max((latency for _, latency in slowest_during(records, windows, 1)), default=0.0)


def slowest_during(records: Sequence[tuple[float, float]], windows: Sequence[tuple[float, float]],
                   n: int = 5) -> list[tuple[float, float]]:
    """The ``n`` slowest (start, latency) probes that overlapped one of ``windows``, slowest first."""
    spans = sorted(windows)
    during = [(start, latency) for start, latency in records
              if any(s <= start + latency and start <= e for s, e in spans)]
    return sorted(during, key=lambda r: -r[1])[:n]


# ---- reading expositions ----------------------------------------------------------------------

_MARKER_LINE = re.compile(MARKER_FAMILY + r"\{([^}]*)\} (\S+)")
# Only the two labels a marker is keyed by (Kubernetes names need no escapes): a dict of every
# label of each of the 20,000 series cost ~110 ms of CPU per poll at 100 %, on the cores the
# exporter and the API server share with this client while a burst is timed; these take ~35.
_NAMESPACE = re.compile(r'\bnamespace="([^"]*)"')
_NAME = re.compile(r'\bname="([^"]*)"')
_UID = re.compile(r'uid="([^"]*)"')


def markers(text: str) -> dict[tuple[str, str], int]:
    """(namespace, name) → marker of every Machine in ``text``."""
    out: dict[tuple[str, str], int] = {}
    begin = text.find(f"# TYPE {MARKER_FAMILY} ")
    if begin < 0:
        begin = 0  # no TYPE line: search everything
    end = text.find("\n# HELP", begin + 1)
    block = text[begin:] if end < 0 else text[begin:end]
    for labels, value in _MARKER_LINE.findall(block):
        namespace, name = _NAMESPACE.search(labels), _NAME.search(labels)
        key = (namespace[1] if namespace else "", name[1] if name else "")
        out[key] = marker_of(float(value))
    return out


def series_count(text: str) -> int:
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    comments = text.count("\n#") + (1 if text.startswith("#") else 0)
    blanks = text.count("\n\n")
    return lines - comments - blanks


def object_count(text: str) -> int:
    return len(set(_UID.findall(text)))


def series_by_kind(text: str) -> dict[str, dict[str, int]]:
    """Per kind of object (by family prefix, the longest that matches): series and objects (uids).

    Findings families (``capi_finding``, ``*_finding``) count with the kind whose prefix they
    carry, or under "findings"; self-metrics under "exporter".
    """
    from exporter.metrics.catalog import KINDS

    prefixes = sorted(((spec.prefix + "_", spec.kind) for spec in KINDS), key=lambda p: -len(p[0]))
    out: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        kind = "exporter" if name.startswith("fleet_status_exporter_") else next(
            (k for prefix, k in prefixes if name.startswith(prefix)), "findings")
        entry = out.setdefault(kind, {"series": 0, "uids": set()})
        entry["series"] += 1
        uid = _UID.search(line)
        if uid:
            entry["uids"].add(uid.group(1))
    return {k: {"series": v["series"], "objects": len(v["uids"])} for k, v in sorted(out.items())}


def self_metrics(text: str, prefix: str = "fleet_status_exporter_") -> dict[str, float]:
    """The exporter's self-metric samples, keyed by their series text."""
    out: dict[str, float] = {}
    for m in re.finditer(rf"^({re.escape(prefix)}\S*?(?:\{{[^}}]*\}})?) (\S+)$", text, re.MULTILINE):
        try:
            out[m.group(1)] = float(m.group(2))
        except ValueError:
            continue
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


class Visibility:
    """Changes waiting to show in /metrics, and how long the ones that showed took."""

    def __init__(self, start_index: int) -> None:
        self.next = start_index
        self.pending: dict[tuple[str, str], list[tuple[int, float]]] = {}
        self.latencies: list[float] = []
        # Lower bounds of the same latencies: a change that a scrape showed but the one before did
        # not was not yet applied when that earlier scrape began, whatever the poll interval.
        self.lower_bounds: list[float] = []
        self.previous_start: float | None = None

    def add(self, changes: list[dict[str, Any]], next_index: int) -> None:
        for c in changes:
            self.pending.setdefault((c["namespace"], c["name"]), []).append((c["marker"], c["at"]))
        self.next = next_index

    def older_than(self, t: float) -> int:
        """Changes made before ``t`` that never showed."""
        return sum(1 for waiting in self.pending.values() for _, at in waiting if at < t)

    def observe(self, scrape: Scrape, seen: dict[tuple[str, str], int]) -> None:
        # The headers arrive once the body is built: an upper bound of when the scrape's view was taken.
        for key in list(self.pending):
            value = seen.get(key, -1)
            waiting = self.pending[key]
            keep = []
            for marker, at in waiting:
                if value >= marker and at <= scrape.headers:
                    self.latencies.append(max(scrape.headers - at, 0.0))
                    before = self.previous_start
                    self.lower_bounds.append(max(before - at, 0.0) if before is not None else 0.0)
                else:
                    keep.append((marker, at))
            if keep:
                self.pending[key] = keep
            else:
                del self.pending[key]
        self.previous_start = scrape.start
