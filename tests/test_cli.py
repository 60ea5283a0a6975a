"""Command line: flags into a frozen Config, errors that say what to fix (exit 2), sharding,
``evaluate``, and ``serve --from-files`` end to end (live metrics, file edits, SIGTERM)."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from exporter import __version__
from exporter.cli import main, parse
from exporter.config import Config
from exporter.sharding import fnv1a_64, keep_shard, ordinal_from_pod_name, shard_of
from tests.test_logging import read_logfmt

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def test_serve_is_the_default_command_and_flags_fill_the_config(tmp_path):
    config = parse(["--from-files", str(tmp_path), "--web.listen-address", "127.0.0.1:9999",
                    "--namespace", "a", "--namespace", "b",
                    "--exclude-resource", "machines", "--exclude-resource", "MWRS",
                    "--shard", "1", "--total-shards", "3", "--log.level", "debug", "--log.format", "json",
                    "--files.poll-interval", "0.5"])
    assert config == Config(command="serve", from_files=tmp_path, listen_host="127.0.0.1", listen_port=9999,
                            namespaces=("a", "b"), exclude_resources=("Machine", "ManifestWorkReplicaSet"),
                            shard=1, total_shards=3, log_level="debug", log_format="json",
                            files_poll_interval=0.5)
    assert parse([]).listen_port == 9842 and parse([]).listen_host == ""
    with pytest.raises(AttributeError):
        config.shard = 2  # type: ignore[misc]



def test_every_watched_kind_can_be_excluded() -> None:
    from exporter.sources.discovery import PROVIDER_ROLES, WATCHED

    for kind in (*(spec.kind for spec in WATCHED), *PROVIDER_ROLES):
        assert parse(["--exclude-resource", kind]).exclude_resources == (kind,)
@pytest.mark.parametrize(("argv", "message"), [
    (["--web.listen-address", "9842"], "--web.listen-address '9842': expected HOST:PORT"),
    (["--shard", "3", "--total-shards", "3"], "--shard 3: must be below --total-shards 3"),
    (["--shard", "auto", "--total-shards", "2"], "POD_NAME"),
    (["--shard", "x"], "--shard 'x': expected a number or 'auto'"),
    (["--total-shards", "0"], "--total-shards 0: must be at least 1"),
    (["--exclude-resource", "Pods"], "--exclude-resource 'Pods': unknown kind"),
    (["--from-files", "/nonexistent/dir"], "--from-files /nonexistent/dir: no such file or directory"),
    (["--files.poll-interval", "0"], "--files.poll-interval 0.0: must be positive"),
    (["evaluate", "--from-files", ".", "--now", "yesterday"], "--now 'yesterday': expected an RFC3339 time"),
    (["--log.format", "xml"], "--log.format 'xml': expected one of logfmt, json"),
    (["--log.level", "verbose"], "--log.level 'verbose': expected one of debug, info, warn, error"),
    (["evaluate", "--from-files", ".", "--log.level", "trace"], "--log.level 'trace'"),
    (["--web.telemetry-path", "metrics"], "--web.telemetry-path 'metrics': must start with /"),
    (["--web.telemetry-path", "/healthz"], "--web.telemetry-path '/healthz': /, /healthz, /readyz are"),
    (["--web.telemetry-path", "/readyz/"], "--web.telemetry-path '/readyz/': /, /healthz, /readyz are"),
    (["--web.telemetry-path", "/"], "--web.telemetry-path '/': /, /healthz, /readyz are served"),
    (["--web.telemetry-path", "/my metrics"], "--web.telemetry-path '/my metrics': expected a path of"),
    (["--web.telemetry-path", "/m/{name}"], "--web.telemetry-path '/m/{name}': expected a path of"),
    (["--web.telemetry-path", "/%6detrics"], "--web.telemetry-path '/%6detrics': expected a path of"),
    (["--web.telemetry-path", "/a/../metrics"], "--web.telemetry-path '/a/../metrics': expected a path of"),
], ids=["listen-address", "shard-range", "shard-auto", "shard-text", "total-shards", "exclude", "from-files",
        "poll-interval", "now", "log-format", "log-level", "evaluate-log-level", "telemetry-relative",
        "telemetry-healthz", "telemetry-readyz", "telemetry-root", "telemetry-space", "telemetry-braces",
        "telemetry-percent", "telemetry-dotdot"])
def test_invalid_flags_exit_2_with_what_to_fix(argv, message, capsys, monkeypatch):
    monkeypatch.delenv("POD_NAME", raising=False)
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["evaluate"], ["--total-shards", "two"]],
                         ids=["evaluate-needs-files", "total-shards-type"])
def test_argparse_errors_exit_2(argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2


def test_log_flag_aliases_read_as_the_prometheus_spellings():
    config = parse(["--log.level", "warning", "--log.format", "text"])
    assert (config.log_level, config.log_format) == ("warn", "logfmt")
    assert config.deprecations == (
        "--log.format text is deprecated and reads as logfmt; pass --log.format logfmt",)
    defaults = parse([])
    assert (defaults.log_level, defaults.log_format, defaults.deprecations) == ("info", "logfmt", ())
    assert parse(["--log.level", "warn"]).deprecations == ()  # warning is an alias, not deprecated


def test_web_flags_fill_the_config():
    config = parse(["--web.telemetry-path", "/fleet/metrics", "--web.disable-exporter-metrics"])
    assert (config.telemetry_path, config.disable_exporter_metrics) == ("/fleet/metrics", True)
    assert (parse([]).telemetry_path, parse([]).disable_exporter_metrics) == ("/metrics", False)
    assert parse(["--web.telemetry-path", "/metrics/"]).telemetry_path == "/metrics/"


def test_help_names_every_flag_and_value_the_readme_lists(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = capsys.readouterr().out
    readme = (ROOT / "README.md").read_text()
    start = readme.index("fleet-status-exporter serve [")
    block = readme[start:readme.index("```", start)]
    flags = set(re.findall(r"--[a-z][a-z.-]+", block))
    assert flags == set(re.findall(r"--[a-z][a-z.-]+", text)) - {"--help"}, "README flag list != --help"
    for values in ("debug|info|warn|error", "logfmt|json"):
        assert values in text and values in block


def test_shard_auto_reads_the_statefulset_ordinal(monkeypatch):
    monkeypatch.setenv("POD_NAME", "fleet-status-exporter-2")
    assert parse(["--shard", "auto", "--total-shards", "3"]).shard == 2
    assert ordinal_from_pod_name("fse") is None


def test_sharding_hash_is_stable_and_spreads_groups():
    assert fnv1a_64(b"") == 0xCBF29CE484222325
    assert fnv1a_64(b"a") == 0xAF63DC4C8601EC8C  # published FNV-1a 64 test vector
    keys = [("capi", f"ns{i % 7}", f"cluster-{i}") for i in range(1000)]
    counts = [sum(1 for k in keys if shard_of(k, 4) == s) for s in range(4)]
    assert all(150 < c < 350 for c in counts), counts
    keeps = [keep_shard(s, 4) for s in range(4)]
    assert all(sum(keep(k) for keep in keeps) == 1 for k in keys), "every group belongs to exactly one shard"
    assert keep_shard(0, 1)(keys[0])


def test_evaluate_prints_json(capsys):
    assert main(["evaluate", "--from-files", str(EXAMPLES), "--now", "2026-11-22T00:00:00Z", "--output",
                 "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    kinds = {o["kind"] for o in doc["objects"]}
    assert {"Cluster", "Machine", "ManifestWorkReplicaSet"} <= kinds


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, ""
    except OSError:
        return 0, ""


def _wait(predicate, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _paused(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith('capi_cluster_spec_paused{name="prod-eu-1"'):
            return line.rsplit(" ", 1)[1]
    return None


def _pause_cluster(path: Path) -> None:
    docs = list(yaml.safe_load_all(path.read_text()))
    for doc in docs:
        if doc and doc.get("kind") == "Cluster":
            doc.setdefault("spec", {})["paused"] = True
    path.write_text(yaml.safe_dump_all(docs))


def test_serve_from_files_shows_live_metrics_that_follow_file_edits(tmp_path):
    fleet = tmp_path / "examples"
    shutil.copytree(EXAMPLES, fleet)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "exporter", "serve", "--from-files", str(fleet), "--web.listen-address",
         f"127.0.0.1:{port}", "--files.poll-interval", "0.2", "--log.format", "json"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        assert _wait(lambda: _get(f"{base}/readyz")[0] == 200), "never became ready"
        status, text = _get(f"{base}/metrics")
        assert status == 200
        assert 'capi_cluster_status_condition{name="prod-eu-1"' in text
        assert 'capi_cluster_info{name="prod-eu-1"' in text
        assert _paused(text) == "0"

        _pause_cluster(fleet / "capi" / "prod-eu-1-healthy.yaml")
        assert _wait(lambda: _paused(_get(f"{base}/metrics")[1]) == "1"), "editing a manifest changed nothing"

        (fleet / "capi" / "prod-eu-1-healthy.yaml").unlink()
        assert _wait(lambda: 'capi_cluster_info{name="prod-eu-1"' not in _get(f"{base}/metrics")[1]), (
            "deleting a manifest did not remove its metrics"
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=10)
        finally:
            proc.kill()
    logs = [json.loads(line) for line in proc.stderr.read().decode().splitlines() if line.startswith("{")]
    messages = [entry["msg"] for entry in logs]
    assert rc == 0
    assert {"starting", "listening", "manifests loaded", "synced", "manifests changed, reloaded",
            "shutting down"} <= set(messages)


def test_serve_rejects_a_bad_web_config_with_exit_2(tmp_path):
    web = tmp_path / "web.yml"
    web.write_text("basic_auth_users:\n  admin: not-a-hash\n")
    proc = subprocess.run(
        [sys.executable, "-m", "exporter", "--from-files", str(tmp_path), "--web.config.file", str(web),
         "--web.listen-address", f"127.0.0.1:{_free_port()}"],
        cwd=ROOT, capture_output=True, timeout=30,
    )
    assert proc.returncode == 2
    assert b"expected a bcrypt hash" in proc.stderr


def _serve(args: list[str], port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "exporter", "serve", "--from-files", str(EXAMPLES), "--web.listen-address",
         f"127.0.0.1:{port}", *args],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )


def _stop(proc: subprocess.Popen[bytes]) -> tuple[int, list[str]]:
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=10)
    finally:
        proc.kill()
    assert proc.stderr is not None
    return rc, proc.stderr.read().decode().splitlines()


def _git_head() -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def test_serve_conventions_from_outside(tmp_path):
    """Telemetry path, landing page, process metrics of both processes, build info, logfmt logs."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = _serve(["--web.telemetry-path", "/fleet-metrics", "--namespace", "fleet-a", "--namespace", "<b>"],
                  port)
    try:
        assert _wait(lambda: _get(f"{base}/readyz")[0] == 200), "never became ready"
        assert _get(f"{base}/metrics")[0] == 404
        status, text = _get(f"{base}/fleet-metrics")
        assert status == 200
        families = {f.name: f for f in text_string_to_metric_families(text)}
        for name in ("process_resident_memory_bytes", "process_cpu_seconds", "process_open_fds",
                     "process_max_fds", "process_virtual_memory_bytes", "process_start_time_seconds"):
            processes = sorted(s.labels["process"] for s in families[name].samples)
            assert processes == ["compression-worker", "exporter"], name
        rss = {s.labels["process"]: s.value for s in families["process_resident_memory_bytes"].samples}
        assert 10 << 20 < rss["exporter"] < 1 << 30 and 1 << 20 < rss["compression-worker"] < 200 << 20
        assert "python_info" in families
        (build,) = families["fleet_status_exporter_build_info"].samples
        assert build.labels["version"] == __version__
        assert build.labels["revision"] == (_git_head() or "unknown")
        assert build.labels["build_date"] == "unknown"
        assert build.labels["implementation"] in ("compiled", "pure Python")
        if shutil.which("promtool"):
            check = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True,
                                   timeout=60)
            assert check.returncode == 0 and not check.stdout.strip() and not check.stderr.strip(), (
                check.stdout.decode() + check.stderr.decode())
        status, page = _get(f"{base}/")
        assert status == 200
        for fact in ('href="./fleet-metrics"', 'href="./healthz"', 'href="./readyz"', __version__,
                     f"files: {EXAMPLES}", "fleet-a, &lt;b&gt;", "0 of 1"):
            assert fact in page, fact
    finally:
        rc, log_lines = _stop(proc)
    assert rc == 0
    records = [read_logfmt(line) for line in log_lines]  # every line is one logfmt record
    assert all(list(r)[:4] == ["ts", "level", "caller", "msg"] for r in records)
    listening = next(r for r in records if r["msg"] == "listening")
    assert listening["telemetry_path"] == "/fleet-metrics" and listening["caller"].startswith("app.py:")
    assert {"starting", "compression worker started", "shutting down"} <= {r["msg"] for r in records}


