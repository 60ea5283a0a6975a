"""The frozen run configuration and its validation.

Owns ``Config`` (what the command line asked for, checked and normalised: listen address split,
shard ordinal resolved, kinds canonicalised) and ``ConfigError``, whose message says what to fix;
the CLI exits with status 2 on it. Owns no flag parsing (``cli``) and no wiring (``app``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from exporter.logging_setup import (
    FORMAT_ALIASES,
    FORMATS,
    LEVEL_ALIASES,
    LEVELS,
    canonical_format,
    canonical_level,
)
from exporter.sharding import ordinal_from_pod_name
from exporter.sources.discovery import PROVIDER_ROLES, WATCHED

DEFAULT_LISTEN: Final = ":9842"
OUTPUTS: Final = ("json", "table")
# Kinds --exclude-resource accepts: every watched kind, and the provider contract roles, each
# covering every provider kind referenced in that role (InfraMachine: AWSMachine, DockerMachine,
# ...); plural resource names are accepted too (machines, mwrs, ...).
KINDS: Final = (*(spec.kind for spec in WATCHED), *PROVIDER_ROLES)
_ALIASES: Final = {
    "mwrs": "ManifestWorkReplicaSet", "kcp": "KubeadmControlPlane", "mhc": "MachineHealthCheck",
}


class ConfigError(ValueError):
    """A flag or file the user must fix; the message names it and says what is expected."""


@dataclass(frozen=True, slots=True)
class Config:
    command: str = "serve"
    kubeconfig: Path | None = None
    from_files: Path | None = None
    listen_host: str = ""
    listen_port: int = 9842
    web_config_file: Path | None = None
    # --web.probe-address: a plain-HTTP listener serving only /healthz and /readyz (None: none).
    probe_host: str = ""
    probe_port: int | None = None
    namespaces: tuple[str, ...] = ()
    exclude_resources: tuple[str, ...] = ()
    shard: int = 0
    total_shards: int = 1
    log_level: str = "info"
    log_format: str = "logfmt"
    files_poll_interval: float = 2.0
    now: float | None = None
    output: str = "table"
    # Prometheus exporter conventions: where the metrics are served, whether the process_* and
    # python_info families are, and the deprecated spellings used (logged once logging is set up).
    telemetry_path: str = "/metrics"
    disable_exporter_metrics: bool = False
    deprecations: tuple[str, ...] = ()
    # Metric selection (exporter.metrics.selection): family expressions, and (kind, keys) pairs.
    metric_allowlist: tuple[str, ...] = ()
    metric_denylist: tuple[str, ...] = ()
    metric_labels_allowlist: tuple[tuple[str, tuple[str, ...]], ...] = ()
    metric_annotations_allowlist: tuple[tuple[str, tuple[str, ...]], ...] = ()


def parse_listen_address(value: str, flag: str = "--web.listen-address") -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"{flag} {value!r}: expected HOST:PORT or :PORT, e.g. :9842")
    return host.strip("[]"), int(port)


def canonical_kind(value: str) -> str:
    wanted = value.strip().lower()
    if wanted in _ALIASES:
        return _ALIASES[wanted]
    for kind in KINDS:
        if wanted in (kind.lower(), kind.lower() + "s", kind.lower() + "es"):
            return kind
    raise ConfigError(f"--exclude-resource {value!r}: unknown kind; expected one of {', '.join(KINDS)}")


def resolve_shard(shard: str, total: int, env: Mapping[str, str]) -> int:
    if total < 1:
        raise ConfigError(f"--total-shards {total}: must be at least 1")
    if shard == "auto":
        pod = env.get("POD_NAME", "")
        ordinal = ordinal_from_pod_name(pod)
        if ordinal is None:
            raise ConfigError(
                f"--shard auto: POD_NAME {pod!r} has no -<ordinal> suffix; set POD_NAME from the "
                "StatefulSet pod name (fieldRef metadata.name) or pass --shard N"
            )
        index = ordinal
    elif shard.isdigit():
        index = int(shard)
    else:
        raise ConfigError(f"--shard {shard!r}: expected a number or 'auto'")
    if index >= total:
        raise ConfigError(f"--shard {index}: must be below --total-shards {total} (shards count from 0)")
    return index


def parse_now(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"--now {value!r}: expected an RFC3339 time such as 2026-11-20T12:00:00Z") from None
    if parsed.tzinfo is None:
        raise ConfigError(f"--now {value!r}: the time needs a zone, e.g. a trailing Z")
    return parsed.timestamp()


def build(
    *,
    command: str,
    kubeconfig: str | None = None,
    from_files: str | None = None,
    listen_address: str = DEFAULT_LISTEN,
    web_config_file: str | None = None,
    probe_address: str | None = None,
    namespaces: Sequence[str] = (),
    exclude_resources: Sequence[str] = (),
    shard: str = "0",
    total_shards: int = 1,
    log_level: str = "info",
    log_format: str = "logfmt",
    files_poll_interval: float = 2.0,
    now: str | None = None,
    output: str = "table",
    telemetry_path: str = "/metrics",
    disable_exporter_metrics: bool = False,
    metric_allowlist: str = "",
    metric_denylist: str = "",
    metric_labels_allowlist: str = "",
    metric_annotations_allowlist: str = "",
    env: Mapping[str, str] | None = None,
) -> Config:
    """Check every value and return the frozen Config, or raise ConfigError naming the flag."""
    host, port = parse_listen_address(listen_address)
    probe_host, probe_port = parse_listen_address(probe_address, "--web.probe-address") if probe_address \
        else ("", None)
    level, fmt, deprecations = _logging_flags(log_level, log_format)
    path = check_telemetry_path(telemetry_path)
    if output not in OUTPUTS:
        raise ConfigError(f"--output {output!r}: expected one of {', '.join(OUTPUTS)}")
    if not files_poll_interval > 0:
        raise ConfigError(f"--files.poll-interval {files_poll_interval}: must be positive (seconds)")
    files = _existing(from_files, "--from-files", "a manifest file or a directory of them")
    if command == "evaluate" and files is None:
        raise ConfigError("evaluate needs --from-files PATH (a manifest file or a directory of them)")
    if files is not None and kubeconfig is not None:
        raise ConfigError("--kubeconfig and --from-files exclude each other: read a cluster or files")
    for ns in namespaces:
        if not ns or ns != ns.strip():
            raise ConfigError(f"--namespace {ns!r}: expected a namespace name")
    selection = _metric_selection(metric_allowlist, metric_denylist, metric_labels_allowlist,
                                  metric_annotations_allowlist)
    return Config(
        command=command,
        kubeconfig=_existing(kubeconfig, "--kubeconfig", "a kubeconfig file"),
        from_files=files,
        listen_host=host,
        listen_port=port,
        web_config_file=_existing(web_config_file, "--web.config.file", "a web configuration YAML file"),
        probe_host=probe_host,
        probe_port=probe_port,
        namespaces=tuple(dict.fromkeys(namespaces)),
        exclude_resources=tuple(dict.fromkeys(canonical_kind(k) for k in exclude_resources)),
        shard=resolve_shard(shard, total_shards, os.environ if env is None else env),
        total_shards=total_shards,
        log_level=level,
        log_format=fmt,
        files_poll_interval=files_poll_interval,
        now=parse_now(now),
        output=output,
        telemetry_path=path,
        disable_exporter_metrics=disable_exporter_metrics,
        deprecations=deprecations,
        **selection,
    )


# --- Prometheus exporter conventions: logging flags and the telemetry path ---

# Paths the server answers itself; the metrics cannot be served there too.
RESERVED_PATHS: Final = ("/", "/healthz", "/readyz")
# RFC 3986 path characters but "%" (a percent-encoded path would be matched decoded) and the
# braces aiohttp reads as a route variable.
_PATH_SEGMENT: Final = re.compile(r"[A-Za-z0-9._~!$&'()*+,;=:@-]+")


def _logging_flags(level: str, fmt: str) -> tuple[str, str, tuple[str, ...]]:
    """The canonical level and format, and the deprecation warnings their spelling calls for."""
    canonical = canonical_level(level)
    if canonical is None:
        spellings = ", ".join([*LEVELS, *(f"{a} (= {c})" for a, c in LEVEL_ALIASES.items())])
        raise ConfigError(f"--log.level {level!r}: expected one of {spellings}")
    fmt_canonical = canonical_format(fmt)
    if fmt_canonical is None:
        spellings = ", ".join([*FORMATS, *(f"{a} (deprecated, = {c})" for a, c in FORMAT_ALIASES.items())])
        raise ConfigError(f"--log.format {fmt!r}: expected one of {spellings}")
    deprecations: tuple[str, ...] = ()
    if fmt in FORMAT_ALIASES:
        deprecations = (f"--log.format {fmt} is deprecated and reads as {fmt_canonical}; "
                        f"pass --log.format {fmt_canonical}",)
    return canonical, fmt_canonical, deprecations


def check_telemetry_path(value: str) -> str:
    """``--web.telemetry-path`` checked: an absolute path of plain segments, not one of the
    server's own paths."""
    flag = f"--web.telemetry-path {value!r}"
    if not value.startswith("/"):
        raise ConfigError(f"{flag}: must start with /, e.g. /metrics")
    if value.rstrip("/") in ("", *RESERVED_PATHS):
        raise ConfigError(f"{flag}: {', '.join(RESERVED_PATHS)} are served already (landing page and "
                          "probes); choose another path, e.g. /metrics")
    segments = value[1:].removesuffix("/").split("/")
    if any(s in (".", "..") or not _PATH_SEGMENT.fullmatch(s) for s in segments):
        raise ConfigError(f"{flag}: expected a path of letters, digits and -._~!$&'()*+,;=:@ "
                          "between single slashes, without percent-encoding, e.g. /metrics")
    return value


def _existing(value: str | None, flag: str, what: str) -> Path | None:
    if value is None:
        return None
    path = Path(value).expanduser()
    if not path.exists():
        raise ConfigError(f"{flag} {value}: no such file or directory (expected {what})")
    return path


# ---- metric selection ---------------------------------------------------------------------------


def _metric_selection(allow: str, deny: str, labels: str, annotations: str) -> dict[str, Any]:
    """The four selection flags checked (``exporter.metrics.selection``), as Config fields."""
    from exporter.metrics.selection import Selection, parse_key_allowlist, parse_patterns

    try:
        selection = Selection(
            parse_patterns("--metric-allowlist", allow),
            parse_patterns("--metric-denylist", deny),
            parse_key_allowlist("--metric-labels-allowlist", labels),
            parse_key_allowlist("--metric-annotations-allowlist", annotations),
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return {"metric_allowlist": selection.allow, "metric_denylist": selection.deny,
            "metric_labels_allowlist": selection.labels,
            "metric_annotations_allowlist": selection.annotations}
