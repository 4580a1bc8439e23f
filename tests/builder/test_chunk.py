import random

import pytest
from transformers import AutoTokenizer

from builder.models import PageSpan, ParsedPaper, Section
from builder.stages.chunk.chunker import (
    ChunkSettings,
    TokenCounter,
    chunk_paper,
    sentence_spans,
)

WORDS = (
    "retrieval augmented generation dense passage index transformer attention layer token embedding "
    "quantization recall precision benchmark corpus query document model training inference latency "
    "hallucination citation evidence gradient parameter adapter low-rank matrix"
).split()


def sentence(rng: random.Random, n_words: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n_words)]
    return words[0].capitalize() + " " + " ".join(words[1:]) + "."


def paragraph(rng: random.Random, n_sentences: int) -> str:
    return " ".join(sentence(rng, rng.randint(6, 30)) for _ in range(n_sentences))


def make_paper(pages_text: list[str], sections: list[tuple[str, str]], references: str | None = None):
    """A ParsedPaper from page texts; `sections` are (heading text, title) found verbatim in the text."""
    text = "\n\n".join(pages_text)
    spans, position = [], 0
    for number, page in enumerate(pages_text, start=1):
        spans.append(PageSpan(number, position, position + len(page)))
        position += len(page) + 2
    found = []
    for heading, title in sections:
        start = text.index(heading)
        found.append(Section(title, start, next(s.page for s in spans if s.start <= start <= s.end)))
    ref_span = None
    if references:
        start = text.index(references)
        end = min([s.start for s in found if s.start > start] or [len(text)])
        ref_span = (start, end)
    return ParsedPaper("2101.00001", text, spans, found, references_span=ref_span, page_count=len(pages_text))


@pytest.fixture(scope="module")
def counter(model_dir):
    return TokenCounter(model_dir)


@pytest.fixture(scope="module")
def hf_tokenizer(model_dir):
    return AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)


@pytest.fixture(scope="module")
def paper():
    rng = random.Random(7)
    pages = [
        "1 Introduction\n\n" + "\n\n".join(paragraph(rng, 4) for _ in range(3)),
        "\n\n".join(paragraph(rng, 5) for _ in range(3)) + "\n\n2 Method\n\n" + paragraph(rng, 3),
        "\n\n".join(paragraph(rng, 6) for _ in range(2)),
        "References\n\n[1] A. Author. A paper about things. 2020.\n\n[2] B. Author. Another one. 2021.",
        "A Appendix\n\n" + paragraph(rng, 8),
    ]
    return make_paper(
        pages,
        [
            ("1 Introduction", "1 Introduction"),
            ("2 Method", "2 Method"),
            ("References", "References"),
            ("A Appendix", "A Appendix"),
        ],
        references="References",
    )


def test_chunks_quote_the_cleaned_text_and_map_to_pages(paper, counter):
    chunks = chunk_paper(paper, "A Study of Things", counter)
    assert len(chunks) > 5
    for c in chunks:
        assert c.text == paper.text[c.char_start : c.char_end]
        assert c.page_start == paper.page_at(c.char_start)
        assert c.page_end == paper.page_at(c.char_end - 1)
        assert c.page_start <= c.page_end
        assert c.text == c.text.strip()
    assert any(c.page_start < c.page_end for c in chunks), "text flowing over a page break stays together"


def test_no_chunk_exceeds_what_the_model_reads(paper, counter, hf_tokenizer):
    chunks = chunk_paper(paper, "A Study of Things " * 20, counter)  # an absurdly long title is cut
    for c in chunks:
        assert c.context.startswith("A Study of Things") and len(c.context) < 200
        ids = hf_tokenizer(c.indexed_text, truncation=False)["input_ids"]
        assert len(ids) <= 256
        assert c.n_tokens == len(hf_tokenizer(c.text, add_special_tokens=False)["input_ids"])


def test_references_are_left_out_and_the_appendix_kept(paper, counter):
    chunks = chunk_paper(paper, "T", counter)
    start, end = paper.references_span
    assert all(c.char_end <= start or c.char_start >= end for c in chunks)
    assert not any("A paper about things" in c.text for c in chunks)
    assert any(c.section == "A Appendix" for c in chunks)


def test_chunks_do_not_cross_section_headings(paper, counter):
    chunks = chunk_paper(paper, "T", counter)
    for c in chunks:
        for s in paper.sections:
            assert not (c.char_start < s.start < c.char_end), (c.section, s.title)
        assert c.section == paper.section_at(c.char_start)


def test_every_searchable_sentence_is_in_some_chunk(paper, counter):
    chunks = chunk_paper(paper, "T", counter)
    covered = [False] * len(paper.text)
    for c in chunks:
        covered[c.char_start : c.char_end] = [True] * (c.char_end - c.char_start)
    ref_start, ref_end = paper.references_span
    missing = [
        i
        for i, ch in enumerate(paper.text)
        if not ch.isspace() and not covered[i] and not ref_start <= i < ref_end
    ]
    assert missing == []


def test_neighbours_overlap_by_at_most_the_overlap_budget(paper, counter):
    settings = ChunkSettings()
    chunks = chunk_paper(paper, "T", counter, settings)
    overlaps = 0
    for a, b in zip(chunks, chunks[1:], strict=False):
        if a.section == b.section and b.char_start < a.char_end:
            overlaps += 1
            assert counter.count(paper.text[b.char_start : a.char_end]) <= settings.overlap_tokens
        assert b.char_start > a.char_start
    assert overlaps > 0


