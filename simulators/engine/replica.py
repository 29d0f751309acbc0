"""One replica: the scheduler's plan turned into timed steps and strides.

`Replica` is a `Scheduler` (scheduler.py) with a clock: `plan` asks the scheduler for the next
step and prices it (steptime.py); the event loop calls `step_end` when the planned time comes.

Fast by construction: when a step has no prefill chunk, the batch is fixed until the next
scheduling event and every context grows by one token per step, so the replica plans a *stride*
of n decode steps at once, priced in closed form (steptime.stride_time_s). A stride ends at the
next completion, or earlier when the free blocks would run out (then the scheduler preempts) or
a sliding window fills; an arrival that could be admitted cuts it after the step in progress.
Under multi-step scheduling (vLLM v0.6's --num-scheduler-steps k) strides and cuts are whole runs
of k steps. A run's cost grows with arrivals, chunks, completions and preemptions, not tokens.
`single_step=True` plans one step at a time instead; tests check both give the same timings.
In a pipeline a round's time divides by its micro-batches, but a prefill chunk's own micro-batch
needs its full pass through every stage: a sequence whose chunk outlasts the round carries the
difference as `lag`, added to its first and last token's times.

With a log, every event appends (t, replica, what, seq id, extra): "arrive"; "admit" (extra:
prompt tokens found in the prefix cache); "chunk" (extra: prompt tokens scheduled in the step
that starts at t); "first_token"; "recomputed" (a preempted sequence's prompt and output so far
are computed again); "preempt" and "finish" (extra: KV blocks released).
"""

from bisect import bisect_right
from typing import Any

from ..core import costmodel as cm
from .kv import KVCacheManager
from .scheduler import Log, Scheduler, SchedulerConfig
from .sequence import Seq
from .steptime import StepCost, attention_keys, stride_time_s

ARRIVE, KV_ARRIVE, STEP_END = 0, 1, 2  # event kinds (eventloop.py)
Event = tuple[float, int, int, Any]  # (time, priority, kind, payload): seq_no added by the loop


