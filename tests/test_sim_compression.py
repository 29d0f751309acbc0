"""Compression schemes: sizes by hand, which roof each scheme moves, and sources for every claim."""

import pytest

from simulators import api, params
from simulators.core import catalog
from simulators.core import costmodel as cm
from simulators.sims import compression as comp

LLAMA3_8B = catalog.models()["llama-3-8b"]


def _run(**kw):
    return comp.run(params.parse(comp.Params, kw), seed=0)


def test_every_scheme_is_sourced_and_says_what_it_needs():
    data = comp.schemes()
    assert set(data["schemes"]) == {"w4a16", "w8a8-int8", "w8a8-fp8", "2of4-fp8"}
    for s in [*data["schemes"].values(), data["kv_cache"]["fp8"]]:
        assert s["source"] and s["calibration"] and isinstance(s["needs_calibration_data"], bool)
        # A quality claim always comes with its source.
        assert not s["quality"] or s["quality_source"]
    # GPTQ and SmoothQuant need calibration data; FP8 dynamic does not (LLM Compressor guide).
    assert data["schemes"]["w4a16"]["needs_calibration_data"]
    assert data["schemes"]["w8a8-int8"]["needs_calibration_data"]
    assert not data["schemes"]["w8a8-fp8"]["needs_calibration_data"]


def test_artifact_sizes_by_hand():
    # Llama-3-8B: block matmuls 6.98e9 params; embedding + LM head + norms stay bf16.
    p = cm.param_counts(LLAMA3_8B)
    rest = (p.total - p.block_linear) * 2
    m = _run(scheme="w8a8-fp8")["metrics"]
    assert m["artifact_GB"] * 1e9 == pytest.approx(p.block_linear * 1 + rest)
    assert m["baseline_GB"] * 1e9 == pytest.approx(p.total * 2)
    # W4A16 group 128: 4 + 16/128 = 4.125 bits per weight.
    w4 = _run(scheme="w4a16")["metrics"]
    assert w4["bits_per_weight"] == 4.125
    assert w4["artifact_GB"] * 1e9 == pytest.approx(p.block_linear * 4.125 / 8 + rest)
    # 2:4 + FP8: half the bytes plus a 2-bit index per kept weight = 5 bits per original weight.
    assert _run(scheme="2of4-fp8")["metrics"]["bits_per_weight"] == 5.0


def test_fp8_on_an_a100_shrinks_weights_but_not_prefill():
    h100 = _run(scheme="w8a8-fp8", gpu="h100-sxm")
    a100 = _run(scheme="w8a8-fp8", gpu="a100-sxm-80gb")
    assert h100["matmul_path"] == "fp8" and a100["matmul_path"] == "bf16"
    # Prefill of 2,000 tokens is compute-bound: at peak, twice the tensor rate on the H100 (less the
    # BF16 attention); the vLLM profile's FP8 GEMMs reach a smaller share of their peak and its
    # activation traffic and fixed costs do not shrink, so it gains less; nothing on the A100.
    ideal = _run(scheme="w8a8-fp8", gpu="h100-sxm", ideal=True)["metrics"]["prefill_speedup"]
    assert ideal == pytest.approx(1.93, abs=0.05)
    assert 1.1 < h100["metrics"]["prefill_speedup"] < ideal
    assert a100["metrics"]["prefill_speedup"] == pytest.approx(1.0, abs=1e-6)
    # Batch-1 decode is memory-bound: both gain from half the weight bytes.
    assert a100["metrics"]["decode_speedup"] > 1.4  # less than the byte ratio: the fixed costs stay
    assert any("no FP8 tensor-core" in n for n in a100["speed_notes"])


def test_weight_only_int4_helps_decode_not_prefill_and_fades_with_batch():
    r = _run(scheme="w4a16")
    # Weight-only INT4 multiplies on the BF16 tensor cores: no faster at peak, and the profile's
    # dequantising GEMMs (its w4a16 factor) make a compute-bound prefill slower.
    assert _run(scheme="w4a16", ideal=True)["metrics"]["prefill_speedup"] == pytest.approx(1.0, abs=1e-6)
    assert r["metrics"]["prefill_speedup"] < 1.0
    assert r["metrics"]["decode_speedup"] > 1.5
    by_batch = r["schemes"]["w4a16"]["decode_speedup_by_batch"]
    assert all(b <= a + 1e-9 for a, b in zip(by_batch, by_batch[1:], strict=False))
    assert by_batch[-1] < 1.2


