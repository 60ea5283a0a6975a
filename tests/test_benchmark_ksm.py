"""The benchmark's kube-state-metrics comparison (``--ksm``): its instruments and its figures.

Running kube-state-metrics needs ``make ksm-tool``, which CI does not build; what it reads from the
fake API server is checked against the real server in tests/test_realcluster_watch.py. Here: a
process is really stopped while the other one is measured, and the table and the budget verdicts
say what the streams measured; the machine reference every run takes counts CPU, not waiting;
the marker polls' own time and spacing show beside event-to-scrape.
"""

from __future__ import annotations

import subprocess
import sys
import time

from tests.benchmark import probes, report
from tests.benchmark.__main__ import options, parse_args


def test_a_stopped_process_spends_no_cpu_and_continues_after() -> None:
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        with probes.stopped(busy.pid):
            before = probes.cpu_seconds(busy.pid)
            time.sleep(0.5)
            assert probes.cpu_seconds(busy.pid) == before
        time.sleep(0.5)
        assert probes.cpu_seconds(busy.pid) > before + 0.2
    finally:
        busy.kill()
        busy.wait()


def test_the_main_threads_cpu_leaves_out_the_other_threads() -> None:
    # The burst's "event loop's CPU": a process whose second thread spins while its main one sleeps.
    code = ("import threading, time\n"
            "def spin():\n    while True: pass\n"
            "threading.Thread(target=spin, daemon=True).start()\ntime.sleep(60)")
    busy = subprocess.Popen([sys.executable, "-c", code])
    try:
        time.sleep(1.0)
        assert probes.cpu_seconds(busy.pid, descendants=False) > 0.5
        assert probes.main_thread_cpu_seconds(busy.pid) < 0.2
    finally:
        busy.kill()
        busy.wait()


def test_the_machine_reference_is_the_cpu_its_workload_spends_not_its_wall_time() -> None:
    def waits() -> None:
        time.sleep(0.2)

    def spins() -> None:
        until = time.process_time() + 0.1
        while time.process_time() < until:
            pass

    assert probes.reference_cpu_seconds(repeat=2, workload=waits) < 0.05
    assert 0.1 <= probes.reference_cpu_seconds(repeat=2, workload=spins) < 0.2
    assert probes.reference_workload(100) == probes.reference_workload(100) > 0  # fixed work


def test_the_table_shows_the_machine_reference_before_and_after_the_run() -> None:
    results = [{"scale": 100, "mode": "quick", "reference_cpu_seconds": [0.2014, 0.3125]}]
    report.derive(results)
    row = next(line for line in report.table(results).splitlines() if line.startswith("machine reference"))
    assert "0.201 s / 0.312 s" in row


def test_the_table_shows_how_long_the_marker_polls_waited_for_their_headers_and_each_other() -> None:
    results = [{"scale": 100, "mode": "quick",
                "churn": {"family_poll_headers_p50_s": 0.0412, "family_poll_headers_p99_s": 0.9876,
                          "family_poll_interval_p50_s": 0.2504, "family_poll_interval_p99_s": 1.4321}}]
    report.derive(results)
    lines = report.table(results).splitlines()
    assert "0.041 s / 0.988 s" in next(line for line in lines if "time to its headers" in line)
    assert "0.250 s / 1.432 s" in next(line for line in lines if "poll interval" in line)


def ksm_record(exporter: list[float], ksm: list[float]) -> dict[str, object]:
    return {
        "rate": 300.0,
        "rounds": [{"exporter": {"cpu_us_per_event": e}, "ksm": {"cpu_us_per_event": k}}
                   for e, k in zip(exporter, ksm, strict=True)],
        "exporter_cpu_us_per_event": sorted(exporter)[len(exporter) // 2],
        "exporter_cpu_us_per_event_range": (min(exporter), max(exporter)),
        "ksm_cpu_us_per_event": sorted(ksm)[len(ksm) // 2],
        "ksm_cpu_us_per_event_range": (min(ksm), max(ksm)),
    }


def test_the_table_compares_both_at_each_scale_against_the_budget() -> None:
    results = [
        {"scale": 10, "mode": "quick", "ksm": ksm_record([400, 410, 420], [500, 490, 510])},
        {"scale": 100, "mode": "quick", "ksm": ksm_record([450, 520, 600], [480, 500, 520])},
    ]
    report.derive(results)
    large = results[1]
    assert large["vs_ksm"] == 520 / 500
    assert large["vs_ksm_scale_ratio"] == 520 / 410
    assert large["ksm_scale_ratio"] == 500 / 500
    verdicts = report.verdicts(large)
    assert verdicts["vs_ksm"] is False and verdicts["vs_ksm_scale_ratio"] is False
    table = report.table(results)
    assert "520 us (450-600)" in table and "500 us (480-520)" in table
    row = next(line for line in table.splitlines() if line.startswith("per-event CPU, exporter / kube-state"))
    assert row.split()[-5:] == ["0.82", "1.04", "<=", "1.0", "MISS"]


def test_the_comparison_is_asked_for_and_shaped_by_flags() -> None:
    o = options(parse_args(["--ksm", "--ksm-rate", "250", "--ksm-rounds", "2", "--cpu-only"]))
    assert (o.ksm, o.ksm_rate, o.ksm_rounds, o.cpu_only) == (True, 250.0, 2, True)
    assert options(parse_args(["--no-ksm"])).ksm is False
    assert options(parse_args([])).ksm is False