class Replica(Scheduler):
    def __init__(
        self,
        index: int,
        cfg: SchedulerConfig,
        kv: KVCacheManager,
        cost: StepCost,
        role: str,
        single_step: bool,
        log: Log | None,
        keep_series: bool,
    ):
        super().__init__(index, cfg, kv, cost.held if cost.window else None, role, log)
        self.cost = cost  # step time as a linear form (steptime.py)
        self.window = cost.window  # sliding-window attention: tokens a sequence keeps, or 0
        if self.window and cfg.num_scheduler_steps > 1:
            raise ValueError("multi-step scheduling is not modelled with sliding-window attention")
        self.single_step = single_step  # plan one step at a time (tests: strides change nothing)
        self.keep_series = keep_series  # False: `series` stays empty (for callers that read only records)
        self.busy = False  # a step or stride is planned and its STEP_END pending
        self.version = 0  # bumps when a plan is replaced, invalidating its pending STEP_END
        self.plan_t0 = self.plan_end = 0.0  # when the planned step or stride starts and ends
        self.plan_steps = 0  # decode steps in the plan (0: a prefill-only step)
        self.plan_chunks: list[Seq] = []  # sequences with a prefill chunk in the planned step
        self.plan_pieces: tuple[float, ...] = ()  # a stride's affine step-time pieces (stride_time_s)
        self.num_steps = self.num_strides = 0  # steps with prefill chunks; decode-only strides
        self.prefill_tokens = 0  # prompt tokens computed (recomputation after preemption included)
        self.busy_s = 0.0  # time spent computing
        # Per step, at its start: t, batch slots, waiting, used blocks, held tokens, running.
        self.series: list[tuple[float, int, int, int, int, int]] = []

    def add(self, s: Seq, t: float) -> list[Event]:
        """A request reaches this replica: queue it, and cut a stride if it could start now."""
        s.replica = self.index
        could_start = not self.waiting and not self.static and len(self.running) < self.cfg.max_num_seqs
        self.waiting.append(s)
        self._log(t, "arrive", s)
        if not self.busy:
            return self.plan(t)
        # Cut the stride if the next step may admit it (whether it fits is decided then).
        return self._cut(t) if could_start and self.plan_steps > 1 and not self.plan_chunks else []

    def plan(self, t: float) -> list[Event]:
        """Plan the next step (prefill chunks present) or stride (decode only) starting at t."""
        chunks, decodes = self.schedule(t)
        self.plan_chunks, self.plan_t0 = chunks, t
        if not chunks and not self.decode.num_seqs:
            self.kv.untake(self.reserved)
            self.busy = False
            if self.keep_series:
                self._record(t)
            return []
        self.busy = True
        return self._plan_step(t, chunks, self.decode.num_seqs if decodes else 0) if chunks else self._plan_stride(t)

    def _plan_step(self, t: float, chunks: list[Seq], nd: int) -> list[Event]:
        """One step with prefill chunks, and one token for each of `nd` decoding sequences."""
        decode, cost = self.decode, self.cost
        if not nd:
            self.kv.untake(self.reserved)
            self.reserved = 0
        tokens, keys, kv_tok = nd, (decode.sum_context + nd) if nd else 0, (decode.sum_held + nd) if nd else 0
        passes = []  # a pipeline's: each chunk's own pass through every stage (parallel_time.py)
        for s in chunks:
            c, q = s.num_computed_tokens, s.scheduled
            self._log(t, "chunk", s, q)
            k, held = attention_keys(q, c), (cost.held(c) if cost.window else c) + q
            tokens, keys, kv_tok = tokens + q, keys + k, kv_tok + held
            if cost.pp > 1:
                passes.append(cost.time_s(q, 1, k, held))
        dur = cost.time_s(tokens, nd + len(chunks), keys, kv_tok)
        for s, one in zip(chunks, passes, strict=False):  # a chunk's micro-batch returns after its pass
            s.lag += max(0.0, one - dur)
        if self.keep_series:
            self._record(t, tokens)  # the step's blocks, new tokens' included, are taken now
        self.plan_steps = 1 if nd else 0
        self.num_steps += 1
        self.prefill_tokens += tokens - nd
        return self._end_at(t + dur)

    def _plan_stride(self, t: float) -> list[Event]:
        """Decode-only steps up to the next completion, the block supply, or a window edge."""
        kv, decode = self.kv, self.decode
        kv.untake(self.reserved)  # a stride takes its blocks when it ends (none reserved if nothing waited)
        n = decode.steps_to_next_finish()
        growth = decode.num_seqs  # KV tokens held grow by this much per step
        if window := self.window:  # until the next context fills the window
            short = [decode.steps - s.g0 for s in self.running if s.decoding and decode.steps - s.g0 < window]
            growth, n = len(short), min([n, *(window - c for c in short)])
        if self.single_step or self.skipped:
            n = 1
        runs = self.cfg.num_scheduler_steps  # whole multi-step runs: one finishing mid-run waits for its end
        n = -(-n // runs) * runs
        avail = kv.num_available()
        # blocks_needed(n) is at most num_seqs (n // bs + 1): with that many free, the stride fits.
        if decode.num_seqs * (n // decode.block_size + 1) > avail and decode.blocks_needed(n) > avail:
            # The most steps whose blocks are free: at least one (schedule preempted until one fits).
            n = max(1, bisect_right(range(1, n), avail, key=decode.blocks_needed))
        k, sums = self.cfg.num_speculative_tokens, (decode.num_seqs, decode.sum_context, decode.sum_held, growth)
        plain = self.cost.decode_stride(*sums)
        # Speculation: the verify pass's pieces, then the plain ones (_stride_s).
        self.plan_pieces = (*self.cost.decode_stride(*sums, q=k + 1), *plain) if k else plain
        self.plan_steps = n
        self.num_strides += 1
        if self.keep_series:
            self._record(t)
        return self._end_at(t + self._stride_s(n))

    def _stride_s(self, n: int) -> float:
        """Time of the first n steps of the planned stride (speculation: see costmodel.speculative_step_s)."""
        p, cfg = self.plan_pieces, self.cfg
        verify = stride_time_s(p[0], p[1], p[2], p[3], p[4], n)
        if not (k := cfg.num_speculative_tokens):
            return verify
        plain = stride_time_s(p[5], p[6], p[7], p[8], p[9], n)
        return cm.speculative_time_per_token_s(plain, verify, k, cfg.draft_cost_ratio, cfg.acceptance_rate)

    def _end_at(self, t_end: float) -> list[Event]:
        self.version += 1
        self.plan_end = t_end
        return [(t_end, 1, STEP_END, (self, self.version))]

    def _cut(self, t: float) -> list[Event]:
        """Shorten the stride in flight to the steps that started before t."""
        # The fewest steps n in [1, plan_steps] whose end plan_t0 + S(n) is at or after t. S is
        # almost linear, so interpolation finds n in a few evaluations; every other guess bisects
        # (at worst twice binary search's). Only the comparisons decide: rounding moves a guess.
        t0, target = self.plan_t0, t - self.plan_t0
        lo, hi = 0, self.plan_steps  # S(lo) misses t (S(0) = 0), hi is the answer if nothing smaller is
        s_lo, s_hi = 0.0, self.plan_end - t0  # later s_hi are S(hi) exactly, as the new end uses
        interpolate = True
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if interpolate and s_hi > s_lo:
                mid = min(hi - 1, max(lo + 1, lo + int((target - s_lo) * (hi - lo) / (s_hi - s_lo))))
            interpolate = not interpolate
            s_mid = self._stride_s(mid)
            if t0 + s_mid >= t:
                hi, s_hi = mid, s_mid
            else:
                lo, s_lo = mid, s_mid
        runs = self.cfg.num_scheduler_steps
        if runs > 1 and hi % runs:  # the scheduler looks again only when a multi-step run ends
            hi = -(-hi // runs) * runs
            if hi < self.plan_steps:
                s_hi = self._stride_s(hi)
        if hi >= self.plan_steps:
            return []
        self.plan_steps = hi
        return self._end_at(t0 + s_hi)

    def step_end(self, t: float) -> list[Event]:
        """The planned step or stride is over: advance state, finish sequences, plan again."""
        self.busy_s += t - self.plan_t0
        n, decode = self.plan_steps, self.decode
        # A stride's blocks are taken when it ends, for the steps it ran: a cut stride evicts what
        # single steps would (a step with prefill chunks took its blocks when it was scheduled).
        if not self.plan_chunks and not self.kv.take(decode.blocks_needed(n)):
            raise RuntimeError("decode stride ran beyond the free blocks")  # a bug, never bad input
        decode.steps += n
        decode.sum_context += decode.num_seqs * n
        if n:
            growth = decode.num_seqs  # KV tokens held grow by this much per step (as planned)
            if window := self.window:
                growth = sum(1 for s in self.running if s.decoding and decode.steps - n - s.g0 < window)
            decode.sum_held += growth * n
            if self.blocked:
                self.retry_blocked()
        for s in self.plan_chunks:
            s.num_computed_tokens += s.scheduled
            self.prefill_held += s.scheduled
            s.scheduled = 0
            self._cache_full_blocks(s, s.num_computed_tokens)
            if s.num_computed_tokens == s.prompt:
                self._prefill_done(s, t)
        if decode.any_finished():  # most steps finish nothing: no generator for them
            for s in decode.pop_finished():
                decode.leave(s, self.kv.blocks_for)
                self._finish(s, t)
        return self.plan(t)

    def _record(self, t: float, written: int = 0) -> None:
        """The state of the step starting at t, after scheduling (so a static batch's long prefill
        shows its slots busy). `written`: tokens whose KV the step writes into blocks already taken."""
        running = len(self.running)
        slots = self.batch_slots if running and self.static else running
        held = self.decode.sum_context + self.prefill_held + written
        self.series.append((t, slots, len(self.waiting), self.kv.num_used(), held, running))
