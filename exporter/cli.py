"""Command line: ``serve`` (the default) and ``evaluate``, flags parsed into a frozen Config.

Owns the flag names (Prometheus-style, see README), ``--help`` text and exit codes: 0 on success,
2 when a flag or a file given on the command line is wrong (the message says what to fix), 1 on
a runtime failure. Owns no wiring: ``serve`` hands the Config to ``exporter.app``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from exporter.config import DEFAULT_LISTEN, OUTPUTS, Config, ConfigError, build
from exporter.logging_setup import FORMATS, LEVELS

if TYPE_CHECKING:
    from exporter.engine.model import Base

COMMANDS = ("serve", "evaluate")


def _common(p: argparse.ArgumentParser) -> None:
    # Checked by config.build, which knows the aliases (warning, text) and names the flag.
    p.add_argument("--log.level", dest="log_level", default="info", metavar="|".join(LEVELS),
                   help="only log at this level or above (default info; warning = warn)")
    p.add_argument("--log.format", dest="log_format", default="logfmt", metavar="|".join(FORMATS),
                   help="logfmt (ts=... level=... caller=... msg=... key=value) or json, one record "
                        "per line on stderr (default logfmt; text, deprecated, = logfmt)")


class _Version(argparse.Action):
    """``--version``: the build, as Prometheus' version.Print shows it (git is read only here)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and build and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from exporter.buildinfo import current

        sys.stdout.write(current().text())
        parser.exit()


def _conventions(serve: argparse.ArgumentParser) -> None:
    """The node_exporter-style web flags."""
    serve.add_argument("--web.telemetry-path", dest="telemetry_path", default="/metrics", metavar="PATH",
                       help="path under which to serve the metrics (default /metrics)")
    serve.add_argument("--web.disable-exporter-metrics", dest="disable_exporter_metrics",
                       action="store_true",
                       help="leave out the metrics about the exporter's processes (process_*, "
                            "python_info); the fleet_status_exporter_* self-metrics the shipped "
                            "alerts read are always served")


def _metric_selection(p: argparse.ArgumentParser) -> None:
    p.add_argument("--metric-allowlist", dest="metric_allowlist", default="", metavar="REGEX,...",
                   help="serve only the families whose whole name matches one of these regular "
                        "expressions (self-metrics are always served; see docs/metrics.md for a lean one)")
    p.add_argument("--metric-denylist", dest="metric_denylist", default="", metavar="REGEX,...",
                   help="serve every family but those whose whole name matches one of these "
                        "(excludes --metric-allowlist)")
    p.add_argument("--metric-labels-allowlist", dest="metric_labels_allowlist", default="",
                   metavar="RESOURCE=[KEY,...],...",
                   help="object labels to serve as <prefix>_<kind>_labels{label_<key>}, e.g. "
                        "clusters=[env,team],machinedeployments=[*] (default none)")
    p.add_argument("--metric-annotations-allowlist", dest="metric_annotations_allowlist", default="",
                   metavar="RESOURCE=[KEY,...],...",
                   help="object annotations to serve as <prefix>_<kind>_annotations{annotation_<key>} "
                        "(default none)")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="fleet-status-exporter",
        description="Cluster API and Open Cluster Management status as Prometheus metrics.",
    )
    root.add_argument("--version", action=_Version)
    sub = root.add_subparsers(dest="command", metavar="{serve,evaluate}")

    serve = sub.add_parser("serve", help="watch objects and serve /metrics (the default command)")
    serve.add_argument("--kubeconfig", metavar="PATH",
                       help="kubeconfig file (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)")
    serve.add_argument("--from-files", metavar="PATH",
                       help="read manifests from a file or directory instead of the Kubernetes API")
    serve.add_argument("--web.listen-address", dest="listen_address", default=DEFAULT_LISTEN,
                       metavar="HOST:PORT", help=f"address to serve on (default {DEFAULT_LISTEN})")
    serve.add_argument("--web.config.file", dest="web_config_file", metavar="PATH",
                       help="exporter-toolkit web configuration: TLS and basic auth")
    serve.add_argument("--web.probe-address", dest="probe_address", metavar="HOST:PORT",
                       help="also serve /healthz and /readyz, only them, over plain HTTP here "
                            "(for kubelet probes when client certificates are required)")
    serve.add_argument("--namespace", dest="namespaces", action="append", default=[], metavar="NS",
                       help="watch only this namespace (repeatable; default all)")
    serve.add_argument("--exclude-resource", dest="exclude_resources", action="append", default=[],
                       metavar="KIND", help="do not watch this kind (repeatable)")
    serve.add_argument("--shard", default="0", metavar="N|auto",
                       help="this process's shard, 0-based; auto reads the ordinal from $POD_NAME")
    serve.add_argument("--total-shards", type=int, default=1, metavar="M",
                       help="number of shards (default 1)")
    serve.add_argument("--files.poll-interval", dest="files_poll_interval", type=float, default=2.0,
                       metavar="SECONDS", help="how often --from-files checks for changes (default 2)")
    _conventions(serve)
    _metric_selection(serve)
    _common(serve)

    evaluate = sub.add_parser("evaluate", help="evaluate manifests once and print the result")
    evaluate.add_argument("--from-files", metavar="PATH", required=True,
                          help="a manifest file or a directory of them")
    evaluate.add_argument("--now", metavar="RFC3339", help="evaluate as of this time (default: now)")
    evaluate.add_argument("--output", default="table", choices=OUTPUTS)
    _common(evaluate)
    return root


