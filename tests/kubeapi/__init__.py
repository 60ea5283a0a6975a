"""A fake Kubernetes API server for tests and demos (see ``server.py``; CLI in ``__main__.py``).

Typical use in a test::

    async with FakeKubeAPI() as api:
        api.install(*CAPI_TYPES)
        api.create({...})
        path = api.write_kubeconfig(tmp_path)
"""

from tests.kubeapi.catalog import BOOTSTRAP_TYPES, CAPI_TYPES, INFRA_TYPES, OCM_TYPES, load_manifests
from tests.kubeapi.kubeconfig import write_kubeconfig
from tests.kubeapi.server import FakeKubeAPI, Fault, RequestRecord
from tests.kubeapi.state import ApiError, ResourceType

__all__ = [
    "BOOTSTRAP_TYPES",
    "CAPI_TYPES",
    "INFRA_TYPES",
    "OCM_TYPES",
    "ApiError",
    "FakeKubeAPI",
    "Fault",
    "RequestRecord",
    "ResourceType",
    "load_manifests",
    "write_kubeconfig",
]
