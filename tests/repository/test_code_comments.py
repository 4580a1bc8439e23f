"""Comments and docstrings say why, and leave before/after figures to the records.

A comment that narrates a change ("19.8 -> 15.4 MB", "started at 3.84 s instead of 5.71") is stale
after the next one; the figure belongs in a record under docs/measurements/ (which the comment may
name) or in the commit's body. The README's rule (tests/support/narration.py) is applied here to the
comments and docstrings of the builder and of wasm/ (the search core, the browser runtime, the Node
helpers). It reads files only.
"""

from pathlib import Path

from support.narration import javascript_prose, narrated_lines, python_prose

ROOT = Path(__file__).resolve().parents[2]
CODE = {"builder": ("*.py",), "wasm": ("*.py", "*.js", "*.mjs")}
# The goal of issue 58: a few before/after figures may stay where the comparison is the reason.
MOST_NARRATED_LINES = 5


def code_files() -> list[Path]:
    return sorted(
        path
        for folder, patterns in CODE.items()
        for pattern in patterns
        for path in (ROOT / folder).rglob(pattern)
        if "node_modules" not in path.parts and path.is_file()
    )


def prose(path: Path) -> list[tuple[int, str]]:
    source = path.read_text(encoding="utf-8")
    return python_prose(source) if path.suffix == ".py" else javascript_prose(source)


def narrations(paths: list[Path]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{number}: {text}"
        for path in paths
        for number, text in narrated_lines(prose(path))
    ]


def test_code_comments_narrate_at_most_five_figures():
    found = narrations(code_files())
    assert len(found) <= MOST_NARRATED_LINES, f"{len(found)} lines narrate a figure:\n" + "\n".join(found)


def test_the_code_is_read():
    files = code_files()
    assert ROOT / "builder/cli.py" in files
    assert ROOT / "wasm/readingroom_core/browser.py" in files
    assert ROOT / "wasm/runtime/worker.js" in files
    assert ROOT / "wasm/node/python_snapshot.mjs" in files
    assert sum(len(prose(path)) for path in files) > 1000


def test_python_comments_and_docstrings_are_read_and_strings_are_not():
    source = (
        '"""The module: 19.8 -> 15.4 MB."""\n'
        "LIMIT = 4  # from 3 s to 2 s\n"
        'NOTE = "a string, 5 MB instead of 6"\n'
        "def f():\n"
        '    """Was slow (was 2.5 s)\n\n    and long."""\n'
        "    return '# not a comment 1 -> 2'\n"
    )
    assert [number for number, _ in narrated_lines(python_prose(source))] == [1, 2, 5]
    assert [number for number, _ in python_prose(source)] == [1, 2, 5, 6, 7]


def test_javascript_comments_are_read_and_strings_regexes_and_templates_are_not():
    source = (
        'const url = "http://a/b"; // 245-259 -> 93-100 ms\n'
        "const slash = /^https?:\\/\\//i; /* a block,\n"
        "   from 5 s to 4 s */\n"
        "const t = `x ${ {a: 1}['a'] } // 1 -> 2 ${`y ${z}`}`;\n"
        "const half = 4 / 2 / 1; // the end\n"
        "return /\\/\\/ 3 -> 4/.test(s);\n"
    )
    assert [number for number, _ in javascript_prose(source)] == [1, 2, 3, 5]
    assert [number for number, _ in narrated_lines(javascript_prose(source))] == [1, 3]
