"""Parse the whole arXiv mirror and report speed and quality numbers for the parse stage.

Quality is measured against things we know independently of the parser: the dev questions' evidence
quotes (copied from PyMuPDF's raw page text) must be found on their gold page, the arXiv stamp must be
gone, the title must be on page 1, and no line may still repeat on most pages (a header left behind).

    python scripts/measure_parse.py [--mirror DIR] [--questions FILE] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

import pymupdf

from builder.models import ParsedPaper
from builder.paths import SHARED_MIRROR
from builder.stages.parse import ParseError, parse_pdf
from builder.stages.parse.cleanup import quote_pattern

_STAMP = re.compile(r"arXiv:\d{4}\.\d{4,5}v\d+\s*\[[\w.\-]+\]")
_DIGITS = re.compile(r"\d+")
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl"})


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


def measure(mirror: Path, questions: Path) -> dict:
    papers: dict[str, ParsedPaper] = {}
    failures: list[str] = []
    started, cpu_started = time.perf_counter(), time.process_time()
    for pdf in sorted((mirror / "pdf").glob("*.pdf")):
        try:
            papers[pdf.stem] = parse_pdf(pdf, pdf.stem)
        except ParseError as error:
            failures.append(str(error))
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu_started
    pages = sum(p.page_count for p in papers.values())

    found, checked, missing = 0, 0, []
    if questions.is_file():
        for raw in questions.read_text().splitlines():
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

    titles_on_page_one = 0
    for arxiv_id, paper in papers.items():
        meta = json.loads((mirror / "meta" / f"{arxiv_id}.json").read_text())
        if normalised_words(meta["title"]) in normalised_words(page_text(paper, 1)):
            titles_on_page_one += 1

    flags = Counter(flag.kind for paper in papers.values() for flag in paper.flags)
    return {
        "papers": len(papers),
        "pages": pages,
        "seconds": round(seconds, 2),
        "pages_per_second": round(pages / seconds, 1) if seconds else 0.0,
        "cpu_seconds": round(cpu_seconds, 2),  # wall time is inflated when other work shares the cores
        "parse_failures": failures,
        "flagged_pages": dict(flags),
        "sections_per_paper": round(sum(len(p.sections) for p in papers.values()) / max(len(papers), 1), 1),
        "papers_with_references": sum(1 for p in papers.values() if p.references_span),
        "evidence_found": found,
        "evidence_checked": checked,
        "evidence_missing": missing,
        "titles_on_page_one": titles_on_page_one,
        "stamps_remaining": sum(len(_STAMP.findall(p.text)) for p in papers.values()),
        "repeated_lines_over_half_of_pages": sum(repeated_lines(p) for p in papers.values()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=SHARED_MIRROR)
    questions = SHARED_MIRROR.parent / "eval" / "dev-questions.jsonl"
    parser.add_argument("--questions", type=Path, default=questions)
    parser.add_argument("--json", action="store_true", help="print the numbers as one JSON object")
    args = parser.parse_args(argv)
    pymupdf.TOOLS.mupdf_display_errors(False)  # MuPDF prints repairable xref errors on stdout
    if not (args.mirror / "pdf").is_dir():
        print(f"no PDFs under {args.mirror / 'pdf'}; pass --mirror DIR", file=sys.stderr)
        return 2
    result = measure(args.mirror, args.questions)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"papers {result['papers']}, pages {result['pages']}, {result['seconds']} s, "
        f"{result['pages_per_second']} pages/s (CPU {result['cpu_seconds']} s)"
    )
    print(f"parse failures: {len(result['parse_failures'])}")
    for failure in result["parse_failures"]:
        print(f"  {failure}")
    print(f"flagged pages: {result['flagged_pages']}")
    print(
        f"sections per paper: {result['sections_per_paper']}; papers with references: "
        f"{result['papers_with_references']}"
    )
    print(
        f"evidence quotes found on gold page: {result['evidence_found']}/{result['evidence_checked']}"
        + (f" (missing: {', '.join(result['evidence_missing'])})" if result["evidence_missing"] else "")
    )
    print(f"titles on page 1: {result['titles_on_page_one']}/{result['papers']}")
    print(f"arXiv stamps remaining: {result['stamps_remaining']}")
    print(f"lines repeating on > 50% of a paper's pages: {result['repeated_lines_over_half_of_pages']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
