"""Sparsity lesson: 2:4 vs unstructured bytes and speed by hand, and a numpy oracle for the pruning demo."""

import json
import random

import numpy as np
import pytest

from simulators import api, params
from simulators.core import catalog
from simulators.core import costmodel as cm
from simulators.results_cache import LruCache
from simulators.sims import sparsity as sp

LLAMA3_8B = catalog.models()["llama-3-8b"]
H100 = catalog.gpus()["h100-sxm"]


def _run(seed=0, **kw):
    return sp.run(params.parse(sp.Params, kw), seed=seed)


def test_bytes_per_weight_and_memory_by_hand():
    m = _run()["metrics"]
    # bf16 2:4: half the values (1 B) + a 2-bit index per kept value (1 bit per weight) = 1.125 B.
    assert m["bytes_per_weight_24"] == 1.125
    # Unstructured 50% with a bitmask: 1 B of values + 1 bit per position = 1.125 B as well.
    assert m["bytes_per_weight_unstructured"] == 1.125
    p = cm.param_counts(LLAMA3_8B)
    assert (m["weights_dense_GB"] - m["weights_24_GB"]) * 1e9 == pytest.approx(p.block_linear * 0.875)
    assert m["weights_24_GB"] == pytest.approx(m["weights_unstructured_GB"])
    # CSR with 16-bit indices at 50%: 1 B of values + 1 B of index = 2 B, nothing saved.
    r = _run(unstructured_layout="csr")
    assert r["metrics"]["memory_saved_unstructured_fraction"] == pytest.approx(0.0, abs=1e-12)
    assert any("no fewer bytes" in n for n in r["notes"])
    # Storing the zeros densely saves nothing either.
    assert _run(unstructured_layout="dense")["metrics"]["weights_unstructured_GB"] == m["weights_dense_GB"]


def test_prefill_gains_only_from_the_sparse_tensor_rate():
    # Prefill of 2,000 tokens is compute-bound. 2:4 halves the time of the block matmuls (the
    # sparse rate is 2x) but not of the LM head or attention, which stay at the dense rate.
    m = _run(ideal=True)["metrics"]
    p = cm.param_counts(LLAMA3_8B)
    block = 2 * p.block_linear_active * 2000
    other = 2 * cm.lm_head_params(LLAMA3_8B) + cm.attention_flops(LLAMA3_8B, 2000)
    dense_s = (block + other) / (989.4e12)
    sparse_s = block / (1978.9e12) + other / (989.4e12)
    assert m["prefill_speedup_24"] == pytest.approx(dense_s / sparse_s, rel=1e-9)
    # Unstructured sparsity has no tensor-core path: not a second gained.
    assert m["prefill_speedup_unstructured"] == 1.0


def test_memory_bound_decode_gains_from_bytes_for_both():
    # On ideal hardware (no step overhead) the gain is the byte ratio; the default engine
    # profile's fixed overhead per step dilutes it.
    course = _run(batch_size=1, ideal=True)["metrics"]
    dense = cm.decode_step_time(LLAMA3_8B, H100, [2000], eff=cm.IDEAL)
    sparse = cm.decode_step_time(LLAMA3_8B, H100, [2000], sparse=True, eff=cm.IDEAL)
    assert dense.bound == "memory"
    assert course["decode_speedup_24"] == pytest.approx(dense.bytes / sparse.bytes, rel=1e-12)
    eff = cm.efficiency(False, cm.DEFAULT_ENGINE)
    dense = cm.decode_step_time(LLAMA3_8B, H100, [2000], eff=eff)
    sparse = cm.decode_step_time(LLAMA3_8B, H100, [2000], sparse=True, eff=eff)
    m = _run(batch_size=1)["metrics"]
    assert m["decode_speedup_24"] == pytest.approx(dense.time_s / sparse.time_s, rel=1e-12)
    assert 1 < m["decode_speedup_24"] < course["decode_speedup_24"]
    # Same bytes per weight (bitmask at 50%), same speed-up.
    assert m["decode_speedup_unstructured"] == pytest.approx(m["decode_speedup_24"], rel=1e-12)


def test_the_decode_gain_fades_as_the_kv_cache_grows():
    r = _run(context_tokens=8192)
    top = _run(context_tokens=8192, ideal=True)  # at peak, with no fixed cost per step to dilute it
    for v in sp.SCHEMES:
        curve = r["speedup_curves"][v]
        assert top["speedup_curves"][v][0] > 1.5 and 1.2 < curve[0] < top["speedup_curves"][v][0]
        assert curve[-1] < 1.1
        assert all(a >= b - 1e-12 for a, b in zip(curve, curve[1:], strict=False))


def test_no_sparse_rate_no_prefill_gain():
    r = _run(gpu="t4")  # Turing: a dense tensor rate, no 2:4 sparsity
    assert r["metrics"]["sparse_tensor_cores"] == 0
    assert any("2:4 saves only bytes" in n for n in r["notes"])


def test_a_gpu_without_a_tensor_rate_is_refused_on_the_gpu_field():
    """No memory-only floor is ever priced: the api refuses a GPU without dense_bf16_tflops."""
    answer = api.run("sparsity", {"gpu": "a10g"})
    assert not answer["ok"]
    (error,) = answer["errors"]
    assert error["field"] == "gpu" and "dense_bf16_tflops" in error["message"]


def test_pruning_by_hand():
    # Row [4, -1, 0.5, -3 | 0.1, 0.2, -0.3, 0.4]: 2:4 keeps 4, -3 and -0.3, 0.4; the global
    # 50% unstructured pruning keeps the four largest: 4, -3, -1 and 0.5.
    w = [[4.0, -1.0, 0.5, -3.0, 0.1, 0.2, -0.3, 0.4]]
    assert sp.prune_24(w) == [[4.0, 0.0, 0.0, -3.0, 0.0, 0.0, -0.3, 0.4]]
    assert sp.prune_unstructured(w, 0.5) == [[4.0, -1.0, 0.5, -3.0, 0.0, 0.0, 0.0, 0.0]]


