"""The command line over a table of bad inputs: each ends in one line on stderr naming the thing at fault
and what to do, never a traceback, and leaves every file of its folder (corpus file, lock file, cache,
site) as it was.

Each case runs in a folder of its own holding a good corpus file unless the case writes another; the
cases that need a built site copy the suite's (support.builds.built_sites) and damage the copy. Most run the
real CLI, `python -m builder` in a subprocess, four at a time (each is mostly interpreter start-up);
the variants of one corpus field (`main=True`) go through builder.cli.main in this process, the same
parser and the same error boundary, in a fraction of the time.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import builder
from builder.cli import main

REPO = Path(builder.__file__).resolve().parent.parent
GOOD = '[site]\ntitle = "Bad inputs"\n\n[[paper]]\nid = "1904.08375"\ntags = ["t0"]\n'
NOT_UTF8 = b'[site]\ntitle = "Caf\xe9 list"\n'  # Latin-1, as an editor set to it saves the file
SHA = "ab" * 32
LIST = ["list", "--corpus", "corpus.toml"]
FETCH = ["fetch", "--corpus", "corpus.toml", "--cache", "cache", "--offline", "--no-progress"]
BUILD = ["build", "--corpus", "corpus.toml", "--cache", "cache", "--out", "out", "--offline", "--no-progress"]
QUERY = ["query", "predicted queries appended to documents", "--site", "site"]
EVAL = ["eval", "--site", "none", "--questions"]


def corpus_with(site: str = "", paper: str = "") -> dict[str, str]:
    """The good corpus file with a line added to its [site] table or to its paper."""
    return {"corpus.toml": f'[site]\ntitle = "Bad inputs"\n{site}\n[[paper]]\nid = "1904.08375"\n{paper}\n'}


def site_title(toml_string: str) -> dict[str, str]:
    return {"corpus.toml": f"[site]\ntitle = {toml_string}\n"}


def lock(papers: object) -> dict[str, str]:
    return {"corpus.lock": json.dumps({"comment": "written by hand", "papers": papers})}


def with_corpus(command: list[str], corpus: str) -> list[str]:
    return [command[0], "--corpus", corpus, *command[3:]]


def flip_middle_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def invert(path: Path) -> None:
    """Every byte flipped: whichever block of the file a query reads fails its checksum."""
    path.write_bytes(bytes(byte ^ 0xFF for byte in path.read_bytes()))


def cut_in_half(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def one(site: Path, pattern: str) -> Path:
    [path] = site.glob(pattern)
    return path


@dataclass(frozen=True)
class Case:
    name: str
    args: list[str]
    names: str  # what the one line must say
    files: dict[str, str | bytes | None] = field(default_factory=dict)  # None: a folder
    site: Callable[[Path], None] | None = None  # damage done to a copy of a built site in ./site
    usage: bool = False  # refused by argparse: its usage lines, then one error line
    main: bool = False  # through builder.cli.main in this process


CASES = [
    # The corpus file, for every command that reads it: not UTF-8, a folder, missing, not TOML
    *[
        Case(f"corpus not UTF-8: {args[0]}", args, "corpus.toml: the corpus file is not UTF-8 text", {"corpus.toml": NOT_UTF8})
        for args in (
            LIST,
            BUILD,
            FETCH,
            ["add", "--corpus", "corpus.toml", "2005.11401"],
            ["remove", "--corpus", "corpus.toml", "1904.08375"],
            ["import-bibtex", "--corpus", "corpus.toml", "refs.bib"],
            ["suggest", "--corpus", "corpus.toml", "--cache", "cache"],
        )
    ],
    Case("corpus a folder: list", with_corpus(LIST, "lists"), "lists is a folder, not a corpus file", {"lists": None}),
    Case("corpus a folder: build", with_corpus(BUILD, "lists"), "lists is a folder, not a corpus file", {"lists": None}),
    Case("corpus a folder: add", ["add", "--corpus", "lists", "2005.11401"], "lists is a folder", {"lists": None}, main=True),
    Case("corpus missing: list", with_corpus(LIST, "none.toml"), "none.toml: no such corpus file"),
    Case("corpus missing: build", with_corpus(BUILD, "none.toml"), "none.toml: no such corpus file"),
    Case("corpus missing: add", ["add", "--corpus", "none.toml", "2005.11401"], "none.toml: no such corpus file", main=True),
    Case("corpus not TOML", LIST, "corpus.toml: not valid TOML", {"corpus.toml": "[[paper]\n"}),
    Case("corpus papers of numbers", LIST, "'paper' must be a list of [[paper]] tables", {"corpus.toml": "paper = [1, 2, 3]\n"}, main=True),
    Case("a paper listed twice", LIST, "1904.08375 is listed twice", {"corpus.toml": GOOD + '[[paper]]\nid = "1904.08375v2"\n'}, main=True),
    # Corpus fields: bounds, control and bidi characters, blank tags
    Case("title of 1 MB", BUILD, "[site] title has 1000000 characters; at most 200", site_title(f'"{"t" * 1_000_000}"')),
    Case("description of 1 MB", BUILD, "[site] description has 1000000 characters; at most 2000", corpus_with(f'description = "{"d" * 1_000_000}"')),
    Case("NUL in the title", LIST, "[site] title holds U+0000 (a control character) at character 4", site_title('"Bad\\u0000"')),
    Case("ESC in the title", BUILD, "[site] title holds U+001B (a control character)", site_title('"\\u001b[31mRed"')),
    Case("RLO in the title", LIST, "[site] title holds U+202E (a bidirectional override) at character 3", site_title('"ab\u202ecd"')),
    Case("line break in the title", LIST, "[site] title holds U+000A (a control character)", site_title('"two\\nlines"'), main=True),
    Case("ESC in the description", LIST, "[site] description holds U+001B", corpus_with('description = "a\\u001b[2Jb"'), main=True),
    Case("DEL in the model", LIST, "[site] model holds U+007F", corpus_with('model = "x\\u007f"'), main=True),
    Case("LRI in a tag", LIST, "[[paper]] #1 (1904.08375): tag '\\u2066rag' holds U+2066 (a bidirectional override)", corpus_with(paper='tags = ["\u2066rag"]')),
    Case("ESC in a tag", LIST, "tag 'a\\x1bb' holds U+001B", corpus_with(paper='tags = ["a\\u001bb"]'), main=True),
    Case("C1 control in a note", LIST, "[[paper]] #1 (1904.08375): note holds U+009B (a control character)", corpus_with(paper='note = "a\\u009bb"'), main=True),
    Case("PDI in a note", LIST, "note holds U+2069 (a bidirectional override)", corpus_with(paper='note = "a\u2069"'), main=True),
    Case("empty tag", BUILD, "[[paper]] #1 (1904.08375): tag '' is blank", corpus_with(paper='tags = [""]')),
    Case("blank tag", LIST, "tag '  ' is blank", corpus_with(paper='tags = ["  "]')),
    Case("tag of 65 characters", LIST, "has 65 characters; at most 64", corpus_with(paper=f'tags = ["{"t" * 65}"]'), main=True),
    Case("note of 2001 characters", LIST, "note has 2001 characters; at most 2000", corpus_with(paper=f'note = "{"n" * 2001}"'), main=True),
    Case("base_url on another host", BUILD, "base_url '//evil.example/' must be an absolute path", corpus_with('base_url = "//evil.example/"')),
    Case("--base-url with ..", [*BUILD, "--base-url", "/a/../"], "base_url '/a/../' must be an absolute path", main=True),
    # Ids and fields given on the command line
    Case("add an empty tag", ["add", "--corpus", "corpus.toml", "2005.11401", "--tag", ""], "--tag: tag '' is blank"),
    Case("add a note with ESC", ["add", "--corpus", "corpus.toml", "2005.11401", "--note", "a\x1bb"], "--note holds U+001B"),
    Case("add an id short of a digit", ["add", "--corpus", "corpus.toml", "2005.1140"], "'2005.1140' is not an arXiv id"),
    Case("add an id in full-width digits", ["add", "--corpus", "corpus.toml", "2005.１１４０１"], "in ASCII", main=True),
    Case("remove a word", ["remove", "--corpus", "corpus.toml", "attention"], "'attention' is not an arXiv id"),
    Case("import a folder as BibTeX", ["import-bibtex", "--corpus", "corpus.toml", "refs"], "refs is a folder, not a BibTeX file", {"refs": None}),
    Case("import a missing BibTeX file", ["import-bibtex", "--corpus", "corpus.toml", "none.bib"], "none.bib: no such BibTeX file", main=True),
    # The lock file: wrong shapes, named where it is read
    Case("lock papers [1,2,3]", FETCH, 'corpus.lock: the lock file must be {"papers": {ID: {"version", "pdf_sha256"}, …}}; found "papers" as a JSON array', lock([1, 2, 3])),
    Case("lock papers [1,2,3]: build", BUILD, 'found "papers" as a JSON array', lock([1, 2, 3])),
    Case("lock a JSON array", FETCH, "found a JSON array", {"corpus.lock": "[1, 2, 3]"}),
    Case("lock without papers", FETCH, 'found no "papers"', {"corpus.lock": "{}"}, main=True),
    Case("lock entry a number", FETCH, "corpus.lock: entry '1904.08375' must be", lock({"1904.08375": 5})),
    Case("lock entry without checksum", FETCH, 'found {"version": "v1"}', lock({"1904.08375": {"version": "v1"}})),
    Case("lock version a number", FETCH, "entry '1904.08375' must be", lock({"1904.08375": {"version": 2, "pdf_sha256": SHA}}), main=True),
    Case("lock entry under a path", FETCH, "entry '../x' must be", lock({"../x": {"version": "v1", "pdf_sha256": SHA}}), main=True),
    Case("lock not JSON", FETCH, "corpus.lock: the lock file is not JSON", {"corpus.lock": '{"papers": '}),
    Case("lock not UTF-8", FETCH, "corpus.lock: the lock file is not UTF-8 text", {"corpus.lock": b'{"papers": {"\xff": 1}}'}),
    Case("lock a folder", FETCH, "corpus.lock is a folder, not a lock file", {"corpus.lock": None}),
    # Other files and folders the commands are pointed at
    Case("--pdfs a file", [*FETCH, "--pdfs", "corpus.toml"], "--pdfs corpus.toml is not a folder"),
    Case("--mirror without pdf/", [*FETCH, "--mirror", "mirror"], "mirror mirror has no pdf/ folder", {"mirror": None}, main=True),
    Case("stats with no build", ["stats", "--out", "none"], "none/build-report.json does not exist"),
    Case("stats on a damaged report", ["stats", "--out", "out"], "out/build-report.json is damaged", {"out/build-report.json": '{"papers": 1'}),
    Case("stats on a report of another shape", ["stats", "--out", "out"], "out/build-report.json is damaged", {"out/build-report.json": "[1]"}, main=True),
    Case("serve no site", ["serve", "--site", "none", "--port", "0"], "none/manifest.json does not exist"),
    Case("serve on port 99999", ["serve", "--site", "none", "--port", "99999"], "99999 is not a port", usage=True),
    Case("query no site", [*QUERY[:3], "none"], "none/manifest.json does not exist"),
    Case("query a file as the site", [*QUERY[:3], "corpus.toml"], "corpus.toml/manifest.json does not exist", main=True),
    Case("eval without its questions", [*EVAL, "q.jsonl"], "q.jsonl: no such questions file"),
    Case("eval questions not UTF-8", [*EVAL, "q.jsonl"], "q.jsonl: the questions file is not UTF-8 text", {"q.jsonl": b'{"id": "\xff"}\n'}),
    Case("eval questions a folder", [*EVAL, "q"], "q is a folder, not a questions file", {"q": None}, main=True),
    Case("eval questions not questions", [*EVAL, "q.jsonl"], "q.jsonl:2: not a question line", {"q.jsonl": '\n{"id": 1}\n'}),
    # A built site, damaged
    Case("query: passage texts damaged", [*QUERY, "--mode", "bm25"], "the site in site: data/texts.", site=lambda site: invert(one(site, "data/texts.*.bin"))),
    Case("query: manifest not JSON", [*QUERY, "--mode", "bm25"], "the site in site: manifest.json cannot be read", site=lambda site: (site / "manifest.json").write_text('{"format_version": ')),
    Case("query: encoder damaged", QUERY, "the site in site: model/query-encoder.", site=lambda site: flip_middle_byte(one(site, "model/query-encoder.*.onnx.gz"))),
    Case("query: chunks cut short", [*QUERY, "--mode", "bm25"], "the site in site: data/chunks.", site=lambda site: cut_in_half(one(site, "data/chunks.*.bin.gz")), main=True),
    Case("query: terms damaged", [*QUERY, "--mode", "bm25"], "the site in site: data/terms.", site=lambda site: invert(one(site, "data/terms.*.json")), main=True),
]  # fmt: skip


def snapshot(folder: Path) -> dict[str, str]:
    """Every file and folder under `folder`, with its contents' sha256."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        if path.is_file()
        else "/"
        for path in sorted(folder.rglob("*"))
    }


