"""The site's data files: one format version, a typed record for every record they hold, and each file's
writer beside its reader.

Layout (paths relative to the site root; data files are named `<stem>.<hash12><ext>` by the builder so
a visitor's cache never serves stale data, and `manifest.json` names each by role):
- `manifest.json` (`Manifest`): written last, read first; names every file, the model, index and BM25
  parameters, counts and tool versions.
- A file that gzip shrinks by 5% or more (builder/site/store.py) is stored only as `<path>.gz`: the
  manifest lists both paths, `<path>` with the checksum of the contents and `<path>.gz` with that of the
  stored bytes. Readers ask for `<path>` and get the contents (`ranges.folder_reader`, the worker).
- papers (`data/papers.*.json`): `{"v", "papers": [PaperRecord, ...]}` in reading-list order, for the
  pages; search loads the paper table and the papers' vectors instead (`papertable.py`).
- chunk table (`data/chunks.*.bin`, `ChunkTable`): page and section of every chunk as typed columns (a
  JSON header, then the columns), enough to filter and cite any chunk without its text; section titles
  stored once.
- paper texts (`data/texts.*.bin`, ranged, `papertexts.py`): each paper's head (chunk and page spans) and
  its chunks in small deflated groups, read by range when a chunk is shown or cited and checked against
  the sha256 prefixes its paper's record and head hold (the manifest, read at start-up, does not grow
  with the list's texts); the page spans rebuild a cited page's text from the chunks, so a quote is
  checked on that page.
- postings (`data/postings.*.json`) and dense (`data/dense.*.json`): the directories of the keyword and
  vector files search reads by range (`termindex.py`, `denselists.py`); graph (`data/graph.*.json`): the
  list's citations (builder/citation_graph.py).
A chunk's number (0…n-1, papers in reading-list order, chunks in reading order) is its doc id in the
postings and the dense lists, and its key in the USearch HNSW file the builder keeps in its cache.

Every record converts to and from the JSON it is stored as (`to_json`/`from_json`), with the keys in a
fixed order, so the same build writes the same bytes. Stdlib only (CPython and Pyodide read alike).
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import zlib
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

FORMAT_VERSION = 10  # 2: postings and vectors read by range, the citation graph, short names; 3: paper table;
# 4: the forward file that rescores keyword candidates, paper texts stored only as .gz; 5: varint postings
# pages, a dictionary entry names its first pages (the rest's records lie before them), no HNSW file in
# the site, a paper's record holds its text's checksum (the manifest no longer lists the texts); 6: a file
# that gzip shrinks is stored only as its .gz (readers unpack it: ranges.folder_reader, the worker); 7: the
# dense lists' codes are their rows' residuals from the list's mean, with a weight byte a row; 8: the chunk
# table's columns typed (a binary file), 64 bits of each forward group's sha256 in the forward index, a
# text file without the chunk ids its chunks rebuild (`chunk_id`), a paper table without the text paths it
# rebuilds (`papertable.paper_text_path`); 9: paper texts in one ranged file, a head per paper and chunks
# in deflated groups (`papertexts.py`), read a group at a time, not a paper's whole text; 10: 64 bits of
# each dense row's sha256 in its list, not 128
MANIFEST_FILE = "manifest.json"
GZIP_MAGIC = b"\x1f\x8b"
GZIP_SUFFIX = ".gz"  # a file stored gzipped is `<its path>.gz` (builder/site/store.py)


def compact_json(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def load_versioned(data: bytes | str, what: str, key: str = "v") -> dict[str, Any]:
    """A site file's JSON, refused unless its `key` holds this reader's FORMAT_VERSION."""
    loaded = json.loads(data)
    if not isinstance(loaded, dict) or loaded.get(key) != FORMAT_VERSION:
        version = loaded.get(key) if isinstance(loaded, dict) else None
        raise ValueError(
            f"{what} has format {version!r}; this reader knows {FORMAT_VERSION} (rebuild the site with this version)"
        )
    return loaded


# --- manifest ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Artifact:
    """One file of the site with its size and checksum: the browser checks every file against it."""

    path: str  # relative to the site root, with forward slashes
    bytes: int
    sha256: str

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Artifact:
        return cls(data["path"], data["bytes"], data["sha256"])


@dataclass(frozen=True)
class DataFiles:
    """The data files by role. A BEIR site in memory has no query encoder files and no `graph`."""

    papers: str
    chunks: str
    postings: str
    encoder: str = ""
    word_pieces: str = ""  # the directory of the encoder's word-piece rows (readingroom_core.wordpieces)
    vocab: str = ""
    char_classes: str = ""
    graph: str = ""
    dense: str = ""  # the dense directory (readingroom_core.denselists)
    paper_table: str = ""  # what search loads of the papers (papertable.py); "": it reads `papers`
    paper_vectors: str = ""  # the paper view's int8 rows (papertable.py); "": no paper view
    # The postings' forward index (termindex.py; its directory names it too): read by range like the other
    # postings files, but whole by the first query of several words, so the browser fetches it while
    # Python boots, before the encoder's download shares the line.
    forward_index: str = ""
    texts: str = ""  # the paper texts (readingroom_core.papertexts), read by range
    text_dictionary: str = ""  # the preset dictionary their groups deflate against

    def to_json(self) -> dict[str, str]:
        return {role: path for role, path in asdict(self).items() if path}


@dataclass(frozen=True)
class ModelSection:
    """The sentence embedder whose vectors the site holds; queries must be embedded by the same one."""

    name: str
    weights_sha256: str
    dims: int
    max_tokens: int
    query_prefix: str = ""
    document_prefix: str = ""
    engine: str = ""


@dataclass(frozen=True)
class IndexSection:
    """How the int8 rows were made (the dense lists and the HNSW file hold the same rows), and the HNSW
    file's parameters."""

    scale: float  # int8 row = clip(round(unit vector * scale), -127, 127)
    metric: str
    dtype: str
    connectivity: int
    expansion_add: int
    expansion_search: int  # the reader's default ef
    percentile: float  # of |x_i| that calibrated `scale`
    usearch_version: str


