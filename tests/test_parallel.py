"""Multi-GPU layouts on a GPU without a link figure: a field error in every simulator, never a crash."""

import pytest

from simulators import api

GPU_COUNT_FIELDS = ("num_gpus", "tensor_parallel_size")


def simulators_with_a_gpu_count():
    for name in api.SIMULATORS:
        fields = {p["name"] for p in api.schema(name)["params"]}
        for field in GPU_COUNT_FIELDS:
            if field in fields and "gpu" in fields:
                yield name, field


@pytest.mark.parametrize(("name", "field"), list(simulators_with_a_gpu_count()))
def test_two_m2_ultras_are_an_answer_or_a_field_error(name, field):
    # The M2 Ultra publishes no GPU-to-GPU or host link: splitting a model over two cannot be timed.
    answer = api.run(name, {"gpu": "m2-ultra", field: 2})
    assert answer["ok"] or answer["errors"][0]["field"] == field


def test_compression_and_engine_name_the_field():
    for name in ("compression", "engine"):
        answer = api.run(name, {"gpu": "m2-ultra", "tensor_parallel_size": 2})
        assert not answer["ok"] and answer["errors"][0]["field"] == "tensor_parallel_size"
        assert "link" in answer["errors"][0]["message"]
