"""No prediction beats the hardware (issue 29, item 3): for every GPU the catalogue prices, every
weight format and every engine profile, a time a simulator reports is at least the same time at
100% of the GPU's peak bandwidth and FLOPs with no overhead (`ideal=True`), the physical floor.
The ceiling is computed by the same simulator, so the test holds each engine's factors to at most
1.0 and every overhead to at least zero, wherever they enter."""

import itertools
import json

import pytest

from simulators import api
from simulators.core import catalog, efficiency
from simulators.core import costmodel as cm
from simulators.params import engine_choices

ENGINES = [e for e, _ in engine_choices()]
GPUS = [g for g, gpu in catalog.gpus().items() if not cm.missing_compute_figure(gpu)]
FORMATS = ["bf16", "fp8", "int8", "int4", "q4_0"]
TIMES = {
    "generation": ("ttft_s", "itl_s", "e2e_s"),
    "compression": ("prefill_s", "decode_step_s"),
}


def _metrics(name, **params):
    answer = json.loads(api.run_json(name, json.dumps(params)))
    return answer["metrics"] if answer["ok"] else None  # a format a GPU cannot hold is refused, not priced


@pytest.mark.parametrize("gpu", GPUS)
def test_generation_never_beats_the_ideal_gpu(gpu):
    for fmt, engine in itertools.product(FORMATS, ENGINES):
        got = _metrics("generation", gpu=gpu, weight_dtype=fmt, engine=engine)
        floor = _metrics("generation", gpu=gpu, weight_dtype=fmt, engine=engine, ideal=True)
        if got is None:
            continue
        for key in TIMES["generation"]:
            assert got[key] >= floor[key] * (1 - 1e-12), (gpu, fmt, engine, key)


@pytest.mark.parametrize("gpu", GPUS)
def test_compression_never_beats_the_ideal_gpu(gpu):
    for scheme, engine in itertools.product(["w4a16", "w8a8-fp8", "w8a8-int8"], ENGINES):
        got = _metrics("compression", gpu=gpu, scheme=scheme, engine=engine)
        floor = _metrics("compression", gpu=gpu, scheme=scheme, ideal=True)
        if got is None or floor is None:
            continue
        for key in TIMES["compression"]:
            assert got[key] >= floor[key] * (1 - 1e-12), (gpu, scheme, engine, key)


def test_the_searched_gpus_all_have_a_compute_roof():
    """The GPUs a compute-bound answer may use are the ones above; the others are named as skipped."""
    skipped = {g for g in catalog.gpus() if g not in GPUS}
    assert skipped == {g for g, gpu in catalog.gpus().items() if gpu.peak_tflops("bf16") is None}
    assert "rtx-3090" in GPUS  # the GA102 whitepaper's 71 dense BF16 TFLOPS (review B-02)


def _timing_simulators(*also):
    need = {"engine", "gpu", *also}
    return [name for name, s in api.schemas().items() if need <= {p["name"] for p in s["params"]}]


def test_a_time_on_a_gpu_without_a_tensor_rate_is_refused_with_the_figure_named():
    """Issue 29, item 3: a GPU whose catalogue entry (or a reader's custom GPU) lacks the tensor
    rate gets a field error naming it from every simulator that prices a time; the memory
    simulators still answer, as memory needs no rate."""
    timing = _timing_simulators()
    assert {"generation", "engine", "load_test", "slo", "quantization"} <= set(timing)
    custom = {"name": "No-rate GPU", "memory_GiB": 80, "hbm_bandwidth_GBps": 3000}
    for name in timing:
        # `published` takes catalogue GPUs only (it predicts rows that name one): a custom GPU is
        # refused there as not in the catalogue, still on the gpu field.
        for gpu in ("a10g", custom) if name != "published" else ("a10g",):
            answer = api.run(name, {"gpu": gpu})
            assert not answer["ok"], (name, gpu)
            assert answer["errors"][0]["field"] == "gpu" and "dense_bf16_tflops" in answer["errors"][0]["message"]
    refused = api.run("published", {"gpu": custom})
    assert not refused["ok"] and refused["errors"][0]["field"] == "gpu"
    for name in ("kv_cache", "gpu_memory", "deployment"):
        assert api.run(name, {"gpu": "a10g"})["ok"], name


def test_cuda_engines_are_refused_on_apple_silicon_and_llamacpp_is_priced_with_metal():
    """Issue 29, items 2-3: vLLM (the default engine), SGLang and TensorRT-LLM do not run on an Apple
    GPU, so every timing simulator answers a field error on `engine` saying why, even for the ideal
    ceiling; llama.cpp there is priced with its Metal profile, and the answer names it."""
    with_ideal = set(_timing_simulators("ideal"))
    for name in _timing_simulators():
        for engine in ("vllm", "sglang", "trtllm"):
            for ideal in (False, True) if name in with_ideal else (False,):
                answer = api.run(name, {"gpu": "m2-ultra", "engine": engine, **({"ideal": True} if ideal else {})})
                assert not answer["ok"], (name, engine)
                error = answer["errors"][0]
                assert error["field"] == "engine" and "CUDA or ROCm" in error["message"], (name, engine, error)
    metal = efficiency.profile("llamacpp-metal").name
    for name in ("generation", "slo", "quantization", "compression"):
        answer = api.run(name, {"gpu": "m2-ultra", "engine": "llamacpp", "model": "llama-3-8b"})
        assert answer["ok"], (name, answer.get("errors"))
        assert answer["priced_by"] == f"the {metal} profile" and answer["summary"].endswith(f"{metal} profile.")
    on_cuda = api.run("generation", {"gpu": "h100-sxm", "engine": "llamacpp"})
    assert on_cuda["priced_by"] == f"the {efficiency.profile('llamacpp').name} profile"
    for name in ("kv_cache", "gpu_memory", "deployment"):
        assert api.run(name, {"gpu": "m2-ultra"})["ok"], name