def test_ids_are_stable_and_position_dependent(paper, counter):
    first = [c.chunk_id for c in chunk_paper(paper, "T", counter)]
    again = [c.chunk_id for c in chunk_paper(paper, "T", counter)]
    assert first == again
    assert len(set(first)) == len(first)
    shifted = ParsedPaper(
        paper.arxiv_id,
        "Preface.\n\n" + paper.text,
        [PageSpan(1, 0, paper.pages[0].end + 10)]
        + [PageSpan(p.page, p.start + 10, p.end + 10) for p in paper.pages[1:]],
        [Section(s.title, s.start + 10, s.page) for s in paper.sections],
        references_span=(paper.references_span[0] + 10, paper.references_span[1] + 10),
        page_count=paper.page_count,
    )
    moved = [c.chunk_id for c in chunk_paper(shifted, "T", counter)]
    assert not set(first) & set(moved)


def test_a_sentence_longer_than_a_chunk_is_split_at_word_boundaries(counter):
    rng = random.Random(3)
    long_sentence = " ".join(rng.choice(WORDS) for _ in range(600))  # no full stop at all
    paper = make_paper([long_sentence], [])
    chunks = chunk_paper(paper, "T", counter)
    assert len(chunks) >= 3
    for c in chunks:
        assert c.n_tokens <= counter.max_seq_length - 2 - counter.count(
            "T"
        )  # a merged tail may pass the target
        assert paper.text[c.char_start - 1 : c.char_start] in ("", " ")  # starts at a word


def test_a_small_tail_is_merged_not_left_alone(counter):
    rng = random.Random(5)
    body = paragraph(rng, 9)
    paper = make_paper([body + "\n\nShort end."], [])
    chunks = chunk_paper(paper, "T", counter)
    assert chunks[-1].text.endswith("Short end.")
    assert chunks[-1].n_tokens >= ChunkSettings().min_tokens


def test_sentence_splitting_respects_abbreviations():
    text = "We follow Lewis et al. and use e.g. BM25 in Fig. 3. Results improve. Next one starts here."
    pieces = [text[a:b] for a, b in sentence_spans(text, 0, len(text))]
    assert pieces == [
        "We follow Lewis et al. and use e.g. BM25 in Fig. 3.",
        "Results improve.",
        "Next one starts here.",
    ]


def test_text_between_sentences_counts_against_the_limit(counter, hf_tokenizer):
    # Sentences end before their closing quote, so the quotes are between the units that packing adds up.
    rng = random.Random(3)
    quoted = " ".join(f"“{sentence(rng, rng.randint(8, 14))}” " for _ in range(60))
    paper = make_paper([quoted], [])
    chunks = chunk_paper(paper, "Quotes", counter, ChunkSettings(target_tokens=1000))
    assert len(chunks) > 2
    for c in chunks:
        assert len(hf_tokenizer(c.indexed_text, truncation=False)["input_ids"]) <= 256


def test_a_lone_heading_opens_the_passage_below_it_and_the_author_block_is_left_out(counter):
    """Issue 12, item 3: "2. Speculative Decoding" alone, or the title-and-author block, ranked first."""
    rng = random.Random(3)
    pages = [
        "Fast Inference via Things\n\nAnn Author * 1 Bob Writer * 1\n\nAbstract\n\n" + paragraph(rng, 3),
        "2 Method\n\n2.1 Setup\n\n"
        + paragraph(rng, 4)
        + "\n\n6 Results\n\n6.1 Translation\n\n"
        + paragraph(rng, 3),
        "Acknowledgments",
    ]
    paper = make_paper(
        pages,
        [
            (t, t)
            for t in ("Abstract", "2 Method", "2.1 Setup", "6 Results", "6.1 Translation", "Acknowledgments")
        ],
    )
    chunks = chunk_paper(paper, "Fast Inference via Things", counter)
    assert all("\n" in c.text.strip() for c in chunks), [c.text for c in chunks if "\n" not in c.text]
    assert not any("Ann Author" in c.text for c in chunks)
    method = next(c for c in chunks if "2 Method" in c.text)
    assert method.text.startswith("2 Method\n\n2.1 Setup\n\n") and method.section == "2.1 Setup"
    results = next(c for c in chunks if "6 Results" in c.text)
    assert results.text.startswith("6 Results\n\n6.1 Translation\n\n")
    assert chunks[0].section == "Abstract" and chunks[0].text.startswith("Abstract\n\n")


def test_no_mirror_chunk_is_a_heading_alone(mirror_dir, counter):
    from builder.stages.parse import parse_pdf

    for arxiv_id, title in (
        ("2211.17192", "Fast Inference from Transformers via Speculative Decoding"),
        ("1706.03762", "Attention Is All You Need"),
    ):
        chunks = chunk_paper(parse_pdf(mirror_dir / "pdf" / f"{arxiv_id}.pdf", arxiv_id), title, counter)
        short = [c.text for c in chunks if "\n" not in c.text and len(c.text) < 60]
        assert short == [], (arxiv_id, short)
        assert not any(
            "Ashish Vaswani∗ Noam Shazeer" in c.text or "Yaniv Leviathan * 1 Matan" in c.text for c in chunks
        )
