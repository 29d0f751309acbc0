"""Pipeline, expert and data parallelism in the one cost model, against hand computations.

The figures are worked out here from the published shapes (Llama-3.1-70B: hidden 8,192, 80
layers, 64 query and 8 KV heads of 128, MLP 28,672, vocabulary 128,256; DeepSeek-V3: hidden
7,168, 61 layers of which the first 3 dense, 8 of 256 experts per token, MLA latent 512 + 64)
and the H100 SXM datasheet (989.4 dense BF16 TFLOP/s, 3,350 GB/s, NVLink 900 GB/s both ways).
"""

import random

import pytest

from simulators import api
from simulators.core import catalog
from simulators.core import costmodel as cm
from simulators.core import parallel_time as pt
from simulators.engine import EngineSpec, serve
from simulators.engine.steptime import StepCost, attention_keys
from simulators.engine.workload import Request

H100 = catalog.resolve_gpu("h100-sxm")
L70 = catalog.resolve_model("llama-3.1-70b")
DSV3 = catalog.resolve_model("deepseek-v3")
LINK = 450e9  # one direction of NVLink 4, bytes/s

# Llama-3.1-70B by hand: attention q, k, v, o and the gated MLP, per layer, 80 layers.
L70_LINEAR = 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672)
L70_HEAD = 128256 * 8192
L70_NORMS = 80 * 2 * 8192 + 8192
L70_KV_PER_TOKEN = 2 * 80 * 8 * 128 * 2  # K and V, 80 layers, 8 heads of 128, bf16
L70_FLOPS_PER_KEY = 2 * 64 * (128 + 128) * 80


def test_the_catalogue_holds_the_datasheet_figures_used_here():
    assert (H100.peak_tflops("bf16"), H100.hbm_bandwidth_GBps, H100.interconnect_GBps) == (989.4, 3350.0, 900.0)
    assert cm.param_counts(L70).block_linear == L70_LINEAR


def test_a_pipeline_round_of_decode_matches_the_hand_computation():
    # 8 sequences at 1,000 cached tokens on 4 stages: 4 micro-batches of 2, each stage reads its
    # weights once per micro-batch, so the round reads all the weights and a quarter of the KV...
    seqs = [(1, 1000)] * 8
    t = cm.step_time(L70, H100, seqs, eff=cm.IDEAL, pp=4)
    weights = (L70_LINEAR + L70_HEAD + L70_NORMS) * 2
    memory = (weights + L70_KV_PER_TOKEN * 8 * 1001 / 4) / 3.35e12
    flops = 2 * L70_LINEAR * 8 + 2 * L70_HEAD * 8 + L70_FLOPS_PER_KEY * 8 * 1001
    compute = flops / 989.4e12 / 4
    # ... and each micro-batch crosses 3 stage boundaries with hidden_states and residual.
    sends = 3 * 2 * (8 / 4) * 8192 * 2 / LINK
    assert t.memory_s == pytest.approx(memory, rel=1e-9)
    assert t.compute_s == pytest.approx(compute, rel=1e-9)
    assert t.communication_s == pytest.approx(sends, rel=1e-9)


def test_a_pipeline_does_not_speed_up_one_request():
    # One sequence is one micro-batch: the stages take turns (the bubble, 3 of 4 stage-times idle).
    one = cm.step_time(L70, H100, [(1, 2000)], eff=cm.IDEAL)
    four = cm.step_time(L70, H100, [(1, 2000)], eff=cm.IDEAL, pp=4)
    assert pt.micro_batches(1, 4) == 1 and pt.micro_batches(9, 4) == 4  # 3 of 4 stages idle, then none
    assert four.memory_s == pytest.approx(one.memory_s, rel=1e-12)
    assert four.time_s > one.time_s  # the same bytes, plus the sends between stages
    # Tensor parallelism over the same 4 GPUs does split the bytes.
    assert cm.step_time(L70, H100, [(1, 2000)], eff=cm.IDEAL, tp=4).memory_s == pytest.approx(one.memory_s / 4)


def test_a_prompt_in_a_pipeline_round_waits_for_its_own_pass_through_every_stage():
    """A round with decodes splits into micro-batches, and the balanced round divides its parts by
    them; but a prompt is one sequence in one micro-batch, and its first token comes back only after
    that micro-batch has crossed all four stages. The decodes keep the round's pace."""
    spec = EngineSpec(L70, H100, pp=4)
    cost = spec.step_cost()
    follow_up = Request(4, 0.0, 50, 2, after=3)  # sent when request 3's answer is complete
    reqs = [Request(i, 0.0, 100, 400) for i in range(3)] + [Request(3, 0.5, 4000, 2), follow_up]
    rec = {r.id: r for r in serve(reqs, spec).records}
    own_pass = cost.time_s(4000, 1, attention_keys(4000, 0), 4000)
    with_decodes = cost.time_s(4003, 4, attention_keys(4000, 0) + 3 * 201, 4000 + 3 * 201)
    assert with_decodes < own_pass / 2  # what the prompt's first token took before
    assert rec[3].ttft_s >= own_pass
    assert rec[0].tpot_s < own_pass / 10  # the others decode at the pace of the rounds
    assert rec[4].arrival_s == pytest.approx(rec[3].arrival_s + rec[3].e2e_s)


