"""The decoding sequences of one replica, kept so that a decode step costs O(1), not O(batch).

A decode step adds one token to every decoding sequence. Instead of touching each one, the set
counts decode steps in `steps`; a sequence that joins with context c stores g0 = steps - c, so
its context is steps - g0 at any later time. From that:

- the batch's summed context grows by num_seqs per step (`sum_context`);
- a sequence needs a new block when its context is a multiple of block_size, i.e. when steps =
  g0 (mod block_size), so a histogram of g0 mod block_size (`by_residue`) counts the blocks any
  run of steps needs (`blocks_needed`);
- a heap of the step counts at which sequences emit their last token (`finish_heap`) says how
  many steps may run before the next one finishes.

A sequence leaving the set gets its context and output count written back (`leave`). This is
the engine's own device (vLLM touches every request per step).
"""

import heapq
import itertools
from collections.abc import Callable, Iterator

from .sequence import Seq


class DecodeSet:
    def __init__(self, block_size: int, paged: bool, held: Callable[[int], int] | None):
        self.block_size = block_size
        self.paged = paged  # contiguous slabs never need a new block while decoding
        self.held = held  # KV tokens a context keeps (sliding window), or None: all of them
        self.steps = 0  # decode steps run so far: a member's context is steps - seq.g0
        self.num_seqs = 0  # sequences decoding
        self.sum_context = 0  # their contexts, summed
        self.sum_held = 0  # their KV tokens held (differs from sum_context only under a sliding window)
        self.by_residue = [0] * block_size  # members counted by g0 mod block_size
        self.finish_heap: list[tuple[int, int, Seq]] = []  # (steps at its last token, tie, seq); stale ones skipped
        self._tie = itertools.count()  # heap ties resolve in join order; sequences never compared

    def join(self, s: Seq) -> None:
        """A sequence whose prompt is computed starts decoding from its current context."""
        ctx = s.num_computed_tokens
        s.decoding = True
        s.g0 = self.steps - ctx
        s.finish_g = s.g0 + s.req.prompt_tokens + s.req.output_tokens - 1
        heapq.heappush(self.finish_heap, (s.finish_g, next(self._tie), s))
        self.num_seqs += 1
        self.sum_context += ctx
        self.sum_held += self.held(ctx) if self.held else ctx
        self.by_residue[s.g0 % self.block_size] += 1

    def leave(self, s: Seq, blocks_for: Callable[[int], int]) -> None:
        """Write back a member's context, output count and private blocks, and take it out."""
        ctx = self.steps - s.g0
        s.decoding = False
        s.num_computed_tokens = ctx
        s.out = ctx - s.req.prompt_tokens + 1
        s.blocks = blocks_for(ctx) - len(s.owned)  # implicit while decoding
        self.num_seqs -= 1
        self.sum_context -= ctx
        self.sum_held -= self.held(ctx) if self.held else ctx
        self.by_residue[s.g0 % self.block_size] -= 1

    def blocks_needed(self, n: int) -> int:
        """New blocks the members need over the next n steps: step g crosses a block boundary for
        every member with g0 = g (mod block_size), so n // block_size rounds cross each member once,
        and the remaining steps are counted from the histogram."""
        if not self.paged or n <= 0 or not self.num_seqs:
            return 0
        bs, res = self.block_size, self.by_residue
        if n == 1:  # the common question (will the next step fit?), answered directly
            return res[self.steps % bs]
        rounds, rem = divmod(n, bs)
        start = self.steps % bs  # then residues start .. start + rem - 1, wrapping around the end
        end = start + rem
        rest = sum(res[start:end]) if end <= bs else sum(res[start:]) + sum(res[: end - bs])
        return self.num_seqs * rounds + rest

    def steps_to_next_finish(self) -> int:
        """Decode steps until the next member emits its last token (members only: the set is not empty)."""
        heap = self.finish_heap
        while not _current(heap[0]):  # left by preemption: dropped lazily
            heapq.heappop(heap)
        return heap[0][0] - self.steps

    def any_finished(self) -> bool:
        """Whether pop_finished may yield something: the heap's least step count is the earliest
        finish (a stale entry at or before `steps` only makes pop_finished drop it)."""
        heap = self.finish_heap
        return bool(heap) and heap[0][0] <= self.steps

    def pop_finished(self) -> Iterator[Seq]:
        """Members whose last token has been emitted, in finish order; the caller takes each out
        before asking for the next (a preempted and re-joined sequence has a stale entry too)."""
        heap = self.finish_heap
        while heap and (heap[0][0] <= self.steps or not _current(heap[0])):
            entry = heapq.heappop(heap)
            if _current(entry):
                yield entry[2]


def _current(entry: tuple[int, int, Seq]) -> bool:
    """Whether a finish-heap entry is its sequence's latest: a preempted sequence leaves its entry
    behind (too early once it decodes again); only the one matching its finish_g counts."""
    s = entry[2]
    return s.decoding and entry[0] == s.finish_g
