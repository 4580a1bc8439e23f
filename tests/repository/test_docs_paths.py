"""The docs name only paths and modules that exist.

README.md, ARCHITECTURE.md, docs/*.md and pyproject.toml name repository paths (`builder/stages/fetch/`,
`scripts/rankings.py`, `stages/embed.py`), Python modules (`builder.cli`, `readingroom_core.browser`,
`papers.PaperRecord`) and, in ARCHITECTURE.md's code map, files relative to the folder line above them.
A file that moves without its mentions leaves a newcomer looking for it; this test fails instead.

It reads files only (no builder import), so it runs with nothing installed but pytest.
"""

import ast
import fnmatch
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Folders a doc names from the repository root, and the short forms the docs use for deeper ones.
TOP_FOLDERS = ("builder", "wasm", "scripts", "tests", "docs", "corpus", "site_templates", ".github", ".ci")
SHORT_FOLDERS = {
    "stages": "builder/stages",
    "commands": "builder/commands",
    "distributed": "builder/distributed",
    "evaluation": "builder/evaluation",
    "readingroom_core": "wasm/readingroom_core",
    "support": "tests/support",
}
# `site/` is the built site (`site/build-report.json`), except for a Python file: `site/data.py` is the
# builder's. `runtime/`, `data/`, `model/` are folders of the built site, and are not checked.
SITE_FOLDER = "builder/site"

PATH = re.compile(
    r"(?<![\w./:~@$-])"
    rf"((?:{'|'.join(re.escape(f) for f in (*TOP_FOLDERS, *SHORT_FOLDERS, 'site'))})"
    r"/(?:[\w.*<>/-]|\{[\w,.-]+\})*)"
)
DOTTED_MODULE = re.compile(r"(?<![\w./-])((?:builder|readingroom_core)(?:\.\w+)+)(?::(\w+))?")
# `papers.PaperRecord`, `embed.model_batches`: a module's short name and one of its names.
SHORT_DOTTED = re.compile(r"(?<![\w./-])([a-z_][a-z0-9_]*)\.([A-Za-z_]\w*)((?:\.\w+)*)")
# A backticked span that is only `module.name` or `module.name(…)` (not `pp.N-M`, `pyodide.asm.mjs`).
BACKTICKED_DOTTED = re.compile(r"`([a-z_][a-z0-9_]*)\.([A-Za-z_]\w*)(?:\([^`]*\))?`")
BARE_FILE = re.compile(r"(?<![\w./<>*-])([a-z0-9_][\w-]*\.(?:py|mjs|js))\b(?![\w/-])")
URL = re.compile(r"\b[a-z][a-z+.-]*://[^\s)>\]`\"']*")

# What follows a dot in a file's name, not in a module's attribute (`manifest.json`, `site.usearch`).
FILE_SUFFIXES = {
    "py", "js", "mjs", "json", "jsonl", "toml", "lock", "md", "txt", "html", "css", "png", "pdf", "bin",
    "gz", "zip", "tar", "onnx", "usearch", "bib", "whl", "yml", "yaml", "ts", "pyc", "svg",
}  # fmt: skip
# Objects of the browser and of the runtime's public face, named in the docs as `object.attribute`.
JAVASCRIPT_OBJECTS = {"window", "history", "readingRoom", "document", "navigator", "location", "self"}
# Files of Pyodide's npm package, which the docs name: they are not in this repository.
FOREIGN_FILES = {"pyodide.mjs", "pyodide.asm.mjs"}

CODE_FOLDERS = ("builder", "wasm/readingroom_core", "wasm/node", "wasm/runtime", "tests", "scripts")


def documents() -> list[Path]:
    return [
        ROOT / "README.md",
        ROOT / "ARCHITECTURE.md",
        *sorted((ROOT / "docs").glob("*.md")),
        ROOT / "pyproject.toml",
    ]


