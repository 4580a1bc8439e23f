"""A built site's chunks as rows (paper, pages, text, section), and the check that each question's evidence
lands in a chunk on its gold page: test_build.py runs it on the generated papers, test_mirror_site.py on
the mirror's.
"""

import json
import re

from readingroom_core.browser import open_folder
from readingroom_core.formats.chunks import read_chunk_table
from readingroom_core.ranges import folder_reader


def normalise(text: str) -> str:
    text = text.replace("ﬁ", "fi").replace("ﬂ", "fl").replace("ﬀ", "ff")
    text = re.sub(r"(\w)- (\w)", r"\1\2", text)
    return " ".join(text.split()).lower()


def site_chunks(site):
    """Every chunk of a built site, joined from the chunk table and the texts file."""
    manifest = json.loads((site / "manifest.json").read_text())
    table = read_chunk_table(folder_reader(site)(manifest["files"]["chunks"]))
    engine = open_folder(site).engine
    rows = []
    for paper in json.loads(folder_reader(site)(manifest["files"]["papers"]).decode("utf-8"))["papers"]:
        first, count = paper["chunks"]
        for doc in range(first, first + count):
            chunk = engine.chunk(doc)
            start = table.page_start[doc]
            rows.append(
                {
                    "arxiv_id": paper["id"],
                    "page_start": start,
                    "page_end": table.page_end(doc),
                    "text": chunk.text,
                    "section": table.section_of(doc),
                }
            )
    assert len(rows) == table.n == manifest["counts"]["chunks"]
    return rows


def assert_evidence_on_gold_pages(chunks, questions_file, papers) -> int:
    """Every answerable question's evidence sentence is in a chunk whose page span covers its gold page."""
    checked = 0
    for line in questions_file.read_text().splitlines():
        question = json.loads(line)
        gold = question["relevant"][0] if question["relevant"] else None
        if not gold or gold["arxiv_id"] not in papers:
            continue
        evidence = normalise(question["evidence"])
        hits = [c for c in chunks if c["arxiv_id"] == gold["arxiv_id"] and evidence in normalise(c["text"])]
        assert hits, f"{question['id']}: evidence not found in any chunk"
        assert any(c["page_start"] <= gold["pages"][0] <= c["page_end"] for c in hits), question["id"]
        checked += 1
    return checked
