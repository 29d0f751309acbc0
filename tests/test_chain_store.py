"""The engine's block-hash chain memos live as long as their caller says, and no longer.

A chain memo (engine/blockhash.py) is a bounded cache of a pure function. It used to be
process-global; now it lives in a store the caller passes (blockhash.kept_in): an api.Session keeps
one in its ResultsCache, like a simulator's MEMO_ENTRIES memo, a call without a session and a
serve() outside any store get one for that call alone. These tests check the lifetime and bounds."""

import json

from simulators import api
from simulators.engine import blockhash
from simulators.engine.kv import KVCacheManager

PREFIX = {"num_requests": 40}  # prefix_cache hashes shared prompts, so its runs fill chain memos


def test_outside_any_store_nothing_is_shared_and_nothing_is_left():
    assert blockhash.current_store() is None
    a, b = KVCacheManager(100, 16, prefix="hash"), KVCacheManager(100, 16, prefix="hash")
    assert a.memo is not b.memo  # no process-global memo to find
    api.run_json("prefix_cache", json.dumps(PREFIX))
    assert blockhash.current_store() is None  # the call's store went with the call


def test_a_store_keeps_a_bounded_number_of_block_sizes_least_recent_first():
    store = blockhash.chain_store()
    with blockhash.kept_in(store):
        first = blockhash.chain_memo(16)
        assert blockhash.chain_memo(16) is first
        for size in range(1, blockhash.BLOCK_SIZES_KEPT + 1):
            blockhash.chain_memo(100 + size)
    assert len(store) == blockhash.BLOCK_SIZES_KEPT and 16 not in store  # the oldest went first
    assert blockhash.current_store() is None


def test_a_session_keeps_its_chains_bounded_and_they_change_no_answer(monkeypatch):
    session = api.Session()
    answer = session.run_json("prefix_cache", json.dumps(PREFIX))
    store = session.cache.memo(api.CHAINS, blockhash.BLOCK_SIZES_KEPT)
    memos = [store.get_or_make(size, blockhash.ChainMemo) for size in list(store._entries)]
    assert memos and any(m.blocks for m in memos)  # the session kept the chains it computed
    assert answer == api.run_json("prefix_cache", json.dumps(PREFIX))  # kept or not, the same answer
    # A long visit: every memo stays under its bound, and the store under its number of sizes.
    monkeypatch.setattr(blockhash.ChainMemo, "MAX_BLOCKS", 50)
    for n in (41, 42, 43, 44):
        assert session.run_json("prefix_cache", json.dumps({"num_requests": n})) == api.run_json(
            "prefix_cache", json.dumps({"num_requests": n})
        )
    assert len(store) <= blockhash.BLOCK_SIZES_KEPT
    for m in store._entries.values():  # past its bound a memo starts again (one chain may pass it alone)
        assert m.blocks <= max(50, *(len(chain[0]) for chain in m.values()))
    session.cache.clear()
    assert len(session.cache.memo(api.CHAINS, blockhash.BLOCK_SIZES_KEPT)) == 0


def test_a_chain_is_the_blocks_of_its_segments_however_they_are_asked_for():
    """chain() against block_runs(), an independent walk of the tokens: as many keys as full
    blocks and the same part-filled tail, the same keys whether the prefixes were asked for before
    (memo hits mid-way) or not, and block_content() gives each block's runs; segments of every
    length, zero included, at several block sizes. (Which keys are equal: test_sim_prefix_cache.)"""
    import random

    from simulators.engine.blockhash import block_content, block_runs, chain

    rng = random.Random(11)
    cases = [tuple((rng.randrange(30), rng.randrange(0, 45)) for _ in range(rng.randrange(1, 7))) for _ in range(400)]
    for bs in (1, 4, 7, 16):
        warm = blockhash.ChainMemo()
        for segs in cases:
            total = sum(n for _, n in segs)
            blocks = block_runs(segs, bs, total)
            keys, tail, _ = chain(warm, segs, bs)
            assert (keys, tail) == chain(blockhash.ChainMemo(), segs, bs)[:2]
            assert len(keys) == total // bs
            assert tail == (blocks[-1] if total % bs else ())
            assert [block_content(segs, bs, i, total) for i in range(len(blocks))] == blocks
