"""The iteration-level scheduler: which sequences run in the next forward pass, and with how many tokens.

Mental model (vLLM v1's scheduler, one comment block): there are no "prefill steps" and "decode
steps", only sequences whose `num_computed_tokens` trails the tokens they need. Every step has a
token budget, `max_num_batched_tokens`. First the `running` sequences are served in admission
order: each decoding sequence takes one token, each part-prefilled one takes the next chunk of
its prompt. KV blocks are allocated for what is scheduled; when they run out, the most recently
admitted running sequence is preempted (its blocks freed, its progress forgotten, recomputed
later) and put back at the front of `waiting`. Then, if nothing was preempted, `waiting`
sequences are admitted first come first served while budget, `max_num_seqs` and blocks allow
(blocks for the whole prompt, plus a watermark of free blocks while anything runs: see
`reserve_full_isl`); the first that does not fit stops admission (no overtaking).

Variants: without chunked prefill a prompt must be scheduled whole and the step runs prefills
only (decodes pause, as vLLM v0 did); static batching admits a batch only when the engine is
empty and lets the slots of finished sequences idle until the whole batch is done.

Decoding sequences live in a DecodeSet (decodeset.py), which prices a decode step in O(1).
`Scheduler` holds the queues and the KV pool and decides; `Replica` (replica.py) adds the clock.

Reference: vLLM v1 vllm/v1/core/sched/scheduler.py (waiting, running, num_computed_tokens,
token budget, preempt); Yu et al. 2022, Orca (OSDI) for iteration-level scheduling.
"""

import dataclasses
from collections import deque
from dataclasses import dataclass
from typing import Any

from ..core import costmodel as cm
from ..core.catalog import serve_defaults
from .decodeset import DecodeSet
from .kv import KVCacheManager
from .sequence import Seq


@dataclass(frozen=True)
class SchedulerConfig:
    # "continuous" (iteration-level) or "static" (a new batch only when the last one is done).
    batching: str = "continuous"
    # Most sequences running at once (vLLM --max-num-seqs) and the token budget of one step
    # (--max-num-batched-tokens). None: `vllm serve`'s default for the GPU, filled in by EngineSpec.
    max_num_seqs: int = None  # type: ignore[assignment]
    max_num_batched_tokens: int = None  # type: ignore[assignment]
    # Split long prompts into chunks that share steps with decodes (Sarathi-Serve, vLLM v1).
    chunked_prefill: bool = True
    # Longest prompt + output a sequence may reach; longer requests are dropped and reported.
    max_model_len: int = 8192
    # Admission control (vLLM v1 allocate_slots): admit only when blocks for the whole current
    # sequence are free, not only for its first chunk (vLLM's scheduler_reserve_full_isl, on by
    # default: no over-admission or KV thrashing with chunked prefill), keeping `watermark` of all
    # blocks free while anything runs (vLLM v1 defaults it to 0.0; v0's BlockSpaceManager kept 0.01).
    reserve_full_isl: bool = True
    watermark: float = 0.0
    # Speculative decoding: draft tokens per step (0 = off), per-token acceptance rate, and the
    # cost of one draft step as a fraction of one target decode step.
    num_speculative_tokens: int = 0
    acceptance_rate: float = 0.7
    draft_cost_ratio: float = 0.05
    # Multi-step scheduling (vLLM v0.6's --num-scheduler-steps): decode-only steps run in runs of this
    # many; the scheduler looks again (admits, finishes) only when a run ends. 1: every step.
    num_scheduler_steps: int = 1

    def __post_init__(self) -> None:
        if self.num_scheduler_steps < 1:
            raise ValueError(f"num_scheduler_steps must be at least 1, got {self.num_scheduler_steps}")
        if self.num_scheduler_steps > 1 and (self.num_speculative_tokens or self.batching == "static"):
            raise ValueError("multi-step scheduling runs with continuous batching and no speculation")

    def for_gpu(self, gpu: Any) -> "SchedulerConfig":
        """This configuration with `vllm serve`'s defaults for `gpu` where a limit is left unset."""
        tokens, seqs = vllm_serve_defaults(gpu)
        seqs = seqs if self.max_num_seqs is None else self.max_num_seqs
        tokens = tokens if self.max_num_batched_tokens is None else self.max_num_batched_tokens
        return dataclasses.replace(self, max_num_seqs=seqs, max_num_batched_tokens=tokens)

    def tokens_per_step(self) -> float:
        """Expected tokens a speculative step emits (costmodel.speculative_tokens_per_pass)."""
        return cm.speculative_tokens_per_pass(self.acceptance_rate, self.num_speculative_tokens)


