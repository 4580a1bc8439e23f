"""The scale benchmark's synthetic lists (tests/support/synthetic_list.py) build through the real pipeline."""

import json

import numpy as np
from support import citing
from support.synthetic_list import (
    calibrate_sigma,
    copy_authors,
    load_source,
    nearest_cosines,
    perturbed,
    real_nearest,
    write_list,
)

from builder.citation_match import ListPaper, ReferenceMatcher
from builder.cli import main
from builder.references import Reference
from readingroom_core.browser import open_folder
from readingroom_core.options import SearchOptions

PAPERS = 12  # three rewrites of each of the suite's four papers


def test_a_synthetic_list_builds_from_its_cache_alone(built_sites, tmp_path):
    source = load_source(built_sites.first.parent / "second.toml", None, built_sites.cache)
    made = write_list(source, PAPERS, tmp_path / "list", sigma=1.0)
    out = tmp_path / "site"
    args = ["build", "--corpus", str(made.corpus), "--out", str(out), "--cache", str(made.cache)]
    assert main([*args, "--offline", "--no-progress"]) == 0
    report = json.loads((out / "build-report.json").read_text())
    assert (report["papers"], report["chunks"], report["failures"]) == (PAPERS, made.chunks, [])
    assert report["embedded_chunks"] == 0  # every vector came from the cache the generator wrote
    rebuilt = load_source(made.corpus, None, made.cache)  # the list as the pipeline reads it back
    assert [chunk.chunk_id for paper in rebuilt.papers for chunk in paper.chunks] == made.chunk_ids
    assert np.allclose(rebuilt.vectors, made.vectors, atol=1e-6)
    sentence = rebuilt.papers[5].chunks[2].text[:200]
    hits = open_folder(out).engine.search(sentence, None, SearchOptions(k=3, mode="bm25"))
    assert hits and {hit.chunk_id for hit in hits} <= set(made.chunk_ids)

    texts = [chunk.text for paper in source.papers for chunk in paper.chunks]
    rewritten = [chunk.text for paper in rebuilt.papers for chunk in paper.chunks]
    assert len(set(rewritten)) == len(rewritten), "no passage repeats"
    assert sum(text in texts for text in rewritten) < len(rewritten) / 4, "passages are rewritten"
    norms = np.linalg.norm(made.vectors, axis=1)
    assert np.allclose(norms, 1, atol=1e-4)
    nearest_real = (made.vectors @ source.vectors.T).max(axis=1)
    assert 0.8 < float(np.median(nearest_real)) < 0.999  # near a real vector, never a copy of one


def test_the_noise_is_calibrated_to_the_real_nearest_neighbours(built_sites):
    source = load_source(built_sites.first.parent / "second.toml", None, built_sites.cache)
    rng = np.random.default_rng(0)
    sigma = calibrate_sigma(source.vectors, source.noise, 3, rng, sample=200)
    real = float(np.median(real_nearest(source.vectors, 200, rng)))
    noisy = perturbed(np.repeat(source.vectors, 3, axis=0), np.repeat(source.noise, 3) * sigma, rng)
    rows = np.arange(len(noisy))
    assert 0 < sigma < 4
    assert abs(float(np.median(nearest_cosines(noisy, noisy, rows))) - real) < 0.03


def test_a_reference_names_one_copy_of_the_paper_it_cites():
    """B's entry for A names it by first author, year and title words, which every copy of A shares:
    only the first copy keeps A's first author, so the entry names it alone, as it names A in the real
    list (10,000 papers had linked each reference to all 90 copies)."""
    a = citing.topics()[citing.A]
    copies = [
        ListPaper.of(f"3001.{n:05d}", f"{a.title} ({n})", copy_authors(a.authors, n, 4), [a.published])
        for n in (1, 5, 9)
    ]
    entry = next(text for text in citing._REFERENCES[citing.B] if a.authors[0] in text)
    found = ReferenceMatcher(copies).match(Reference(entry, page=3), citing=citing.B)
    assert [(match.arxiv_id, match.how) for match in found] == [("3001.00001", "author-year")]
    assert copy_authors(a.authors, 5, 4)[1:] == a.authors[1:]
