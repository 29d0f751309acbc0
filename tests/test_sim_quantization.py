"""Quantisation lesson: bits per weight, memory-bound speed-ups, and a numpy oracle for the demo."""

import json

import numpy as np
import pytest

from simulators import api, params
from simulators.core import catalog
from simulators.core import costmodel as cm
from simulators.results_cache import LruCache
from simulators.sims import quantization as qz

LLAMA3_8B = catalog.models()["llama-3-8b"]
H100 = catalog.gpus()["h100-sxm"]


def _run(seed=0, **kw):
    return qz.run(params.parse(qz.Params, kw), seed=seed)


def test_bits_per_weight_include_the_group_scales():
    # INT4 with one 16-bit scale per 128 weights: 4 + 16 / 128 = 4.125 bits = 0.515625 bytes.
    assert _run(weight_dtype="int4")["metrics"]["bits_per_weight"] == 4.125
    assert _run(weight_dtype="fp8")["metrics"]["bits_per_weight"] == 8
    r = _run()
    bits = dict(zip(r["formats"], r["bits_per_weight"], strict=True))
    assert bits["bf16"] == 16 and bits["int8"] == 8 and bits["int4"] == 4.125


def test_weight_memory_by_hand():
    # Only the block matmuls are quantised; embedding and LM head stay bf16.
    p = cm.param_counts(LLAMA3_8B)
    m = _run(weight_dtype="int4")["metrics"]
    assert m["weights_GB"] * 1e9 == pytest.approx(p.block_linear * 0.515625 + (p.total - p.block_linear) * 2)
    assert m["weights_bf16_GB"] == pytest.approx(16.06, abs=0.01)


def test_memory_bound_speedup_is_the_byte_ratio():
    # Batch 1 decode is memory-bound in both formats. On ideal hardware (no step overhead) the
    # speed-up is bf16 bytes / int4 bytes; the default engine profile adds its fixed overhead to
    # both steps, which the bytes do not shrink, so its speed-up is smaller.
    course = _run(weight_dtype="int4", batch_size=1, ideal=True)["metrics"]
    bf16 = cm.decode_step_time(LLAMA3_8B, H100, [2000], weight_dtype="bf16", eff=cm.IDEAL)
    int4 = cm.decode_step_time(LLAMA3_8B, H100, [2000], weight_dtype="int4", eff=cm.IDEAL)
    assert bf16.bound == int4.bound == "memory"
    assert course["decode_speedup"] == pytest.approx(bf16.bytes / int4.bytes, rel=1e-12)
    eff = cm.efficiency(False, cm.DEFAULT_ENGINE)
    bf16 = cm.decode_step_time(LLAMA3_8B, H100, [2000], weight_dtype="bf16", eff=eff)
    int4 = cm.decode_step_time(LLAMA3_8B, H100, [2000], weight_dtype="int4", eff=eff)
    m = _run(weight_dtype="int4", batch_size=1)["metrics"]
    assert m["decode_speedup"] == pytest.approx(bf16.time_s / int4.time_s, rel=1e-12)
    assert 1.5 < m["decode_speedup"] < course["decode_speedup"] < 3.5


def test_compute_bound_prefill_gains_only_with_low_precision_tensor_cores():
    # W4A16 multiplies on the bf16 tensor cores: at peak a compute-bound prefill takes exactly as
    # long; the profile's dequantising kernels (its w4a16 factor) make it slower.
    m = _run(weight_dtype="int4", ideal=True)["metrics"]
    assert m["prefill_speedup"] == pytest.approx(1.0, abs=1e-12) and m["low_precision_tensor_cores"] == 0
    assert _run(weight_dtype="int4")["metrics"]["prefill_speedup"] < 1.0
    # W8A8 FP8 on an H100 doubles the matmul peak (attention stays bf16, so a bit less than 2x at
    # peak); the profile's FP8 GEMMs reach less of theirs and its fixed costs stay, so less again.
    top = _run(weight_dtype="fp8", ideal=True)["metrics"]["prefill_speedup"]
    m = _run(weight_dtype="fp8")["metrics"]
    assert 1.5 < top < 2.0 and 1.1 < m["prefill_speedup"] < top and m["low_precision_tensor_cores"] == 1
    # An A100 has no FP8 tensor cores: FP8 runs weight-only, saving bytes but no compute time.
    r = _run(weight_dtype="fp8", gpu="a100-sxm-80gb")
    assert r["metrics"]["prefill_speedup"] == pytest.approx(1.0, abs=1e-12)
    assert r["metrics"]["low_precision_tensor_cores"] == 0 and r["metrics"]["decode_speedup"] > 1.5
    assert any("no fp8 tensor cores" in n for n in r["notes"])


