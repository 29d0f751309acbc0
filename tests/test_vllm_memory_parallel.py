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

from simulators import catalog, parallel
from simulators import vllm_memory as vm

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
