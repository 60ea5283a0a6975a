"""The web configuration as exporter-toolkit defines it: every key implemented or refused, client
certificate SANs, certificate reloading, basic auth that leaks nothing and cannot be starved,
Accept-Encoding weights, and the probe-only listener."""

from __future__ import annotations

import asyncio
import base64
import datetime
import gzip
import ipaddress
import logging
import ssl
import threading
from pathlib import Path

import aiohttp
import bcrypt
import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import exporter.webconfig as webconfig_module
from exporter.config import ConfigError
from exporter.web import make_app
from exporter.webconfig import load as load_web_config
from tests.test_web import basic, exposition

try:
    from exporter.web import LimitedSite
except ImportError:  # today's main has no such site: the tests below that need it fail
    LimitedSite = None  # type: ignore[assignment,misc]


# --- certificates -------------------------------------------------------------------------------

def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_ca(cn: str = "test-ca") -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return key, cert


def issue(ca: tuple[ec.EllipticCurvePrivateKey, x509.Certificate], cn: str, sans: list[x509.GeneralName],
          client: bool) -> tuple[bytes, bytes, int]:
    """PEM certificate, PEM key and serial number of a leaf signed by ``ca``."""
    ca_key, ca_cert = ca
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    usage = x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH if client else x509.oid.ExtendedKeyUsageOID.SERVER_AUTH
    serial = x509.random_serial_number()
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(serial)
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem, serial


def pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, object]:
    """A CA, a server pair in files, and client pairs for two SANs."""
    ca = make_ca()
    sans = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    server_cert, server_key, serial = issue(ca, "localhost", sans, False)
    (tmp_path / "server.crt").write_bytes(server_cert)
    (tmp_path / "server.key").write_bytes(server_key)
    (tmp_path / "ca.crt").write_bytes(pem(ca[1]))
    (tmp_path / "server-ca.crt").write_bytes(pem(ca[1]))  # what clients trust, whatever ca.crt becomes
    clients = {}
    for name, san in (("prometheus", x509.DNSName("prometheus.monitoring.svc")),
                      ("intruder", x509.DNSName("intruder.example")),
                      ("by-uri", x509.UniformResourceIdentifier("spiffe://cluster.local/ns/monitoring/sa/prom"))):
        cert, key, _ = issue(ca, name, [san], True)
        (tmp_path / f"{name}.crt").write_bytes(cert)
        (tmp_path / f"{name}.key").write_bytes(key)
        clients[name] = (tmp_path / f"{name}.crt", tmp_path / f"{name}.key")
    return {"dir": tmp_path, "ca": ca, "serial": serial, "clients": clients}


def client_context(pki: dict[str, object], client: str | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(Path(pki["dir"]) / "server-ca.crt"))  # type: ignore[arg-type]
    ctx.check_hostname = False
    if client is not None:
        cert, key = pki["clients"][client]  # type: ignore[index]
        ctx.load_cert_chain(cert, key)
    return ctx


async def serve_tls(config: webconfig_module.WebConfig, port: int) -> web.AppRunner:
    runner = web.AppRunner(make_app(exposition([True]), config), access_log=None)
    await runner.setup()
    if LimitedSite is not None:
        await LimitedSite(runner, "127.0.0.1", port, web_config=config,
                          ssl_context=config.ssl_context()).start()
    else:  # today's main
        await web.TCPSite(runner, "127.0.0.1", port, ssl_context=config.ssl_context()).start()
    return runner


async def fetch(port: int, ctx: ssl.SSLContext, path: str = "/metrics") -> int:
    async with aiohttp.ClientSession() as session, \
            session.get(f"https://127.0.0.1:{port}{path}", ssl=ctx) as resp:
        await resp.read()
        return resp.status


def write_config(tmp: Path, text: str) -> Path:
    path = tmp / "web.yml"
    path.write_text(text)
    return path


MTLS = """tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_ca_file: ca.crt
  client_auth_type: RequireAndVerifyClientCert
"""


# --- tls_server_config --------------------------------------------------------------------------

async def test_a_client_certificate_without_an_allowed_san_gets_no_answer(pki, unused_tcp_port):
    config = load_web_config(write_config(pki["dir"], MTLS + "  client_allowed_sans:\n"
                                          "    - prometheus.monitoring.svc\n"
                                          "    - spiffe://cluster.local/ns/monitoring/sa/prom\n"))
    runner = await serve_tls(config, unused_tcp_port)
    try:
        assert await fetch(unused_tcp_port, client_context(pki, "prometheus")) == 200
        assert await fetch(unused_tcp_port, client_context(pki, "by-uri")) == 200  # URI SANs count too
        with pytest.raises(aiohttp.ClientError):  # today's main: 200
            await fetch(unused_tcp_port, client_context(pki, "intruder"))
        with pytest.raises(aiohttp.ClientError):  # no certificate at all
            await fetch(unused_tcp_port, client_context(pki))
    finally:
        await runner.cleanup()


