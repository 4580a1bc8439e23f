"""The list's citation graph and map on the mirror: matching against the hand-checked sample, the graph's
size, what `suggest` proposes, and how well each map projection keeps a paper's nearest neighbours.

    python scripts/bench_graph.py --mirror ../shared/arxiv-mirror --site site/ [--cache DIR] [--record]

- matching: precision and recall of the citations found for the papers of tests/data/citation-sample.json
  (hand-checked: every list paper each of them cites), counted per (citing, cited) pair;
- graph: citations, papers with none either way, papers never cited, citations found by each rule;
- suggest: the ten works cited most that are not on the list;
- map: for PCA, classical MDS and t-SNE of the site's paper vectors, kNN recall@10 (the share of each
  paper's 10 nearest papers by cosine that are among its 10 nearest points on the map) and
  trustworthiness@10, and the map data's bytes in the corpus page.
The papers are read from --cache (parsed there on a cold one), taken from the mirror, never from arXiv.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from measurements import add_record_option, begin

from builder import config
from builder.citation_graph import build_graph, list_papers
from builder.citation_match import ReferenceMatcher
from builder.missing_works import missing_works
from builder.paper_map import PROJECTIONS, neighbour_recall, paper_map, trustworthiness, unit_vectors
from builder.paths import REPO_ROOT
from builder.pipeline import BuildOptions, fetch_corpus, parse_papers
from builder.references import cached_references
from builder.report import BuildReport
from readingroom_core.formats.manifest import read_manifest
from readingroom_core.formats.papers import read_papers
from readingroom_core.ranges import folder_reader  # noqa: E402

SAMPLE = REPO_ROOT / "tests" / "data" / "citation-sample.json"


def mirror_references(mirror: Path, cache: Path):
    corpus_file = Path(tempfile.mkdtemp(prefix="bench-graph-")) / "readingroom.toml"
    ids = [line.split()[0] for line in (mirror / "reading-list.txt").read_text().splitlines() if line.strip()]
    corpus_file.write_text("".join(f'[[paper]]\nid = "{i}"\n\n' for i in ids if not i.startswith("#")))
    site = corpus_file.parent / "site"
    options = BuildOptions(corpus_file, site, cache, mirror=mirror, offline=True, progress=False)
    report = BuildReport()
    parsed = parse_papers(fetch_corpus(config.load_corpus(corpus_file), options, report), options, report)
    references = [cached_references(fetched, paper, cache) for fetched, paper in parsed]
    return references, ReferenceMatcher(list_papers([fetched.meta for fetched, _ in parsed]))


def matching_figures(graph, sample: dict[str, list[str]]) -> dict:
    found = {(c.citing, c.cited) for c in graph.citations if c.citing in sample}
    truth = {(citing, cited) for citing, cited_ids in sample.items() for cited in cited_ids}
    right = len(found & truth)
    return {
        "papers": len(sample),
        "citations": len(truth),
        "found": len(found),
        "precision": round(right / len(found), 4) if found else 1.0,
        "recall": round(right / len(truth), 4) if truth else 1.0,
        "false": sorted(f"{a} -> {b}" for a, b in found - truth),
        "missed": sorted(f"{a} -> {b}" for a, b in truth - found),
    }


def graph_figures(graph, ids: list[str]) -> dict:
    citing = {c.citing for c in graph.citations}
    cited = {c.cited for c in graph.citations}
    by_rule: dict[str, int] = {}
    for citation in graph.citations:
        by_rule[citation.how] = by_rule.get(citation.how, 0) + 1
    return {
        "papers": len(ids),
        "citations": len(graph.citations),
        "papers_with_none": sum(1 for i in ids if i not in citing | cited),
        "citing_none_in_list": sum(1 for i in ids if i not in citing),
        "never_cited_in_list": sum(1 for i in ids if i not in cited),
        "with_citing_page": sum(1 for c in graph.citations if c.page is not None),
        **{f"by_{rule}": count for rule, count in sorted(by_rule.items())},
    }


def map_figures(site: Path, graph) -> dict:
    manifest = read_manifest((site / "manifest.json").read_bytes())
    papers = read_papers(folder_reader(site)(manifest.files.papers))
    _, units = unit_vectors(papers)
    rows = {}
    for name, project in PROJECTIONS.items():
        started = time.perf_counter()
        layout = project(units)
        rows[name] = {
            "knn_recall_at_10": round(neighbour_recall(units, layout), 3),
            "trustworthiness_at_10": round(trustworthiness(units, layout), 3),
            "seconds": round(time.perf_counter() - started, 2),
        }
    drawn = paper_map(papers, [(c.citing, c.cited) for c in graph.citations])
    data = drawn.to_json() if drawn else {}
    size = len(json.dumps(data, separators=(",", ":")))
    no_edges = len(json.dumps({**data, "edges": []}, separators=(",", ":")))
    return {"projections": rows, "map_bytes": {"with_citations": size, "without_citations": no_edges}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mirror", type=Path, required=True)
    parser.add_argument("--site", type=Path, required=True, help="a site built from the mirror")
    parser.add_argument("--cache", type=Path, default=None, help="a build cache (default: a fresh one)")
    add_record_option(parser)
    args = parser.parse_args(argv)
    bench_run = begin("graph", argv)
    cache = args.cache or Path(tempfile.mkdtemp(prefix="bench-graph-cache-"))
    references, matcher = mirror_references(args.mirror, cache)
    graph = build_graph(references, matcher)
    sample = json.loads(SAMPLE.read_text(encoding="utf-8"))["cites"]
    works = missing_works(references, matcher, 2)[:10]
    results = {
        "matching": matching_figures(graph, sample),
        "graph": graph_figures(graph, [r.arxiv_id for r in references]),
        "suggest_top10": [
            {"cited_by": len(w.cited_by), "arxiv_id": w.arxiv_id or "", "title": w.title[:100]} for w in works
        ],
        "map": map_figures(args.site, graph),
    }
    print(json.dumps(results, indent=1))
    if args.record:
        bench_run.save(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
