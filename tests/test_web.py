"""The HTTP server: content type, gzip, probes, basic auth and TLS from the exporter-toolkit web config."""

from __future__ import annotations

import asyncio
import base64
import gzip
import shutil
import ssl
import subprocess
import zlib

import aiohttp
import bcrypt
import pytest
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from exporter.buildinfo import BuildInfo
from exporter.config import ConfigError
from exporter.engine.model import Machine, Meta, Result
from exporter.landing import page as landing_page
from exporter.metrics.process import ProcessMetrics
from exporter.metrics.renderer import Published, Renderer
from exporter.metrics.selfmetrics import ExporterStats, ResourceStats
from exporter.web import Exposition, _chunks, make_app
from exporter.webconfig import load as load_web_config

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def exposition(ready: list[bool]) -> Exposition:
    renderer = Renderer()
    m = Machine(meta=Meta(kind="Machine", api_version="cluster.x-k8s.io/v1beta2", namespace="ns", name="m1",
                          uid="u1"), cluster_name="c1", version="v1.30.0")
    renderer.update_group(("capi", "ns", "c1"), [(m, Result(key=m.key, api_version="", uid="u1",
                                                             cluster_name="c1", phase="Running"))])
    return Exposition(renderer, ExporterStats(), lambda: ready[0],
                      lambda: [ResourceStats("Machine", synced=True, objects=1, lists={"success": 1})])


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


async def test_metrics_text_format_and_self_metrics(aiohttp_client):
    client = await aiohttp_client(make_app(exposition([True])))
    resp = await client.get("/metrics", headers={"Accept-Encoding": "identity"})
    assert resp.status == 200
    assert resp.headers["Content-Type"] == CONTENT_TYPE
    assert "Content-Encoding" not in resp.headers
    text = await resp.text()
    names = {f.name for f in text_string_to_metric_families(text)}
    assert {"capi_machine_info", "fleet_status_exporter_build_info", "fleet_status_exporter_objects"} <= names
    assert "fleet_status_exporter_scrape_response_bytes" not in names  # no previous scrape yet
    again = await (await client.get("/metrics")).text()
    assert f"fleet_status_exporter_scrape_response_bytes {len(text.encode())}" in again


@pytest.mark.parametrize("encoding", ["identity", "gzip"])
async def test_name_filter_serves_only_the_named_families(aiohttp_client, encoding):
    client = await aiohttp_client(make_app(exposition([True])))
    full = await (await client.get("/metrics")).text()
    wanted = ["capi_machine_info", "fleet_status_exporter_objects", "no_such_family"]
    resp = await client.get("/metrics", params=[("name[]", n) for n in wanted],
                            headers={"Accept-Encoding": encoding})
    assert resp.status == 200
    text = await resp.text()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert set(families) == {"capi_machine_info", "fleet_status_exporter_objects"}
    whole = {f.name: f for f in text_string_to_metric_families(full)}
    assert families["capi_machine_info"].samples == whole["capi_machine_info"].samples
    # A filtered scrape is not what the scrape self-metrics describe: they keep the full one's.
    after = await (await client.get("/metrics", headers={"Accept-Encoding": "identity"})).text()
    assert f"fleet_status_exporter_scrape_response_bytes {len(full.encode())}" in after


async def test_gzip_when_the_client_accepts_it(aiohttp_client):
    client = await aiohttp_client(make_app(exposition([True])))
    resp = await client.get("/metrics", headers={"Accept-Encoding": "gzip, deflate"})
    assert resp.headers["Content-Encoding"] == "gzip"
    assert "capi_machine_info{" in await resp.text()  # the client decompresses transparently
    resp = await client.get("/metrics", headers={"Accept-Encoding": "gzip;q=0"})
    assert "Content-Encoding" not in resp.headers


async def test_gzip_body_is_concatenated_members_equal_to_the_raw_body(aiohttp_client):
    exp = exposition([True])
    objects = exp.renderer.render_body()
    client = await aiohttp_client(make_app(exp))
    for _ in range(2):  # cold, then served from the renderer's cache
        resp = await client.get("/metrics", headers={"Accept-Encoding": "gzip"}, auto_decompress=False)
        assert resp.headers["Content-Encoding"] == "gzip"
        assert resp.headers["Content-Type"] == CONTENT_TYPE
        data = await resp.read()
        assert int(resp.headers["Content-Length"]) == len(data)
        body = gzip.decompress(data)
        assert body.startswith(objects) and b"fleet_status_exporter_build_info" in body[len(objects):]
        decoded, rest = [], data
        while rest:  # member by member, as Go's multistream gzip reader does
            d = zlib.decompressobj(wbits=31)
            decoded.append(d.decompress(rest))
            assert d.eof
            rest = d.unused_data
        assert len(decoded) > 2 and b"".join(decoded) == body
        raw = await (await client.get("/metrics", headers={"Accept-Encoding": "identity"})).read()
        assert raw.startswith(objects)


