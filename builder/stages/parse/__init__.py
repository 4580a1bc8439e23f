"""Parse stage: a PDF becomes cleaned text with an exact map back to pages, sections and references.

Answers cite `[arXiv:ID p.N]` and quotes are checked against `ParsedPaper.text`, so the text must be
in reading order (two-column pages included), free of running headers, page numbers and the arXiv
margin stamp, and every character must know its page. Work is done per line of PyMuPDF's "dict"
output (`page`), then per page (`layout`, `paragraphs`, `flags`) and per paper (`sections`). Results
are cached per PDF checksum and PARSER_VERSION: parsing is the slow step of a rebuild.
"""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf
from tqdm import tqdm

from builder.models import DEFAULT_LIMITS, Failure, FetchedPaper, PageFlag, PageSpan, ParsedPaper, ParseLimits
from builder.scratch import write_text_atomically
from builder.stages.parse.bounded import out_of_memory, run_bounded
from builder.stages.parse.flags import page_flag
from builder.stages.parse.glyphs import FontGlyphs
from builder.stages.parse.layout import body_font_size, drop_running_lines, merge_rows, reading_order
from builder.stages.parse.page import UNREADABLE_PAGE, read_page
from builder.stages.parse.paragraphs import Paragraph, Vocabulary, split_paragraphs
from builder.stages.parse.sections import find_references, find_sections

PARSER_VERSION = "3"  # part of the parse cache's key: it moves whenever the parser's output changes


class ParseError(Exception):
    """A PDF that cannot be parsed at all; `reason` names the file, `hint` says what to do."""

    def __init__(self, reason: str, hint: str):
        super().__init__(reason, hint)  # both in args, so the error survives pickling to a parent process
        self.reason = reason
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.reason} — {self.hint}"


class DamagedPDF(ParseError):
    """The file itself is damaged (empty, cut off, not a PDF): a fresh copy fixes it."""


def parse_pdf(path: Path, arxiv_id: str) -> ParsedPaper:
    """Read a PDF into a ParsedPaper; raise ParseError when the file cannot be read at all."""
    path = Path(path)
    doc = _open_document(path)
    try:
        fonts = FontGlyphs(doc)
        raw_pages = [read_page(doc, index, fonts) for index in range(doc.page_count)]
    finally:
        doc.close()
    if all(page.error for page in raw_pages):  # nothing to search or cite: a failure, not an empty paper
        first = raw_pages[0].error.removeprefix(UNREADABLE_PAGE)
        none = (
            "its one page could not" if len(raw_pages) == 1 else f"none of its {len(raw_pages)} pages could"
        )
        raise DamagedPDF(
            f"{path}: {none} be read (page 1: {first})",
            f"re-download: delete {path} from the cache and build again",
        )
    for page in raw_pages:
        page.lines = merge_rows(reading_order(page))
    body_size = body_font_size(raw_pages)
    drop_running_lines(raw_pages, body_size)
    vocabulary = Vocabulary.from_pages(raw_pages)

    texts: list[str] = []
    spans: list[PageSpan] = []
    flags: list[PageFlag] = []
    placed: list[tuple[int, Paragraph]] = []  # (page number, paragraph) in text order
    offset = 0
    for page in raw_pages:
        if texts:
            offset += 2  # the "\n\n" that joins pages
        paragraphs = split_paragraphs(page, body_size, vocabulary)
        page_text = "\n\n".join(p.text for p in paragraphs)
        cursor = offset
        for paragraph in paragraphs:
            paragraph.start = cursor
            cursor += len(paragraph.text) + 2
            placed.append((page.number, paragraph))
        spans.append(PageSpan(page=page.number, start=offset, end=offset + len(page_text)))
        texts.append(page_text)
        offset += len(page_text)
        flag = page_flag(page, page_text)
        if flag:
            flags.append(flag)
    text = "\n\n".join(texts)

    sections = find_sections(placed, body_size)
    references_span = find_references(sections, len(text))
    return ParsedPaper(
        arxiv_id=arxiv_id,
        text=text,
        pages=spans,
        sections=sections,
        references_span=references_span,
        page_count=len(raw_pages),
        flags=flags,
        unmapped_glyphs=sum(page.unmapped for page in raw_pages),
    )


