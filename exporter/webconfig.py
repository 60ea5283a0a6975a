"""``--web.config.file``: TLS, basic authentication, response headers and a rate limit, in the
Prometheus exporter-toolkit format.

Owns reading and checking the file, the server TLS contexts and their reloading, client
certificate SAN checks, and password checks. Every key the toolkit documents is either
implemented or refused at start with a message saying why and what to use instead; nothing is
accepted and ignored:

- ``tls_server_config``: ``cert_file``/``cert``, ``key_file``/``key``, ``client_ca_file``/
  ``client_ca``, ``client_auth_type`` (``NoClientCert``, ``VerifyClientCertIfGiven``,
  ``RequireAndVerifyClientCert``; ``RequestClientCert`` and ``RequireAnyClientCert`` are refused:
  Python's TLS stack cannot ask for a certificate without verifying it against a CA, and an
  unverified certificate authenticates no one), ``client_allowed_sans`` (the connection is closed
  before any request is read when the verified client certificate has none of them),
  ``min_version``, ``max_version``, ``cipher_suites`` (Go names, mapped to OpenSSL's; like Go, TLS
  1.3 suites are always enabled), ``curve_preferences`` (one curve: OpenSSL through Python sets a
  single one, so a list of several is refused), ``prefer_server_cipher_suites``.
- Certificate, key and CA files are re-read when they change (checked at each TLS handshake, as
  the toolkit reads them at each handshake), so a rotated Secret needs no restart; a pair that
  does not load (a half-written rotation) keeps the previous one and is logged.
- ``http_server_config``: ``headers`` (the toolkit's five, with its allowed values) are set on
  every response; ``http2: true`` is refused (this server speaks HTTP/1.1 only), ``false`` is what
  it does.
- ``basic_auth_users``: bcrypt hashes; the ``Basic`` scheme matches case-insensitively. An unknown
  user costs the same bcrypt verification as a known one (against a known user's hash, then
  refused), so user names do not leak by timing. Verifications run on their own small pool
  (``VERIFY_THREADS``), never on the loop's default executor, and at most ``VERIFY_QUEUE`` wait:
  beyond that a request is refused at once. Recent outcomes are remembered by a salted digest
  (never the password), so a scraper's every request after the first costs nothing. A password
  bcrypt cannot take (over 72 bytes) is a plain 401.
- ``rate_limit``: a token bucket (``interval`` between requests, ``burst``); 429 beyond it.

Owns no HTTP handling (``web``).
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import hashlib
import hmac
import ipaddress
import logging
import os
import re
import ssl
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from exporter.config import ConfigError

log = logging.getLogger("exporter.webconfig")

_TOP: Final = frozenset({"tls_server_config", "basic_auth_users", "http_server_config", "rate_limit"})
_TLS: Final = frozenset(
    {"cert_file", "key_file", "cert", "key", "client_ca_file", "client_ca", "client_auth_type",
     "min_version", "max_version", "cipher_suites", "curve_preferences", "prefer_server_cipher_suites",
     "client_allowed_sans"}
)
_HTTP: Final = frozenset({"http2", "headers"})
_RATE: Final = frozenset({"interval", "burst"})
_CLIENT_AUTH: Final = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
_UNVERIFIED_AUTH: Final = ("RequestClientCert", "RequireAnyClientCert", "RequireClientCert")
_VERSIONS: Final = {"TLS10": ssl.TLSVersion.TLSv1, "TLS11": ssl.TLSVersion.TLSv1_1,
                    "TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
# Go's tls.CipherSuites() (what the toolkit accepts) -> OpenSSL names. TLS 1.3 suites cannot be
# chosen in Go: they are accepted and always enabled, here as there.
_CIPHERS: Final = {
    "TLS_AES_128_GCM_SHA256": None,
    "TLS_AES_256_GCM_SHA384": None,
    "TLS_CHACHA20_POLY1305_SHA256": None,
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
}
_CURVES: Final = {"CurveP256": "prime256v1", "CurveP384": "secp384r1", "CurveP521": "secp521r1",
                  "X25519": "X25519"}
# Response headers the toolkit lets the file set, with the values it allows (empty: any).
_HEADERS: Final[Mapping[str, tuple[str, ...]]] = {
    "Strict-Transport-Security": (),
    "X-Content-Type-Options": ("nosniff",),
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-XSS-Protection": (),
    "Content-Security-Policy": (),
}
BCRYPT_MAX_BYTES: Final = 72
VERIFY_THREADS: Final = 2  # bcrypt verifications at a time (the toolkit runs one)
VERIFY_QUEUE: Final = 16  # verifications waiting beyond those; more are refused at once
CACHE_SIZE: Final = 100  # remembered (user, password) outcomes, as in the toolkit


@dataclass(frozen=True, slots=True)
class TlsConfig:
    cert_file: Path | None = None
    key_file: Path | None = None
    cert: str | None = None
    key: str | None = None
    client_ca_file: Path | None = None
    client_ca: str | None = None
    client_auth_type: str = "NoClientCert"
    client_allowed_sans: tuple[str, ...] | None = None
    min_version: str = "TLS12"
    max_version: str = "TLS13"
    cipher_suites: tuple[str, ...] = ()
    curve_preferences: tuple[str, ...] = ()
    prefer_server_cipher_suites: bool = True

    @property
    def files(self) -> tuple[Path, ...]:
        return tuple(p for p in (self.cert_file, self.key_file, self.client_ca_file) if p is not None)


@dataclass(frozen=True, slots=True)
class RateLimit:
    interval: float  # seconds between requests; 0 disables
    burst: int


class TokenBucket:
    def __init__(self, limit: RateLimit, clock: Any = time.monotonic) -> None:
        self.limit = limit
        self._clock = clock
        self._tokens = float(limit.burst)
        self._last = clock()

    def allow(self) -> bool:
        if self.limit.interval <= 0:
            return True
        now = self._clock()
        self._tokens = min(float(self.limit.burst), self._tokens + (now - self._last) / self.limit.interval)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False


def build_ssl_context(tls: TlsConfig) -> ssl.SSLContext:
    """A server context for ``tls`` as the files hold it now; OSError/SSLError when they do not load."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = _VERSIONS[tls.min_version]
    ctx.maximum_version = _VERSIONS[tls.max_version]
    if tls.prefer_server_cipher_suites:
        ctx.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    else:
        ctx.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
    tls12 = [c for c in (_CIPHERS[name] for name in tls.cipher_suites) if c is not None]
    if tls12:
        ctx.set_ciphers(":".join(tls12))
    for curve in tls.curve_preferences:
        ctx.set_ecdh_curve(_CURVES[curve])
    cert = tls.cert_file.read_bytes() if tls.cert_file is not None else (tls.cert or "").encode()
    key = tls.key_file.read_bytes() if tls.key_file is not None else (tls.key or "").encode()
    _load_pair(ctx, cert, key)
    ctx.verify_mode = _CLIENT_AUTH[tls.client_auth_type]
    if tls.client_ca_file is not None:
        ctx.load_verify_locations(cafile=str(tls.client_ca_file))
    elif tls.client_ca:
        ctx.load_verify_locations(cadata=tls.client_ca)
    return ctx