def test_small_parts_are_joined_into_chunks_and_large_ones_pass_through_uncopied():
    big = b"x" * 100
    parts = [b"a", b"bb", big, b"c" * 30, b"d" * 30, b"e"]
    chunks = list(_chunks(parts, size=50))
    assert b"".join(chunks) == b"".join(parts)
    assert chunks == [b"abb", big, b"c" * 30 + b"d" * 30, b"e"]
    assert chunks[1] is big


async def test_probes(aiohttp_client):
    ready = [False]
    detail = ["machines.cluster.x-k8s.io: failing for 75s: watch: Cannot connect to host",
              "machinesets.cluster.x-k8s.io: forbidden (list: HTTP 403); needs get/list/watch in all "
              "namespaces"]
    exp = exposition(ready)
    exp.ready_detail = lambda: detail
    client = await aiohttp_client(make_app(exp))
    assert (await client.get("/healthz")).status == 200
    resp = await client.get("/readyz")
    assert resp.status == 503 and resp.content_type == "text/plain"
    assert await resp.text() == "not ready\n" + "".join(f"{line}\n" for line in detail)
    ready[0], detail[:] = True, detail[1:]  # what is merely reported stays in the body
    resp = await client.get("/readyz")
    assert resp.status == 200 and await resp.text() == "ready\n" + detail[0] + "\n"
    assert (await client.get("/healthz")).status == 200


@pytest.fixture
def auth_config(tmp_path):
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()
    path = tmp_path / "web.yml"
    path.write_text(f"basic_auth_users:\n  prometheus: '{hashed}'\n")
    return load_web_config(path)


async def test_basic_auth_protects_metrics_but_not_probes(aiohttp_client, auth_config):
    client = await aiohttp_client(make_app(exposition([True]), auth_config))
    assert (await client.get("/metrics")).status == 401
    assert (await client.get("/metrics", headers=basic("prometheus", "wrong"))).status == 401
    assert (await client.get("/metrics", headers=basic("nobody", "s3cret"))).status == 401
    assert (await client.get("/metrics", headers=basic("prometheus", "s3cret"))).status == 200
    assert (await client.get("/metrics", headers=basic("prometheus", "s3cret"))).status == 200  # cached check
    assert (await client.get("/healthz")).status == 200
    assert (await client.get("/readyz")).status == 200


@pytest.mark.parametrize(("text", "fragment"), [
    ("basic_auth_user:\n  a: b\n", "unknown key(s) basic_auth_user"),
    ("basic_auth_users:\n  a: plain-text\n", "expected a bcrypt hash"),
    ("tls_server_config:\n  cert_file: c.pem\n", "needs both cert_file and key_file"),
    ("tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n  client_auth_type: Maybe\n",
     "client_auth_type"),
    ("- a list\n", "expected a mapping"),
], ids=["typo", "plain-password", "no-key", "bad-client-auth", "not-a-mapping"])
def test_web_config_errors_say_what_to_fix(tmp_path, text, fragment):
    path = tmp_path / "web.yml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"web\.config\.file") as err:
        load_web_config(path)
    assert fragment in str(err.value)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
async def test_tls_from_web_config(tmp_path, unused_tcp_port):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                    "-keyout", str(tmp_path / "k.pem"), "-out", str(tmp_path / "c.pem"), "-days", "1",
                    "-subj", "/CN=localhost"],
                   check=True, capture_output=True)
    path = tmp_path / "web.yml"
    path.write_text("tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n")
    config = load_web_config(path)
    runner = web.AppRunner(make_app(exposition([True]), config))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", unused_tcp_port, ssl_context=config.ssl_context()).start()
    try:
        client_ctx = ssl.create_default_context(cafile=str(tmp_path / "c.pem"))
        client_ctx.check_hostname = False
        async with aiohttp.ClientSession() as session:
            async with session.get(f"https://127.0.0.1:{unused_tcp_port}/metrics", ssl=client_ctx) as resp:
                assert resp.status == 200
                assert "capi_machine_info" in await resp.text()
            with pytest.raises(aiohttp.ClientError):
                await session.get(f"http://127.0.0.1:{unused_tcp_port}/metrics")
    finally:
        await runner.cleanup()


async def test_body_is_sent_with_its_length_in_either_encoding(aiohttp_client):
    exp = exposition([True])
    client = await aiohttp_client(make_app(exp))
    for encoding in ("identity", "gzip", "identity"):
        resp = await client.get("/metrics", headers={"Accept-Encoding": encoding}, auto_decompress=False)
        data = await resp.read()
        assert int(resp.headers["Content-Length"]) == len(data)
        body = gzip.decompress(data) if encoding == "gzip" else data
        assert body.startswith(exp.renderer.render_body())
        assert exp.stats.last_scrape_bytes == len(body)


