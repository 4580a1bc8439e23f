"""Every script in scripts/ imports and answers, each is run by something, and each bench records.

A script whose import breaks (a module moved, a function renamed) fails here, not at the next
`nox -s bench`; a file in scripts/ (or wasm/node/) that nothing runs fails too, so a one-off study
lives in its commit, not in the tree. The benches run on tiny data where that is cheap (bench_parse on
the generated mirror, bench_suggest and rankings.py on a two-paper site); where one would take minutes
(bench_build builds the mirror three times, bench_encoder exports two encoders) only its measuring is
replaced, so its options, its record and the page rendered from it are still the real ones.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = REPO_ROOT / "scripts"
TESTS = REPO_ROOT / "tests"
sys.path[:0] = [str(folder) for folder in (SCRIPTS, TESTS) if str(folder) not in sys.path]

from builder.offline import load_onnxruntime_first, use_offline_environment  # noqa: E402

use_offline_environment()
load_onnxruntime_first()  # scripts import usearch, which must come after onnxruntime

from support import corpus  # noqa: E402

from builder.cli import main as builder_main  # noqa: E402
from builder.site import runtime  # noqa: E402

SCRIPT_FILES = sorted(SCRIPTS.glob("*.py"))
NOXFILE = REPO_ROOT / "noxfile.py"
SITE_PAPERS = corpus.PAPERS[:2]


def load(path: Path) -> ModuleType:
    """The script as a module, under its own name: the scripts import each other by it."""
    loaded = sys.modules.get(path.stem)
    if loaded is not None and Path(getattr(loaded, "__file__", "")).resolve() == path.resolve():
        return loaded
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def run(name: str, *args: object) -> int:
    """`python scripts/<name>.py ARGS`, in this process (its record names that command)."""
    path = SCRIPTS / f"{name}.py"
    module = load(path)
    argv = [str(arg) for arg in args]
    saved = sys.argv
    sys.argv = [str(path), *argv]
    try:
        return module.main(argv)
    finally:
        sys.argv = saved


def benches() -> dict[str, Path]:
    """Each bench name in measurements.BENCHES and the script its description names."""
    measurements = load(SCRIPTS / "measurements.py")
    found = {}
    for bench, (_, what) in measurements.BENCHES.items():
        match = re.match(r"(scripts/\w+\.py):", what)
        assert match, f"BENCHES[{bench!r}] must start with the script that records it: {what!r}"
        found[bench] = REPO_ROOT / match.group(1)
    return found


@pytest.fixture
def records(tmp_path, monkeypatch) -> Path:
    """Where `--record` writes during a test, instead of docs/measurements/."""
    folder = tmp_path / "records"
    monkeypatch.setattr(load(SCRIPTS / "measurements.py"), "RECORDS", folder)
    return folder


def read_record(records: Path, bench: str) -> dict:
    record = json.loads((records / f"{bench}.json").read_text(encoding="utf-8"))
    measurements = load(SCRIPTS / "measurements.py")
    title = measurements.BENCHES[bench][0]
    assert f"## {title}" in measurements.render(measurements.load_records(records))
    return record


@pytest.fixture(scope="module")
def questions(tmp_path_factory) -> Path:
    return corpus.write_questions(tmp_path_factory.mktemp("questions") / "questions.jsonl")


@pytest.fixture(scope="module")
def small_site(tmp_path_factory, request) -> Path:
    """Two generated papers built into a site, offline from a mirror folder.

    The browser runtime's Python snapshot is left empty: nothing here reads it, and making it boots
    Pyodide in Node three times. The encoder exports (one per model and format: minutes on two cores)
    are kept in pytest's cache folder, so only a first run makes them.
    """
    root = tmp_path_factory.mktemp("small-site")
    mirror = corpus.write_mirror(root / "mirror", SITE_PAPERS)
    listed = root / "readingroom.toml"
    entries = "".join(f'[[paper]]\nid = "{arxiv_id}"\n' for arxiv_id in SITE_PAPERS)
    listed.write_text(f'[site]\ntitle = "Scripts"\n\n{entries}', encoding="utf-8")
    cache = root / "cache"
    kept = getattr(request.config, "cache", None)
    if kept is not None:
        cache.mkdir()
        (cache / "encoder").symlink_to(kept.mkdir("readingroom-encoder"), target_is_directory=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runtime, "python_runtime", lambda wheel: (b"", b""))
        command = ["build", "--corpus", listed, "--out", root / "site", "--cache", cache]
        command += ["--mirror", mirror, "--offline", "--no-progress"]
        assert builder_main([str(word) for word in command]) == 0
    return root / "site"


@pytest.mark.parametrize("path", SCRIPT_FILES, ids=lambda path: path.name)
def test_a_script_imports_and_answers_help(path, capsys):
    module = load(path)
    if not hasattr(module, "main"):  # a library of other scripts: importing it is what can break
        assert any(re.search(rf"^\s*from {path.stem} import", p.read_text(), re.M) for p in SCRIPT_FILES)
        return
    with pytest.raises(SystemExit) as exited:
        module.main(["--help"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("usage:")


def test_every_path_a_script_names_in_the_repository_exists():
    """Question sets and samples under tests/data: a script skips a set it cannot find, silently."""

    def paths(value: object):
        if isinstance(value, Path):
            yield value
        elif isinstance(value, dict):
            for item in value.values():
                yield from paths(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                yield from paths(item)

    missing = [
        f"{path.name}: {name} = {named}"
        for path in SCRIPT_FILES
        for name, value in vars(load(path)).items()
        for named in paths(value)
        if named.is_absolute() and named.resolve().is_relative_to(REPO_ROOT) and not named.exists()
    ]
    assert not missing


def test_every_script_and_node_helper_is_run_by_something():
    """Named in noxfile.py, a workflow, a test or another script (wasm/node/: in the builder too)."""
    runners = [NOXFILE, *(REPO_ROOT / ".github" / "workflows").glob("*.yml"), *TESTS.rglob("*.py")]
    texts = {path: path.read_text(encoding="utf-8") for path in [*runners, *SCRIPT_FILES]}

    def named(path: Path, texts: dict[Path, str]) -> bool:
        imported = re.compile(rf"^\s*(from {path.stem} import|import {path.stem}\b)", re.M)
        return any(
            other != path and (path.name in text or imported.search(text)) for other, text in texts.items()
        )

    unused = [path.name for path in SCRIPTS.iterdir() if path.is_file() and not named(path, texts)]
    assert not unused, f"nothing runs {unused}: run them from nox, a test or a script, or git rm them"

    node = sorted(path for path in (REPO_ROOT / "wasm" / "node").iterdir() if path.is_file())
    texts |= {path: path.read_text(encoding="utf-8") for path in (REPO_ROOT / "builder").rglob("*.py")}
    texts |= {path: path.read_text(encoding="utf-8") for path in node}
    assert not [path.name for path in node if not named(path, texts)]


def test_every_bench_records_under_its_name_and_nox_runs_it(capsys):
    nox_text = NOXFILE.read_text(encoding="utf-8")
    for bench, path in benches().items():
        source = path.read_text(encoding="utf-8")
        assert f'begin("{bench}"' in source or f'bench="{bench}"' in source, path.name
        assert f'"scripts/{path.name}"' in nox_text, f"nox -s bench does not run {path.name}"
        with pytest.raises(SystemExit):
            load(path).main(["--help"])
        assert "record" in capsys.readouterr().out, f"{path.name} cannot write its record"
    begun = {name for path in SCRIPT_FILES for name in re.findall(r'begin\("(\w+)"', path.read_text())}
    assert begun <= set(benches()), "a bench records under a name measurements.BENCHES lacks"


def test_nox_passes_record_to_every_bench_it_runs():
    """Every `session.run("python", "scripts/X.py", ...)` in noxfile.py but the page's render records."""
    calls = [
        node
        for node in ast.walk(ast.parse(NOXFILE.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
    ]
    ran = []
    for call in calls:
        words = [
            arg.value for arg in call.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
        ]
        script = next((word for word in words if re.fullmatch(r"scripts/\w+\.py", word)), None)
        if script is None or script == "scripts/measurements.py":
            continue
        ran.append(script)
        assert "--record" in words, f"noxfile.py runs {script} without --record"
    assert "scripts/bench_parse.py" in ran


def test_bench_parse_records_the_generated_mirror(tmp_path, questions, records):
    mirror = corpus.write_mirror(tmp_path / "mirror", corpus.PAPERS[:1])
    assert run("bench_parse", "--mirror", mirror, "--questions", questions, "--record") == 0
    record = read_record(records, "parse")
    assert record["command"].startswith("python scripts/bench_parse.py --mirror ")
    results = record["results"]
    assert results["parse"]["papers"] == 1 and results["parse"]["failures"] == []
    assert results["text"]["evidence_found"] == results["text"]["evidence_checked"] > 0
    assert results["chunk"]["chunks"] > 0 and results["errors"] == {}
    assert results["chunk"]["longest_with_context_and_specials"] <= results["chunk"]["model_limit"]


def test_bench_suggest_records_on_a_small_site(small_site, questions, records):
    args = ["--site", small_site, "--questions", questions, "--repeat", 1, "--no-pyodide", "--record"]
    assert run("bench_suggest", *args) == 0
    rows = read_record(records, "suggest")["results"]
    asked = len(questions.read_text(encoding="utf-8").splitlines())
    assert [(row["interpreter"], row["set"], row["queries"]) for row in rows] == [
        ("cpython", "as written", asked),
        ("cpython", "one typo", asked),
    ]


@pytest.mark.parametrize(
    ("name", "bench", "args"),
    [
        ("bench_build", "build", ["--mirror", "MIRROR"]),
        ("bench_encoder", "encoder", ["--site", "SITE", "--json"]),
    ],
)
def test_a_bench_too_slow_to_run_here_records_what_it_measures(name, bench, args, records, monkeypatch):
    figures = {"figure": {"seconds": 1.5, "bytes": 2048}}
    measured = []
    monkeypatch.setattr(
        load(SCRIPTS / f"{name}.py"), "measure", lambda options: measured.append(options) or figures
    )
    assert run(name, *args, "--record") == 0
    assert len(measured) == 1
    record = read_record(records, bench)
    assert record["results"] == figures
    assert record["command"] == f"python scripts/{name}.py {' '.join(args)} --record"


def test_rankings_hold_a_site_to_the_rankings_it_wrote(small_site, questions, tmp_path, monkeypatch, capsys):
    rankings = load(SCRIPTS / "rankings.py")
    monkeypatch.setattr(rankings, "QUESTION_SETS", {"generated": questions})
    before = tmp_path / "before.json"
    assert rankings.main(["--site", str(small_site), "--out", str(before)]) == 0
    ranked = json.loads(before.read_text(encoding="utf-8"))
    assert set(ranked) == {f"generated/{mode}" for mode in rankings.MODES}
    assert rankings.main(["--site", str(small_site), "--against", str(before)]) == 0
    assert "rankings identical" in capsys.readouterr().out

    question, ids = next((q, ids) for q, ids in ranked["generated/hybrid"].items() if ids)
    ranked["generated/hybrid"][question] = ["a-chunk-id-the-site-never-had", *ids[1:]]
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(ranked), encoding="utf-8")
    assert rankings.main(["--site", str(small_site), "--against", str(changed)]) == 1
    assert f"generated/hybrid {question}: ['a-chunk-id-the-site-never-had'" in capsys.readouterr().out
