"""The ``kube`` source: watches the CAPI and OCM resources of a cluster and feeds a sink.

Owns connecting (``--kubeconfig``, else in-cluster service account, else ``KUBECONFIG`` /
``~/.kube/config``, through kubernetes_asyncio's config loaders), the periodic discovery pass
(``discovery.py``) that starts a list/watch loop (``informer.py``) per available resource and
namespace, notices groups installed later or removed, and follows the provider kinds Clusters,
Machines and MachinePools reference (InfraCluster, InfraMachine, InfraMachinePool,
BootstrapConfig); readiness (``all_synced`` for the first sync, ``readiness`` for /readyz) and
the self-metric counters (``SourceStats``, plain data: the metrics layer renders them). Owns
no list/watch rules (``informer.py``, which decodes list pages and watch events with orjson) and
no parsing (``exporter.engine.parse.project``, called once per object).

kubernetes_asyncio supplies configuration, the first credentials and the HTTP session, loaded
through ``kube_client`` without its generated API and model classes; ``kube_client.Credentials``
refreshes the credentials as client-go does (token files re-read, exec plugins re-run on expiry
or 401), and the transport retries a 401 once with refreshed ones. Its ``Watch`` helper is
deliberately not used (see ``informer.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

from exporter.sources.discovery import (
    WATCHED,
    Resource,
    ResourceSpec,
    provider_refs,
    resolve,
)
from exporter.sources.informer import (
    Backoff,
    LoopSettings,
    Projector,
    ResourceLoop,
    Sink,
    Transport,
    WatchStats,
    bump,
)
from exporter.sources.kube_client import Credentials, parse_expiry

__all__ = ["KubeSource", "KubeSourceConfig", "LoopSettings", "Sink", "SourceStats", "WatchStats"]

log = logging.getLogger("exporter.sources.kube")

_REFERENCING = frozenset({"Cluster", "Machine", "MachinePool"})  # kinds whose references are followed
_MAX_LOGGED = 10_000  # objects remembered as logged (bad references): a bound, not a cache


@dataclass(frozen=True, slots=True)
class KubeSourceConfig:
    kubeconfig: str | None = None  # None: in-cluster, then $KUBECONFIG, then ~/.kube/config
    context: str | None = None
    namespaces: tuple[str, ...] = ()  # empty: all namespaces
    # kinds not to watch; a provider role (InfraCluster, InfraMachine, InfraMachinePool,
    # BootstrapConfig) covers every provider kind referenced in that role
    exclude_kinds: frozenset[str] = frozenset()
    discovery_interval: float = 60.0  # how often groups are re-checked (installed / removed / upgraded)
    loop: LoopSettings = field(default_factory=LoopSettings)


@dataclass
class SourceStats:
    """Every counter of the source, by resource name (``machines.cluster.x-k8s.io``)."""

    resources: dict[str, WatchStats] = field(default_factory=dict)
    discovery_requests: dict[str, int] = field(default_factory=dict)  # by result: success | error
    discovery_errors: dict[str, str] = field(default_factory=dict)  # by group: last error, while failing
    # referenced provider kinds the API server does not serve, as <Kind>.<group>
    not_served: set[str] = field(default_factory=set)

    def resource(self, name: str) -> WatchStats:
        return self.resources.setdefault(name, WatchStats())


class ApiClientTransport:
    """GET through a kubernetes_asyncio ApiClient, returning the raw aiohttp response.

    The Authorization header comes from ``credentials`` (refreshed as client-go does, see
    ``kube_client.Credentials``), not from the ApiClient's configuration: a 401 answered to a
    credential that can be refreshed refreshes it, and the request is sent again at once with the
    fresh one (once); the caller sees the second answer.
    """

    def __init__(self, api_client: Any, credentials: Credentials | None = None) -> None:
        self.api_client = api_client
        self.credentials = credentials or Credentials(None)

    async def get(
        self, path: str, params: list[tuple[str, str]], timeout: aiohttp.ClientTimeout
    ) -> aiohttp.ClientResponse:
        for attempt in (1, 2):
            sent = await self.credentials.header()
            headers = {"Accept": "application/json"}
            if sent is not None:
                headers["Authorization"] = sent
            # _preload_content=False: the response is returned unread and, in 36.1.0, unchecked.
            response: aiohttp.ClientResponse = await self.api_client.call_api(
                path,
                "GET",
                query_params=list(params),
                header_params=headers,
                auth_settings=[],
                _preload_content=False,
                _request_timeout=timeout,
            )
            if response.status != 401:
                return response
            if attempt == 2 or not await self.credentials.rejected(sent):
                return response
            response.release()
            log.info("credentials refused (401) on %s; retrying with refreshed ones", path)
        raise AssertionError("unreachable")

    async def close(self) -> None:
        await self.api_client.close()


def _credentials(configuration: Any, loader: Any) -> Credentials:
    """What refreshes the header ``configuration`` got from a kubeconfig loader (None: in-cluster)."""
    header = configuration.api_key.get("BearerToken")
    if loader is None:  # in-cluster: the projected service account token rotates
        from kubernetes_asyncio.config.incluster_config import SERVICE_TOKEN_FILENAME

        return Credentials(header, token_file=SERVICE_TOKEN_FILENAME)
    # The user section kubernetes_asyncio resolved (contexts, merged KUBECONFIG files): it keeps it
    # in a private attribute, read here with a fallback to static credentials.
    user = getattr(loader, "_user", None)
    if user is None or getattr(loader, "provider", None) is not None:  # gcp / oidc: as loaded
        return Credentials(header)
    if "exec" in user and header is not None:
        expiry = getattr(loader, "exec_plugin_expiry", None)
        return Credentials(header, exec_config=user["exec"], expiry=parse_expiry(expiry))
    if "tokenFile" in user:
        base = loader._get_base_path(user.path)
        return Credentials(header, token_file=os.path.join(base, str(user["tokenFile"])))
    if header is not None and header != header.strip():
        header = header.strip()  # a token pasted with a newline
    return Credentials(header)


IN_CLUSTER = "in-cluster service account"


def origin(kubeconfig: str | None) -> str:
    """Where ``connect`` reads its configuration: the kubeconfig file it loads, or ``IN_CLUSTER``."""
    if kubeconfig:
        return kubeconfig
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return IN_CLUSTER
    return os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")


async def connect(config: KubeSourceConfig, pool_size: int = 100) -> ApiClientTransport:
    """An authenticated client; raises when no configuration can be loaded (nothing is contacted)."""
    from exporter.sources import kube_client

    client, kube_config = kube_client.load()

    configuration = client.Configuration()
    loader: Any = None
    where = origin(config.kubeconfig)
    if where == IN_CLUSTER:
        kube_config.load_incluster_config(client_configuration=configuration)
    else:
        loader = await kube_config.load_kube_config(
            config_file=where, context=config.context, client_configuration=configuration
        )
    configuration.connection_pool_maxsize = pool_size  # one connection per open watch
    credentials = _credentials(configuration, loader)
    log.info("connecting to %s (%s, %s credentials)", configuration.host, where, credentials.kind)
    return ApiClientTransport(client.ApiClient(configuration=configuration), credentials)


class KubeSource:
    """Start with ``await source.start()``; ``all_synced()`` for readiness; ``await source.stop()``."""

    def __init__(
        self,
        sink: Sink,
        config: KubeSourceConfig = KubeSourceConfig(),
        *,
        project: Projector | None = None,
        transport: Transport | None = None,
        stats: SourceStats | None = None,
        rand: Callable[[], float] = random.random,
    ) -> None:
        if project is None:
            from exporter.engine.parse import project as default_project

            project = default_project
        self._sink, self._config, self._project = sink, config, project
        self._transport = transport
        self.stats = stats or SourceStats()
        self._rand = rand
        self._resources: dict[ResourceSpec, Resource] = {}
        self._loops: dict[ResourceSpec, list[tuple[ResourceLoop, asyncio.Task[None]]]] = {}
        self._missing: set[ResourceSpec] = set()
        self._providers: dict[ResourceSpec, set[str]] = {}  # referenced provider kinds: their roles
        self._bad_refs: set[tuple[str, str, str]] = set()  # objects whose references were logged
        self._infra_seen = 0  # bumped when a new provider kind shows up
        self._infra_discovered = -1  # value of _infra_seen at the start of the last full discovery
        self._wake = asyncio.Event()
        self._supervisor: asyncio.Task[None] | None = None

    # ---- lifecycle ----

    async def start(self) -> None:
        if self._transport is None:
            scopes = max(1, len(self._config.namespaces))
            self._transport = await connect(self._config, pool_size=max(100, 4 * len(WATCHED) * scopes))
        self._supervisor = asyncio.create_task(self._supervise(), name="kube-source-discovery")

    async def stop(self) -> None:
        tasks = [t for loops in self._loops.values() for _, t in loops]
        if self._supervisor is not None:
            tasks.append(self._supervisor)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._loops.clear()
        close = getattr(self._transport, "close", None)
        if close is not None:
            await close()

    def all_synced(self) -> bool:
        """True once discovery succeeded and every readable resource finished its first list.

        A resource (or namespace) whose list answers 403 or 404 is unreadable: waiting for it
        would keep the exporter unready forever over RBAC the chart may legitimately not grant.
        """
        if self._infra_discovered != self._infra_seen:
            return False
        return all(loop.synced or loop.unreadable for loops in self._loops.values() for loop, _ in loops)

    def readiness(self) -> tuple[bool, list[str]]:
        """(ready, one line per resource scope that is not current, saying why).

        Ready once ``all_synced`` and no scope has failed to reach the API server (connection
        errors, 5xx, 429, ...) for longer than ``LoopSettings.unready_after``. Unreadable scopes
        (403/404) are listed but do not make it unready.
        """
        ready, lines = self.all_synced(), []
        if self._infra_discovered != self._infra_seen:
            failed = "; ".join(f"{g}: {e}" for g, e in sorted(self.stats.discovery_errors.items()))
            lines.append("discovery: not complete" + (f"; failing: {failed}" if failed else ""))
        now = time.monotonic()
        for loops in self._loops.values():
            for loop, _ in loops:
                problem = loop.problem(now)
                if problem is not None:
                    unready, line = problem
                    ready = ready and not unready
                    lines.append(line)
        return ready, sorted(lines)

    def unreadable(self) -> frozenset[tuple[str, str]]:
        """(kind, namespace) of every scope the exporter may not read (403/404); namespace "" for
        a scope of all namespaces or a cluster-scoped kind. The engine withholds what it would
        compute over them (``exporter.engine.visibility``)."""
        return frozenset(
            (loop.resource.kind, loop.namespace or "")
            for loops in self._loops.values() for loop, _ in loops if loop.unreadable
        )

    @property
    def synced(self) -> dict[str, bool]:
        return {r.name: self.stats.resource(r.name).synced for r in self._resources.values()}

    # ---- discovery ----

    async def _supervise(self) -> None:
        backoff = Backoff(self._config.loop, self._rand)
        while True:
            self._wake.clear()
            ok = await self._discover()
            delay = self._config.discovery_interval if ok else backoff.next_delay()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wake.wait()

    def _wanted(self) -> list[ResourceSpec]:
        excluded = self._config.exclude_kinds
        specs = [s for s in WATCHED if s.kind not in excluded]
        specs.extend(s for s in sorted(self._providers, key=lambda s: (s.group, s.kind)) if s not in specs)
        return specs

    async def _discover(self) -> bool:
        infra_seen = self._infra_seen
        result = await resolve(self._get_json, self._wanted())
        self.stats.discovery_errors = dict(result.failed)
        for group, error in result.failed.items():
            log.warning("discovery of %s failed: %s", group, error)
        for spec, resource in result.found.items():
            if spec in self._providers:
                self._note_served(spec, resource is not None)
            current = self._resources.get(spec)
            if resource == current:
                continue
            if current is not None:
                await self._stop_resource(current, gone=resource is None)
            if resource is None:
                if spec not in self._missing:
                    log.info("%s (%s) is not installed; checking again every %.0fs",
                             spec.kind, spec.group, self._config.discovery_interval)
                    self._missing.add(spec)
                continue
            self._missing.discard(spec)
            self._start_resource(resource)
        if not result.failed:
            self._infra_discovered = infra_seen
        return not result.failed

    def _start_resource(self, resource: Resource) -> None:
        scopes: tuple[str | None, ...] = (None,)
        if resource.namespaced and self._config.namespaces:
            scopes = self._config.namespaces
        stats = self.stats.resource(resource.name)
        stats.available, stats.version = True, resource.version
        stats.unready_after = self._config.loop.unready_after
        on_object = self._note_references if resource.kind in _REFERENCING else None
        loops = []
        assert self._transport is not None
        for namespace in scopes:
            loop = ResourceLoop(
                resource, namespace, self._transport, self._sink, self._project, stats, self._config.loop,
                on_object=on_object, rand=self._rand,
            )
            task = asyncio.create_task(self._guard(loop), name=f"kube-{resource.name}-{namespace or 'all'}")
            loops.append((loop, task))
        self._resources[resource.spec] = resource
        self._loops[resource.spec] = loops
        log.info("watching %s (%s) in %s", resource.name, resource.api_version,
                 "all namespaces" if scopes == (None,) else ", ".join(s or "" for s in scopes))

    async def _stop_resource(self, resource: Resource, *, gone: bool) -> None:
        loops = self._loops.pop(resource.spec, [])
        for _, task in loops:
            task.cancel()
        await asyncio.gather(*(t for _, t in loops), return_exceptions=True)
        del self._resources[resource.spec]
        stats = self.stats.resource(resource.name)
        stats.scopes_synced.clear()
        stats.objects.clear()
        stats.unreadable.clear()
        stats.failing_since.clear()
        stats.available = False
        if gone:  # the CRD was removed: so were its objects
            for loop, _ in loops:
                self._sink.replace(resource.kind, (), loop.namespace)
            log.info("%s is no longer served; dropped its objects", resource.name)

    async def _guard(self, loop: ResourceLoop) -> None:
        """Run a loop; a bug in it (or in the sink) restarts it after a backoff instead of ending it."""
        backoff = Backoff(self._config.loop, self._rand)
        while True:
            try:
                await loop.run()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("loop of %s crashed; restarting", loop.resource.name)
                await asyncio.sleep(backoff.next_delay())

    def _note_references(self, raw: Mapping[str, Any]) -> None:
        kind = raw.get("kind")
        found, bad = provider_refs(kind if isinstance(kind, str) else "", raw)
        if bad:
            self._bad_reference(raw, bad)
        excluded = self._config.exclude_kinds
        for role, spec in found:
            roles = self._providers.get(spec)
            if roles is not None and role in roles:
                continue
            if role in excluded or spec.kind in excluded:
                continue
            self._providers.setdefault(spec, set()).add(role)
            if roles is None:
                self._infra_seen += 1
                log.info("%ss reference %s (%s) as %s; looking it up", kind, spec.kind, spec.group, role)
                self._wake.set()

    def _note_served(self, spec: ResourceSpec, served: bool) -> None:
        """Counts (``not_served``) and logs once a referenced provider kind the server does not serve."""
        name = f"{spec.kind}.{spec.group}"
        if served:
            self.stats.not_served.discard(name)
        elif name not in self.stats.not_served:
            self.stats.not_served.add(name)
            log.warning("%s (%s) is referenced as %s but not served; its objects are missing until its "
                        "CRD is installed; checking again every %.0fs", spec.kind, spec.group,
                        " and ".join(sorted(self._providers[spec])), self._config.discovery_interval)

    def _bad_reference(self, raw: Mapping[str, Any], problems: list[str]) -> None:
        """Logged once per object: the engine counts it (a MalformedField finding on the object)."""
        meta = raw.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        key = (str(raw.get("kind")), str(meta.get("namespace", "")), str(meta.get("name", "")))
        if key in self._bad_refs:
            return
        if len(self._bad_refs) >= _MAX_LOGGED:
            self._bad_refs.clear()
        self._bad_refs.add(key)
        log.warning("%s %s/%s: cannot follow its references: %s", *key, "; ".join(problems))

    async def _get_json(self, path: str) -> tuple[int, Any]:
        assert self._transport is not None
        timeout = aiohttp.ClientTimeout(total=self._config.loop.request_timeout)
        try:
            resp = await self._transport.get(path, [], timeout)
            try:
                body = await resp.read()
            finally:
                resp.release()
        except Exception:
            bump(self.stats.discovery_requests, "error")
            raise
        bump(self.stats.discovery_requests, "success" if resp.status in (200, 404) else "error")
        try:
            return resp.status, orjson.loads(body) if body else None
        except ValueError:
            return resp.status, None
