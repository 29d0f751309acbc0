"""One speed model: every simulator that shows a time prices it with the same factors (the default
engine profile, vLLM), so the same request gets the same time on every page (issue 29; review
2026-12-03, pattern 1: a batch-32 median TTFT below the batch-1 prefill, chunked prefill that
looked faster than one pass)."""

import pytest

from simulators import api
from simulators import costmodel as cm

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
    """The old course pair (0.70 / 0.70, no overhead) is gone: the default is the vLLM profile's."""
    assert cm.default_efficiency() == cm.efficiency(False, cm.DEFAULT_ENGINE)
    assert cm.default_efficiency().overhead_s > 0


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
    from simulators import efficiency

    vllm = api.run(name, params)
    sglang = api.run(name, {**params, "engine": "sglang"})
    assert vllm["metrics"] != sglang["metrics"]
    assert vllm["priced_by"] == f"the {efficiency.profile('vllm').name} profile"
    assert sglang["summary"].endswith(f"Times priced with the {efficiency.profile('sglang').name} profile.")
