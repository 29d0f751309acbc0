"""GPU memory lesson: the fit check by hand, ridge points, roofline operating points, no-FLOPs GPUs."""

import json

import pytest

from simulators import api, catalog, params
from simulators import costmodel as cm
from simulators import gpu_memory as gm

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


def test_fit_arithmetic_on_one_h100():
    # 80 GiB = 85.90 GB, of which vLLM v0.19 claims 90% = 77.31 GB; the other 8.59 GB are the reserve.
    m = _run(batch_size=32, context_tokens=2000)["metrics"]
    fit = cm.memory_fit(LLAMA3_8B, H100)
    card_GB = 80 * 2**30 / 1e9
    assert m["reserve_GB"] == pytest.approx(0.10 * card_GB)
    assert m["weights_GB"] == fit.weight_bytes / 1e9 == pytest.approx(16.06, abs=0.01)
    assert m["kv_budget_GB"] == pytest.approx(0.9 * card_GB - m["weights_GB"] - m["activations_GB"])
    # 32 sequences x 2,000 tokens x 131,072 B = 8,388,608,000 B = 8.39 GB of KV cache.
    assert m["kv_demand_GB"] == pytest.approx(32 * 2000 * 131_072 / 1e9, rel=1e-12)
    assert m["kv_token_capacity"] == int(fit.kv_bytes // 131_072)
    assert m["max_batch_at_context"] == m["kv_token_capacity"] // 2000
    assert m["fits"] == 1 and m["min_gpus_to_fit"] == 1


def test_the_stacked_bars_add_up_to_the_memory_when_the_batch_fits():
    r = _run(batch_size=64)
    demand = r["metrics"]["kv_demand_GB"] * 1e9
    for n, b in enumerate(r["bars"], 1):
        assert b["capacity"] == n * 80 * 2**30  # 80 GiB per card
        if b["fits"]:
            room = b["kv_budget"] - demand
            assert b["weights"] + b["activations"] + demand + room + b["reserve"] == pytest.approx(b["capacity"])
    # More GPUs never hold fewer KV tokens.
    caps = [b["kv_token_capacity"] for b in r["bars"]]
    assert caps == sorted(caps)


def test_a_batch_that_does_not_fit():
    # A batch of 300 sequences at 2,000 tokens needs 78.6 GB of KV cache: more than one H100 has left.
    m = _run(batch_size=300)["metrics"]
    assert m["kv_demand_GB"] == pytest.approx(300 * 2000 * 131_072 / 1e9)
    assert m["fits"] == 0 and m["min_gpus_to_fit"] == 2
    assert _run(batch_size=300, num_gpus=2)["metrics"]["fits"] == 1


def test_405b_needs_six_gpus_of_memory_but_eight_for_an_even_head_split():
    # FP8 weights of Llama-3.1-405B are about 410 GB; five H100s give 5 x 0.9 x 85.9 = 387 GB usable,
    # too few; six give 464 GB, enough for the weights, activations and the KV cache.
    r = _run(model="llama-3.1-405b", weight_dtype="fp8")
    assert r["metrics"]["weights_GB"] == pytest.approx(410.06, abs=0.01)
    assert r["metrics"]["min_gpus_to_fit"] == 6
    assert any("8 GPUs rather than 6" in n for n in r["notes"])
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


def test_m2_ultra_has_no_compute_roof():
    r = _run(gpu="m2-ultra")
    assert r["metrics"]["ridge_flop_per_byte"] == 0.0 and r["metrics"]["compute_roof_known"] == 0
    fig = gm.figure(r, "roofline")
    assert not any("Compute roof" in t["name"] for t in fig["data"])
    assert "publishes no tensor throughput" in gm.summary(r, "roofline")


def test_cli_json_and_views():
    for view in ("fit", "roofline"):
        answer = json.loads(api.run_json("gpu_memory", json.dumps({"view": view})))
        assert answer["ok"] and answer["figure"]["layout"]["title"]["text"]
    assert answer["figure"]["layout"]["xaxis"]["type"] == "log"