def test_tensor_parallel_all_reduces_match_megatron():
    # Two ring all-reduces per layer of tokens x hidden bf16 values, 2 (n - 1) / n of them per rank.
    t = cm.step_time(L70, H100, [(1, 500)] * 16, eff=cm.IDEAL, tp=4)
    assert t.communication_s == pytest.approx(2 * 80 * 16 * 8192 * 2 * 2 * 3 / 4 / LINK, rel=1e-12)


def test_replicated_kv_is_read_by_every_rank():
    # One more cached token adds its whole MLA latent to every rank's reads under TP 8 ...
    def kv_read(m, tp, c):
        return cm.step_time(m, H100, [(1, c)], tp=tp).bytes

    latent = 61 * (512 + 64) * 2
    assert kv_read(DSV3, 8, 1001) - kv_read(DSV3, 8, 1000) == pytest.approx(latent)
    # ... and with 8 KV heads over 16 ranks, each rank reads one head: 1/8 of a token, not 1/16.
    assert kv_read(L70, 16, 1001) - kv_read(L70, 16, 1000) == pytest.approx(L70_KV_PER_TOKEN / 8)
    assert kv_read(L70, 8, 1001) - kv_read(L70, 8, 1000) == pytest.approx(L70_KV_PER_TOKEN / 8)


def test_expert_parallel_all_to_all_matches_the_hand_computation():
    # DP 8 attention ranks with the experts over 8 GPUs: each rank dispatches its 64 / 8 tokens to
    # 8 experts and gathers them back in each of the 58 MoE layers, 7/8 of it leaving the GPU.
    t = cm.step_time(DSV3, H100, [(1, 100)] * 64, dp=8, ep=True, eff=cm.IDEAL)
    assert t.communication_s == pytest.approx(58 * 2 * 8 * 8 * 7168 * 2 * 7 / 8 / LINK, rel=1e-12)


def test_data_parallel_attention_splits_the_latent_cache_that_tensor_parallel_copies():
    # 64 sequences each one token longer: TP 8 ranks each read all 64 latents more, DP 8 ranks 8.
    latent = 61 * (512 + 64) * 2

    def more(**layout):
        longer = cm.step_time(DSV3, H100, [(1, 32769)] * 64, **layout).bytes
        return longer - cm.step_time(DSV3, H100, [(1, 32768)] * 64, **layout).bytes

    assert more(tp=8) == pytest.approx(64 * latent)
    assert more(dp=8, ep=True) == pytest.approx(64 * latent / 8)


@pytest.mark.parametrize("layout", [{"pp": 2}, {"pp": 4, "tp": 2}, {"dp": 4, "ep": True}, {"dp": 2}])
def test_the_engine_linear_form_equals_step_time_under_every_layout(layout):
    model = DSV3 if "dp" in layout else L70
    cost = StepCost(model, H100, eff=cm.default_efficiency(), **layout)
    rng = random.Random(3)
    for _ in range(30):
        seqs = [(rng.choice([1, 1, 1, rng.randint(1, 600)]), rng.randint(0, 4000)) for _ in range(rng.randint(1, 40))]
        exact = cm.step_time(model, H100, seqs, eff=cm.default_efficiency(), **layout).time_s
        assert cost.batch_time_s(seqs) == pytest.approx(exact, rel=1e-9)


SERVING = ("generation", "batching", "engine", "load_test", "cluster", "reasoning", "compression")
SMALL = {"num_requests": 20}


@pytest.mark.parametrize("name", SERVING)
def test_a_70b_model_is_served_on_2_to_8_gpus(name):
    extra = SMALL if name in ("batching", "load_test", "reasoning", "cluster") else {}
    for layout in ({"tensor_parallel_size": 2}, {"tensor_parallel_size": 8}, {"pipeline_parallel_size": 4}):
        answer = api.run(name, {"model": "llama-3.1-70b", **layout, **extra})
        assert answer["ok"], (layout, answer.get("errors"))
    if name != "compression":  # compression times any layout and notes when it does not fit
        one = api.run(name, {"model": "llama-3.1-70b", **extra})
        assert not one["ok"] and one["errors"][0]["field"] in ("model", "tensor_parallel_size")


@pytest.mark.parametrize("name", SERVING)
def test_layouts_that_do_not_divide_are_field_errors(name):
    # 64 heads do not split over 3 ranks; 16 stages of a small model; a dense model has no experts.
    for layout, field in (
        ({"tensor_parallel_size": 3}, "tensor_parallel_size"),
        ({"pipeline_parallel_size": 16, "model": "qwen3-8b"}, None),
        ({"data_parallel_size": 2}, "data_parallel_size"),
    ):
        fields = {p["name"] for p in api.schema(name)["params"]}
        if not set(layout) - {"model"} <= fields:
            continue
        answer = api.run(name, {"model": "llama-3.1-70b", **layout})
        if field:
            assert not answer["ok"] and answer["errors"][0]["field"] == field, answer.get("errors")
        else:
            assert answer["ok"] or all(e["field"] in fields | {""} for e in answer["errors"])