@dataclass(frozen=True)
class Ended:
    code: int
    out: str
    err: str
    changed: list[str]  # paths of the case's folder that differ after the command


def run_cli(args: list[str], folder: Path) -> tuple[int, str, str]:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "wasm")])}
    result = subprocess.run(
        [sys.executable, "-m", "builder", *args],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return result.returncode, result.stdout, result.stderr


def run_main(args: list[str], folder: Path) -> tuple[int, str, str]:
    """main() in `folder`; an exception that escapes it is what the CLI would print as a traceback."""
    out, err = io.StringIO(), io.StringIO()
    here = Path.cwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
    except BaseException:
        code, err = 1, io.StringIO(err.getvalue() + traceback.format_exc())
    finally:
        os.chdir(here)
    return code, out.getvalue(), err.getvalue()


def run_case(case: Case, folder: Path) -> Ended:
    before = snapshot(folder)
    code, out, err = (run_main if case.main else run_cli)(case.args, folder)
    after = snapshot(folder)
    changed = sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))
    return Ended(code, out, err, changed)


def prepare(case: Case, folder: Path, built: Path) -> None:
    folder.mkdir()
    (folder / "corpus.toml").write_text(GOOD, encoding="utf-8")
    (folder / "refs.bib").write_text("@article{a, eprint = {2005.11401}, archivePrefix = {arXiv}}\n")
    for name, content in case.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            path.unlink(missing_ok=True)
            path.mkdir()
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    if case.site is not None:
        shutil.copytree(built, folder / "site")
        case.site(folder / "site")


