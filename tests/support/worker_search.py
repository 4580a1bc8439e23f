"""One search as the browser's worker runs it, for tests that drive `readingroom_core.browser` directly."""

import json


def search(site, vector: bytes | None = None, **request) -> dict:
    """Prepare the request, finish it with the query vector (float32 bytes, or None), discard it.

    A prepare-time error (a bad filter, say) is returned as the reply, as the worker posts it."""
    prepared = json.loads(site.prepare(json.dumps(request)))
    if "error" in prepared:
        return prepared
    try:
        return json.loads(site.search(prepared["search"], vector))
    finally:
        site.discard(prepared["search"])
