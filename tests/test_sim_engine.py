"""engine: one request followed through the engine; the operating points where each organising bet pays."""

import json
import math

from simulators import api
from simulators.core import costmodel as cm
from simulators.core.catalog import resolve_gpu, resolve_model
from simulators.engine import EngineSpec
from simulators.params import parse
from simulators.sims import engine_explorer as ex

M, GPU = resolve_model("llama-3-8b"), resolve_gpu("h100-sxm")


def _point(batch, prompt, output=200, prefix_share=0.0):
    cost = EngineSpec(M, GPU).step_cost()
    return ex.operating_point(cost, cm.memory_fit(M, GPU).kv_token_capacity, batch, prompt, output, prefix_share)


def test_batch_one_short_context_is_weight_dominated():
    # One sequence at 356 tokens of context (256 prompt + 200 / 2 answer): the step reads
    # 16 GB of weights and 357 x 128 KiB = 47 MB of KV, so weights are over 99% of the bytes.
    p = _point(1, 256)
    weights = cm.streamed_weight_bytes(M, "bf16", 1)
    kv = cm.kv_bytes_per_token(M) * (256 + 100 + 1)
    assert math.isclose(p["weight_share"], weights / (weights + kv), rel_tol=1e-9)
    assert p["weight_share"] > 0.99
    assert p["region"] == "llamacpp"


def test_long_context_large_batch_is_kv_dominated():
    # 64 sequences at 4,096 + 500 tokens: 64 x 4,597 x 128 KiB = 38.6 GB of KV against 16 GB of
    # weights; the batch fits (294,208 of the H100's ~478k KV tokens) and prefill is a minority.
    p = _point(64, 4096, output=1000)
    assert p["weight_share"] < 0.35
    assert p["kv_use"] < 1
    assert p["region"] == "vllm"


def test_too_much_kv_does_not_fit_and_shared_prefixes_turn_prefill_into_sglang_territory():
    assert _point(1024, 4096)["region"] == "none"  # 4.4M KV tokens against ~478k
    plain, shared = _point(64, 3000), _point(64, 3000, prefix_share=0.4)
    assert plain["prefix_saving"] == 0 and plain["region"] == "tensorrt"  # prefill at the compute roof
    assert shared["prefix_saving"] >= 0.2 and shared["region"] == "sglang"


def test_request_alone_is_admitted_prefilled_in_budget_chunks_decoded_and_finished():
    # No background: the prompt gets the whole budget every step: ceil(3000 / 512) = 6 chunks.
    r = ex.run(
        parse(
            ex.Params, {"num_background": 0, "prompt_tokens": 3000, "output_tokens": 50, "max_num_batched_tokens": 512}
        ),
        seed=0,
    )
    kinds = [w for _, w, _ in r["follow"]["events"]]
    assert kinds == ["arrive", "admit"] + ["chunk"] * 6 + ["first_token", "finish"]
    assert [x for _, w, x in r["follow"]["events"] if w == "chunk"] == [512] * 5 + [440]
    m = r["metrics"]
    assert m["num_prefill_chunks"] == math.ceil(3000 / 512) and m["num_preemptions"] == 0
    assert m["queue_s"] == 0
    # Final context 3000 + 50 - 1 tokens in 16-token blocks.
    assert m["blocks_allocated"] == math.ceil(3049 / 16)


def test_small_kv_memory_preempts_and_the_readmission_finds_its_own_blocks():
    # 1 GiB of KV (8,192 tokens) under 12 background requests per second (lesson 10's busy replica
    # at 1 GiB): the followed request, the newest running one when the blocks run out, is
    # preempted and recomputed.
    r = ex.run(parse(ex.Params, {"kv_budget_GiB": 1.0, "rate_per_s": 12.0, "prompt_tokens": 2000}), seed=0)
    kinds = [w for _, w, _ in r["follow"]["events"]]
    assert kinds[0] == "arrive" and kinds[-1] == "finish"
    # Preempted at least once: its blocks were freed and taken again, so it allocated more
    # than the ceil((2000 + 199) / 16) = 138 blocks its final context holds.
    assert r["metrics"]["num_preemptions"] >= 1 and "preempt" in kinds
    assert r["metrics"]["blocks_allocated"] > math.ceil((2000 + 199) / 16)
    # Prefix caching is on (vLLM V1's default): readmitted, it finds its own full blocks in the
    # cache and computes only the rest of its sequence (its prompt and the tokens it had made
    # before it was preempted), not the whole prompt again.
    after = kinds.index("preempt")
    readmit = next(x for _, w, x in r["follow"]["events"][after:] if w == "admit")
    computed = sum(x for _, w, x in r["follow"]["events"][after:] if w == "chunk")
    assert readmit > 0 and readmit % 16 == 0 and 0 < computed < 2000
    assert 2000 <= readmit + computed < 2000 + 200


