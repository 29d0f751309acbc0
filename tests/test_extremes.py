"""Every simulator at its extremes, two fields at a time, with unusual models and GPUs.

Each field is drawn from its extremes (min and max of a number, first and last choice, both
booleans); the model from a catalogue entry that fits nowhere small, a real config.json and a
custom config; the GPU from one with no link figure and a custom one. The answer must be a result
or field errors naming real fields, never an exception.
"""

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulators import api

CONFIG = json.loads((Path(__file__).parent / "data" / "configs" / "gpt-oss-20b.json").read_text())
MODELS = ["llama-3.1-405b", "deepseek-v3", CONFIG, {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                                                      "vocab_size": 100, "max_position_embeddings": 128}]  # fmt: skip
GPUS = ["m2-ultra", "t4", {"name": "Tiny GPU", "memory_GiB": 1, "hbm_bandwidth_GBps": 50}]
# The engine-driven simulators are slow; a few examples each keep the suite within its budget.
EXAMPLES = 12


def extremes(p):
    if p["name"] == "model" and p.get("custom"):
        return MODELS
    if p["name"] == "gpu" and p.get("custom"):
        return GPUS
    if p["type"] == "choice":
        values = [c["value"] for c in p["choices"]]
        return [values[0], values[-1]]
    if p["type"] == "bool":
        return [False, True]
    if p["type"] in ("int", "float") and p["min"] is not None and p["max"] is not None:
        return [p["min"], p["max"]]
    return [p["default"]]


@pytest.mark.parametrize("name", sorted(api.SIMULATORS))
def test_two_fields_at_their_extremes_give_an_answer_or_field_errors(name):
    fields = [p for p in api.schema(name)["params"] if p["type"] != "text"]
    names = {p["name"] for p in fields}

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data):
        first, second = data.draw(
            st.lists(st.sampled_from(fields), min_size=2, max_size=2, unique_by=lambda p: p["name"])
        )
        params = {p["name"]: data.draw(st.sampled_from(extremes(p))) for p in (first, second)}
        answer = api.run(name, params)
        if not answer["ok"]:
            assert answer["errors"] and all(e["field"] in names | {""} for e in answer["errors"]), answer["errors"]

    check()


PARALLEL = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "enable_expert_parallel")


@pytest.mark.parametrize(
    "name", sorted(n for n in api.SIMULATORS if {p["name"] for p in api.schema(n)["params"]} & set(PARALLEL))
)
def test_parallel_layouts_at_their_extremes_give_an_answer_or_field_errors(name):
    # Every parallel field at its extremes, with another parallel field, on unusual models and GPUs:
    # layouts that do not divide the heads, exceed the layers, give a dense model experts or need a link.
    fields = {p["name"]: p for p in api.schema(name)["params"]}
    layout = [fields[f] for f in PARALLEL if f in fields]
    names = set(fields)

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data):
        chosen = data.draw(st.lists(st.sampled_from(layout), min_size=1, max_size=2, unique_by=lambda p: p["name"]))
        params = {p["name"]: data.draw(st.sampled_from(extremes(p))) for p in chosen}
        params["model"] = data.draw(st.sampled_from(MODELS))
        params["gpu"] = data.draw(st.sampled_from(GPUS + ["h100-sxm"]))
        answer = api.run(name, params)
        if not answer["ok"]:
            assert answer["errors"] and all(e["field"] in names | {""} for e in answer["errors"]), answer["errors"]

    check()
