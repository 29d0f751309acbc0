"""paged_kv: the vLLM paper's headline on a ShareGPT-like workload."""

import json

from simulators import api, paged_kv
from simulators.params import parse


def test_contiguous_reservation_wastes_most_memory_and_paging_almost_none():
    # ShareGPT-like lengths (WildChat Table 1 moments: prompts 94 +- 626, answers 348 +- 270
    # tokens, lognormal), every contiguous request reserving max_model_len = 2,048 tokens,
    # Llama-3-8B with 4 GiB of KV (32,768 tokens), 16-token blocks, 300 Poisson requests at 20/s.
    r = paged_kv.run(parse(paged_kv.Params, {"num_requests": 300, "lengths": "sharegpt", "max_model_len": 2048}), seed=1)
    m = r["metrics"]
    # vLLM paper: 20.4-38.2% of reserved KV holds tokens in earlier systems, about 96% with paging.
    assert m["kv_utilization_contiguous"] < 0.4
    assert m["kv_utilization_paged"] > 0.9
    assert m["max_concurrent_paged"] > 2 * m["max_concurrent_contiguous"]
    assert m["max_concurrent_contiguous"] <= 32768 // 2048


def test_bigger_blocks_waste_more():
    r = paged_kv.run(parse(paged_kv.Params, {"view": "block_size"}), seed=0)
    util = [s["utilization"] for s in r["block_sweep"]]
    assert util == sorted(util, reverse=True)
    assert util[0] == 1.0  # one-token blocks: nothing is ever part-empty


def test_every_view_and_the_block_table_picture():
    for view in ("memory", "blocks", "block_size"):
        answer = json.loads(api.run_json("paged_kv", json.dumps({"view": view})))
        assert answer["ok"], answer
    heat = json.loads(api.run_json("paged_kv", json.dumps({"view": "blocks"})))["figure"]["data"][0]
    paged_rows = [row for row, label in zip(heat["z"], heat["y"], strict=True) if label.startswith("paged")]
    assert all(row[-1] is None for row in paged_rows)  # paged tables stop at the last block used
