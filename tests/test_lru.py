"""readingroom_core.lru: what the core keeps between queries, bounded."""

from readingroom_core.lru import Recent


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
