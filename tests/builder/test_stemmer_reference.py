"""The core's hand-written Porter2 stemmer stems real text exactly as snowballstemmer does.

The search core must stay stdlib-only (Pyodide loads it without micropip), so it cannot import
snowballstemmer; instead the Snowball project's own Python build is the reference, over the words the
core really stems from a few mirror papers and a sample of BEIR's SciFact (scripts/bench_stemmer.py runs
the same comparison over every mirror PDF and three BEIR sets; its record is docs/measurements/stemmer.json).
No difference is tolerated: one means our stemmer has drifted from the algorithm, or the pin has moved to
a Snowball release that revised English, which would change every index.
"""

import json
import sys
import tomllib
from importlib.metadata import version

import pytest

from builder.paths import REPO_ROOT, SHARED, SHARED_MIRROR

sys.path.insert(0, str(REPO_ROOT / "scripts"))
import bench_stemmer  # noqa: E402

pytest.importorskip("snowballstemmer", reason="a dev dependency: pip install -e '.[dev]'")

# Papers whose vocabularies differ: a transformer, a pre-trained encoder, retrieval-augmented generation.
MIRROR_PAPERS = ("1706.03762", "1810.04805", "2005.11401")
SCIFACT = SHARED / "beir-scifact"
SCIFACT_DOCUMENTS = 200  # with the set's queries, thousands of biomedical words in a second or two


def assert_same_stems(words: set[str], at_least: int) -> None:
    assert len(words) >= at_least, f"only {len(words)} words: the text was not read"
    differing = bench_stemmer.differences(words, bench_stemmer.reference_stemmer())
    assert not differing, (
        f"{len(differing)} of {len(words)} words stem differently (word, ours, snowball): {differing[:20]}"
    )


def test_the_pinned_reference_is_installed():
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    (pin,) = [d for d in extras["dev"] if d.startswith("snowballstemmer==")]
    pinned, installed = pin.removeprefix("snowballstemmer=="), version("snowballstemmer")
    assert installed == pinned, (
        f"snowballstemmer {installed} installed, {pinned} pinned: pip install -e '.[dev]'"
    )


def test_mirror_papers_stem_as_snowball_does():
    paths = [SHARED_MIRROR / "pdf" / f"{arxiv_id}.pdf" for arxiv_id in MIRROR_PAPERS]
    if not all(path.is_file() for path in paths):
        pytest.skip(f"{SHARED_MIRROR} is not present")
    assert_same_stems(bench_stemmer.stemmed_words(bench_stemmer.pdf_texts(paths)), at_least=3000)


def test_scifact_sample_stems_as_snowball_does():
    if not (SCIFACT / "corpus.jsonl").is_file():
        pytest.skip(f"{SCIFACT} is not present")
    words = bench_stemmer.stemmed_words(bench_stemmer.beir_texts(SCIFACT, SCIFACT_DOCUMENTS))
    assert_same_stems(words, at_least=6000)


def test_a_difference_is_reported():
    def reference(word: str) -> str:
        return "different" if word == "running" else bench_stemmer.ours(word)

    assert bench_stemmer.differences({"running", "walked"}, reference) == [("running", "run", "different")]


def test_the_bench_runs_end_to_end(tmp_path, capsys):
    folder = tmp_path / "beir-tiny"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(
        '{"_id": "1", "title": "Running retrievers", "text": "Generalization of dense retrieval."}\n',
        encoding="utf-8",
    )
    (folder / "queries.jsonl").write_text(
        '{"_id": "q1", "text": "How do retrievers generalize?"}\n', encoding="utf-8"
    )
    assert bench_stemmer.main(["--beir", str(folder)]) == 0
    results = json.loads(capsys.readouterr().out)
    assert results["vocabularies"]["beir-tiny"]["differing stems"] == 0
    # running, retrievers, generalization, dense, retrieval, generalize: "of", "how", "do" are stop words
    assert results["vocabularies"]["all sources"]["words"] == 6
    assert all(speed > 0 for speed in results["words per second (CPython, uncached)"].values())
