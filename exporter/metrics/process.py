"""The metrics about the exporter's processes: ``process_*`` and ``python_info``.

Owns these families' declarations (data, documented with the catalog) and their rendering at
scrape time, with the values prometheus_client's ``ProcessCollector`` and ``PlatformCollector``
read (``/proc/<pid>/stat``, ``limits``, ``fd``; the interpreter), for the exporter's own process
and for its compression worker (``exporter.metrics.publisher``). Every ``process_*`` series carries
``process="exporter"`` or ``process="compression-worker"``: the worker is a process of its own
with its own memory, so ``sum without (process) (process_resident_memory_bytes)`` is what the
pod holds, the figure to size its memory limit by (pages of shared libraries count in each).
The worker's series are absent while it does not run (its work is then done in a thread of the
exporter). ``--web.disable-exporter-metrics`` leaves all of them out, as node_exporter's does;
the ``fleet_status_exporter_*`` self-metrics stay. Owns no process: it is told the worker's pid.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Final

from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from exporter.metrics.exposition import Sample, header, sample_lines
from exporter.metrics.spec import FamilySpec, MetricType, family

EXPORTER: Final = "exporter"
WORKER: Final = "compression-worker"
PROCESSES: Final = (EXPORTER, WORKER)
_PYTHON_LABELS: Final = ("implementation", "major", "minor", "patchlevel", "version")


def _none(_: object) -> Iterable[Sample]:
    return ()


def _decl(name: str, help_text: str, type_: MetricType, labels: tuple[str, ...] = ("process",)) -> FamilySpec:
    return family(name, help_text, type_, labels, "process", _none, identity=False)


# Help texts are prometheus_client's, so the families read as they do from any Python exporter.
PYTHON_INFO: Final = _decl("python_info", "Python platform information", "info", _PYTHON_LABELS)
FAMILIES: Final[tuple[FamilySpec, ...]] = (
    _decl("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter"),
    _decl("process_resident_memory_bytes", "Resident memory size in bytes.", "gauge"),
    _decl("process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge"),
    _decl("process_open_fds", "Number of open file descriptors.", "gauge"),
    _decl("process_max_fds", "Maximum number of open file descriptors.", "gauge"),
    _decl("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", "gauge"),
    PYTHON_INFO,
)
_HEADERS: Final = {f.name: header(f.name, f.help, f.exposition_type) for f in FAMILIES}
_PROCESS_FAMILIES: Final = tuple(f.name for f in FAMILIES if f.name.startswith("process_"))


def _python_info() -> list[Sample]:
    values: dict[str, str] = {}
    for metric in PlatformCollector(registry=None).collect():
        for sample in metric.samples:
            values.update(sample.labels)
    return [(tuple(values.get(label, "") for label in _PYTHON_LABELS), 1.0)]


class ProcessMetrics:
    """Renders the families for this process and the worker whose pid ``worker_pid`` gives."""

    def __init__(self, worker_pid: Callable[[], int | None], proc: str = "/proc") -> None:
        self._worker_pid = worker_pid
        self._collectors = {
            EXPORTER: ProcessCollector(proc=proc, registry=None),
            WORKER: ProcessCollector(pid=self._worker, proc=proc, registry=None),
        }
        self._python = _python_info()

    def _worker(self) -> str:
        pid = self._worker_pid()
        return str(pid) if pid is not None else "0"  # never read: render skips a worker that is not there

    def values(self) -> dict[str, dict[str, float]]:
        """Sample name -> process -> value, as the collectors read them now."""
        out: dict[str, dict[str, float]] = {}
        for process, collector in self._collectors.items():
            if process == WORKER and self._worker_pid() is None:
                continue
            for metric in collector.collect():
                for sample in metric.samples:
                    out.setdefault(sample.name, {})[process] = float(sample.value)
        return out

    def render(self, names: Collection[str] | None = None) -> bytes:
        """The families' block of one scrape (only those in ``names`` when it is given)."""
        wanted = [f for f in _PROCESS_FAMILIES if names is None or f in names]
        values = self.values() if wanted else {}
        chunks: list[bytes] = []
        for name in wanted:
            by_process = values.get(name, {})
            samples: list[Sample] = [((p,), by_process[p]) for p in PROCESSES if p in by_process]
            if samples:
                chunks.append(_HEADERS[name])
                chunks.append(sample_lines(name, "", ("process",), samples).encode())
        python = PYTHON_INFO.name
        if names is None or python in names:
            chunks.append(_HEADERS[python])
            chunks.append(sample_lines(python, "", _PYTHON_LABELS, self._python).encode())
        return b"".join(chunks)
