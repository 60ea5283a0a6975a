"""The layers of docs/architecture.md import in one direction only.

Parses every module's imports (AST, no execution) and fails when a layer imports one it must not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "exporter"

IO_MODULES = ("aiohttp", "kubernetes_asyncio", "prometheus_client", "asyncio", "socket", "urllib", "http")

RULES = [
    # (sentence, package prefix of the importing module, forbidden import prefixes)
    (
        "the engine is pure: it imports no I/O layer, no clock-driven library and no other exporter layer",
        "exporter.engine",
        ("exporter.sources", "exporter.metrics", "exporter.web", "exporter.app", "exporter.store",
         "exporter.cli", "exporter.config", *IO_MODULES, "time", "logging", "os", "subprocess"),
    ),
    (
        "the sources know nothing about metrics, the web server or the composition root",
        "exporter.sources",
        ("exporter.metrics", "exporter.web", "exporter.app", "exporter.cli", "prometheus_client"),
    ),
    (
        "the store does no I/O and knows no source or metric",
        "exporter.store",
        ("exporter.sources", "exporter.metrics", "exporter.web", *IO_MODULES),
    ),
    (
        "the metrics layer reads results; it never reaches into the sources or the web server",
        "exporter.metrics",
        ("exporter.sources", "exporter.web", "exporter.app", "kubernetes_asyncio", "aiohttp"),
    ),
]


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("sentence,owner,forbidden", RULES, ids=[r[1] for r in RULES])
def test_layer_imports_only_what_it_may(sentence: str, owner: str, forbidden: tuple[str, ...]) -> None:
    violations = []
    for path in MODULES:
        name = _module_name(path)
        if not (name == owner or name.startswith(owner + ".")):
            continue
        for imported in _imports(path):
            if any(imported == f or imported.startswith(f + ".") for f in forbidden):
                violations.append(f"{name} imports {imported}")
    assert not violations, f"Rule broken: {sentence}:\n" + "\n".join(violations)


def test_rules_cover_existing_modules() -> None:
    """A rule that matches no module would pass vacuously."""
    names = {_module_name(p) for p in MODULES}
    assert any(n.startswith("exporter.engine.") for n in names)
    assert "exporter.store" in names
