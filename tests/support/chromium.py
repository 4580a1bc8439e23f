"""How this project starts Debian's chromium for its browser tests and benchmarks, and what they ask the page.

The background-networking flags matter: without them chromium calls Google's hosts at start-up,
which these machines refuse (and which the no-foreign-requests test would rightly flag).
"""

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")  # Debian's package; never `playwright install`
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# For page.evaluate(TOP_CHUNK_IDS, [queries, k]): each query's ranked chunk ids from window.readingRoom.
TOP_CHUNK_IDS = """async ([queries, k]) => {
  const tops = [];
  for (const query of queries) tops.push((await window.readingRoom.search(query, {k})).map((hit) => hit.chunk_id));
  return tops;
}"""
