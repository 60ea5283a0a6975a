"""kubernetes_asyncio's configuration loaders and ApiClient, without loading its generated classes.

The package's ``__init__`` modules import every generated API and model class (about 850
modules, ~38 MiB of resident memory in this process) although the exporter reads raw JSON and
needs only ``Configuration``, ``ApiClient`` and the kubeconfig / in-cluster loaders. ``load``
registers ``kubernetes_asyncio``, ``kubernetes_asyncio.client`` and
``kubernetes_asyncio.client.models`` as empty package shells before importing those few modules,
so their ``__init__`` code does not run. A shell runs its real ``__init__`` the first time anyone
asks it for a name it lacks (PEP 562 module ``__getattr__``), so code that does want a generated
class still gets it. Nothing is done when the package was imported already. Owns no request
logic (see ``kube``).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from typing import Any

_SHELLS = ("kubernetes_asyncio", "kubernetes_asyncio.client", "kubernetes_asyncio.client.models")


def _shell(name: str) -> None:
    parent, _, leaf = name.rpartition(".")
    path = sys.modules[parent].__path__ if parent else None
    spec = importlib.machinery.PathFinder.find_spec(leaf, path)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not an installed package")
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    completed = False

    def complete(attr: str) -> Any:
        nonlocal completed
        # ``from package import submodule`` asks the package first: a submodule is imported on
        # its own, without completing the package.
        if not completed and importlib.machinery.PathFinder.find_spec(attr, module.__path__) is not None:
            return importlib.import_module(f"{name}.{attr}")
        # Anything else: the real __init__, run once into the shell's own namespace.
        if not completed:
            completed = True
            del module.__dict__["__getattr__"]
            loader.exec_module(module)
        try:
            return module.__dict__[attr]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}") from None

    module.__dict__["__getattr__"] = complete
    sys.modules[name] = module
    if parent:
        setattr(sys.modules[parent], leaf, module)


def load() -> tuple[Any, Any]:
    """``(client, config)``: modules offering ``Configuration``/``ApiClient`` and the loaders."""
    if "kubernetes_asyncio" not in sys.modules:
        for name in _SHELLS:
            _shell(name)
        client = sys.modules["kubernetes_asyncio.client"]
        # What kube_config and incluster_config import from the client package.
        client.__dict__["Configuration"] = importlib.import_module(
            "kubernetes_asyncio.client.configuration").Configuration
        client.__dict__["ApiClient"] = importlib.import_module(
            "kubernetes_asyncio.client.api_client").ApiClient
    return sys.modules["kubernetes_asyncio.client"], importlib.import_module("kubernetes_asyncio.config")