async def test_max_version_and_cipher_suites_are_applied(pki, unused_tcp_port):
    config = load_web_config(write_config(pki["dir"], """tls_server_config:
  cert_file: server.crt
  key_file: server.key
  max_version: TLS12
  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]
  curve_preferences: [CurveP384]
"""))
    runner = await serve_tls(config, unused_tcp_port)
    try:
        ctx = client_context(pki)
        _reader, writer = await asyncio.open_connection("127.0.0.1", unused_tcp_port, ssl=ctx)
        sslobj = writer.get_extra_info("ssl_object")
        assert sslobj.version() == "TLSv1.2"  # today's main: TLSv1.3
        assert sslobj.cipher()[0] == "ECDHE-ECDSA-AES128-GCM-SHA256"
        writer.close()
        # A client that insists on TLS 1.3 is refused.
        ctx13 = client_context(pki)
        ctx13.minimum_version = ssl.TLSVersion.TLSv1_3
        with pytest.raises((ssl.SSLError, ConnectionError)):
            await asyncio.open_connection("127.0.0.1", unused_tcp_port, ssl=ctx13)
    finally:
        await runner.cleanup()


async def test_certificate_key_and_client_ca_are_reloaded_when_their_files_change(
    pki, unused_tcp_port, caplog
):
    tmp = Path(pki["dir"])
    config = load_web_config(write_config(tmp, MTLS))
    runner = await serve_tls(config, unused_tcp_port)

    async def server_serial(client: str) -> int:
        _reader, writer = await asyncio.open_connection("127.0.0.1", unused_tcp_port,
                                                       ssl=client_context(pki, client))
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        writer.close()
        return x509.load_der_x509_certificate(der).serial_number

    try:
        assert await server_serial("prometheus") == pki["serial"]
        # cert-manager renews the server certificate: the next handshake serves the new one.
        cert, key, serial = issue(pki["ca"], "localhost", [x509.DNSName("localhost")], False)
        (tmp / "server.key.new").write_bytes(key)
        (tmp / "server.crt.new").write_bytes(cert)
        (tmp / "server.key.new").rename(tmp / "server.key")
        (tmp / "server.crt.new").rename(tmp / "server.crt")
        assert await server_serial("prometheus") == serial  # today's main: the old serial
        # The client CA is rotated: certificates of the old CA stop working, the new CA's work.
        new_ca = make_ca("new-ca")
        (tmp / "ca.crt").write_bytes(pem(new_ca[1]) + pem(pki["ca"][1]))
        new_cert, new_key, _ = issue(new_ca, "prometheus", [x509.DNSName("prometheus.monitoring.svc")], True)
        (tmp / "new.crt").write_bytes(new_cert)
        (tmp / "new.key").write_bytes(new_key)
        pki["clients"]["new"] = (tmp / "new.crt", tmp / "new.key")
        assert await fetch(unused_tcp_port, client_context(pki, "new")) == 200
        (tmp / "ca.crt").write_bytes(pem(new_ca[1]))
        with pytest.raises(aiohttp.ClientError):
            await fetch(unused_tcp_port, client_context(pki, "prometheus"))
        # A half-written rotation (a key that does not match) keeps the last good pair.
        (tmp / "server.key").write_bytes(issue(pki["ca"], "x", [x509.DNSName("x")], False)[1])
        with caplog.at_level(logging.WARNING, logger="exporter.webconfig"):
            assert await fetch(unused_tcp_port, client_context(pki, "new")) == 200
        assert any("keeping the previous ones" in r.getMessage() for r in caplog.records)
    finally:
        await runner.cleanup()


def test_inline_cert_key_and_client_ca_are_accepted(pki):
    tmp = Path(pki["dir"])
    indent = lambda b: "\n".join("    " + line for line in b.decode().splitlines())  # noqa: E731
    config = load_web_config(write_config(tmp, f"""tls_server_config:
  cert: |
{indent((tmp / 'server.crt').read_bytes())}
  key: |
{indent((tmp / 'server.key').read_bytes())}
  client_ca: |
{indent((tmp / 'ca.crt').read_bytes())}
  client_auth_type: RequireAndVerifyClientCert
"""))
    ctx = config.ssl_context()
    assert ctx is not None and ctx.verify_mode == ssl.CERT_REQUIRED


