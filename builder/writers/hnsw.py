"""Quantize passage vectors and write them as a USearch HNSW file, beside the site, for other tools.

Search reads the same int8 rows from the dense lists (`writers/dense.py`), by range; the HNSW file
stays out of the published site, where no visitor would read it (45 MB of a 289 MB site at 1,000 papers):
`build --out site` writes `site.usearch` beside `site/`, one per site (a cache may serve several lists).

usearch's own i8 cast (127 per unit vector) leaves most of a 384-d MiniLM vector's components within
+-10, which costs retrieval quality. We scale all unit vectors by one calibrated global factor (a high
percentile of |x_i| maps to 127, rarer outliers are clipped), round, and hand usearch the int8 rows,
which it stores unchanged. Cosine is scale-invariant, so the reader can score a float query against
the rows directly. `readingroom_core/readers/hnsw.py` reads the file (`formats/hnsw.py`: its layout); it
pins the same usearch version.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from builder.offline import load_onnxruntime_first
from builder.scratch import write_atomically
from readingroom_core.formats.hnsw import PINNED_VERSION

USEARCH_VERSION = ".".join(map(str, PINNED_VERSION))  # the version the core's reader decodes
INT8_LIMIT = 127
# Percentile of |x_i| (over all components) that maps to 127: the rare components above it are clipped so
# that the rest keep more int8 steps, which gave the best top-10 recall against exact float32 with a float
# query (commit 3579b0b; scripts/quantization_study.py, removed in cf98ed9, last version at 9701116). On
# MiniLM passages it gives a scale of ~640.
DEFAULT_PERCENTILE = 99.99


@dataclass(frozen=True)
class IndexParams:
    """Everything that shaped the file, and what the reader needs to query it the same way."""

    scale: float  # int8 row = clip(round(unit vector * scale), -127, 127)
    metric: str = "cos"
    dtype: str = "i8"
    connectivity: int = 16
    expansion_add: int = 128
    expansion_search: int = 64  # default ef of the reader
    percentile: float = DEFAULT_PERCENTILE  # of |x_i| that calibrated `scale`
    usearch_version: str = USEARCH_VERSION


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        raise ValueError(f"vectors must be a 2-d array (rows x dimensions), got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("vectors contain NaN or infinity; re-run the embedding stage")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def calibrate_scale(vectors: np.ndarray, percentile: float = DEFAULT_PERCENTILE) -> float:
    """127 over the `percentile`-th |x_i| of the unit rows: nearly all components keep full int8 range."""
    if not 0 < percentile <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {percentile}")
    magnitudes = np.abs(_unit_rows(vectors))
    if magnitudes.size == 0:
        raise ValueError("cannot calibrate a scale on zero vectors; the index needs at least one passage")
    reference = float(np.percentile(magnitudes, percentile))
    if reference == 0:
        raise ValueError("all vectors are zero; check the embedding stage")
    return INT8_LIMIT / reference


def quantize(vectors: np.ndarray, scale: float) -> np.ndarray:
    """Unit rows times `scale`, rounded half to even and clipped to +-127 (the reader does the same)."""
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive finite number, got {scale}")
    scaled = np.rint(_unit_rows(vectors) * scale)
    return np.clip(scaled, -INT8_LIMIT, INT8_LIMIT).astype(np.int8)


def _check_usearch_version() -> None:
    import usearch

    if usearch.__version__ != USEARCH_VERSION:
        raise RuntimeError(
            f"usearch {usearch.__version__} is installed but the browser reader is pinned to "
            f"{USEARCH_VERSION}; install usearch=={USEARCH_VERSION}"
        )


def write_index(
    path: Path, keys: np.ndarray, vectors: np.ndarray, params: IndexParams | None = None
) -> IndexParams:
    """Build the HNSW graph single-threaded (so equal inputs give a byte-identical file) and save it.

    Without `params` the scale is calibrated on `vectors`. Returns the parameters the file was built with.
    """
    load_onnxruntime_first()
    from usearch.index import Index

    _check_usearch_version()
    keys = np.asarray(keys)
    if keys.ndim != 1 or not np.issubdtype(keys.dtype, np.integer):
        raise ValueError(f"keys must be a 1-d integer array, got dtype {keys.dtype} and shape {keys.shape}")
    if len(keys) != len(vectors):
        raise ValueError(f"{len(keys)} keys for {len(vectors)} vectors; pass one key per vector")
    if len(keys) and (keys.min() < 0 or keys.max() >= 2**64 - 1):
        raise ValueError("keys must lie in [0, 2**64 - 2]; usearch reserves 2**64 - 1 for removed entries")
    if len(np.unique(keys)) != len(keys):
        raise ValueError("keys must be unique; two passages share a key")
    params = params or IndexParams(scale=calibrate_scale(vectors))
    if (params.metric, params.dtype) != ("cos", "i8"):
        raise ValueError(
            f"only metric 'cos' with dtype 'i8' is supported, got {params.metric!r}/{params.dtype!r}"
        )
    rows = quantize(vectors, params.scale)
    index = Index(
        ndim=rows.shape[1],
        metric=params.metric,
        dtype=params.dtype,
        connectivity=params.connectivity,
        expansion_add=params.expansion_add,
        expansion_search=params.expansion_search,
    )
    if len(keys):
        index.add(keys.astype(np.uint64), rows, threads=1)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    index.save(str(path))
    return params


def hnsw_path(out_dir: Path) -> Path:
    """`<out>.usearch`, beside the site folder `out_dir`."""
    out = out_dir.resolve()
    return out.with_name(out.name + ".usearch")


def write_hnsw_file(out_dir: Path, vectors: np.ndarray, params: IndexParams) -> Path:
    """The site's passages (key = doc id) as its HNSW file, replaced in one step."""
    path = hnsw_path(out_dir)
    keys = np.arange(len(vectors), dtype=np.uint64)
    write_atomically(path, lambda scratch: write_index(scratch, keys, vectors, params))
    return path
