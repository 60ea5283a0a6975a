"""process_* and python_info for the exporter and its compression worker, read from /proc.

The values are compared with what the kernel says through other files (/proc/<pid>/status,
the fd directory) for a real child process standing in for the worker; the block parses, has
one series per process and passes promtool.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.metrics import catalog, process, selfmetrics
from exporter.metrics.process import EXPORTER, WORKER, ProcessMetrics


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    time.sleep(0.3)  # started and idle
    yield proc
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(10)


def _status_rss(pid: int | str) -> float:
    with open(f"/proc/{pid}/status") as status:
        text = status.read()
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            return float(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_values_are_the_kernels_for_both_processes(child):
    started = time.time()
    metrics = ProcessMetrics(lambda: child.pid)
    values = metrics.values()
    worker = values["process_resident_memory_bytes"][WORKER]
    assert worker == pytest.approx(_status_rss(child.pid), rel=0.05)
    assert 1 << 20 < worker < 200 << 20
    assert values["process_resident_memory_bytes"][EXPORTER] == pytest.approx(_status_rss("self"), rel=0.2)
    assert values["process_open_fds"][WORKER] == len(os.listdir(f"/proc/{child.pid}/fd"))
    assert values["process_start_time_seconds"][WORKER] == pytest.approx(started, abs=5)
    assert values["process_start_time_seconds"][EXPORTER] < values["process_start_time_seconds"][WORKER]
    assert values["process_max_fds"][WORKER] > 0
    assert values["process_virtual_memory_bytes"][WORKER] > worker
    assert values["process_cpu_seconds_total"][EXPORTER] > 0


def test_rendered_block_has_one_series_per_process_and_python_info(child):
    text = ProcessMetrics(lambda: child.pid).render().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    declared = {f.name.removesuffix("_total") for f in process.FAMILIES}
    assert set(families) == declared
    for name, fam in families.items():
        if name.startswith("process_"):
            assert sorted(s.labels["process"] for s in fam.samples) == sorted([EXPORTER, WORKER]), name
    (info,) = families["python_info"].samples
    assert info.labels["version"] == platform.python_version()
    assert info.labels["implementation"] == platform.python_implementation()
    assert info.value == 1


def test_without_a_worker_only_the_exporter_is_reported():
    pid: list[int | None] = [None]
    metrics = ProcessMetrics(lambda: pid[0])
    text = metrics.render().decode()
    assert 'process="compression-worker"' not in text
    assert 'process_resident_memory_bytes{process="exporter"}' in text


def test_a_worker_that_ended_is_left_out(child):
    pid = child.pid
    assert child.stdin is not None
    child.stdin.close()
    child.wait(10)
    text = ProcessMetrics(lambda: pid).render().decode()
    assert 'process="compression-worker"' not in text
    assert 'process="exporter"' in text


def test_name_filter(child):
    text = ProcessMetrics(lambda: child.pid).render({"process_open_fds"}).decode()
    assert {f.name for f in text_string_to_metric_families(text)} == {"process_open_fds"}
    assert ProcessMetrics(lambda: None).render({"capi_cluster_info"}) == b""


@pytest.mark.skipif(shutil.which("promtool") is None, reason="needs promtool (Debian package prometheus)")
def test_promtool_check_metrics_is_clean(child):
    text = ProcessMetrics(lambda: child.pid).render()
    proc = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, timeout=60)
    assert proc.returncode == 0 and not proc.stdout.strip() and not proc.stderr.strip(), (
        proc.stdout.decode() + proc.stderr.decode()
    )


def test_names_are_declared_once_across_the_catalog():
    names = [f.name for f in catalog.object_families()]
    names += [f.name for f in selfmetrics.FAMILIES] + [f.name for f in process.FAMILIES]
    assert len(names) == len(set(names))
    for fam in process.FAMILIES:
        assert fam.name.endswith("_total") == (fam.type == "counter")