@pytest.fixture(scope="module")
def ended(tmp_path_factory, built_sites) -> dict[str, Ended]:
    root = tmp_path_factory.mktemp("bad-inputs")
    folders = {case.name: root / f"case-{number:02d}" for number, case in enumerate(CASES)}
    for case in CASES:
        prepare(case, folders[case.name], built_sites.first)
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = {case.name: pool.submit(run_case, case, folders[case.name]) for case in CASES if not case.main}
        results = {case.name: run_case(case, folders[case.name]) for case in CASES if case.main}
        return {**results, **{name: run.result() for name, run in runs.items()}}


def test_the_table_names_each_case_once_and_runs_most_through_the_real_cli():
    assert len({case.name for case in CASES}) == len(CASES)
    assert sum(not case.main for case in CASES) > sum(case.main for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_bad_input_ends_in_one_line_naming_it(ended, case):
    result = ended[case.name]
    assert "Traceback" not in result.err + result.out, result.err[-3000:]
    lines = result.err.strip().splitlines()
    if case.usage:  # argparse: "usage: …" (wrapped), then "python -m builder …: error: …"
        assert lines[0].startswith("usage: python -m builder") and ": error: argument" in lines[-1], lines
    else:
        assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert case.names in lines[-1]
    assert result.code == 2
    assert result.changed == [], "files changed or created"