@pytest.mark.parametrize(("tls", "fragment"), [
    ("  client_auth_type: RequireAnyClientCert\n", "RequireAnyClientCert is not supported"),
    ("  client_auth_type: RequestClientCert\n", "RequestClientCert is not supported"),
    ("  client_ca_file: ca.crt\n", "client_auth_type is NoClientCert"),
    ("  client_allowed_sans: [a]\n", "client_allowed_sans needs client certificates"),
    ("  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n", "unknown cipher"),
    ("  curve_preferences: [X25519, CurveP256]\n", "give one curve"),
    ("  curve_preferences: [CurveP224]\n", "unknown curve"),
    ("  max_version: TLS14\n", "max_version"),
    ("  min_version: TLS13\n  max_version: TLS12\n", "above max_version"),
    ("  cert: inline\n", "not both"),
], ids=["require-any", "request", "ca-without-auth", "sans-without-certs", "cipher", "curves", "curve",
        "max-version", "min-above-max", "cert-twice"])
def test_tls_settings_that_cannot_be_honoured_are_refused_at_start(pki, tls, fragment):
    base = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
    path = write_config(pki["dir"], base + tls)
    with pytest.raises(ConfigError, match=r"web\.config\.file") as err:
        load_web_config(path)
    assert fragment in str(err.value)


# --- http_server_config, rate_limit ---------------------------------------------------------------

@pytest.mark.parametrize(("text", "fragment"), [
    ("http_server_config:\n  http2: true\n", "HTTP/1.1 only"),
    ("http_server_config:\n  headers:\n    X-Frame-Options: allow\n", "expected one of deny, sameorigin"),
    ("http_server_config:\n  headers:\n    Server: me\n", "cannot be set"),
    ("http_server_config:\n  htp2: false\n", "unknown key(s) htp2"),
    ("rate_limit:\n  interval: soon\n  burst: 1\n", "interval"),
    ("rate_limit:\n  interval: 1s\n  burst: 0\n", "burst must be at least 1"),
], ids=["http2", "frame-options", "header-name", "typo", "interval", "burst"])
def test_http_settings_that_cannot_be_honoured_are_refused_at_start(tmp_path, text, fragment):
    with pytest.raises(ConfigError) as err:
        load_web_config(write_config(tmp_path, text))
    assert fragment in str(err.value)


async def test_configured_headers_are_on_every_response(aiohttp_client, tmp_path):
    config = load_web_config(write_config(tmp_path, """http_server_config:
  http2: false
  headers:
    X-Frame-Options: deny
    X-Content-Type-Options: nosniff
    Strict-Transport-Security: max-age=31536000
    Content-Security-Policy: ""
"""))
    client = await aiohttp_client(make_app(exposition([True]), config))
    for path in ("/metrics", "/healthz", "/readyz", "/"):
        resp = await client.get(path)
        assert resp.headers["X-Frame-Options"] == "deny", path
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
        assert resp.headers["Strict-Transport-Security"] == "max-age=31536000"
        assert "Content-Security-Policy" not in resp.headers  # blank: unset, as in the toolkit


async def test_rate_limit_answers_429_beyond_the_burst_but_not_to_probes(aiohttp_client, tmp_path):
    config = load_web_config(write_config(tmp_path, "rate_limit:\n  interval: 1h\n  burst: 2\n"))
    client = await aiohttp_client(make_app(exposition([True]), config))
    assert [(await client.get("/metrics")).status for _ in range(3)] == [200, 200, 429]
    assert (await client.get("/healthz")).status == 200
    assert (await client.get("/readyz")).status == 200


def test_go_durations():
    assert webconfig_module.parse_duration("1m30s") == 90.0
    assert webconfig_module.parse_duration("250ms") == 0.25
    assert webconfig_module.parse_duration("0") == 0.0
    with pytest.raises(ValueError):
        webconfig_module.parse_duration("5 s")


# --- basic auth ---------------------------------------------------------------------------------

@pytest.fixture
def users(tmp_path):
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()
    return load_web_config(write_config(tmp_path, f"basic_auth_users:\n  prometheus: '{hashed}'\n"))


async def test_the_basic_scheme_is_case_insensitive(aiohttp_client, users):
    client = await aiohttp_client(make_app(exposition([True]), users))
    token = base64.b64encode(b"prometheus:s3cret").decode()
    for scheme in ("Basic", "basic", "BASIC"):
        assert (await client.get("/metrics", headers={"Authorization": f"{scheme} {token}"})).status == 200