@cache
def ignored_patterns() -> tuple[str, ...]:
    """.gitignore's names (`node_modules`, `.nox/`): generated folders a doc may name."""
    lines = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    return tuple(line.strip().rstrip("/") for line in lines if line.strip() and not line.startswith("#"))


def generated(relative: str) -> bool:
    """Whether a path lies in what .gitignore ignores (`/site/` only at the root, `node_modules` anywhere)."""
    parts = relative.strip("/").split("/")
    return any(
        fnmatch.fnmatch(parts[0], pattern[1:])
        if pattern.startswith("/")
        else any(fnmatch.fnmatch(part, pattern) for part in parts)
        for pattern in ignored_patterns()
    )


def expand_braces(path: str) -> list[str]:
    match = re.search(r"\{([^{}]*)\}", path)
    if not match:
        return [path]
    return [
        expanded
        for choice in match[1].split(",")
        for expanded in expand_braces(path[: match.start()] + choice + path[match.end() :])
    ]


@cache
def defined_names(module: Path) -> frozenset[str]:
    """The names a module defines or imports at its top level, and its classes' methods.

    The docs write `engine.prepare` for the `prepare` of the module's own class."""
    names: set[str] = set()
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
            names.update(f.name for f in node.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef))
        elif isinstance(node, ast.Assign):
            names.update(t.id for target in node.targets for t in ast.walk(target) if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return frozenset(names)


def module_file(path: Path) -> Path | None:
    """The source of the module at `path` (without suffix): `x.py`, or `x/__init__.py` for a package."""
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return None


@cache
def modules_named() -> dict[str, tuple[Path, ...]]:
    """Every Python module and package of the code, by its short name."""
    found: dict[str, list[Path]] = {}
    for folder in CODE_FOLDERS:
        for source in (ROOT / folder).rglob("*.py"):
            if generated(str(source.relative_to(ROOT))):
                continue
            name = source.parent.name if source.name == "__init__.py" else source.stem
            found.setdefault(name, []).append(source)
    return {name: tuple(paths) for name, paths in found.items()}


@cache
def code_file_names() -> frozenset[str]:
    return frozenset(
        path.name
        for folder in CODE_FOLDERS
        for suffix in ("py", "js", "mjs")
        for path in (ROOT / folder).rglob(f"*.{suffix}")
        if not generated(str(path.relative_to(ROOT)))
    )


def missing_path(relative: str) -> bool:
    """Whether a path relative to the repository names nothing: globs (`*`, `<name>`) need one match."""
    if generated(relative):
        return False
    for candidate in expand_braces(re.sub(r"<[^<>]*>", "*", relative)):
        folder = candidate.endswith("/")
        candidate = candidate.rstrip("/")
        if "*" in candidate:
            if not any(ROOT.glob(candidate)):
                return True
        elif folder and not (ROOT / candidate).is_dir():
            return True
        elif not (ROOT / candidate).exists():
            # `builder/site/data.write_query_encoder`: a module's path, then one of its names.
            stem, dot, name = candidate.rpartition(".")
            source = module_file(ROOT / stem) if dot and "/" not in name else None
            if source is None or name not in defined_names(source):
                return True
    return False


def clean(reference: str) -> str:
    return reference.split("#")[0].rstrip(".,:;")


def repository_path(reference: str) -> str | None:
    """`stages/embed.py` -> `builder/stages/embed.py`; None for the built site's `site/…`."""
    first, _, rest = reference.partition("/")
    if first in SHORT_FOLDERS:
        return f"{SHORT_FOLDERS[first]}/{rest}"
    if first == "site":
        return f"{SITE_FOLDER}/{rest}" if re.search(r"\.py\b", rest) else None
    return reference


def missing_module(dotted: str, attribute: str | None) -> bool:
    """`builder.site.data`: the longest prefix that is a module, then at most one name defined in it."""
    parts = dotted.split(".")
    top = ROOT / ("wasm" if parts[0] == "readingroom_core" else "") / parts[0]
    source, depth = module_file(top), 1
    while depth < len(parts) and module_file(top.joinpath(*parts[1 : depth + 1])) is not None:
        source, depth = module_file(top.joinpath(*parts[1 : depth + 1])), depth + 1
    if source is None:
        return True
    names = parts[depth:] + ([attribute] if attribute else [])
    return bool(names) and names[0] not in defined_names(source)


def missing_short_dotted(module: str, name: str, backticked: bool) -> bool:
    """`papers.PaperRecord`: some module of that short name defines the name."""
    if name in FILE_SUFFIXES:
        return False
    sources = modules_named().get(module)
    if sources is None:
        # Plain prose says "e.g." and "i.e."; a backticked `object.attribute` of no module is checked.
        return backticked and module not in JAVASCRIPT_OBJECTS
    return not any(name in defined_names(source) for source in sources)


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def prose_references(text: str) -> list[tuple[int, str]]:
    """Every path, module and file a document names that does not exist, as (line, reference)."""
    wrong: list[tuple[int, str]] = []
    text = URL.sub(lambda url: " " * len(url[0]), text)  # a URL's path is another site's
    for match in PATH.finditer(text):
        reference = clean(match[1])
        relative = repository_path(reference)
        if relative is not None and missing_path(relative):
            wrong.append((line_of(text, match.start()), reference))
    for match in DOTTED_MODULE.finditer(text):
        if missing_module(match[1], match[2]):
            wrong.append((line_of(text, match.start()), match[0]))
    backticked = {m.start(1) for m in BACKTICKED_DOTTED.finditer(text)}
    for match in SHORT_DOTTED.finditer(text):
        if match[1] in ("builder", "readingroom_core") or match[0].rpartition(".")[2] in FILE_SUFFIXES:
            continue  # `builder.cli` is checked above; `pyodide.asm.mjs` is a file's name
        if missing_short_dotted(match[1], match[2], match.start() in backticked):
            wrong.append((line_of(text, match.start()), f"{match[1]}.{match[2]}"))
    for match in BARE_FILE.finditer(text):
        if match[1] not in code_file_names() and match[1] not in FOREIGN_FILES:
            wrong.append((line_of(text, match.start()), match[1]))
    return wrong


def code_map_entries(text: str) -> list[tuple[int, str, list[str]]]:
    """ARCHITECTURE.md's code map as (line, path of the entry, files its description names).

    The map is the fenced block under "## Code map": a name column, indented by folder, and a
    description column; a folder line (`stages/`) holds the entries indented below it.
    """
    start = text.index("```", text.index("## Code map")) + len("```")
    block = text[start : text.index("```", start)]
    first_line = line_of(text, start)
    entries: list[tuple[int, str, list[str]]] = []
    folders: list[tuple[int, str]] = []  # (indent, path) of the open folder lines
    context = ""  # the folder a description's file names are relative to
    for number, line in enumerate(block.splitlines(), start=first_line):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        names, _, description = line.strip().partition("  ")
        if indent >= 20:  # a description's continuation line
            names, description = "", line.strip()
        else:
            while folders and folders[-1][0] >= indent:
                folders.pop()
        parent = folders[-1][1] if folders else ""
        for name in filter(None, (n.strip() for n in re.split(r",|\s\+\s", names))):
            path = parent + name
            entries.append((number, path, []))
            context = path if name.endswith("/") else parent
            if name.endswith("/"):
                folders.append((indent, path))
        described = BARE_FILE.findall(description)
        if described:
            # A description's files live in its entry's folder (or below it: tests/ names support/'s).
            entries.append((number, context, described))
    return entries


def missing_code_map_entries(text: str) -> list[tuple[int, str]]:
    wrong: list[tuple[int, str]] = []
    for number, path, described in code_map_entries(text):
        if not described:
            if missing_path(path):
                wrong.append((number, path))
            continue
        for name in described:
            if not (ROOT / path / name).is_file() and not any((ROOT / path).rglob(name)):
                wrong.append((number, path + name))
    return wrong


def test_the_docs_name_only_what_exists():
    wrong = [
        f"{document.relative_to(ROOT)}:{line}: {reference}"
        for document in documents()
        for line, reference in prose_references(document.read_text(encoding="utf-8"))
    ]
    assert wrong == [], "named but missing:\n" + "\n".join(wrong)


def test_the_code_map_names_only_what_exists():
    architecture = ROOT / "ARCHITECTURE.md"
    wrong = [
        f"ARCHITECTURE.md:{line}: {path}" for line, path in missing_code_map_entries(architecture.read_text())
    ]
    assert wrong == [], "in the code map but missing:\n" + "\n".join(wrong)


def test_the_code_map_is_read_as_a_tree():
    entries = {
        path
        for _, path, described in code_map_entries((ROOT / "ARCHITECTURE.md").read_text())
        if not described
    }
    assert {
        "builder/",
        "builder/cli.py",
        "builder/stages/",
        "builder/stages/fetch/",
        "wasm/runtime/",
    } <= entries
    assert "wasm/readingroom_core/browser.py" in entries


def test_the_checks_notice_an_invented_path():
    assert [ref for _, ref in prose_references("see `builder/stages/parse.py` and scripts/x.py.")] == [
        "builder/stages/parse.py",
        "scripts/x.py",
    ]
    assert [ref for _, ref in prose_references("(`stages/glyphs.py`, readingroom_core/store.py)")] == [
        "stages/glyphs.py",
        "readingroom_core/store.py",
    ]
    assert [ref for _, ref in prose_references("wasm/runtime/y.js and docs/nothing/ and tests/support/")] == [
        "wasm/runtime/y.js",
        "docs/nothing/",
    ]
    assert [
        ref for _, ref in prose_references("`builder.site.nothing`, readingroom_core.engine.nothing")
    ] == [
        "builder.site.nothing",
        "readingroom_core.engine.nothing",
    ]
    assert [ref for _, ref in prose_references("`builder.nothing:main`, `builder.cli:nothing`")] == [
        "builder.nothing:main",
        "builder.cli:nothing",
    ]
    assert [ref for _, ref in prose_references("`papers.Nothing`, `nomodule.thing`, engine.nothing")] == [
        "papers.Nothing",
        "nomodule.thing",
        "engine.nothing",
    ]
    assert [ref for _, ref in prose_references("`builder/site/data.nothing`, `glyphs_moved.py`")] == [
        "builder/site/data.nothing",
        "glyphs_moved.py",
    ]
    invented = "```\nbuilder/  the build\n  commands/  bodies: build.py, gone.py\n    nothing.py  x\n```\n"
    assert missing_code_map_entries("## Code map\n" + invented) == [
        (4, "builder/commands/gone.py"),
        (5, "builder/commands/nothing.py"),
    ]


def test_the_checks_let_real_names_pass():
    text = (
        "`builder/stages/fetch/`, [m](docs/measurements.md#x), `stages/embed.py`, `site/data.py`, "
        "builder/{cli,config}.py, docs/measurements/<name>.json, tests/data/questions-*.jsonl, "
        "`builder.cli:main`, `builder.stages.fetch`, `readingroom_core.browser.open_site`, "
        "`papers.PaperRecord`, `window.readingRoom`, `manifest.json`, `pyodide.mjs`, engine.py, "
        "`builder/site/data.write_query_encoder`, wasm/node_modules, e.g. this, i.e. that"
    )
    assert prose_references(text) == []


def test_urls_and_the_built_site_are_not_repository_paths():
    text = (
        "https://github.com/you/repo/tree/main/builder/nothing.py, site/build-report.json, site/, "
        "`<out>.usearch`, `--out site` writes `site.usearch`, runtime/engine-<hash>/, data/papers.*.json, "
        "../shared/arxiv-mirror/pdf/x.pdf, /tmp/builder/x, `.cache/readingroom/`"
    )
    assert prose_references(text) == []
