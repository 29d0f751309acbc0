"""vLLM's per-rank memory under expert parallelism and data-parallel attention (vllm_memory.py).

The rules (vllm/model_executor/layers/fused_moe/config.py, FusedMoEParallelConfig.make and
flatten_tp_across_dp_and_pcp; vllm/model_executor/models/deepseek_v2.py): a MoE layer is sharded
over all tp x dp ranks, every expert split that many ways without --enable-expert-parallel, whole
experts per rank with it (E // ranks, one more on the first E % ranks); attention, dense layers,
shared experts, embedding and head are split over TP and copied on every data-parallel rank; each
DP rank runs its own engine with its own requests and KV cache. The expected figures below are
computed by hand from the published config.json numbers, not from the code's parameter counts.
"""

import pytest

from simulators import api, parallel
from simulators.core import catalog
from simulators.core import vllm_memory as vm

DSV3 = catalog.models()["deepseek-v3"]
QWEN235 = catalog.models()["qwen3-235b-a22b"]
H200 = catalog.gpus()["h200"]

# DeepSeek-V3 config.json: hidden 7168, 61 layers (3 dense, 58 MoE), 128 heads, q_lora_rank 1536,
# kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head 128, dense intermediate 18432, 256 routed + 1
# shared expert of moe_intermediate 2048, vocab 129280, max_position_embeddings 163840.
H, L, MOE_L, DENSE_L = 7168, 61, 58, 3
EXPERT = 3 * H * 2048  # gate, up and down of one expert
ROUTED = MOE_L * 256 * EXPERT
SHARED = MOE_L * 1 * EXPERT
ATTN = L * (H * 1536 + 1536 * 128 * 192 + H * 576 + 512 * 128 * 256 + 128 * 128 * H)
DENSE = DENSE_L * 3 * H * 18432
EMBED = HEAD = 129280 * H
ROUTER = MOE_L * H * 256
NORMS = L * (2 * H + 1536 + 512) + H
ROPE = 163840 * 64 * 2  # the cos/sin table every rank builds, bf16


def test_deepseek_v3_on_8_h200_ep8_dp8_holds_an_eighth_of_the_experts_and_a_whole_copy_of_the_rest():
    a = vm.account(DSV3, H200, dp=8, ep=True, weight_dtype="fp8", max_model_len=131072)
    # fp8 checkpoint: matmul weights 1 byte; embedding, head, router and norms bf16.
    expected = ROUTED / 8 + SHARED + ATTN + DENSE + 2 * (EMBED + HEAD + ROUTER + NORMS) + ROPE
    assert a.stages[0].weight_bytes == pytest.approx(expected, rel=1e-6)
    assert expected / 1e9 == pytest.approx(100.84, abs=0.01)  # GB per GPU


def test_deepseek_v3_tp8_splits_everything_eight_ways_and_ep_does_not_change_the_bytes():
    tp8 = vm.account(DSV3, H200, tp=8, weight_dtype="fp8", max_model_len=131072)
    expected = (ROUTED + SHARED + ATTN + DENSE) / 8 + 2 * (EMBED + HEAD) / 8 + 2 * (ROUTER + NORMS) + ROPE
    assert tp8.stages[0].weight_bytes == pytest.approx(expected, rel=1e-6)
    # 256 experts over 8 ranks: 32 whole experts each, the same bytes as every expert split 8 ways.
    tp8_ep = vm.account(DSV3, H200, tp=8, ep=True, weight_dtype="fp8", max_model_len=131072)
    assert tp8_ep.stages[0].weight_bytes == tp8.stages[0].weight_bytes


