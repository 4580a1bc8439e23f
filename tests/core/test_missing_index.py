"""Which works the list lacks a query names (readers/missing.py): by a name the citing papers use, by
its title or its arXiv id, whatever the case, accents and hyphens; never a topic query, nor a query that
only holds a name among other words. The file's codec round-trips (formats/missing.py)."""

from readingroom_core.formats.missing import MAX_WORKS, MissingWork, missing_bytes, read_missing
from readingroom_core.readers.missing import MissingIndex

CHINCHILLA = MissingWork(
    "2203.15556",
    "Training compute-optimal large language models",
    ("Chinchilla",),
    (("2302.13971", 2), ("2305.13048", None)),
)
GPT4 = MissingWork("2303.08774", "Gpt-4 technical report", ("GPT-4",), (("2401.10774", 1),) * 3)
LSTM = MissingWork(None, "Long short-term memory", ("LSTM", "LSTMs"), (("2302.13971", 4), ("2305.13048", 7)))
INDEX = MissingIndex([GPT4, CHINCHILLA, LSTM])


def test_a_name_title_or_id_names_the_work():
    for query in ("Chinchilla", "chinchilla", " CHINCHILLA ", '"Chinchilla"', "chinchilla year:2020..2024"):
        assert INDEX.match(query) == [CHINCHILLA], query
    assert INDEX.match("gpt4") == INDEX.match("GPT 4") == INDEX.match("gpt-4") == [GPT4]
    assert INDEX.match("training compute-optimal large language models") == [CHINCHILLA]
    assert INDEX.match("arXiv:2203.15556v2") == [CHINCHILLA]
    assert INDEX.match("lstms") == [LSTM]


def test_topic_queries_and_names_among_other_words_name_nothing():
    for query in (
        "how does the model avoid forgetting",
        "compute optimal scaling",
        "chinchilla scaling laws",
        "memory",
        "language models",
        "",
    ):
        assert INDEX.match(query) == [], query


def test_the_file_round_trips_and_is_bounded():
    works = [CHINCHILLA, LSTM, GPT4]
    assert read_missing(missing_bytes(works)) == works
    many = [MissingWork(None, f"Work number {n}", (), (("a", 1),)) for n in range(MAX_WORKS + 5)]
    assert len(read_missing(missing_bytes(many))) == MAX_WORKS