@dataclass(frozen=True)
class Bm25Section:
    k1: float
    b: float
    indexed: str  # what text of a chunk the postings index


@dataclass(frozen=True)
class Counts:
    papers: int
    pages: int
    chunks: int
    failures: int


@dataclass(frozen=True)
class RuntimeSection:
    """The browser runtime: its files by role (`app`, `worker`, `wheel`, `pyodide`, …), the npm versions
    it was copied from, and every file it consists of."""

    files: dict[str, str]
    versions: dict[str, str]
    artifacts: tuple[Artifact, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            **self.files,
            "versions": self.versions,
            "artifacts": [asdict(a) for a in sorted(self.artifacts, key=lambda a: a.path)],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RuntimeSection:
        files = {role: path for role, path in data.items() if role not in ("versions", "artifacts")}
        return cls(files, data["versions"], tuple(Artifact.from_json(a) for a in data["artifacts"]))


@dataclass(frozen=True)
class Manifest:
    """`manifest.json`: names every data file by role (`files`) and lists every file with its checksum
    (`artifacts`; a file stored only gzipped is listed by both its paths, see the module's docstring);
    `encoder` is the query encoder's own config (its `max_length` bounds a query); `runtime` is added by
    the render step, so a manifest in the making has none."""

    title: str
    base_url: str
    model: ModelSection
    index: IndexSection
    bm25: Bm25Section
    encoder: dict[str, Any]
    counts: Counts
    files: DataFiles
    artifacts: tuple[Artifact, ...]
    tools: dict[str, str]
    built_at: str
    runtime: RuntimeSection | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "format_version": FORMAT_VERSION,
            "title": self.title,
            "base_url": self.base_url,
            "model": asdict(self.model),
            "index": asdict(self.index),
            "bm25": asdict(self.bm25),
            "encoder": self.encoder,
            "counts": asdict(self.counts),
            "files": self.files.to_json(),
            "artifacts": [asdict(a) for a in sorted(self.artifacts, key=lambda a: a.path)],
            "tools": self.tools,
            "built_at": self.built_at,
        }
        if self.runtime is not None:
            data["runtime"] = self.runtime.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Manifest:
        runtime = data.get("runtime")
        return cls(
            title=data["title"],
            base_url=data["base_url"],
            model=ModelSection(**data["model"]),
            index=IndexSection(**data["index"]),
            bm25=Bm25Section(**data["bm25"]),
            encoder=data["encoder"],
            counts=Counts(**data["counts"]),
            files=DataFiles(**data["files"]),
            artifacts=tuple(Artifact.from_json(a) for a in data["artifacts"]),
            tools=data["tools"],
            built_at=data["built_at"],
            runtime=RuntimeSection.from_json(runtime) if runtime is not None else None,
        )


