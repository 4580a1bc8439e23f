"""Did-you-mean: the bit-parallel stem distance, the plain edit distance, suggestions over a ranged index."""

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


def speller(passages, tmp_path, announce=None):
    """A speller over the very files a site serves: the ranged term index, read from a folder
    (`announce` hears each batch of ranges, as the browser's worker does)."""
    from support.term_files import write_term_files

    from readingroom_core.bm25 import build_postings
    from readingroom_core.formats.postings import read_term_directory
    from readingroom_core.ranges import BlockReader, folder_range_reader
    from readingroom_core.readers.postings import TermIndex
    from readingroom_core.spelling import Speller

    directory = read_term_directory(write_term_files(build_postings(passages), tmp_path).read_bytes())
    reader = BlockReader(folder_range_reader(tmp_path), announce)
    return Speller(TermIndex(directory, reader), passages.__getitem__, lambda _: None)


# Passages where the common word and a rarer neighbour both exist: the typo must go to the common one.
PASSAGES = [
    *["rotary position embeddings rotate the query and key vectors"] * 6,
    "a router sends each token to an expert; the router is trained",
    "the router drops tokens past capacity",
    *["the sequence length grows and the position matters"] * 60,  # MISPRINT_RATIO times the misprint
    "the lenght of the context",  # a misprint of the papers themselves
    "qbert is an atari game the agent plays",
    "the smooth function has a gradient",
    *["a rotating frame and a rotary encoder"] * 2,
    *["the encoder maps the rotor angle"] * 3,
]


def test_a_typo_goes_to_the_nearest_common_word_that_agrees_with_the_query(tmp_path):
    speller_ = speller(PASSAGES, tmp_path)
    assert speller_.suggest("rotery position embeddings") == "rotary position embeddings"
    assert speller_.suggest("lenght of the sequence") == "length of the sequence"  # a misprint, far rarer


def test_no_suggestion_rather_than_a_rare_or_distant_word(tmp_path):
    speller_ = speller(PASSAGES, tmp_path)
    assert speller_.suggest("qwerty") is None  # two edits from "qbert" in a six-letter word
    assert speller_.suggest("asdfgh") is None
    assert speller_.suggest("purple elephant banana smoothie") is None  # "smooth" is two edits away
    assert speller_.suggest("rotary position") is None  # nothing misspelt


def test_agreement_with_the_other_words_breaks_a_tie(tmp_path):
    passages = [*["camel desert caravan"] * 3, *["cater wedding food"] * 5]
    # "camel" and "cater" are both one edit from "catel"; the query's other word picks the one beside
    # it, even the rarer one
    assert speller(passages, tmp_path).suggest("catel desert") == "camel desert"
    assert speller(passages, tmp_path).suggest("catel wedding") == "cater wedding"
    assert speller(passages, tmp_path).suggest("catel") == "cater"  # alone: the commoner


def test_several_unknown_words_cost_three_batches_of_reads(tmp_path):
    """In the browser each batch is a round trip and a rerun of the step: the lookups of every word go
    together (entries, the dictionary near each unknown word, the candidates' postings)."""
    batches = []
    speller_ = speller([*PASSAGES, *["the router and the encoder"] * 4], tmp_path, batches.append)
    assert speller_.suggest("rotery posiiton lenght ruoter encodr") == "rotary position length router encoder"
    assert len(batches) <= 3, batches