def test_serve_without_exporter_metrics_and_with_old_log_spellings():
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = _serve(["--web.disable-exporter-metrics", "--log.level", "warning", "--log.format", "text"], port)
    try:
        assert _wait(lambda: _get(f"{base}/readyz")[0] == 200), "never became ready"
        status, text = _get(f"{base}/metrics")
        assert status == 200
        names = {f.name for f in text_string_to_metric_families(text)}
        assert not {n for n in names if n.startswith(("process_", "python_"))}
        assert {"fleet_status_exporter_build_info", "fleet_status_exporter_resource_synced",
                "capi_cluster_info"} <= names
    finally:
        rc, log_lines = _stop(proc)
    assert rc == 0
    records = [read_logfmt(line) for line in log_lines]
    assert records[0]["level"] == "warn" and "--log.format text is deprecated" in records[0]["msg"]
    assert all(r["level"] in ("warn", "error") for r in records)  # warning is warn: info is left out


def test_version_prints_the_build_as_prometheus_does():
    env = {**os.environ, "FLEET_STATUS_EXPORTER_BUILD_DATE": "20261125"}
    done = subprocess.run([sys.executable, "-m", "exporter", "--version"], cwd=ROOT, capture_output=True,
                          text=True, timeout=30, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    revision = _git_head() or "unknown"
    assert re.fullmatch(rf"fleet-status-exporter, version {re.escape(__version__)} \(branch: \S+, "
                        rf"revision: {revision}\)", lines[0]), lines[0]
    assert lines[1] == "  build date:       20261125"
    assert lines[2] == f"  python version:   {platform.python_version()}"
    assert lines[3] in ("  build:            compiled", "  build:            pure Python")


def test_bad_web_flag_exits_2_from_outside():
    done = subprocess.run([sys.executable, "-m", "exporter", "--web.telemetry-path", "/readyz"], cwd=ROOT,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "--web.telemetry-path '/readyz'" in done.stderr and "choose another path" in done.stderr


def test_evaluate_logs_in_the_chosen_format():
    done = subprocess.run([sys.executable, "-m", "exporter", "evaluate", "--from-files", str(EXAMPLES),
                           "--log.format", "text", "--output", "json"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (record,) = [read_logfmt(line) for line in done.stderr.splitlines()]
    assert record["level"] == "warn" and record["caller"].startswith("cli.py:")
    assert json.loads(done.stdout)["objects"]