def manifest_bytes(manifest: Manifest) -> bytes:
    """Indented: the manifest is the build's human-readable record of itself."""
    return (json.dumps(manifest.to_json(), indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def read_manifest(data: str | bytes) -> Manifest:
    return Manifest.from_json(load_versioned(data, MANIFEST_FILE, key="format_version"))


# --- papers ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SectionEntry:
    """A heading of a paper, for its page's table of contents."""

    title: str
    page: int
    level: int


@dataclass(frozen=True)
class PaperRecord:
    """One paper of the papers file. Its chunks are doc ids `first_chunk … first_chunk + chunk_count - 1`;
    `text_bytes` is (its head's size, its whole size) in the texts file (`papertexts`), papers in table
    order; `vector` is what the paper as a whole is about (see
    `PaperVector`), absent where a site has no paper view (BEIR, where a passage is its own paper)."""

    id: str
    title: str
    first_chunk: int
    chunk_count: int
    text_bytes: tuple[int, int] = (0, 0)
    authors: tuple[str, ...] = ()
    year: int | None = None
    categories: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    version: str = ""
    abstract: str = ""
    published: str = ""
    updated: str = ""
    first_version: str = ""
    primary_category: str = ""
    abs_url: str = ""
    pdf_url: str = ""
    note: str = ""
    pages: int = 0
    sections: tuple[SectionEntry, ...] = ()
    vector: str | None = None
    short_names: tuple[str, ...] = ()  # "LoRA", "BERT": names the paper gives itself (navigation.short_names)
    text_sha256: str = ""  # its text head's sha256 prefix (papertexts.SHA_DIGITS)

    @property
    def doc_ids(self) -> range:
        return range(self.first_chunk, self.first_chunk + self.chunk_count)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "version": self.version,
            "title": self.title,
            "authors": list(self.authors),
            "abstract": self.abstract,
            "published": self.published,
            "updated": self.updated,
            "first_version": self.first_version,
            "year": self.year,
            "categories": list(self.categories),
            "primary_category": self.primary_category,
            "abs_url": self.abs_url,
            "pdf_url": self.pdf_url,
            "tags": list(self.tags),
            "note": self.note,
            "pages": self.pages,
            "sections": [asdict(s) for s in self.sections],
            "short_names": list(self.short_names),
        }
        if self.vector is not None:
            data["vector"] = self.vector
        data.update(
            chunks=[self.first_chunk, self.chunk_count],
            text=list(self.text_bytes),
            text_sha256=self.text_sha256,
        )
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PaperRecord:
        first, count = data["chunks"]
        head_bytes, text_bytes = data["text"]
        return cls(
            id=data["id"],
            title=data["title"],
            first_chunk=first,
            chunk_count=count,
            text_bytes=(head_bytes, text_bytes),
            authors=tuple(data["authors"]),
            year=data["year"],
            categories=tuple(data["categories"]),
            tags=tuple(data["tags"]),
            version=data["version"],
            abstract=data["abstract"],
            published=data["published"],
            updated=data["updated"],
            first_version=data["first_version"],
            primary_category=data["primary_category"],
            abs_url=data["abs_url"],
            pdf_url=data["pdf_url"],
            note=data["note"],
            pages=data["pages"],
            sections=tuple(SectionEntry(**s) for s in data["sections"]),
            vector=data.get("vector"),
            short_names=tuple(data["short_names"]),
            text_sha256=data["text_sha256"],
        )


def papers_bytes(records: Iterable[PaperRecord]) -> bytes:
    return compact_json({"v": FORMAT_VERSION, "papers": [record.to_json() for record in records]})


def read_papers(data: bytes | str, what: str = "papers file") -> list[PaperRecord]:
    return [PaperRecord.from_json(record) for record in load_versioned(data, what)["papers"]]


class PaperVector:
    """The one definition of a paper's vector as the site stores it: base64 of int8 values scaled so the
    largest magnitude is 127. Only its direction is used (cosine), so no scale is stored, and 384
    dimensions take 512 characters. The paper view of hybrid search and related papers both read it."""

    @staticmethod
    def encode(values: Sequence[float]) -> str:
        peak = max((abs(value) for value in values), default=0.0) or 1.0
        quantized = bytes(round(value / peak * 127) & 0xFF for value in values)
        return base64.b64encode(quantized).decode("ascii")

    @staticmethod
    def decode(text: str) -> list[int]:
        return [value - 256 if value > 127 else value for value in base64.b64decode(text)]


# --- chunk table -------------------------------------------------------------------------------------


CHUNK_COLUMNS = ("page_start", "page_span", "section")
_UNSIGNED = "BHI"  # the typed arrays a column may be stored as: 1, 2 or 4 bytes a value


@dataclass(frozen=True)
class ChunkTable:
    """Page and section of every chunk by doc id, stored as typed columns, each in the fewest bytes that
    hold its largest value (at 10,000 papers, 842,003 chunks: 1 + 1 + 2 bytes a chunk, 512 KB gzipped
    where JSON lists took 811 KB and 7.4 MB to parse; as Python lists they held 41 MB, as typed arrays of
    4 bytes 10.1 MB, now 3.4)."""

    page_start: Sequence[int]
    page_span: Sequence[int]  # page_end - page_start
    section: Sequence[int]  # index into `sections`
    sections: list[str]

    @property
    def n(self) -> int:
        return len(self.page_start)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[int, int, str]]) -> ChunkTable:
        """(page_start, page_end, section title) of every chunk in doc-id order."""
        rows = list(rows)
        titles: dict[str, int] = {}
        section = [titles.setdefault(title, len(titles)) for _, _, title in rows]
        return cls(
            page_start=[start for start, _, _ in rows],
            page_span=[end - start for start, end, _ in rows],
            section=section,
            sections=list(titles),
        )

    def page_end(self, doc_id: int) -> int:
        return self.page_start[doc_id] + self.page_span[doc_id]

    def section_of(self, doc_id: int) -> str:
        return self.sections[self.section[doc_id]]

    def to_bytes(self) -> bytes:
        """A little-endian uint32 header length, the header ({"v", "n", "columns": [[name, typecode], ...],
        "sections"}) as JSON, then each column's values, little-endian."""
        columns = [_column(name, getattr(self, name)) for name in CHUNK_COLUMNS]
        header = compact_json(
            {
                "v": FORMAT_VERSION,
                "n": self.n,
                "columns": [
                    [name, values.typecode] for name, values in zip(CHUNK_COLUMNS, columns, strict=True)
                ],
                "sections": self.sections,
            }
        )
        return len(header).to_bytes(4, "little") + header + b"".join(little_endian(c) for c in columns)

    @classmethod
    def from_bytes(cls, data: bytes, what: str) -> ChunkTable:
        size = int.from_bytes(data[:4], "little")
        if len(data) < 4 + size:
            raise ValueError(f"{what} is cut short before its columns; rebuild the site")
        header = load_versioned(data[4 : 4 + size], what)
        n, at, columns = header["n"], 4 + size, {}
        for name, code in header["columns"]:
            if code not in _UNSIGNED:
                raise ValueError(f"{what}: column {name!r} has type {code!r}, not one of {_UNSIGNED}")
            values = array(code)
            end = at + n * values.itemsize
            if end > len(data):
                raise ValueError(f"{what} is cut short in its column {name!r}; rebuild the site")
            values.frombytes(data[at:end])
            if sys.byteorder != "little":
                values.byteswap()
            columns[name], at = values, end
        if at != len(data) or set(columns) != set(CHUNK_COLUMNS):
            raise ValueError(
                f"{what} does not hold the columns {CHUNK_COLUMNS} of {n} chunks; rebuild the site"
            )
        sections = header["sections"]
        if max(columns["section"], default=-1) >= len(sections):
            raise ValueError(f"{what} names a section it does not list; rebuild the site")
        return cls(columns["page_start"], columns["page_span"], columns["section"], sections)


