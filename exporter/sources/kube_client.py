"""kubernetes_asyncio's configuration loaders and ApiClient, and credentials refreshed as client-go
refreshes them.

``load`` gives ``Configuration``, ``ApiClient`` and the kubeconfig / in-cluster loaders, imported
without kubernetes_asyncio's ``__init__`` modules (``exporter.runtime.import_without_init``):
those import every generated API and model class, ~850 modules, +37 MiB resident and ~170 ms of
CPU, although the exporter reads raw JSON (docs/performance.md, "Process-wide settings").

``Credentials`` sets the Authorization header of every request. kubernetes_asyncio's public API
reads a kubeconfig's token file once, runs its exec plugin again only from a polling task
(``config.refresh_token``) and never after a 401; client-go re-reads token files once a minute
and re-runs exec plugins on expiry and after a 401, and so does ``Credentials``. Owns no request
logic (see ``kube``).
"""

from __future__ import annotations

import asyncio
import datetime
import importlib
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from exporter.runtime import import_without_init

log = logging.getLogger("exporter.sources.kube")


def load() -> tuple[Any, Any]:
    """``(client, config)``: modules offering ``Configuration``/``ApiClient`` and the loaders."""
    if "kubernetes_asyncio" not in sys.modules:
        import_without_init("kubernetes_asyncio", "kubernetes_asyncio.client",
                            "kubernetes_asyncio.client.models")
        client = sys.modules["kubernetes_asyncio.client"]
        # What kube_config and incluster_config import from the client package.
        client.__dict__["Configuration"] = importlib.import_module(
            "kubernetes_asyncio.client.configuration").Configuration
        client.__dict__["ApiClient"] = importlib.import_module(
            "kubernetes_asyncio.client.api_client").ApiClient
    return sys.modules["kubernetes_asyncio.client"], importlib.import_module("kubernetes_asyncio.config")


class CredentialError(Exception):
    """No credential could be obtained: the token file cannot be read, the exec plugin failed."""


TOKEN_FILE_PERIOD = 60.0  # client-go's cached file token source re-reads the file once a minute


class Credentials:
    """The Authorization header of every request, refreshed as client-go refreshes it.

    - A token file (a kubeconfig user's ``tokenFile``, the in-cluster service account token) is
      read again once the last read is ``TOKEN_FILE_PERIOD`` old, and after a 401; its content is
      stripped of surrounding whitespace (``echo`` ends it with a newline, which would otherwise
      reach the header and be refused by the HTTP client). When a re-read fails the last token is
      kept, as client-go does.
    - An exec plugin (a kubeconfig user's ``exec``) runs again once its ``expirationTimestamp``
      has passed, and after a 401 answered to the token it gave last.
    - Anything else (a token or basic auth written in the kubeconfig, client certificates) is
      static: a 401 is then final until the kubeconfig changes and the exporter restarts.

    ``header()`` gives the value to send; ``rejected(sent)`` after a 401 says whether a fresh
    credential was obtained (then the request is worth retrying at once). Concurrent callers
    share one refresh.
    """

    def __init__(
        self,
        header: str | None,
        *,
        token_file: str | None = None,
        exec_config: Any = None,
        expiry: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._header = header
        self._token_file = token_file
        self._exec = exec_config
        self._expiry = expiry  # Unix time the exec plugin's token expires (None: never said)
        self._clock = clock
        self._read_at = -float("inf")  # when the token file was last read
        self._lock = asyncio.Lock()
        if token_file is not None:
            self._read_token_file(initial=True)

    @property
    def kind(self) -> str:
        return "exec plugin" if self._exec is not None else "token file" if self._token_file else "static"

    async def header(self) -> str | None:
        if self._stale():
            async with self._lock:
                if self._stale():
                    await self._refresh()
        return self._header

    async def rejected(self, sent: str | None) -> bool:
        """A request sent with ``sent`` was answered 401: refresh; True when the header changed."""
        if self._exec is None and self._token_file is None:
            return False
        async with self._lock:
            if self._header == sent:  # nobody refreshed since that request went out
                await self._refresh()
            return self._header != sent

    def _stale(self) -> bool:
        now = self._clock()
        if self._exec is not None:
            return self._expiry is not None and now >= self._expiry
        return self._token_file is not None and now - self._read_at >= TOKEN_FILE_PERIOD

    async def _refresh(self) -> None:
        before = self._header
        if self._exec is not None:
            await self._run_exec()
        elif self._token_file is not None:
            self._read_token_file()
        if self._header != before:
            log.info("refreshed the API server credentials (%s)", self.kind)

    def _read_token_file(self, *, initial: bool = False) -> None:
        assert self._token_file is not None
        self._read_at = self._clock()
        try:
            with open(self._token_file, encoding="utf-8") as f:
                token = f.read().strip()
            if not token:
                raise CredentialError(f"token file {self._token_file} is empty")
        except (OSError, UnicodeDecodeError, CredentialError) as e:
            if initial or self._header is None:
                raise CredentialError(f"cannot read token file {self._token_file}: {e}") from e
            log.warning("cannot re-read token file %s (%s); keeping the last token", self._token_file, e)
            return
        self._header = f"Bearer {token}"

    async def _run_exec(self) -> None:
        exec_provider = importlib.import_module("kubernetes_asyncio.config.exec_provider")
        try:
            status = await exec_provider.ExecProvider(self._exec).run()
        except Exception as e:
            raise CredentialError(f"exec plugin failed: {e}") from e
        token = status.get("token") if isinstance(status, dict) else None
        if not isinstance(token, str) or not token.strip():
            raise CredentialError("exec plugin returned no token")
        self._header = f"Bearer {token.strip()}"
        self._expiry = parse_expiry(status.get("expirationTimestamp"))


def parse_expiry(value: object) -> float | None:
    """An ExecCredential's ``expirationTimestamp`` (RFC 3339) as Unix time; None when absent."""
    if isinstance(value, datetime.datetime):
        moment = value
    elif isinstance(value, str) and value:
        try:
            moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as e:
            raise CredentialError(f"exec plugin returned a bad expirationTimestamp {value!r}") from e
    else:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()
