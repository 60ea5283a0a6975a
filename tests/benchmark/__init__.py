"""Benchmark of the exporter at fleet size (see docs/performance.md): ``python -m tests.benchmark``.

Owns the fleet generator (``fleet*.py``), the fake API server process that serves and changes it
(``apiserver.py``, ``mutations.py``), the measuring harness (``harness.py``, ``probes.py``), the
prometheus_client baseline (``baseline.py``) and the report (``report.py``). It is not part of the
test suite run in CI; ``tests/test_benchmark_generator.py`` checks the generator there.
"""
