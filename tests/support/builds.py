"""The suite's builds, shared by the builder and browser layers: the generated corpus on a loopback arXiv,
the mirror papers, and the sites built from them once per session.

A pytest plugin: the layers' conftests register it (`pytest_configure`), so each session fixture here
has one instance for every layer; test modules import the names and helpers.
"""

from dataclasses import dataclass
from pathlib import Path

import pytest

from builder.paths import SHARED_MIRROR, bundled_model_dir
from support import corpus
from support.arxiv_server import FakeArxiv


@pytest.fixture(scope="session")
def mirror_dir() -> Path:
    if not (SHARED_MIRROR / "pdf").is_dir():
        pytest.skip(f"{SHARED_MIRROR} is not present")
    return SHARED_MIRROR


@pytest.fixture(scope="session")
def model_dir() -> Path:
    return bundled_model_dir()


SMALL_PAPERS = corpus.PAPERS[:3]  # generated, 5 pages each (ids of three small mirror papers)
ADDED_PAPER = corpus.PAPERS[3]  # the renormalization-group paper


@dataclass(frozen=True)
class GeneratedCorpus:
    """The suite's four papers on a loopback arXiv (tests/support/corpus.py), and their questions."""

    server: FakeArxiv
    questions: Path  # JSONL, as ../shared/eval/dev-questions.jsonl

    @property
    def source(self) -> list[str]:
        """Build arguments that fetch from the loopback arXiv."""
        return ["--arxiv-api", self.server.api_url, "--arxiv-delay", "0"]


@pytest.fixture(scope="session")
def generated_corpus(tmp_path_factory) -> GeneratedCorpus:
    with FakeArxiv() as server:
        corpus.serve(server)
        questions = corpus.write_questions(tmp_path_factory.mktemp("questions") / "questions.jsonl")
        yield GeneratedCorpus(server, questions)


@pytest.fixture(scope="session")
def generated_mirror(tmp_path_factory) -> Path:
    """The four papers as a local mirror folder (read-only by convention: copy it to change it)."""
    return corpus.write_mirror(tmp_path_factory.mktemp("generated-mirror"))


@dataclass(frozen=True)
class BuiltSites:
    """Two builds sharing one cache: the small papers, then the same list plus one paper."""

    first: Path
    second: Path
    cache: Path


def write_corpus(path: Path, ids, title: str = "Test site") -> Path:
    entries = "\n".join(f'[[paper]]\nid = "{i}"\ntags = ["t{n % 2}"]\n' for n, i in enumerate(ids))
    path.write_text(f'[site]\ntitle = "{title}"\n\n{entries}', encoding="utf-8")
    return path


def run_build(corpus_file: Path, out: Path, cache: Path, source: Path | GeneratedCorpus, *extra: str) -> int:
    """`build` from a mirror folder (offline) or from the generated corpus's loopback arXiv."""
    from builder.cli import main

    args = ["build", "--corpus", str(corpus_file), "--out", str(out), "--cache", str(cache), "--no-progress"]
    if isinstance(source, GeneratedCorpus):
        args += source.source
    else:
        args += ["--mirror", str(source), "--offline"]
    return main([*args, *extra])


MIRROR_PAPERS = ("1904.08375", "2412.19048", "2305.13245", "1410.3831")  # 7-8 pages each


@pytest.fixture(scope="session")
def mirror_site(tmp_path_factory, mirror_dir) -> Path:
    """Four real PDFs from ../shared/arxiv-mirror (two-column layouts, ligatures, hyphenation)."""
    root = tmp_path_factory.mktemp("mirror-site")
    listed = write_corpus(root / "readingroom.toml", MIRROR_PAPERS)
    assert run_build(listed, root / "site", root / "cache", mirror_dir) == 0
    return root / "site"


@pytest.fixture(scope="session")
def built_sites(tmp_path_factory, generated_corpus) -> BuiltSites:
    """Built once per session; several test modules read these sites (building costs a model load)."""
    root = tmp_path_factory.mktemp("sites")
    cache = root / "cache"
    first = write_corpus(root / "first.toml", SMALL_PAPERS)
    assert run_build(first, root / "first", cache, generated_corpus) == 0
    second = write_corpus(root / "second.toml", (*SMALL_PAPERS, ADDED_PAPER))
    assert run_build(second, root / "second", cache, generated_corpus) == 0
    return BuiltSites(root / "first", root / "second", cache)