def test_mla_latent_is_copied_under_tp_but_each_dp_rank_keeps_only_its_own_requests():
    tp8 = vm.account(DSV3, H200, tp=8, weight_dtype="fp8", max_model_len=131072)
    dp8 = vm.account(DSV3, H200, dp=8, ep=True, weight_dtype="fp8", max_model_len=131072)
    # One token's latent on one layer: (512 + 64) bf16 values, on every rank either way.
    latent = (512 + 64) * 2
    assert tp8.page_bytes == dp8.page_bytes == 16 * latent
    assert tp8.kv_heads_replicated and not dp8.kv_heads_replicated
    for a in (tp8, dp8):
        kv = a.stages[0].kv_bytes
        assert a.kv_tokens == int(kv // (16 * latent * L)) * 16
    # TP 8 is one engine: its requests' latents are on all 8 GPUs. DP 8 is eight engines, each
    # with fewer free bytes (it holds a whole copy of attention) but its own requests.
    layout = parallel.rank_fit(
        DSV3, H200, parallel.Layout(dp=8, ep=True), weight_dtype="fp8", kv_dtype="bf16", context=131072
    )
    assert layout.max_concurrency == pytest.approx(8 * dp8.max_concurrency)
    assert 8 * dp8.max_concurrency > 5 * tp8.max_concurrency


def test_qwen3_235b_on_8_h200_kv_heads_replicate_under_tp8_but_not_under_dp8():
    # config.json: 94 layers, hidden 4096, 64 query and 4 KV heads of 128, 128 experts of
    # moe_intermediate 1536, vocab 151936, untied head, max_position_embeddings 40960.
    tp8 = vm.account(QWEN235, H200, tp=8, max_model_len=32768)
    dp8 = vm.account(QWEN235, H200, dp=8, ep=True, max_model_len=32768)
    assert (tp8.kv_heads_per_rank, tp8.kv_heads_replicated) == (1, True)  # 4 heads < 8 ranks
    assert (dp8.kv_heads_per_rank, dp8.kv_heads_replicated) == (4, False)
    routed = 94 * 128 * 3 * 4096 * 1536
    attention = 94 * (4096 * 64 * 128 * 2 + 2 * 4096 * 4 * 128)
    embed_head = 2 * 151936 * 4096
    small = 94 * (4096 * 128 + 2 * 4096 + 2 * 128) + 4096  # router, layer norms, q/k norms, final norm
    rope = 40960 * 128 * 2
    # bf16 everywhere: 2 bytes a value. DP 8: an eighth of the experts, a whole copy of the rest.
    expected = 2 * (routed / 8 + attention + embed_head + small) + rope
    assert dp8.stages[0].weight_bytes == pytest.approx(expected, rel=1e-3)
    assert dp8.stages[0].weight_bytes / vm.GiB == pytest.approx(67.8, abs=0.1)


def test_uneven_experts_under_ep_leave_the_first_ranks_one_more():
    m = catalog.models()["qwen3-30b-a3b"]  # 128 experts
    assert vm.expert_share(m, 1, 3, True) == 43 / 128  # 128 = 42 x 3 + 2: ranks 0 and 1 hold 43
    assert vm.expert_share(m, 1, 3, False) == pytest.approx(1 / 3)
    assert vm.expert_share(m, 2, 4, True) == 16 / 128


def test_a_layout_vllm_would_refuse_raises():
    dense = catalog.models()["llama-3.1-8b"]
    with pytest.raises(ValueError, match="no experts"):
        vm.account(dense, H200, ep=True)
    with pytest.raises(ValueError, match="exceed"):
        vm.account(catalog.models()["mixtral-8x7b"], H200, tp=4, dp=4, ep=True)  # 16 ranks, 8 experts
    with pytest.raises(ValueError, match="at least 1"):
        vm.account(DSV3, H200, dp=0)


# The deployment simulator's data_parallel_size and enable_expert_parallel fields: one DP rank's
# engine logs its own two lines (vllm/v1/engine/core.py _initialize_kv_caches runs per DP engine),
# and the layout holds dp times its requests.


def _deploy(**params):
    answer = api.run("deployment", params)
    assert answer["ok"], answer.get("errors")
    return answer


def _blocks(requested, stage, weights, page_all_layers):
    """Whole KV blocks left on one GPU: requested less weights, the profiled activation peak and
    non-torch memory (those two are the fitted profile, read off the answer's memory bar)."""
    left = requested - weights - (stage["activation_GiB"] + stage["non_torch_GiB"]) * vm.GiB
    return int(left // page_all_layers)


def test_deployment_deepseek_v3_dp8_ep_on_8_h200_per_rank_and_in_total():
    # vLLM's docs/serving/expert_parallel_deployment.md serves DeepSeek-V3 exactly so (--tensor-parallel-size 1
    # --data-parallel-size 8 --enable-expert-parallel): "attention weights are replicated across all
    # GPUs, while the expert weights are split across GPUs. It will work on a H200 ... node with 8 GPUs".
    answer = _deploy(model="deepseek-v3", gpu="h200", data_parallel_size=8, enable_expert_parallel=True,
                     max_model_len=131072)  # fmt: skip
    x, stage = answer["metrics"], answer["result"]["stages"][0]
    weights = ROUTED / 8 + SHARED + ATTN + DENSE + 2 * (EMBED + HEAD + ROUTER + NORMS) + ROPE  # fp8, as above
    assert x["weights_GiB_per_gpu"] == pytest.approx(weights / vm.GiB, rel=1e-6)
    assert stage["weights_GiB"] == pytest.approx(weights / vm.GiB, rel=1e-6)  # the memory bar, per GPU
    requested = 0.9 * H200.visible_GiB * vm.GiB
    blocks = _blocks(requested, stage, weights, 16 * (512 + 64) * 2 * L)  # bf16 latent, 61 layers
    assert x["kv_cache_tokens"] == blocks * 16
    assert x["max_concurrency"] == pytest.approx(blocks / (131072 // 16))  # one DP rank, as it logs
    assert x["kv_cache_tokens_total"] == 8 * blocks * 16
    assert x["max_concurrency_total"] == pytest.approx(8 * blocks / 8192)
    assert x["num_gpus"] == 8
    assert answer["result"]["log_lines"][2] == f"GPU KV cache size: {blocks * 16:,} tokens"
    # The concurrency view is all DP ranks together.
    by_length = {c["context_tokens"]: c["max_concurrency"] for c in answer["result"]["concurrency_by_context"]}
    assert by_length[131072] == pytest.approx(x["max_concurrency_total"])
    assert "Each of the 8 DP engines would log" in answer["summary"]
    # TP 8 copies the latent on every rank, one engine: about five requests; DP 8 holds ~26.
    tp8 = _deploy(model="deepseek-v3", gpu="h200", tensor_parallel_size=8, max_model_len=131072)["metrics"]
    assert tp8["max_concurrency_total"] == tp8["max_concurrency"] < 6 < 25 < x["max_concurrency_total"] < 27


def test_deployment_qwen3_235b_experts_split_over_ranks_attention_copied_per_dp_rank():
    # bf16; 4 KV heads of 128: a DP rank keeps all 4 (no TP), 2 x 16 x 4 x 128 x 2 bytes a block and layer.
    dp8 = _deploy(model="qwen3-235b-a22b", gpu="h200", data_parallel_size=8, enable_expert_parallel=True,
                  max_model_len=32768)  # fmt: skip
    dp4 = _deploy(model="qwen3-235b-a22b", gpu="h200", tensor_parallel_size=2, data_parallel_size=4,
                  enable_expert_parallel=True, max_model_len=32768)  # fmt: skip
    routed = 94 * 128 * 3 * 4096 * 1536
    attention = 94 * (4096 * 64 * 128 * 2 + 2 * 4096 * 4 * 128)
    embed_head = 2 * 151936 * 4096
    small = 94 * (4096 * 128 + 2 * 4096 + 2 * 128) + 4096
    rope = 40960 * 128 * 2
    w8 = 2 * (routed / 8 + attention + embed_head + small) + rope
    # TP 2 x DP 4: experts still over 8 GPUs; attention, embedding and head halved by TP; router and norms whole.
    w4 = 2 * (routed / 8 + (attention + embed_head) / 2 + small) + rope
    assert dp8["metrics"]["weights_GiB_per_gpu"] == pytest.approx(w8 / vm.GiB, rel=1e-3)
    assert dp4["metrics"]["weights_GiB_per_gpu"] == pytest.approx(w4 / vm.GiB, rel=1e-3)
    requested = 0.9 * H200.visible_GiB * vm.GiB
    stage = dp8["result"]["stages"][0]
    blocks = _blocks(requested, stage, dp8["metrics"]["weights_GiB_per_gpu"] * vm.GiB, 2 * 16 * 4 * 128 * 2 * 94)
    assert dp8["metrics"]["kv_cache_tokens"] == blocks * 16
    assert dp8["metrics"]["kv_cache_tokens_total"] == 8 * blocks * 16
    # TP 2 halves each rank's KV heads (2 of 4) and DP 4 engines each log their own pool.
    assert dp4["result"]["kv_heads_per_rank"] == 2
    assert dp4["metrics"]["kv_cache_tokens_total"] == 4 * dp4["metrics"]["kv_cache_tokens"]


def test_deployment_dp_without_ep_splits_every_expert_and_a_dense_model_is_replicated():
    # Without --enable-expert-parallel a MoE layer is one tp x dp = 4-way tensor-parallel group.
    m = catalog.models()["qwen3-30b-a3b"]
    plain = _deploy(model="qwen3-30b-a3b", gpu="h100-sxm", data_parallel_size=4)
    assert any("split over tp x dp = 4 GPUs" in n for n in plain["result"]["notes"])
    assert plain["metrics"]["weights_GiB_per_gpu"] == pytest.approx(
        vm.weight_bytes(m, "bf16", 1, m.num_layers, first=True, last=True, dp=4) / vm.GiB
    )
    # 128 experts over 3 ranks: the first two hold 43 (the figures are theirs), and it says so.
    uneven = _deploy(model="qwen3-30b-a3b", gpu="h100-sxm", data_parallel_size=3, enable_expert_parallel=True)
    assert any("43 of 128" in n and "one more" in n for n in uneven["result"]["notes"])
    # A dense model: every DP rank a whole replica, so per GPU the same as one GPU, dp times the requests.
    one = _deploy(model="llama-3.1-8b", gpu="l4")["metrics"]
    two = _deploy(model="llama-3.1-8b", gpu="l4", data_parallel_size=2)["metrics"]
    assert (
        two["kv_cache_tokens"] == one["kv_cache_tokens"] and two["kv_cache_tokens_total"] == 2 * one["kv_cache_tokens"]
    )
    assert two["num_gpus"] == 2


def test_deployment_refuses_layouts_vllm_would_refuse_as_field_errors():
    def field(**params):
        answer = api.run("deployment", params)
        assert not answer["ok"]
        return answer["errors"][0]["field"]

    assert field(model="llama-3.1-8b", enable_expert_parallel=True) == "enable_expert_parallel"
    # Mixtral has 8 experts: 16 GPUs of expert parallelism would leave some with none.
    assert field(model="mixtral-8x7b", tensor_parallel_size=4, data_parallel_size=4,
                 enable_expert_parallel=True) == "data_parallel_size"  # fmt: skip
    assert field(model="mixtral-8x7b", tensor_parallel_size=16, enable_expert_parallel=True) == "tensor_parallel_size"
    # Two DP ranks of DeepSeek-V3 hold half its experts each: 322 GiB a GPU does not fit an H200.
    assert field(model="deepseek-v3", gpu="h200", data_parallel_size=2, max_model_len=4096) == "data_parallel_size"
    # A MoE's expert layers span the DP ranks, so they need a link; the M2 Ultra publishes none.
    assert field(model="qwen3-30b-a3b", gpu="m2-ultra", data_parallel_size=2) == "data_parallel_size"
    assert field(model="qwen3-30b-a3b", data_parallel_size=0) == "data_parallel_size"


def test_a_layout_reads_as_gpus_of_a_kind_in_a_sentence():
    """Learner review: messages read "1 GPU (TP 1) x NVIDIA H100 ..." and "On each of 1 x ..."."""
    assert parallel.Layout().describe("H100") == "1 x H100 (TP 1)"
    assert parallel.Layout(tp=4, pp=2).describe("H100") == "8 x H100 (TP 4, PP 2)"
    assert parallel.Layout(tp=2).describe() == "2 GPUs (TP 2)" and parallel.Layout().describe() == "1 GPU (TP 1)"
    assert api.run("gpu_memory", {})["summary"].startswith("On one ")


def test_a_batch_that_does_not_fit_is_refused_with_whole_requests_and_vllms_concurrency():
    """Learner review (lesson 08): "holds 201.0 requests" beside lesson 01's "200.99x: 200 whole"."""
    told = api.run("generation", {"batch_size": 1024})["errors"][0]
    assert told["field"] == "batch_size"
    assert (
        "holds 200 whole requests of 2,200 tokens (vLLM's maximum concurrency 200.99x), fewer than 1,024"
        in told["message"]
    )
