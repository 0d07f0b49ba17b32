"""The package's import graph has no cycles: every module of src/pqforge, every import in it
(at the top, inside a function or for the type checker), read from its syntax tree."""

import ast
from pathlib import Path

import pqforge

ROOT = Path(pqforge.__file__).parent


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = ("pqforge",) + path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the pqforge modules it imports, at the top or inside a function. ``from package
    import name`` counts as an import of the submodule ``package.name`` where one exists, else
    of the package. A package's ``__init__``, which Python runs before any of its submodules, is
    not counted as imported by them: each edge is an import the code names. Imports under
    ``if TYPE_CHECKING:`` count too: they never run, but a circle of layers is a circle all the
    same."""
    files = {module_name(f, root): f for f in root.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names]
            else:
                continue
            edges |= {t for t in targets if t in files and t != name}
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle (its modules, the first repeated at the end), or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_package_import_graph_has_no_cycle():
    graph = import_graph()
    assert "pqforge.mayo.batch" in graph and "pqforge.mayo.engine.pool" in graph["pqforge.mayo.batch_cpu"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_mayo_layers_import_downwards():
    """The key objects sit on the functional layer and the batch calls; the helpers all three
    share sit below them all."""
    graph = import_graph()
    mayo = {name.rpartition(".")[2]: edges for name, edges in graph.items() if name.startswith("pqforge.mayo.")}
    assert {"pqforge.mayo.api", "pqforge.mayo.batch"} <= mayo["keys"]
    for module in ("api", "batch", "batch_cpu", "_checks"):
        assert "pqforge.mayo.keys" not in mayo[module], module
    for module in ("_checks", "batch_cpu"):
        assert not {"pqforge.mayo.api", "pqforge.mayo.batch"} & mayo[module], module


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import(tmp_path):
    pkg = tmp_path / "pqforge"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..c import g\n")
    (pkg / "c.py").write_text("import pqforge.a\n")
    graph = import_graph(pkg)
    assert graph["pqforge.a"] == {"pqforge.sub.b"} and graph["pqforge.sub.b"] == {"pqforge.c"}
    assert find_cycle(graph) == ["pqforge.a", "pqforge.sub.b", "pqforge.c", "pqforge.a"]
    (pkg / "c.py").write_text("import pqforge.sub\n")
    assert find_cycle(import_graph(pkg)) is None
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n")
    assert find_cycle(import_graph(pkg)) == ["pqforge.a", "pqforge.sub.b", "pqforge.c", "pqforge.a"]
