"""The cost model against hand arithmetic and the reference's derived checks (reference §3)."""

import pytest

from simulators.core import catalog
from simulators.core import costmodel as cm

LLAMA3_8B = catalog.models()["llama-3-8b"]
H100 = catalog.gpus()["h100-sxm"]
A100 = catalog.gpus()["a100-sxm-80gb"]


def test_kv_bytes_per_token_from_the_shape():
    # 2 (K and V) x 32 layers x 8 KV heads x 128 dims x 2 bytes = 131,072 B = 128 KiB.
    assert cm.kv_bytes_per_token(LLAMA3_8B, "bf16") == 131_072
    assert cm.kv_bytes_per_token(LLAMA3_8B, "fp8") == 65_536
    # Llama-3.1-70B at 128k: 2 x 80 x 8 x 128 x 2 = 327,680 B/token; x 131,072 = 40 GiB.
    m70 = catalog.models()["llama-3.1-70b"]
    assert cm.kv_bytes_per_sequence(m70, 131_072) == 40 * cm.GiB
    # DeepSeek-V3 MLA: (512 + 64) x 61 layers x 2 B = 70,272 B.
    assert cm.kv_bytes_per_token(catalog.models()["deepseek-v3"]) == 70_272


def test_sliding_window_caps_the_cache():
    mistral = catalog.models()["mistral-7b"]
    assert cm.kv_tokens_held(mistral, 32_768) == 4096


def test_ridge_points():
    # Dense BF16 peak over peak bandwidth: the course's 295 (H100 SXM) and 153 (A100 SXM 80GB).
    assert cm.ridge_point(H100) == pytest.approx(295.3, abs=0.1)
    assert cm.ridge_point(A100) == pytest.approx(153.0, abs=0.1)
    assert cm.ridge_point(catalog.gpus()["a100-sxm-40gb"]) == pytest.approx(200.6, abs=0.1)
    assert cm.ridge_point(A100, "fp8") is None


def test_batch1_decode_floor_streams_the_weights():
    # Ideal batch-1 decode reads every weight except the input embedding table once:
    # (8.03e9 - 128,256 x 4,096) params x 2 B = 15.01 GB, plus 2,000 tokens of KV.
    t = cm.decode_step_time(LLAMA3_8B, H100, [2000], eff=cm.IDEAL)
    weights = (cm.param_counts(LLAMA3_8B).total - 128_256 * 4096) * 2
    kv = 2001 * 131_072
    assert t.bytes == weights + kv
    assert t.memory_s == pytest.approx((weights + kv) / 3.35e12)
    assert t.bound == "memory"
    assert t.memory_s * 1e3 == pytest.approx(4.56, abs=0.01)


def test_prefill_of_2k_tokens_is_compute_bound():
    t = cm.prefill_time(LLAMA3_8B, H100, 2048, eff=cm.IDEAL)
    # 2 x 7.50e9 block weights x 2048 tokens + the LM head for the last token + causal attention
    # 2 x 32 heads x 256 x 32 layers x 2048 x 2049 / 2.
    blocks = 2 * cm.param_counts(LLAMA3_8B).block_linear_active * 2048
    head = 2 * 128_256 * 4096
    attn = 2 * 32 * 256 * 32 * 2048 * 2049 / 2
    assert t.flops == pytest.approx(blocks + head + attn)
    assert t.bound == "compute"
    assert t.compute_s == pytest.approx(t.flops / 989.4e12)


def test_efficiency_only_slows_down():
    ideal = cm.decode_step_time(LLAMA3_8B, H100, [100] * 8, eff=cm.IDEAL)
    real = cm.decode_step_time(LLAMA3_8B, H100, [100] * 8)
    assert real.time_s > ideal.time_s


def test_decode_becomes_compute_bound_only_at_short_context():
    # At 1 token of context the batch amortises the weights: compute binds near the ridge point.
    b = cm.decode_compute_bound_batch(LLAMA3_8B, H100, 1, eff=cm.IDEAL)
    assert b is not None and 250 < b < 320
    # At 2,000 tokens each sequence's KV read grows with the batch: decode stays memory-bound.
    assert cm.decode_compute_bound_batch(LLAMA3_8B, H100, 2000, eff=cm.IDEAL) is None


def test_decode_line_is_exact():
    line = cm.decode_line(LLAMA3_8B, H100, 4)
    for ctx in ([10, 20, 30, 40], [1000, 1, 5, 7]):
        assert line.time_s(sum(ctx)) == pytest.approx(cm.decode_step_time(LLAMA3_8B, H100, ctx).time_s, rel=1e-12)


