"""Answers kept between calls: one bounded, explicit cache, owned by whoever makes the calls.

A reader changes one control at a time, and switches charts more often still. A chart switch
changes no simulation input: `view` is an argument of `figure(result, view)`, not a parameter, so
the answer to "the same scenario, another chart" is the kept result, drawn again.

    cache = ResultsCache()                        # one per browser worker (api.Session), per build
    result = cache.result(("kv_cache", params_key, seed), lambda: run(params, seed=seed))

Nothing here is process-global: a `ResultsCache` lives in the object that made it (the worker's
`api.Session`, the site build's `Simulators`), and `api.run_json` without a session keeps nothing.
Both maps are least-recently-used with a bound on their number of entries, so a long visit cannot
grow the worker's memory: `MAX_RESULTS` answers of about 1 MB at most (the largest result, the
load test's records in CSV, is ~0.5 MB) and, per simulator, the entries its module names in
`MEMO_ENTRIES` (the memo a simulator's `run(..., memo=)` reuses intermediate work from).

Results are shared, not copied: a caller must not change a result it was handed (`figure()` and
`summary()` only read it; `api` serialises it into new JSON each time).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import asdict
from typing import Any, Generic, TypeVar

V = TypeVar("V")

# Answers kept per session: a reader's recent scenarios on one page (a few widgets, a few charts).
MAX_RESULTS = 32


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


def run_key(params: Any, seed: int, *what: Any) -> str:
    """A memo key for one run of a scenario: every parameter (a dataclass), the seed, and what
    the run is (a policy, a cache mode, a memory size...), as canonical JSON."""
    return json.dumps([asdict(params), seed, *what], sort_keys=True, default=str)


class ResultsCache:
    """Simulation results keyed by (simulator, canonical parameters, seed[, view]), and one memo per
    simulator for the intermediate work its `run` reuses across scenarios."""

    def __init__(self, max_results: int = MAX_RESULTS) -> None:
        self.results: LruCache[object] = LruCache(max_results)
        self._memos: dict[str, LruCache[object]] = {}

    def memo(self, name: str, max_entries: int) -> LruCache[object]:
        """The memo of simulator `name` (made on first use, with its module's bound)."""
        if name not in self._memos:
            self._memos[name] = LruCache(max_entries)
        return self._memos[name]

    def clear(self) -> None:
        self.results.clear()
        self._memos.clear()
