"""The comparison point: the same series served the conventional way, with prometheus_client.

Owns rebuilding an exposition as labelled ``Gauge`` children in a fresh ``CollectorRegistry`` (one
Gauge per family, one child per series, values set) and timing ``generate_latest`` over it, the
work a scrape costs an exporter that formats every sample on every scrape. Run in its own process
by the harness (``python -m tests.benchmark.baseline metrics.txt``, prints one JSON line) so its
memory does not stay in the measuring process.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, generate_latest

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def _unescape(value: str) -> str:
    return re.sub(r'\\[\\"n]', lambda m: _UNESCAPE[m.group(0)], value) if "\\" in value else value


def samples(text: str) -> Iterator[tuple[str, dict[str, str], float]]:
    """(name, labels, value) of every sample line of a text-format exposition."""
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m is None:
            continue
        labels = {k: _unescape(v) for k, v in _LABEL.findall(m.group(2) or "")}
        yield m.group(1), labels, float(m.group(3))


def build_registry(text: str) -> tuple[CollectorRegistry, int]:
    """A registry holding every series of ``text`` as a Gauge child; also the series count."""
    registry = CollectorRegistry(auto_describe=False)
    gauges: dict[tuple[str, tuple[str, ...]], Any] = {}
    used: set[str] = set()
    count = 0
    for name, labels, value in samples(text):
        names = tuple(sorted(labels))
        gauge = gauges.get((name, names))
        if gauge is None:
            # A family whose series carry different label sets becomes one Gauge per set.
            metric = name if name not in used else f"{name}_{len(used)}"
            used.add(metric)
            gauge = Gauge(metric, f"Baseline copy of {name}.", names, registry=registry)
            gauges[(name, names)] = gauge
        (gauge.labels(**labels) if names else gauge).set(value)
        count += 1
    return registry, count


def measure(text: str, repeats: int = 0) -> dict[str, Any]:
    t0 = time.perf_counter()
    registry, series = build_registry(text)
    build = time.perf_counter() - t0
    repeats = repeats or (3 if series < 300_000 else 1)  # a full-fleet pass takes a minute
    durations = []
    body = b""
    for _ in range(repeats):
        t = time.perf_counter()
        body = generate_latest(registry)
        durations.append(time.perf_counter() - t)
    t = time.perf_counter()
    compressed = gzip.compress(body, compresslevel=6)
    gzip_s = time.perf_counter() - t
    durations.sort()
    return {
        "series": series,
        "build_seconds": build,
        "generate_latest_seconds": durations[len(durations) // 2],
        "generate_latest_us_per_series": durations[len(durations) // 2] / max(series, 1) * 1e6,
        "gzip_seconds": gzip_s,
        "bytes_raw": len(body),
        "bytes_gzip": len(compressed),
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    print(json.dumps(measure(Path(args[0]).read_text())), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
