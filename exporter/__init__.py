"""fleet-status-exporter: Cluster API and OCM ManifestWorkReplicaSet status as Prometheus metrics.

The engine and the metrics packages are built as C extensions by mypyc (setup.py); each compiled
module sits next to its source and is imported in its place. With the environment variable
FLEET_STATUS_EXPORTER_PURE_PYTHON=1 this package imports its Python sources instead, whatever
was built: the same results, slower. It is how the test suite checks both builds, and a way to
tell whether a problem comes from the compilation.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import (
    BYTECODE_SUFFIXES,
    SOURCE_SUFFIXES,
    FileFinder,
    SourceFileLoader,
    SourcelessFileLoader,
)

__version__ = "0.1.0"

PURE_PYTHON_ENV = "FLEET_STATUS_EXPORTER_PURE_PYTHON"
_ROOT = os.path.dirname(os.path.abspath(__file__))


def _sources_only(path: str) -> FileFinder:
    """A finder for this package's directories that sees sources and bytecode, not extensions."""
    absolute = os.path.abspath(path)
    if os.path.commonpath([absolute, _ROOT]) != _ROOT:
        raise ImportError("not a directory of this package")  # the next hook takes it
    return FileFinder(path, (SourceFileLoader, SOURCE_SUFFIXES), (SourcelessFileLoader, BYTECODE_SUFFIXES))


if os.environ.get(PURE_PYTHON_ENV) == "1" and _sources_only not in sys.path_hooks:
    sys.path_hooks.insert(0, _sources_only)
    # Finders cached for this package's directories would still load the extensions.
    for cached in [p for p in sys.path_importer_cache if p.startswith(_ROOT)]:
        del sys.path_importer_cache[cached]


def implementation() -> str:
    """"compiled" when the engine and metrics run as mypyc extensions, "pure Python" otherwise."""
    from exporter.engine import model  # the first module every compiled build has

    return "pure Python" if (model.__file__ or "").endswith((".py", ".pyc")) else "compiled"