def parse(argv: Sequence[str]) -> Config:
    args = list(argv)
    if not args or (args[0] not in COMMANDS and args[0] not in ("-h", "--help", "--version")):
        args.insert(0, "serve")  # serve is the default command
    ns = parser().parse_args(args)
    values = vars(ns)
    return build(**{k: v for k, v in values.items() if v is not None or k in ("command",)})


def main(argv: Sequence[str] | None = None) -> int:
    try:
        config = parse(sys.argv[1:] if argv is None else argv)
    except ConfigError as exc:
        print(f"fleet-status-exporter: error: {exc}", file=sys.stderr)
        return 2
    if config.command == "evaluate":
        from exporter.logging_setup import setup as setup_logging

        setup_logging(config.log_level, config.log_format)
        for message in config.deprecations:
            logging.getLogger("exporter.cli").warning(message)
        return evaluate(config)
    from exporter.app import serve  # imported late: evaluate needs no server

    return serve(config)


def evaluate(config: Config) -> int:
    """Read, evaluate and print; a file, a group or an object that fails is named on stderr and
    left out (exit 1), the rest is printed."""
    from exporter.cli_output import printable, render_evaluation
    from exporter.engine.evaluate import evaluate_group
    from exporter.engine.grouping import group_projections
    from exporter.engine.model import Result
    from exporter.sources.files import load

    assert config.from_files is not None  # build() guarantees it for evaluate
    loaded = load(config.from_files)
    for error in loaded.errors:
        print(f"fleet-status-exporter: cannot read {printable(error)}", file=sys.stderr)
    now = config.now if config.now is not None else time.time()
    failures: list[str] = []
    results: list[Result] = []
    for group in group_projections(loaded.projections):  # evaluate_all, one group at a time
        try:
            results.extend(evaluate_group(group, {}, now))
        except Exception as exc:
            failures.append(f"cannot evaluate the group of {printable(_group_name(group))}: "
                            f"{type(exc).__name__}: {printable(str(exc))[:200]}")
    results.sort(key=lambda r: (r.namespace, r.cluster_name, r.kind, r.name))
    text = render_evaluation(results, loaded.projections, config.output, failures)
    for failure in failures:
        print(f"fleet-status-exporter: {failure}", file=sys.stderr)
    sys.stdout.write(text.rstrip("\n") + "\n")
    return 1 if loaded.errors or failures else 0


def _group_name(group: object) -> str:
    """The object a group is named after (its Cluster, its MWRS, its only object)."""
    from exporter.engine.evaluate_types import CapiGroup, MwrsGroup, SingleGroup

    objects: list[Base] = []
    if isinstance(group, CapiGroup):
        objects = sorted(group.objects, key=lambda o: o.meta.kind != "Cluster")
    elif isinstance(group, MwrsGroup):
        objects = [group.mwrs] if group.mwrs is not None else list(group.manifest_works)
    elif isinstance(group, SingleGroup):
        objects = [group.obj]
    if not objects:
        return "(empty group)"
    o = objects[0]
    return f"{o.meta.kind} {o.meta.namespace}/{o.meta.name}"[:300]