def test_the_speedup_fades_with_the_batch_and_stops_paying():
    r = _run(weight_dtype="int4", worthwhile_speedup=1.1)
    curve = r["speedup_curves"]["int4"]
    assert all(a >= b - 1e-12 for a, b in zip(curve, curve[1:], strict=False))
    assert r["speedup_curves"]["bf16"] == [1.0] * len(r["batches"])
    b = r["metrics"]["speedup_stops_paying_batch"]

    eff = cm.efficiency(False, cm.DEFAULT_ENGINE)

    def speedup(n):
        return (
            cm.decode_step_time(LLAMA3_8B, H100, [2000] * n, eff=eff).time_s
            / cm.decode_step_time(LLAMA3_8B, H100, [2000] * n, weight_dtype="int4", eff=eff).time_s
        )

    # The bisected batch is the first below 1.1x; the one before still pays.
    assert speedup(b) < 1.1 <= speedup(b - 1)
    # W8A8 FP8 on an H100 keeps paying at every batch: bytes while memory-bound, FP8 rate after.
    fp8 = _run(weight_dtype="fp8", context_tokens=1)
    assert fp8["metrics"]["speedup_stops_paying_batch"] == 0 and fp8["metrics"]["compute_bound_batch"] > 0


def test_round_to_nearest_by_hand():
    # A zero block and [1, -0.5]: one scale of 1 / qmax each. INT4 (qmax 7): -0.5 x 7 = -3.5 rounds
    # to -4 (ties to even), an error of 1/14; INT8 (127): -63.5 to -64, an error of 1/254.
    (int8_rms, int8_worst), (int4_rms, int4_worst) = qz.scheme_errors([0.0, 0.0, 1.0, -0.5], 2, 1.25)
    assert (int8_worst, int4_worst) == (pytest.approx(1 / 254), pytest.approx(1 / 14))
    assert (int8_rms, int4_rms) == (pytest.approx((1 / 254) / 1.25**0.5), pytest.approx((1 / 14) / 1.25**0.5))


def _oracle(w, qmax, scheme, group):
    """Vectorised symmetric round-to-nearest with numpy (np.round also rounds ties to even)."""
    rows, cols = w.shape
    size = {"per_tensor": rows * cols, "per_channel": cols, "group": group}[scheme]
    blocks = w.reshape(-1, size)
    scale = np.abs(blocks).max(axis=1, keepdims=True) / qmax
    wq = (np.clip(np.round(blocks / scale), -qmax, qmax) * scale).reshape(rows, cols)
    diff = w - wq
    return np.sqrt((diff**2).sum() / (w**2).sum()), np.abs(diff).max()


@pytest.mark.parametrize(
    ("seed", "outliers", "size", "group"), [(0, 8, 20.0, 128), (3, 0, 1.0, 32), (5, 64, 100.0, 64)]
)
def test_demo_errors_match_a_numpy_oracle(seed, outliers, size, group):
    r = _run(seed=seed, num_outliers=outliers, outlier_size=size, group_size=str(group))
    flat, energy = qz.demo_matrix(seed, outliers, size)
    w = np.array(flat).reshape(64, 256)
    assert energy == pytest.approx((w**2).sum(), rel=1e-12) and (np.abs(w) == size).sum() >= outliers
    for bits, qmax in (("int8", 127), ("int4", 7)):
        for scheme in qz.SCHEMES:
            rel, worst = _oracle(w, qmax, scheme, group)
            assert r["metrics"][f"demo_{bits}_{scheme}_rel_rms"] == pytest.approx(rel, rel=1e-9)
            assert r["metrics"][f"demo_{bits}_{scheme}_max_abs_error"] == pytest.approx(worst, rel=1e-9)


