"""prefix_cache: shared prefixes save prefill; radix matches at least what hashing does; eviction costs hits."""

import random

from simulators import api
from simulators.engine.blockhash import block_runs
from simulators.engine.kv import KVCacheManager
from simulators.params import parse
from simulators.sims import prefix_cache, result


def test_block_keys_are_equal_exactly_when_the_prefixes_are():
    # 3 segments: 20 + 30 + 7 tokens in 16-token blocks -> blocks 0..2 full, block 3 has 9 tokens.
    kv = KVCacheManager(100, 16, prefix="hash")
    segs = ((5, 20), (6, 30), (7, 7))
    chain = kv.hashes(segs, 57)
    assert [runs for _, runs in chain] == block_runs(segs, 16, 57)
    assert [sum(hi - lo for _, lo, hi in r) for _, r in chain] == [16, 16, 16, 9]
    assert kv.hashes(segs + ((8, 40),), 57) == chain  # a longer prompt shares the same prefix chain
    assert chain[3][0] == hash((chain[2][0], chain[3][1]))  # a part-filled block: parent and content

    # Against the tokens themselves, over random prompts that share segments (one id, one text):
    # two full blocks have one key exactly when every token up to their end is the same.
    rng = random.Random(2)
    prompts = []
    for _ in range(300):
        segs = [(rng.randrange(4), rng.choice((5, 16, 20, 33)))]
        while len(segs) < rng.randrange(1, 6):
            segs.append((rng.randrange(3) + 10 * len(segs), rng.choice((0, 3, 16, 21, 40))))
        prompts.append(tuple(segs))
    for bs in (1, 4, 16):
        kv = KVCacheManager(100, bs, prefix="hash")
        seen: dict[int, tuple] = {}
        texts: dict[tuple, int] = {}
        for segs in prompts:
            tokens = tuple((s, i) for s, n in segs for i in range(n))  # token i of segment s
            for i, key in enumerate(kv._chain(segs)[0]):
                prefix = tokens[: (i + 1) * bs]
                assert seen.setdefault(key, prefix) == prefix  # one key, one prefix
                assert texts.setdefault(prefix, key) == key  # one prefix, one key
        assert len(seen) == len(texts) > 50


def test_shared_system_prompt_hits_and_full_hit_recomputes_last_token():
    kv = KVCacheManager(100, 16, prefix="hash")
    segs = ((1, 64),)
    owned = []
    kv.cache_blocks(segs, 64, 0, owned)  # 4 full blocks now cached, ref_cnt 1
    kv.unref(owned)
    hit, tokens = kv.match(segs + ((2, 10),), 74)
    assert (len(hit), tokens) == (4, 64)
    # The same 64-token prompt again: the last token must be computed, so one block is dropped.
    hit, tokens = kv.match(segs, 64)
    assert (len(hit), tokens) == (3, 48)


def test_radix_reuses_a_part_filled_block_that_hashing_cannot():
    for mode, expected in (("hash", 32), ("radix", 40)):
        kv = KVCacheManager(100, 16, prefix=mode)
        owned = []
        kv.cache_blocks(((1, 40),), 40, 0, owned, final=True)  # 2 full blocks + 8 tokens
        _, tokens = kv.match(((1, 40), (2, 30)), 70)
        assert tokens == expected


def test_caches_save_prefill_and_radix_never_matches_less():
    for sharing in ("system", "few_shot", "multi_turn", "agent"):
        r = result(prefix_cache.run(parse(prefix_cache.Params, {"sharing": sharing, "num_requests": 60}), seed=2))
        m = r["metrics"]
        assert m["hit_rate_hash"] > 0.2
        assert m["hit_rate_radix"] >= m["hit_rate_hash"] - 0.01
        assert m["ttft_hash_s_p50"] < m["ttft_off_s_p50"]


def test_less_memory_means_evictions_and_fewer_hits():
    r = api.run("prefix_cache", {"view": "pressure"})["result"]
    rates = [x["hash"] for x in r["pressure"]]
    assert rates == sorted(rates)
    small = result(prefix_cache.run(parse(prefix_cache.Params, {"kv_budget_GiB": 4.0}), seed=0))["metrics"]
    assert small["evictions_hash"] > 0


def test_workload_is_seeded():
    a = result(prefix_cache.run(parse(prefix_cache.Params, {"num_requests": 30}), seed=random.Random(1).randint(0, 99)))
    b = result(prefix_cache.run(parse(prefix_cache.Params, {"num_requests": 30}), seed=random.Random(1).randint(0, 99)))
    assert a == b


