"""The KV block pool: paged blocks or contiguous max-length slabs, their reference counts and
the one free-block queue (vLLM v1's BlockPool; kv.py's KVCacheManager adds the prefix cache's
hashing and matching on top).

    GPU KV memory = num_blocks blocks of block_size tokens each

    paged:       seq A  [A0][A1][A2]       blocks taken one at a time as the sequence grows;
                 seq B  [B0][B1]           only the last block of each sequence is part-empty
    contiguous:  seq A  [A0 A1 A2 . . . . . . . . . . . . . . .]   max_model_len reserved at
                 seq B  [B0 B1 . . . . . . . . . . . . . . . . .]   admission, mostly empty

Blocks are counted, not named, unless the prefix cache needs a name: a cached block is an entry
of `cached`, its key (blockhash.py; vLLM's block_hash) mapped to its `ref_cnt`; a part-filled one
(radix) also keeps its content and token count in `part_filled`. As in vLLM v1 there is one
free-block queue, `free_queue`, least recently freed first: runs of empty blocks and cached blocks
no sequence references. A sequence frees its blocks to the tail, last block first; allocation
takes from the head, evicting a cached block it finds there; a prefix hit takes its blocks out.
Invariant (tests): free-queue blocks + referenced cached + private == num_blocks.

Counted, not hashed: a request whose first segment no other request shares can only ever hit its
own blocks, after a preemption. They stay uncached while it runs; when it leaves, its full blocks
enter the queue as one ("own", id) -> n entry where their keys would have gone, so eviction eats
the run from its end as it would the blocks, and on readmission it takes back what is left. Hits,
re-hits and evictions are those of hashing every block (a test forces both ways).

References: 1) Kwon et al. 2023, PagedAttention (arXiv 2309.06180); 2) vLLM v1
vllm/v1/core/block_pool.py (block_hash, ref_cnt, free_block_queue, get_new_blocks, touch);
kv_cache_manager.py free(): "We free the blocks in reverse order so that the tail blocks are
evicted first".
"""

import itertools
from bisect import bisect_left
from collections import OrderedDict
from dataclasses import dataclass, field

from .blockhash import Runs


