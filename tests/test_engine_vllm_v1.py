"""vLLM V1 behaviours of the engine, each on a scenario small enough to follow by hand.

Sources (vllm-project/vllm): vllm/v1/core/kv_cache_manager.py (allocate_slots caches every full
block up to min(computed + new tokens, request.num_tokens), outputs included; KVCacheManager's
watermark defaults to 0.0); vllm/v1/core/block_pool.py (one free-block queue: freed blocks go
to its tail, tail blocks of a request first, and allocation takes from its head, evicting a
cached block it finds there); vllm/engine/arg_utils.py EngineArgs.get_batch_defaults (`vllm
serve` on a GPU with >= 70 GiB that is not an A100: max_num_batched_tokens 8192, max_num_seqs
1024; otherwise 2048 and 256); vllm/config/cache.py (enable_prefix_caching on by default in V1,
and here: EngineSpec.prefix).
"""

import collections
import random

import pytest

from simulators.core.catalog import resolve_gpu, resolve_model
from simulators.engine import EngineSpec, SchedulerConfig, eventloop, serve, workload
from simulators.engine import cluster as cluster_module
from simulators.engine.kv import KVCacheManager
from simulators.engine.workload import Request

M, GPU = resolve_model("llama-3-8b"), resolve_gpu("h100-sxm")


def _two_growing_requests(prefix):
    """A and B: 100-token prompts, answers of 200 and 300 tokens, in a pool of 30 blocks of 16
    tokens. A's prefill starts the moment it arrives; B, arriving at the same instant, waits for
    that step, so it trails A by one token. When A reaches 240 tokens it needs a 16th block, the
    pool is full (15 + 15), and B (admitted last, at 239 tokens: 14 full blocks and one holding
    15 tokens) is preempted: its 14 full blocks stay in the cache, the part-filled one is freed
    empty. A grows to 300 tokens (19 blocks): it takes the empty block and evicts 3 cached ones
    (B's tail blocks, freed first). When A finishes, B is admitted again with 240 tokens to
    prefill (its prompt and 140 answer tokens), and finds 11 blocks (176 tokens) in the cache."""
    reqs = [Request(0, 0.0, 100, 200, ((1, 100),)), Request(1, 0.0, 100, 300, ((2, 100),))]
    kw = {} if prefix is None else {"prefix": prefix}  # None: the engine's default
    spec = EngineSpec(M, GPU, SchedulerConfig(max_num_seqs=8), num_blocks=30, **kw)
    return serve(reqs, spec, keep_log=True)


def _readmission(served):
    """(tokens hit, tokens computed) when B is admitted again after its preemption."""
    log = served.log
    preempt = next(i for i, e in enumerate(log) if e[2] == "preempt")
    assert log[preempt][3] == 1 and log[preempt][4] == 15  # B, the last admitted, frees 15 blocks
    readmit = next(e for e in log[preempt:] if e[2] == "admit" and e[3] == 1)
    chunk = next(e for e in log[preempt:] if e[2] == "chunk" and e[3] == 1)
    return readmit[4], chunk[4]


def test_a_preempted_request_finds_its_own_blocks_outputs_included():
    served = _two_growing_requests("hash")
    hit, computed = _readmission(served)
    assert (hit, computed) == (11 * 16, 240 - 11 * 16)  # 176 > 100: its answer's blocks were cached too
    assert served.records[1].output_tokens == 300 and served.records[1].num_preemptions == 1


def test_prefix_caching_is_on_by_default_so_a_preempted_request_re_hits_its_own_full_blocks():
    assert EngineSpec(M, GPU).prefix == "hash"
    served = _two_growing_requests(None)
    assert _readmission(served) == (11 * 16, 240 - 11 * 16)
    assert served.replicas[0].rehit_tokens == 11 * 16  # all of them its own, found again


def test_blocks_only_their_own_request_can_hit_are_counted_exactly_as_hashed_ones(monkeypatch):
    # Requests whose first segment no other shares keep their cached blocks as a count in the free
    # queue (kv.free_own) instead of hashing each. On a pool tight enough to preempt and evict,
    # that must change nothing: the same records, events, hits, re-hits and evictions as hashing
    # every block (forced here by making every first segment look shared).
    rng = random.Random(5)
    reqs = workload.build(rng, 80, workload.azure_lengths(), workload.arrival_times(rng, 80, "poisson", 30)).requests
    spec = EngineSpec(M, GPU, SchedulerConfig(max_num_seqs=48), num_blocks=400)

    def run():
        served = serve(reqs, spec, keep_log=True)
        rep = served.replicas[0]
        counts = (rep.num_preemptions, rep.hit_tokens, rep.rehit_tokens, rep.kv.num_evictions, served.events)
        return served.records, served.log, counts

    counted = run()
    assert counted[2][0] > 0 and counted[2][2] > 0 and counted[2][3] > 0  # preempts, re-hits, evicts
    monkeypatch.setattr(eventloop, "Counter", lambda firsts: collections.defaultdict(lambda: 2))
    assert run() == counted


class PerBlockQueue(KVCacheManager):
    """vLLM v1's free queue taken literally (block_pool.py): one entry per free cached block, each
    reference counted one by one. KVCacheManager keeps the blocks a sequence frees together as
    one entry (kv.unref); this is the reference it must agree with."""

    def num_available_after_ref(self, hashes):
        return self.num_free_blocks - sum(1 for h in hashes if self.cached[h] == 0)

    def ref(self, hashes):
        for h in hashes:
            if self.cached[h] == 0:  # touch(): a hit takes a free block out of the queue
                del self.free_queue[h]
                self.num_free_blocks -= 1
            self.cached[h] += 1

    def unref(self, hashes):
        for h in reversed(hashes):  # free_blocks(): the tail block first
            self.cached[h] -= 1
            if not self.cached[h]:
                self.free_queue[h] = 1
                self.num_free_blocks += 1

    def _touch(self, h):
        if h in self.free_queue:
            self.free_queue.move_to_end(h)