def test_hash_chains_are_shared_by_block_size_bounded_and_change_no_answer(monkeypatch):
    from simulators.engine import blockhash
    from simulators.engine import kv as kv_module

    with blockhash.kept_in(blockhash.chain_store()):  # a store, as api.Session and serve() give one
        a, b, other = (
            KVCacheManager(100, 16, prefix="hash"),
            KVCacheManager(50, 16, prefix="radix"),
            KVCacheManager(100, 8, prefix="hash"),
        )
        assert a.memo is b.memo is kv_module.chain_memo(16) and other.memo is not a.memo
    segs = ((901, 100), (902, 30))
    chain = a.hashes(segs, 130)
    assert b.memo[segs][0] is a.memo[segs][0]  # computed once, read by both caches
    # Past its bound the memo starts again; the chains (pure functions) come out the same.
    monkeypatch.setattr(kv_module.ChainMemo, "MAX_BLOCKS", 10)
    fresh = KVCacheManager(100, 16, prefix="hash", memo=kv_module.ChainMemo())
    assert fresh.hashes(segs, 130) == chain
    assert fresh.memo.blocks <= 10 and len(fresh.memo) == 1  # 6 blocks for (901,), then cleared for 8


def _linear_match(kv, segments, prompt_tokens):
    """match()'s hash-mode answer from a plain scan: the leading cached full blocks."""
    hit = []
    for h, runs in kv.hashes(segments, prompt_tokens):
        if h not in kv.cached or sum(b - a for _, a, b in runs) < kv.block_size:
            break
        hit.append(h)
    tokens = len(hit) * kv.block_size
    while tokens >= prompt_tokens:
        hit.pop()
        tokens -= kv.block_size
    return hit, tokens


def test_match_and_caching_shortcuts_before_the_first_eviction_agree_with_a_plain_scan():
    # Before any eviction match() bisects and cache_blocks() skips its scan; after, both scan.
    from simulators.core.catalog import resolve_gpu, resolve_model
    from simulators.engine import EngineSpec, SchedulerConfig, serve, workload

    m = resolve_model("llama-3-8b")
    rng = random.Random(5)
    times = workload.arrival_times(rng, 80, "poisson", 40.0)
    reqs = workload.build(
        rng, 80, workload.azure_lengths(), times, sharing="multi_turn", num_prefixes=4, shared_tokens=500
    ).requests
    for blocks, evicts in ((100_000, False), (1_200, True)):
        spec = EngineSpec(
            m, resolve_gpu("h100-sxm"), SchedulerConfig(max_model_len=8192), prefix="hash", num_blocks=blocks
        )
        kv = serve(reqs, spec).replicas[0].kv
        assert (kv.num_evictions > 0) == evicts
        for r in reqs:
            assert kv.match(r.segments, r.prompt_tokens) == _linear_match(kv, r.segments, r.prompt_tokens)


def test_the_hit_rate_views_show_the_caches_figures_and_price_no_time():
    """Learner review: the hit-rate charts' tables led with TTFT. Their tables now hold the caches' own
    figures (the schema's order puts hit rates first) and their answers say no "Times priced with", while
    the TTFT view keeps every figure and its profile."""
    declared = [m["name"] for m in api.schema("prefix_cache")["metrics"]]
    for view in ("hits", "pressure"):
        answer = api.run("prefix_cache", {"view": view})
        shown = [k for k in declared if k in answer["metrics"]]
        assert shown[:2] == ["hit_rate_hash", "hit_rate_radix"], shown
        assert not any(k.startswith("ttft_") for k in answer["metrics"])
        assert "priced_by" not in answer and "priced" not in answer["summary"]
    ttft = api.run("prefix_cache", {"view": "ttft"})
    assert set(declared) <= set(ttft["metrics"]) and "Times priced with" in ttft["summary"]


def test_the_hits_chart_names_its_workload_as_the_menu_does():
    """Learner review: "Prefix cache hits, system workload" used the id; the option reads "Shared system prompts"."""
    title = api.run("prefix_cache", {"view": "hits", "sharing": "system"})["figure"]["layout"]["title"]["text"]
    assert title == "Prefix cache hits: Shared system prompts"


def test_the_memory_axis_is_labelled_at_the_sizes_that_ran():
    """Learner review (lesson 07): the 1-2-5 ticks (5, 10, 20) labelled none of the points at 4 and
    40 GiB. The ticks are the sizes run: PRESSURE's shares of the KV memory, rounded to whole blocks."""
    answer = api.run("prefix_cache", {"view": "pressure"})
    ran = sorted({x["GiB"] for x in answer["result"]["pressure"]})
    axis = answer["figure"]["layout"]["xaxis"]
    assert axis["tickvals"] == ran and len(ran) == len(prefix_cache.PRESSURE)
    assert axis["ticktext"] == [f"{x:,.3g}" for x in ran] and "40" in axis["ticktext"]