def _load_pair(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    # load_cert_chain reads files only: anonymous in-memory files (the root filesystem may be
    # read-only, and the key never touches a disk).
    fds = [os.memfd_create("cert", os.MFD_CLOEXEC), os.memfd_create("key", os.MFD_CLOEXEC)]
    try:
        for fd, data in zip(fds, (cert, key), strict=True):
            os.write(fd, data)
        ctx.load_cert_chain(f"/proc/self/fd/{fds[0]}", f"/proc/self/fd/{fds[1]}")
    finally:
        for fd in fds:
            os.close(fd)


def _signature(paths: tuple[Path, ...]) -> tuple[object, ...]:
    out: list[object] = []
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            out.append(None)
            continue
        out.append((st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size))
    return tuple(out)


class ReloadingContext:
    """The server's SSLContext; each handshake uses the files as they are now.

    The listening context's SNI callback (called at every handshake, with or without SNI) checks
    the files' identity (device, inode, mtime, size); when it changed, a new context is built and
    the connection switched to it. A pair that does not load keeps the previous context.
    """

    def __init__(self, tls: TlsConfig) -> None:
        self.tls = tls
        self._signature = _signature(tls.files)
        self.current = build_ssl_context(tls)
        self.listening = build_ssl_context(tls)
        self.listening.sni_callback = self._on_hello

    def _on_hello(self, sslobj: Any, _server_name: str | None, _ctx: ssl.SSLContext) -> None:
        try:
            current = self.refresh()
            if sslobj.context is not current:
                sslobj.context = current
        except Exception as exc:  # never fail a handshake over a reload
            log.warning("TLS context switch failed", extra={"error": repr(exc)})

    def refresh(self) -> ssl.SSLContext:
        signature = _signature(self.tls.files)
        if signature != self._signature:
            self._signature = signature
            try:
                self.current = build_ssl_context(self.tls)
            except (OSError, ssl.SSLError, ValueError) as exc:
                log.warning("cannot reload the TLS certificate, key or client CA; keeping the previous ones",
                            extra={"error": str(exc)})
            else:
                log.info("TLS certificate, key and client CA reloaded",
                         extra={"files": [str(p) for p in self.tls.files]})
        return self.current


def peer_sans(peercert: Mapping[str, Any] | None) -> list[str]:
    """The SAN values of a verified peer certificate, formatted as Go's x509 does (DNS, email, IP, URI)."""
    values: list[str] = []
    for kind, value in (peercert or {}).get("subjectAltName", ()):
        if kind in ("DNS", "email", "URI"):
            values.append(value)
        elif kind == "IP Address":
            try:
                values.append(str(ipaddress.ip_address(value.strip())))
            except ValueError:
                values.append(value.strip())
    return values


class _Verifier:
    """bcrypt checks on their own threads, a bounded number at a time, with a cache of outcomes."""

    def __init__(self) -> None:
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._waiting = 0
        self._salt = os.urandom(16)
        self._cache: OrderedDict[bytes, bool] = OrderedDict()

    def digest(self, user: str, hashed: bytes, password: bytes) -> bytes:
        return hmac.new(self._salt, b"\x00".join((user.encode(), hashed, password)), hashlib.sha256).digest()

    def cached(self, token: bytes) -> bool | None:
        outcome = self._cache.get(token)
        if outcome is not None:
            self._cache.move_to_end(token)
        return outcome

    def remember(self, token: bytes, outcome: bool) -> None:
        self._cache[token] = outcome
        self._cache.move_to_end(token)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)

    async def check(self, password: bytes, hashed: bytes) -> bool | None:
        """bcrypt's verdict, or None when too many checks are already waiting."""
        if self._waiting >= VERIFY_THREADS + VERIFY_QUEUE:
            return None
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(VERIFY_THREADS, thread_name_prefix="bcrypt")
        import bcrypt  # only needed when basic auth is configured

        self._waiting += 1
        try:
            loop = asyncio.get_running_loop()
            return bool(await loop.run_in_executor(self._pool, bcrypt.checkpw, password, hashed))
        finally:
            self._waiting -= 1

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


