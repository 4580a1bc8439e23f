"""The search core's Porter2 stemmer against snowballstemmer, the Snowball project's own Python build.

    python scripts/bench_stemmer.py --mirror ../shared/arxiv-mirror --beir ../shared/beir-scifact [--record]

The core keeps a hand-written stemmer because it must stay stdlib-only (Pyodide loads it without
micropip); this checks that it stems as snowballstemmer does, word for word, over the words the core
really stems: each source's text goes through `analysis.analyze`, and every word it hands to `stem` is
collected. It also times both stemmers (words/s in this interpreter, each word stemmed once, uncached).
tests/builder/test_stemmer_reference.py runs the same comparison over a sample on every test run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from unittest import mock

from measurements import add_record_option, begin

from readingroom_core import analysis

EXAMPLES = 12  # differing words shown per source


def stemmed_words(texts: Iterable[str]) -> set[str]:
    """The words `analysis.analyze` hands to its stemmer (tokens of letters only, compounds joined)."""
    words: set[str] = set()

    def collect(word: str) -> str:
        words.add(word)
        return word

    with mock.patch.object(analysis, "stem", collect):
        for text in texts:
            analysis.analyze(text)
    return words


def pdf_texts(paths: Iterable[Path]) -> Iterator[str]:
    """Each PDF's text as pymupdf reads it, page after page."""
    import pymupdf

    for path in paths:
        with pymupdf.open(path) as document:
            yield "\n".join(page.get_text() for page in document)


def beir_texts(folder: Path, documents: int | None = None) -> Iterator[str]:
    """Titles and texts of a BEIR set's queries and of its first `documents` documents (all: None)."""
    for name, limit in (("queries.jsonl", None), ("corpus.jsonl", documents)):
        with (folder / name).open(encoding="utf-8") as lines:
            for number, line in enumerate(lines):
                if limit is not None and number >= limit:
                    break
                row = json.loads(line)
                yield f"{row.get('title', '')}\n{row.get('text', '')}"


def reference_stemmer() -> Callable[[str], str]:
    """snowballstemmer's English stemmer in pure Python (never PyStemmer's C build, whose algorithm
    version follows its own releases)."""
    from snowballstemmer.english_stemmer import EnglishStemmer

    return EnglishStemmer().stemWord


def ours(word: str) -> str:
    """The core's stemmer without its cache, so timing and comparison see the algorithm itself."""
    return analysis.stem.__wrapped__(word)


def differences(words: Iterable[str], reference: Callable[[str], str]) -> list[tuple[str, str, str]]:
    """(word, our stem, snowballstemmer's) for every word the two stem differently, sorted."""
    pairs = ((word, ours(word), reference(word)) for word in sorted(words))
    return [(word, mine, theirs) for word, mine, theirs in pairs if mine != theirs]


def words_per_second(
    stemmers: dict[str, Callable[[str], str]], words: list[str], repeats: int = 3
) -> dict[str, int]:
    """Each stemmer's best of `repeats` passes over `words`, the passes taken in turn so that a busy
    spell on a shared machine slows both alike (the fastest pass is the least disturbed one)."""
    best = dict.fromkeys(stemmers, float("inf"))
    for _ in range(repeats):
        for name, stemmer in stemmers.items():
            started = time.perf_counter()
            for word in words:
                stemmer(word)
            best[name] = min(best[name], time.perf_counter() - started)
    return {name: round(len(words) / seconds) for name, seconds in best.items()}


def comparison(words: set[str], reference: Callable[[str], str]) -> dict[str, object]:
    differing = differences(words, reference)
    return {
        "words": len(words),
        "identical stems": len(words) - len(differing),
        "differing stems": len(differing),
        "examples (word: ours / snowballstemmer)": "; ".join(
            f"{word}: {mine} / {theirs}" for word, mine, theirs in differing[:EXAMPLES]
        )
        or "none",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mirror", type=Path, help="an arXiv mirror folder (its pdf/ is read)")
    parser.add_argument(
        "--beir", type=Path, action="append", default=[], help="a BEIR dataset folder (repeatable)"
    )
    add_record_option(parser)
    args = parser.parse_args(argv)
    if args.mirror is None and not args.beir:
        parser.error("give --mirror, --beir or both")
    bench_run = begin("stemmer", argv)
    from importlib.metadata import version

    reference = reference_stemmer()
    vocabularies: dict[str, set[str]] = {}
    if args.mirror is not None:
        pdfs = sorted((args.mirror / "pdf").glob("*.pdf"))
        vocabularies[f"mirror ({len(pdfs)} PDFs)"] = stemmed_words(pdf_texts(pdfs))
    for folder in args.beir:
        vocabularies[folder.name] = stemmed_words(beir_texts(folder))
    every_word = set().union(*vocabularies.values())
    vocabularies["all sources"] = every_word
    in_order = sorted(every_word)
    results = {
        "snowballstemmer": version("snowballstemmer"),
        "vocabularies": {source: comparison(words, reference) for source, words in vocabularies.items()},
        "words per second (CPython, uncached)": words_per_second(
            {"readingroom_core.analysis.stem": ours, "snowballstemmer EnglishStemmer": reference}, in_order
        ),
    }
    print(json.dumps(results, indent=1))
    if args.record:
        bench_run.save(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