async def test_an_unknown_user_costs_the_same_verification_as_a_known_one(aiohttp_client, users, monkeypatch):
    calls: list[bytes] = []
    real = bcrypt.checkpw

    def counting(password: bytes, hashed: bytes) -> bool:
        calls.append(hashed)
        return real(password, hashed)

    monkeypatch.setattr(bcrypt, "checkpw", counting)
    client = await aiohttp_client(make_app(exposition([True]), users))
    assert (await client.get("/metrics", headers=basic("prometheus", "wrong"))).status == 401
    assert (await client.get("/metrics", headers=basic("nobody", "wrong"))).status == 401
    # Both paid one bcrypt verification against a hash of the same cost (today's main: only the first).
    assert len(calls) == 2 and calls[0][:7] == calls[1][:7]
    # An unknown user with the known user's password is refused all the same.
    assert (await client.get("/metrics", headers=basic("nobody", "s3cret"))).status == 401


async def test_a_password_over_72_bytes_is_a_clean_401(aiohttp_client, users):
    client = await aiohttp_client(make_app(exposition([True]), users))
    resp = await client.get("/metrics", headers=basic("prometheus", "x" * 100))
    assert resp.status == 401  # today's main: 500 (bcrypt raises ValueError)
    assert resp.headers["WWW-Authenticate"].startswith("Basic")


async def test_a_flood_of_wrong_passwords_neither_runs_unbounded_nor_holds_up_a_scrape(
        aiohttp_client, users, monkeypatch):
    # bcrypt at cost 14 takes ~1 s; here a verification blocks until released, so the test shows
    # how many run at once and that a scrape with known good credentials is not held up meanwhile.
    release = threading.Event()
    running = [0, 0]  # now, most at once
    lock = threading.Lock()
    real = bcrypt.checkpw

    def slow(password: bytes, hashed: bytes) -> bool:
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
        try:
            release.wait(30)
            return real(password, hashed)
        finally:
            with lock:
                running[0] -= 1

    client = await aiohttp_client(make_app(exposition([True]), users))
    assert (await client.get("/metrics", headers=basic("prometheus", "s3cret"))).status == 200  # now cached
    monkeypatch.setattr(bcrypt, "checkpw", slow)
    flood = [asyncio.ensure_future(client.get("/metrics", headers=basic("prometheus", f"guess{i}")))
             for i in range(30)]
    try:
        await asyncio.sleep(0.5)
        # A gzip scrape (its members are built on threads too) answers while the flood waits.
        resp = await asyncio.wait_for(client.get("/metrics", headers={**basic("prometheus", "s3cret"),
                                                                        "Accept-Encoding": "gzip"}), 10)
        assert resp.status == 200  # today's main: the default executor is full of bcrypt: timeout
        assert running[1] <= webconfig_module.VERIFY_THREADS
    finally:
        release.set()
    statuses = sorted(r.status for r in await asyncio.gather(*flood))
    # Those beyond the queue were refused at once; none got in.
    assert set(statuses) <= {401, 429} and 429 in statuses


# --- Accept-Encoding ----------------------------------------------------------------------------

@pytest.mark.parametrize(("header", "gzipped"), [
    ("gzip", True), ("GZIP;Q=1", True), ("*", True), ("gzip;q=0.5", True), ("x-gzip", True),
    ("gzip;q=0", False), ("gzip; q=0.000", False), ("*;q=0", False), ("identity", False), ("", False),
    ("gzip;q=0.5, identity;q=1", False), ("gzip;q=0, *", False), ("br, *;q=0.1", True),
    ("gzip;q=bogus", False),
])
async def test_accept_encoding_weights_are_followed(aiohttp_client, header, gzipped):
    client = await aiohttp_client(make_app(exposition([True])))
    resp = await client.get("/metrics", headers={"Accept-Encoding": header}, auto_decompress=False)
    body = await resp.read()
    assert (resp.headers.get("Content-Encoding") == "gzip") is gzipped
    assert b"capi_machine_info" in (gzip.decompress(body) if gzipped else body)


# --- probes under mTLS ----------------------------------------------------------------------------

async def test_the_probe_app_serves_only_the_probes(aiohttp_client):
    from exporter.web import make_probe_app

    ready = [False]
    client = await aiohttp_client(make_probe_app(exposition(ready)))
    assert (await client.get("/healthz")).status == 200
    assert (await client.get("/readyz")).status == 503
    ready[0] = True
    assert (await client.get("/readyz")).status == 200
    assert (await client.get("/metrics")).status == 404
    assert (await client.get("/")).status == 404


def test_the_probe_address_flag():
    from exporter.cli import parse

    config = parse(["serve", "--web.probe-address", "127.0.0.1:9843"])
    assert (config.probe_host, config.probe_port) == ("127.0.0.1", 9843)
    assert parse(["serve"]).probe_port is None
    with pytest.raises(ConfigError, match=r"--web\.probe-address"):
        parse(["serve", "--web.probe-address", "nope"])
