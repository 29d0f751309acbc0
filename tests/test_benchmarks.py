"""Benchmark predictions under their own conditions: a "fit" row's batch, llama-bench by micro-batch."""

from dataclasses import replace

from simulators.benchmark import benchmarks as bm
from simulators.core import catalog
from simulators.core import efficiency as ef

M, H100 = catalog.models()["llama-3-8b"], catalog.gpus()["h100-sxm"]
FP8 = bm.Formats(weight_dtype="fp8", kv_dtype="fp8")


def test_in_flight_is_the_kv_capacity_capped_by_the_engine():
    p = ef.profile("vllm")
    fit = bm.kv_sequences(M, H100, FP8, 2048)
    assert fit > p.max_num_seqs  # an 8B model in FP8 on an H100 holds more than vLLM's default cap
    assert bm.in_flight(p, M, H100, FP8, 2048) == p.max_num_seqs
    assert bm.in_flight(replace(p, max_num_seqs=10**6), M, H100, FP8, 2048) == fit


def test_bigger_micro_batches_prefill_faster():
    q = ef.profile("llamacpp")
    rtx = catalog.gpus()["rtx-4090"]
    q4 = bm.Formats(weight_dtype="q4_0")
    rates = [bm.prompt_rate(q, M, rtx, q4, 512, u) for u in (1, 16, 128, 512)]
    assert rates == sorted(rates)
