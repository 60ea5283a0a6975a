"""The layers of docs/architecture.md import in one direction only.

Every module of the package belongs to exactly one layer; each layer states, as data, the layers
it may import and why. Parses every module's imports (AST, no execution, imports inside functions
included) and fails when a module belongs to no layer or imports a layer it may not.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "exporter"

IO_MODULES = ("aiohttp", "kubernetes_asyncio", "prometheus_client", "asyncio", "socket", "urllib", "http")


@dataclass(frozen=True)
class Layer:
    name: str
    modules: tuple[str, ...]  # module names; "x.*" is every module under package x
    may_import: tuple[str, ...]  # layers, besides itself
    why: str
    forbidden: tuple[str, ...] = ()  # libraries it must not import


ENGINE_FORBIDDEN = (*IO_MODULES, "time", "logging", "os", "subprocess")
PARSER = ("exporter.engine.parse", "exporter.engine.parse_capi", "exporter.engine.parse_ocm",
          "exporter.engine.parse_fields")
ENGINE_VALUES = ("exporter.engine.model", "exporter.engine.vocabulary",
                 "exporter.engine.evaluate_types", "exporter.engine.grouping")

LAYERS = (
    Layer("engine values", ENGINE_VALUES, (),
          "the value types, the condition vocabulary and the group index are what every other layer "
          "exchanges: they know no parser and no rule", ENGINE_FORBIDDEN),
    Layer("parser", PARSER, ("engine values",),
          "the parser knows the layouts of raw objects, not what the rules read", ENGINE_FORBIDDEN),
    Layer("engine rules", ("exporter.engine.*",), ("engine values",),
          "the rules are pure functions of projections and now: no parsing, no I/O, no clock",
          ENGINE_FORBIDDEN),
    Layer("package", ("exporter", "exporter.buildinfo"), ("engine values",),
          "what the package is (its version, its build, which build runs) is read by every layer"),
    Layer("runtime", ("exporter.offload", "exporter.timeslice", "exporter.batching", "exporter.runtime"), (),
          "runtime modules decide where and when work runs (a process, a slice, the process-wide "
          "settings), never what the work or the objects are: they are given what they run",
          ("prometheus_client", "kubernetes_asyncio", "aiohttp")),
    Layer("sources", ("exporter.sources.*",), ("engine values", "parser", "runtime", "package"),
          "sources turn raw objects into projections; they know nothing of rules, metrics or the server",
          ("prometheus_client",)),
    Layer("store", ("exporter.store",), ("engine values",),
          "the store keeps projections and what changed; what a change means is passed in", IO_MODULES),
    Layer("metrics", ("exporter.metrics.*",), ("engine values", "parser", "runtime", "package"),
          "the metrics layer renders projections and results (with the parser's field decoding and "
          "label selection); it never runs a rule, reaches a source or the server",
          ("kubernetes_asyncio", "aiohttp")),
    Layer("configuration", ("exporter.config", "exporter.webconfig", "exporter.sharding",
                            "exporter.logging_setup"),
          ("metrics", "sources", "package", "engine values"),
          "flags and files become checked settings, with the names the sources and the metrics accept"),
    Layer("web", ("exporter.web", "exporter.landing"),
          ("metrics", "runtime", "configuration", "package", "engine values"),
          "the server serves what the metrics layer renders; it knows no kind, no rule and no source"),
    Layer("composition", ("exporter.app", "exporter.cli", "exporter.__main__", "exporter.cli_output"),
          ("engine values", "parser", "engine rules", "package", "runtime", "sources", "store", "metrics",
           "configuration", "web"),
          "the composition root wires every layer together, and the CLI prints what the engine computes"),
)


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
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{path}: relative import"
            # ``from exporter.metrics import members`` imports the module exporter.metrics.members.
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in NAMES else node.module)
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))
NAMES = {_module_name(p) for p in MODULES}


def _matches(pattern: str, name: str) -> bool:
    if pattern.endswith(".*"):
        return name == pattern[:-2] or name.startswith(pattern[:-1])
    return name == pattern


def layer_of(name: str) -> Layer | None:
    """The first layer listing ``name`` (explicit modules before the ``.*`` of their package)."""
    exact = [layer for layer in LAYERS if name in layer.modules]
    if exact:
        return exact[0]
    wild = [layer for layer in LAYERS if any(_matches(p, name) for p in layer.modules)]
    return wild[0] if wild else None


def test_every_module_is_in_exactly_one_layer() -> None:
    missing = sorted(n for n in NAMES if layer_of(n) is None)
    assert not missing, f"modules in no layer (add them to LAYERS and docs/architecture.md): {missing}"
    listed = [m for layer in LAYERS for m in layer.modules if not m.endswith(".*")]
    assert len(listed) == len(set(listed)), "a module listed in two layers"
    assert not [m for m in listed if m not in NAMES], "a layer lists a module that does not exist"


def test_layers_name_only_layers() -> None:
    names = {layer.name for layer in LAYERS}
    assert not [m for layer in LAYERS for m in layer.may_import if m not in names]


@pytest.mark.parametrize("layer", LAYERS, ids=[layer.name for layer in LAYERS])
def test_layer_imports_only_what_it_may(layer: Layer) -> None:
    allowed = {layer.name, *layer.may_import}
    violations = []
    for path in MODULES:
        name = _module_name(path)
        if layer_of(name) is not layer:
            continue
        for imported in _imports(path):
            if any(imported == f or imported.startswith(f + ".") for f in layer.forbidden):
                violations.append(f"{name} imports {imported}")
            if imported == "exporter" or imported.startswith("exporter."):
                # ``exporter.x.y`` names a module, or a name inside module ``exporter.x``.
                target = imported if imported in NAMES else imported.rpartition(".")[0]
                owner = layer_of(target)
                if owner is None or owner.name not in allowed:
                    violations.append(f"{name} imports {imported} ({owner.name if owner else 'no layer'})")
    assert not violations, f"Rule broken: {layer.why}:\n" + "\n".join(violations)


def test_a_forbidden_import_is_caught(tmp_path: Path) -> None:
    """The rules are not vacuous: a rule module importing a metric module breaks one."""
    rules = next(layer for layer in LAYERS if layer.name == "engine rules")
    path = tmp_path / "probe.py"
    path.write_text("from exporter.metrics.catalog import KINDS\nimport aiohttp\n")
    imported = _imports(path)
    assert "exporter.metrics.catalog" in imported
    assert layer_of("exporter.metrics.catalog").name not in rules.may_import
    assert any(i == f for i in imported for f in rules.forbidden)


def _declared_strings() -> dict[str, str]:
    """Every string constant of the vocabulary module, by value: the name declaring it."""
    tree = ast.parse((PACKAGE / "engine" / "vocabulary.py").read_text())
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and \
                isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            assert node.value.value not in found, f"{node.value.value!r} declared twice in the vocabulary"
            found[node.value.value] = node.target.id
    return found


def _literals(path: Path) -> list[tuple[int, str]]:
    """String literals of a module, leaving out docstrings and the pieces of f-strings."""
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body \
                and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            skip.add(id(node.body[0].value))
        elif isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip]


def test_condition_types_reasons_and_phases_are_written_once() -> None:
    """A condition type, reason or phase the vocabulary declares is written nowhere else: imported."""
    declared = _declared_strings()
    assert "Ready" in declared and "NotYetReported" in declared
    vocabulary = PACKAGE / "engine" / "vocabulary.py"
    again = [f"{_module_name(path)}:{line}: {value!r} (exporter.engine.vocabulary.{declared[value]})"
             for path in MODULES if path != vocabulary
             for line, value in _literals(path) if value in declared]
    assert not again, "import these from exporter.engine.vocabulary:\n" + "\n".join(again)
