import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from builder.paths import SHARED_MIRROR, bundled_model_dir  # noqa: E402


@pytest.fixture(scope="session")
def mirror_dir() -> Path:
    if not (SHARED_MIRROR / "pdf").is_dir():
        pytest.skip("../shared/arxiv-mirror is not present")
    return SHARED_MIRROR


@pytest.fixture(scope="session")
def model_dir() -> Path:
    return bundled_model_dir()
