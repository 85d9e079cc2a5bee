"""The house rules, checked: imports point one way and close no cycle, no module grows past the
size that asks for a split, and docs/architecture.md's package map matches the tree."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.helpers import REPO

SOURCE = REPO / "server"
PACKAGE = SOURCE / "mnemo"

# Lowest first. A module may import only from its own layer or those below it.
LAYERS = [
    # models and pure logic at the bottom
    {
        "mnemo",
        "mnemo.api",
        "mnemo.archive",
        "mnemo.clock",
        "mnemo.config",
        "mnemo.config_sources",
        "mnemo.keep",
        "mnemo.episodes",
        "mnemo.errors",
        "mnemo.injected",
        "mnemo.jsonread",
        "mnemo.jsonrpc",
        "mnemo.memories",
        "mnemo.numerals",
        "mnemo.paths",
        "mnemo.private",
        "mnemo.secrets",
        "mnemo.transcripts",
        "mnemo.typed",
        "mnemo.validation",
        "mnemo.vocabulary",
        "mnemo.workspace",
    },
    {
        "mnemo.store",
        "mnemo.index",
        "mnemo.embed",
        "mnemo.distill",
        "mnemo.usage",
        "mnemo.code",
        "mnemo.health",
        "mnemo.hosts",
    },
    {"mnemo.daemon"},
    # the clients on top
    {
        "mnemo.__main__",
        "mnemo.client",
        "mnemo.cli",
        "mnemo.entry",
        "mnemo.hook_process",
        "mnemo.importing",
        "mnemo.mcpserver",
    },
]
# Past this many lines a module is asking to be split; the exceptions say why (architecture.md).
MAX_LINES = 400
LONG_MODULES: dict[str, str] = {}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(SOURCE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(path: Path, *, at_run_time: bool) -> set[str]:
    """The mnemo modules ``path`` imports; ``at_run_time``: not those only the type checker reads
    (under ``if TYPE_CHECKING:``), but those inside functions too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    nodes = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom) and not (at_run_time and id(n) in typing_only)
    ]
    modules = _modules()
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            assert node.module is not None and node.level == 0, f"{path}: relative import"
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        found.update(name for name in names if name in modules)
    return found


def _layer(module: str) -> int:
    """The layer of ``module``: that of the longest name in LAYERS it is or lies under."""
    best, found = -1, -1
    for index, layer in enumerate(LAYERS):
        for name in layer:
            if (module == name or module.startswith(name + ".")) and len(name) > best:
                best, found = len(name), index
    assert found >= 0 and (best > len("mnemo") or module == "mnemo"), f"{module} is in no layer"
    return found


def test_every_module_belongs_to_a_layer() -> None:
    for module in _modules():
        _layer(module)


def test_imports_point_down_the_layers_only() -> None:
    wrong = []
    for module, path in _modules().items():
        for imported in _imports(path, at_run_time=False):
            if _layer(imported) > _layer(module):
                wrong.append(f"{module} imports {imported}")
    assert wrong == []


def test_no_import_cycle_anywhere() -> None:
    graph = {module: _imports(path, at_run_time=True) for module, path in _modules().items()}
    cycles = []
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for imported in sorted(graph[module]):
            if imported == module:
                continue
            if state.get(imported) == 1:
                cycles.append(" → ".join([*path[path.index(imported) :], imported]))
            elif imported not in state:
                visit(imported)
        path.pop()
        state[module] = 2

    for module in graph:
        if module not in state:
            visit(module)
    assert cycles == []


def test_no_module_is_past_the_size_that_asks_for_a_split() -> None:
    long = {
        str(path.relative_to(REPO)): lines
        for path in PACKAGE.rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert set(long) == set(LONG_MODULES), long
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    for name in LONG_MODULES:
        assert name in text, f"{name} is over {MAX_LINES} lines: docs/architecture.md must say why"


def test_the_package_map_names_every_package_and_module_that_exists_and_no_other() -> None:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Package map", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"^- `(mnemo(?:\.[a-z_]+)*)`", section, flags=re.M))
    modules = set(_modules())
    assert named - modules == set(), "named in the map but not in the tree"
    assert modules - named == set(), "in the tree but not in the map"
