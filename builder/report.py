"""The build report: what was built, and one line for every paper or page that needs attention.

It is written next to the site (`build-report.json`) so `stats` can answer without rebuilding, and so
CI logs and the corpus page can show the same facts.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from builder.models import Failure

REPORT_FILE = "build-report.json"


class ReportError(ValueError):
    """The build report cannot be read; the message names the file and the fix."""


@dataclass(frozen=True)
class FlaggedPage:
    arxiv_id: str
    page: int
    kind: str
    detail: str = ""


@dataclass
class BuildReport:
    papers: int = 0  # papers that made it into the index
    pages: int = 0
    chunks: int = 0
    tokens: int = 0
    listed: int = 0  # papers on the reading list
    embedded_chunks: int = 0  # chunks that went through the model in this build (the rest came from cache)
    failures: list[Failure] = field(default_factory=list)
    flagged_pages: list[FlaggedPage] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # wall time per stage
    # arXiv id -> glyphs its PDF does not map to Unicode (dropped from the text), for papers with any
    unmapped_glyphs: dict[str, int] = field(default_factory=dict)
    # arXiv id -> where a paper built offline from a --pdfs folder took its PDF and metadata (metadata
    # read from a PDF's page 1 is a heuristic: the reader of the report should know which papers it is)
    sources: dict[str, str] = field(default_factory=dict)

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """Adds the block's wall time to `seconds[stage]`."""
        started = time.perf_counter()
        yield
        elapsed = self.seconds.get(stage, 0.0) + time.perf_counter() - started
        self.seconds[stage] = round(elapsed, 3)

    def to_json(self) -> dict:
        data = asdict(self)
        data["failures"] = [
            {"arxiv_id": f.arxiv_id, "stage": f.stage, "reason": f.reason, "hint": f.hint}
            for f in self.failures
        ]
        if not self.sources:  # builds that ask arXiv write the report they always wrote
            del data["sources"]
        return data

    @classmethod
    def from_json(cls, data: dict) -> BuildReport:
        return cls(
            papers=data["papers"],
            pages=data["pages"],
            chunks=data["chunks"],
            tokens=data["tokens"],
            listed=data.get("listed", 0),
            embedded_chunks=data.get("embedded_chunks", 0),
            failures=[Failure(**f) for f in data["failures"]],
            flagged_pages=[FlaggedPage(**p) for p in data["flagged_pages"]],
            seconds=data.get("seconds", {}),
            unmapped_glyphs=data.get("unmapped_glyphs", {}),
            sources=data.get("sources", {}),
        )

    def summary_lines(self) -> list[str]:
        lines = [
            f"papers   {self.papers} of {self.listed} listed",
            f"pages    {self.pages}",
            f"chunks   {self.chunks}",
            f"tokens   {self.tokens}",
            f"flagged pages {len(self.flagged_pages)}",
            f"unmapped glyphs {sum(self.unmapped_glyphs.values())} in {len(self.unmapped_glyphs)} papers",
            f"failures {len(self.failures)}",
        ]
        lines += [f"  {f.line()}" for f in self.failures]
        lines += [
            f"  [glyphs] {arxiv_id}: {count} without Unicode, dropped"
            for arxiv_id, count in sorted(self.unmapped_glyphs.items(), key=lambda item: -item[1])
        ]
        lines += [
            f"  [page] {p.arxiv_id} p.{p.page}: {p.kind} {p.detail}".rstrip() for p in self.flagged_pages
        ]
        lines += [f"  [pdfs] {said}" for said in self.sources.values()]
        return lines


def write_report(out_dir: Path, report: BuildReport) -> Path:
    path = out_dir / REPORT_FILE
    path.write_text(json.dumps(report.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_report(out_dir: Path) -> BuildReport:
    path = out_dir / REPORT_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: run `python -m builder build --out {out_dir}` first")
    try:
        return BuildReport.from_json(json.loads(path.read_bytes()))
    except (ValueError, KeyError, TypeError, AttributeError, IsADirectoryError) as exc:
        raise ReportError(
            f"{path} is damaged ({exc!r}); run `python -m builder build --out {out_dir}` again"
        ) from exc
