"""What a search is asked: its mode, fusion and weights, the paper view, the diversity caps and the ranged
indexes' bounds, each default with why and where it was measured; `check_options` refuses what no
search can run. The CLI, the evaluation, the benchmarks and the browser build these; `engine` runs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from readingroom_core.filters import Filters
from readingroom_core.formats.postings import DEFAULT_PREFIX
from readingroom_core.readers.dense import DEFAULT_RESCORE, DEFAULT_SCAN

MODES = ("hybrid", "bm25", "dense")
FUSIONS = ("weighted", "rrf")


@dataclass
class SearchOptions:
    k: int = 10
    mode: str = "hybrid"  # "hybrid" | "bm25" | "dense"
    fusion: str = "weighted"  # "weighted" (min-max scores) | "rrf"
    # Weighted fusion; BM25 gets 1 - dense_weight. The weight that scored best over the answerable dev and
    # extra questions and on BEIR, the held-out extra questions most of all (commit cf81e6d; what it gives
    # now: docs/measurements/eval.json and beir.json).
    dense_weight: float = 0.3
    # The paper view (weighted hybrid only, on sites whose papers carry a vector): each result gains
    # paper_weight x its paper's similarity to the query (min-max over the papers), and the opening passage
    # of the paper_openings most similar papers joins the dense candidates with that similarity, so a
    # paraphrase finds the paper it means. Chosen on the tuning questions (dev, extra, tune), where a larger
    # weight helps tune and hurts extra (commit 1dd2d35; `eval --paper-weight 0 --paper-openings 0` turns
    # it off, and docs/measurements/eval.json holds each set with and without it).
    paper_weight: float = 0.3
    paper_openings: int = 3
    rrf_k: int = 60
    # Per retriever, before fusion: as many as page-level MRR and nDCG@10 on both question sets need, for
    # less search work a query than more would cost (commit 1c3f061).
    candidates: int = 60
    # Diversity caps, 0 = unlimited. One chunk per page lifts page-level nDCG@10 on the answerable dev and
    # extra questions, while tight caps per paper and per section cost some, as questions often have
    # several gold pages in one paper (commit 3c63643).
    per_paper: int = 10  # most chunks of one paper in the top k
    per_section: int = 3  # most chunks of one (paper, section) in the top k
    per_page: int = 1  # most chunks citing one page of a paper (a chunk cites every page it spans)
    # The ranged indexes' bounds (0 = read everything, the exhaustive search the bounds are measured
    # against): postings read per query term (readers.postings), rows whose codes are scored and rows
    # rescored (readers.dense).
    postings_prefix: int = DEFAULT_PREFIX
    scan: int = DEFAULT_SCAN
    rescore: int = DEFAULT_RESCORE
    filters: Filters = field(default_factory=Filters)

    def exhaustive(self) -> SearchOptions:
        """The same search with every bound of the ranged indexes lifted: what the bounds' loss is measured
        against. Named here, beside the bounds, so that a renamed or added bound cannot leave a benchmark
        comparing one bounded search with another."""
        return replace(self, postings_prefix=0, scan=0, rescore=0)


def check_options(options: SearchOptions) -> None:
    if options.mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {options.mode!r}")
    if options.fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, got {options.fusion!r}")
    if not 0 <= options.dense_weight <= 1:
        raise ValueError(f"dense_weight must lie in [0, 1], got {options.dense_weight}")
    if options.paper_weight < 0 or options.paper_openings < 0:
        raise ValueError(
            f"paper_weight and paper_openings must be >= 0, got {options.paper_weight} and {options.paper_openings}"
        )
    if options.k < 0 or options.candidates < 1 or options.rrf_k < 0:
        raise ValueError("k must be >= 0, candidates >= 1, rrf_k >= 0")
    if min(options.postings_prefix, options.scan, options.rescore) < 0:
        raise ValueError("postings_prefix, scan and rescore must be >= 0 (0 = all)")
    if min(options.per_paper, options.per_section, options.per_page) < 0:
        raise ValueError("per_paper, per_section and per_page must be >= 0 (0 = unlimited)")
