"""Command line: flags into a frozen Config, errors that say what to fix (exit 2), sharding,
``evaluate``, and ``serve --from-files`` end to end (live metrics, file edits, SIGTERM)."""

from __future__ import annotations

import json
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

from exporter.cli import main, parse
from exporter.config import Config
from exporter.sharding import fnv1a_64, keep_shard, ordinal_from_pod_name, shard_of

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
    (["--web.telemetry-path", "/healthz"], "--web.telemetry-path '/healthz': /, /healthz, /readyz are served"),
    (["--web.telemetry-path", "/readyz/"], "--web.telemetry-path '/readyz/': /, /healthz, /readyz are served"),
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
    assert config.deprecations == ("--log.format text is deprecated and reads as logfmt; pass --log.format logfmt",)
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