def test_both_views_draw_only_trace_types_the_browser_bundle_has():
    for view in ("request", "operating_points"):
        fig = json.loads(api.run_json("engine", json.dumps({"view": view})))["figure"]
        assert {t.get("type", "scatter") for t in fig["data"]} <= {"scatter", "bar", "pie"}


def test_the_operating_points_table_holds_the_marked_points_figures():
    """Learner review (F1): the map's key figures were the followed request's TTFT and queue, which
    the map does not draw. Its table now holds the marked point's five shares; the request view
    keeps every figure."""
    declared = [m["name"] for m in api.schema("engine")["metrics"]]
    points = api.run("engine", {"view": "operating_points"})["metrics"]
    assert [k for k in declared if k in points] == [k for k in declared if k not in ex.FOLLOWED]
    assert set(declared) <= set(api.run("engine", {"view": "request"})["metrics"])


def test_a_tiny_step_budget_draws_its_many_chunks_as_few_bars_and_loses_no_time():
    """At a 16-token budget the followed prompt is cut into ~125 chunks: back-to-back chunks are
    drawn as one bar (a hundred one-pixel patterned bars cost the page tens of ms), covering the
    same time, and their labels count every chunk; the per-step series is thinned to 600 points."""
    import re

    p = {"prompt_tokens": 2000, "kv_budget_GiB": 1.5, "num_background": 60, "rate_per_s": 12, "view": "request"}
    small = api.run("engine", {**p, "max_num_batched_tokens": 16})
    assert small["ok"] and small["metrics"]["num_prefill_chunks"] > ex.MAX_CHUNK_BARS
    bars = next(t for t in small["figure"]["data"] if t.get("name") == "Prefill chunk")
    assert len(bars["x"]) < ex.MAX_CHUNK_BARS
    phases = [(a, b) for k, a, b in small["result"]["follow"]["phases"] if k == "chunk"]
    assert abs(sum(bars["x"]) - sum(b - a for a, b in phases)) < 1e-9
    counted = sum(int(re.search(r"(\d+) chunks", label).group(1)) for label in bars["text"])
    assert counted == len(phases)
    assert len(small["result"]["follow"]["series"]) == ex.SERIES_POINTS
    big = api.run("engine", {**p, "max_num_batched_tokens": 512})  # a few chunks: one bar each
    bars = next(t for t in big["figure"]["data"] if t.get("name") == "Prefill chunk")
    assert len(bars["x"]) == big["metrics"]["num_prefill_chunks"] <= ex.MAX_CHUNK_BARS


def test_the_operating_points_summary_says_whose_kv_cache_it_uses_and_names_its_region_once():
    """Learner review (lesson 10): with KV memory at 1.5 GiB the summary said the batch "needs 31% of the KV
    memory", as the grid uses the GPU's whole KV cache, not that control; and "...KV memory: Prefix reuse:
    shared prefixes..." held two colons. Moving the control leaves the grid, and now the summary says why."""
    small = api.run("engine", {"view": "operating_points", "kv_budget_GiB": 1.5})
    large = api.run("engine", {"view": "operating_points", "kv_budget_GiB": 40})
    assert small["metrics"] == large["metrics"]
    told, tokens = small["summary"], small["result"]["capacity_tokens"]
    assert f"of the KV cache vLLM allocates on one NVIDIA H100 SXM5 80GB ({tokens:,} tokens;" in told
    assert "the KV memory and batch slots set only the followed request's server" in told
    assert "Its region: Prefix reuse (shared prefixes save >= 20% of GPU time)." in told


def test_event_names_sit_on_their_own_row_above_the_lane_reaching_toward_the_middle():
    """Learner review (lesson 10): "first token" was written over the prefill and decode bars, and a
    label at the window's edge was cut. The names have a row of their own; each runs toward the middle."""
    answer = api.run("engine", {"view": "request"})
    fig, lo_hi = answer["figure"], answer["result"]["follow"]["window"]
    names = [t for t in fig["data"] if t.get("mode") == "text"]
    bars = [t for t in fig["data"] if t["type"] == "bar"]
    assert {y for t in bars for y in t["y"]} == {"This request"}
    assert names and all(set(t["y"]) <= {" "} for t in names)
    assert sorted(w for t in names for w in t["text"]) == ["finish", "first token"]
    for t in names:  # right of the middle: the name ends at its tick; left of it: starts there
        assert all((x > sum(lo_hi) / 2) == (t["textposition"] == "middle left") for x in t["x"])
    assert fig["layout"]["yaxis"]["range"] == [-0.5, 1.5]  # both rows whole, so no name is clipped
