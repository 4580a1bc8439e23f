"""Damaged passage texts (`data/texts.*.bin`, which keyword and semantic results both show) are this
search's error, named for the texts file, under CPython on a built site: the dense side is not blamed,
semantic search stays loaded, and searches that show other papers go on in every mode."""

import json
import shutil
from array import array

import pytest
from support.worker_search import search

from builder.query_encoder import OnnxQueryEncoder
from readingroom_core.browser import open_folder
from readingroom_core.ranges import folder_reader
from readingroom_core.readers.papers import read_paper_table

QUERY = "grouped query attention"


def flip_head(data: bytearray, start: int, head_end: int) -> None:
    data[(start + head_end) // 2] ^= 0xFF


def flip_group(data: bytearray, start: int, head_end: int) -> None:
    data[head_end + 8] ^= 0xFF  # in the paper's first group, whose checksum its head holds


@pytest.fixture(scope="module")
def clean(built_sites):
    site = open_folder(built_sites.second)
    site.load_semantic()
    encode = OnnxQueryEncoder.from_site(built_sites.second, site.manifest).encode
    return site, lambda text: array("f", encode([text])[0]).tobytes()


def damaged_copy(built_sites, tmp_path, paper_id, damage):
    copy = tmp_path / "site"
    shutil.copytree(built_sites.second, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    table = read_paper_table(folder_reader(copy)(manifest["files"]["paper_table"]))
    index = next(i for i, paper in enumerate(table) if paper.id == paper_id)
    start = sum(paper.text_bytes[1] for paper in table[:index])
    path = copy / manifest["files"]["texts"]
    data = bytearray(path.read_bytes())
    damage(data, start, start + table[index].text_bytes[0])
    path.write_bytes(bytes(data))
    site = open_folder(copy)
    site.load_semantic()
    return site, manifest["files"]["texts"]


# (damage, mode): each ends as one error line naming the texts file, semantic search still loaded.
CASES = [(damage, mode) for damage in (flip_head, flip_group) for mode in ("hybrid", "bm25", "dense")]


@pytest.mark.parametrize(("damage", "mode"), CASES)
def test_damaged_passage_texts_fail_the_search_that_shows_them_in_one_line(
    built_sites, clean, tmp_path, damage, mode
):
    clean_site, vector_of = clean
    vector = vector_of(QUERY)
    top = search(clean_site, vector, query=QUERY, k=3, mode=mode)["hits"][0]["arxiv_id"]
    site, texts = damaged_copy(built_sites, tmp_path, top, damage)
    reply = search(site, vector if mode != "bm25" else None, query=QUERY, k=3, mode=mode)
    assert set(reply) == {"error", "damaged"} and reply["damaged"] == texts
    assert reply["error"].startswith(f"{texts} bytes") and "passage texts are damaged" in reply["error"]
    assert "\n" not in reply["error"] and "Traceback" not in reply["error"]
    assert site.tokenizer is not None and site.word_pieces is not None  # the dense side is not blamed
    # A search whose hits are other papers' goes on in every mode, and ranks as on the clean site.
    others = [p for p in clean_site.engine.papers if p.id != top]
    for paper in others:
        shown = search(clean_site, vector_of(paper.title), query=paper.title, k=3, mode="hybrid")["hits"]
        if top not in {hit["arxiv_id"] for hit in shown}:
            break
    else:
        pytest.fail("every title's top 3 shows the damaged paper")
    for other_mode in ("hybrid", "bm25", "dense"):
        other_vector = vector_of(paper.title) if other_mode != "bm25" else None
        request = {"query": paper.title, "k": 3, "mode": other_mode}
        want = search(clean_site, other_vector, **request)
        got = search(site, other_vector, **request)
        if top not in {hit["arxiv_id"] for hit in want["hits"]}:
            assert got == want


def test_damaged_passage_texts_are_an_ask_evidence_error_naming_the_file(built_sites, clean, tmp_path):
    clean_site, vector_of = clean
    vector = vector_of(QUERY)
    request = json.dumps({"question": QUERY, "history": [], "budget": 4500})
    sources = json.loads(clean_site.ask_evidence(request, vector))["sources"]
    site, texts = damaged_copy(built_sites, tmp_path, sources[0]["arxiv_id"], flip_group)
    reply = json.loads(site.ask_evidence(request, vector))
    assert reply["damaged"] == texts and "passage texts are damaged" in reply["error"]
    assert "\n" not in reply["error"]
