"""The in-process benchmark (``python -m tests.benchmark.inprocess``) measures the state serve runs in.

It does not run in CI as a benchmark; this keeps it working and starting where ``serve`` is once
ready and scraped, which is what its per-event figures are compared with.
"""

from __future__ import annotations

from tests.benchmark import inprocess


def test_the_in_process_run_starts_as_serve_is_once_scraped_and_measures_every_change() -> None:
    _, _, _, renderer = inprocess.load(1, seed=5)
    assert len(renderer) > 0 and renderer.pending_bytes == 0  # every bucket compressed
    figures = inprocess.measure(1, 20, "mixed", per_pass=10, seed=5)
    assert figures["events"] >= 20 and figures["us_per_event"] > 0
    assert figures["renders_per_event"] > 0
