"""A real management cluster for tests: etcd and kube-apiserver on loopback, CRDs, objects.

Owns: starting etcd and kube-apiserver (built by ``build.py``) with certificates generated per
cluster, restarting the API server, stopping both; a small synchronous REST client (admin client
certificate) to install CRDs, create objects as a controller would (the object, then its status
subresource), read, patch and delete them, compact etcd; kubeconfigs for the exporter (admin
certificate, or a ServiceAccount's token from the TokenRequest API). Does not own which CRDs or
objects a test loads (``eras.py``) nor any assertion.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.realcluster import build
from tests.realcluster.pki import Pki

Obj = dict[str, Any]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ApiError(Exception):
    def __init__(self, status: int, body: Any, what: str) -> None:
        message = body.get("message") if isinstance(body, dict) else body
        super().__init__(f"{what}: HTTP {status}: {message}")
        self.status, self.body = status, body


@dataclass(frozen=True)
class Resource:
    """Where a kind lives: its group, the version to write, its plural and its scope."""

    group: str
    version: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base


CORE = {
    "Namespace": Resource("", "v1", "namespaces", False),
    "ServiceAccount": Resource("", "v1", "serviceaccounts", True),
}


class Process:
    def __init__(self, name: str, args: list[str], log: Path, env: Mapping[str, str] | None = None) -> None:
        self.name, self.args, self.log = name, args, log
        self.env = {**os.environ, **env} if env else None
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        out = self.log.open("ab")
        self.proc = subprocess.Popen(
            self.args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env)
        out.close()

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def check(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            tail = self.log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{tail}")


class RealCluster:
    """``with RealCluster(tmp) as c:`` starts etcd and kube-apiserver; everything stops on exit."""

    def __init__(self, workdir: Path, *, progress_notify_interval: str | None = None,
                 apiserver_args: Iterable[str] = ()) -> None:
        self.dir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.pki = Pki(workdir / "pki")
        self.admin_cert, self.admin_key = self.pki.client("admin", ("system:masters",))
        self.etcd_port, self.port = free_port(), free_port()
        etcd_args = [
            str(build.binary("etcd")), "--name", "default", "--data-dir", str(workdir / "etcd"),
            "--listen-client-urls", f"http://127.0.0.1:{self.etcd_port}",
            "--advertise-client-urls", f"http://127.0.0.1:{self.etcd_port}",
            "--listen-peer-urls", f"http://127.0.0.1:{free_port()}",
            "--log-level", "warn",
        ]
        if progress_notify_interval:
            # etcd's own default is 10 minutes: the API server's quiet watches see no progress
            # (and send no bookmark) for that long.
            etcd_args += ["--watch-progress-notify-interval", progress_notify_interval]
        self.etcd = Process("etcd", etcd_args, workdir / "etcd.log")
        self.apiserver = Process("kube-apiserver", [
            str(build.binary("kube-apiserver")),
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={self.port}",
            f"--tls-cert-file={self.pki.server_cert}", f"--tls-private-key-file={self.pki.server_key}",
            f"--client-ca-file={self.pki.ca}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={self.pki.sa_pub}",
            f"--service-account-signing-key-file={self.pki.sa_key}",
            "--service-cluster-ip-range=10.96.0.0/24",
            "--authorization-mode=RBAC",
            "--profiling=false",
            *apiserver_args,
        ], workdir / "kube-apiserver.log")
        self.url = f"https://127.0.0.1:{self.port}"
        self._ssl = ssl.create_default_context(cafile=str(self.pki.ca))
        self._ssl.load_cert_chain(str(self.admin_cert), str(self.admin_key))
        self._resources: dict[tuple[str, str], Resource] = dict(
            (("v1", k), r) for k, r in CORE.items())

    # ---- lifecycle ----

    def __enter__(self) -> RealCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self.etcd.start()
        self._wait(lambda: self._etcd_healthy(), self.etcd, "etcd", 30)
        self.start_apiserver()

    def start_apiserver(self, *, wait: bool = True) -> None:
        self.apiserver.start()
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout: float = 90) -> None:
        self._wait(lambda: self._get_status("/readyz") == 200, self.apiserver, "kube-apiserver", timeout)

    def stop_apiserver(self) -> None:
        self.apiserver.stop()

    def stop(self) -> None:
        self.apiserver.stop()
        self.etcd.stop()

    def _wait(self, ok: Any, proc: Process, what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            proc.check()
            with contextlib.suppress(OSError, ssl.SSLError):
                if ok():
                    return
            time.sleep(0.2)
        raise TimeoutError(f"{what} not ready after {timeout}s; log: {proc.log}")

    def _etcd_healthy(self) -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.etcd_port}/health", timeout=2) as r:
            return bool(json.loads(r.read()).get("health") == "true")

    def _get_status(self, path: str) -> int:
        try:
            with urllib.request.urlopen(self.url + path, context=self._ssl, timeout=5) as r:
                return int(r.status)
        except urllib.error.HTTPError as e:
            return int(e.code)

    # ---- REST ----

    def request(self, method: str, path: str, body: Any = None, *,
                content_type: str = "application/json", ok: Iterable[int] = (200, 201)) -> Any:
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self._ssl, timeout=30) as r:
                raw = r.read()
                status = r.status
        except urllib.error.HTTPError as e:
            raw, status = e.read(), e.code
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:  # "404 page not found" for a group that is not served
            parsed = {"message": raw.decode(errors="replace")}
        if status not in tuple(ok):
            raise ApiError(status, parsed, f"{method} {path}")
        return parsed

    def watch(self, path: str, params: Mapping[str, str]) -> tuple[int, list[Obj]]:
        """A watch request's status and every event it streamed until the server ended it (give
        ``timeoutSeconds``); for an error status, the Status object alone."""
        req = urllib.request.Request(f"{self.url}{path}?{urllib.parse.urlencode(params)}")
        req.add_header("Accept", "application/json")
        try:
            with urllib.request.urlopen(req, context=self._ssl, timeout=60) as r:
                return int(r.status), [json.loads(line) for line in r if line.strip()]
        except urllib.error.HTTPError as e:
            return int(e.code), [json.loads(e.read())]

    def resource(self, api_version: str, kind: str) -> Resource:
        try:
            return self._resources[(api_version, kind)]
        except KeyError:
            raise KeyError(f"{kind} ({api_version}) is not installed in this cluster") from None

    def install_crds(self, files: Iterable[Path]) -> list[Obj]:
        """Creates (or replaces) the CRDs and waits until each is Established and served."""
        return self.install_crd_objects(
            [doc for f in files for doc in yaml.safe_load_all(f.read_text()) if doc])

    def install_crd_objects(self, crds: list[Obj]) -> list[Obj]:
        for crd in crds:
            name = crd["metadata"]["name"]
            path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
            existing = self.request("GET", f"{path}/{name}", ok=(200, 404))
            if existing and existing.get("kind") == "CustomResourceDefinition":
                crd["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
                self.request("PUT", f"{path}/{name}", crd)
            else:
                self.request("POST", path, crd)
        for crd in crds:
            self._await_established(crd["metadata"]["name"])
            self.note_crd(crd)
        return crds

    def note_crd(self, crd: Mapping[str, Any]) -> None:
        spec = crd["spec"]
        for v in spec["versions"]:
            if v.get("served", True):
                self._resources[(f"{spec['group']}/{v['name']}", spec["names"]["kind"])] = Resource(
                    spec["group"], v["name"], spec["names"]["plural"], spec["scope"] == "Namespaced")

    def delete_crd(self, name: str, *, wait: bool = True) -> None:
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
        self.request("DELETE", path, ok=(200, 202, 404))
        deadline = time.monotonic() + 60
        while wait and self.request("GET", path, ok=(200, 404)).get("kind") == "CustomResourceDefinition":
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRD {name} still present")
            time.sleep(0.2)

    def _await_established(self, name: str, timeout: float = 60) -> None:
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            crd = self.request("GET", path)
            conditions = {c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []}
            if conditions.get("Established") == "True":
                spec = crd["spec"]
                version = next(v["name"] for v in spec["versions"] if v.get("served", True))
                listing = f"/apis/{spec['group']}/{version}/{spec['names']['plural']}"
                if self.request("GET", listing, ok=(200, 404, 429, 503)).get("kind", "").endswith("List"):
                    return
            time.sleep(0.1)
        raise TimeoutError(f"CRD {name} not established after {timeout}s")

    def ensure_namespace(self, name: str) -> None:
        self.request("POST", "/api/v1/namespaces",
                     {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, ok=(201, 409))

    def create(self, obj: Mapping[str, Any]) -> Obj:
        """Creates the object, then writes its status through the status subresource, as its
        controller would; returns what the server stores."""
        res = self.resource(obj["apiVersion"], obj["kind"])
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") if res.namespaced else None
        if namespace:
            self.ensure_namespace(namespace)
        body = {k: v for k, v in obj.items() if k != "status"}
        body["metadata"] = {k: v for k, v in meta.items() if k in _WRITABLE_METADATA}
        stored: Obj = self.request("POST", res.path(namespace), body)
        if obj.get("status"):
            stored = self.write_status(stored, obj["status"])
        return stored

    def write_status(self, stored: Mapping[str, Any], status: Mapping[str, Any]) -> Obj:
        res = self.resource(stored["apiVersion"], stored["kind"])
        meta = stored["metadata"]
        body = {**stored, "status": status}
        path = res.path(meta.get("namespace"), meta["name"]) + "/status"
        return dict(self.request("PUT", path, body))

    def discover(self, api_version: str, kind: str) -> Resource:
        """Where any served kind lives (built-in or custom), from API discovery; cached."""
        if (api_version, kind) not in self._resources:
            group, _, version = api_version.rpartition("/")
            path = f"/apis/{api_version}" if group else f"/api/{version}"
            listing = self.request("GET", path, ok=(200, 404))
            for r in (listing or {}).get("resources") or []:
                if "/" not in r["name"]:
                    self._resources.setdefault((api_version, r["kind"]), Resource(
                        group, version, r["name"], bool(r["namespaced"])))
        return self.resource(api_version, kind)

    def apply(self, obj: Mapping[str, Any], *, field_manager: str = "tests") -> Obj:
        """Server-side apply of any manifest, with strict field validation: an unknown or
        duplicate field is an error (an ApiError; the server answers 500 for a field its schema
        does not declare), not a warning. Returns what is stored."""
        res = self.discover(obj["apiVersion"], obj["kind"])
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") if res.namespaced else None
        if res.namespaced and not namespace:
            raise ValueError(f"{obj['kind']} {meta.get('name')}: a namespaced object without a namespace")
        path = res.path(namespace, meta["name"]) + f"?fieldManager={field_manager}&fieldValidation=Strict"
        return dict(self.request("PATCH", path, dict(obj), content_type="application/apply-patch+yaml"))

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> Obj:
        return dict(self.request("GET", self.resource(api_version, kind).path(namespace, name)))

    def list(self, api_version: str, kind: str) -> list[Obj]:
        return list(self.request("GET", self.resource(api_version, kind).path())["items"])

    def patch(self, api_version: str, kind: str, namespace: str | None, name: str, patch: Any,
              *, subresource: str = "") -> Obj:
        path = self.resource(api_version, kind).path(namespace, name)
        path += f"/{subresource}" if subresource else ""
        return dict(self.request("PATCH", path, patch, content_type="application/merge-patch+json"))

    def delete(self, api_version: str, kind: str, namespace: str | None, name: str) -> None:
        self.request("DELETE", self.resource(api_version, kind).path(namespace, name), ok=(200, 202))

    def rewrite_history(self, stored: Mapping[str, Any], metadata: Mapping[str, Any]) -> None:
        """Sets metadata that only the object's history could have produced (``generation``
        after spec changes, ``creationTimestamp``, ``deletionTimestamp``, ``uid``) in the stored
        object itself: the API server stores custom resources as JSON in etcd and its watch
        cache sends the change as a MODIFIED event, as after a real write."""
        res = self.resource(stored["apiVersion"], stored["kind"])
        meta = stored["metadata"]
        key = "/".join(["/registry", res.group, res.plural, *([meta["namespace"]] if res.namespaced else []),
                        meta["name"]]).encode()
        base = f"http://127.0.0.1:{self.etcd_port}/v3/kv"
        kvs = _post_json(f"{base}/range", {"key": base64.b64encode(key).decode()}).get("kvs") or []
        if len(kvs) != 1:
            raise KeyError(f"{key.decode()} is not in etcd")
        obj = json.loads(base64.b64decode(kvs[0]["value"]))
        obj["metadata"].update(metadata)
        _post_json(f"{base}/put", {"key": base64.b64encode(key).decode(),
                                   "value": base64.b64encode(json.dumps(obj).encode()).decode()})

    def compact_etcd(self) -> int:
        """Compacts etcd at its current revision (as the API server does every 5 minutes)."""
        base = f"http://127.0.0.1:{self.etcd_port}/v3/kv"
        rev = int(_post_json(f"{base}/range", {"key": "AA=="})["header"]["revision"])  # key "\0"
        _post_json(f"{base}/compaction", {"revision": rev, "physical": True})
        return rev

    # ---- kubeconfigs ----

    def admin_kubeconfig(self, path: Path) -> Path:
        return self._kubeconfig(path, {"client-certificate": str(self.admin_cert),
                                       "client-key": str(self.admin_key)})

    def token_kubeconfig(self, path: Path, namespace: str, service_account: str,
                         seconds: int = 3600) -> Path:
        """A kubeconfig with a token of the ServiceAccount, issued by the TokenRequest API."""
        review = self.request(
            "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
             "spec": {"expirationSeconds": seconds}})
        return self._kubeconfig(path, {"token": review["status"]["token"]})

    def _kubeconfig(self, path: Path, user: Mapping[str, str]) -> Path:
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "test",
            "clusters": [{"name": "test", "cluster": {"server": self.url,
                                                      "certificate-authority": str(self.pki.ca)}}],
            "users": [{"name": "test", "user": dict(user)}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
        }
        path.write_text(yaml.safe_dump(config))
        return path


# What a client may set on create; the server assigns the rest (uid, resourceVersion,
# creationTimestamp, generation, deletionTimestamp, managedFields).
_WRITABLE_METADATA = frozenset(
    {"name", "generateName", "namespace", "labels", "annotations", "finalizers", "ownerReferences"})


def _post_json(url: str, body: Any) -> Any:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


@contextlib.contextmanager
def apiserver_down(cluster: RealCluster) -> Iterator[None]:
    """The API server stopped for the block, started again (and ready) after it."""
    cluster.stop_apiserver()
    try:
        yield
    finally:
        cluster.start_apiserver()
