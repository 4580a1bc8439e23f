"""How this project starts Debian's chromium for its browser tests and benchmarks, and what they ask the page.

The background-networking flags matter: without them chromium calls Google's hosts at start-up,
which these machines refuse (and which the no-foreign-requests test would rightly flag).
"""

import time
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


POLL_SECONDS = 0.05


def wait_for(page, script: str, timeout_ms: float = 90_000):
    """page.wait_for_function for pages under the site's Content-Security-Policy: Playwright's poller
    evaluates a string in the page, which the policy (no 'unsafe-eval') refuses, while page.evaluate
    runs through the DevTools protocol, which it does not govern. Returns the first truthy value."""
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        value = page.evaluate(script)
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout_ms / 1000:.0f} s for {script}")
        time.sleep(POLL_SECONDS)
