"""Write a kubeconfig that points a client at the fake API server (plain HTTP, bearer token).

Owns only the file format; the server is in ``server.py``. kubernetes_asyncio and kubectl both
accept the result (``kubectl --kubeconfig PATH get clusters.cluster.x-k8s.io -A``).
"""

from __future__ import annotations

from pathlib import Path

import yaml


def kubeconfig_dict(url: str, token: str = "fake-token", name: str = "fake") -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": url}}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "preferences": {},
    }


def write_kubeconfig(path: str | Path, url: str, token: str = "fake-token") -> Path:
    """Write the kubeconfig to ``path`` (a file, or a directory to put ``kubeconfig`` in)."""
    target = Path(path)
    if target.is_dir():
        target = target / "kubeconfig"
    target.write_text(yaml.safe_dump(kubeconfig_dict(url, token), sort_keys=False), encoding="utf-8")
    return target
