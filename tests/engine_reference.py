"""The engine on one screen: the same scheduling rules as simulators/engine/replica.py, one step at a time, no tricks.

This is what `serve()` computes for one replica, written the plain way (in the spirit of
nano-vllm): every step touches every sequence, decode steps are priced one by one with the
cost model's step time, and every decoding sequence carries its own context. The fast engine
(sequence.py, decodeset.py, scheduler.py, replica.py, eventloop.py) keeps decoding sequences
as running sums and prices runs of decode steps in closed form; tests/test_engine_reference.py
runs both on many random scenarios and requires the same request records. The block pool and
prefix cache (blockpool.py, kv.py) and the step time's linear form (steptime.py) are shared, not restated.

One step:
1. Decodes first: each decoding sequence needs one token, and a block when its context is a
   multiple of block_size. While the free blocks cannot hold them, preempt the last admitted
   running sequence (free its blocks, recompute its prompt and output so far later).
2. Part-prefilled sequences take their next chunk of the step's token budget (preempting from
   the tail if their blocks do not fit; a preemption ends admission for this step).
3. Waiting sequences are admitted first come first served while the budget, max_num_seqs and
   blocks allow (the whole prompt's blocks with reserve_full_isl, plus the watermark while
   anything runs); the first that does not fit stops admission.
4. The step's time is step_time(tokens, sequences, attention keys, KV read). When it ends,
   chunks advance (a finished prompt emits its first token), decodes emit a token each, and
   sequences that emitted their last token release their blocks (cached blocks stay, LRU).
   Every block is cached (prefix caching on) as soon as it is full, outputs included.
5. Multi-step scheduling (num_scheduler_steps k > 1): a decode-only step starts a run of k, and
   until it ends nothing is scheduled and no sequence leaves (one that has emitted its last token
   keeps decoding tokens no one keeps); the run ends early when the next step's blocks do not fit.
Arrivals at the same time as a step end come first; an arrival to an idle engine starts a step.
"""

import heapq
import itertools
from collections import deque

from simulators.core import costmodel as cm
from simulators.engine.cluster import EngineSpec
from simulators.engine.kv import KVCacheManager
from simulators.engine.metrics import RequestRecord, records
from simulators.engine.sequence import Seq
from simulators.engine.steptime import attention_keys
from simulators.engine.workload import Request


