"""The term index a site ships (terms, postings pages, forward file and its index, and their directory),
written by the builder's own postings writer (`builder.writers.postings.TermLayout`), without the vectors'
files that `builder.site.search_files.index_files` writes beside it: a test reads a ranged term index
from a folder without building a site."""

from pathlib import Path

from builder.writers.postings import TermLayout
from readingroom_core.bm25 import Postings


def write_term_files(postings: Postings, folder: Path) -> Path:
    """The term index of `postings` under `folder`, at the paths a site's plain names give; the path of
    its directory (the postings directory, which names the others relative to `folder`)."""
    layout = TermLayout(postings)
    files = {
        "data/terms.json": layout.terms_bytes,
        "data/postings-pages.bin": layout.pages_bytes,
        "data/postings-forward.bin": layout.forward_bytes,
        "data/postings-forward-index.bin": layout.forward_index_bytes,
    }
    files["data/postings.json"] = layout.directory_bytes(*files)
    for path, data in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(data)
    return folder / "data" / "postings.json"
