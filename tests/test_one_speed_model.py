"""One speed model: every simulator that shows a time prices it with the same factors (the default
engine profile, vLLM), so the same request gets the same time on every page (issue 29; review
2026-12-03, pattern 1: a batch-32 median TTFT below the batch-1 prefill, chunked prefill that
looked faster than one pass)."""

import pytest

from simulators import api
from simulators.core import costmodel as cm

ALONE = {"num_background": 0, "prefix_share": 0.0, "max_num_batched_tokens": 8192}


def test_one_request_alone_is_priced_alike_by_generation_the_engine_and_slo():
    gen = api.evaluate("generation")["metrics"]  # the running example: Llama-3-8B, H100, 2,000 / 200
    eng = api.evaluate("engine", prompt_tokens=2000, output_tokens=200, **ALONE)["metrics"]
    slo = api.evaluate("slo", batch_size=1, jitter_sigma=0.0, tail_probability=0.0)["metrics"]
    assert eng["ttft_s"] == pytest.approx(gen["ttft_s"], rel=0.03)
    assert eng["e2e_s"] == pytest.approx(gen["e2e_s"], rel=0.03)
    assert slo["ttft_p50_s"] == pytest.approx(gen["ttft_s"], rel=0.03)
    assert slo["tpot_p50_s"] == pytest.approx(gen["itl_s"], rel=0.03)


@pytest.mark.parametrize("gpu", ["h100-sxm", "a100-sxm-80gb", "l40s", "rtx-4090"])
def test_chunking_a_compute_bound_prompt_never_makes_its_first_token_earlier(gpu):
    one_pass = api.evaluate("generation", gpu=gpu, prompt_tokens=4000)["metrics"]["ttft_s"]
    ttfts = [
        api.evaluate("engine", gpu=gpu, prompt_tokens=4000, output_tokens=20, **{**ALONE, "max_num_batched_tokens": b})[
            "metrics"
        ]["ttft_s"]
        for b in (8192, 2048, 512, 128)
    ]
    assert ttfts[0] == pytest.approx(one_pass, rel=0.03)
    assert ttfts[0] >= one_pass * 0.999  # the engine never beats one pass of the same model
    assert all(a <= b * (1 + 1e-9) for a, b in zip(ttfts, ttfts[1:], strict=False)), ttfts


def test_no_second_set_of_factors():
    """The old course pair (0.70 / 0.70, no overhead) and the profile's linear form are gone: the
    default is the vLLM profile itself, small-M curve and fixed costs included."""
    p = cm.default_efficiency()
    assert p is cm.efficiency(False, cm.DEFAULT_ENGINE)
    assert p.gemm_m_half > 0 and p.step_overhead_us > 0 and p.layer_overhead_us > 0 and p.activation_io > 0


# Attributes only the step-time function (core/roofline.py) and the module that loads the profiles
# may read: a time priced anywhere else would be a second speed model.
FACTORS = {
    "gemm_bf16", "gemm_fp8", "gemm_int8", "gemm_m_half", "w4a16", "gemm_efficiency", "step_overhead_us",
    "layer_overhead_us", "allreduce_latency_us", "allreduce_bandwidth", "activation_io",
    "matvec_bytes_per_sm_cycle", "bandwidth",
}  # fmt: skip


def test_no_module_but_the_cost_model_reads_efficiency_factors():
    import ast
    import pathlib

    root = pathlib.Path(cm.__file__).parent.parent  # the package
    readers = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in FACTORS:
                readers.add(path.relative_to(root).as_posix())
    assert readers == {"core/roofline.py", "core/efficiency.py"}


def _random_batches(rng, n):
    for _ in range(n):
        size = rng.choice([1, 2, 3, 8, 9, 12, 16, 64, 256])
        yield [(rng.choice([1, 1, 1, 2, rng.randint(1, 4000)]), rng.randint(0, 8000)) for _ in range(size)]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm", "llamacpp"])
@pytest.mark.parametrize(
    ("model", "gpu", "kw"),
    [
        ("llama-3-8b", "h100-sxm", {}),
        ("llama-3-8b", "h100-sxm", {"weight_dtype": "fp8", "kv_dtype": "fp8"}),
        ("llama-3-8b", "rtx-4090", {"weight_dtype": "q4_0"}),
        ("llama-3-8b", "a100-sxm-80gb", {"weight_dtype": "int4"}),
        ("llama-3.1-70b", "h100-sxm", {"tp": 4}),
        ("llama-3.1-70b", "h100-sxm", {"tp": 2, "pp": 2}),
        ("mixtral-8x7b", "h100-sxm", {"tp": 2}),
        ("mixtral-8x7b", "h100-sxm", {"dp": 2, "ep": True}),
    ],
)
def test_the_engines_linear_form_stays_within_two_percent_of_the_one_function(engine, model, gpu, kw):
    """The engine prices a step from coefficients read off costmodel.step_time (engine/steptime.py):
    on random mixed batches (1 to 256 sequences, prefill chunks to 4,000 tokens, contexts to 8,000)
    its time stays within 2% of the function's, for every engine, format and layout."""
    import random

    from simulators.core.catalog import gpus, models
    from simulators.engine.steptime import StepCost

    m, g, eff = models()[model], gpus()[gpu], cm.efficiency(False, engine)
    cost = StepCost(m, g, eff=eff, **kw)
    worst = 0.0
    for seqs in _random_batches(random.Random(f"{engine}{model}{kw}"), 60):
        exact = cm.step_time(m, g, seqs, eff=eff, **kw).time_s
        worst = max(worst, abs(cost.batch_time_s(seqs) / exact - 1))
    assert worst <= 0.02


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("load_test", {"num_requests": 200}),
        ("engine", {"num_background": 0}),
        ("slo", {}),
        ("batching", {}),
        ("generation", {}),
    ],
)
def test_the_engine_is_a_choice_and_every_answer_names_the_profile_that_priced_it(name, params):
    """Issue 29, item 2: every timing simulator takes the engine; SGLang's profile (a smaller step
    overhead) gives other times than vLLM's, and the answer says which profile priced them."""
    from simulators.core import efficiency

    vllm = api.run(name, params)
    sglang = api.run(name, {**params, "engine": "sglang"})
    assert vllm["metrics"] != sglang["metrics"]
    assert vllm["priced_by"] == f"the {efficiency.profile('vllm').name} profile"
    assert sglang["summary"].endswith(f"Times priced with the {efficiency.profile('sglang').name} profile.")