def vllm_serve_defaults(gpu: Any) -> tuple[int, int]:
    """`vllm serve`'s (max_num_batched_tokens, max_num_seqs) on `gpu` (assumptions.toml [vllm_defaults])."""
    d = serve_defaults(gpu)
    return int(d["max_num_batched_tokens"]), int(d["max_num_seqs"])


Log = list[tuple[Any, ...]]  # (t, replica, what, seq id, extra) per event (replica.py)


class Scheduler:
    """One replica's queues and KV pool, and the scheduling decision of each step (vLLM v1's Scheduler)."""

    def __init__(self, index: int, cfg: SchedulerConfig, kv: KVCacheManager, held: Any, role: str, log: Log | None):
        self.index = index  # this replica's place in the cluster
        self.cfg = cfg
        self.kv = kv  # the block pool and prefix cache (kv.py)
        self.role = role  # "both", or "prefill" / "decode" when disaggregated
        self.log = log  # event log shared by the replicas, or None
        self.prefix_on = kv.prefix != "off"
        self.static = cfg.batching == "static"
        self.decode = DecodeSet(kv.block_size, kv.layout == "paged", held)
        self.waiting: deque[Seq] = deque()  # not admitted, or preempted (at the front), FCFS
        self.running: list[Seq] = []  # admission order: the last is preempted first
        self.prefilling: list[Seq] = []  # the running sequences whose prompt is not all computed
        self.prefill_held = 0  # computed tokens of sequences still prefilling
        self.reserved = 0  # decode blocks taken for the next step while scheduling
        self.watermark_blocks = int(cfg.watermark * kv.num_blocks)
        self.skipped = False  # admission skipped this step (after a preemption): replan next step
        self.batch_slots = 0  # static batching: size of the batch in flight
        self.finished: list[Seq] = []  # done since the event loop last looked
        self.handoff: list[Seq] = []  # prefill role: sequences whose KV leaves for a decode replica
        self.num_preemptions = 0
        self.hit_tokens = 0  # prompt tokens served from the prefix cache, all admissions
        self.rehit_tokens = 0  # of those, found again by preempted sequences (their own blocks)
        # Decoding sequences whose prompt blocks stayed private because a twin (same prefix, same
        # step) was cached first: they may cache them once an eviction removes the twin.
        self.blocked: list[Seq] = []
        self.evictions_seen = 0

    def schedule(self, t: float) -> tuple[list[Seq], bool]:
        """Prefill chunks for the next step, and whether decodes run in it (module docstring)."""
        cfg, kv, decode, static = self.cfg, self.kv, self.decode, self.static
        self.reserved, self.skipped = 0, False
        # Decodes first: one token each, and a block for each at a boundary; preempt from the tail.
        while decode.num_seqs and decode.blocks_needed(1) > kv.num_available():
            self._preempt_last(t)
        if static and self.running and not self.prefilling:
            return [], True  # a static batch in flight: decode until it is done
        if not self.waiting and not self.prefilling:  # decodes only (most steps): nothing to admit
            # No block is reserved: the stride takes its blocks when it ends, from the head of the
            # free queue, the same blocks a reservation would have taken (Replica._plan_stride).
            return [], decode.num_seqs > 0 and not static
        self.reserved = decode.blocks_needed(1)
        kv.take(self.reserved)
        preempted = False
        if static:
            budget = 1 << 40  # whole prompts, however long
        elif cfg.chunked_prefill:
            budget = cfg.max_num_batched_tokens - decode.num_seqs
        else:  # whole prompts only, so the budget must hold the longest one (as vLLM v0 required)
            budget = max(cfg.max_num_batched_tokens, cfg.max_model_len)
        chunks: list[Seq] = []
        for s in self.prefilling:  # part-prefilled sequences: next chunks
            if budget <= 0:
                break
            chunk = min(s.prompt - s.num_computed_tokens, budget)
            need = kv.blocks_for(s.num_computed_tokens + chunk) - len(s.owned) - s.blocks
            victim = None
            while need > kv.num_available() and victim is not s:  # preempt from the tail, s last
                victim = self._preempt_last(t)
                preempted = True
            if victim is s:
                break
            kv.take(need)
            s.blocks += need
            s.scheduled = chunk
            budget -= chunk
            chunks.append(s)
        self.skipped = preempted and bool(self.waiting)
        if preempted:  # decodes preempted above no longer need their reserved blocks
            kv.untake(self.reserved - decode.blocks_needed(1))
            self.reserved = decode.blocks_needed(1)
        elif not static or not self.running:  # admit from waiting, FCFS, no overtaking
            while self.waiting and len(self.running) < cfg.max_num_seqs and budget > 0:
                s = self.waiting[0]
                got = self._admit(s, budget, t)
                if got < 0:
                    break
                budget -= got
                if not s.decoding:
                    chunks.append(s)
            if static and self.running:
                self.batch_slots = len(self.running)
        decodes = decode.num_seqs > 0 and (cfg.chunked_prefill or not chunks) and not static
        return chunks, decodes

    def _admit(self, s: Seq, budget: int, t: float) -> int:
        """Try to start the head of `waiting` with up to `budget` tokens; tokens scheduled or -1."""
        kv = self.kv
        water = self.watermark_blocks if self.running else 0
        if s.prefilled:  # disaggregated decode side: the KV arrives whole, nothing to compute
            need = kv.blocks_for(s.num_computed_tokens)
            # It decodes in this very step: reserve the block that step needs, as for the others.
            first = kv.blocks_for(s.num_computed_tokens + 1) - need if kv.layout == "paged" else 0
            if budget < 1 or need + first + water > kv.num_available():
                return -1
            kv.take(need + first)
            self.reserved += first
            s.blocks = need
            self.waiting.popleft()
            self.running.append(s)
            self.decode.join(s)
            self._log(t, "admit", s)
            return 1
        # A unique sequence can only find its own blocks, from before a preemption (kv.free_own).
        own = min(kv.own_hit(s.id), (s.prompt - 1) // kv.block_size) if s.unique and self.prefix_on else 0
        hashed = self.prefix_on and not s.unique
        hit, hit_tokens = kv.match(s.content(), s.prompt) if hashed else ([], own * kv.block_size)
        chunk = min(s.prompt - hit_tokens, budget)
        if chunk < s.prompt - hit_tokens and not self.cfg.chunked_prefill:
            return -1
        need = kv.blocks_for(hit_tokens + chunk) - len(hit) - own
        # Blocks that must be free: the first chunk's, or (reserve_full_isl) the whole prompt's, plus
        # the watermark; checked before touching anything, so a failed attempt leaves the LRU alone.
        gate = kv.blocks_for(s.prompt) - len(hit) - own if self.cfg.reserve_full_isl else need
        if gate + water > kv.num_available_after_ref(hit) - own:
            return -1
        if hit:
            kv.ref(hit)
        if own:
            kv.take_own(s.id)
        kv.take(need)
        self.waiting.popleft()
        s.owned, s.chain_len, s.blocks = hit, len(hit) + own, need + own
        s.num_computed_tokens = hit_tokens
        self.hit_tokens += hit_tokens
        if s.num_preemptions:
            self.rehit_tokens += hit_tokens
        else:
            s.cached_tokens = hit_tokens  # the request's own prompt served from the cache
        self.prefill_held += hit_tokens
        s.scheduled = chunk
        if s.t_scheduled < 0:
            s.t_scheduled = t
        self.running.append(s)
        self.prefilling.append(s)
        self._log(t, "admit", s, hit_tokens)
        return chunk

    def _preempt_last(self, t: float) -> Seq:
        """Preempt by recompute (vLLM v1): the last admitted sequence frees its blocks and waits first."""
        s = self.running.pop()
        if s.decoding:
            self.decode.leave(s, self.kv.blocks_for)
            self._cache_full_blocks(s, s.num_computed_tokens)  # its outputs' full blocks too
        else:
            self.prefill_held -= s.num_computed_tokens
            self.prefilling.remove(s)
        freed = self._release(s)
        s.prompt = s.req.prompt_tokens + s.out  # recompute the prompt and the output so far
        s.num_computed_tokens = 0
        s.num_preemptions += 1
        s.prefilled = False
        self.num_preemptions += 1
        self.waiting.appendleft(s)
        self._log(t, "preempt", s, freed)
        return s

    def _cache_full_blocks(self, s: Seq, tokens: int, final: bool = False) -> None:
        """Cache the full blocks of a sequence's first `tokens` computed tokens, outputs included, as
        vLLM v1 does once a block is full. A decoding sequence's are cached when it leaves the decode
        set: until then it references them, so nothing could evict or hit them (same result).
        `final`: it has finished, and radix also keeps its part-filled last block."""
        if s.unique:  # counted only (kv.free_own): its full blocks are its cached ones
            bs = self.kv.block_size
            s.chain_len = max(s.chain_len, tokens // bs + (final and self.kv.prefix == "radix" and tokens % bs > 0))
        elif self.prefix_on:
            converted = self.kv.cache_blocks(s.content(), tokens, s.chain_len, s.owned, final=final)
            s.blocks -= converted
            s.chain_len += converted

    def _release(self, s: Seq) -> int:
        held = len(s.owned) + s.blocks
        if s.unique and self.prefix_on:  # its first chain_len blocks are cached, the rest private
            self.kv.give_back(s.blocks - s.chain_len)
            self.kv.free_own(s.id, s.chain_len)
        else:
            self.kv.give_back(s.blocks)  # last block first (vLLM v1 frees in reverse order): the
            self.kv.unref(s.owned)  # private tail, then the cached blocks from the end back
        s.owned, s.blocks, s.chain_len = [], 0, 0
        return held

    def _prefill_done(self, s: Seq, t: float) -> None:
        """A sequence's prompt is computed (its full blocks cached): emit its first token, decode."""
        self.prefill_held -= s.num_computed_tokens
        self.prefilling.remove(s)
        s.out += 1
        if s.t_first_token < 0:
            s.t_first_token = t + s.lag
            self._log(t + s.lag, "first_token", s)
        else:
            self._log(t, "recomputed", s)  # a preempted sequence has its KV back
        if s.out >= s.req.output_tokens:
            self._finish(s, t)
        elif self.role == "prefill":
            self.running.remove(s)
            self._release(s)
            self.handoff.append(s)
        else:
            self.decode.join(s)
            if self.prefix_on and not s.unique and s.chain_len * self.kv.block_size + self.kv.block_size <= s.prompt:
                self.blocked.append(s)

    def retry_blocked(self) -> None:
        """After decode steps: `blocked` sequences cache what they can if an eviction removed a twin."""
        if self.kv.num_evictions == self.evictions_seen:
            return
        self.evictions_seen = self.kv.num_evictions
        bs, keep = self.kv.block_size, []
        for s in self.blocked:
            if not s.decoding:  # left: cached what it could then (preempted or finished)
                continue
            # (a sequence past its last token in a multi-step run computes tokens no one keeps)
            self._cache_full_blocks(s, min(self.decode.steps - s.g0, s.req.prompt_tokens + s.req.output_tokens - 1))
            if s.chain_len * bs + bs <= s.prompt:
                keep.append(s)
        self.blocked = keep

    def _finish(self, s: Seq, t: float) -> None:
        """The last token is out: cache the blocks, release them, hand the sequence to the loop."""
        s.out = s.req.output_tokens
        s.t_finish = t + s.lag
        self._cache_full_blocks(s, s.req.prompt_tokens + s.out - 1, final=True)
        self.running.remove(s)
        self.finished.append(s)
        self._log(t + s.lag, "finish", s, self._release(s))

    def _log(self, t: float, what: str, s: Seq, extra: int = 0) -> None:
        if self.log is not None:
            self.log.append((round(t, 9), self.index, what, s.id, extra))
