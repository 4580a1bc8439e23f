"""Where the "nothing matches well" floor (engine.WEAK_SIMILARITY) comes from.

For every question of the dev and extra sets, and for nonsense and off-topic queries, prints whether any
passage shares a word with the query (BM25 returned something) and the best cosine of the top 20, then
the weak share of each group at the current floor. Real questions must almost never be called weak.

    python scripts/calibrate_weak_match.py --site SITE [--questions FILE ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from builder.paths import DEV_QUESTIONS
from builder.query_encoder import OnnxQueryEncoder
from readingroom_core.browser import open_folder
from readingroom_core.engine import WEAK_SIMILARITY, SearchOptions, weak_match
from readingroom_core.querysyntax import embedding_text

NONSENSE = [
    "zzqx",
    "qwxz vbnm",
    "asdfgh jkl",
    "blorptastic frumious",
    "xyzzy plugh",
    "fnord",
    "glorbnak",
    "zxcvbnm",
    "lkjhgf poiuy",
    "wibble wobble",
    "brrzt kkqq",
    "ptang yang kipperbang",
    "quux garply waldo",
    "snarfle",
]
OFF_TOPIC = [
    "chocolate cake recipe",
    "best hiking trails in colorado",
    "how to repair a bicycle puncture",
    "football world cup winners",
    "tomato plant watering schedule",
    "cheap flights to lisbon",
]


def best(site, encoder, query: str) -> tuple[bool, float, bool]:
    vector = encoder.encode([embedding_text(query)])[0]
    hits = site.engine.search(query, [float(x) for x in vector], SearchOptions(k=20))
    keyword = any(hit.ranks.get("bm25") is not None for hit in hits)
    top = max((hit.similarity for hit in hits if hit.similarity is not None), default=0.0)
    return keyword, top, weak_match(hits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, required=True)
    parser.add_argument(
        "--questions", type=Path, nargs="*", default=[DEV_QUESTIONS, Path("tests/data/questions-extra.jsonl")]
    )
    args = parser.parse_args()
    site = open_folder(args.site)
    encoder = OnnxQueryEncoder.from_site(args.site, site.manifest)
    questions = [
        json.loads(line)["query"]
        for path in args.questions
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    groups = {"questions": questions, "nonsense": NONSENSE, "off-topic": OFF_TOPIC}
    print(f"floor {WEAK_SIMILARITY}")
    for name, queries in groups.items():
        rows = [best(site, encoder, q) for q in queries]
        no_keyword = sorted(round(top, 3) for keyword, top, _ in rows if not keyword)
        weak = sum(w for _, _, w in rows)
        print(f"{name}: {len(rows)} queries, {weak} weak; best cosine where no word matched: {no_keyword}")
        print(
            f"  best cosine, all: min {min(t for _, t, _ in rows):.3f} "
            f"median {sorted(t for _, t, _ in rows)[len(rows) // 2]:.3f}"
        )


if __name__ == "__main__":
    main()
