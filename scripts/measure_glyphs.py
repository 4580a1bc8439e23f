"""Glyphs the mirror's PDFs do not map to Unicode, by font: how many `builder.stages.parse.glyphs` maps.

    python scripts/measure_glyphs.py [--mirror ../shared/arxiv-mirror/pdf] [--json out.json]

Counts every U+FFFD pymupdf gives on every page (margins and references included), then what the glyph
module makes of each: a character, a dropped drawing piece (""), or still nothing. Adobe private-use
delimiter pieces are counted apart (a translation, not a lookup). Then `parse_pdf`'s own count of glyphs
dropped from the kept text, per paper.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import pymupdf

from builder.paths import SHARED_MIRROR
from builder.stages.parse import parse_pdf
from builder.stages.parse.glyphs import ADOBE_PIECES, FontGlyphs, map_unmapped

FLAGS = pymupdf.TEXT_MEDIABOX_CLIP


def spans(data: dict):
    for block in data["blocks"]:
        for line in block.get("lines", ()):
            yield from line["spans"]


def measure_pdf(path: Path) -> dict[str, Counter]:
    """Per font: 'fffd' (what pymupdf gives), 'text', 'dropped', 'left'; and 'pieces' (Adobe PUA)."""
    counts: dict[str, Counter] = {}
    doc = pymupdf.open(path)
    fonts = FontGlyphs(doc)
    for page in doc:
        data = page.get_text("dict", flags=FLAGS)
        for span in spans(data):
            pieces = sum(span["text"].count(chr(code)) for code in ADOBE_PIECES)
            if pieces:
                counts.setdefault(span["font"], Counter())["pieces"] += pieces
        if not any("\ufffd" in span["text"] for span in spans(data)):
            continue
        raw = list(spans(page.get_text("rawdict", flags=FLAGS)))
        mapped = list(spans(map_unmapped(page, page.get_text("rawdict", flags=FLAGS), FLAGS, fonts)))
        for before, after in zip(raw, mapped, strict=True):
            chars = [char["c"] for char in before["chars"]]
            if "\ufffd" not in chars:
                continue
            tally = counts.setdefault(before["font"], Counter())
            tally["fffd"] += chars.count("\ufffd")
            tally["left"] += after["text"].count("\ufffd")
            # the mapped text is the raw text with each U+FFFD replaced by 0 or 1 characters
            tally["dropped"] += len(chars) - len(after["text"])
    doc.close()
    for tally in counts.values():
        tally["text"] = tally["fffd"] - tally["left"] - tally["dropped"]
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=SHARED_MIRROR / "pdf")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    by_font: dict[str, Counter] = {}
    papers_with: Counter = Counter()
    dropped_by_paper: dict[str, int] = {}
    pdfs = sorted(args.mirror.glob("*.pdf"))
    for path in pdfs:
        for font, tally in measure_pdf(path).items():
            by_font.setdefault(font, Counter()).update(tally)
            if tally["fffd"]:
                papers_with[font] += 1
        dropped = parse_pdf(path, path.stem).unmapped_glyphs
        if dropped:
            dropped_by_paper[path.stem] = dropped
        print(f"{path.stem}: {dropped} dropped from the parsed text", file=sys.stderr, flush=True)
    total = Counter()
    for tally in by_font.values():
        total.update(tally)
    print(
        f"{len(pdfs)} PDFs: {total['fffd']} U+FFFD glyphs; {total['text']} mapped to a character, "
        f"{total['dropped']} drawing pieces dropped, {total['left']} left unmapped; "
        f"{total['pieces']} Adobe private-use delimiter pieces translated"
    )
    print(
        f"parse_pdf: {sum(dropped_by_paper.values())} glyphs dropped from the kept text "
        f"in {len(dropped_by_paper)} papers"
    )
    print(f"{'font':28} {'papers':>6} {'U+FFFD':>7} {'text':>6} {'drawn':>6} {'left':>6} {'pieces':>6}")
    for font, tally in sorted(by_font.items(), key=lambda item: -(item[1]["fffd"] + item[1]["pieces"])):
        print(
            f"{font:28} {papers_with[font]:6} {tally['fffd']:7} {tally['text']:6} {tally['dropped']:6} "
            f"{tally['left']:6} {tally['pieces']:6}"
        )
    if args.json:
        args.json.write_text(json.dumps({"by_font": by_font, "dropped_by_paper": dropped_by_paper}, indent=1))


if __name__ == "__main__":
    main()
