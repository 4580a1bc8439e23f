"""The site's HTML pages, with the browser runtime packed next to the data files.

The build hands `render` what it holds in memory (the manifest and the paper records); `render_site`
reads the same from an already-written site, so a site can be re-rendered without re-embedding. Pages
are jinja2 templates with autoescape on: titles, abstracts and notes come from arXiv and the reading
list and are treated as untrusted. Every internal link starts with the site's `base_url`, so a site
built for "/my-list/" works under that prefix (GitHub Pages). The runtime is packed by
`builder.site.runtime`; render adds it to the manifest as its `runtime` section.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import jinja2

from builder.citation_graph import CitationGraph, read_graph
from builder.landing import keyword_search, landing
from builder.models import Settings, file_stem
from builder.paper_map import paper_map
from builder.paths import REPO_ROOT
from builder.related import related_papers
from builder.report import BuildReport
from builder.site.folding import page_fold_table
from builder.site.manifest import write_manifest
from builder.site.references import paper_references, write_references
from builder.site.runtime import copy_runtime
from readingroom_core.formats.manifest import MANIFEST_FILE, Manifest
from readingroom_core.formats.papers import PaperRecord, read_papers
from readingroom_core.formats.versioned import GZIP_SUFFIX
from readingroom_core.ranges import folder_reader

TEMPLATES_DIR = REPO_ROOT / "site_templates"
RENDERED_DIRS = ("runtime", "papers", "corpus", "about")


def render_site(out_dir: Path, manifest: Manifest, settings: Settings, report: BuildReport) -> Manifest:
    """Re-render an already-written site from its files and save its manifest with the new runtime."""
    out_dir = Path(out_dir)
    papers = read_papers(folder_reader(out_dir)(manifest.files.papers), manifest.files.papers)
    graph = CitationGraph(())
    if manifest.files.graph:
        graph = read_graph((out_dir / manifest.files.graph).read_bytes(), manifest.files.graph)
    rendered = render(out_dir, manifest, settings, report, papers, graph)
    write_manifest(out_dir, rendered)
    return rendered


def render(
    out_dir: Path,
    manifest: Manifest,
    settings: Settings,
    report: BuildReport,
    papers: list[PaperRecord],
    graph: CitationGraph,
) -> Manifest:
    """Write the runtime and the index, paper, corpus and about pages; return `manifest` with its
    runtime section (the caller saves it)."""
    out_dir = Path(out_dir)
    for name in RENDERED_DIRS:  # hashed names change build to build; these folders are ours alone
        shutil.rmtree(out_dir / name, ignore_errors=True)
    manifest = replace(manifest, runtime=copy_runtime(out_dir))
    SitePages(out_dir, manifest, settings, report, papers, graph).write_all(related_papers(papers))
    return manifest


def make_environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,  # every template: paper metadata is untrusted
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def paper_dir(arxiv_id: str) -> str:
    return f"papers/{file_stem(arxiv_id)}/"


def facets(papers: list[PaperRecord]) -> dict[str, list]:
    return {
        "years": sorted({p.year for p in papers if p.year}),
        "categories": sorted({c for p in papers for c in p.categories}),
        "tags": sorted({t for p in papers for t in p.tags}),
    }


def script_json(data) -> str:
    """JSON safe inside <script type="application/json">: no '</script>' or '<!--' can be formed."""
    return json.dumps(data, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")


def paper_json(paper: PaperRecord, reference: dict | None = None) -> dict:
    """What the paper page's script needs to cite the paper (wasm/runtime/citation.js's `Paper`), with
    its rendered BibTeX and CSL-JSON (`builder.site.references`)."""
    return {
        "reference": reference,
        "arxiv_id": paper.id,
        "version": paper.version,
        "title": paper.title,
        "authors": list(paper.authors),
        "year": paper.year,
        "categories": list(paper.categories),
    }


class SitePages:
    """The site's HTML pages (search, corpus, about, one per paper), rendered with one shared context."""

    def __init__(
        self,
        out_dir: Path,
        manifest: Manifest,
        settings: Settings,
        report: BuildReport,
        papers: list[PaperRecord],
        graph: CitationGraph,
    ):
        if manifest.runtime is None:
            raise ValueError("pages link the runtime: pack it into the manifest first")
        self.out_dir = out_dir
        self.manifest = manifest
        self.runtime = manifest.runtime.files
        self.runtime_artifacts = manifest.runtime.artifacts
        self.papers = papers
        self.graph = graph
        self.by_id = {paper.id: paper for paper in papers}
        self.cited = graph.cited_counts()
        self.references = paper_references(papers)
        self.whole_index_bytes = round(settings.whole_index_mb * (1 << 20))
        self.env = make_environment()
        base = manifest.base_url
        self.common = {
            "base": base,
            "site_title": manifest.title,
            "description": settings.description,
            "css": base + self.runtime["css"],
            "scripts": {name: base + self.runtime[name] for name in ("app", "corpus_js", "paper_js")},
            "manifest": manifest,
            "report": report,
            "facets": facets(papers),
            "paper_dir": paper_dir,
        }

    def write_all(self, related: dict[str, list[tuple[PaperRecord, float]]]) -> None:
        self.common["references"] = self.manifest.base_url + write_references(self.out_dir, self.references)
        start = landing(self.papers, self.cited, keyword_search(self.out_dir, self.manifest))
        self.write(
            "index.html",
            "index.html",
            page="search",
            app_config=script_json(self.app_config()),
            landing=start,
        )
        newest_first = sorted(self.papers, key=lambda p: p.first_version or p.published, reverse=True)
        drawn = paper_map(self.papers, [(c.citing, c.cited) for c in self.graph.citations])
        self.write(
            "corpus/index.html",
            "corpus.html",
            page="corpus",
            papers=newest_first,
            cited=self.cited,
            map_data=script_json(drawn.to_json()) if drawn else "",
            fold_table=script_json(page_fold_table()),  # the filter folds accents as search does
        )
        self.write("about/index.html", "about.html", page="about")
        # Static hosts (GitHub Pages, Netlify, nginx's error_page) serve this for any missing path; its
        # links are absolute (under base_url) so they work from whatever address was mistyped.
        self.write("404.html", "404.html", page="not-found")
        for paper in self.papers:
            self.write(
                paper_dir(paper.id) + "index.html",
                "paper.html",
                page="paper",
                paper=paper,
                related=related[paper.id],
                cites=[(self.by_id[c.cited], c.page) for c in self.graph.cites(paper.id)],
                cited_by=[(self.by_id[c.citing], c.page) for c in self.graph.cited_by(paper.id)],
                paper_data=script_json(paper_json(paper, self.references[paper.id])),
            )

    def app_config(self) -> dict:
        """What the search page's script needs: every URL under base_url, and the paper index for display."""
        base, runtime = self.manifest.base_url, self.runtime
        return {
            "base": base,
            "manifest": base + MANIFEST_FILE,
            "worker": base + runtime["worker"],
            "encoder": base + runtime["encoder"],
            "wheel": base + runtime["wheel"],
            "python_snapshot": base + runtime["python_snapshot"],
            "pyodide": base + runtime["pyodide"],
            "ort": base + runtime["ort"],
            "ort_wasm": {"mjs": base + runtime["ort_glue"], "wasm": base + runtime["ort_wasm"]},
            # Runtime files the worker fetches as `<url>.gz` and decompresses (store.stored_gzipped).
            "cited": self.cited,  # how many papers of the list cite each: results sort by it
            "references": self.common["references"],  # every paper's BibTeX and CSL-JSON, for the exports
            "whole_index_bytes": self.whole_index_bytes,  # of the index files, fetched whole
            "gzipped": [
                base + a.path.removesuffix(GZIP_SUFFIX)
                for a in sorted(self.runtime_artifacts, key=lambda a: a.path)
                if a.path.endswith(GZIP_SUFFIX)
            ],
        }

    def write(self, relative: str, template: str, **context) -> None:
        html = self.env.get_template(template).render(**self.common, **context)
        path = self.out_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")
