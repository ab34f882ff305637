"""No import cycle anywhere in app.py, cli/, core/, db/ and ui/ (issue 37 point 5), and the layers in one direction:
app.py -> cli/ and ui/ -> db/ -> core/, ui/ never importing cli/ (docs/ARCHITECTURE.md, "Layers"). The import
graph of every module, built from the source with `ast`, counts every import statement: at module level, inside
functions and methods, and under `if TYPE_CHECKING:` alike (a function-level import that closes a cycle is a
cycle all the same; it only moves the failure from start-up to the first call)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "db", "ui", "cli")

# No cycle is allowed anywhere (a test may pass its own allowance to check the mechanism).
ALLOWED_CYCLES: tuple[list[str], ...] = ()
# What each layer may import of the others (app.py imports cli/ and ui/; a package imports itself freely).
LAYERS = {"app": {"cli", "ui", "db", "core"}, "cli": {"ui", "db", "core"}, "ui": {"db", "core"}, "db": {"core"},
          "core": set()}


def module_files(root: Path) -> dict[str, Path]:
    """Dotted module name -> file of app.py and every module of PACKAGES under `root`."""
    out: dict[str, Path] = {}
    if (root / "app.py").is_file():
        out["app"] = root / "app.py"
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _absolute(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute name of `from <level dots><name> import ...` written in `module`."""
    if not level:
        return name or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the modules of the graph it imports anywhere in its source (a `from package import name`
    counts as importing `package.name` when that is a module of the graph, else `package`)."""
    files = module_files(root)
    graph: dict[str, set[str]] = {m: set() for m in files}
    for module, path in files.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(module, is_package, node.level, node.module)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            for target in targets:
                while target and target not in files:  # `import db.store.x` or a name inside a module
                    target = target.rpartition(".")[0]
                if target and target != module:
                    graph[module].add(target)
    return graph


def components(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def shortest_cycle(graph: dict[str, set[str]], start: str) -> list[str]:
    """A shortest import chain from `start` back to itself (breadth first), as a list of modules."""
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for child in sorted(graph[node]):
                if child == start:
                    return [*paths[node], start]
                if child not in paths:
                    paths[child] = [*paths[node], child]
                    nxt.append(child)
        frontier = nxt
    return []


def cycles(root: Path, allowed: tuple[list[str], ...] = ALLOWED_CYCLES) -> list[str]:
    """One line per import cycle that `allowed` does not list: a shortest cycle of the component, and its
    members."""
    graph = import_graph(root)
    lines = []
    for comp in components(graph):
        if comp not in allowed:
            cycle = shortest_cycle(graph, comp[0])
            lines.append(" -> ".join(cycle) + f"   (modules in this cycle's component: {', '.join(comp)})")
    return lines


def layer_breaks(root: Path) -> list[str]:
    """One line per import against LAYERS (core/ importing db/, db/ importing ui/, ui/ importing cli/, ...)."""
    return [f"{module} imports {target}" for module, targets in sorted(import_graph(root).items())
            for target in sorted(targets)
            if target.split(".")[0] != module.split(".")[0]
            and target.split(".")[0] not in LAYERS[module.split(".")[0]]]


def test_no_import_cycle_anywhere():
    found = cycles(ROOT)
    assert found == [], "import cycles:\n" + "\n".join(found)


def test_the_layers_import_in_one_direction():
    found = layer_breaks(ROOT)
    assert found == [], "imports against the layers:\n" + "\n".join(found)


def test_the_graph_sees_every_module_and_function_level_imports():
    """The graph covers the tree and counts an import written inside a function (cli/commands.py imports each
    importer only in the command that needs it)."""
    graph = import_graph(ROOT)
    assert {"app", "cli.commands", "core.scoring", "db.store", "db.predictions", "ui.shell"} <= set(graph)
    assert len(graph) > 80
    tree = ast.parse((ROOT / "cli" / "commands.py").read_text(encoding="utf-8"))
    top = {n.module for n in tree.body if isinstance(n, ast.ImportFrom)}
    assert "db.import_predictions" not in top and "db.import_predictions" in graph["cli.commands"]
    assert "db.store" in graph["db.frames"] and "db.predictions" in graph["db.store"]


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_cycle_through_a_function_level_import_is_found_and_named(tmp_path):
    """A tree where db/a imports db/b at module level and db/b imports db/a inside a function, a relative import
    closes a cycle through db/c, a TYPE_CHECKING import one through ui/: every one is reported, in every
    package."""
    _write(tmp_path, {
        "db/__init__.py": "",
        "db/a.py": "from db.b import f\n",
        "db/b.py": "def f():\n    from db import a\n    return a\n",
        "db/c.py": "from . import d\n",
        "db/d.py": "import db.c\n",
        "db/e.py": "from db.a import f\n",
        "core/__init__.py": "",
        "core/x.py": "from core import y\n",
        "core/y.py": "def g():\n    from core.x import g\n",
        "ui/__init__.py": "",
        "ui/p.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ui.q import Q\n",
        "ui/q.py": "from ui import p\n",
    })
    graph = import_graph(tmp_path)
    assert graph["db.b"] == {"db.a"} and graph["db.c"] == {"db.d"} and graph["db.d"] == {"db.c"}
    assert sorted(components(graph)) == [["core.x", "core.y"], ["db.a", "db.b"], ["db.c", "db.d"],
                                         ["ui.p", "ui.q"]]
    found = [line.split("   ")[0] for line in cycles(tmp_path, allowed=())]
    assert found == ["core.x -> core.y -> core.x", "db.a -> db.b -> db.a", "db.c -> db.d -> db.c",
                     "ui.p -> ui.q -> ui.p"]


def test_only_the_allowed_component_passes(tmp_path):
    """The allowance names a component by its exact modules: the same cycle with one module more is reported."""
    _write(tmp_path, {
        "core/__init__.py": "",
        "core/x.py": "from core import y\n",
        "core/y.py": "from core import x\n",
    })
    assert cycles(tmp_path, allowed=(["core.x", "core.y"],)) == []
    _write(tmp_path, {"core/y.py": "from core import z\n", "core/z.py": "from core import x\n"})
    found = cycles(tmp_path, allowed=(["core.x", "core.y"],))
    assert [line.split("   ")[0] for line in found] == ["core.x -> core.y -> core.z -> core.x"]


def test_an_import_against_the_layers_is_named(tmp_path):
    """ui/ importing cli/ inside a function, and core/ importing db/, break the layers; cli/ importing ui/ and
    db/ importing core/ do not."""
    _write(tmp_path, {
        "cli/__init__.py": "def main():\n    from ui import shell\n",
        "ui/__init__.py": "",
        "ui/shell.py": "def serve():\n    import cli\n",
        "db/__init__.py": "",
        "db/store.py": "from core import schema\n",
        "core/__init__.py": "",
        "core/schema.py": "from db.store import Store\n",
    })
    assert layer_breaks(tmp_path) == ["core.schema imports db.store", "ui.shell imports cli"]