def test_outliers_hurt_coarse_scales_most():
    m = _run()["metrics"]
    for bits in ("int8", "int4"):
        assert (
            m[f"demo_{bits}_per_tensor_rel_rms"]
            > m[f"demo_{bits}_per_channel_rel_rms"]
            > m[f"demo_{bits}_group_rel_rms"]
        )
    for scheme in qz.SCHEMES:
        assert m[f"demo_int4_{scheme}_rel_rms"] > m[f"demo_int8_{scheme}_rel_rms"]
    clean = _run(num_outliers=0)["metrics"]
    assert clean["demo_int4_per_tensor_rel_rms"] < m["demo_int4_per_tensor_rel_rms"] / 3
    # Group-wise scales cost 16 bits per group: 16 / 128 = 0.125 bit per weight.
    assert _run()["scale_overhead_bits"]["group"] == 0.125


def test_the_demo_chart_speaks_of_outliers():
    # (Every chart answers and draws a valid figure: tests/test_simulator_contract.py.)
    assert "outliers" in json.loads(api.run_json("quantization", json.dumps({"view": "demo"})))["summary"]


def test_the_kept_demo_is_the_computation_from_nothing_and_the_same_object_every_time():
    # (A control the demo does not read reuses it: tests/test_results_cache.py.)
    flat, energy = qz.demo_matrix(3, 5, 20.0)
    sizes = {"per_tensor": len(flat), "per_channel": qz.COLS, "group": 128}
    found = {s: qz.scheme_errors(flat, sizes[s], energy) for s in qz.SCHEMES}
    expected = tuple((f"{bits}_{s}", *found[s][i]) for i, bits in enumerate(qz.QMAX) for s in qz.SCHEMES)
    memo = LruCache(qz.MEMO_ENTRIES)
    assert qz.demo_errors(3, 5, 20.0, 128, memo.get_or_make) == expected
    assert qz.demo_errors(3, 5, 20.0, 128, memo.get_or_make) is qz.demo_errors(3, 5, 20.0, 128, memo.get_or_make)
    # A new group size reuses the matrix, not the errors: one more miss (the errors), one hit.
    misses, hits = memo.misses, memo.hits
    assert qz.demo_errors(3, 5, 20.0, 32, memo.get_or_make) != expected
    assert (memo.misses, memo.hits) == (misses + 1, hits + 1)
    # New outliers reuse the seed's normal weights: two misses (errors, matrix), one hit (weights),
    # and the matrix is the one drawn from nothing.
    misses, hits = memo.misses, memo.hits
    fresh = qz.demo_errors(3, 6, 20.0, 128)
    assert qz.demo_errors(3, 6, 20.0, 128, memo.get_or_make) == fresh
    assert (memo.misses, memo.hits) == (misses + 2, hits + 1)


def test_the_demo_speaks_of_its_own_figures_and_of_outliers_only_when_there_are_some():
    """Learner review: the demo's table showed the format's 4.125 bits at groups of 32, its summary
    opened with the chosen format's bits ("int4 stores ...", a catalogue id) and, with 0 outliers,
    still put the largest error "next to an outlier"."""
    demo = api.run("quantization", {"view": "demo", "group_size": "32", "num_outliers": 0})
    assert demo["metrics"] and all(k.startswith("demo_") for k in demo["metrics"])
    assert "next to an outlier" not in demo["summary"] and "with 0 outliers," in demo["summary"]
    one = api.run("quantization", {"view": "demo", "num_outliers": 1})["summary"]
    assert "with 1 outlier," in one and "next to an outlier" in one
    speed = api.run("quantization", {"weight_dtype": "q4_k_m", "batch_size": 4096})["summary"]
    name = cm.precision("q4_k_m").name
    assert speed.startswith(f"{name} stores ") and f"with {name} weights in vLLM's accounting" in speed


def test_the_speed_up_chart_shows_which_format_and_batch_the_summary_speaks_of():
    """Learner review: eleven formats drawn alike, so a reader could not tell which line the summary
    meant; the chosen format's line is the thick one, named "(chosen, ...)", with a marker at the chosen batch."""
    r = api.run("quantization", {"weight_dtype": "q4_k_m", "batch_size": 48})
    data = r["figure"]["data"]
    chosen = [t for t in data if t["name"].endswith("(chosen, marked at batch 48)")]
    assert [t["name"] for t in chosen] == [cm.precision("q4_k_m").name + " (chosen, marked at batch 48)"]
    assert chosen[0]["line"]["width"] > max(t["line"]["width"] for t in data if "line" in t and t is not chosen[0])
    [mark] = [t for t in data if t["name"].startswith("Batch ")]
    assert (mark["x"], mark["y"]) == ([48], [r["metrics"]["decode_speedup"]])
    assert mark["marker"]["color"] == chosen[0]["line"]["color"]
