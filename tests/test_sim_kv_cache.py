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


def test_the_byte_arithmetic_legend_names_the_memory_its_line_is_drawn_for():
    # Eight H100s: the line is the byte arithmetic on 8 x 80 GiB = 640 GiB, and its legend says so.
    r = api.evaluate("kv_cache", num_gpus=8)["result"]
    names = [t["name"] for t in kc.figure(r, "memory")["data"]]
    assert "Byte arithmetic: 90% of 640 GiB less weights and activations (8 GPUs, upper bound)" in names
    # The line itself: 0.9 x 640 GiB less the weights and eight activation peaks, as tokens x 131,072 B.
    fit = kc.cm.memory_fit(kc.resolve_model("llama-3-8b"), H100, num_gpus=8)
    assert fit.capacity_bytes == 640 * 2**30
    assert r["formula_budget_GiB"] == pytest.approx(fit.kv_token_capacity * 131_072 / 2**30)


def test_the_summary_reads_as_the_page_prints_figures():
    # 8,192 tokens: "a sequence of 8,192 tokens" (no "a 8,192-token"); 16 tokens on 8 GPUs fit
    # thousands of sequences, printed with separators as the key-figures table does.
    s = api.evaluate("kv_cache", context_tokens=16, num_gpus=8)["summary"]
    assert "a sequence of 16 tokens" in s and "x at this length" in s
    concurrency = s.split("maximum concurrency of ")[1].split("x")[0]
    assert "," in concurrency and float(concurrency.replace(",", "")) > 1000
    assert kc.METRICS["kv_bytes_per_token"][1] == "bytes/token"  # shown exact, 131,072, not "131 KB"


def test_weights_that_leave_no_kv_memory_say_vllm_would_not_start():
    """Tool review: DeepSeek-V3 on one H100 read "vLLM would log GPU KV cache size: 0 tokens". vLLM stops at
    start-up there (no memory for the cache blocks); the summary says so. "1 tokens" is singular."""
    big = api.run("kv_cache", {"model": "deepseek-v3"})["summary"]
    assert "would refuse to start" in big and "would log" not in big
    assert "would log GPU KV cache size: 443," in api.run("kv_cache", {})["summary"]
    assert "a sequence of 1 token holds" in api.run("kv_cache", {"context_tokens": 1})["summary"]


def test_a_one_token_context_draws_its_point_and_says_token():
    """Learner review (lesson 01): at context 1 both charts were empty (a one-point line draws
    nothing) and the legend read "sequences of 1 tokens"."""
    from simulators import api

    for view in ("work", "memory"):
        figure = api.run("kv_cache", {"context_tokens": 1, "view": view})["figure"]
        assert all("markers" in t["mode"] for t in figure["data"] if len(t["x"]) == 1)
    names = [t["name"] for t in api.run("kv_cache", {"context_tokens": 1, "view": "memory"})["figure"]["data"]]
    assert any("sequences of 1 token," in n for n in names)


def test_the_work_summary_says_the_cache_saves_work_only_after_the_prompt():
    """Learner review: below the 2,000-token prompt the two work curves met and the summary said
    "1 times the work", read as a KV cache saving nothing on short sequences."""
    short = api.run("kv_cache", {"view": "work", "context_tokens": 1000})["summary"]
    assert (
        "1 times" not in short and "Without a cache the work is the same here: the whole context is the prompt" in short
    )
    long = api.run("kv_cache", {"view": "work", "context_tokens": 2200})
    ratio = long["metrics"]["recompute_ratio"]
    assert (
        f"costs {ratio:,.0f} times the work of generating with one: the first 2,000 tokens are the prompt"
        in long["summary"]
    )
    assert "the 200 generated after it" in long["summary"]
