"""KV cache calculator: bytes per token by hand, and how many sequences fit as vLLM counts them."""

import pytest

from simulators import api
from simulators.core import catalog
from simulators.core import vllm_memory as vm
from simulators.sims import kv_cache as kc

H100 = catalog.gpus()["h100-sxm"]


def _metrics(**kw):
    return api.evaluate("kv_cache", **kw)["metrics"]


def test_bytes_per_token_and_sequence_by_hand():
    # 2 (K and V) x 32 layers x 8 KV heads x 128 values x 2 bytes = 131,072 B; 8,192 tokens = 1 GiB.
    m = _metrics()
    assert m["kv_bytes_per_token"] == 131_072
    assert m["kv_bytes_per_sequence"] == 8192 * 131_072 and m["kv_GiB_per_sequence"] == 1.0


def test_the_headline_capacity_is_what_vllm_would_log():
    # The running example at vllm serve's H100 defaults: the deployment simulator's two log lines.
    m = _metrics(context_tokens=2200)
    d = api.evaluate("deployment", max_model_len=2200)["metrics"]
    assert m["kv_token_capacity"] == d["kv_cache_tokens"] == 443_792
    # A 2,200-token request takes 138 blocks of 16 (2,208 tokens): 443,792 / 2,208 = 200.99, 200 whole.
    assert m["max_concurrency"] == pytest.approx(443_792 / 2208) == d["max_concurrency"]
    assert m["max_concurrent_sequences"] == 200
    # The byte arithmetic on the data sheet's 80 GiB is kept beside it, and promises more.
    assert m["kv_token_capacity_by_bytes"] > m["kv_token_capacity"]
    assert m["max_concurrent_sequences_by_bytes"] == m["kv_token_capacity_by_bytes"] // 2200 > 200


def test_four_gpus_split_the_70b_model_per_rank_as_vllm_does():
    m = _metrics(model="llama-3.1-70b", context_tokens=131072, num_gpus=4)
    a = vm.account(catalog.models()["llama-3.1-70b"], H100, tp=4, max_model_len=131072)
    assert m["kv_token_capacity"] == a.kv_tokens and m["max_concurrency"] == pytest.approx(a.max_concurrency)
    assert m["max_concurrent_sequences"] == int(a.max_concurrency) == 3


def test_a_gpu_count_vllm_refuses_holds_nothing_and_says_why():
    # 64 heads do not split over 3 GPUs: vLLM would not start; the byte arithmetic still answers.
    r = api.evaluate("kv_cache", model="llama-3.1-70b", context_tokens=131072, num_gpus=3)
    assert r["metrics"]["kv_token_capacity"] == 0 and r["metrics"]["max_concurrent_sequences"] == 0
    assert r["metrics"]["kv_token_capacity_by_bytes"] > 0
    assert any("cannot split" in n for n in r["result"]["notes"])


def test_fp8_doubles_the_tokens_in_the_same_blocks():
    bf16, fp8 = _metrics(), _metrics(kv_dtype="fp8")
    assert fp8["kv_token_capacity"] == pytest.approx(2 * bf16["kv_token_capacity"], abs=16)


def test_the_chart_draws_vllms_budget_and_the_formulas():
    r = api.evaluate("kv_cache")
    names = [t["name"] for t in kc.figure(r["result"], "memory")["data"]]
    assert any(n.startswith("KV cache vLLM leaves") for n in names)
    assert any(n.startswith("Byte arithmetic") and "upper bound" in n for n in names)
    # Both lines in sequence terms: tokens held x bytes per token.
    assert r["result"]["vllm_budget_GiB"] == pytest.approx(r["metrics"]["kv_token_capacity"] * 131_072 / 2**30)
