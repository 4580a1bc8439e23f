"""`manifest.json` (`Manifest`): written last, read first; names every data file by role, the model,
index and BM25 parameters, counts and tool versions, and lists every file of the site with its size and
checksum (a file stored only gzipped by both its paths: `formats.versioned`).

builder/site/manifest.py fills the record in; the browser, the CLI and the tests read it here.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from readingroom_core.formats.versioned import FORMAT_VERSION, load_versioned

MANIFEST_FILE = "manifest.json"


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
    word_pieces: str = ""  # the directory of the encoder's word-piece rows (`formats.wordpieces`)
    vocab: str = ""
    char_classes: str = ""
    graph: str = ""
    dense: str = ""  # the dense directory (`formats.dense`)
    paper_table: str = ""  # what search loads of the papers (`formats.papers`); "": it reads `papers`
    paper_vectors: str = ""  # the paper view's int8 rows (`formats.papers`); "": no paper view
    # The postings' forward index (`formats.forward`; their directory names it too): read by range like the
    # other postings files, but whole by the first query of several words, so the browser fetches it while
    # Python boots, before the encoder's download shares the line.
    forward_index: str = ""
    texts: str = ""  # the paper texts (`formats.texts`), read by range
    text_dictionary: str = ""  # the preset dictionary their groups deflate against
    missing: str = ""  # the works the list cites and lacks (`formats.missing`), read at the first search

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
