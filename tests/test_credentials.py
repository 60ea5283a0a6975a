"""Credentials of the kube source are refreshed as client-go refreshes them, and a source whose
credentials are refused is visibly stale.

A token file is re-read (once a minute, and after a 401) and trimmed; an exec plugin runs again
once its token expired, and after a 401; a 401 answered to a credential that could be refreshed is
retried at once with the fresh one. When the API server keeps refusing the exporter, /readyz turns
503 and ``resource_synced`` 0 after ``LoopSettings.unready_after``, and
``last_event_timestamp_seconds`` (served from the first list on) stops moving.
"""

from __future__ import annotations

import datetime
import stat
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from exporter.app import kube_resources
from exporter.metrics import selfmetrics
from exporter.metrics.selfmetrics import ExporterStats
from tests.kubeapi import CAPI_TYPES
from tests.kubeapi.fixtures import FAST, SourceEnv, eventually, make_env, obj
from tests.kubeapi.kubeconfig import kubeconfig_dict

MACHINES = "machines.cluster.x-k8s.io"


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[SourceEnv]:
    e = await make_env(tmp_path)
    e.api.install(*CAPI_TYPES)
    e.loop_settings = replace(FAST, watch_timeout=(1.0, 1.0))
    e.api.create(obj("Machine", "m1"))
    e.api.create(obj("Cluster", "c1"))
    yield e
    await e.close()


def write_user_kubeconfig(env: SourceEnv, user: dict[str, object]) -> None:
    doc = kubeconfig_dict(env.api.url)
    doc["users"] = [{"name": "fake", "user": user}]
    env.kubeconfig.write_text(yaml.safe_dump(doc), encoding="utf-8")


