"""Block contents and block keys for the prefix cache (kv.py).

A prompt is a sequence of segments (segment id, token count); segments with one id hold the same
tokens as far as both go, and a block's content is the runs of segment tokens it holds. The prefix
cache needs a key per full block, equal for two blocks exactly when all the tokens up to their ends
are (vLLM v1's block_hash chains its parent's hash and its content). Those tokens are fixed by the
block's index i, the segment its last token lies in, and every segment before that one (whole), so

    key = (hash(segments before, segment id) << INDEX_BITS) + i

one hash per segment; the keys of the blocks that end in a segment are a range of ints, made at
C speed. Keys are equal exactly when prefixes are (up to a collision of 64-bit hashes of distinct
segment prefixes), and hits, evictions and LRU order depend only on that, so this answers as
hashing each block would. The part-filled last block (radix mode keeps it) is keyed by
hash((parent key, runs)).

Chains are pure functions of the segments and the block size, kept in a memo shared by every cache
of one block size. `kept_in(store)` makes the caches built inside it use `store`, a bounded
LruCache of memos by block size: api.Session passes its own (a reader's next change finds the
chains it served before); serve() outside any store makes one for that call. Nothing is
process-global.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..results_cache import LruCache

Runs = tuple[tuple[int, int, int], ...]  # (segment id, start, end) token ranges in one block
Segments = tuple[tuple[int, int], ...]  # a prompt: (segment id, tokens) pairs


def block_runs(segments: Segments, block_size: int, upto: int) -> list[Runs]:
    """Content of each block of the first `upto` tokens: a list of runs per block (last may be short)."""
    blocks: list[Runs] = []
    cur: list[tuple[int, int, int]] = []
    room, left = block_size, upto
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
    if cur:
        blocks.append(tuple(cur))
    return blocks


def is_prefix(short: Runs, long: Runs) -> bool:
    """True when the tokens of `short` are a prefix of the tokens of `long`."""
    if len(short) > len(long):
        return False
    last, pairs = len(short) - 1, enumerate(zip(short, long, strict=False))
    return all(a[:2] == b[:2] and (a[2] == b[2] or (i == last and a[2] < b[2])) for i, (a, b) in pairs)


def block_content(segments: Segments, block_size: int, index: int, upto: int) -> Runs:
    """The runs of block `index` of the first `upto` tokens (shorter than a block at the end)."""
    start, stop = index * block_size, min((index + 1) * block_size, upto)
    runs: list[tuple[int, int, int]] = []
    at = 0  # tokens before the segment
    for seg_id, n in segments:
        lo, hi = max(start - at, 0), min(stop - at, n)
        if lo < hi:
            runs.append((seg_id, lo, hi))
        at += n
        if at >= stop:
            break
    return tuple(runs)


# Bits of a key that hold the block's index: blocks of a sequence up to 2**20 (a million tokens at
# one token per block).
INDEX_BITS = 20
MAX_BLOCKS_PER_SEQUENCE = 1 << INDEX_BITS

Chain = tuple[list[int], Runs, int]  # full blocks' keys, the part-filled tail's runs, the segments' hash


class ChainMemo(dict[Segments, Chain]):
    """Block keys per prefix of segments, for one block size, shared by every cache of a store
    (kept_in); emptied when its chains pass MAX_BLOCKS blocks (a few MB in the reader's browser)."""

    MAX_BLOCKS = 500_000

    def __init__(self) -> None:
        super().__init__()
        self.blocks = 0

    def keep(self, key: Segments, chain: Chain) -> None:
        if self.blocks + len(chain[0]) > self.MAX_BLOCKS:
            self.clear()
            self.blocks = 0
        self[key] = chain
        self.blocks += len(chain[0])


def chain(memo: ChainMemo, segments: Segments, bs: int) -> Chain:
    """The full blocks' keys of all the segments (see the module docstring), the runs of the
    part-filled tail block, and a hash of the segments (whole) that later segments' keys build on."""
    known = memo.get(segments)
    if known is not None:  # the usual case: admission attempts and routers ask again and again
        return known
    k = len(segments)
    while k and segments[:k] not in memo:
        k -= 1
    keys, tail, prefix = memo[segments[:k]] if k else ([], (), 0)
    for i in range(k, len(segments)):
        seg_id, n = segments[i]
        if n:  # an empty segment holds no token: the chain is the one before it
            before = len(keys) * bs + sum(hi - lo for _, lo, hi in tail)  # tokens before the segment
            first, last = len(keys), (before + n) // bs  # the full blocks that end in this segment
            if last > MAX_BLOCKS_PER_SEQUENCE:
                raise ValueError(f"more than {MAX_BLOCKS_PER_SEQUENCE:,} blocks in one sequence")
            base = hash((prefix, seg_id)) << INDEX_BITS
            keys = [*keys, *range(base + first, base + last)]
            if (before + n) % bs == 0:
                tail = ()
            elif last > first:  # the tail block starts inside this segment
                tail = ((seg_id, last * bs - before, n),)
            else:  # the segment ends inside the tail block it started in
                tail = (*tail, (seg_id, 0, n))
            prefix = hash((prefix, seg_id, n))
        memo.keep(segments[: i + 1], (keys, tail, prefix))
    return keys, tail, prefix


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
    return ChainMemo() if store is None else store.get_or_make(block_size, ChainMemo)
