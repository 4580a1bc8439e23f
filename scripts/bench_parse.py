"""Parse and chunk the whole arXiv mirror: the two stages' speed, and checks of what later stages rely on.

Parse quality is measured against things known independently of the parser: the dev questions' evidence
quotes (copied from PyMuPDF's raw page text) must be found on their gold page, the arXiv stamp must be
gone, the title must be on page 1, and no line may still repeat on most pages (a header left behind).
Chunks are held to what the index and the embedder rely on: a valid page span; their text the cleaned
text at their offsets; none in a references section; none over the model's limit with its embedding
context, counted with the HF tokenizer that sentence-transformers uses; no arXiv stamp left.

    python scripts/bench_parse.py [--mirror DIR] [--questions FILE] [--json] [--record]

Exits 1 when a chunk breaks one of those rules (a paragraph repeated on more than three chunks of a paper
is counted, not an error: abstracts and captions repeat on purpose).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

from builder.offline import use_offline_environment  # noqa: E402

use_offline_environment()

import pymupdf  # noqa: E402
from measurements import add_record_option, begin  # noqa: E402

from builder.models import Chunk, ParsedPaper  # noqa: E402
from builder.paths import DEV_QUESTIONS, SHARED_MIRROR, bundled_model_dir  # noqa: E402
from builder.stages.chunk.chunker import ChunkSettings, TokenCounter, chunk_paper  # noqa: E402
from builder.stages.fetch.sources import load_record, meta_from_mirror  # noqa: E402
from builder.stages.parse import ParseError, parse_pdf  # noqa: E402
from builder.stages.parse.cleanup import quote_pattern  # noqa: E402

_STAMP = re.compile(r"arXiv:\d{4}\.\d{4,5}v\d+\s*\[[\w.\-]+\]")
_DIGITS = re.compile(r"\d+")
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl"})
REPEATED = "chunks with a paragraph repeated on > 3 chunks"  # counted, not an error


def page_text(paper: ParsedPaper, page: int) -> str:
    span = paper.pages[page - 1]
    return paper.text[span.start : span.end]


def repeated_lines(paper: ParsedPaper) -> int:
    """Paragraphs (digits ignored) found on more than half of the pages: header/footer residue."""
    if paper.page_count < 4:
        return 0
    seen: Counter[str] = Counter()
    for span in paper.pages:
        keys = {_DIGITS.sub("#", p.strip().lower()) for p in paper.text[span.start : span.end].split("\n\n")}
        seen.update(key for key in keys if key)
    return sum(1 for count in seen.values() if count > paper.page_count / 2)


def normalised_words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.translate(_LIGATURES).lower()))


class ChunkChecks:
    """What the chunks of every paper break, and the longest one as the embedder's tokenizer counts it."""

    def __init__(self, model_dir: Path):
        from transformers import AutoTokenizer  # seconds to import: not for --help or an import check

        self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        self.problems: Counter[str] = Counter()
        self.longest = 0

    def check(self, paper: ParsedPaper, chunks: list[Chunk], model_limit: int) -> None:
        paragraphs: Counter[str] = Counter()
        for chunk in chunks:
            if not (1 <= chunk.page_start <= chunk.page_end <= paper.page_count):
                self.problems["invalid page span"] += 1
            if paper.text[chunk.char_start : chunk.char_end] != chunk.text:
                self.problems["text differs from the cleaned text at its offsets"] += 1
            refs = paper.references_span
            if refs and refs[0] < chunk.char_end and chunk.char_start < refs[1]:
                self.problems["chunk inside the references section"] += 1
            if _STAMP.search(chunk.text):
                self.problems["arXiv stamp in chunk text"] += 1
            tokens = len(self.tokenizer(chunk.indexed_text, truncation=False)["input_ids"])
            self.longest = max(self.longest, tokens)
            if tokens > model_limit:
                self.problems["chunk over the model limit"] += 1
            paragraphs.update(chunk.text.split("\n\n"))
        self.problems[REPEATED] += sum(1 for text, n in paragraphs.items() if n > 3 and len(text) < 120)

    def errors(self) -> dict[str, int]:
        return {kind: n for kind, n in self.problems.items() if kind != REPEATED and n}


