"""What a session keeps between calls: one store, one eviction rule (least recently used, by entry count).

A reader changes one control at a time, and switches charts more often still. The store a caller
owns (api.Session for a browser worker, the site build's) keeps two kinds of entries, each in a
bounded least-recently-used map:

- answers: a simulator's full result by (simulator, canonical parameters, seed, chart), at most
  MAX_RESULTS of them (the largest, the load test's records in CSV, is about 0.5 MB);
- work: what a simulator's `run()` reuses across calls, kept through the one function it is handed,
  `keep(key, make)` (make() once, then the kept value), in the simulator's own namespace of at most
  its module's MEMO_ENTRIES entries (DEFAULT_ENTRIES if it names none). The engine's block-hash
  chains live in one more namespace (api.CHAINS, engine/blockhash.py), shared by every simulator.

So "the same scenario, another chart" re-runs run() for that chart, and its costly runs come back
from `keep` at once. Nothing here is process-global; `api.run_json` without a session gets a store
for that call alone. Values are shared, not copied: nobody may change what keep() handed back.
"""

import json
from collections import OrderedDict
from collections.abc import Callable, Generator, Hashable
from dataclasses import asdict
from typing import Any, Generic, TypeVar

V = TypeVar("V")
P = TypeVar("P")

# The one cache a simulator sees: keep(key, make) is the value kept for `key`, or make()'s, kept.
Keep = Callable[[Hashable, Callable[[], Any]], Any]
# A streaming run(): it yields partial results (the chart so far) and returns the full one.
Streamed = Generator[dict[str, Any], None, dict[str, Any]]
# kept_steps() of a run served while shown (engine.cluster.serve_shown, at a quarter of its requests done):
# the charts so far, then the run and whether it was kept already.
KeptSteps = Generator[dict[str, Any], None, tuple[V, bool]]
# serve_shown's `show`: (the run measured so far, how many requests finished) -> the chart's result.
Show = Callable[[V, int], dict[str, Any]]

# Answers kept per session: a reader's recent scenarios on one page (a few widgets, a few charts).
MAX_RESULTS = 32
# Work entries a simulator that names no MEMO_ENTRIES may keep.
DEFAULT_ENTRIES = 8


class LruCache(Generic[V]):
    """A map of at most `max_entries` entries that drops the least recently used one first."""

    def __init__(self, max_entries: int) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, not {max_entries}")
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, V] = OrderedDict()
        # Lookups answered from the cache and lookups that had to compute (for tests and benchmarks).
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def get_or_make(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value kept for `key`, or `make()`'s, kept (the oldest entry goes if the map is full)."""
        if key in self._entries:
            self.hits += 1
            self._entries.move_to_end(key)
            return self._entries[key]
        self.misses += 1
        value = make()
        self._entries[key] = value
        if len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        self._entries.clear()


def for_call(keep: Keep | None, entries: int = DEFAULT_ENTRIES) -> Keep:
    """`keep`, or one for a single call (a simulator run directly, without a session's store)."""
    return keep if keep is not None else LruCache[Any](entries).get_or_make


def kept(keep: Keep, key: Hashable, make: Callable[[], V]) -> tuple[V, bool]:
    """keep(key, make)'s value and whether it was kept already: a streaming run posts a chart only
    for work it did now (kept work is drawn with the answer, at once)."""
    made: list[bool] = []

    def making() -> V:
        made.append(True)
        return make()

    value: V = keep(key, making)
    return value, not made


def kept_steps(
    keep: Keep, key: Hashable, steps: Callable[[], Generator[P, None, V]]
) -> Generator[P, None, tuple[V, bool]]:
    """kept() for work that yields as it goes: its yields pass through, then its value is kept (a run
    given up half-way keeps nothing)."""
    box: dict[str, V] = keep(key, dict)
    if "value" in box:
        return box["value"], True
    value = yield from steps()
    box["value"] = value
    return value, False


def run_key(params: Any, seed: int, *what: Any) -> str:
    """A memo key for one run of a scenario, as canonical JSON: every parameter (a dataclass), the seed,
    and what the run is (a policy, a cache mode, a memory size...)."""
    return json.dumps([asdict(params), seed, *what], sort_keys=True, default=str)


class ResultsCache:
    """A session's store: answers, and one namespace of work per simulator (and the engine's chains)."""

    def __init__(self, max_results: int = MAX_RESULTS) -> None:
        self.results: LruCache[object] = LruCache(max_results)
        self._memos: dict[str, LruCache[object]] = {}

    def memo(self, name: str, max_entries: int) -> LruCache[object]:
        """The work namespace `name` (made on first use, with its bound)."""
        if name not in self._memos:  # made once per namespace, not on every call
            self._memos[name] = LruCache(max_entries)
        return self._memos[name]

    def keep(self, name: str, max_entries: int) -> Keep:
        """The keep(key, make) function simulator `name` is handed: its namespace's."""
        return self.memo(name, max_entries).get_or_make

    def clear(self) -> None:
        self.results.clear()
        self._memos.clear()
