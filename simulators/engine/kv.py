"""The KV cache manager: the block pool (blockpool.py) with an optional prefix cache on top,
which names blocks by their content so that a prompt finds the blocks another has computed.

Prefix cache modes:
- "hash" (vLLM v1): a full block's key is equal to another's exactly when their prefixes are
  (vLLM chains its parent's hash and its content; blockhash.py names the same prefix with one
  hash per segment); only full blocks are cached and matched.
- "radix" (SGLang RadixAttention): matching is token-exact, so a prompt also reuses the
  part-filled last block of a cached prefix (copied into a block of its own, as a radix tree
  with page size 1 would share it without copying). Eviction is the same LRU over unreferenced
  blocks, tail blocks first, which is the order a radix tree evicts leaves in.
A full hit still recomputes the last prompt token (its logits are needed), as vLLM does.

References: 1) vLLM v1 vllm/v1/core/kv_cache_manager.py (get_computed_blocks, cache_blocks);
2) Zheng et al. 2024, SGLang (arXiv 2312.07104), RadixAttention.
"""

from bisect import bisect_left
from dataclasses import dataclass

from .blockhash import Chain, ChainMemo, Runs, Segments, block_content, chain, chain_memo, is_prefix
from .blockpool import BlockPool


@dataclass
class KVCacheManager(BlockPool):
    # Hash chains per prefix of segments: by default the memo every cache of this block size shares.
    memo: ChainMemo | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.memo is None:
            self.memo = chain_memo(self.block_size)

    def block(self, segments: Segments, index: int, upto: int) -> tuple[int, Runs]:
        """(key, runs) of block `index` of the first `upto` tokens: a full block's key from the
        chain (blockhash), a part-filled one's hash((parent key, runs))."""
        runs = block_content(segments, self.block_size, index, upto)
        if (index + 1) * self.block_size <= upto:
            return self._chain(segments)[0][index], runs
        parent = self._chain(segments)[0][index - 1] if index else 0
        return hash((parent, runs)), runs

    def hashes(self, segments: Segments, upto: int) -> list[tuple[int, Runs]]:
        """(key, runs) for each block of the first `upto` tokens, the last one maybe part-filled."""
        return [self.block(segments, i, upto) for i in range(-(-upto // self.block_size))]

    def _chain(self, segments: Segments) -> Chain:
        """The full blocks' keys of all the segments, the part-filled tail's runs, their hash."""
        assert self.memo is not None  # set in __post_init__
        return chain(self.memo, segments, self.block_size)

    def match(self, segments: Segments, prompt_tokens: int) -> tuple[list[int], int]:
        """Cached prefix of a prompt: (hashes of matched full blocks, tokens hit). Touches LRU."""
        if self.prefix == "off" or prompt_tokens <= 1:
            return [], 0
        bs = self.block_size
        n_full, rem = divmod(prompt_tokens, bs)
        hs = self._chain(segments)[0]
        # Plain loops: this runs for every admission attempt and, with a prefix-aware router, for
        # every replica per arrival (Pyodide runs them 2-3x faster than map or takewhile).
        cached = self.cached
        if self.num_evictions:
            n = 0
            for h in hs[:n_full]:
                if h not in cached:
                    break
                n += 1
        else:
            # Until the first eviction every cached block's parent is cached too (cache_blocks): the
            # cached blocks of a chain are a prefix, and a binary search finds its end.
            n = bisect_left(hs, True, 0, min(n_full, len(hs)), key=lambda h: h not in cached)
        hit = hs[:n]
        tokens = n * bs
        if self.prefix == "radix" and n < n_full + (rem > 0):
            want = self.block(segments, n, prompt_tokens)[1]
            best = 0
            for ph in self.partial.get(hit[-1] if hit else 0, ()):
                runs, held = self.part_filled[ph]
                if is_prefix(runs, want) and held > best:
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

    def cache_blocks(self, segments: Segments, upto: int, start: int, owned: list[int], *, final: bool = False) -> int:
        """Turn a sequence's private blocks (of its first `upto` tokens) from block `start` on into
        cached ones it references (appended to `owned`); returns how many. Full blocks only, but
        "radix" also keeps a finished (`final`) sequence's part-filled last block. A block already
        cached (another sequence computed it meanwhile) stays private, and so do those after it."""
        n_full, rem = divmod(upto, self.block_size)
        hs = self._chain(segments)[0]
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
        for h in new:  # a plain loop, faster than update(fromkeys) (BlockPool.ref)
            cached[h] = 1
        owned.extend(new)
        converted = len(new)
        if stop == n_full and rem and final and self.prefix == "radix" and start <= n_full:
            h, runs = self.block(segments, n_full, upto)
            if h not in cached:
                cached[h] = 1
                self.part_filled[h] = (runs, rem)
                self.partial.setdefault(hs[n_full - 1] if n_full else 0, []).append(h)
                owned.append(h)
                converted += 1
        return converted