@pytest.mark.parametrize("slice_seconds, interleaved", [(0.0, True), (3600.0, False)])
async def test_a_raw_scrape_lets_other_tasks_run_while_it_writes(aiohttp_client, monkeypatch,
                                                                 slice_seconds, interleaved):
    # A fast client never makes write() wait, so only the write loop's own yields let a probe
    # in; with the slice set beyond the scrape's length the test shows no task ran in between.
    import exporter.web as web_module

    monkeypatch.setattr(web_module, "YIELD_AFTER_SECONDS", slice_seconds)
    renderer = Renderer(bucket_bytes=4 << 10)
    items = []
    for i in range(300):
        m = Machine(meta=Meta(kind="Machine", api_version="cluster.x-k8s.io/v1beta2", namespace="ns",
                              name=f"m{i}", uid=f"u{i}"), cluster_name="c1", version="v1.30.0")
        items.append((m, Result(key=m.key, api_version="", uid=f"u{i}", cluster_name="c1", phase="Running")))
    renderer.update_group(("capi", "ns", "c1"), items)
    exp = Exposition(renderer, ExporterStats(), lambda: True, lambda: [])
    client = await aiohttp_client(make_app(exp))
    events: list[str] = []
    texts = Published.texts

    def recording_texts(self):
        for part in texts(self):
            events.append("part")
            yield part

    monkeypatch.setattr(Published, "texts", recording_texts)
    request = asyncio.ensure_future(client.get("/metrics", headers={"Accept-Encoding": "identity"}))
    while not events:  # until the response has started writing
        await asyncio.sleep(0)
    while not request.done():
        events.append("tick")
        await asyncio.sleep(0)
    await (await request).read()
    first, last = events.index("part"), len(events) - events[::-1].index("part")
    assert events.count("part") > 10
    assert ("tick" in events[first:last]) is interleaved


async def test_metrics_are_served_at_the_telemetry_path_only(aiohttp_client):
    client = await aiohttp_client(make_app(exposition([True]), telemetry_path="/fleet/metrics"))
    assert (await client.get("/metrics")).status == 404
    resp = await client.get("/fleet/metrics")
    assert resp.status == 200 and resp.headers["Content-Type"] == CONTENT_TYPE
    assert "capi_machine_info" in await resp.text()
    page = await (await client.get("/")).text()
    assert 'href="./fleet/metrics"' in page and 'href="./metrics"' not in page


async def test_landing_page_links_version_and_configuration(aiohttp_client):
    exp = exposition([True])
    build = BuildInfo("0.1.0", "0123abcd", "main", "2026-11-25T10:00:00Z", "3.11.7", "compiled")
    exp.landing = landing_page("/metrics", [("Source", "files: /fleet"), ("Namespaces", "a, b")], build)
    client = await aiohttp_client(make_app(exp))
    resp = await client.get("/")
    assert resp.status == 200 and resp.content_type == "text/html" and resp.charset == "utf-8"
    page = await resp.text()
    for link in ("./metrics", "./healthz", "./readyz"):
        assert f'href="{link}"' in page
    for fact in ("fleet-status-exporter", "0.1.0", "0123abcd", "main", "2026-11-25T10:00:00Z",
                 "3.11.7 (compiled)", "<dt>Source</dt><dd>files: /fleet</dd>",
                 "<dt>Namespaces</dt><dd>a, b</dd>"):
        assert fact in page


def test_landing_page_escapes_everything():
    hostile = '<script>alert("x")</script>&'
    build = BuildInfo(hostile, hostile, hostile, hostile, "3.11.7", "compiled")
    page = landing_page('/m"><script>', [(hostile, hostile)], build).decode()
    assert "<script>" not in page
    assert 'href="./m&quot;&gt;&lt;script&gt;"' in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;" in page


async def test_basic_auth_protects_the_landing_page_and_the_telemetry_path(aiohttp_client, auth_config):
    client = await aiohttp_client(make_app(exposition([True]), auth_config, telemetry_path="/fleet"))
    for path in ("/", "/fleet"):
        assert (await client.get(path)).status == 401, path
        assert (await client.get(path, headers=basic("prometheus", "s3cret"))).status == 200, path
    assert (await client.get("/healthz")).status == 200


async def test_exporter_metrics_are_served_unless_disabled(aiohttp_client):
    with_process = exposition([True])
    with_process.process = ProcessMetrics(lambda: None)
    for exp, wanted in ((with_process, True), (exposition([True]), False)):
        client = await aiohttp_client(make_app(exp))
        for encoding in ("identity", "gzip"):
            text = await (await client.get("/metrics", headers={"Accept-Encoding": encoding})).text()
            names = {f.name for f in text_string_to_metric_families(text)}
            assert ({"process_resident_memory_bytes", "python_info"} <= names) is wanted
            # The self-metrics the shipped alerts read are there either way.
            assert {"fleet_status_exporter_build_info", "fleet_status_exporter_resource_synced"} <= names
