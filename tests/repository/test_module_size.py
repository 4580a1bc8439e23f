"""No module is over 450 lines: one idea per module, small enough to read in one sitting.

eslint's `max-lines` holds the browser runtime's JavaScript to the same bound; this test holds the
Python too (the builder, the search core, the scripts and the Node helpers) and checks the JavaScript
again, so that the rule stands where eslint is not installed. It reads files only.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 450
CHECKED = {
    "builder": "*.py",
    "wasm/readingroom_core": "*.py",
    "wasm/runtime": "*.js",
    "wasm/node": "*.*js",
    "scripts": "*.py",
}


def line_count(path: Path) -> int:
    """Lines as eslint's `max-lines` counts them: every line, blank and comment lines included."""
    return len(path.read_text(encoding="utf-8").splitlines())


def modules() -> list[Path]:
    return sorted(
        path
        for folder, pattern in CHECKED.items()
        for path in (ROOT / folder).rglob(pattern)
        if "node_modules" not in path.parts and path.is_file()
    )


def oversized(paths: list[Path], root: Path = ROOT) -> list[str]:
    """Each module over the bound, with its line count."""
    return [
        f"{path.relative_to(root)}: {line_count(path)} lines"
        for path in paths
        if line_count(path) > MAX_LINES
    ]


def test_no_module_is_over_450_lines():
    offenders = oversized(modules())
    assert offenders == [], f"over {MAX_LINES} lines:\n" + "\n".join(offenders)


def test_every_checked_folder_has_modules():
    for folder, pattern in CHECKED.items():
        assert list((ROOT / folder).rglob(pattern)), folder
    assert ROOT / "wasm/runtime/worker.js" in modules()
    assert ROOT / "wasm/readingroom_core/browser.py" in modules()


def test_the_check_names_each_offender_with_its_line_count(tmp_path):
    long, short = tmp_path / "long.py", tmp_path / "short.js"
    long.write_text("x = 1\n" * 451)
    short.write_text("// a line\n" * 450)
    assert oversized([long, short], root=tmp_path) == ["long.py: 451 lines"]
