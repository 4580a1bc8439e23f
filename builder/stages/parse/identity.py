"""Whether a file is a PDF with pages, and which paper its first page says it is: what a PDF from a
folder must show before it enters the cache. It runs like a paper's parse, in a process of its own
under the parse limits (`bounded`), because reading a page's text is MuPDF's work, which a hostile
file can make endless.

arXiv stamps the PDFs it serves with `arXiv:<id>v<N>  [<category>]  <date>` up the left margin of
the first page, and MuPDF extracts that stamp as a line of its own (so it is in every one of
../shared/arxiv-mirror's 112 PDFs). A PDF without one (older papers, an institution's own copies)
says nothing about which paper it is, and passes on the other checks alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import pymupdf

from builder.stages.parse.bounded import out_of_memory
from builder.stages.parse.title_page import read_stamp


@dataclass(frozen=True)
class Inspection:
    problem: str = ""  # why the file is no usable PDF, worded to follow its name; "" when it is one
    stamped: str = ""  # the versioned id stamped on its first page (e.g. 2003.06713v1); "" when none


def inspect_pdf(path: str) -> Inspection:
    """The file at `path` opened with MuPDF: a problem when it is not a PDF, is encrypted or has no
    page that loads; else the versioned id of arXiv's stamp on its first page, if it carries one."""
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except Exception as error:  # MuPDF raises several types for damaged files
        return Inspection(problem=f"is not a readable PDF ({_mupdf_error(error)})")
    with doc:
        try:
            count = 0 if doc.needs_pass else doc.page_count
        except Exception as error:  # a damaged page tree
            return Inspection(problem=f"is not a readable PDF ({_mupdf_error(error)})")
        if doc.needs_pass:
            return Inspection(problem="is encrypted and needs a password")
        if count == 0:
            return Inspection(problem="has no pages")
        first_error = ""
        for index in range(count):
            try:
                page = doc.load_page(index)
            except Exception as error:
                first_error = first_error or f"page {index + 1}: {_mupdf_error(error)}"
                continue
            return Inspection(stamped=_stamp(page) if index == 0 else "")
    pages = f"{count} page" + ("s" if count != 1 else "")
    return Inspection(problem=f"has {pages}, and not one can be opened ({first_error})")


def _stamp(page: pymupdf.Page) -> str:
    try:
        text = page.get_text("text")
    except Exception as error:  # a page whose text cannot be read says nothing about which paper it is
        _mupdf_error(error)
        return ""
    stamp = read_stamp(text)
    return stamp.versioned_id if stamp else ""


def _mupdf_error(error: Exception) -> str:
    """The error's text, unless it is an allocation over the memory limit: that is raised as such, so
    the process ends as over its memory, not as a damaged file."""
    if out_of_memory(error):
        raise MemoryError(str(error)) from error
    return " ".join(str(error).split())