@dataclass
class BlockPool:
    """Free and referenced blocks, counted; cached blocks by key with their ref_cnt (module docstring)."""

    num_blocks: int
    block_size: int
    layout: str = "paged"  # or "contiguous": each sequence reserves reserve_tokens at admission
    reserve_tokens: int = 0
    prefix: str = "off"  # or "hash" or "radix": the prefix cache that names blocks (kv.py)
    num_free_blocks: int = 0  # blocks in free_queue: empty ones and unreferenced cached ones
    cached: dict[int, int] = field(default_factory=dict)  # block key -> ref_cnt
    # The free-block queue, least recently freed first: ("empty", n), ("own", seq id) or
    # ("chain", n) -> its count of blocks, or a single cached block's key -> 1 (see `unref`).
    free_queue: OrderedDict[int | tuple[str, int], int] = field(default_factory=OrderedDict)
    # The cached blocks of each ("chain", n) entry, in chain order (evicted from the end), and the
    # entry of each entry's first and last block (a hit enters an entry at its first block).
    chains: dict[int, list[int]] = field(default_factory=dict)
    ends: dict[int, int] = field(default_factory=dict)
    partial: dict[int, list[int]] = field(default_factory=dict)  # parent hash -> part-filled children
    part_filled: dict[int, tuple[Runs, int]] = field(default_factory=dict)  # part-filled block -> (runs, tokens)
    num_evictions: int = 0

    def __post_init__(self) -> None:
        self._runs = itertools.count()  # names of the queue's runs of blocks (empty ones, chains)
        self.give_back(self.num_blocks)

    def blocks_for(self, tokens: int) -> int:
        """Blocks a sequence of `tokens` tokens holds: ceil(tokens / block_size), or its slab."""
        return -(-(self.reserve_tokens if self.layout == "contiguous" else tokens) // self.block_size)

    def num_available(self) -> int:
        return self.num_free_blocks

    def num_available_after_ref(self, hashes: list[int]) -> int:
        """Blocks still available once `hashes` are referenced (free cached ones leave the queue)."""
        return self.num_free_blocks - (len(hashes) - self._held(hashes, 0))

    def num_used(self) -> int:
        """Blocks held by running sequences (private or referenced cached blocks)."""
        return self.num_blocks - self.num_free_blocks

    def take(self, n: int) -> bool:
        """Allocate n private blocks from the queue's head, evicting cached ones found there."""
        if n > self.num_free_blocks:
            return False
        self.num_free_blocks -= n
        queue = self.free_queue
        while n:
            key = next(iter(queue))
            if isinstance(key, int):  # a cached block no one references
                del queue[key]
                self._evict((key,))
                self.num_evictions += 1
                n -= 1
            elif key[0] == "chain":  # cached blocks freed together: the last first
                run = self.chains[key[1]]
                gone = min(len(run), n)
                self._forget_ends(run)
                self._evict(run[len(run) - gone :])
                del run[len(run) - gone :]
                self._recount(key[1])  # what is left keeps its place at the head
                self.num_evictions += gone
                n -= gone
            else:  # a run of empty blocks (the usual head), or of a unique sequence's cached ones
                count = queue[key]
                if key[0] == "own":
                    self.num_evictions += min(count, n)
                if count > n:
                    queue[key] = count - n
                    break
                del queue[key]
                n -= count
        return True

    def _evict(self, keys: list[int] | tuple[int, ...]) -> None:
        """Forget cached blocks no one references (their queue entries are gone already)."""
        for key in keys:
            del self.cached[key]
            if self.part_filled.pop(key, None):
                for kids in self.partial.values():  # drop it from its parent's list
                    if key in kids:
                        kids.remove(key)
                        break

    def give_back(self, n: int, tail: bool = True) -> None:
        """Free n private blocks: empty blocks at the tail of the queue (most recently freed)."""
        if n > 0:
            queue = self.free_queue
            end = next(reversed(queue) if tail else iter(queue), None)
            if type(end) is tuple and end[0] == "empty":  # empty blocks are alike: one run
                queue[end] += n
            else:
                key = ("empty", next(self._runs))
                queue[key] = n
                queue.move_to_end(key, tail)
            self.num_free_blocks += n

    def untake(self, n: int) -> None:
        """Return n blocks just taken to the head of the queue (a reservation not used)."""
        self.give_back(n, tail=False)

    def free_own(self, seq_id: int, n: int) -> None:
        """Free the n cached blocks of a sequence no other request can hit: one queue entry,
        ("own", id) -> n, where its n hashed blocks would go (module docstring)."""
        if n > 0:
            self.free_queue[("own", seq_id)] = n
            self.num_free_blocks += n

    def own_hit(self, seq_id: int) -> int:
        """How many of a unique sequence's freed blocks are still cached: its first ones."""
        return self.free_queue.get(("own", seq_id), 0)

    def take_own(self, seq_id: int) -> None:
        """A unique sequence takes its cached blocks back (a prefix hit on them)."""
        self.num_free_blocks -= self.free_queue.pop(("own", seq_id), 0)

    def _touch(self, h: int) -> None:
        """A free part-filled block found again: it goes to the tail of the queue, on its own."""
        if self.cached.get(h) != 0:  # held: not in the queue
            return
        n = self.ends.get(h)
        if n is None:
            self.free_queue.move_to_end(h)
            return
        run = self.chains[n]
        assert run[-1] == h  # the last block of the sequence that freed it
        self._forget_ends(run)
        run.pop()
        self._recount(n)
        self.free_queue[h] = 1

    def _forget_ends(self, run: list[int]) -> None:
        """Before blocks leave a chain entry: its first and last block are about to change."""
        del self.ends[run[0]]
        self.ends.pop(run[-1], None)  # the same block when the entry has one

    def _recount(self, n: int) -> None:
        """The queue entry of chain n after blocks left it (the entry goes once it is empty)."""
        if run := self.chains[n]:
            self.free_queue[("chain", n)] = len(run)  # in place: it keeps its turn
            self.ends[run[0]] = self.ends[run[-1]] = n
        else:
            del self.free_queue[("chain", n)]
            del self.chains[n]

    def _held(self, hashes: list[int], k: int) -> int:
        """How many leading blocks of a chain's `hashes` have more than k references. A sequence
        holding a cached block holds the blocks before it, so ref counts never grow along a chain:
        those blocks are a leading run, found by bisection."""
        return bisect_left(hashes, True, key=lambda h: self.cached[h] <= k)

    def ref(self, hashes: list[int]) -> None:
        """A sequence holds the leading blocks of a chain (a prefix hit): the free ones leave the queue."""
        cached = self.cached
        held = self._held(hashes, 0)
        for h in hashes[:held]:
            cached[h] += 1
        if free := hashes[held:]:
            self._unqueue(free)
            for h in free:  # a plain loop: 2x faster than update(fromkeys) in CPython, 1.5x in Pyodide
                cached[h] = 1
            self.num_free_blocks -= len(free)

    def _unqueue(self, free: list[int]) -> None:
        """Take free cached blocks, consecutive blocks of one chain, out of the queue. Each chain
        entry they are in loses its first blocks (a hit is a chain's prefix; an entry, a run of it)."""
        queue, chains, ends = self.free_queue, self.chains, self.ends
        i = 0
        while i < len(free):
            h = free[i]
            n = ends.get(h)
            if n is None:  # a single block (a part-filled one found again)
                del queue[h]
                i += 1
                continue
            run = chains[n]
            assert run[0] == h
            self._forget_ends(run)
            # How far the hit and the entry agree: until their chains part, and never again after.
            agree = 1 + bisect_left(range(1, min(len(run), len(free) - i)), True, key=lambda j: run[j] != free[i + j])
            del run[:agree]
            self._recount(n)
            i += agree

    def unref(self, hashes: list[int]) -> None:
        """A sequence lets go of a chain's leading blocks. Those it alone held (the last ones) are
        free: one queue entry, ("chain", n), where their single entries would go (vLLM frees the
        tail block first, so LRU evicts prefixes' ends before their roots); eviction eats the entry
        from its end, and a hit takes blocks from its start."""
        cached = self.cached
        held = self._held(hashes, 1)
        for h in hashes[:held]:
            cached[h] -= 1
        if freed := hashes[held:]:
            for h in freed:  # (see ref)
                cached[h] = 0
            n = next(self._runs)
            self.chains[n] = freed
            self.ends[freed[0]] = self.ends[freed[-1]] = n
            self.free_queue[("chain", n)] = len(freed)
            self.num_free_blocks += len(freed)
