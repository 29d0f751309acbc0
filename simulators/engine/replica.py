"""One replica: the scheduler's plan turned into timed steps, and the event loop that drives replicas.

The event loop is SimPy's: a heap of (time, priority, seq_no, kind, payload), with seq_no from an
itertools.count made per run so events are never compared and ties resolve in insertion order.
Handlers return the events they cause (Vidur's style). Kinds: ARRIVE (a request reaches the
router), KV_ARRIVE (a prefilled sequence reaches a decode replica), STEP_END (a replica finishes
the step or stride it planned). At equal times arrivals come first, so a step that ends when a
request arrives already sees it.

Fast by construction: when a step has no prefill chunk, the batch is fixed until the next
scheduling event and every context grows by one token per step, so the replica plans a *stride*
of n decode steps at once and prices it in closed form (steptime.stride_time_s). A stride ends
at the next completion, or earlier when the free blocks would run out (then the scheduler
preempts), or when the sliding window of some sequence fills. An arrival that could be admitted
cuts the stride at the end of the step in progress. The cost of a run therefore grows with
arrivals, prefill chunks, completions and preemptions, not with tokens. `single_step=True`
plans one step at a time instead; tests check both give the same timings.

With a log, every event appends (t, replica, what, seq id, extra): "arrive"; "admit" (extra:
prompt tokens found in the prefix cache); "chunk" (extra: prompt tokens scheduled in the step
that starts at t); "first_token"; "recomputed" (a preempted sequence's prompt and output so
far are computed again); "preempt" and "finish" (extra: KV blocks released).
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Callable
from typing import Any

from .kv import KVCacheManager
from .scheduler import SchedulerConfig, Seq
from .steptime import StepCost, attention_keys, stride_time_s
from .workload import Request

ARRIVE, KV_ARRIVE, STEP_END = 0, 1, 2
Event = tuple[float, int, int, Any]  # (time, priority, kind, payload): seq_no added by the loop


class Replica:
    def __init__(
        self,
        index: int,
        cfg: SchedulerConfig,
        kv: KVCacheManager,
        cost: StepCost,
        *,
        role: str = "both",
        single_step: bool = False,
        log: list[tuple[Any, ...]] | None = None,
        keep_series: bool = True,
    ):
        self.index, self.cfg, self.kv, self.cost, self.role = index, cfg, kv, cost, role
        self.single_step, self.log = single_step, log
        self.keep_series = keep_series  # False: `series` stays empty (for callers that read only records)
        self.bs = kv.block_size
        self.paged = kv.layout == "paged"
        self.continuous = cfg.batching == "continuous"
        self.static = cfg.batching == "static"
        self.window = cost.window  # sliding-window attention: tokens a sequence keeps, or 0
        self.prefix_on = kv.prefix != "off"
        self.waiting: deque[Seq] = deque()
        self.running: list[Seq] = []  # admission order: the last is preempted first
        self.prefilling: list[Seq] = []  # the running sequences whose prompt is not all computed
        self.reserved = 0  # decode blocks taken for one step while scheduling
        self.watermark_blocks = int(cfg.watermark * kv.num_blocks)
        self.skipped = False
        self.steps = 0  # decode steps so far (a decoding sequence's context is steps - g0)
        self.nd = 0  # decoding sequences
        self.sum_ctx = 0  # their contexts, summed
        self.sum_held = 0  # their KV tokens held (differs from sum_ctx only under a sliding window)
        self.res = [0] * self.bs  # decoding sequences by g0 mod block_size
        self.finish_heap: list[tuple[int, int, Seq]] = []
        self.prefill_held = 0  # computed tokens of sequences still prefilling
        self.version = 0  # bumps when a planned step is cut short, invalidating its STEP_END
        self.busy = False
        self.plan_t0 = self.plan_end = 0.0
        self.plan_n = 0  # decode steps in the plan
        self.plan_chunks: list[Seq] = []
        self.plan_blocks = 0  # decode blocks allocated for the plan
        self.plan_pieces: tuple[float, ...] = ()
        self.batch_slots = 0  # static batching: size of the batch in flight
        self.finished: list[Seq] = []
        self.handoff: list[Seq] = []  # prefill role: sequences whose KV leaves for a decode replica
        self.num_preemptions = 0
        self.num_steps = self.num_strides = 0
        self.prefill_tokens = 0  # prompt tokens computed (recomputation after preemption included)
        self.hit_tokens = 0  # prompt tokens served from the prefix cache, all admissions
        self.busy_s = 0.0
        self.series: list[
            tuple[float, int, int, int, int, int]
        ] = []  # per step, at its start: t, batch slots, waiting, used blocks, held tokens, running
        self._tie = itertools.count()

    # -- lazy decode set ----------------------------------------------------------------------

    def _join(self, s: Seq) -> None:
        ctx = s.num_computed_tokens
        s.decoding = True
        s.g0 = self.steps - ctx
        s.finish_g = s.g0 + s.req.prompt_tokens + s.req.output_tokens - 1
        heapq.heappush(self.finish_heap, (s.finish_g, next(self._tie), s))
        self.nd += 1
        self.sum_ctx += ctx
        self.sum_held += self.cost.held(ctx) if self.window else ctx
        self.res[s.g0 % self.bs] += 1
        s.blocks = 0  # implicit while decoding: blocks_for(context) - len(owned)

    def _leave(self, s: Seq) -> None:
        """Materialise a decoding sequence's state and take it out of the decode set."""
        ctx = self.steps - s.g0
        s.decoding = False
        s.num_computed_tokens = ctx
        s.out = ctx - s.req.prompt_tokens + 1
        s.blocks = self.kv.blocks_for(ctx) - len(s.owned)
        self.nd -= 1
        self.sum_ctx -= ctx
        self.sum_held -= self.cost.held(ctx) if self.window else ctx
        self.res[s.g0 % self.bs] -= 1

    def blocks_needed(self, n: int) -> int:
        """New blocks the decode set needs over its next n steps (one per block boundary crossed).

        Step g (the value of `steps` when it starts) crosses a boundary for every decoding
        sequence with g0 = g (mod block_size): n // block_size full rounds cross every sequence
        once each, and the remaining n % block_size steps are counted from the histogram.
        """
        if not self.paged or n <= 0 or not self.nd:
            return 0
        bs, res = self.bs, self.res
        if n == 1:  # the common question (will the next step fit?), answered directly
            return res[self.steps % bs]
        rounds, rem = divmod(n, bs)
        total = self.nd * rounds
        if rem:  # residues start .. start + rem - 1, wrapping around the histogram's end
            start = self.steps % bs
            end = start + rem
            total += sum(res[start:end]) if end <= bs else sum(res[start:]) + sum(res[: end - bs])
        return total

    # -- scheduling ---------------------------------------------------------------------------

    def add(self, s: Seq, t: float) -> list[Event]:
        """A request reaches this replica: queue it, and cut a stride if it could start now."""
        s.replica = self.index
        could_start = not self.waiting and self.continuous and len(self.running) < self.cfg.max_num_seqs
        self.waiting.append(s)
        if self.log is not None:  # (guarded where it runs once per request: a call saved)
            self._log(t, "arrive", s)
        if not self.busy:
            return self.plan(t)
        if could_start and self.plan_n > 1 and not self.plan_chunks:
            return self._cut(t)  # the next step may admit it (whether it fits is decided then)
        return []

    def _preempt_last(self, t: float) -> Seq:
        s = self.running.pop()
        if s.decoding:
            self._leave(s)
        else:
            self.prefill_held -= s.num_computed_tokens
            self.prefilling.remove(s)
        freed = len(s.owned) + s.blocks
        self._release(s)
        s.prompt = s.req.prompt_tokens + s.out  # recompute the prompt and the output so far
        s.num_computed_tokens = 0
        s.num_preemptions += 1
        s.prefilled = False
        self.num_preemptions += 1
        self.waiting.appendleft(s)
        self._log(t, "preempt", s, freed)
        return s

    def _release(self, s: Seq) -> None:
        self.kv.unref(s.owned)
        self.kv.give_back(s.blocks)
        s.owned, s.blocks, s.chain_len = [], 0, 0

    def _admit(self, s: Seq, budget: int, t: float) -> int:
        """Try to start the head of `waiting` with up to `budget` tokens; tokens scheduled or -1."""
        kv = self.kv
        water = self.watermark_blocks if self.running else 0
        if s.prefilled:  # disaggregated decode side: the KV arrives whole, nothing to compute
            need = kv.blocks_for(s.num_computed_tokens)
            if budget < 1 or need + water > kv.num_available():
                return -1
            kv.take(need)
            s.blocks = need
            self.waiting.popleft()
            self.running.append(s)
            self._join(s)
            self._log(t, "admit", s)
            return 1
        hit, hit_tokens = kv.match(s.content(), s.prompt) if self.prefix_on else ([], 0)
        chunk = min(s.prompt - hit_tokens, budget)
        if chunk < s.prompt - hit_tokens and not self.cfg.chunked_prefill:
            return -1
        if self.static:  # the whole prompt
            chunk = s.prompt - hit_tokens
        need = kv.blocks_for(hit_tokens + chunk) - len(hit)
        # Blocks that must be free to admit: the first chunk's, or (reserve_full_isl) the whole
        # prompt's, plus the watermark. Hit blocks that sit in the evictable list stop being
        # available once referenced; check before touching anything, so a failed attempt leaves
        # the LRU order alone.
        gate = kv.blocks_for(s.prompt) - len(hit) if self.cfg.reserve_full_isl else need
        evictable = kv.evictable
        if gate + water > kv.num_free_blocks + len(evictable) - (len([h for h in hit if h in evictable]) if hit else 0):
            return -1
        if hit:
            kv.ref(hit)
        kv.take(need)
        self.waiting.popleft()
        s.owned, s.chain_len, s.blocks = hit, len(hit), need
        s.num_computed_tokens = hit_tokens
        if not s.num_preemptions:
            s.cached_tokens = hit_tokens  # the request's own prompt served from the cache
        self.hit_tokens += hit_tokens
        self.prefill_held += hit_tokens
        s.scheduled = chunk
        if s.t_scheduled < 0:
            s.t_scheduled = t
        self.running.append(s)
        self.prefilling.append(s)
        if self.log is not None:
            self._log(t, "admit", s, hit_tokens)
        return chunk

    def schedule(self, t: float) -> tuple[list[Seq], bool]:
        """Prefill chunks for the next step, and whether decodes run in it (see scheduler.py)."""
        cfg, kv = self.cfg, self.kv
        static = cfg.batching == "static"
        self.reserved = 0
        self.skipped = False  # admission skipped this step (after a preemption): replan next step
        # Decodes first: one token each, and a block for each at a boundary; preempt from the tail.
        # (blocks_needed(1), inlined for the usual paged case: this runs once per step.)
        need = self.res[self.steps % self.bs] if self.paged else 0
        while self.nd and need > kv.num_free_blocks + len(kv.evictable):
            self._preempt_last(t)
            need = self.blocks_needed(1)
        if static and self.running and not self.prefilling:
            return [], True  # a static batch in flight: decode until it is done
        self.reserved = need
        if need:
            kv.take(need)
        if not self.waiting and not self.prefilling:  # decodes only (most steps): nothing to admit
            return [], self.nd > 0 and not static
        preempted = False
        if static:
            budget = 1 << 40
        elif cfg.chunked_prefill:
            budget = cfg.max_num_batched_tokens - self.nd
        else:  # whole prompts only, so the budget must hold the longest one (as vLLM v0 required)
            budget = max(cfg.max_num_batched_tokens, cfg.max_model_len)
        chunks: list[Seq] = []
        i = 0
        while i < len(self.prefilling) and budget > 0:
            s = self.prefilling[i]
            chunk = min(s.prompt - s.num_computed_tokens, budget)
            need = kv.blocks_for(s.num_computed_tokens + chunk) - len(s.owned) - s.blocks
            while need > kv.num_available() and self.running[-1] is not s:
                self._preempt_last(t)
                preempted = True
            if need > kv.num_available():
                self._preempt_last(t)
                preempted = True
                break
            kv.take(need)
            s.blocks += need
            s.scheduled = chunk
            budget -= chunk
            chunks.append(s)
            i += 1
        self.skipped = preempted and bool(self.waiting)
        if preempted:  # decodes preempted above no longer need their reserved blocks
            extra = self.reserved - self.blocks_needed(1)
            kv.give_back(extra)
            self.reserved -= extra
        elif not static or not self.running:
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
        decodes = self.nd > 0 and (cfg.chunked_prefill or not chunks) and not static
        return chunks, decodes

    # -- timing -------------------------------------------------------------------------------

    def plan(self, t: float) -> list[Event]:
        """Plan the next step (prefill chunks present) or stride (decode only) starting at t."""
        chunks, decodes = self.schedule(t)
        self.plan_chunks, self.plan_t0 = chunks, t
        if not chunks and not self.nd:
            self.kv.give_back(self.reserved)
            self.busy = False
            if self.keep_series:
                self._record(t)
            return []
        self.busy = True
        if chunks:
            nd = self.nd if decodes else 0
            if not nd:
                self.kv.give_back(self.reserved)
                self.reserved = 0
            tokens, keys, kv_tok = nd, (self.sum_ctx + nd) if nd else 0, (self.sum_held + nd) if nd else 0
            cost = self.cost
            for s in chunks:
                c, q = s.num_computed_tokens, s.scheduled
                if self.log is not None:
                    self._log(t, "chunk", s, q)
                tokens += q
                keys += attention_keys(q, c)
                kv_tok += (cost.held(c) if cost.window else c) + q
            dur = cost.time_s(tokens, nd + len(chunks), keys, kv_tok)
            if self.keep_series:
                self._record(t, tokens)  # the step's blocks, new tokens' included, are taken now
            self.plan_n = 1 if nd else 0
            self.plan_blocks = self.reserved
            self.num_steps += 1
            self.prefill_tokens += tokens - nd
            return self._end_at(t + dur)
        # Decode-only stride up to the next completion, the block supply, or a window edge.
        kv = self.kv
        kv.num_free_blocks += self.reserved  # kv.give_back, inlined (as below): once per stride
        heap = self.finish_heap
        while heap and not heap[0][2].decoding:
            heapq.heappop(heap)
        n = heap[0][0] - self.steps
        growth = self.nd
        window = self.window
        if window:
            growth = 0
            for s in self.running:
                if s.decoding and self.steps - s.g0 < window:
                    growth += 1
                    n = min(n, window - (self.steps - s.g0))
        if self.single_step or self.skipped:
            n = 1
        avail = kv.num_free_blocks + len(kv.evictable)
        # blocks_needed(n) is at most nd (n // bs + 1): with that many free, the stride fits.
        if self.nd * (n // self.bs + 1) > avail and self.blocks_needed(n) > avail:
            lo, hi = 1, n  # blocks_needed(lo) <= avail (schedule preempted until one step fits)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if self.blocks_needed(mid) <= avail:
                    lo = mid
                else:
                    hi = mid
            n = lo
        k = self.cfg.num_speculative_tokens
        plain = self.cost.decode_stride(self.nd, self.sum_ctx, self.sum_held, growth)
        # Speculation: the verify pass's pieces, then the drafts' (_stride_s); else the plain ones.
        self.plan_pieces = (
            (*self.cost.decode_stride(self.nd, self.sum_ctx, self.sum_held, growth, q=k + 1), *plain) if k else plain
        )
        self.plan_n = n
        # The stride's blocks are taken when it ends (for the steps it really ran), so that a
        # cut stride has evicted exactly the cached blocks that single steps would have.
        self.plan_blocks = -1
        self.num_strides += 1
        if self.keep_series:
            self._record(t)
        return self._end_at(t + (stride_time_s(*plain, n) if not k else self._stride_s(n)))

    def _stride_s(self, n: int) -> float:
        """Time of the first n steps of the planned stride (speculation: per token, see scheduler)."""
        p = self.plan_pieces
        k = self.cfg.num_speculative_tokens
        if not k:
            return stride_time_s(p[0], p[1], p[2], p[3], p[4], n)
        verify = stride_time_s(p[0], p[1], p[2], p[3], p[4], n)
        drafts = stride_time_s(p[5], p[6], p[7], p[8], p[9], n) * k * self.cfg.draft_cost_ratio
        return (verify + drafts) / self.cfg.tokens_per_step()

    def _end_at(self, t_end: float) -> list[Event]:
        self.version += 1
        self.plan_end = t_end
        return [(t_end, 1, STEP_END, (self, self.version))]

    def _cut(self, t: float) -> list[Event]:
        """Shorten the stride in flight to the steps that started before t."""
        # The fewest steps n in [1, plan_n] whose end plan_t0 + S(n) is at or after t. S grows
        # almost linearly (contexts grow by one token a step), so interpolating between the
        # bracket's ends finds n in a few evaluations; every other guess bisects, which bounds
        # the worst case by twice binary search's. Only the comparison decides, as in bisection.
        t0, target = self.plan_t0, t - self.plan_t0
        lo, hi = 0, self.plan_n  # S(lo) misses t (S(0) = 0), hi is the answer if nothing smaller is
        # S(plan_n) is the planned end less t0 (up to rounding, which only moves a guess: the
        # comparisons decide); every later s_hi is S(hi) exactly, as the new end uses.
        s_lo, s_hi = 0.0, self.plan_end - t0
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
        if hi >= self.plan_n:
            return []
        self.plan_n = hi
        return self._end_at(t0 + s_hi)

    def step_end(self, t: float) -> list[Event]:
        """The planned step or stride is over: advance state, finish sequences, plan again."""
        self.busy_s += t - self.plan_t0
        n = self.plan_n
        if self.plan_blocks < 0:  # a stride's blocks, taken now (kv.take's usual case inlined)
            kv, need = self.kv, self.blocks_needed(n)
            if need <= kv.num_free_blocks:
                kv.num_free_blocks -= need
            elif not kv.take(need):
                raise RuntimeError("decode stride ran beyond the free blocks")  # a bug, never bad input
        self.steps += n
        self.sum_ctx += self.nd * n
        if n:
            growth = (
                self.nd
                if not self.window
                else sum(1 for s in self.running if s.decoding and self.steps - n - s.g0 < self.window)
            )
            self.sum_held += growth * n
        for s in self.plan_chunks:
            s.num_computed_tokens += s.scheduled
            self.prefill_held += s.scheduled
            s.scheduled = 0
            if s.num_computed_tokens == s.prompt:
                self._prefill_done(s, t)
        heap = self.finish_heap
        while heap and (heap[0][0] <= self.steps or not heap[0][2].decoding):
            _, _, s = heapq.heappop(heap)
            if s.decoding:
                self._leave(s)
                self._finish(s, t)
        return self.plan(t)

    def _prefill_done(self, s: Seq, t: float) -> None:
        self.prefill_held -= s.num_computed_tokens
        self.prefilling.remove(s)
        if self.prefix_on:
            converted = self.kv.cache_blocks(s.content(), s.prompt, s.chain_len, s.owned)
            s.blocks -= converted
            s.chain_len += converted
        s.out += 1
        if s.t_first_token < 0:
            s.t_first_token = t
            if self.log is not None:
                self._log(t, "first_token", s)
        else:
            self._log(t, "recomputed", s)  # a preempted sequence has its KV back
        if s.out >= s.req.output_tokens:
            self._finish(s, t)
        elif self.role == "prefill":
            self.running.remove(s)
            self._release(s)
            self.handoff.append(s)
        else:
            self._join(s)

    def _finish(self, s: Seq, t: float) -> None:
        s.out = s.req.output_tokens
        s.t_finish = t
        if self.prefix_on:
            ctx = s.req.prompt_tokens + s.out - 1
            converted = self.kv.cache_blocks(s.content(), ctx, s.chain_len, s.owned, final=True)
            s.blocks -= converted
        self.running.remove(s)
        held = len(s.owned) + s.blocks
        self._release(s)
        self.finished.append(s)
        if self.log is not None:
            self._log(t, "finish", s, held)

    def _record(self, t: float, written: int = 0) -> None:
        """The state of the step starting at t, held until the next sample (a step function).

        Taken after scheduling, so the sequences the step processes count in it: a static batch's
        long prefill shows its slots busy, not the empty engine before it. `written`: tokens whose
        KV the step writes into blocks already taken (a stride takes its blocks when it ends).
        """
        kv, running = self.kv, len(self.running)
        slots = self.batch_slots if running and self.cfg.batching == "static" else running
        used = kv.num_blocks - kv.num_free_blocks - len(kv.evictable)  # kv.num_used(), inlined: once per step
        self.series.append((t, slots, len(self.waiting), used, self.sum_ctx + self.prefill_held + written, running))

    def _log(self, t: float, what: str, s: Seq, extra: int = 0) -> None:
        if self.log is not None:
            self.log.append((round(t, 9), self.index, what, s.id, extra))


Router = Callable[[Seq, list[Replica], float], Replica]


def simulate(
    requests: list[Request],
    replicas: list[Replica],
    route: Router,
    *,
    decode_route: Router | None = None,
    transfer_s: Callable[[Seq], float] | None = None,
) -> tuple[list[Seq], list[Request], int]:
    """Run requests through replicas: (finished sequences, dropped requests, events processed).

    Follow-up requests (after=id) are released `arrival_s` after the request they follow ends.
    A request that can never be served (longer than max_model_len or the whole KV pool) is
    dropped when it arrives. What follows it depends on whether the follow-up re-sends its answer:
    a conversation's next turn does (its history holds that answer), so it and the rest of the
    conversation are dropped too; a closed-loop user's next request does not, so it is released
    as if the dropped one had ended with an error then (GuideLLM records an error and goes on).
    With `decode_route`, replicas with role "prefill" hand finished prefills to a decode replica
    after `transfer_s(seq)` seconds (disaggregation).
    """
    counter = itertools.count()
    heap: list[tuple[float, int, int, int, Any]] = []
    followers: dict[int, list[Request]] = {}
    for r in requests:
        if r.after is None:
            heap.append((r.arrival_s, 0, next(counter), ARRIVE, r))
        else:
            followers.setdefault(r.after, []).append(r)
    heapq.heapify(heap)
    max_len = replicas[0].cfg.max_model_len
    kv0 = replicas[0].kv
    done: list[Seq] = []
    dropped: list[Request] = []
    events = 0

    def push(evs: list[Event]) -> None:
        for t, prio, kind, obj in evs:
            heapq.heappush(heap, (t, prio, next(counter), kind, obj))

    if len(replicas) == 1 and decode_route is None and replicas[0].role != "prefill":
        events = _one_replica(heap, replicas[0], followers, push, done, dropped)
        return done, dropped, events
    while heap:
        t, _, _, kind, obj = heapq.heappop(heap)
        events += 1
        if kind == ARRIVE:
            if (
                obj.prompt_tokens + obj.output_tokens > max_len
                or kv0.blocks_for(obj.prompt_tokens + obj.output_tokens) > kv0.num_blocks
            ):
                _drop(obj, t, followers, push, dropped)
                continue
            s = Seq(obj, t)
            push(route(s, replicas, t).add(s, t))
            continue
        if kind == KV_ARRIVE:
            push(obj[0].add(obj[1], t))
            continue
        # STEP_END: the only event that finishes sequences or hands them off (at its replica).
        rep, version = obj
        if version != rep.version:
            continue
        for t_end, prio, kind, obj in rep.step_end(t):  # push(), inlined: once per step
            heapq.heappush(heap, (t_end, prio, next(counter), kind, obj))
        if rep.finished:
            for s in rep.finished:
                done.append(s)
                push([(t + f.arrival_s, 0, ARRIVE, f) for f in followers.pop(s.id, ())])
            rep.finished.clear()
        if rep.handoff:
            for s in rep.handoff:
                s.prefilled = True
                dest = (decode_route or route)(s, replicas, t)
                push([(t + (transfer_s(s) if transfer_s else 0.0), 0, KV_ARRIVE, (dest, s))])
            rep.handoff.clear()
    return done, dropped, events


def _one_replica(
    heap: list[tuple[float, int, int, int, Any]],
    rep: Replica,
    followers: dict[int, list[Request]],
    push: Callable[[list[Event]], None],
    done: list[Seq],
    dropped: list[Request],
) -> int:
    """simulate's loop for one replica (no hand-offs): the same events in the same order.

    A replica has one step end pending at a time, so it is kept beside the heap of arrivals
    instead of in it: the next event is the earlier of the two, arrivals first at equal times
    (their priority). A step end that a cut replaces would have been popped from the heap and
    skipped; it is counted the same, so the number of events processed is simulate's. Every
    router sends each arrival to the one replica (none has an effect beyond its choice), so
    none is asked.
    """
    inf = float("inf")
    t_step = inf  # when the pending step ends (inf: the replica is idle)
    max_len, kv = rep.cfg.max_model_len, rep.kv
    if rep.paged:  # blocks_for(n) <= num_blocks exactly when n <= num_blocks * block_size
        max_len = min(max_len, kv.num_blocks * kv.block_size)
    events = 0
    while True:
        if heap and heap[0][0] <= t_step:
            t, _, _, _, obj = heapq.heappop(heap)  # an arrival: the only kind in the heap here
            events += 1
            if obj.prompt_tokens + obj.output_tokens > max_len or (
                not rep.paged and kv.blocks_for(obj.prompt_tokens + obj.output_tokens) > kv.num_blocks
            ):
                _drop(obj, t, followers, push, dropped)
                continue
            s = Seq(obj, t)
            evs = rep.add(s, t)  # every router sends it to the one replica (asking changes nothing)
            if evs:
                if t_step < inf:
                    events += 1  # the step end it replaces (a stale event in simulate's heap)
                t_step = evs[0][0]
            continue
        if t_step == inf:
            return events
        t = t_step
        events += 1
        evs = rep.step_end(t)
        t_step = evs[0][0] if evs else inf
        if rep.finished:
            for s in rep.finished:
                done.append(s)
                if s.id in followers:
                    push([(t + f.arrival_s, 0, ARRIVE, f) for f in followers.pop(s.id)])
            rep.finished.clear()


def _drop(
    req: Request,
    t: float,
    followers: dict[int, list[Request]],
    push: Callable[[list[Event]], None],
    dropped: list[Request],
) -> None:
    """Drop a request that cannot be served, and every follow-up that re-sends a dropped answer.

    Iterative (an explicit stack), so a chain of thousands of follow-ups cannot overflow
    Python's recursion limit.
    """
    stack = [req]
    while stack:
        r = stack.pop()
        # Kept with the absolute time it was refused (a follow-up's arrival_s is a delay).
        dropped.append(r._replace(arrival_s=t, after=None))
        for f in followers.pop(r.id, ()):
            if r.output_segment >= 0 and any(seg == r.output_segment for seg, _ in f.segments):
                stack.append(f)  # its prompt holds the answer that never came
            else:
                push([(t + f.arrival_s, 0, ARRIVE, f)])
