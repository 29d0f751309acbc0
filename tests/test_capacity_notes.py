"""Simulators that cost any batch say when it does not fit (simulators/core/capacity.py)."""

import json

import pytest

from simulators import api


def run(name: str, **params: object) -> dict:
    answer = json.loads(api.run_json(name, json.dumps(params), 0))
    assert answer["ok"], answer
    return answer


def most(**params: object) -> int:
    """The largest batch that fits, as the gpu_memory simulator computes it."""
    return run("gpu_memory", **params)["metrics"]["max_batch_at_context"]


@pytest.mark.parametrize(
    ("name", "fit_params"),
    [
        ("quantization", {"weight_dtype": "int4"}),
        ("sparsity", {}),
        ("compression", {}),
    ],
)
def test_a_batch_beyond_memory_is_flagged_and_one_that_fits_is_not(name: str, fit_params: dict) -> None:
    limit = most(context_tokens=2000, **fit_params)
    if name == "compression":  # sized as vLLM accounts for it, per GPU rank (simulators/parallel.py)
        limit = int(run("deployment", max_model_len=2000)["metrics"]["max_concurrency"])
    over = run(name, batch_size=limit + 1)
    assert f"Batch {limit + 1:,} does not fit" in over["summary"]
    assert f"at most {limit:,} sequences" in over["summary"]
    assert f"Batch {limit:,} does not fit" not in run(name, batch_size=limit)["summary"]


def test_the_quantization_crossover_batch_is_flagged_when_it_lies_beyond_memory() -> None:
    answer = run("quantization")
    stops = answer["metrics"]["speedup_stops_paying_batch"]
    limit = most(context_tokens=2000, weight_dtype="int4")
    assert stops > limit  # the running example's crossover lies beyond one H100's memory
    assert f"The crossover batch {stops:,} does not fit" in answer["summary"]
