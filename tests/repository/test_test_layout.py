"""The tests keep their layout: one folder per layer, code shared only through tests/support, and a core
layer that needs nothing but pytest and the core. `nox -s core` proves the last by running it bare; this
holds the full suite to it as well, where the other layers have the builder loaded anyway."""

import ast
import sys
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).parents[1]
LAYERS = ("browser", "builder", "core", "repository")
SUPPORT = TESTS / "support"
CORE_MAY_IMPORT = {"pytest", "readingroom_core", "support"}


def imports(path: Path) -> set[str]:
    """Every module `path` imports, at its top or inside a function (relative imports left out)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            if node.module == "support":  # `from support import corpus` imports support.corpus
                names.update(f"support.{alias.name}" for alias in node.names)
    return names


def python_files() -> list[Path]:
    return sorted(path for path in TESTS.rglob("*.py") if "node_modules" not in path.parts)


def test_every_test_module_is_in_a_layer_under_a_name_no_other_has():
    modules = [path for path in python_files() if path.name.startswith("test_")]
    assert modules
    assert {path.parent.name for path in modules} <= set(LAYERS)
    assert all(path.parent.parent == TESTS for path in modules)
    # pytest imports test modules by basename (pyproject.toml): two of one name would collide
    assert [name for name, count in Counter(path.name for path in modules).items() if count > 1] == []


def test_no_test_or_support_module_imports_a_test_module_or_a_conftest():
    for path in python_files():
        wrong = {name for name in imports(path) if name.split(".")[0].startswith(("test_", "conftest"))}
        assert not wrong, (
            f"{path.relative_to(TESTS)} imports {sorted(wrong)}: shared code goes in tests/support"
        )


def test_the_core_layer_and_the_support_it_uses_import_only_pytest_and_the_core():
    pending = sorted((TESTS / "core").glob("*.py"))
    seen: set[Path] = set()
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in imports(path):
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names or top in CORE_MAY_IMPORT, (
                f"{path.relative_to(TESTS)} imports {name}: tests/core runs with pytest and the core alone"
            )
            if top == "support" and name != "support":
                pending.append(SUPPORT / f"{name.split('.')[1]}.py")
    assert SUPPORT / "citation_cases.py" in seen  # the walk reached the support modules core tests use
