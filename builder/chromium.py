"""How this project starts Debian's chromium for its browser tests and benchmarks.

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
