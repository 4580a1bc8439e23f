"""A mapping that forgets its least recently used entries: what the core keeps between queries (decoded
postings, lists and paper texts) must not grow with a visit: kept without bound, they take a worker's
memory past a gigabyte over the scale bench's questions at 10,000 papers (commit 3dc8b7d; the heap after
them is in docs/measurements/scale.json)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from typing import Generic, TypeVar

Key = TypeVar("Key")
Value = TypeVar("Value")


class Recent(Generic[Key, Value]):
    """Entries by recency, each weighing `weigh(value)`; `trim` forgets the oldest past `limit` in all.
    Reading an entry makes it the most recent."""

    def __init__(self, limit: int, weigh: Callable[[Value], int] = lambda _: 1) -> None:
        self.limit = limit
        self._weigh = weigh
        self._entries: dict[Key, Value] = {}  # least recently used first
        self.weight = 0

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Key]:
        return iter(self._entries)

    def __getitem__(self, key: Key) -> Value:
        value = self._entries.pop(key)
        self._entries[key] = value
        return value

    def get(self, key: Key, default: Value | None = None) -> Value | None:
        return self[key] if key in self._entries else default

    def __setitem__(self, key: Key, value: Value) -> None:
        if key in self._entries:
            self.weight -= self._weigh(self._entries.pop(key))
        self._entries[key] = value
        self.weight += self._weigh(value)

    def trim(self, keep: Collection[Key] = ()) -> list[tuple[Key, Value]]:
        """Forget the least recently used entries, except those in `keep`, until the rest weigh at most
        `limit`; the forgotten, oldest first. Called between steps, never inside one, so a step never
        loses what it just read."""
        forgotten = []
        for key in [key for key in self._entries if key not in keep]:
            if self.weight <= self.limit:
                break
            value = self._entries.pop(key)
            self.weight -= self._weigh(value)
            forgotten.append((key, value))
        return forgotten


class LastResult(Generic[Key, Value]):
    """The last result computed, under its arguments. The browser runs a step from its start again each
    time the step stops for bytes not fetched yet (`ranges.Announce`); the next run finds what the one
    before computed before it stopped. One entry: the next query's first run replaces it. With it,
    running a step again costs little: most of the stopped runs' work is reading, checking and decoding
    that later runs find done (commit 4020d5a measured it at 10,000 papers)."""

    def __init__(self) -> None:
        self._last: tuple[Key, Value] | None = None

    def get(self, key: Key, compute: Callable[[], Value]) -> Value:
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        value = compute()
        self._last = (key, value)
        return value
