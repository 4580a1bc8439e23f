"""The texts file (readingroom_core.formats.texts): heads and deflated groups of chunks, read by range and
checked, the same chunks and page texts as the papers' own text."""

from __future__ import annotations

import hashlib
import json
import random
import zlib

import pytest

from builder.writers.texts import preset_dictionary, texts_file_bytes
from readingroom_core.formats.papers import PaperRecord
from readingroom_core.formats.texts import (
    DICTIONARY_BYTES,
    GROUP_CHUNKS,
    PageRange,
    PaperText,
    TextChunk,
    TextHead,
    chunk_id,
)
from readingroom_core.ranges import BlockReader, DamagedData
from readingroom_core.readers.texts import PaperTexts

PATH = "data/texts.bin"
WORDS = (
    "the of and to in a is that for we with model retrieval language as on are by this be our which "
    "training data passage query dense sparse attention layer results table figure show can from task"
).split()


def paper_text(
    paper_id: str, chunks: int, rng: random.Random, explicit_ids: bool = False
) -> tuple[str, PaperText]:
    """A paper's whole text and its chunks: spans that overlap by a sentence, pages of 900 characters."""
    sentences = [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20))).capitalize() + "."
        for _ in range(4 * chunks + 1)
    ]
    text = " ".join(sentences)
    starts = [0]
    for sentence in sentences[:-1]:
        starts.append(starts[-1] + len(sentence) + 1)
    made = []
    for number in range(chunks):
        start = starts[4 * number]  # five sentences, the last of them the next chunk's first
        end = starts[4 * number + 5] - 1 if 4 * number + 5 < len(starts) else len(text)
        body = text[start:end]
        made.append(
            TextChunk(
                f"{paper_id}#{number}" if explicit_ids else chunk_id(paper_id, start, end, body),
                start,
                end,
                body,
            )
        )
    pages = tuple(PageRange(1 + at // 900, at, min(at + 900, len(text))) for at in range(0, len(text), 900))
    return text, PaperText(paper_id, tuple(made), pages)


def site_texts(papers: list[PaperText], dictionary: bytes) -> tuple[bytes, list[PaperRecord]]:
    data, located = texts_file_bytes(papers, dictionary)
    records, first = [], 0
    for text, (head, whole, sha) in zip(papers, located, strict=True):
        records.append(PaperRecord(text.id, text.id, first, len(text.chunks), (head, whole), text_sha256=sha))
        first += len(text.chunks)
    return data, records


class Reads:
    """A reader of the texts file that counts its requests and can damage bytes."""

    def __init__(self, data: bytes) -> None:
        self.data = bytearray(data)
        self.ranges: list[tuple[int, int]] = []

    def __call__(self, path: str, start: int, end: int) -> bytes:
        assert path == PATH
        self.ranges.append((start, end))
        return bytes(self.data[start:end])


def opened(
    papers: list[PaperText], dictionary: bytes | None = None
) -> tuple[PaperTexts, Reads, list[PaperRecord]]:
    dictionary = (
        preset_dictionary([c.text for p in papers for c in p.chunks]) if dictionary is None else dictionary
    )
    data, records = site_texts(papers, dictionary)
    reads = Reads(data)
    paper_of = [index for index, record in enumerate(records) for _ in record.doc_ids]
    return PaperTexts(PATH, dictionary, records, paper_of, BlockReader(reads)), reads, records


@pytest.fixture
def corpus():
    rng = random.Random(7)
    made = [paper_text(f"2401.{n:05d}", chunks, rng) for n, chunks in enumerate((19, 1, 8, 0, 30))]
    made.append(paper_text("beir-doc", 3, rng, explicit_ids=True))
    return made


def test_every_chunk_and_page_reads_back_as_written(corpus):
    texts, reads, records = opened([text for _, text in corpus])
    for index, (whole, written) in enumerate(corpus):
        first = records[index].first_chunk
        assert [texts.chunk(first + n) for n in range(len(written.chunks))] == list(written.chunks)
        assert texts.head(index).pages == written.pages
        pages = [page.page for page in written.pages]
        rebuilt = texts.page_texts(index, pages)
        for page in written.pages if written.chunks else ():  # chunks cover the text: its pages are whole
            assert rebuilt[page.page] == whole[page.start : page.end].strip()
    assert len(reads.ranges) == len(set(reads.ranges))  # each head and group read once


def test_a_chunk_costs_its_papers_head_and_one_group(corpus):
    texts, reads, records = opened([text for _, text in corpus])
    paper = records[4]  # 30 chunks: four groups
    texts.chunk(paper.first_chunk + GROUP_CHUNKS + 2)
    head, group = reads.ranges
    assert head[1] - head[0] == paper.text_bytes[0]
    start = sum(record.text_bytes[1] for record in records[:4])
    assert head[0] == start and start + paper.text_bytes[0] < group[0] < start + paper.text_bytes[1]
    texts.chunk(paper.first_chunk + GROUP_CHUNKS + 7)  # the same group: nothing read
    assert len(reads.ranges) == 2
    # A page's text reads only the groups of the chunks that cover it.
    texts.page_texts(4, [texts.head(4).pages[-1].page])
    assert len(reads.ranges) == 3


def test_reading_many_chunks_announces_their_heads_then_their_groups(corpus):
    batches: list[list] = []
    papers = [text for _, text in corpus]
    dictionary = preset_dictionary([c.text for p in papers for c in p.chunks])
    data, records = site_texts(papers, dictionary)
    paper_of = [index for index, record in enumerate(records) for _ in record.doc_ids]
    texts = PaperTexts(PATH, dictionary, records, paper_of, BlockReader(Reads(data), batches.append))
    wanted = [0, 18, records[2].first_chunk, records[4].first_chunk + 29]
    ahead = texts.unread(wanted)
    texts.read(wanted)
    heads, groups = batches
    assert len(heads) == 3 and len(groups) == 4  # papers 0, 2, 4; groups 0/2 of paper 0, 0 of 2, 3 of 4
    assert [(block.path, block.start, block.end) for block in ahead] == [tuple(entry) for entry in heads]
    assert texts.unread(wanted) == []  # all kept
    # With its paper's head kept, a chunk of a group not read yet names that group alone.
    (group,) = texts.unread([1, 8])  # group 0 kept, group 1 not
    assert group.start == records[0].text_bytes[0] + (groups[0][2] - groups[0][1])


def test_ids_of_another_kind_are_kept_and_rebuilt_ones_left_out(corpus):
    papers = [text for _, text in corpus]
    texts, _, records = opened(papers)
    beir = records[-1]
    assert [texts.chunk(doc).id for doc in beir.doc_ids] == ["beir-doc#0", "beir-doc#1", "beir-doc#2"]
    dictionary = preset_dictionary([c.text for p in papers for c in p.chunks])
    data, _ = texts_file_bytes(papers[:1], dictionary)
    head_end = records[0].text_bytes[0]
    head = TextHead.from_json(json.loads(zlib.decompressobj(-15).decompress(data[:head_end])))
    group = data[head_end : head_end + head.groups[0][0]]
    entries = json.loads(zlib.decompressobj(-15, zdict=dictionary).decompress(group))
    assert all(isinstance(entry, str) for entry in entries)  # rebuilt by chunk_id: not stored


def test_a_damaged_head_or_group_is_refused_in_one_line(corpus):
    papers = [text for _, text in corpus]
    texts, reads, records = opened(papers)
    reads.data[records[0].text_bytes[0] + 3] ^= 0xFF  # paper 0's first group
    with pytest.raises(DamagedData, match=f"{PATH} bytes .* do not match their checksum") as refused:
        texts.chunk(0)
    assert "\n" not in str(refused.value)
    texts, reads, records = opened(papers)
    reads.data[1] ^= 0xFF  # paper 0's head
    with pytest.raises(DamagedData, match="do not match their checksum"):
        texts.chunk(0)


def test_a_head_that_is_not_deflate_or_lists_other_chunks_is_refused(corpus):
    papers = [text for _, text in corpus]
    dictionary = preset_dictionary([c.text for p in papers for c in p.chunks])
    data, records = site_texts(papers, dictionary)
    garbage = bytes(records[0].text_bytes[0])
    forged = [
        PaperRecord(
            r.id,
            r.title,
            r.first_chunk,
            r.chunk_count,
            r.text_bytes,
            text_sha256=hashlib.sha256(garbage).hexdigest()[:16],
        )
        if i == 0
        else r
        for i, r in enumerate(records)
    ]
    damaged = Reads(garbage + data[len(garbage) :])
    paper_of = [index for index, record in enumerate(records) for _ in record.doc_ids]
    with pytest.raises(DamagedData, match="could not be decompressed"):
        PaperTexts(PATH, dictionary, forged, paper_of, BlockReader(damaged)).chunk(0)
    fewer = [
        PaperRecord(
            r.id, r.title, r.first_chunk, r.chunk_count + (i == 0), r.text_bytes, text_sha256=r.text_sha256
        )
        for i, r in enumerate(records)
    ]
    with pytest.raises(
        ValueError, match="paper 2401.00000's text does not hold the chunks the paper table lists"
    ):
        PaperTexts(PATH, dictionary, fewer, paper_of, BlockReader(Reads(data))).chunk(0)


def test_the_dictionary_holds_the_commonest_words_last_and_shrinks_small_groups(corpus):
    chunk_texts = [c.text for _, p in corpus for c in p.chunks]
    dictionary = preset_dictionary(chunk_texts)
    assert dictionary == preset_dictionary(chunk_texts) and 0 < len(dictionary) <= DICTIONARY_BYTES
    commonest = max(WORDS, key=lambda word: sum(text.count(f" {word} ") for text in chunk_texts))
    assert dictionary.decode().rstrip().split()[-1].strip(",.") == commonest
    papers = [p for _, p in corpus]
    with_it, _ = texts_file_bytes(papers, dictionary)
    without, _ = texts_file_bytes(papers, b"")
    assert len(with_it) < 0.9 * len(without)
    texts, _, records = opened(papers, b"")  # no dictionary: still read back
    assert texts.chunk(records[4].first_chunk).text == papers[4].chunks[0].text


def test_kept_heads_and_groups_are_bounded_once_a_step_is_done(corpus):
    texts, reads, records = opened([text for _, text in corpus])
    texts._heads.limit = texts._groups.limit = 1
    every = range(sum(record.chunk_count for record in records))
    first = [texts.chunk(doc).text for doc in every]
    assert len(texts._groups) > 1  # within a step nothing is forgotten
    texts.trim()
    assert len(texts._heads) == len(texts._groups) == 1
    assert [texts.chunk(doc).text for doc in every] == first


def test_a_head_round_trips_through_its_json():
    head = TextHead.from_json({"spans": [0, 10, 8, 20], "pages": [[1, 0, 20]], "groups": [[17, "ab" * 8]]})
    assert TextHead.from_json(head.to_json()) == head and head.chunk_count == 2 and head.span(1) == (8, 20)


def test_the_pages_of_several_papers_are_read_in_two_batches(corpus):
    batches: list[list] = []
    papers = [text for _, text in corpus]
    dictionary = preset_dictionary([c.text for p in papers for c in p.chunks])
    data, records = site_texts(papers, dictionary)
    paper_of = [index for index, record in enumerate(records) for _ in record.doc_ids]
    reads = Reads(data)
    texts = PaperTexts(PATH, dictionary, records, paper_of, BlockReader(reads, batches.append))
    last = papers[4].pages[-1]
    wanted = {0: [1, 2], 4: [last.page]}
    texts.read_pages(wanted)
    assert len(batches) == 2 and len(batches[0]) == 2  # the heads, then every covering group
    read = len(reads.ranges)
    rebuilt = {paper: texts.page_texts(paper, pages) for paper, pages in wanted.items()}
    assert len(reads.ranges) == read  # page_texts finds them all
    assert rebuilt[4][last.page] == corpus[4][0][last.start : last.end].strip()
