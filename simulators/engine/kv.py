"""The KV block pool: paged blocks or contiguous max-length slabs, with an optional prefix cache.

    GPU KV memory = num_blocks blocks of block_size tokens each

    paged:       seq A  [A0][A1][A2]       blocks taken one at a time as the sequence grows;
                 seq B  [B0][B1]           only the last block of each sequence is part-empty
    contiguous:  seq A  [A0 A1 A2 . . . . . . . . . . . . . . .]   max_model_len reserved at
                 seq B  [B0 B1 . . . . . . . . . . . . . . . . .]   admission, mostly empty

Blocks are counted, not named, unless the prefix cache needs a name for them: a cached block is
an entry of `cached`, its `block_hash` mapped to its `ref_cnt` (running sequences using it); a
part-filled one (radix) also keeps its content and token count in `part_filled`. Cached blocks
with ref_cnt 0 stay in `evictable`, least recently used first, and are reused (evicted) only
when no empty block is left. The free list therefore has two parts: `num_free_blocks` empty
blocks and the `evictable` cached ones. Invariant (tests): free + evictable + referenced cached
+ private (uncached blocks held by sequences) == num_blocks.

Prefix cache modes:
- "hash" (vLLM v1): the hash of a full block chains its parent's hash and its content, so equal
  hashes mean equal prefixes; only full blocks are cached and matched.
- "radix" (SGLang RadixAttention): matching is token-exact, so a prompt also reuses the
  part-filled last block of a cached prefix (copied into a block of its own, as a radix tree
  with page size 1 would share it without copying). Eviction is the same LRU over unreferenced
  blocks, tail blocks first, which is the order a radix tree evicts leaves in.
A full hit still recomputes the last prompt token (its logits are needed), as vLLM does.

References: 1) Kwon et al. 2023, PagedAttention (arXiv 2309.06180); 2) vLLM v1
vllm/v1/core/kv_cache_manager.py, block_pool.py (block_hash, ref_cnt, free_block_queue);
3) Zheng et al. 2024, SGLang (arXiv 2312.07104), RadixAttention.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

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


def _is_prefix(short: Runs, long: Runs) -> bool:
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


_CHAINS: dict[int, ChainMemo] = {}


def chain_memo(block_size: int) -> ChainMemo:
    """The shared chain memo for `block_size`."""
    return _CHAINS.setdefault(block_size, ChainMemo())


@dataclass
class KVCacheManager:
    num_blocks: int
    block_size: int
    # "paged" or "contiguous" (each sequence reserves reserve_tokens at admission).
    layout: str = "paged"
    reserve_tokens: int = 0
    # "off", "hash" or "radix".
    prefix: str = "off"
    num_free_blocks: int = 0
    cached: dict[int, int] = field(default_factory=dict)  # block hash -> ref_cnt
    evictable: OrderedDict[int, None] = field(default_factory=OrderedDict)
    partial: dict[int, list[int]] = field(default_factory=dict)  # parent hash -> part-filled children
    part_filled: dict[int, tuple[Runs, int]] = field(default_factory=dict)  # part-filled block -> (runs, tokens)
    num_evictions: int = 0
    # Hash chains per prefix of segments: by default the memo every cache of this block size shares.
    memo: ChainMemo | None = None

    def __post_init__(self) -> None:
        self.num_free_blocks = self.num_blocks
        if self.memo is None:
            self.memo = chain_memo(self.block_size)

    # -- counting -----------------------------------------------------------------------------

    def blocks_for(self, tokens: int) -> int:
        """Blocks a sequence of `tokens` tokens holds: ceil(tokens / block_size), or its slab."""
        if self.layout == "contiguous":
            return -(-self.reserve_tokens // self.block_size)
        return -(-tokens // self.block_size)

    def num_available(self) -> int:
        return self.num_free_blocks + len(self.evictable)

    def num_available_after_ref(self, hashes: list[int]) -> int:
        """Blocks still available once `hashes` are referenced (evictable ones among them stop being so)."""
        evictable = self.evictable
        return self.num_free_blocks + len(evictable) - sum(1 for h in hashes if h in evictable)

    def num_used(self) -> int:
        """Blocks held by running sequences (private or referenced cached blocks)."""
        return self.num_blocks - self.num_available()

    def take(self, n: int) -> bool:
        """Allocate n private blocks, evicting least recently used cached blocks if needed."""
        free = self.num_free_blocks
        if n <= free:  # the usual case, answered first: this runs several times per step
            self.num_free_blocks = free - n
            return True
        if n > free + len(self.evictable):
            return False
        from_free = free
        self.num_free_blocks = 0
        if n > from_free:  # evict, least recently used first (locals: a pressured run evicts a lot)
            evictable, cached, part_filled = self.evictable, self.cached, self.part_filled
            for _ in range(n - from_free):
                h, _ = evictable.popitem(last=False)
                del cached[h]
                if h in part_filled:
                    del part_filled[h]
                    self._forget_partial(h)
            self.num_evictions += n - from_free
        return True

    def give_back(self, n: int) -> None:
        self.num_free_blocks += n

    def _forget_partial(self, h: int) -> None:
        """Drop an evicted part-filled block from its parent's list."""
        for kids in self.partial.values():
            if h in kids:
                kids.remove(h)
                break

    # -- prefix cache -------------------------------------------------------------------------

    def hashes(self, segments: tuple[tuple[int, int], ...], upto: int) -> list[tuple[int, Runs]]:
        """(block_hash, runs) for each block of the first `upto` tokens (a chain: parent, content).

        Chains are remembered per prefix of segments, so a conversation's next turn hashes only
        its new segments (hashing stays proportional to new tokens, not to history).
        """
        full, tail, _ = self._chain(segments)
        n_full, rem = divmod(upto, self.block_size)
        out = full[:n_full]
        if rem:
            runs = full[n_full][1] if n_full < len(full) else tail
            cut, left = [], rem
            for seg_id, lo, hi in runs:
                take = min(hi - lo, left)
                cut.append((seg_id, lo, lo + take))
                left -= take
                if not left:
                    break
            parent = out[-1][0] if out else 0
            out.append((hash((parent, tuple(cut))), tuple(cut)))
        return out

    def _chain(self, segments: tuple[tuple[int, int], ...]) -> Chain:
        """Full-block chain of all the segments, the runs of the part-filled tail block, and the
        full blocks' hashes alone (a list of ints: the cache's hot loops read only those)."""
        memo = self.memo
        assert memo is not None  # set in __post_init__
        known = memo.get(segments)
        if known is not None:  # the usual case: admission attempts and routers ask again and again
            return known
        k = len(segments)
        while k and segments[:k] not in memo:
            k -= 1
        full, tail, hs = memo[segments[:k]] if k else ([], (), [])
        bs = self.block_size
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

    def match(self, segments: tuple[tuple[int, int], ...], prompt_tokens: int) -> tuple[list[int], int]:
        """Cached prefix of a prompt: (hashes of matched full blocks, tokens hit). Touches LRU."""
        if self.prefix == "off" or prompt_tokens <= 1:
            return [], 0
        bs = self.block_size
        n_full, rem = divmod(prompt_tokens, bs)
        hs = self._chain(segments)[2]
        # Plain loops over dicts of ints: this runs for every admission attempt and, with a
        # prefix-aware router, for every replica per arrival. (Pyodide runs such bytecode faster
        # than C helpers called through method wrappers, map or takewhile: measured 2-3x.)
        cached = self.cached
        if self.num_evictions:
            n = 0
            for h in hs[:n_full]:
                if h not in cached:
                    break
                n += 1
        else:
            # Until the first eviction every cached block's parent is cached too (blocks enter
            # the cache only after their prefix, see cache_blocks): along a chain the cached
            # blocks are a prefix, and a binary search finds its end.
            lo, hi = 0, min(n_full, len(hs))
            while lo < hi:
                mid = (lo + hi) // 2
                if hs[mid] in cached:
                    lo = mid + 1
                else:
                    hi = mid
            n = lo
        hit = hs[:n]
        tokens = n * bs
        if self.prefix == "radix" and n < n_full + (rem > 0):
            want = self.hashes(segments, prompt_tokens)[n][1]
            best = 0
            for ph in self.partial.get(hit[-1] if hit else 0, ()):
                runs, held = self.part_filled[ph]
                if _is_prefix(runs, want) and held > best:
                    best = held
                    self._touch(ph)
            tokens += best
        # The last prompt token is always computed: its logits give the first output token.
        while tokens >= prompt_tokens:
            if tokens - len(hit) * bs > 0:
                tokens = len(hit) * bs
            else:
                hit.pop()
                tokens -= bs
        return hit, tokens

    def _touch(self, h: int) -> None:
        if h in self.evictable:
            self.evictable.move_to_end(h)

    def ref(self, hashes: list[int]) -> None:
        cached, evictable = self.cached, self.evictable
        for h in hashes:
            n = cached[h]
            if n == 0:
                del evictable[h]
            cached[h] = n + 1

    def unref(self, hashes: list[int]) -> None:
        # Tail blocks first, so that LRU eviction takes the ends of prefixes before their roots.
        cached, evictable = self.cached, self.evictable
        for h in reversed(hashes):
            n = cached[h] - 1
            cached[h] = n
            if n == 0:
                evictable[h] = None

    def cache_blocks(
        self, segments: tuple[tuple[int, int], ...], upto: int, start: int, owned: list[int], *, final: bool = False
    ) -> int:
        """Turn a sequence's private blocks (of its first `upto` tokens) from block `start` on
        into cached ones it references.

        Full blocks only, except that "radix" also keeps the part-filled last block of a
        finished sequence (`final`: its content will not change any more). A block whose
        hash is already cached (another sequence computed it meanwhile) stays private, and so
        do the blocks after it. Returns how many private blocks were converted; their hashes
        are appended to `owned`.
        """
        n_full, rem = divmod(upto, self.block_size)
        hs = self._chain(segments)[2]
        cached = self.cached
        stop = start
        if self.num_evictions:
            for h in hs[start:n_full]:
                if h in cached:
                    break
                stop += 1
        elif start < n_full and hs[start] not in cached:
            stop = n_full  # no eviction yet: a cached block after an uncached one is impossible (match)
        new = hs[start:stop]
        cached.update(dict.fromkeys(new, 1))
        owned.extend(new)
        converted = len(new)
        if stop == n_full and rem and final and self.prefix == "radix" and start <= n_full:
            h, runs = self.hashes(segments, upto)[n_full]
            if h not in cached:
                cached[h] = 1
                self.part_filled[h] = (runs, rem)
                self.partial.setdefault(hs[n_full - 1] if n_full else 0, []).append(h)
                owned.append(h)
                converted += 1
        return converted
