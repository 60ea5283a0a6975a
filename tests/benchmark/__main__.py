"""Command line of the benchmark: ``python -m tests.benchmark --scale 100 [--quick] [--json out.json]``.

Runs the comparison scale first (10 % by default: ready, size and the burst, for the per-event
cost), then every requested scale in full, the prometheus_client baseline on each scale's
exposition, and prints the table of ``report.py``; with ``--ksm``, kube-state-metrics' CPU per event
beside the exporter's at each scale. Owns only argument handling and sequencing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from exporter import implementation
from tests.benchmark import report
from tests.benchmark.harness import Options, Run
from tests.realcluster import build


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tests.benchmark", description=__doc__.splitlines()[0])
    p.add_argument(
        "--scale",
        action="append",
        default=[],
        metavar="PERCENT",
        help="share of the target fleet, 1-100 (repeatable or comma-separated; default 100)",
    )
    p.add_argument(
        "--quick", action="store_true", help="1 minute of churn, fewer scrapes and a smaller burst"
    )
    p.add_argument("--churn-minutes", type=float, default=None, help="default 10, or 1 with --quick")
    p.add_argument("--rate", type=float, default=500.0, help="changes per second during churn")
    p.add_argument("--burst", type=int, default=None, help="changes in the throughput burst")
    p.add_argument(
        "--compare-scale", type=int, default=10, help="also measure the per-event cost at this scale (0: no)"
    )
    p.add_argument("--no-baseline", action="store_true", help="skip the prometheus_client baseline")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--exporter-cmd",
        default="",
        help=f"command starting the exporter's serve (default: {sys.executable} -m exporter serve)",
    )
    p.add_argument(
        "--exporter-args",
        default="",
        metavar="FLAGS",
        help="extra flags for the exporter's serve, given with =: "
        "--exporter-args=\"--metric-allowlist=capi_.*\"",
    )
    p.add_argument(
        "--size-only",
        action="store_true",
        help="only time to ready, series (per kind), bytes and quiet scrape times (no churn, no burst)",
    )
    p.add_argument(
        "--no-provider-objects",
        action="store_true",
        help="run the exporter with the provider objects (DockerCluster, DockerMachine, KubeadmConfig) "
        "excluded; the API server serves the same fleet",
    )
    p.add_argument("--json", default="", metavar="PATH", help="also write every figure as JSON")
    p.add_argument(
        "--profile",
        action="store_true",
        help="record py-spy profiles of the exporter during the burst and the churn",
    )
    p.add_argument(
        "--ksm",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also run kube-state-metrics (make ksm-tool) with Cluster API's configuration on the same API "
        "server and measure the CPU per event of both over the same paced streams",
    )
    p.add_argument("--ksm-rate", type=float, default=300.0, help="changes per second of the --ksm streams")
    p.add_argument("--ksm-rounds", type=int, default=3, help="paced streams of the --ksm comparison")
    p.add_argument(
        "--cpu-only",
        action="store_true",
        help="only time to ready, size and the CPU per event (the paced stream, and --ksm's): no scrapes, "
        "burst or churn",
    )
    p.add_argument("--keep", action="store_true", help="keep the work directory (logs, expositions)")
    return p.parse_args(argv)


def options(args: argparse.Namespace) -> Options:
    o = Options(quick=args.quick, rate=args.rate, seed=args.seed, profile=args.profile,
                provider_objects=not args.no_provider_objects, ksm=args.ksm, ksm_rate=args.ksm_rate,
                ksm_rounds=args.ksm_rounds, cpu_only=args.cpu_only)
    if args.quick:
        o = replace(o, churn_minutes=1.0, burst=5000, scrapes=10, window=30.0, slow_interval=10.0)
    if args.churn_minutes is not None:
        o = replace(o, churn_minutes=args.churn_minutes, window=min(o.window, args.churn_minutes * 60))
    if args.burst is not None:
        o = replace(o, burst=args.burst)
    if args.exporter_cmd:
        o = replace(o, exporter_cmd=tuple(args.exporter_cmd.split()))
    if args.exporter_args:
        o = replace(o, exporter_cmd=(*o.exporter_cmd, *shlex.split(args.exporter_args)))
    if args.size_only:
        o = replace(o, size_only=True, scrapes=min(o.scrapes, 5))
    return o


def baseline(metrics_file: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "tests.benchmark.baseline", str(metrics_file)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.ksm:
        try:  # before anything runs: without it there is no comparison to make
            build.binary("kube-state-metrics")
            build.ksm_config()
        except build.Missing as e:
            print(f"--ksm: {e}", file=sys.stderr)
            return 2
    scales = sorted({int(s) for arg in args.scale or ["100"] for s in str(arg).split(",") if s})
    base = options(args)
    plan = [(s, True) for s in scales]
    if args.compare_scale and args.compare_scale not in scales and not args.size_only:
        plan.insert(0, (args.compare_scale, False))
    results: list[dict[str, Any]] = []
    # The exporter runs from this checkout with this environment: the same build as here.
    built = implementation() if not args.exporter_cmd else "as --exporter-cmd runs it"
    print(f"-- exporter build: {built}", flush=True)
    for scale, full in plan:
        phases = "ready, size and CPU per event only" if args.cpu_only else (
            "full phases" if full else "ready, size and burst only")
        print(f"-- scale {scale} % ({phases})", flush=True)
        run = Run(replace(base, scale=scale, full=full))
        result = asyncio.run(run.run())
        if (full and not args.no_baseline and not args.size_only and not args.cpu_only
                and (run.dir / "metrics.txt").exists()):
            result["baseline"] = baseline(run.dir / "metrics.txt")
        result["implementation"] = built
        results.append(result)
        print(f"   done: ready in {result.get('ready_seconds', float('nan')):.1f} s", flush=True)
    if args.size_only:
        print(report.size_table(results))
    else:
        report.derive(results)
        print(report.table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    if args.keep:
        print(f"work directory: {base.workdir}")
    else:
        shutil.rmtree(base.workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
