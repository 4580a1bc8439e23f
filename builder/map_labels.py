"""Labels for the map's clusters: what a region of the corpus page's map is about, in a word or two.

The map's points (builder/paper_map.py) are grouped by k-means on the grid, started deterministically
(the point nearest the centre, then each next farthest from those chosen), so the same map gets the
same labels. A cluster is named by a tag most of its papers carry and most of the list does not, else by
its most distinctive title words: those its titles use far more often than the list's titles do.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from readingroom_core.analysis import STOP_WORDS

MIN_CLUSTER = 3  # fewer papers than this name no region
MAX_CLUSTERS = 8
TAG_SHARE = 0.5  # a tag names a cluster when over half its papers carry it...
TAG_SHARE_OF_LIST = 0.5  # ...and at most half the list does (else it says nothing about the region)
LABEL_WORDS = 2
_WORD = re.compile(r"[^\W_][\w\-]*[^\W_]|[^\W_]")
# Words every second title uses and that name no subject.
GENERIC = frozenset(
    "via using towards toward learning model models language large based new approach study".split()
)


@dataclass(frozen=True)
class Cluster:
    """A region of the map: where its label goes (its papers' mean point), the label, its papers."""

    x: int
    y: int
    label: str
    members: tuple[int, ...]

    def to_json(self) -> list:
        return [self.x, self.y, self.label]


def cluster_count(n: int) -> int:
    """About one region per eight papers, at least two and at most MAX_CLUSTERS."""
    return max(2, min(MAX_CLUSTERS, round(n / 8)))


def kmeans(points: np.ndarray, k: int, rounds: int = 50) -> np.ndarray:
    """Each point's cluster, by Lloyd's iterations from a farthest-point start (deterministic)."""
    centre = points.mean(axis=0)
    chosen = [int(np.argmin(((points - centre) ** 2).sum(axis=1)))]
    while len(chosen) < k:
        nearest = np.min(((points[:, None, :] - points[chosen][None, :, :]) ** 2).sum(axis=2), axis=1)
        chosen.append(int(np.argmax(nearest)))
    centres = points[chosen].astype(np.float64)
    assignment = np.zeros(len(points), dtype=np.int64)
    for _ in range(rounds):
        distances = ((points[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
        new = np.argmin(distances, axis=1)
        if np.array_equal(new, assignment) and _ > 0:
            break
        assignment = new
        for c in range(k):
            if np.any(assignment == c):
                centres[c] = points[assignment == c].mean(axis=0)
    return assignment


def title_words(title: str) -> list[str]:
    """A title's subject words, each once, as written (a word's casing is kept for the label)."""
    words = [w for w in _WORD.findall(title) if len(w) > 2 and not w.isdigit()]
    seen: dict[str, str] = {}
    for word in words:
        key = word.lower()
        if key not in STOP_WORDS and key not in GENERIC:
            seen.setdefault(key, word)
    return list(seen.values())


def cluster_label(members: Sequence[int], titles: Sequence[str], tags: Sequence[Sequence[str]]) -> str:
    """The tag most of `members` carry and most papers do not, else their most distinctive title words."""
    n = len(titles)
    tag_counts = Counter(tag for i in members for tag in set(tags[i]))
    list_tags = Counter(tag for paper_tags in tags for tag in set(paper_tags))
    for tag, count in sorted(tag_counts.items(), key=lambda item: (-item[1], item[0])):
        if count / len(members) > TAG_SHARE and list_tags[tag] / n <= TAG_SHARE_OF_LIST:
            return tag
    inside: Counter[str] = Counter()
    spelled: dict[str, Counter[str]] = {}
    for i in members:
        for word in title_words(titles[i]):
            inside[word.lower()] += 1
            spelled.setdefault(word.lower(), Counter())[word] += 1
    overall = Counter(word.lower() for title in titles for word in title_words(title))
    # how much more often the cluster's titles use a word than the list's; used by at least two of them
    lift = {w: c / len(members) - overall[w] / n for w, c in inside.items() if c >= 2}
    best = sorted((w for w in lift if lift[w] > 0), key=lambda w: (-lift[w], w))[:LABEL_WORDS]
    return " · ".join(spelled[w].most_common(1)[0][0] for w in best)


def map_clusters(
    points: Sequence[tuple[int, int]], titles: Sequence[str], tags: Sequence[Sequence[str]]
) -> list[Cluster]:
    """The map's labelled regions (none for a list too small to have regions), largest first."""
    if len(points) < 2 * MIN_CLUSTER:
        return []
    grid = np.array(points, dtype=np.float64)
    assignment = kmeans(grid, cluster_count(len(points)))
    clusters = []
    for c in sorted(set(assignment.tolist())):
        members = tuple(int(i) for i in np.flatnonzero(assignment == c))
        if len(members) < MIN_CLUSTER:
            continue
        label = cluster_label(members, titles, tags)
        if label:
            x, y = np.rint(grid[list(members)].mean(axis=0)).astype(int)
            clusters.append(Cluster(int(x), int(y), label, members))
    clusters.sort(key=lambda cluster: (-len(cluster.members), cluster.label))
    return clusters