def _open_document(path: Path) -> pymupdf.Document:
    redownload = f"re-download: delete {path} from the cache and build again"
    if not path.is_file():
        raise ParseError(f"{path} does not exist", "run the fetch stage again so the PDF is downloaded")
    with path.open("rb") as handle:
        head = handle.read(1024)
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(0, size - 2048))
        tail = handle.read()
    if size == 0:
        raise DamagedPDF(f"{path} is empty (0 bytes)", redownload)
    if b"%PDF-" not in head:
        raise DamagedPDF(f"{path} is not a readable PDF (no %PDF- header; starts {head[:20]!r})", redownload)
    if b"%%EOF" not in tail:
        raise DamagedPDF(f"{path} is truncated (no %%EOF marker at its end)", redownload)
    doc = None
    try:
        doc = pymupdf.open(path, filetype="pdf")
        pages = 0 if doc.needs_pass else doc.page_count  # a damaged page tree raises here
    except Exception as error:  # MuPDF raises several types for damaged files
        if doc is not None:
            doc.close()
        if out_of_memory(error):
            raise MemoryError(str(error)) from error
        raise DamagedPDF(f"{path} is not a readable PDF ({error})", redownload) from error
    if doc.needs_pass:
        doc.close()
        raise ParseError(
            f"{path} is encrypted and needs a password",
            "the PDF is password-protected; remove it from the reading list or provide an unencrypted copy",
        )
    if pages == 0:
        doc.close()
        raise DamagedPDF(f"{path} has no pages", redownload)
    return doc


def _cache_path(paper: FetchedPaper, cache_dir: Path) -> Path:
    return cache_dir / "parsed" / PARSER_VERSION / f"{paper.pdf_sha256}.json"


def parsed_text_id(paper: FetchedPaper) -> str:
    """What names the paper's parsed text: its PDF's checksum and the parser's version. A cache of
    what is read from the parsed text keys on it, so a new parser never serves an old reading."""
    return f"{paper.pdf_sha256}-p{PARSER_VERSION}"


def read_cached(paper: FetchedPaper, cache_dir: Path) -> ParsedPaper | None:
    """The parsed paper kept at `<cache>/parsed/<PARSER_VERSION>/<pdf sha256>.json`, if any."""
    path = _cache_path(paper, cache_dir)
    if not path.exists():
        return None
    return ParsedPaper.from_json(json.loads(path.read_text(encoding="utf-8")))


def parse_cached(paper: FetchedPaper, cache_dir: Path) -> ParsedPaper:
    """The parsed paper from the cache, else parsed and kept there."""
    cached = read_cached(paper, cache_dir)
    if cached is not None:
        return cached
    parsed = parse_pdf(Path(paper.pdf_path), paper.meta.arxiv_id)
    path = _cache_path(paper, cache_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, json.dumps(parsed.to_json(), ensure_ascii=False))
    return parsed


def parse_or_failure(job: tuple[FetchedPaper, Path]) -> ParsedPaper | Failure:
    """One paper (a job: the paper and the cache folder); a PDF that breaks the parser becomes a
    Failure, never an exception that stops the build. MemoryError goes up: it means the paper's
    process is over its memory limit, which the caller reports as such."""
    paper, cache_dir = job
    arxiv_id = paper.meta.arxiv_id
    try:
        return parse_cached(paper, cache_dir)
    except DamagedPDF as exc:
        if paper.source != "mirror":
            return Failure(arxiv_id, "parse", exc.reason, exc.hint)
        name = Path(paper.pdf_path).name  # the researcher's own folder: never ask them to delete from it
        hint = f"put a good copy of pdf/{name} into the mirror, or remove the paper from the reading list"
        return Failure(arxiv_id, "parse", exc.reason, hint)
    except ParseError as exc:
        return Failure(arxiv_id, "parse", exc.reason, exc.hint)
    except MemoryError:
        raise
    except Exception as exc:
        if out_of_memory(exc):  # MuPDF's own report of an allocation over the limit
            raise MemoryError(str(exc)) from exc
        return Failure(
            arxiv_id,
            "parse",
            f"{Path(paper.pdf_path).name} could not be parsed ({type(exc).__name__}: {exc})",
            "report this PDF as a parser bug; the rest of the build went on",
        )


def over_limit(job: tuple[FetchedPaper, Path], why: str) -> Failure:
    """The failure line of a paper that went over a parse limit (`why` names the limit and its option)."""
    paper, _ = job
    return Failure(
        paper.meta.arxiv_id,
        "parse",
        f"{Path(paper.pdf_path).name} {why}",
        "if the paper is genuine, build again with that limit raised; otherwise remove it from the reading list",
    )


def parse_papers(
    papers: list[FetchedPaper],
    cache_dir: Path,
    jobs: int,
    progress: bool,
    limits: ParseLimits = DEFAULT_LIMITS,
) -> list[ParsedPaper | Failure]:
    """Every paper parsed (or taken from the cache), in order; each paper not in the cache is parsed
    in a process of its own under `limits`, `jobs` at a time."""
    results: list[ParsedPaper | Failure | None] = [read_cached(paper, cache_dir) for paper in papers]
    todo = [index for index, result in enumerate(results) if result is None]
    work = [(papers[index], cache_dir) for index in todo]
    with tqdm(
        desc="parse", unit="paper", total=len(papers), initial=len(papers) - len(todo), disable=not progress
    ) as bar:
        for position, result in run_bounded(work, parse_or_failure, over_limit, limits, jobs):
            results[todo[position]] = result
            bar.update()
    return [result for result in results if result is not None]
