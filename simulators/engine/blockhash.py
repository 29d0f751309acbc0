"""Block contents and block-hash chains for the prefix cache (kv.py).

A prompt is a sequence of segments (segment id, token count); a block's content is the runs of
segment tokens it holds, and a full block's hash chains its parent's hash and its content (vLLM
v1's block_hash), so equal hashes mean equal prefixes. Chains are pure functions of the segments
and the block size, remembered in a memo shared by every cache of one block size.
"""

from __future__ import annotations

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
    serves every cache, run and call: a reader's next change usually serves the same prompts
    again (another rate, router or replica count) and finds their chains here. It is emptied
    when the chains it holds pass MAX_BLOCKS blocks (a few MB in the reader's browser).
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
        cur = list(tail)
        room = bs - sum(hi - lo for _, lo, hi in cur)
        seg_id, n = segments[i]
        start = 0
        parent = hs[-1] if hs else 0
        while start < n:
            take = min(n - start, room)
            cur.append((seg_id, start, start + take))
            start += take
            room -= take
            if room == 0:
                runs = tuple(cur)
                parent = hash((parent, runs))
                full.append((parent, runs))
                hs.append(parent)
                cur, room = [], bs
        tail = tuple(cur)
        memo.keep(segments[: i + 1], (full, tail, hs))
    return full, tail, hs


_CHAINS: dict[int, ChainMemo] = {}


def chain_memo(block_size: int) -> ChainMemo:
    """The shared chain memo for `block_size`."""
    return _CHAINS.setdefault(block_size, ChainMemo())
