"""Parsing on a Ray cluster: one Ray task per paper not yet in the parse cache.

Each task runs the parse stage on its one paper (in a process of its own under the parse limits) and
the stage writes the parse cache itself; the task returns only the paper's failure, if any. The build
then reads every paper from the cache, as a local build does, so both builds parse nothing twice and
follow each other. Workers must see the PDFs and the cache at the paths the build sees: on one machine
they do; on several, the cache and the PDFs live on a shared folder (docs/large-lists.md).
"""

from __future__ import annotations

import json
import pickle
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tqdm import tqdm

from builder.models import Failure, FetchedPaper, ParsedPaper, ParseLimits
from builder.stages import parse


def parse_one(row: dict[str, Any]) -> dict[str, Any]:
    """A Ray task's body: one paper parsed into the cache; its Failure as JSON, or ""."""
    paper: FetchedPaper = pickle.loads(row["paper"])
    limits: ParseLimits = pickle.loads(row["limits"])
    [result] = parse.parse_papers([paper], Path(row["cache"]), 1, False, limits)
    failure = json.dumps(asdict(result)) if isinstance(result, Failure) else ""
    return {"index": row["index"], "failure": failure}


def parse_on_cluster(
    papers: list[FetchedPaper], cache_dir: Path, limits: ParseLimits, progress: bool
) -> list[ParsedPaper | Failure]:
    """Every paper parsed (or taken from the cache), in order, as `parse.parse_papers` gives them."""
    results: list[ParsedPaper | Failure | None] = [parse.read_cached(paper, cache_dir) for paper in papers]
    todo = [index for index, result in enumerate(results) if result is None]
    if todo:
        import ray.data

        limits_blob = pickle.dumps(limits)
        rows = [
            {"index": i, "paper": pickle.dumps(papers[i]), "limits": limits_blob, "cache": str(cache_dir)}
            for i in todo
        ]
        # A task whose worker dies is run again (Ray Data's default for tasks: max_retries=-1).
        done = ray.data.from_items(rows, override_num_blocks=len(rows)).map(parse_one, num_cpus=1)
        with tqdm(desc="parse (ray)", unit="paper", total=len(todo), disable=not progress) as bar:
            for row in done.iter_rows():
                if row["failure"]:
                    results[int(row["index"])] = Failure(**json.loads(row["failure"]))
                bar.update()
    return [_from_cache(paper, result, cache_dir) for paper, result in zip(papers, results, strict=True)]


def _from_cache(
    paper: FetchedPaper, result: ParsedPaper | Failure | None, cache_dir: Path
) -> ParsedPaper | Failure:
    if result is not None:
        return result
    parsed = parse.read_cached(paper, cache_dir)
    if parsed is not None:
        return parsed
    return Failure(
        paper.meta.arxiv_id,
        "parse",
        f"parsed on the Ray cluster, but {cache_dir} does not hold the result",
        "the cache folder must be one folder shared by every node of the cluster, at the same path",
    )