def _oracle(seed, sparsity):
    """Rebuild the seeded W and X, prune with numpy, and measure what was removed."""
    rng = random.Random(seed)
    w = np.array([[rng.gauss(0.0, 1.0) for _ in range(sp.COLS)] for _ in range(sp.ROWS)])
    x = np.array([[rng.gauss(0.0, 1.0) for _ in range(sp.INPUTS)] for _ in range(sp.COLS)])
    groups = w.reshape(sp.ROWS, -1, 4)
    smallest = np.argsort(np.abs(groups), axis=2)[:, :, :2]
    w24 = groups.copy()
    np.put_along_axis(w24, smallest, 0.0, axis=2)
    w24 = w24.reshape(w.shape)
    flat = w.ravel().copy()
    flat[np.argsort(np.abs(flat))[: round(sparsity * flat.size)]] = 0.0
    wu = flat.reshape(w.shape)
    out = {}
    for name, wp in (("24", w24), ("unstructured", wu)):
        removed = w[wp == 0]
        out[name] = {
            "magnitude_removed": np.abs(removed).sum() / np.abs(w).sum(),
            "energy_removed": (removed**2).sum() / (w**2).sum(),
            "output_rel_error": np.linalg.norm(w @ x - wp @ x) / np.linalg.norm(w @ x),
        }
    assert (w24 == 0).reshape(sp.ROWS, -1, 4).sum(axis=2).tolist() == [[2] * (sp.COLS // 4)] * sp.ROWS
    return out


@pytest.mark.parametrize(("seed", "sparsity"), [(0, 0.5), (4, 0.3), (9, 0.9)])
def test_demo_matches_a_numpy_oracle(seed, sparsity):
    m = _run(seed=seed, sparsity=sparsity)["metrics"]
    for name, values in _oracle(seed, sparsity).items():
        for key, value in values.items():
            assert m[f"demo_{name}_{key}"] == pytest.approx(value, rel=1e-9), (name, key)


def test_unstructured_removes_the_least_at_equal_sparsity():
    # At the same 50%, dropping the globally smallest half minimises removed magnitude and energy;
    # 2:4 must pick two in every group of four, so it removes more and errs more.
    for seed in range(3):
        m = _run(seed=seed)["metrics"]
        assert m["demo_unstructured_magnitude_removed"] <= m["demo_24_magnitude_removed"]
        assert m["demo_unstructured_energy_removed"] <= m["demo_24_energy_removed"]
        assert m["demo_unstructured_output_rel_error"] < m["demo_24_output_rel_error"]


def test_the_demo_chart_speaks_of_energy():
    # (Every chart answers and draws a valid figure: tests/test_simulator_contract.py.)
    assert "energy" in json.loads(api.run_json("sparsity", json.dumps({"view": "demo"})))["summary"]


def test_the_demo_table_holds_its_own_figures_and_names_no_profile():
    """Learner review: the demo's key figures were the speed-ups and its answer said "Times priced
    with": it times nothing. Its table now holds the demo's six scores; the other views keep all."""
    demo = api.run("sparsity", {"view": "demo"})
    assert set(demo["metrics"]) == {f"demo_{s}_{k}" for s in sp.SCHEMES for k in sp.DEMO_KEYS}
    assert "priced_by" not in demo and "priced" not in demo["summary"] and "speed" not in demo["summary"]
    savings = api.run("sparsity", {})
    assert {m["name"] for m in api.schema("sparsity")["metrics"]} <= set(savings["metrics"])
    assert savings["summary"].endswith("Times priced with the vLLM (default settings) profile.")


def test_the_kept_scores_are_the_same_object_for_the_same_arguments_and_agree_with_the_oracle():
    # (A control the demo does not read reuses it: tests/test_results_cache.py.)
    memo = LruCache(sp.MEMO_ENTRIES)
    assert sp.demo_unstructured(2, 0.7, memo.get_or_make) == sp.demo_unstructured(2, 0.7, memo.get_or_make)
    assert sp._kept_base(2, memo.get_or_make) is sp._kept_base(2, memo.get_or_make)
    oracle = _oracle(2, 0.7)
    for name, scores in (
        ("24", sp.demo_24(2, memo.get_or_make)),
        ("unstructured", sp.demo_unstructured(2, 0.7, memo.get_or_make)),
    ):
        assert scores == pytest.approx([oracle[name][k] for k in sp.DEMO_KEYS], rel=1e-9)
    # demo() hands out new dicts: changing one cannot reach the memo.
    d = sp.demo(2, 0.7, memo.get_or_make)
    d["24"]["energy_removed"] = -1.0
    assert sp.demo(2, 0.7, memo.get_or_make)["24"]["energy_removed"] == pytest.approx(
        oracle["24"]["energy_removed"], rel=1e-9
    )


def test_a_compute_bound_batch_1_decode_says_why_and_bytes_read_to_four_digits():
    """Learner review (lesson 04, INT4 on a T4): "decode at batch 1 (compute-bound) gains 1.00x" beside
    weight bytes cut to 84% contradicted the lesson's rule, unexplained; and "0.382812 B" had six decimals."""
    told = api.run("sparsity", {"gpu": "t4", "weight_dtype": "int4"})["summary"]
    assert f"decode at batch 1 (compute-bound: {cm.SMALL_BATCH_COMPUTE})" in told
    assert "stores 0.3828 B per block weight" in told and "0.382812" not in told
    assert "(memory-bound)" in api.run("sparsity", {})["summary"]
