"""Whole-mirror ingest check: parse + chunk every paper and verify what later stages rely on.

Prints (and with --json emits) parse+chunk time and pages/s, chunk counts, and the checks: every
chunk's page span is valid and its text is the cleaned text at its offsets; no chunk with its
embedding context exceeds the model's limit, counted with the HF tokenizer that sentence-transformers
uses; no chunk lies in a references section; stamps and running lines left in chunk text.
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

from transformers import AutoTokenizer  # noqa: E402

from builder.models import PaperRef  # noqa: E402
from builder.paths import bundled_model_dir  # noqa: E402
from builder.stages.chunk.chunker import ChunkSettings, TokenCounter, chunk_paper  # noqa: E402
from builder.stages.fetch import FetchOptions, fetch_papers  # noqa: E402
from builder.stages.parse import ParseError, parse_pdf  # noqa: E402

STAMP = re.compile(r"arXiv:\d{4}\.\d{4,5}v\d+\s*\[[a-zA-Z\-.]+\]")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mirror", type=Path, required=True)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    ids = (args.mirror / "reading-list.txt").read_text().split()
    with_cache = FetchOptions(
        cache_dir=Path("/tmp/readingroom-bench-cache"), mirror=args.mirror, offline=True
    )
    fetched = fetch_papers([PaperRef(i) for i in ids], with_cache, progress=False)
    model_dir = bundled_model_dir()
    counter = TokenCounter(model_dir)
    hf = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    settings = ChunkSettings()

    parse_seconds = chunk_seconds = 0.0
    pages = chunks_total = tokens = 0
    failures = [f.line() for f in fetched.failures]
    problems: Counter[str] = Counter()
    longest = 0
    for paper in fetched.papers:
        started = time.perf_counter()
        try:
            parsed = parse_pdf(Path(paper.pdf_path), paper.meta.arxiv_id)
        except ParseError as exc:
            failures.append(f"{paper.meta.arxiv_id}: {exc.reason}")
            continue
        parse_seconds += time.perf_counter() - started
        started = time.perf_counter()
        chunks = chunk_paper(parsed, paper.meta.title, counter, settings)
        chunk_seconds += time.perf_counter() - started
        pages += parsed.page_count
        chunks_total += len(chunks)
        page_count = Counter()
        for c in chunks:
            tokens += c.n_tokens
            if not (1 <= c.page_start <= c.page_end <= parsed.page_count):
                problems["invalid page span"] += 1
            if parsed.text[c.char_start : c.char_end] != c.text:
                problems["text differs from the cleaned text at its offsets"] += 1
            if (
                parsed.references_span
                and parsed.references_span[0] < c.char_end
                and c.char_start < parsed.references_span[1]
            ):
                problems["chunk inside the references section"] += 1
            if STAMP.search(c.text):
                problems["arXiv stamp in chunk text"] += 1
            n = len(hf(c.indexed_text, truncation=False)["input_ids"])
            longest = max(longest, n)
            if n > counter.max_seq_length:
                problems["chunk over the model limit"] += 1
            for line in c.text.split("\n\n"):
                page_count[line] += 1
        problems["chunks with a paragraph repeated on > 3 chunks"] += sum(
            1 for line, n in page_count.items() if n > 3 and len(line) < 120
        )

    report = {
        "papers": len(fetched.papers) - len([f for f in failures if "parse" in f]),
        "pages": pages,
        "chunks": chunks_total,
        "tokens": tokens,
        "longest_chunk_with_context_and_specials": longest,
        "model_limit": counter.max_seq_length,
        "parse_seconds": round(parse_seconds, 2),
        "chunk_seconds": round(chunk_seconds, 2),
        "pages_per_second_parse_and_chunk": round(pages / max(parse_seconds + chunk_seconds, 1e-9), 1),
        "problems": dict(problems),
        "failures": failures,
    }
    if args.json:
        print(json.dumps(report))
    else:
        for key, value in report.items():
            print(f"{key:45s} {value}")
    hard = {k: v for k, v in problems.items() if not k.startswith("chunks with a paragraph")}
    return 1 if any(hard.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
