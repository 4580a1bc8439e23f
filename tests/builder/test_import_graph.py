"""No import circle among builder/ and readingroom_core/ modules, not even one held open by an import
inside a function or under TYPE_CHECKING: a circle means two modules are one idea split in two, and a
newcomer cannot read either first.

Every `import` statement counts, wherever it stands. A package's `__init__.py` is the package: importing
`a.b.c` from outside `a.b` runs `a.b`'s `__init__` first, so it is an edge to `a.b` as well.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = {"builder": REPO / "builder", "readingroom_core": REPO / "wasm" / "readingroom_core"}


def module_files(roots: dict[str, Path]) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under each root package."""
    modules = {}
    for name, folder in roots.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [name, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imported_names(module: str, path: Path) -> Iterable[str]:
    """Every name an import statement anywhere in the file asks for, made absolute."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")
                if not is_package:
                    package.pop()
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([base] if base else []))
            for alias in node.names:  # `from a import b`: b is a module of a, or a name in a
                yield f"{base}.{alias.name}"
                yield base


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules its imports run: the one named and each package above it that the
    importing module is not itself inside (those are already running when it is)."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for module, path in modules.items():
        for name in imported_names(module, path):
            parts = name.split(".")
            for end in range(1, len(parts) + 1):
                target = ".".join(parts[:end])
                inside = module == target or module.startswith(target + ".")
                if target in modules and not inside:
                    graph[module].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:  # iterative: a long import chain must not hit the recursion limit
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def test_no_import_circle_in_builder_or_the_core():
    modules = module_files(ROOTS)
    assert "builder.pipeline" in modules and "readingroom_core.engine" in modules
    found = cycles(import_graph(modules))
    assert not found, "import circles (each line one circle's modules):\n" + "\n".join(
        " <-> ".join(component) for component in found
    )


def write(folder: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    return folder


def test_a_circle_held_open_inside_a_function_is_found(tmp_path):
    root = write(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "a.py": "from pkg.b import helper\n",
            "b.py": "def helper():\n    from pkg import a\n    return a\n",
            "c.py": "import pkg.a\n",
        },
    )
    assert cycles(import_graph(module_files({"pkg": root}))) == [["pkg.a", "pkg.b"]]


def test_a_package_init_counts_as_its_package(tmp_path):
    """`sub/__init__.py` imports `sub.x`; `x` reaches `sub.y` from outside through `other`, which
    runs `sub`'s __init__ first: sub -> sub.x -> other -> sub is a circle."""
    root = write(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "sub/__init__.py": "from .x import thing\n",
            "sub/x.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.other import o\nthing = 1\n",
            "sub/y.py": "y = 2\n",
            "other.py": "from pkg.sub.y import y\no = y\n",
        },
    )
    assert cycles(import_graph(module_files({"pkg": root}))) == [["pkg.other", "pkg.sub", "pkg.sub.x"]]


def test_siblings_under_a_package_that_imports_them_are_no_circle(tmp_path):
    """Inside a package its __init__ is already running: x importing its sibling y is only x -> y."""
    root = write(
        tmp_path / "pkg",
        {
            "__init__.py": "from pkg.x import x\nfrom pkg.y import y\n",
            "x.py": "from pkg.y import y\nx = y\n",
            "y.py": "from . import z\ny = 1\n",
            "z.py": "",
        },
    )
    graph = import_graph(module_files({"pkg": root}))
    assert graph["pkg.x"] == {"pkg.y"} and graph["pkg.y"] == {"pkg.z"}
    assert cycles(graph) == []