@dataclass(slots=True)
class WebConfig:
    tls: TlsConfig | None = None
    users: Mapping[str, bytes] = field(default_factory=dict)  # user -> bcrypt hash
    headers: Mapping[str, str] = field(default_factory=dict)
    rate_limit: RateLimit | None = None
    _verifier: _Verifier = field(default_factory=_Verifier)
    _contexts: ReloadingContext | None = None

    @property
    def auth_required(self) -> bool:
        return bool(self.users)

    def ssl_context(self) -> ssl.SSLContext | None:
        """The context to listen with (it switches each handshake to the files' current contents)."""
        if self.tls is None:
            return None
        if self._contexts is None:
            self._contexts = ReloadingContext(self.tls)
        return self._contexts.listening

    def sans_allowed(self, peercert: Mapping[str, Any] | None) -> bool:
        """False when ``client_allowed_sans`` is set and the peer's certificate has none of them."""
        allowed = self.tls.client_allowed_sans if self.tls is not None else None
        if allowed is None:
            return True
        return any(san in allowed for san in peer_sans(peercert))

    async def authorize(self, header: str | None) -> bool | None:
        """True when no users are configured or the Basic credentials match one; False when
        they do not; None when too many password checks are already in flight (answer 429)."""
        if not self.users:
            return True
        creds = _basic(header)
        if creds is None:
            return False
        user, password = creds
        hashed = self.users.get(user)
        known = hashed is not None
        if hashed is None:
            # The same work as for a known user: verify against one of their hashes (the
            # costliest), then refuse whatever bcrypt says.
            hashed = max(self.users.values(), key=_cost)
        if len(password) > BCRYPT_MAX_BYTES:
            return False  # bcrypt refuses such passwords; no hash can match them
        token = self._verifier.digest(user, hashed, password)
        outcome = self._verifier.cached(token)
        if outcome is None:
            verdict = await self._verifier.check(password, hashed)
            if verdict is None:
                return None
            outcome = known and verdict
            self._verifier.remember(token, outcome)
        return outcome

    def close(self) -> None:
        self._verifier.close()


def _cost(hashed: bytes) -> int:
    parts = hashed.split(b"$")
    try:
        return int(parts[2])
    except (IndexError, ValueError):
        return 0