def exec_plugin(tmp_path: Path, lifetime: float) -> tuple[Path, Path]:
    """A plugin printing token ``exec-N`` (N: its run number) valid ``lifetime`` seconds."""
    runs = tmp_path / "runs"
    runs.write_text("0")
    script = tmp_path / "plugin.py"
    script.write_text(f"""#!{sys.executable}
import datetime, json, pathlib
runs = pathlib.Path({str(runs)!r})
n = int(runs.read_text()) + 1
runs.write_text(str(n))
expiry = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds={lifetime})
print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": {{"token": f"exec-{{n}}",
                             "expirationTimestamp": expiry.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}}}}))
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, runs


def exec_user(script: Path) -> dict[str, object]:
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(script),
                     "interactiveMode": "Never"}}


def errors(source_stats: object) -> int:
    return sum(rs.list_requests.get("error", 0) + rs.watch_requests.get("error", 0)
               for rs in getattr(source_stats, "resources", {}).values())


def rendered(source_stats: object) -> str:
    return selfmetrics.render(ExporterStats(), kube_resources(source_stats), rendered_objects=0,
                              cached_objects=0).decode()


async def test_token_file_ending_in_a_newline_is_trimmed(env: SourceEnv, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("tok-1\n")  # as `echo tok-1 > token` writes it
    write_user_kubeconfig(env, {"tokenFile": str(token)})
    env.api.accept_tokens("tok-1")
    source = await env.start_source()
    await env.converged(source)
    assert set(env.api.authorizations) == {"Bearer tok-1"}


async def test_rotated_token_file_is_read_again_after_a_401_and_the_request_retried_at_once(
    env: SourceEnv, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    token.write_text("tok-1")
    write_user_kubeconfig(env, {"tokenFile": str(token)})
    env.api.accept_tokens("tok-1")
    source = await env.start_source()
    await env.converged(source)
    token.write_text("tok-2\n")  # the kubelet rotates a projected token; the old one is revoked
    env.api.accept_tokens("tok-2")
    env.api.close_watches()  # the next watches are the first requests with the old token
    env.api.create(obj("Machine", "m2"))
    await env.converged(source)
    assert env.api.authorizations[-1] == "Bearer tok-2"
    assert errors(source.stats) == 0  # retried at once: no failure counted, no backoff
    assert source.readiness() == (True, [])


def test_token_file_is_read_again_once_a_minute_without_a_401(tmp_path: Path) -> None:
    import asyncio

    from exporter.sources.kube_client import Credentials

    token = tmp_path / "token"
    token.write_text("tok-1\n")
    now = [1000.0]
    credentials = Credentials("Bearer tok-1\n", token_file=str(token), clock=lambda: now[0])

    async def header() -> str | None:
        return await credentials.header()

    assert asyncio.run(header()) == "Bearer tok-1"
    token.write_text("tok-2")
    now[0] += 59
    assert asyncio.run(header()) == "Bearer tok-1"
    now[0] += 1
    assert asyncio.run(header()) == "Bearer tok-2"
    token.unlink()  # a failed re-read keeps the last token, as client-go does
    now[0] += 60
    assert asyncio.run(header()) == "Bearer tok-2"


def test_empty_token_file_is_an_error(tmp_path: Path) -> None:
    from exporter.sources.kube_client import CredentialError, Credentials

    token = tmp_path / "token"
    token.write_text("\n")
    with pytest.raises(CredentialError, match="empty"):
        Credentials(None, token_file=str(token))


async def test_exec_plugin_runs_again_once_its_token_expired(env: SourceEnv, tmp_path: Path) -> None:
    script, runs = exec_plugin(tmp_path, lifetime=1.0)
    write_user_kubeconfig(env, exec_user(script))
    source = await env.start_source()
    await env.converged(source)
    started = time.monotonic()
    await eventually(lambda: "Bearer exec-3" in env.api.authorizations, timeout=6.0,
                     what="a third token, from a third run of the plugin")
    elapsed = time.monotonic() - started
    # Run when expired, not per request (dozens of requests a second here).
    assert int(runs.read_text()) <= elapsed / 1.0 + 3
    assert errors(source.stats) == 0


async def test_exec_plugin_runs_again_after_a_401_and_the_request_is_retried(
    env: SourceEnv, tmp_path: Path
) -> None:
    script, runs = exec_plugin(tmp_path, lifetime=3600.0)
    write_user_kubeconfig(env, exec_user(script))
    env.api.accept_tokens("exec-1")
    source = await env.start_source()
    await env.converged(source)
    assert runs.read_text() == "1"
    env.api.accept_tokens("exec-2")  # exec-1 revoked before its expirationTimestamp
    env.api.close_watches()
    env.api.create(obj("Machine", "m2"))
    await env.converged(source)
    assert runs.read_text() == "2"  # once, however many loops got the 401 at the same time
    assert errors(source.stats) == 0


async def test_refused_credentials_make_the_source_unready_and_its_data_visibly_stale(
    env: SourceEnv, tmp_path: Path
) -> None:
    env.loop_settings = replace(env.loop_settings, unready_after=0.5)
    env.api.accept_tokens("fake-token")
    source = await env.start_source()
    await env.converged(source)
    before = rendered(source.stats)
    # Served for every resource from its first list on, although a quiet resource gets no events.
    assert f'fleet_status_exporter_last_event_timestamp_seconds{{resource="{MACHINES}"}}' in before
    assert f'fleet_status_exporter_resource_synced{{resource="{MACHINES}"}} 1' in before
    env.api.accept_tokens()  # the ServiceAccount was deleted: every request answers 401
    await eventually(lambda: source.stats.resources[MACHINES].failing_since, what="failure noticed")
    assert source.readiness()[0]  # not at once: an outage shorter than unready_after does not flap it
    # Other resources may have met their first 401 earlier (whichever request came first): wait
    # for this one's to outlast unready_after.
    await eventually(lambda: not source.stats.resources[MACHINES].synced, what="machines not current")
    assert not source.readiness()[0]
    lines = source.readiness()[1]
    assert any(MACHINES in line and "HTTP 401" in line for line in lines), lines
    after = rendered(source.stats)
    assert f'fleet_status_exporter_resource_synced{{resource="{MACHINES}"}} 0' in after
    assert 'fleet_status_exporter_resource_unreadable' not in after  # failing, not a missing grant

    env.api.accept_tokens("fake-token")  # credentials work again: current at the next retry
    await eventually(lambda: source.readiness() == (True, []), what="ready again")
    assert f'fleet_status_exporter_resource_synced{{resource="{MACHINES}"}} 1' in rendered(source.stats)


def test_expiration_timestamp_parsing() -> None:
    from exporter.sources.kube_client import CredentialError, parse_expiry

    assert parse_expiry(None) is None
    assert parse_expiry("2030-01-02T03:04:05Z") == datetime.datetime(
        2030, 1, 2, 3, 4, 5, tzinfo=datetime.UTC).timestamp()
    with pytest.raises(CredentialError):
        parse_expiry("tomorrow")
