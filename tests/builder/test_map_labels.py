"""The map's region labels (builder/map_labels.py): regions found where the points lie, each named by a
tag most of its papers carry, else by the title words that set it apart; the same map, the same labels."""

from __future__ import annotations

import numpy as np

from builder.map_labels import cluster_count, kmeans, map_clusters, title_words


def _blobs() -> tuple[list[tuple[int, int]], list[str], list[tuple[str, ...]]]:
    """Three regions of eight papers: one tagged "peft", two untagged with titles on their subjects."""
    rng = np.random.default_rng(7)
    points: list[tuple[int, int]] = []
    titles: list[str] = []
    tags: list[tuple[str, ...]] = []
    regions = [
        ((150, 150), "Low-rank adapters for {} fine-tuning", ("peft",)),
        ((850, 200), "Dense Retrieval with {} passage encoders", ()),
        ((500, 850), "Speculative Decoding of {} with draft models", ()),
    ]
    subjects = ["vision", "speech", "code", "math", "chat", "medical", "legal", "tabular"]
    for (cx, cy), title, tag in regions:
        for subject in subjects:
            x, y = rng.normal((cx, cy), 30)
            points.append((int(x), int(y)))
            titles.append(title.format(subject))
            tags.append(tag)
    return points, titles, tags


def test_each_region_is_named_by_its_tag_or_its_distinctive_title_words():
    points, titles, tags = _blobs()
    clusters = map_clusters(points, titles, tags)
    assert len(clusters) == cluster_count(len(points)) == 3
    by_region = {frozenset(c.members): c for c in clusters}
    assert set(by_region) == {frozenset(range(0, 8)), frozenset(range(8, 16)), frozenset(range(16, 24))}
    assert by_region[frozenset(range(8))].label == "peft"
    # words every title of the region uses and no other does; ties go alphabetically, casing as printed
    assert by_region[frozenset(range(8, 16))].label == "Dense · encoders"
    assert by_region[frozenset(range(16, 24))].label == "Decoding · draft"
    for cluster in clusters:  # the label sits at its papers' mean point
        xs, ys = zip(*(points[i] for i in cluster.members), strict=True)
        assert abs(cluster.x - sum(xs) / len(xs)) <= 1 and abs(cluster.y - sum(ys) / len(ys)) <= 1
    assert map_clusters(points, titles, tags) == clusters  # deterministic


def test_a_tag_the_whole_list_carries_names_no_region():
    points, titles, _ = _blobs()
    everywhere = [("llm",)] * len(points)
    labels = [c.label for c in map_clusters(points, titles, everywhere)]
    assert "llm" not in labels and len(labels) == 3


def test_small_lists_get_no_regions_and_titles_lose_their_function_words():
    assert map_clusters([(0, 0), (10, 10), (20, 20)], ["a", "b", "c"], [(), (), ()]) == []
    assert title_words("Learning to Retrieve: a Study of LoRA via Retrieval") == [
        "Retrieve",
        "LoRA",
        "Retrieval",
    ]
    assignment = kmeans(np.array([[0.0, 0.0], [1.0, 0.0], [100.0, 100.0], [101.0, 100.0]]), 2)
    assert assignment[0] == assignment[1] != assignment[2] == assignment[3]