def _basic(header: str | None) -> tuple[str, bytes] | None:
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "basic":  # auth schemes are case-insensitive (RFC 9110 11.1)
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True)
    except ValueError:
        return None
    user, sep, password = decoded.partition(b":")
    if not sep:
        return None
    try:
        return user.decode(), password
    except UnicodeDecodeError:
        return None


def load(path: Path) -> WebConfig:
    """Read and check the file; ConfigError says which key is wrong."""
    where = f"--web.config.file {path}"
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{where}: cannot read: {exc}") from None
    if not isinstance(doc, Mapping):
        raise ConfigError(f"{where}: expected a mapping with tls_server_config and/or basic_auth_users")
    _no_unknown(doc, _TOP, where)
    tls = _tls(doc.get("tls_server_config"), path.parent, where)
    users = _users(doc.get("basic_auth_users"), where)
    headers = _http(doc.get("http_server_config"), where)
    rate = _rate(doc.get("rate_limit"), where)
    config = WebConfig(tls=tls, users=users, headers=headers, rate_limit=rate)
    if tls is not None:
        try:
            config.ssl_context()
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise ConfigError(f"{where}: tls_server_config: cannot load the certificate, key or client CA: "
                              f"{exc}") from None
    return config


def _no_unknown(doc: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(map(str, set(doc) - allowed))
    if unknown:
        expected = ", ".join(sorted(allowed))
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; expected {expected}")


def _str_list(raw: object, key: str, where: str) -> tuple[str, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise ConfigError(f"{where}: {key} must be a list of strings")
    return tuple(raw)


def _tls(raw: object, base: Path, where: str) -> TlsConfig | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: tls_server_config must be a mapping")
    where = f"{where}: tls_server_config"
    _no_unknown(raw, _TLS, where)
    for key in ("cert_file", "key_file", "cert", "key", "client_ca_file", "client_ca",
                "client_auth_type", "min_version", "max_version"):
        if raw.get(key) is not None and not isinstance(raw.get(key), str):
            raise ConfigError(f"{where}: {key} must be a string")
    for inline, file in (("cert", "cert_file"), ("key", "key_file"), ("client_ca", "client_ca_file")):
        if raw.get(inline) and raw.get(file):
            raise ConfigError(f"{where}: give {inline} or {file}, not both")
    if not (raw.get("cert_file") or raw.get("cert")) or not (raw.get("key_file") or raw.get("key")):
        raise ConfigError(f"{where} needs both cert_file and key_file (or cert and key inline)")
    auth = raw.get("client_auth_type") or "NoClientCert"
    if auth in _UNVERIFIED_AUTH:
        raise ConfigError(
            f"{where}: client_auth_type {auth} is not supported: it accepts a client certificate no CA "
            "has verified, which authenticates no one, and this server cannot ask for one without "
            "verifying it; use RequireAndVerifyClientCert (or VerifyClientCertIfGiven) with client_ca_file")
    if auth not in _CLIENT_AUTH:
        raise ConfigError(f"{where}: client_auth_type {auth!r}: expected one of {', '.join(_CLIENT_AUTH)}")
    has_ca = bool(raw.get("client_ca_file") or raw.get("client_ca"))
    if auth != "NoClientCert" and not has_ca:
        raise ConfigError(f"{where}: client_auth_type {auth} needs client_ca_file (or client_ca)")
    if auth == "NoClientCert" and has_ca:
        raise ConfigError(f"{where}: client_ca_file is set but client_auth_type is NoClientCert: "
                          "set client_auth_type to RequireAndVerifyClientCert to check client certificates")
    sans = _str_list(raw.get("client_allowed_sans"), "client_allowed_sans", where)
    if sans is not None and auth == "NoClientCert":
        raise ConfigError(f"{where}: client_allowed_sans needs client certificates: set client_auth_type to "
                          "RequireAndVerifyClientCert and client_ca_file")
    versions = {}
    for key, default in (("min_version", "TLS12"), ("max_version", "TLS13")):
        version = raw.get(key) or default
        if version not in _VERSIONS:
            raise ConfigError(f"{where}: {key} {version!r}: expected one of {', '.join(_VERSIONS)}")
        versions[key] = version
    if _VERSIONS[versions["min_version"]] > _VERSIONS[versions["max_version"]]:
        raise ConfigError(f"{where}: min_version {versions['min_version']} is above max_version "
                          f"{versions['max_version']}")
    ciphers = _str_list(raw.get("cipher_suites"), "cipher_suites", where) or ()
    for name in ciphers:
        if name not in _CIPHERS:
            raise ConfigError(f"{where}: cipher_suites: unknown cipher {name!r}; expected one of "
                              f"{', '.join(_CIPHERS)}")
    curves = _str_list(raw.get("curve_preferences"), "curve_preferences", where) or ()
    for name in curves:
        if name not in _CURVES:
            raise ConfigError(f"{where}: curve_preferences: unknown curve {name!r}; expected one of "
                              f"{', '.join(_CURVES)}")
    if len(curves) > 1:
        raise ConfigError(f"{where}: curve_preferences: give one curve; this server (OpenSSL through "
                          "Python) cannot set a list of several")
    prefer = raw.get("prefer_server_cipher_suites", True)
    if not isinstance(prefer, bool):
        raise ConfigError(f"{where}: prefer_server_cipher_suites must be true or false")

    def path(key: str) -> Path | None:
        value = raw.get(key)
        # Relative paths are relative to the config file, as in the exporter-toolkit.
        return base / value if isinstance(value, str) and value else None

    return TlsConfig(
        cert_file=path("cert_file"), key_file=path("key_file"),
        cert=raw.get("cert") or None, key=raw.get("key") or None,
        client_ca_file=path("client_ca_file"), client_ca=raw.get("client_ca") or None,
        client_auth_type=auth, client_allowed_sans=sans,
        min_version=versions["min_version"], max_version=versions["max_version"],
        cipher_suites=ciphers, curve_preferences=curves, prefer_server_cipher_suites=prefer,
    )


def _http(raw: object, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    where = f"{where}: http_server_config"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} must be a mapping")
    _no_unknown(raw, _HTTP, where)
    http2 = raw.get("http2", False)
    if not isinstance(http2, bool):
        raise ConfigError(f"{where}: http2 must be true or false")
    if http2:
        raise ConfigError(f"{where}: http2: true is not supported: this server speaks HTTP/1.1 only; "
                          "remove the key or set it to false")
    headers = raw.get("headers") or {}
    if not isinstance(headers, Mapping):
        raise ConfigError(f"{where}: headers must map header names to values")
    out: dict[str, str] = {}
    for name, value in headers.items():
        if name not in _HEADERS:
            raise ConfigError(f"{where}: headers: {name!r} cannot be set; "
                              f"expected one of {', '.join(_HEADERS)}")
        if not isinstance(value, str):
            raise ConfigError(f"{where}: headers: {name} must be a string")
        allowed = _HEADERS[name]
        if allowed and value not in allowed:
            raise ConfigError(f"{where}: headers: {name} {value!r}: expected one of {', '.join(allowed)}")
        if value:  # blank: unset, as in the toolkit
            out[name] = value
    return out


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS: Final = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """A Go duration (``1s``, ``500ms``, ``1m30s``, ``0``) in seconds; ValueError otherwise."""
    if text == "0":
        return 0.0
    pos, total = 0, 0.0
    for match in _DURATION.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text) or not text:
        raise ValueError(text)
    return total


def _rate(raw: object, where: str) -> RateLimit | None:
    if raw is None:
        return None
    where = f"{where}: rate_limit"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} must be a mapping with interval and burst")
    _no_unknown(raw, _RATE, where)
    interval = raw.get("interval", "0")
    try:  # a bare number is nanoseconds, as Go reads a time.Duration
        text = str(interval)
        seconds = float(interval) * 1e-9 if isinstance(interval, int | float) else parse_duration(text)
    except ValueError:
        raise ConfigError(f"{where}: interval {interval!r}: expected a duration such as 100ms or 1s") \
            from None
    burst = raw.get("burst", 0)
    if not isinstance(burst, int) or isinstance(burst, bool) or burst < 0:
        raise ConfigError(f"{where}: burst must be a non-negative integer")
    if seconds > 0 and burst < 1:
        raise ConfigError(f"{where}: burst must be at least 1 when interval is set (no request would pass)")
    return RateLimit(interval=seconds, burst=burst) if seconds > 0 else None


def _users(raw: object, where: str) -> dict[str, bytes]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: basic_auth_users must map user names to bcrypt hashes")
    users: dict[str, bytes] = {}
    for user, hashed in raw.items():
        if not isinstance(user, str) or not isinstance(hashed, str) or not hashed.startswith("$2") \
                or _cost(hashed.encode()) < 4:
            raise ConfigError(f"{where}: basic_auth_users[{user!r}]: expected a bcrypt hash ($2y$...)")
        users[user] = hashed.encode()
    if users:
        try:
            import bcrypt  # noqa: F401
        except ImportError:
            raise ConfigError(f"{where}: basic_auth_users needs the Python package bcrypt") from None
    return users