@pytest.mark.parametrize("prefix", ["hash", "radix"])
def test_blocks_freed_together_are_queued_evicted_and_hit_as_one_by_one(monkeypatch, prefix):
    # Shared system prompts and multi-turn conversations on a pool tight enough to preempt and
    # evict (hits on blocks freed by several sequences, hits that end inside a freed chain,
    # evictions that eat a chain from its end): the same records, events, hits, re-hits and
    # evictions as the literal per-block queue.
    rng = random.Random(8)
    for sharing in ("system", "multi_turn"):
        n = 120
        reqs = workload.build(
            rng,
            n,
            workload.azure_lengths(),
            workload.arrival_times(rng, n, "poisson", 40),
            sharing=sharing,
            num_prefixes=3,
        ).requests
        spec = EngineSpec(M, GPU, SchedulerConfig(max_num_seqs=48), num_blocks=700, prefix=prefix)

        def run(reqs=reqs, spec=spec):
            served = serve(reqs, spec, keep_log=True)
            rep = served.replicas[0]
            counts = (rep.num_preemptions, rep.hit_tokens, rep.rehit_tokens, rep.kv.num_evictions, served.events)
            return served.records, served.log, counts

        grouped = run()
        assert grouped[2][1] > 0 and grouped[2][3] > 0  # hits and evictions
        monkeypatch.setattr(cluster_module, "KVCacheManager", PerBlockQueue)
        assert run() == grouped
        monkeypatch.undo()


def test_without_prefix_caching_a_preempted_request_recomputes_everything():
    assert _readmission(_two_growing_requests("off")) == (0, 240)  # the prompt and answer again


def test_one_free_queue_evicts_the_least_recently_freed_block_even_if_empty_ones_follow():
    # A pool of 20 blocks of 16 tokens, prefix caching on, one-token answers (each request ends
    # when its prompt is computed), one request per second so each finishes before the next.
    # X (64 tokens: 4 full blocks) and then Z (72 tokens: 4 full blocks and one holding 8) take
    # 9 blocks and free them, last block first: the queue is [11 empty, x4 x3 x2 x1, 1 empty
    # (Z's part-filled block), z4 z3 z2 z1]. W (192 tokens, 12 blocks) takes the 11 empty
    # blocks and then evicts x4, the least recently freed, although an empty block sits further
    # back. X2 (X's 64 tokens and 16 new ones) finds x1-x3 (48 tokens) and takes 2 blocks for
    # the other 32: the empty one and z4, a second eviction. A pool that used its empty blocks
    # first would have evicted only one block (for X2) and X2 would have found all 64 tokens.
    reqs = [
        Request(0, 0.0, 64, 1, ((1, 64),)),
        Request(1, 1.0, 72, 1, ((2, 72),)),
        Request(2, 2.0, 192, 1, ((3, 192),)),
        Request(3, 3.0, 80, 1, ((1, 64), (4, 16))),
    ]
    served = serve(reqs, EngineSpec(M, GPU, SchedulerConfig(), num_blocks=20, prefix="hash"))
    by_id = {r.id: r for r in served.records}
    assert served.replicas[0].kv.num_evictions == 2
    assert by_id[3].cached_tokens == 3 * 16


def test_no_watermark_a_request_may_take_the_last_free_block():
    # A pool of 100 blocks. A (800 tokens: 50 blocks) arrives first and prefills alone; B (784
    # tokens: 49 blocks) arrives with it and waits for that step. When the step ends A holds 50
    # blocks and its first decode step needs a 51st (800 is a multiple of 16), leaving 49 free:
    # exactly B's prompt. With vLLM v1's watermark of 0 B is admitted at once; with v0's 1% of
    # the pool (1 block) kept free it waits until A has finished its 20 tokens.
    reqs = [Request(0, 0.0, 800, 20, ((1, 800),)), Request(1, 0.0, 784, 20, ((2, 784),))]

    def b_starts(sched):
        served = serve(reqs, EngineSpec(M, GPU, sched, num_blocks=100))
        a, b = sorted(served.records)
        return b.queue_s, a.ttft_s, a.e2e_s

    queue_s, a_first_token, a_done = b_starts(SchedulerConfig())
    assert SchedulerConfig().watermark == 0.0 and queue_s == a_first_token
    queue_s, _, a_done = b_starts(SchedulerConfig(watermark=0.01))
    assert queue_s == a_done


def test_unset_limits_take_vllm_serves_defaults_for_the_gpu():
    # `vllm serve` on an H100 (80 GiB) or an H200: 8,192 batched tokens and 1,024 sequences; on
    # an A100 80GB (excluded by name) or an L4 (24 GB): 2,048 and 256. A limit that is set stays.
    for gpu, expected in (("h100-sxm", (8192, 1024)), ("h200", (8192, 1024)), ("mi300x", (8192, 1024))):
        sched = EngineSpec(M, resolve_gpu(gpu)).sched
        assert (sched.max_num_batched_tokens, sched.max_num_seqs) == expected, gpu
    for gpu in ("a100-sxm-80gb", "a100-sxm-40gb", "l4"):
        sched = EngineSpec(M, resolve_gpu(gpu)).sched
        assert (sched.max_num_batched_tokens, sched.max_num_seqs) == (2048, 256), gpu
    sched = EngineSpec(M, GPU, SchedulerConfig(max_num_seqs=64)).sched
    assert (sched.max_num_batched_tokens, sched.max_num_seqs) == (8192, 64)
