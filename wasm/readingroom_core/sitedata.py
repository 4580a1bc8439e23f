"""The site's data files: their one format version, and how each is read (and, where pure, written).

Layout (all paths relative to the site root):
- `manifest.json`: the one file a reader opens first; names every other file by role (`files`).
"""

from __future__ import annotations

import json

FORMAT_VERSION = 1
MANIFEST_FILE = "manifest.json"


def read_manifest(data: str | bytes) -> dict:
    manifest = json.loads(data)
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{MANIFEST_FILE} has format {manifest.get('format_version')!r}; this reader knows "
            f"{FORMAT_VERSION} (rebuild the site with this version)"
        )
    return manifest