def measure(mirror: Path, questions: Path) -> dict:
    model_dir = bundled_model_dir()
    counter, settings, checks = TokenCounter(model_dir), ChunkSettings(), ChunkChecks(model_dir)
    papers: dict[str, ParsedPaper] = {}
    titles: dict[str, str] = {}
    failures: list[str] = []
    seconds = Counter[str]()
    chunks_total = tokens = 0
    for pdf in sorted((mirror / "pdf").glob("*.pdf")):
        where = f"{mirror.name}/meta/{pdf.stem}.json"
        record = load_record(mirror / "meta" / f"{pdf.stem}.json", where)
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            paper = parse_pdf(pdf, pdf.stem)
        except ParseError as error:
            failures.append(str(error))
            continue
        seconds["parse"] += time.perf_counter() - wall
        seconds["parse_cpu"] += time.process_time() - cpu
        wall, cpu = time.perf_counter(), time.process_time()
        chunks = chunk_paper(paper, meta_from_mirror(record, pdf.stem, where).title, counter, settings)
        seconds["chunk"] += time.perf_counter() - wall
        seconds["chunk_cpu"] += time.process_time() - cpu
        papers[pdf.stem], titles[pdf.stem] = paper, record["title"]
        chunks_total += len(chunks)
        tokens += sum(chunk.n_tokens for chunk in chunks)
        checks.check(paper, chunks, counter.max_seq_length)

    found, checked, missing = 0, 0, []
    if questions.is_file():
        for raw in questions.read_text(encoding="utf-8").splitlines():
            question = json.loads(raw)
            if not question.get("relevant") or not question.get("evidence"):
                continue
            gold = question["relevant"][0]
            paper = papers.get(gold["arxiv_id"])
            if paper is None:
                continue
            checked += 1
            if quote_pattern(question["evidence"]).search(page_text(paper, gold["pages"][0])):
                found += 1
            else:
                missing.append(question["id"])

    pages = sum(p.page_count for p in papers.values())
    return {
        "parse": {
            "papers": len(papers),
            "pages": pages,
            "seconds": round(seconds["parse"], 2),
            "cpu_seconds": round(seconds["parse_cpu"], 2),  # wall time grows when others share the cores
            "pages_per_second": round(pages / seconds["parse"], 1) if seconds["parse"] else 0.0,
            "sections_per_paper": round(
                sum(len(p.sections) for p in papers.values()) / max(len(papers), 1), 1
            ),
            "papers_with_references": sum(1 for p in papers.values() if p.references_span),
            "failures": failures,
            "flagged_pages": dict(Counter(flag.kind for p in papers.values() for flag in p.flags)),
        },
        "text": {
            "evidence_found": found,
            "evidence_checked": checked,
            "evidence_missing": missing,
            "titles_on_page_one": sum(
                normalised_words(titles[i]) in normalised_words(page_text(p, 1)) for i, p in papers.items()
            ),
            "stamps_remaining": sum(len(_STAMP.findall(p.text)) for p in papers.values()),
            "repeated_lines_over_half_of_pages": sum(repeated_lines(p) for p in papers.values()),
        },
        "chunk": {
            "chunks": chunks_total,
            "tokens": tokens,
            "longest_with_context_and_specials": checks.longest,
            "model_limit": counter.max_seq_length,
            "seconds": round(seconds["chunk"], 2),
            "cpu_seconds": round(seconds["chunk_cpu"], 2),
            "problems": dict(checks.problems),
        },
        "errors": checks.errors(),
    }


def print_report(result: dict) -> None:
    parse, text, chunk = result["parse"], result["text"], result["chunk"]
    print(
        f"papers {parse['papers']}, pages {parse['pages']}, parse {parse['seconds']} s, "
        f"{parse['pages_per_second']} pages/s (CPU {parse['cpu_seconds']} s)"
    )
    print(f"parse failures: {len(parse['failures'])}")
    for failure in parse["failures"]:
        print(f"  {failure}")
    print(f"flagged pages: {parse['flagged_pages']}")
    print(
        f"sections per paper: {parse['sections_per_paper']}; papers with references: "
        f"{parse['papers_with_references']}"
    )
    print(
        f"evidence quotes found on gold page: {text['evidence_found']}/{text['evidence_checked']}"
        + (f" (missing: {', '.join(text['evidence_missing'])})" if text["evidence_missing"] else "")
    )
    print(f"titles on page 1: {text['titles_on_page_one']}/{parse['papers']}")
    print(f"arXiv stamps remaining: {text['stamps_remaining']}")
    print(f"lines repeating on > 50% of a paper's pages: {text['repeated_lines_over_half_of_pages']}")
    print(
        f"chunks {chunk['chunks']}, tokens {chunk['tokens']}, chunk {chunk['seconds']} s "
        f"(CPU {chunk['cpu_seconds']} s); longest with context and specials "
        f"{chunk['longest_with_context_and_specials']} of {chunk['model_limit']}"
    )
    print(f"chunk problems: {chunk['problems'] or 'none'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mirror", type=Path, default=SHARED_MIRROR)
    parser.add_argument("--questions", type=Path, default=DEV_QUESTIONS)
    parser.add_argument("--json", action="store_true", help="print the numbers as one JSON object")
    add_record_option(parser)
    args = parser.parse_args(argv)
    bench_run = begin("parse", argv)
    pymupdf.TOOLS.mupdf_display_errors(False)  # MuPDF prints repairable xref errors on stdout
    if not (args.mirror / "pdf").is_dir():
        print(f"no PDFs under {args.mirror / 'pdf'}; pass --mirror DIR", file=sys.stderr)
        return 2
    result = measure(args.mirror, args.questions)
    if args.record:
        bench_run.save(result)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
