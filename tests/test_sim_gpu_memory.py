"""GPU memory lesson: the fit check by hand, ridge points, roofline operating points, no-FLOPs GPUs."""

import json

import pytest

from simulators import api, params
from simulators.core import catalog
from simulators.core import costmodel as cm
from simulators.sims import gpu_memory as gm

LLAMA3_8B = catalog.models()["llama-3-8b"]
H100 = catalog.gpus()["h100-sxm"]
A100 = catalog.gpus()["a100-sxm-80gb"]


def _run(**kw):
    return gm.run(params.parse(gm.Params, kw), seed=0)


def test_ridge_points_of_the_course():
    # Dense BF16 peak over bandwidth: 989.4 / 3.35 = 295.3 (H100 SXM), 312 / 2.039 = 153.0 (A100 SXM 80GB).
    assert _run()["metrics"]["ridge_flop_per_byte"] == pytest.approx(295.3, abs=0.05)
    assert _run(gpu="a100-sxm-80gb")["metrics"]["ridge_flop_per_byte"] == pytest.approx(153.0, abs=0.05)
    # FP8 weights run W8A8 on the H100's FP8 tensor cores: 1,978.9 / 3.35 = 590.7, twice the ridge.
    assert _run(weight_dtype="fp8")["metrics"]["ridge_flop_per_byte"] == pytest.approx(590.7, abs=0.05)
    # The A100 has no FP8 tensor cores: its roof stays at bf16, and the notes say why.
    r = _run(gpu="a100-sxm-80gb", weight_dtype="fp8")
    assert r["metrics"]["ridge_flop_per_byte"] == pytest.approx(153.0, abs=0.05)
    assert r["matmul_path"] == "bf16" and any("no fp8 tensor-core path" in n for n in r["notes"])


def test_fit_on_one_h100_is_vllms_start_up_accounting():
    # vLLM v0.19 claims 90% of the 79.2 GiB CUDA reports; the other 10% (7.92 GiB = 8.50 GB) is the reserve.
    r = _run(batch_size=32, context_tokens=2000)
    m = r["metrics"]
    visible = H100.visible_GiB * 2**30
    assert m["reserve_GB"] == pytest.approx(0.10 * visible / 1e9)
    parts = ("weights_GB", "activations_GB", "non_torch_GB", "kv_budget_GB", "reserve_GB")
    assert sum(m[k] for k in parts) == pytest.approx(visible / 1e9)
    # The same figures vLLM's accounting gives the deployment simulator at vllm serve's H100 defaults.
    d = api.evaluate("deployment", max_model_len=2000)["metrics"]
    assert m["kv_token_capacity"] == d["kv_cache_tokens"] == 443_792
    assert m["weights_GB"] == pytest.approx(d["weights_GiB_per_gpu"] * 2**30 / 1e9)
    assert m["activations_GB"] == pytest.approx(d["activation_GiB_per_gpu"] * 2**30 / 1e9)
    # A 2,000-token request takes 125 blocks of 16: 443,792 / 2,000 = 221.9 requests, 221 whole.
    assert m["max_concurrency"] == pytest.approx(443_792 / 2000) and m["max_batch_at_context"] == 221
    # 32 requests x 125 blocks x 16 tokens x 131,072 B = 8,388,608,000 B = 8.39 GB of KV cache.
    assert m["kv_demand_GB"] == pytest.approx(32 * 125 * 16 * 131_072 / 1e9, rel=1e-12)
    assert m["fits"] == 1 and m["min_gpus_to_fit"] == 1


def test_the_stacked_bars_add_up_to_the_memory_cuda_reports():
    r = _run(batch_size=64)
    for b in r["bars"]:
        assert b["capacity"] == H100.visible_GiB * 2**30  # per GPU
        if b["fits"]:
            room = b["kv_budget"] - b["kv_demand"]
            total = b["weights"] + b["activations"] + b["non_torch"] + b["kv_demand"] + room + b["reserve"]
            assert total == pytest.approx(b["capacity"])
    # More GPUs never hold fewer KV tokens.
    caps = [b["kv_token_capacity"] for b in r["bars"]]
    assert caps == sorted(caps)


def test_gpu_counts_that_do_not_divide_the_heads_run_as_pipeline_stages():
    # Llama-3-8B has 32 heads: 3 GPUs are TP 1 x PP 3, 6 are TP 2 x PP 3, 8 are TP 8.
    r = _run(num_gpus=6)
    assert [(b["tp"], b["pp"]) for b in r["bars"]] == [(1, 1), (2, 1), (1, 3), (4, 1), (1, 5), (2, 3), (1, 7), (8, 1)]
    assert any("TP 2 x PP 3" in n for n in r["notes"])
    fig = gm.figure(r, "fit")
    assert fig["data"][0]["x"][2] == "3 PP" and fig["data"][0]["x"][7] == "8"
    assert fig["layout"]["xaxis"]["type"] == "category"


def test_a_batch_that_does_not_fit():
    # 300 requests of 2,000 tokens against the 221 one H100 holds: two GPUs are needed.
    m = _run(batch_size=300)["metrics"]
    assert m["kv_demand_GB"] == pytest.approx(300 * 2000 * 131_072 / 1e9)
    assert m["fits"] == 0 and m["min_gpus_to_fit"] == 2
    assert _run(batch_size=300, num_gpus=2)["metrics"]["fits"] == 1


