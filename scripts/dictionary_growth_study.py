"""What a query's dictionary blocks would cost on a list `--growth` times as large as a built site.

A dictionary entry names its term's pages by checksum, and a common term's postings grow with the list:
"model" (73% of passages) has about 240 pages at 1,000 papers and 2,500 at 10,000. With every checksum
in the entry (format 4) the block holding such a term grows with the list, and most queries read a few
such blocks. This replays the site's own dictionary with each term's page count scaled by `--growth`
(the vocabulary kept: a larger list's new words are rare ones, a page each) and cuts it into blocks the
way `builder.writers.postings.TermLayout` does, once with every checksum inline and once as the layout stores them now
(the sizes and shas of the first `--inline` pages, then the sha of the rest's records). It reports the
terms file, the blocks and the bytes of dictionary blocks each question reads (median, p95).

    python scripts/dictionary_growth_study.py --site site --growth 10 [--inline 8]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from bisect import bisect_right
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "wasm"), str(ROOT / "scripts")]

from bench_scale import QUESTION_SETS, read_questions  # noqa: E402

from builder.writers.postings import _dictionary_blocks  # noqa: E402
from readingroom_core.analysis import analyze  # noqa: E402
from readingroom_core.formats.manifest import read_manifest  # noqa: E402
from readingroom_core.formats.postings import INLINE_PAGES, read_term_directory  # noqa: E402
from readingroom_core.ranges import folder_reader  # noqa: E402

PLACEHOLDER_SHA = "0" * 32
PLACEHOLDER_SIZE = 1000  # a full page's varints: 3.5-4 bytes a posting


def read_entries(site: Path) -> dict[str, list]:
    """Every dictionary entry of a built site."""
    manifest = read_manifest((site / "manifest.json").read_bytes())
    directory = read_term_directory(folder_reader(site)(manifest.files.postings))
    data = (site / directory.terms).read_bytes()
    entries: dict[str, list] = {}
    for _, start, end, _ in directory.blocks:
        entries.update(json.loads(data[start:end]))
    return entries


def grown(entry: list, growth: float, inline: int | None) -> list:
    """The entry of a term whose pages grew `growth` times: format 4's (every checksum inline, `inline`
    None) or today's (the first `inline` pages' sizes and shas, and the sha of the rest's records)."""
    df, start, rank = entry[:3]
    pages = -(-df // 256)
    pages = max(1, round(pages * growth)) if pages > 1 else 1
    if inline is None:
        return [df, start, rank, *[PLACEHOLDER_SHA] * pages]
    rest = [PLACEHOLDER_SHA] if pages > inline else []
    kept = min(pages, inline)
    return [df, start, rank, [PLACEHOLDER_SIZE] * kept, *[PLACEHOLDER_SHA] * kept, *rest]


def dictionary_cost(entries: dict[str, list], questions: list[list[str]], growth: float, inline: int | None):
    data, blocks = _dictionary_blocks({term: grown(entry, growth, inline) for term, entry in entries.items()})
    firsts = [block[0] for block in blocks]
    per_question = sorted(
        sum(blocks[n][2] - blocks[n][1] for n in {max(0, bisect_right(firsts, t) - 1) for t in terms})
        for terms in questions
    )
    return {
        "growth": growth,
        "entry_checksums": "all" if inline is None else f"first {inline} pages' sizes and shas + rest's sha",
        "terms_file_mb": round(len(data) / 1e6, 2),
        "blocks": len(blocks),
        "dictionary_kb_per_question_median": round(statistics.median(per_question) / 1024, 1),
        "dictionary_kb_per_question_p95": round(per_question[int(0.95 * len(per_question))] / 1024, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--site", type=Path, required=True)
    parser.add_argument("--growth", type=float, action="append", help="list size factor (default: 1 and 10)")
    parser.add_argument(
        "--inline", type=int, default=INLINE_PAGES, help="pages an entry names (default: %(default)s)"
    )
    args = parser.parse_args()
    entries = read_entries(args.site)
    questions = [list(dict.fromkeys(analyze(q))) for q in read_questions(QUESTION_SETS)]
    print(f"{len(entries)} terms, {len(questions)} questions")
    for growth in args.growth or [1.0, 10.0]:
        for inline in (None, args.inline):
            print(json.dumps(dictionary_cost(entries, questions, growth, inline)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
