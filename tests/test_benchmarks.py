"""Benchmark predictions under their own conditions: offline, server (TPOT bound), llama-bench, latency."""

import pytest

from simulators.benchmark import benchmarks as bm
from simulators.core import catalog
from simulators.core import costmodel as cm
from simulators.core import efficiency as ef

M, H100 = catalog.models()["llama-3-8b"], catalog.gpus()["h100-sxm"]
FP8 = bm.Formats(weight_dtype="fp8", kv_dtype="fp8")


def test_in_flight_is_the_kv_capacity_capped_by_the_engine():
    p = ef.profile("vllm")
    fit = bm.kv_sequences(M, H100, FP8, 2048)
    assert fit > p.max_num_seqs  # an 8B model in FP8 on an H100 holds more than vLLM's default cap
    assert bm.in_flight(p, M, H100, FP8, 2048) == p.max_num_seqs
    assert bm.in_flight(p, M, H100, FP8, 2048, cap=10**6) == fit


def test_a_tpot_bound_can_only_lower_throughput_and_binds_when_tight():
    p = ef.profile("trtllm")
    free = bm.offline_throughput(p, M, H100, FP8, 1000, 1000)
    loose = bm.offline_throughput(p, M, H100, FP8, 1000, 1000, tpot_limit_s=10.0)
    tight = bm.offline_throughput(p, M, H100, FP8, 1000, 1000, tpot_limit_s=0.01)
    assert loose == pytest.approx(free)
    assert tight < free
    # Under the bound, the chosen batch keeps the mean time per output token within 10 ms.
    b = tight * 0.01  # tokens/s x s/token = sequences in flight, when the bound is met exactly or under
    assert b <= bm.in_flight(p, M, H100, FP8, 2000)


def test_longer_prompts_cost_more_and_bigger_micro_batches_prefill_faster():
    p = ef.profile("trtllm")
    assert bm.offline_throughput(p, M, H100, FP8, 4000, 200) < bm.offline_throughput(p, M, H100, FP8, 400, 200)
    q = ef.profile("llamacpp")
    rtx = catalog.gpus()["rtx-4090"]
    q4 = bm.Formats(weight_dtype="q4_0")
    rates = [bm.prompt_rate(q, M, rtx, q4, 512, u) for u in (1, 16, 128, 512)]
    assert rates == sorted(rates)


def test_batch_latency_is_prefill_plus_output_minus_one_decode_steps():
    p = ef.profile("vllm")
    f = bm.Formats()
    one = bm.batch_latency(p, M, H100, f, 32, 2, 8)
    two = bm.batch_latency(p, M, H100, f, 32, 4, 8)  # two more decode steps, context 33 instead of 32
    step = cm.step_time(M, H100, [(1, 32 + 4 // 2)] * 8, eff=p).time_s
    prefill = 8 * bm.prefill_time_per_prompt(p, M, H100, f, 32, p.max_num_batched_tokens)
    assert two == pytest.approx(prefill + 3 * step)
    assert one < two


@pytest.mark.parametrize("isl, osl", [(1000, 200), (128, 1024), (2048, 128)])
def test_the_closed_form_offline_run_agrees_with_the_event_engine_at_ideal_efficiency(isl, osl):
    # At ideal efficiency a step is linear in the batch, so the event engine (simulators/engine)
    # runs the same step times; it mixes prefill chunks into decode steps, which the closed form
    # sums apart (slightly pessimistic when prefill is a large share).
    from dataclasses import replace

    from simulators.engine import EngineSpec, SchedulerConfig, serve
    from simulators.engine.workload import Request

    n = 1500
    sched = SchedulerConfig(max_num_seqs=256, max_num_batched_tokens=8192, max_model_len=4096)
    spec = EngineSpec(M, H100, sched, weight_dtype="fp8", kv_dtype="fp8", ideal=True)
    served = serve([Request(i, 0.0, isl, osl) for i in range(n)], spec, keep_series=False)
    engine = n * osl / max(r.arrival_s + r.e2e_s for r in served.records)
    ceiling = replace(ef.ceiling(ef.profile("vllm")), max_num_seqs=256, max_num_batched_tokens=8192)
    closed = bm.offline_throughput(ceiling, M, H100, FP8, isl, osl)
    assert closed == pytest.approx(engine, rel=0.15)
    assert closed <= engine * 1.02