def test_fp8_on_a100_falls_back_to_bf16_tensor_cores():
    assert cm.matmul_path(A100, "fp8") == "bf16"
    assert cm.matmul_path(H100, "fp8") == "fp8"
    assert cm.matmul_path(H100, "int4") == "bf16"


def test_tensor_parallel_adds_communication():
    m70 = catalog.models()["llama-3.1-70b"]
    one = cm.decode_step_time(m70, H100, [1000] * 16, eff=cm.IDEAL)
    four = cm.decode_step_time(m70, H100, [1000] * 16, tp=4, eff=cm.IDEAL)
    assert four.memory_s == pytest.approx(one.memory_s / 4)
    # 2 all-reduces per layer x 80 layers of 16 x 8192 x 2 B, ring factor 2 x 3/4, at 450 GB/s.
    assert four.communication_s == pytest.approx(2 * 80 * 16 * 8192 * 2 * 1.5 / 450e9)


def test_memory_fit_arithmetic():
    fit = cm.memory_fit(LLAMA3_8B, H100)
    # vLLM v0.19.0's default --gpu-memory-utilization is 0.9 (0.92 from v0.21, vLLM PR #38284).
    assert fit.usable_bytes == 0.9 * 80 * 2**30
    assert fit.kv_bytes == fit.usable_bytes - fit.weight_bytes - fit.activation_bytes
    assert fit.kv_token_capacity == int(fit.kv_bytes // 131_072)
    big = cm.memory_fit(catalog.models()["llama-3.1-405b"], H100)
    assert not big.fits and big.kv_token_capacity == 0
    assert cm.memory_fit(catalog.models()["llama-3.1-405b"], H100, num_gpus=8, weight_dtype="fp8").fits


def test_quantised_weights_keep_embeddings_in_bf16():
    p = cm.param_counts(LLAMA3_8B)
    assert cm.weight_bytes(LLAMA3_8B, "int4") == p.block_linear * 0.515625 + (p.total - p.block_linear) * 2


def test_moe_reads_only_the_experts_it_routes_to():
    mix = catalog.models()["mixtral-8x7b"]
    one = cm.streamed_weight_bytes(mix, "bf16", 1)
    many = cm.streamed_weight_bytes(mix, "bf16", 1000)
    # One token touches 2 of 8 experts; a thousand touch (almost) all eight.
    assert one < 0.35 * many
    assert many == pytest.approx(cm.weight_bytes(mix) - mix.vocab_size * mix.hidden_size * 2, rel=1e-6)


def test_generation_flops_closed_form_equals_the_sum_of_steps():
    def stepwise(p, n, cached):
        if cached:
            return cm.prefill_time(LLAMA3_8B, H100, p).flops + sum(
                cm.decode_step_time(LLAMA3_8B, H100, [p + t - 1]).flops for t in range(1, n)
            )
        return sum(cm.prefill_time(LLAMA3_8B, H100, p + t).flops for t in range(n))

    for cached in (True, False):
        assert cm.generation_flops(LLAMA3_8B, 37, 11, kv_cache=cached) == pytest.approx(stepwise(37, 11, cached))


def test_speculative_expectation_is_the_sum_of_acceptance_powers_and_one_formula_serves_all():
    # E = 1 + a + a^2 + ... + a^k: the first draft token is accepted with probability a, the
    # first two with a^2, and so on; the verify pass always adds one token.
    for a in (0.0, 0.3, 0.8, 1.0):
        for k in (0, 1, 4, 7):
            assert cm.speculative_tokens_per_pass(a, k) == pytest.approx(sum(a**i for i in range(k + 1)))
    # Time per token: (verify + k drafts at c of a step) / E. 10 ms step, 14 ms verify, k = 4,
    # c = 0.05, a = 0.8: (14 + 4 x 0.5) / 3.3616 = 4.7596 ms.
    assert cm.speculative_time_per_token_s(0.010, 0.014, 4, 0.05, 0.8) == pytest.approx(0.016 / 3.3616)
    from simulators.engine import SchedulerConfig
    from simulators.sims import speculative

    assert SchedulerConfig(num_speculative_tokens=4, acceptance_rate=0.8).tokens_per_step() == pytest.approx(3.3616)
    assert speculative.expected_tokens(0.8, 4) == pytest.approx(3.3616)
    assert speculative.speedup(0.8, 4, 0.05, 0.010, 0.014) == pytest.approx(0.010 / (0.016 / 3.3616))