class ReferenceEngine:
    def __init__(self, spec: EngineSpec):
        self.cfg = cfg = spec.sched
        reserve = cfg.max_model_len if spec.layout == "contiguous" else 0
        prefix = spec.prefix if spec.layout == "paged" else "off"
        self.kv = KVCacheManager(spec.blocks(), spec.block_size, spec.layout, reserve, prefix)
        self.cost = spec.step_cost()
        self.waiting: deque[Seq] = deque()  # FCFS; preempted sequences go back to the front
        self.running: list[Seq] = []  # admission order: the last is preempted first
        self.prefilling: list[Seq] = []  # running, prompt not all computed
        self.decoding: list[Seq] = []  # running, prompt computed, in the order they started decoding
        self.chunks: list[Seq] = []  # the step in flight: sequences with a prefill chunk
        self.decodes = False  # the step in flight: whether the decoding sequences take a token
        self.decode_blocks_at_end = False  # a decode-only step takes its blocks when it ends
        self.run_left = 0  # multi-step scheduling: decode-only steps left in the run (0: schedule)

    # -- scheduling -------------------------------------------------------------------------

    def decode_blocks(self) -> int:
        if self.kv.layout != "paged":
            return 0
        return sum(1 for s in self.decoding if s.num_computed_tokens % self.kv.block_size == 0)

    def preempt_last(self) -> None:
        s = self.running.pop()
        if s in self.decoding:
            self.cache_full_blocks(s)  # its full blocks, as of now (an eviction may have freed a twin)
            self.decoding.remove(s)
        else:
            self.prefilling.remove(s)
        self.kv.give_back(s.blocks)  # last block first (vLLM v1 frees in reverse order): the
        self.kv.unref(s.owned)  # private tail, then the cached blocks from the end back
        s.owned, s.blocks, s.chain_len = [], 0, 0
        s.prompt = s.req.prompt_tokens + s.out
        s.num_computed_tokens = 0
        s.num_preemptions += 1
        self.waiting.appendleft(s)

    def schedule(self, t: float) -> tuple[list[Seq], bool, int]:
        """(prefill chunks, whether decodes run, decode blocks taken now) for the step at t."""
        cfg, kv = self.cfg, self.kv
        static = cfg.batching == "static"
        while self.decoding and self.decode_blocks() > kv.num_available():
            self.preempt_last()
        if static and self.running and not self.prefilling:
            return [], True, 0
        reserved = self.decode_blocks()
        kv.take(reserved)
        if static:
            budget = 1 << 40
        elif cfg.chunked_prefill:
            budget = cfg.max_num_batched_tokens - len(self.decoding)
        else:
            budget = max(cfg.max_num_batched_tokens, cfg.max_model_len)
        chunks: list[Seq] = []
        preempted = False
        i = 0
        while i < len(self.prefilling) and budget > 0:  # part-prefilled sequences: next chunks
            s = self.prefilling[i]
            chunk = min(s.prompt - s.num_computed_tokens, budget)
            need = kv.blocks_for(s.num_computed_tokens + chunk) - len(s.owned) - s.blocks
            while need > kv.num_available():  # preempt from the tail, s itself last
                last = self.running[-1]
                self.preempt_last()
                preempted = True
                if last is s:
                    break
            if s not in self.running:
                break
            kv.take(need)
            s.blocks += need
            s.scheduled = chunk
            budget -= chunk
            chunks.append(s)
            i += 1
        if preempted:  # preempted decodes give their reserved blocks back; no admission
            extra = reserved - self.decode_blocks()
            kv.untake(extra)
            reserved -= extra
        elif not static or not self.running:
            while self.waiting and len(self.running) < cfg.max_num_seqs and budget > 0:
                got = self.admit(self.waiting[0], budget, t)
                if got < 0:
                    break
                budget -= got
                chunks.append(self.running[-1])
        decodes = bool(self.decoding) and (cfg.chunked_prefill or not chunks) and not static
        return chunks, decodes, reserved

    def admit(self, s: Seq, budget: int, t: float) -> int:
        kv, cfg = self.kv, self.cfg
        water = int(cfg.watermark * kv.num_blocks) if self.running else 0
        hit, hit_tokens = kv.match(s.content(), s.prompt) if kv.prefix != "off" else ([], 0)
        chunk = min(s.prompt - hit_tokens, budget)
        if chunk < s.prompt - hit_tokens and not cfg.chunked_prefill:
            return -1
        if cfg.batching == "static":
            chunk = s.prompt - hit_tokens
        need = kv.blocks_for(hit_tokens + chunk) - len(hit)
        gate = kv.blocks_for(s.prompt) - len(hit) if cfg.reserve_full_isl else need
        if gate + water > kv.num_available_after_ref(hit):
            return -1
        kv.ref(hit)
        kv.take(need)
        self.waiting.popleft()
        s.owned, s.chain_len, s.blocks = hit, len(hit), need
        s.num_computed_tokens = hit_tokens
        if not s.num_preemptions:
            s.cached_tokens = hit_tokens
        s.scheduled = chunk
        if s.t_scheduled < 0:
            s.t_scheduled = t
        self.running.append(s)
        self.prefilling.append(s)
        return chunk

    # -- one step ---------------------------------------------------------------------------

    def plan(self, t: float) -> float | None:
        """Schedule the step starting at t; when it ends (None: nothing to run)."""
        if self.run_left:  # inside a multi-step run: the same batch decodes, nothing is scheduled
            self.chunks, self.decodes, self.decode_blocks_at_end = [], True, True
            return t + self.step_s([], 1)
        chunks, decodes, reserved = self.schedule(t)
        self.chunks, self.decodes = chunks, decodes
        if not chunks and not self.decoding:
            self.kv.untake(reserved)
            return None
        self.decode_blocks_at_end = not chunks
        if not chunks and self.cfg.num_scheduler_steps > 1:
            self.run_left = self.cfg.num_scheduler_steps
        if not chunks or not decodes:  # decode-only: blocks taken at the end; else decodes pause
            self.kv.untake(reserved)
        k = self.cfg.num_speculative_tokens
        if chunks or not k:
            return t + self.step_s([(s.scheduled, s.num_computed_tokens) for s in chunks], 1 if decodes else 0)
        verify, plain = self.step_s([], k + 1), self.step_s([], 1)  # speculation: verify pass, drafts
        return t + cm.speculative_time_per_token_s(
            plain, verify, k, self.cfg.draft_cost_ratio, self.cfg.acceptance_rate
        )

    def step_s(self, chunks: list[tuple[int, int]], q: int) -> float:
        """Step time of the chunks (new, cached) plus q new tokens for every decoding sequence."""
        held = self.cost.held if self.cost.window else (lambda c: c)
        seqs = ([(q, s.num_computed_tokens) for s in self.decoding] if q else []) + chunks
        tokens = sum(n for n, _ in seqs)
        keys = sum(attention_keys(n, c) for n, c in seqs)
        kv_read = sum(held(c) + n for n, c in seqs)
        return self.cost.time_s(tokens, len(seqs), keys, kv_read)

    def step_end(self, t: float) -> list[Seq]:
        """Advance the step that ends at t; the sequences that finished."""
        kv, done = self.kv, list[Seq]()
        if self.decode_blocks_at_end and not kv.take(self.decode_blocks()):
            raise RuntimeError("decode step ran beyond the free blocks")
        if self.decodes:
            for s in self.decoding:
                if kv.layout == "paged" and s.num_computed_tokens % kv.block_size == 0:
                    s.blocks += 1  # its new token starts a block
                s.num_computed_tokens += 1
                s.out += 1
            for s in self.decoding:  # blocks are cached as soon as they are full, outputs' too
                self.cache_full_blocks(s)
            if self.run_left:  # a step of a multi-step run; it ends early when the blocks run out
                self.run_left -= 1
                if self.run_left and self.decode_blocks() > kv.num_available():
                    self.run_left = 0
        for s in self.chunks:
            s.num_computed_tokens += s.scheduled
            s.scheduled = 0
            self.cache_full_blocks(s)
            if s.num_computed_tokens == s.prompt:
                self.prefilling.remove(s)
                s.out += 1
                if s.t_first_token < 0:
                    s.t_first_token = t
                if s.out >= s.req.output_tokens:
                    self.finish(s, t, done)
                else:
                    self.decoding.append(s)
        # Finished: those that finished earliest first (a multi-step run holds them to its end).
        ended = [s for s in self.decoding if s.out >= s.req.output_tokens and not self.run_left]
        for s in sorted(ended, key=lambda s: s.req.output_tokens - s.out):
            self.decoding.remove(s)
            self.finish(s, t, done)
        return done

    def cache_full_blocks(self, s: Seq) -> None:
        if self.kv.prefix != "off":  # (past its last token in a multi-step run: tokens no one keeps)
            upto = min(s.num_computed_tokens, s.req.prompt_tokens + s.req.output_tokens - 1)
            converted = self.kv.cache_blocks(s.content(), upto, s.chain_len, s.owned)
            s.blocks -= converted
            s.chain_len += converted

    def finish(self, s: Seq, t: float, done: list[Seq]) -> None:
        s.out, s.t_finish = s.req.output_tokens, t
        if self.kv.prefix != "off":
            ctx = s.req.prompt_tokens + s.out - 1
            s.blocks -= self.kv.cache_blocks(s.content(), ctx, s.chain_len, s.owned, final=True)
        self.running.remove(s)
        self.kv.give_back(s.blocks)  # last block first (vLLM v1 frees in reverse order): the
        self.kv.unref(s.owned)  # private tail, then the cached blocks from the end back
        s.owned, s.blocks, s.chain_len = [], 0, 0
        done.append(s)


