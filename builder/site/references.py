"""The references file (`corpus/references.<hash>.json`): every paper's citation key, BibTeX entry and
CSL-JSON item, rendered once by the one writer (`builder.bibliography`) in reading-list
order. The search page fetches it when a visitor copies or exports citations (results, Ask, the whole
list, their own selection), so no entry is written in JavaScript; a paper page embeds its own entry.
It lives in a rendered folder: a re-render replaces it with the pages that name it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from builder.bibliography import Reference, rendered
from builder.site.store import write_hashed
from readingroom_core.formats.papers import PaperRecord
from readingroom_core.formats.versioned import FORMAT_VERSION


def paper_references(papers: list[PaperRecord]) -> dict[str, dict[str, Any]]:
    """Each paper's {key, bibtex, csl} by arXiv id, keys unique across the list."""
    return rendered(Reference.of(paper) for paper in papers)


def write_references(out_dir: Path, references: dict[str, dict[str, Any]]) -> str:
    """The references file, in reading-list order; its path under the site."""
    data = {"v": FORMAT_VERSION, "papers": [{"arxiv_id": i, **entry} for i, entry in references.items()]}
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return write_hashed(out_dir, "corpus", "references", ".json", text).path
