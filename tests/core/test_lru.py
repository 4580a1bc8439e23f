"""readingroom_core.lru: what the core keeps between queries, bounded."""

import pytest

from readingroom_core.lru import LastResult, Recent


def test_trim_forgets_the_least_recently_used_past_the_limit_but_never_what_it_is_told_to_keep():
    recent: Recent[str, list[int]] = Recent(5, len)
    recent["a"], recent["b"], recent["c"] = [1, 2], [3, 4], [5, 6]
    assert recent["a"] == [1, 2]  # read: now the most recent
    recent.trim(keep={"b"})
    assert list(recent) == ["b", "a"] and recent.weight == 4  # c went first: a was read since
    recent["d"] = [7, 8, 9]
    recent.trim(keep={"d", "a"})  # what one step needs stays, even past the limit
    assert list(recent) == ["a", "d"] and recent.weight == 5


def test_replacing_an_entry_reweighs_it():
    recent: Recent[str, list[int]] = Recent(10, len)
    recent["a"] = [1]
    recent["a"] = [1, 2, 3]
    assert recent.weight == 3 and len(recent) == 1 and recent.get("z") is None


def test_last_result_computes_once_per_key_and_remembers_only_the_last():
    last: LastResult[tuple[str, int], list[int]] = LastResult()
    computed: list[tuple[str, int]] = []

    def compute(key: tuple[str, int]) -> list[int]:
        computed.append(key)
        return [key[1]]

    first = last.get(("a", 1), lambda: compute(("a", 1)))
    assert last.get(("a", 1), lambda: compute(("a", 1))) is first  # a run after a fetch: the same result
    assert last.get(("b", 2), lambda: compute(("b", 2))) == [2]
    assert last.get(("a", 1), lambda: compute(("a", 1))) == [1]  # one entry: the next key replaced it
    assert computed == [("a", 1), ("b", 2), ("a", 1)]


def test_last_result_keeps_nothing_when_the_computation_stops():
    last: LastResult[str, int] = LastResult()

    def stopped() -> int:
        raise LookupError("bytes not fetched yet")

    with pytest.raises(LookupError):
        last.get("k", stopped)
    assert last.get("k", lambda: 7) == 7
