"""Did-you-mean's distances: the bit-parallel stem distance and the plain edit distance."""

import random

from readingroom_core.spelling import MAX_ENDING, edit_distance, stem_distance


def _stem_distance_by_table(stem: str, word: str, limit: int) -> tuple[int, int]:
    """stem_distance as the plain dynamic-programming table (adjacent transpositions cost one)."""
    rows = [list(range(len(word) + 1))]
    for i in range(1, len(stem) + 1):
        row = [i] + [0] * len(word)
        for j in range(1, len(word) + 1):
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (stem[i - 1] != word[j - 1]))
            if i > 1 and j > 1 and stem[i - 1] == word[j - 2] and stem[i - 2] == word[j - 1]:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    ends = range(max(1, len(word) - MAX_ENDING), len(word) + 1)
    best = min(((rows[-1][j], len(word) - j) for j in ends), default=(limit + 1, 0))
    return best if best[0] <= limit else (limit + 1, 0)


def test_stem_distance_is_the_edit_distance_table_to_the_closest_prefix():
    """The bit-parallel stem_distance (did-you-mean's cost) agrees with the plain table everywhere."""
    assert stem_distance("adapt", "adaptaion", 2) == (0, 4)  # "adapt" + "aion"
    assert stem_distance("transform", "transfomer", 2) == (1, 2)  # "transfom" + "er"
    assert stem_distance("attent", "attnetion", 2) == (1, 3)  # a transposition
    assert stem_distance("zebra", "attention", 2) == (3, 0)
    rng = random.Random(20261123)
    for alphabet in ("ab", "abc", "aeinorst"):  # few letters: many repeats and transpositions
        for _ in range(3000):
            stem = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
            word = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
            limit = rng.randint(0, 3)
            expected = _stem_distance_by_table(stem, word, limit)
            assert stem_distance(stem, word, limit) == expected, (stem, word, limit)


def test_edit_distance_counts_transpositions_and_stops_at_the_limit():
    assert edit_distance("attnetion", "attention", 2) == 1
    assert edit_distance("transfom", "transform", 2) == 1
    assert edit_distance("kitten", "sitting", 3) == 3
    assert edit_distance("abcdef", "uvwxyz", 2) == 3
