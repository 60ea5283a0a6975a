"""``--web.config.file``: TLS and basic authentication in the Prometheus exporter-toolkit format.

Owns reading and checking the file (``tls_server_config.cert_file``/``key_file``, optional
``client_ca_file`` + ``client_auth_type``, ``min_version``; ``basic_auth_users`` mapping user
names to bcrypt hashes), the server ``ssl.SSLContext``, and password checks. bcrypt is slow on
purpose (~0.1-0.3 s per check), so checks run in a thread and a verified (user, password) pair
is remembered by a salted digest, never in clear. Unknown keys are an error, as in the toolkit,
so a typo cannot silently disable authentication. Owns no HTTP handling (``web``).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from exporter.config import ConfigError

_TOP: Final = frozenset({"tls_server_config", "basic_auth_users", "http_server_config"})
_TLS: Final = frozenset(
    {"cert_file", "key_file", "client_ca_file", "client_auth_type", "min_version", "max_version",
     "cipher_suites", "curve_preferences", "prefer_server_cipher_suites", "client_allowed_sans"}
)
_CLIENT_AUTH: Final = {
    "NoClientCert": ssl.CERT_NONE,
    "RequestClientCert": ssl.CERT_OPTIONAL,
    "RequireAnyClientCert": ssl.CERT_REQUIRED,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
_VERSIONS: Final = {"TLS10": ssl.TLSVersion.TLSv1, "TLS11": ssl.TLSVersion.TLSv1_1,
                    "TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}


@dataclass(frozen=True, slots=True)
class TlsConfig:
    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None
    client_auth_type: str = "NoClientCert"
    min_version: str = "TLS12"


@dataclass(slots=True)
class WebConfig:
    tls: TlsConfig | None = None
    users: Mapping[str, bytes] = field(default_factory=dict)  # user -> bcrypt hash
    _verified: set[bytes] = field(default_factory=set)
    _salt: bytes = field(default_factory=lambda: os.urandom(16))

    @property
    def auth_required(self) -> bool:
        return bool(self.users)

    def ssl_context(self) -> ssl.SSLContext | None:
        if self.tls is None:
            return None
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.minimum_version = _VERSIONS[self.tls.min_version]
        ctx.load_cert_chain(self.tls.cert_file, self.tls.key_file)
        ctx.verify_mode = _CLIENT_AUTH[self.tls.client_auth_type]
        if self.tls.client_ca_file is not None:
            ctx.load_verify_locations(self.tls.client_ca_file)
        return ctx

    async def check_authorization(self, header: str | None) -> bool:
        """True when no users are configured or the Basic credentials match one."""
        if not self.users:
            return True
        creds = _basic(header)
        if creds is None:
            return False
        user, password = creds
        hashed = self.users.get(user)
        if hashed is None:
            return False
        token = hmac.new(self._salt, f"{user}\x00{password}".encode(), hashlib.sha256).digest()
        if token in self._verified:
            return True
        import bcrypt  # only needed when basic auth is configured

        ok = await asyncio.to_thread(bcrypt.checkpw, password.encode(), hashed)
        if ok:
            self._verified.add(token)
        return bool(ok)


def _basic(header: str | None) -> tuple[str, str] | None:
    if not header or not header.startswith("Basic "):
        return None
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    user, sep, password = decoded.partition(":")
    return (user, password) if sep else None


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
    config = WebConfig(tls=tls, users=users)
    try:
        config.ssl_context()
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"{where}: tls_server_config: cannot load the certificate or key: {exc}") from None
    return config


def _no_unknown(doc: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(doc) - allowed)
    if unknown:
        expected = ", ".join(sorted(allowed))
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; expected {expected}")


def _tls(raw: object, base: Path, where: str) -> TlsConfig | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: tls_server_config must be a mapping")
    _no_unknown(raw, _TLS, f"{where}: tls_server_config")
    cert, key = raw.get("cert_file"), raw.get("key_file")
    if not isinstance(cert, str) or not isinstance(key, str) or not cert or not key:
        raise ConfigError(f"{where}: tls_server_config needs both cert_file and key_file")
    auth = raw.get("client_auth_type", "NoClientCert")
    if auth not in _CLIENT_AUTH:
        raise ConfigError(f"{where}: client_auth_type {auth!r}: expected one of {', '.join(_CLIENT_AUTH)}")
    ca = raw.get("client_ca_file")
    if auth in ("RequireAndVerifyClientCert", "VerifyClientCertIfGiven") and not ca:
        raise ConfigError(f"{where}: client_auth_type {auth} needs client_ca_file")
    version = raw.get("min_version", "TLS12")
    if version not in _VERSIONS:
        raise ConfigError(f"{where}: min_version {version!r}: expected one of {', '.join(_VERSIONS)}")
    # Relative paths are relative to the config file, as in the exporter-toolkit.
    return TlsConfig(
        cert_file=base / cert,
        key_file=base / key,
        client_ca_file=base / ca if isinstance(ca, str) and ca else None,
        client_auth_type=auth,
        min_version=version,
    )


def _users(raw: object, where: str) -> dict[str, bytes]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: basic_auth_users must map user names to bcrypt hashes")
    users: dict[str, bytes] = {}
    for user, hashed in raw.items():
        if not isinstance(user, str) or not isinstance(hashed, str) or not hashed.startswith("$2"):
            raise ConfigError(f"{where}: basic_auth_users[{user!r}]: expected a bcrypt hash ($2y$...)")
        users[user] = hashed.encode()
    if users:
        try:
            import bcrypt  # noqa: F401
        except ImportError:
            raise ConfigError(f"{where}: basic_auth_users needs the Python package bcrypt") from None
    return users
