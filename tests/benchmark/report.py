"""The benchmark's output: derived figures, the performance budget, the table and the JSON file.

Owns the budget of docs/performance.md (checked on the 100 % run only, since it is stated for the
target fleet) and how results are printed: one column per scale, one row per figure, the budget
and a pass/miss verdict next to it. Owns no measurement.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Result = dict[str, Any]


@dataclass(frozen=True)
class Budget:
    label: str
    limit: str
    check: Callable[[float], bool]


BUDGETS: dict[str, Budget] = {
    "ready_seconds": Budget("ready", "<= 15 s", lambda v: v <= 15),
    "peak_rss_mib": Budget("peak RSS", "<= 300 MiB", lambda v: v <= 300),
    "rss_growth_mib": Budget("RSS growth under churn", "flat (<= 5 %, min 10 MiB)", lambda v: True),
    "scrape_gzip_p99_s": Budget("/metrics p99 gzip (events flowing)", "<= 1 s", lambda v: v <= 1),
    "stall_s": Budget("event-loop stall by a scrape", "<= 50 ms", lambda v: v <= 0.050),
    "speedup": Budget("scrape vs prometheus_client", ">= 20x", lambda v: v >= 20),
    "events_per_second": Budget("events processed per second", ">= 5,000", lambda v: v >= 5000),
    "event_to_scrape_p99_s": Budget("event-to-scrape p99 at 500 ev/s", "< 1 s", lambda v: v < 1),
    "per_event_ratio": Budget("per-event CPU, 100 % / 10 %", "<= 1.5", lambda v: v <= 1.5),
    "vs_ksm": Budget("per-event CPU, exporter / kube-state-metrics", "<= 1.0", lambda v: v <= 1.0),
    "vs_ksm_scale_ratio": Budget("per-event CPU beside kube-state-metrics, 100 % / 10 %", "<= 1.2",
                                 lambda v: v <= 1.2),
}


def derive(results: list[Result]) -> None:
    """Add the figures computed from several measurements (in place)."""
    by_scale = {r["scale"]: r for r in results}
    for r in results:
        mem = [r.get("memory_after_sync_mib", {}), r.get("memory_after_churn_mib", {})]
        r["peak_rss_mib"] = max((m.get("VmHWM", 0.0) for m in mem), default=float("nan"))
        churn = r.get("churn", {})
        samples = [v for _, v in churn.get("rss_samples_mib", [])]
        if len(samples) >= 4:
            q = len(samples) // 4
            # Floors, not means: a scrape's buffers come and go; a leak raises the floor.
            growth = min(samples[-q:]) - min(samples[q : 2 * q])
            r["rss_growth_mib"] = growth
            base = r.get("memory_after_sync_mib", {}).get("VmRSS", 0.0)
            r["rss_flat"] = growth <= max(0.05 * base, 10.0)
        r["scrape_gzip_p99_s"] = churn.get("scrape_gzip_p99_s", float("nan"))
        stalls = [r.get("quiet", {}).get("stall_during_scrape_s"), churn.get("stall_during_scrape_s")]
        r["stall_s"] = max((s for s in stalls if s is not None and not math.isnan(s)), default=float("nan"))
        base = r.get("baseline", {}).get("generate_latest_seconds")
        quiet = r.get("quiet", {}).get("scrape_raw_p50_s")
        r["speedup"] = base / quiet if base and quiet else float("nan")
        r["events_per_second"] = r.get("burst", {}).get("events_per_second", float("nan"))
        r["event_to_scrape_p99_s"] = churn.get("event_to_scrape_p99_s", float("nan"))
        ksm = r.get("ksm", {})
        if ksm.get("exporter_cpu_us_per_event") and ksm.get("ksm_cpu_us_per_event"):
            r["vs_ksm"] = ksm["exporter_cpu_us_per_event"] / ksm["ksm_cpu_us_per_event"]
    small, large = by_scale.get(min(by_scale)), by_scale.get(max(by_scale))
    if small is not None and large is not None and small is not large:
        a = small.get("paced", {}).get("cpu_us_per_event")
        b = large.get("paced", {}).get("cpu_us_per_event")
        if a and b:
            large["per_event_ratio"] = b / a
        for name, key in (("exporter", "vs_ksm_scale_ratio"), ("ksm", "ksm_scale_ratio")):
            a = small.get("ksm", {}).get(f"{name}_cpu_us_per_event")
            b = large.get("ksm", {}).get(f"{name}_cpu_us_per_event")
            if a and b:
                large[key] = b / a


def verdicts(result: Result) -> dict[str, bool]:
    """Budget key → met, for the figures present (only meaningful at 100 %)."""
    out: dict[str, bool] = {}
    for key, budget in BUDGETS.items():
        value = result.get(key)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        out[key] = bool(result.get("rss_flat", True)) if key == "rss_growth_mib" else budget.check(value)
    return out


def _pair_mib(r: Result) -> str | None:
    mem = [r.get("memory_after_sync_mib", {}), r.get("memory_after_churn_mib", {})]
    if "exporter_VmRSS" not in mem[0]:
        return None
    peak = max(m.get("exporter_VmHWM", 0.0) for m in mem)
    return f"{mem[0]['exporter_VmRSS']:.0f} / {peak:.0f} MiB"


def _stolen(r: Result) -> str | None:
    shares = [r.get(phase, {}).get("cpu_stolen_share") for phase in ("burst", "churn")]
    if all(share is None for share in shares):
        return None
    return " / ".join("-" if share is None else f"{share:.1%}" for share in shares)


def _reference(r: Result) -> str | None:
    seconds = r.get("reference_cpu_seconds")
    return " / ".join(f"{s:.3f} s" for s in seconds) if seconds else None


ROWS: list[tuple[str, Callable[[Result], Any], str]] = [
    ("machine reference: CPU of a fixed Python workload, before / after", _reference, "{}"),
    ("objects in the API", lambda r: r.get("objects_in_api"), "{:,}"),
    ("objects served", lambda r: r.get("objects_served"), "{:,}"),
    ("series served", lambda r: r.get("series"), "{:,}"),
    ("bytes per scrape, raw", lambda r: _mb(r.get("bytes_raw")), "{:.1f} MB"),
    ("bytes per scrape, gzip", lambda r: _mb(r.get("bytes_gzip")), "{:.2f} MB"),
    ("time to /readyz 200", lambda r: r.get("ready_seconds"), "{:.1f} s"),
    ("time to complete /metrics", lambda r: r.get("complete_metrics_seconds"), "{:.1f} s"),
    ("RSS after sync", lambda r: r.get("memory_after_sync_mib", {}).get("VmRSS"), "{:.0f} MiB"),
    ("RSS after churn", lambda r: r.get("memory_after_churn_mib", {}).get("VmRSS"), "{:.0f} MiB"),
    ("peak RSS (VmHWM)", lambda r: r.get("peak_rss_mib"), "{:.0f} MiB"),
    ("  (exporter process alone: after sync / peak)", _pair_mib, "{}"),
    ("RSS growth, 2nd vs 4th quarter of churn", lambda r: r.get("rss_growth_mib"), "{:+.1f} MiB"),
    ("/metrics p50 raw, quiet", lambda r: r.get("quiet", {}).get("scrape_raw_p50_s"), "{:.3f} s"),
    ("/metrics p50 gzip, quiet", lambda r: r.get("quiet", {}).get("scrape_gzip_p50_s"), "{:.3f} s"),
    ("/metrics p50 raw, events flowing", lambda r: r.get("churn", {}).get("scrape_raw_p50_s"), "{:.3f} s"),
    ("/metrics p99 raw, events flowing", lambda r: r.get("churn", {}).get("scrape_raw_p99_s"), "{:.3f} s"),
    ("/metrics p50 gzip, events flowing", lambda r: r.get("churn", {}).get("scrape_gzip_p50_s"), "{:.3f} s"),
    ("/metrics p99 gzip, events flowing", lambda r: r.get("scrape_gzip_p99_s"), "{:.3f} s"),
    ("longest /healthz stall during a scrape", lambda r: _ms(r.get("stall_s")), "{:.0f} ms"),
    (
        "prometheus_client generate_latest",
        lambda r: r.get("baseline", {}).get("generate_latest_seconds"),
        "{:.2f} s",
    ),
    ("scrape speed-up vs prometheus_client", lambda r: r.get("speedup"), "{:.0f}x"),
    ("burst: events processed per second", lambda r: r.get("events_per_second"), "{:,.0f}"),
    ("burst: exporter CPU per event", lambda r: r.get("burst", {}).get("cpu_us_per_event"), "{:.0f} us"),
    ("  (the compression worker's CPU in the burst)",
     lambda r: r.get("burst", {}).get("worker_cpu_seconds"), "{:.2f} s"),
    ("  (the event loop's CPU in the burst)",
     lambda r: r.get("burst", {}).get("loop_cpu_seconds"), "{:.2f} s"),
    ("  (API server's time to make the changes)", lambda r: r.get("burst", {}).get("api_emit_seconds"),
     "{:.2f} s"),
    ("  (API server's CPU while it streams them)",
     lambda r: r.get("burst", {}).get("api_stream_cpu_seconds"), "{:.2f} s"),
    ("  (CPU stolen by the host, burst / churn)", _stolen, "{}"),
    ("  (evaluation passes / group evaluations)", lambda r: _pair(r.get("burst", {}), "passes",
                                                                  "group_evaluations", "{:,.0f}"), "{}"),
    ("paced: exporter CPU per event", lambda r: r.get("paced", {}).get("cpu_us_per_event"), "{:.0f} us"),
    ("paced beside kube-state-metrics: exporter CPU per event", lambda r: _spread(r, "exporter"), "{}"),
    ("paced beside kube-state-metrics: its CPU per event", lambda r: _spread(r, "ksm"), "{}"),
    ("  (changes per second, streams)", lambda r: f"{r['ksm']['rate']:.0f}/s, {len(r['ksm']['rounds'])}"
     if "rounds" in r.get("ksm", {}) else None, "{}"),
    ("per-event CPU, exporter / kube-state-metrics", lambda r: r.get("vs_ksm"), "{:.2f}"),
    ("churn rate achieved", lambda r: r.get("churn", {}).get("achieved_rate"), "{:.0f} ev/s"),
    ("event-to-scrape p50", lambda r: r.get("churn", {}).get("event_to_scrape_p50_s"), "{:.3f} s"),
    ("event-to-scrape p99", lambda r: r.get("event_to_scrape_p99_s"), "{:.3f} s"),
    ("  (poll interval p50 / p99)", lambda r: _pair(
        r.get("churn", {}), "family_poll_interval_p50_s", "family_poll_interval_p99_s"), "{}"),
    ("  (a poll's time to its headers p50 / p99)", lambda r: _pair(
        r.get("churn", {}), "family_poll_headers_p50_s", "family_poll_headers_p99_s"), "{}"),
    ("  (lower bound p50 / p99)", lambda r: _pair(r.get("churn", {}), "event_to_scrape_lower_p50_s",
                                                  "event_to_scrape_lower_p99_s"), "{}"),
    ("  (changes never seen)", lambda r: r.get("churn", {}).get("never_seen"), "{:,}"),
    ("  (missing from the full body after the churn)", lambda r: r.get("churn", {}).get("full_body_missing"),
     "{:,}"),
    ("per-event CPU ratio, largest / smallest scale", lambda r: r.get("per_event_ratio"), "{:.2f}"),
    ("  beside kube-state-metrics: exporter", lambda r: r.get("vs_ksm_scale_ratio"), "{:.2f}"),
    ("  beside kube-state-metrics: kube-state-metrics", lambda r: r.get("ksm_scale_ratio"), "{:.2f}"),
]
_BUDGET_OF_ROW = {
    "time to /readyz 200": "ready_seconds",
    "peak RSS (VmHWM)": "peak_rss_mib",
    "RSS growth, 2nd vs 4th quarter of churn": "rss_growth_mib",
    "/metrics p99 gzip, events flowing": "scrape_gzip_p99_s",
    "longest /healthz stall during a scrape": "stall_s",
    "scrape speed-up vs prometheus_client": "speedup",
    "burst: events processed per second": "events_per_second",
    "event-to-scrape p99": "event_to_scrape_p99_s",
    "per-event CPU ratio, largest / smallest scale": "per_event_ratio",
    "per-event CPU, exporter / kube-state-metrics": "vs_ksm",
    "  beside kube-state-metrics: exporter": "vs_ksm_scale_ratio",
}


def table(results: list[Result]) -> str:
    results = sorted(results, key=lambda r: r["scale"])
    target = next((r for r in results if r["scale"] == 100), None)
    verdict = verdicts(target) if target is not None else {}
    header = ["figure", *[f"{r['scale']} % ({r['mode']})" for r in results], "budget at 100 %", ""]
    rows = [header]
    for label, get, fmt in ROWS:
        cells = [_fmt(get(r), fmt) for r in results]
        if all(c == "-" for c in cells):
            continue
        key = _BUDGET_OF_ROW.get(label)
        limit = BUDGETS[key].limit if key else ""
        mark = ("ok" if verdict[key] else "MISS") if key and key in verdict else ""
        rows.append([label, *cells, limit, mark])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def _fmt(value: Any, fmt: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return fmt.format(value)


def _mb(v: Any) -> float | None:
    return v / 1e6 if isinstance(v, int | float) else None


def _ms(v: Any) -> float | None:
    return v * 1000 if isinstance(v, int | float) and not math.isnan(v) else None


def _spread(r: Result, name: str) -> str | None:
    """The median of the --ksm streams, with their range."""
    ksm = r.get("ksm", {})
    if f"{name}_cpu_us_per_event" not in ksm:
        return None
    low, high = ksm[f"{name}_cpu_us_per_event_range"]
    return f"{ksm[f'{name}_cpu_us_per_event']:.0f} us ({low:.0f}-{high:.0f})"


def _pair(record: dict[str, Any], low: str, high: str, fmt: str = "{:.3f} s") -> str | None:
    if low not in record or high not in record:
        return None
    return f"{fmt.format(record[low])} / {fmt.format(record[high])}"


def size_table(results: list[Result]) -> str:
    """``--size-only``: per scale, series and objects overall and per kind, bytes, quiet scrape times."""
    lines: list[str] = []
    for r in results:
        objects = r.get("objects_served") or 0
        series = r.get("series") or 0
        quiet = r.get("quiet", {})
        providers = "on" if r.get("provider_objects", True) else "off"
        lines += [
            f"scale {r.get('scale', '?')} % (provider objects {providers}): "
            f"{objects:,} objects, {series:,} series "
            f"({series / objects if objects else float('nan'):.1f} per object), "
            f"{_mb(r.get('bytes_raw')) or 0:.2f} MB raw, {_mb(r.get('bytes_gzip')) or 0:.2f} MB gzip, "
            f"ready in {r.get('ready_seconds', float('nan')):.1f} s",
            f"  quiet /metrics p50 raw {quiet.get('scrape_raw_p50_s', float('nan')):.3f} s, "
            f"gzip {quiet.get('scrape_gzip_p50_s', float('nan')):.3f} s; "
            f"RSS after sync {r.get('memory_after_sync_mib', {}).get('VmRSS', float('nan')):.0f} MiB",
            "  | kind | objects | series | per object |",
            "  |---|---:|---:|---:|",
        ]
        for kind, v in r.get("series_by_kind", {}).items():
            per = v["series"] / v["objects"] if v["objects"] else float("nan")
            lines.append(f"  | {kind} | {v['objects']:,} | {v['series']:,} | {per:.1f} |")
    return "\n".join(lines)
