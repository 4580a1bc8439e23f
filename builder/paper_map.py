"""The map of the list on the corpus page: every paper a point placed by what it is about.

Each paper's stored vector (`formats.papers.PaperVector`, what related papers and the paper view use) is
projected to 2-D at build time, deterministically (no random start: the same vectors give the same
map). t-SNE was chosen by measurement over PCA and classical MDS (scripts/bench_graph.py, recorded in
docs/measurements/graph.json): it keeps far more of each paper's ten nearest neighbours. The page gets the
points as a few numbers per paper (`MapData.to_json`, drawn by wasm/runtime/paper_map.js); titles come
from the corpus table the page already holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from builder.map_labels import Cluster, map_clusters
from readingroom_core.formats.papers import PaperRecord, PaperVector

GRID = 1000  # coordinates are integers in [0, GRID]: a few bytes each, and stable under float noise
MAX_GROUPS = 8  # colours on the map; further categories or tags share the last one ("other")
PERPLEXITY = 20.0
ITERATIONS = 600
EXAGGERATION = (12.0, 150)  # early exaggeration and for how many iterations
# t-SNE here is exact: every step holds an n x n x 2 array. At 10,000 papers that is 1.6 GB a step and
# the build did not finish its map in half an hour, so past MAP_SAMPLE papers t-SNE places an even sample
# and every other paper goes to the similarity-weighted mean of its PLACE_NEIGHBOURS most similar sampled
# papers (a list up to MAP_SAMPLE papers gets the exact map).
MAP_SAMPLE = 1000
PLACE_NEIGHBOURS = 5


def unit_vectors(papers: Sequence[PaperRecord]) -> tuple[list[PaperRecord], np.ndarray]:
    """The papers that have a stored vector, and their vectors scaled to unit length."""
    placed = [paper for paper in papers if paper.vector]
    if not placed:
        return [], np.zeros((0, 0), dtype=np.float64)
    units = np.array([PaperVector.decode(paper.vector or "") for paper in placed], dtype=np.float64)
    units /= np.maximum(np.linalg.norm(units, axis=1, keepdims=True), 1e-12)
    return placed, units


def pca(units: np.ndarray) -> np.ndarray:
    """The two directions of largest variance, each signed so its largest loading is positive."""
    centred = units - units.mean(axis=0)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    top = components[:2]
    signs = np.sign(top[np.arange(len(top)), np.argmax(np.abs(top), axis=1)])
    return centred @ (top * signs[:, None]).T


def classical_mds(units: np.ndarray) -> np.ndarray:
    """Classical MDS on angular distance: the 2-D layout whose distances best match the angles."""
    angles = np.arccos(np.clip(units @ units.T, -1.0, 1.0))
    n = len(units)
    centring = np.eye(n) - 1.0 / n
    gram = -0.5 * centring @ (angles**2) @ centring
    values, vectors = np.linalg.eigh(gram)
    order = np.argsort(-values)[:2]
    layout = vectors[:, order] * np.sqrt(np.maximum(values[order], 0.0))
    return layout * np.sign(layout[np.argmax(np.abs(layout), axis=0), [0, 1]])


def _affinities(units: np.ndarray, perplexity: float) -> np.ndarray:
    """t-SNE's symmetric input affinities, each row's bandwidth found by bisection to `perplexity`."""
    distances = np.maximum(2.0 - 2.0 * (units @ units.T), 0.0)
    n = len(units)
    target = np.log(min(perplexity, (n - 1) / 3.0))
    rows = np.zeros((n, n))
    for i in range(n):
        low, high, beta = 0.0, np.inf, 1.0
        others = np.delete(distances[i], i)
        for _ in range(64):
            weights = np.exp(-(others - others.min()) * beta)
            share = weights / weights.sum()
            entropy = -np.sum(share * np.log(np.maximum(share, 1e-12)))
            if abs(entropy - target) < 1e-5:
                break
            if entropy > target:
                low, beta = beta, beta * 2.0 if high == np.inf else (beta + high) / 2.0
            else:
                high, beta = beta, (beta + low) / 2.0
        rows[i, np.arange(n) != i] = share
    joint = (rows + rows.T) / (2.0 * n)
    return np.maximum(joint, 1e-12)


def tsne(units: np.ndarray, perplexity: float = PERPLEXITY, iterations: int = ITERATIONS) -> np.ndarray:
    """Exact t-SNE from the PCA layout (so no random start): neighbours in the vectors stay neighbours."""
    n = len(units)
    if n < 4:
        return pca(units)
    affinity = _affinities(units, perplexity)
    layout = pca(units)
    layout *= 1e-2 / max(float(np.std(layout[:, 0])), 1e-12)
    velocity = np.zeros_like(layout)
    gains = np.ones_like(layout)
    rate = max(n / EXAGGERATION[0], 50.0)
    for step in range(iterations):
        scale = EXAGGERATION[0] if step < EXAGGERATION[1] else 1.0
        differences = layout[:, None, :] - layout[None, :, :]
        kernel = 1.0 / (1.0 + np.sum(differences**2, axis=2))
        np.fill_diagonal(kernel, 0.0)
        low_affinity = np.maximum(kernel / kernel.sum(), 1e-12)
        forces = (scale * affinity - low_affinity) * kernel
        gradient = 4.0 * np.einsum("ij,ijk->ik", forces, differences)
        same_sign = np.sign(gradient) == np.sign(velocity)
        gains = np.maximum(np.where(same_sign, gains * 0.8, gains + 0.2), 0.01)
        momentum = 0.5 if step < EXAGGERATION[1] else 0.8
        velocity = momentum * velocity - rate * gains * gradient
        layout = layout + velocity
        layout -= layout.mean(axis=0)
    return layout


def map_layout(units: np.ndarray, sample: int = MAP_SAMPLE) -> np.ndarray:
    """The map's 2-D layout: t-SNE of every paper, or past `sample` papers of an even sample of them,
    the others placed beside the sampled papers they are most like (deterministic either way)."""
    n = len(units)
    if n <= sample:
        return tsne(units)
    sampled = np.linspace(0, n - 1, sample).round().astype(int)  # spaced at least 1 apart: no repeats
    placed = tsne(units[sampled])
    layout = np.empty((n, 2))
    layout[sampled] = placed
    rest = np.setdiff1d(np.arange(n), sampled)
    for part in np.array_split(rest, -(-len(rest) // 2048)):  # 2,048 x sample similarities at a time
        similarity = units[part] @ units[sampled].T
        nearest = np.argsort(-similarity, axis=1, kind="stable")[:, :PLACE_NEIGHBOURS]
        weights = np.maximum(np.take_along_axis(similarity, nearest, axis=1), 1e-6)
        layout[part] = (weights[:, :, None] * placed[nearest]).sum(axis=1) / weights.sum(
            axis=1, keepdims=True
        )
    return layout


PROJECTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "pca": pca,
    "classical-mds": classical_mds,
    "t-sne": tsne,  # the map's (map_layout)
}


def neighbour_recall(units: np.ndarray, layout: np.ndarray, k: int = 10) -> float:
    """The share of each paper's k nearest papers by vector (cosine) that are among its k nearest
    points on the map, averaged over papers."""
    n = len(units)
    k = min(k, n - 1)
    near = _nearest(-(units @ units.T), k)
    on_map = _nearest(np.sum((layout[:, None, :] - layout[None, :, :]) ** 2, axis=2), k)
    return float(np.mean([len(set(near[i]) & set(on_map[i])) / k for i in range(n)]))


def trustworthiness(units: np.ndarray, layout: np.ndarray, k: int = 10) -> float:
    """Venna & Kaski's trustworthiness: 1 minus a penalty for map neighbours that are far in the vectors."""
    n = len(units)
    k = min(k, (n - 1) // 2)
    distance = -(units @ units.T)
    np.fill_diagonal(distance, -np.inf)
    ranks = np.empty((n, n), dtype=np.int64)
    order = np.argsort(distance, axis=1, kind="stable")
    ranks[np.arange(n)[:, None], order] = np.arange(n)  # rank 0 is the paper itself
    on_map = _nearest(np.sum((layout[:, None, :] - layout[None, :, :]) ** 2, axis=2), k)
    penalty = sum(max(0, ranks[i, j] - k) for i in range(n) for j in on_map[i])
    return float(1.0 - 2.0 / (n * k * (2 * n - 3 * k - 1)) * penalty)


def _nearest(distance: np.ndarray, k: int) -> np.ndarray:
    distance = distance.astype(np.float64).copy()
    np.fill_diagonal(distance, np.inf)
    return np.argsort(distance, axis=1, kind="stable")[:, :k]


@dataclass(frozen=True)
class MapData:
    """What the page draws: the papers' ids, their points on the grid, each one's colour group (an
    index into `groups`, the category or tag names), by category and by tag, the citations as
    index pairs (citing, cited), and the labelled regions (builder/map_labels.py)."""

    ids: tuple[str, ...]
    points: tuple[tuple[int, int], ...]
    by_category: tuple[int, ...]
    by_tag: tuple[int, ...]
    categories: tuple[str, ...]
    tags: tuple[str, ...]
    edges: tuple[tuple[int, int], ...]
    clusters: tuple[Cluster, ...] = ()

    def to_json(self) -> dict:
        return {
            "ids": list(self.ids),
            "xy": [value for point in self.points for value in point],
            "category": list(self.by_category),
            "tag": list(self.by_tag),
            "categories": list(self.categories),
            "tags": list(self.tags),
            "edges": [index for edge in self.edges for index in edge],
            "clusters": [cluster.to_json() for cluster in self.clusters],  # [x, y, label] each
        }


def on_grid(layout: np.ndarray) -> list[tuple[int, int]]:
    """The layout scaled into [0, GRID] on its longer side, aspect kept, as integers."""
    low = layout.min(axis=0)
    span = max(float((layout.max(axis=0) - low).max()), 1e-12)
    scaled = np.rint((layout - low) / span * GRID).astype(int)
    return [(int(x), int(y)) for x, y in scaled]


def _groups(labels: Sequence[str]) -> tuple[list[int], list[str]]:
    """Each label's group: the MAX_GROUPS - 1 most frequent labels by name, the rest "other"."""
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    ranked = sorted(counts, key=lambda name: (-counts[name], name))
    kept = ranked if len(ranked) <= MAX_GROUPS else ranked[: MAX_GROUPS - 1]
    names = sorted(name for name in kept if name) + (["other"] if len(kept) < len(ranked) else [])
    if "" in kept:
        names.append("none")
    index = {name: position for position, name in enumerate(names)}
    fallback = index.get("other", 0)
    return [index.get(label or "none", fallback) for label in labels], names


def paper_map(papers: Sequence[PaperRecord], edges: Sequence[tuple[str, str]]) -> MapData | None:
    """The map of the papers that have vectors (None with fewer than two), with the citations among them."""
    placed, units = unit_vectors(papers)
    if len(placed) < 2:
        return None
    points = on_grid(map_layout(units))
    by_category, categories = _groups([p.primary_category or (p.categories or ("",))[0] for p in placed])
    by_tag, tags = _groups([(p.tags or ("",))[0] for p in placed])
    position = {paper.id: index for index, paper in enumerate(placed)}
    pairs = [(position[a], position[b]) for a, b in edges if a in position and b in position]
    return MapData(
        ids=tuple(p.id for p in placed),
        points=tuple(points),
        by_category=tuple(by_category),
        by_tag=tuple(by_tag),
        categories=tuple(categories),
        tags=tuple(tags),
        edges=tuple(pairs),
        clusters=tuple(map_clusters(points, [p.title for p in placed], [p.tags for p in placed])),
    )
