"""Block contents and block-hash chains for the prefix cache (kv.py).

A prompt is a sequence of segments (segment id, token count); a block's content is the runs of
segment tokens it holds, and a full block's hash chains its parent's hash and its content (vLLM
v1's block_hash), so equal hashes mean equal prefixes. Chains are pure functions of the segments
and the block size, remembered in a memo shared by every cache of one block size.

Who keeps the memos, and for how long, is the caller's choice, as for a simulator's MEMO_ENTRIES
(results_cache.py): `kept_in(store)` makes the caches built inside it use `store`, a bounded
LruCache of memos by block size. api.Session passes its own (so a reader's next change finds the
chains of the prompts it served before, and they go with the session); a call without a session,
and serve() called outside any store, get one for that call alone. Nothing is process-global.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..results_cache import LruCache

Runs = tuple[tuple[int, int, int], ...]  # (segment id, start, end) token ranges in one block


def block_runs(segments: tuple[tuple[int, int], ...], block_size: int, upto: int) -> list[Runs]:
    """Content of each block of the first `upto` tokens: a list of runs per block (last may be short)."""
    blocks: list[Runs] = []
    cur: list[tuple[int, int, int]] = []
    room = block_size
    left = upto
    for seg_id, n in segments:
        start = 0
        while start < n and left > 0:
            take = min(n - start, room, left)
            cur.append((seg_id, start, start + take))
            start += take
            room -= take
            left -= take
            if room == 0:
                blocks.append(tuple(cur))
                cur, room = [], block_size
        if left == 0:
            break
    if cur:
        blocks.append(tuple(cur))
    return blocks


def is_prefix(short: Runs, long: Runs) -> bool:
    """True when the tokens of `short` are a prefix of the tokens of `long`."""
    if len(short) > len(long):
        return False
    for i, (s, lo, hi) in enumerate(short):
        s2, lo2, hi2 = long[i]
        if s != s2 or lo != lo2 or (hi != hi2 and (i != len(short) - 1 or hi > hi2)):
            return False
    return True


Chain = tuple[list[tuple[int, Runs]], Runs, list[int]]  # full blocks, tail runs, full blocks' hashes


class ChainMemo(dict[tuple[tuple[int, int], ...], Chain]):
    """Block-hash chains per prefix of segments, for one block size.

    A chain is a pure function of the segments and the block size, so one memo per block size
    serves every cache of a store (see kept_in): a reader's next change usually serves the same
    prompts again (another rate, router or replica count) and finds their chains here. It is
    emptied when the chains it holds pass MAX_BLOCKS blocks (a few MB in the reader's browser).
    """

    MAX_BLOCKS = 500_000

    def __init__(self) -> None:
        super().__init__()
        self.blocks = 0

    def keep(self, key: tuple[tuple[int, int], ...], chain: Chain) -> None:
        if self.blocks + len(chain[0]) > self.MAX_BLOCKS:
            self.clear()
            self.blocks = 0
        self[key] = chain
        self.blocks += len(chain[0])


def chain(memo: ChainMemo, segments: tuple[tuple[int, int], ...], bs: int) -> Chain:
    """Full-block chain of all the segments, the runs of the part-filled tail block, and the
    full blocks' hashes alone (a list of ints: the cache's hot loops read only those)."""
    known = memo.get(segments)
    if known is not None:  # the usual case: admission attempts and routers ask again and again
        return known
    k = len(segments)
    while k and segments[:k] not in memo:
        k -= 1
    full, tail, hs = memo[segments[:k]] if k else ([], (), [])
    for i in range(k, len(segments)):
        full, hs = list(full), list(hs)
        seg_id, n = segments[i]
        parent = hs[-1] if hs else 0
        start = 0
        if tail and n:  # first fill the part-filled block the previous segments left
            room = bs - sum(hi - lo for _, lo, hi in tail)
            start = min(n, room)
            tail = (*tail, (seg_id, 0, start))
            if start == room:
                parent = hash((parent, tail))
                full.append((parent, tail))
                hs.append(parent)
                tail = ()
        if not tail:  # then whole blocks of this segment alone, and what is left of it
            stop = start + (n - start) // bs * bs
            for lo in range(start, stop, bs):
                runs = ((seg_id, lo, lo + bs),)
                parent = hash((parent, runs))
                full.append((parent, runs))
                hs.append(parent)
            tail = ((seg_id, stop, n),) if stop < n else ()
        memo.keep(segments[: i + 1], (full, tail, hs))
    return full, tail, hs


# Block sizes whose memos a store keeps (a page's widgets use one or two): with MAX_BLOCKS each,
# a store holds at most BLOCK_SIZES_KEPT * MAX_BLOCKS blocks' chains.
BLOCK_SIZES_KEPT = 4
ChainStore = LruCache[ChainMemo]
_STORE: ContextVar[ChainStore | None] = ContextVar("chain_store", default=None)


def chain_store() -> ChainStore:
    """A new, empty store: memos for at most BLOCK_SIZES_KEPT block sizes."""
    return LruCache(BLOCK_SIZES_KEPT)


def current_store() -> ChainStore | None:
    """The store the caches built now use, or None outside any kept_in()."""
    return _STORE.get()


@contextmanager
def kept_in(store: ChainStore) -> Iterator[ChainStore]:
    """Inside, every cache built without a memo of its own takes its block size's from `store`."""
    token = _STORE.set(store)
    try:
        yield store
    finally:
        _STORE.reset(token)


def chain_memo(block_size: int) -> ChainMemo:
    """The chain memo for `block_size` from the current store; outside any, a new one of its own."""
    store = _STORE.get()
    if store is None:
        return ChainMemo()
    return store.get_or_make(block_size, ChainMemo)