def test_405b_in_fp8_fits_seven_gpus_as_stages_but_needs_eight_for_tensor_parallelism():
    # FP8 weights of Llama-3.1-405B are about 410 GB: 58.6 GB per GPU on seven pipeline stages
    # leaves room for KV; its 128 heads split evenly over 8 GPUs, not 7.
    r = _run(model="llama-3.1-405b", weight_dtype="fp8")
    assert r["metrics"]["weights_GB"] == pytest.approx(410.1, abs=0.1)
    assert r["metrics"]["min_gpus_to_fit"] == 7
    assert any("tensor parallelism alone needs 8" in n for n in r["notes"])
    assert _run(model="llama-3.1-405b", gpu="a100-sxm-80gb")["metrics"]["min_gpus_to_fit"] == 0


def test_operating_points_sit_on_the_roofline():
    r = _run()
    m, bw, peak = r["metrics"], H100.hbm_bandwidth_GBps * 1e9 / 1e12, H100.dense_bf16_tflops
    prefill = cm.prefill_time(LLAMA3_8B, H100, 2000, eff=cm.IDEAL)
    decode = cm.decode_step_time(LLAMA3_8B, H100, [2000] * 32, eff=cm.IDEAL)
    assert m["prefill_intensity"] == prefill.flops / prefill.bytes
    assert m["decode_intensity"] == decode.flops / decode.bytes
    # Prefill is far right of the ridge and runs at the compute roof; decode sits on the slope.
    assert m["prefill_intensity"] > m["ridge_flop_per_byte"] > m["decode_intensity"]
    assert m["prefill_tflops"] == pytest.approx(peak)
    assert m["decode_tflops"] == pytest.approx(bw * m["decode_intensity"])
    for intensity, tflops in r["decode_trail"]:
        assert tflops <= min(peak, bw * intensity) * (1 + 1e-9)
    # Bigger batches move decode up the slope.
    trail = [i for i, _ in r["decode_trail"]]
    assert trail == sorted(trail)


def test_decode_compute_bound_batch_is_physics():
    # At 2,000 tokens, each sequence's KV read grows with the batch as fast as its FLOPs: never.
    m = _run()["metrics"]
    assert m["decode_compute_bound_batch"] == 0 and m["decode_ever_compute_bound"] == 0
    # At 1 token of context the A100 turns compute-bound near its ridge point of 153.
    m = _run(gpu="a100-sxm-80gb", context_tokens=1)["metrics"]
    b = m["decode_compute_bound_batch"]
    assert m["decode_ever_compute_bound"] == 1 and 140 < b < 170
    assert b == cm.decode_compute_bound_batch(LLAMA3_8B, A100, 1, eff=cm.IDEAL)
    below = cm.decode_step_time(LLAMA3_8B, A100, [1] * (b - 1), eff=cm.IDEAL)
    at = cm.decode_step_time(LLAMA3_8B, A100, [1] * b, eff=cm.IDEAL)
    assert below.bound == "memory" and at.bound == "compute"


def test_a_gpu_without_a_tensor_rate_has_no_compute_roof():
    r = _run(gpu="a10g")  # NVIDIA publishes no tensor rate for the AWS A10G (gpus.toml)
    assert r["metrics"]["ridge_flop_per_byte"] == 0.0 and r["metrics"]["compute_roof_known"] == 0
    fig = gm.figure(r, "roofline")
    assert not any("Compute roof" in t["name"] for t in fig["data"])
    assert "publishes no tensor throughput" in gm.summary(r, "roofline")


def test_cli_json_and_views():
    for view in ("fit", "roofline"):
        answer = json.loads(api.run_json("gpu_memory", json.dumps({"view": view})))
        assert answer["ok"] and answer["figure"]["layout"]["title"]["text"]
    assert answer["figure"]["layout"]["xaxis"]["type"] == "log"


def test_the_summary_prints_figures_with_separators_as_the_key_figures_table_does():
    # 4,096 sequences of 131,072 tokens x 131,072 B = 70,368.7 GB of KV per GPU ("70,368.7 GB", not
    # "70368.7 GB"); 16-token contexts on one H100: 443,792 tokens / 16 = 27,737 sequences at once.
    big = api.evaluate("gpu_memory", context_tokens=131072, batch_size=4096)["summary"]
    assert f"needs {4096 * 131072 * 131_072 / 1e9:,.1f} GB of KV cache" in big and "70,368.7 GB" in big
    short = api.evaluate("gpu_memory", context_tokens=16)["summary"]
    assert "maximum concurrency of 27,737.00x" in short
    assert "an activation peak of 2.0 GB" in short  # not "a 2.0 GB ...": no article to get wrong


def test_the_fit_chart_says_why_a_kv_cache_in_its_legend_is_not_drawn():
    """Learner review: Llama-3.1-405B on L4s listed "KV cache of 256 x 128,000 tokens" in the legend with
    nothing drawn (no GPU count leaves room), and the capacity dots near the bars' feet were unexplained."""
    big = api.run("gpu_memory", {"model": "llama-3.1-405b", "gpu": "l4", "batch_size": 256, "context_tokens": 128000})
    names = [t["name"] for t in big["figure"]["data"]]
    assert "KV cache of 256 x 128,000 tokens (no room for any: not drawn)" in names
    assert "Memory CUDA reports (the GPU's capacity)" in names
    fits = [t["name"] for t in api.run("gpu_memory", {})["figure"]["data"]]
    assert any(n.startswith("KV cache of ") and "not drawn" not in n for n in fits)
