"""Split a parsed paper into passages that fit what the embedding model reads.

A chunk must never be truncated by the model (all-MiniLM-L6-v2 reads 256 word pieces, counting
[CLS]/[SEP] and the title/section context we prepend), so sizes are counted with the model's own
tokenizer. Chunks prefer paragraph, then sentence boundaries, never cross a section heading (a heading
with no text of its own opens the passage below it instead of standing alone), and
overlap by a sentence or two so an answer that straddles a boundary is still found whole.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer

from builder.models import Chunk, ParsedPaper
from readingroom_core.formats.texts import chunk_id


@dataclass(frozen=True)
class ChunkSettings:
    target_tokens: int = (
        240  # body tokens a chunk aims for (the model limit is the hard cap); docs/ranking.md says why
    )
    min_tokens: int = 48  # a smaller tail is merged into the previous chunk of its section
    overlap_tokens: int = 48  # at most this many tokens of trailing sentences repeat in the next chunk
    context_tokens: int = 32  # the prepended "title — section" context is cut to this many tokens


class TokenCounter:
    """Word-piece counts from the model's own tokenizer.json (no special tokens, no truncation)."""

    def __init__(self, model_dir: Path):
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.max_seq_length = _max_seq_length(model_dir)

    def counts(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encodings]

    def count(self, text: str) -> int:
        return self.counts([text])[0]

    def cut(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` that ends on a token boundary and holds at most `max_tokens`."""
        encoding = self.tokenizer.encode(text, add_special_tokens=False)
        if len(encoding.ids) <= max_tokens:
            return text
        return text[: encoding.offsets[max_tokens - 1][1]] if max_tokens > 0 else ""

    def word_boundaries(self, text: str, max_tokens: int) -> list[int]:
        """Split offsets (at word starts) so that each piece holds at most `max_tokens` tokens."""
        encoding = self.tokenizer.encode(text, add_special_tokens=False)
        offsets, words = encoding.offsets, encoding.word_ids
        cuts, piece_start = [], 0
        for index in range(len(offsets)):
            if index - piece_start < max_tokens:
                continue
            cut = index  # back up to the first token of the word holding token `index`
            while cut > piece_start and words[cut] is not None and words[cut] == words[cut - 1]:
                cut -= 1
            if cut == piece_start:  # one word longer than a chunk: split inside it
                cut = index
            cuts.append(offsets[cut][0])
            piece_start = cut
        return cuts


def _max_seq_length(model_dir: Path) -> int:
    config = model_dir / "sentence_bert_config.json"
    if config.exists():
        return int(json.loads(config.read_text())["max_seq_length"])
    return 256


# A sentence ends at . ! ? (optionally closed by quotes/brackets) followed by space and a capital,
# digit or opening bracket — unless the word before the stop is a common abbreviation.
SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[A-Z0-9(\[“\"])")
ABBREVIATIONS = re.compile(
    r"(?:\b(?:e\.g|i\.e|et al|etc|Fig|Figs|Eq|Eqs|Sec|Secs|Tab|Ref|Refs|vs|cf|resp|approx|Dr|Mr|Ms|Prof|No|Vol|"
    r"pp|Ch|App|Alg|Def|Thm|Lem|Prop|Cor)\.|\b[A-Z]\.)$"
)


def sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence [start, end) offsets inside text[start:end]."""
    spans, begin = [], start
    for match in SENTENCE_END.finditer(text, start, end):
        if ABBREVIATIONS.search(text, max(begin, match.start() - 12), match.start()):
            continue
        spans.append((begin, match.start()))
        begin = match.end()
    if begin < end:
        spans.append((begin, end))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def paragraph_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans, begin = [], start
    for match in re.finditer(r"\n\s*\n", text[start:end]):
        spans.append((begin, start + match.start()))
        begin = start + match.end()
    spans.append((begin, end))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def searchable_regions(paper: ParsedPaper) -> list[tuple[int, int, str]]:
    """(start, end, section title) stretches of text, split at headings, with the bibliography left out.

    A heading with no text of its own ("2. Speculative Decoding" right above "2.1. Overview") opens the
    next stretch instead of becoming a passage alone, and the title-and-author block above an
    "Abstract" heading is left out: neither is evidence, yet both ranked first for queries naming them.
    """
    cuts = sorted({front_matter_end(paper), len(paper.text), *(s.start for s in paper.sections)})
    if paper.references_span:
        cuts = sorted(set(cuts) | set(paper.references_span))
    regions = []
    pending_start = None  # start of headings waiting for the text they head
    for start, end in zip(cuts, cuts[1:], strict=False):
        if paper.references_span and paper.references_span[0] <= start < paper.references_span[1]:
            pending_start = None
            continue
        if not paper.text[start:end].strip():
            continue
        if heading_only(paper.text[start:end]):
            pending_start = start if pending_start is None else pending_start
            continue
        regions.append((start if pending_start is None else pending_start, end, paper.section_at(start)))
        pending_start = None
    return regions


def front_matter_end(paper: ParsedPaper) -> int:
    """Where searchable text begins: at an "Abstract" heading that opens the paper, else at 0."""
    if paper.sections and paper.sections[0].title.lower().startswith("abstract"):
        return paper.sections[0].start
    return 0


def heading_only(region: str) -> bool:
    """A stretch that holds one short line (its heading) and nothing else."""
    text = region.strip()
    return "\n" not in text and len(text) <= HEADING_ONLY_CHARS


HEADING_ONLY_CHARS = (
    120  # longer than any heading the parser keeps; a real paragraph line is rarely this short
)


@dataclass(frozen=True)
class _Unit:
    """A sentence (or a piece of an over-long one): the atom chunks are packed from."""

    start: int
    end: int
    tokens: int
    opens_paragraph: bool


def _units(text: str, start: int, end: int, counter: TokenCounter, limit: int) -> list[_Unit]:
    spans: list[tuple[int, int, bool]] = []
    for p_start, p_end in paragraph_spans(text, start, end):
        for index, (s_start, s_end) in enumerate(sentence_spans(text, p_start, p_end)):
            spans.append((s_start, s_end, index == 0))
    counts = counter.counts([text[a:b] for a, b, _ in spans])
    units = []
    for (a, b, opens), tokens in zip(spans, counts, strict=True):
        if tokens <= limit:
            units.append(_Unit(a, b, tokens, opens))
            continue
        cuts = [a + c for c in counter.word_boundaries(text[a:b], limit)]
        pieces = list(zip([a, *cuts], [*cuts, b], strict=True))
        piece_counts = counter.counts([text[x:y] for x, y in pieces])
        for number, ((x, y), n) in enumerate(zip(pieces, piece_counts, strict=True)):
            units.append(_Unit(x, y, n, opens and number == 0))
    return units


def _pack(units: list[_Unit], budget: int, settings: ChunkSettings) -> list[list[_Unit]]:
    """Greedy packing with sentence overlap; a paragraph start is the preferred place to cut."""
    target = min(settings.target_tokens, budget)
    groups: list[list[_Unit]] = []
    current: list[_Unit] = []
    used = 0
    fresh = 0  # units in `current` that are not overlap from the previous chunk
    for unit in units:
        soft_break = unit.opens_paragraph and used >= 0.75 * target
        if current and fresh and (used + unit.tokens > target or soft_break):
            groups.append(current)
            current = _overlap(current, settings.overlap_tokens, budget - unit.tokens)
            used = sum(u.tokens for u in current)
            fresh = 0
        current.append(unit)
        used += unit.tokens
        fresh += 1
    if current and fresh:
        tail_tokens = sum(u.tokens for u in current)
        if groups and tail_tokens < settings.min_tokens:
            merged = _merge_tail(groups[-1], current)
            if sum(u.tokens for u in merged) <= budget:
                groups[-1] = merged
                return groups
        groups.append(current)
    return groups


def _fitted(
    group: list[_Unit], text: str, counter: TokenCounter, budget: int
) -> list[tuple[list[_Unit], int]]:
    """(units, token count) of `group`, or of its halves in turn, so each chunk's own count fits `budget`.

    Packing adds up the units' counts, but text between units (a closing quote after a sentence's end)
    has tokens too, so a chunk packed to the brim can come out a token or two over.
    """
    tokens = counter.count(text[group[0].start : group[-1].end])
    if tokens <= budget or len(group) == 1:
        return [(group, tokens)]
    middle = len(group) // 2
    return _fitted(group[:middle], text, counter, budget) + _fitted(group[middle:], text, counter, budget)


def _overlap(group: list[_Unit], overlap_tokens: int, room: int) -> list[_Unit]:
    kept: list[_Unit] = []
    total = 0
    for unit in reversed(group[1:]):  # never carry a whole chunk over
        if total + unit.tokens > min(overlap_tokens, room):
            break
        kept.insert(0, unit)
        total += unit.tokens
    return kept


def _merge_tail(previous: list[_Unit], tail: list[_Unit]) -> list[_Unit]:
    seen = {(u.start, u.end) for u in previous}
    return previous + [u for u in tail if (u.start, u.end) not in seen]


def context_prefix(title: str, section: str, counter: TokenCounter, settings: ChunkSettings) -> str:
    """The 'title — section' line prepended for embedding only (display text stays verbatim)."""
    context = f"{title} — {section}" if section else title
    return counter.cut(" ".join(context.split()), settings.context_tokens)


def chunk_paper(
    paper: ParsedPaper,
    title: str,
    counter: TokenCounter,
    settings: ChunkSettings = ChunkSettings(),
    document_prefix: str = "",
) -> list[Chunk]:
    """Chunks of one paper in reading order; every one fits the model with its context prefix."""
    chunks: list[Chunk] = []
    special = 2  # [CLS] and [SEP]
    prefix_model_tokens = counter.count(document_prefix) if document_prefix else 0
    for start, end, section in searchable_regions(paper):
        prefix = context_prefix(title, section, counter, settings)
        budget = counter.max_seq_length - special - prefix_model_tokens - counter.count(prefix + "\n")
        units = _units(paper.text, start, end, counter, min(budget, settings.target_tokens))
        fitted = [
            piece
            for packed in _pack(units, budget, settings)
            for piece in _fitted(packed, paper.text, counter, budget)
        ]
        for group, tokens in fitted:
            a, b = group[0].start, group[-1].end
            text = paper.text[a:b]
            chunks.append(
                Chunk(
                    chunk_id=chunk_id(paper.arxiv_id, a, b, text),
                    arxiv_id=paper.arxiv_id,
                    page_start=paper.page_at(a),
                    page_end=paper.page_at(b - 1),
                    char_start=a,
                    char_end=b,
                    section=section,
                    text=text,
                    n_tokens=tokens,
                    context=prefix,
                )
            )
    return chunks
