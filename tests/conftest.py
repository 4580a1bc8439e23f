import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# onnxruntime must be imported before usearch: the other order segfaults (onnxruntime 1.31.1 with
# usearch 2.26.6 / numkong), and test modules import both.
import onnxruntime  # noqa: E402, F401

from builder.paths import SHARED_MIRROR, bundled_model_dir  # noqa: E402


@pytest.fixture(scope="session")
def mirror_dir() -> Path:
    if not (SHARED_MIRROR / "pdf").is_dir():
        pytest.skip("../shared/arxiv-mirror is not present")
    return SHARED_MIRROR


@pytest.fixture(scope="session")
def model_dir() -> Path:
    return bundled_model_dir()