def _column(name: str, values: Sequence[int]) -> array[int]:
    """The values as the smallest unsigned typed array that holds them."""
    largest = max(values, default=0)
    code = next((code for code in _UNSIGNED if largest < 1 << 8 * array(code).itemsize), None)
    if code is None or min(values, default=0) < 0:
        raise ValueError(f"chunk table column {name!r} holds values outside 0..2**32-1")
    return array(code, values)


def little_endian(values: array[int]) -> bytes:
    """A typed array's bytes as stored: little-endian whatever the machine."""
    if sys.byteorder != "little":
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def chunk_table_bytes(table: ChunkTable) -> bytes:
    return table.to_bytes()


def read_chunk_table(data: bytes, what: str = "chunk table") -> ChunkTable:
    return ChunkTable.from_bytes(data, what)


# --- per-paper text (stored by papertexts.py) -------------------------------------------------------


def chunk_id(paper_id: str, start: int, end: int, text: str) -> str:
    """A chunk's id: 64 bits of the sha256 of its paper, span and text. The texts file leaves out the ids
    it can rebuild so (at 10,000 papers, 12.9 of the texts' 210 MB, 6% of a text a result fetched)."""
    return hashlib.sha256(f"{paper_id}\0{start}\0{end}\0{text}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class TextChunk:
    """A chunk's text and its character span [start, end) in the paper's text."""

    id: str
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class PageRange:
    """A page's character span [start, end) in the paper's text (pages are 1-based)."""

    page: int
    start: int
    end: int


@dataclass(frozen=True)
class PaperText:
    """A paper's chunks and the span of each of its pages, as the builder hands them to the texts file."""

    id: str
    chunks: tuple[TextChunk, ...]
    pages: tuple[PageRange, ...] = field(default=())


def gunzipped(data: bytes) -> bytes:
    """gzip bytes unpacked; bytes that are not gzip (a host that decoded the file on its way) as they are."""
    return zlib.decompress(data, wbits=31) if data[:2] == GZIP_MAGIC else data  # 31: a gzip header
