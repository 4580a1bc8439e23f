"""Text as it enters the core from outside (the page's JavaScript, a provider's stream): always encodable.

JSON may carry a lone surrogate (`"\\ud800"`) that decodes to a Python string UTF-8 cannot encode; kept,
it would fail every later step that encodes the text (hashing, tokenizing, the next turn's request), so
it is replaced with U+FFFD where it arrives and no reply can break a thread.
"""

from __future__ import annotations

import json
from typing import Any


def well_formed(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD; a surrogate pair becomes its character."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def well_formed_value(value: Any) -> Any:
    """A decoded JSON value with every string in it (keys too) made `well_formed`."""
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, list):
        return [well_formed_value(item) for item in value]
    if isinstance(value, dict):
        return {well_formed(str(key)): well_formed_value(item) for key, item in value.items()}
    return value


def loads(text: str | bytes) -> Any:
    """`json.loads`, with every string in the result `well_formed`."""
    if isinstance(text, str):
        text = well_formed(text)
    return well_formed_value(json.loads(text))