def test_fp8_kv_cache_doubles_kv_room():
    plain = _run(scheme="w8a8-fp8")["metrics"]
    fp8kv = _run(scheme="w8a8-fp8", kv_fp8=True)["metrics"]
    assert fp8kv["kv_token_capacity"] == pytest.approx(2 * plain["kv_token_capacity"], abs=2)
    assert fp8kv["decode_step_s"] < plain["decode_step_s"]


def test_two_four_sparse_fp8_uses_the_sparse_rate_on_hopper():
    m = _run(scheme="2of4-fp8", batch_size=8)["metrics"]
    dense = _run(scheme="w8a8-fp8", batch_size=8)["metrics"]
    assert m["prefill_speedup"] > dense["prefill_speedup"]
    assert m["artifact_GB"] < dense["artifact_GB"]


def test_summary_cites_the_quality_source():
    answer = api.run("compression", {"scheme": "w8a8-int8"})
    assert "1-3%" in answer["summary"] and "2411.02355" in answer["summary"]


def test_the_size_chart_tables_sizes_and_kv_room_and_prices_no_time():
    """Learner review (lesson 09): the "Size and KV room" chart's key figures were the speed-ups. Its
    table now holds the sizes and the KV tokens that fit, and its answer names no profile."""
    from simulators import api

    declared = [m["name"] for m in api.schema("compression")["metrics"]]
    memory = api.run("compression", {"view": "memory"})
    assert [k for k in declared if k in memory["metrics"]][:2] == ["artifact_GB", "baseline_GB"]
    assert not any(k.endswith(("_speedup", "_s")) for k in memory["metrics"])
    assert "kv_token_capacity" in memory["metrics"] and "priced" not in memory["summary"]
    assert set(declared) <= set(api.run("compression", {"view": "speed"})["metrics"])


def test_the_memory_chart_text_leaves_out_the_notes_about_times():
    """Learner review (lesson 09): the size chart, which shows no time, said "its times are what it
    would take if it did"; the speed chart keeps that note."""
    memory = api.run("compression", {"view": "memory", "model": "llama-3.1-70b"})["summary"]
    speed = api.run("compression", {"view": "speed", "model": "llama-3.1-70b"})["summary"]
    assert "times" not in memory and "its times are what it would take if it did" in speed


def test_the_1x_line_of_the_speed_up_bars_spans_every_group():
    """Learner review: the 1x line ran from the first scheme's bar centre to the last's, half a group
    short at each end; it is now a level on a hidden x axis from 0 to 1 over the whole plot."""
    fig = comp.figure(_run(), "speed")
    one_x = fig["data"][-1]
    assert (one_x["name"], one_x["x"], one_x["y"], one_x["xaxis"]) == ("BF16 (1x)", [0, 1], [1, 1], "x2")
    assert fig["layout"]["xaxis2"] == {"overlaying": "x", "range": [0, 1], "visible": False}
    assert all(t.get("xaxis", "x") == "x" for t in fig["data"][:-1])


def test_the_memory_view_says_when_weights_do_not_fit_instead_of_counting_zero_tokens():
    """Learner review: Llama-3.1-70B on one L4 read "the memory it frees holds 0 tokens of KV cache, against
    0 in BF16: 0 sequences ... against 0", and said the weights do not fit only at the end."""
    none = api.run("compression", {"view": "memory", "model": "llama-3.1-70b", "gpu": "l4"})
    assert none["metrics"]["kv_token_capacity"] == 0 and "holds 0 tokens" not in none["summary"]
    assert "Even compressed, the weights do not fit on 1 x NVIDIA L4" in none["summary"]
    assert none["figure"]["layout"]["title"]["text"].endswith("(the weights do not fit)")
    half = api.run("compression", {"view": "memory", "model": "llama-3.1-70b", "gpu": "h100-sxm"})
    assert half["metrics"]["kv_token_capacity_baseline"] == 0 < half["metrics"]["kv_token_capacity"]
    assert "where the BF16 weights do not fit at all" in half["summary"] and "against 0" not in half["summary"]