def serve_reference(requests: list[Request], spec: EngineSpec) -> tuple[list[RequestRecord], list[int]]:
    """Run requests on one replica of `spec`: (records, ids of the dropped requests)."""
    eng = ReferenceEngine(spec)
    tie = itertools.count()
    arrivals = [(r.arrival_s, next(tie), r) for r in requests if r.after is None]
    heapq.heapify(arrivals)
    followers: dict[int, list[Request]] = {}
    for r in requests:
        if r.after is not None:
            followers.setdefault(r.after, []).append(r)
    done: list[Seq] = []
    dropped: list[int] = []

    def release(r: Request, t: float, answered: bool) -> None:
        for f in followers.pop(r.id, ()):
            if not answered and any(seg == r.output_segment for seg, _ in f.segments) and r.output_segment >= 0:
                dropped.append(f.id)  # its prompt holds the answer that never came
                release(f, t, False)
            else:
                heapq.heappush(arrivals, (t + f.arrival_s, next(tie), f))

    def arrive(r: Request, t: float) -> bool:
        total = r.prompt_tokens + r.output_tokens
        if total > eng.cfg.max_model_len or eng.kv.blocks_for(total) > eng.kv.num_blocks:
            dropped.append(r.id)
            release(r, t, False)
            return False
        s = Seq(r, t)
        s.replica = 0
        eng.waiting.append(s)
        return True

    t_end: float | None = None  # when the step in flight ends (None: idle)
    while arrivals or t_end is not None:
        if t_end is None:  # idle: the next arrival starts a step at once
            t, _, r = heapq.heappop(arrivals)
            if arrive(r, t):
                t_end = eng.plan(t)
        elif arrivals and arrivals[0][0] <= t_end:  # arrivals first at equal times
            t, _, r = heapq.heappop(arrivals)
            arrive(r, t)
        else:
            t = t_end
            for s in eng.step_end(t):
                done.append(s)
                release(s.req, t, True)
            t_end = eng.plan(t)
    return records(done), dropped
