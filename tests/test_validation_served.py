"""Serving-level validation rows run on the event engine under their own conditions."""

import dataclasses
import random
from pathlib import Path

import pytest

from simulators import api
from simulators.benchmark import served_benchmarks as sb
from simulators.benchmark import validation
from simulators.core import costmodel as cm
from simulators.core import efficiency as ef
from simulators.core.catalog import gpus, models
from simulators.engine.steptime import StepCost
from sitebuild import processes, sims

SERVING = ("offline_output_tokens_per_s", "batch_latency_s", "median_tpot_ms")


def _rows() -> list[dict]:
    return [e for e in validation.measurements() if e["quantity"] in SERVING]


def test_the_committed_runs_are_the_runs_the_engine_makes_now():
    # A build reads docs/validation-runs.json in place of making these runs: made afresh here, a
    # sample of them (the batch and request-rate rows, a second in all) has the committed value
    # (to 1e-12: another machine's libm may differ in a last bit; any change of the code moves more).
    committed = sims.committed_runs(Path(__file__).resolve().parents[1])
    assert len(committed) >= 300, "run: python scripts/validation_table.py"
    sample = [e for e in _rows() if e["arrival"] in ("batch", "rate")]
    for e in sample:
        p, sched = ef.profile(validation.profile_of(e)), validation.schedule(e)
        assert sb.run_args((e, p, sched)) == pytest.approx(
            committed[sims.run_digest(sb.run_key(e, p, sched))], rel=1e-12
        ), e["id"]
    assert len(sample) >= 4


def test_every_serving_row_states_its_conditions():
    for e in _rows():
        assert e["arrival"] in ("offline", "batch", "server", "rate"), e["id"]
        assert e["lengths"] == "fixed" or e["lengths"] in sb.LENGTHS, e["id"]
        assert e.get("lengths_source"), e["id"]
        if e["arrival"] == "batch":
            assert isinstance(e["batch_size"], int), e["id"]
        else:
            assert e["requests"] == "batch" or e["requests"] > 0, e["id"]
        if e["arrival"] == "server":
            assert e["ttft_limit_ms"] > 0 and e["tpot_limit_ms"] > 0, e["id"]
        if e["arrival"] == "rate":
            assert e["request_rate"] > 0, e["id"]


def test_a_serving_row_without_conditions_is_refused():
    e = dict(next(x for x in _rows() if x["arrival"] == "offline"))
    del e["requests"]
    with pytest.raises(ValueError, match="requests"):
        validation.PREDICTIONS[e["quantity"]](e, ef.profile(validation.profile_of(e)))


def test_requests_batch_serves_one_batch_of_the_rows_batch_size():
    # "batch": one static batch of batch_size requests; "fit" resolves to the sequences the KV
    # cache holds at the row's lengths, the same count the row would state as a number.
    e = dict(next(x for x in _rows() if x.get("requests") == "batch"))
    p = ef.profile(validation.profile_of(e))
    n = validation._batch(e, p, e["input_tokens"] + e["output_tokens"])
    assert n > 1
    predict = validation.PREDICTIONS[e["quantity"]]
    assert predict(e, p) == predict(dict(e, requests=n), p)
    assert predict(e, p) != predict(dict(e, requests=n + n // 2), p)  # a half batch more: a tail


def test_the_engines_step_cost_matches_the_profiles_step_time():
    # The engine's linear form equals costmodel.step_time with the row's profile on random mixed
    # batches: the GEMM's small-M curve is a fixed term per pass, the activation traffic between
    # kernels a term per token, as the all-reduces are.
    m, g = models()["llama-3-8b"], gpus()["h100-sxm"]
    for name in ("vllm", "trtllm", "sglang"):
        p = ef.profile(name)
        assert p.activation_io > 0
        cost = StepCost(m, g, eff=p, weight_dtype="fp8", kv_dtype="fp8", tp=1)
        rng = random.Random(1)
        for _ in range(30):
            b = rng.randint(1, 256)
            decode = [(1, rng.randint(1, 4000)) for _ in range(b)]
            want = cm.step_time(m, g, decode, weight_dtype="fp8", kv_dtype="fp8", eff=p).time_s
            assert cost.batch_time_s(decode) == pytest.approx(want, rel=1e-6)
            mixed = decode + [(rng.randint(64, 4096), rng.randint(0, 2000))]
            want = cm.step_time(m, g, mixed, weight_dtype="fp8", kv_dtype="fp8", eff=p).time_s
            assert cost.batch_time_s(mixed) == pytest.approx(want, rel=1e-6)
    # Under TP 4 the layer overhead, the all-reduce latency and its bandwidth share come along.
    m70 = models()["llama-3.1-70b"]
    for name in ("vllm", "sglang"):
        p = ef.profile(name)
        assert p.layer_overhead_us > 0 and p.allreduce_bandwidth < 1
        cost = StepCost(m70, g, eff=p, weight_dtype="bf16", kv_dtype="bf16", tp=4)
        for b in (1, 12, 240):
            decode = [(1, 300 + i) for i in range(b)]
            want = cm.step_time(m70, g, decode, tp=4, eff=p).time_s
            assert cost.batch_time_s(decode) == pytest.approx(want, rel=1e-6)


def test_sharegpt_lengths_keep_the_row_means_after_the_filter():
    e = next(x for x in _rows() if x["lengths"] == "sharegpt")
    drawn = sb.draw_lengths(e, e["requests"])
    mean_in = sum(p for p, _ in drawn) / len(drawn)
    mean_out = sum(o for _, o in drawn) / len(drawn)
    assert mean_in == pytest.approx(e["input_tokens"], rel=0.02)
    assert mean_out == pytest.approx(e["output_tokens"], rel=0.02)
    assert all(4 <= p <= 1024 and o >= 4 and p + o <= 2048 for p, o in drawn)
    # Heavy tailed: the median input is far below the mean.
    assert sorted(p for p, _ in drawn)[len(drawn) // 2] < 0.6 * mean_in


def test_spread_lengths_lower_offline_throughput_than_fixed_mean_lengths():
    # Same means, same server: a spread of lengths drains unevenly and fills the KV cache unevenly.
    e = dict(next(x for x in _rows() if x["lengths"] == "sharegpt"), requests=1500)
    p, sched = ef.profile(validation.profile_of(e)), validation.schedule(e)
    spread = sb.run(e, p, sched)
    fixed = sb.run({**e, "lengths": "fixed"}, p, sched)
    assert spread < fixed


def test_server_rate_meets_its_bounds_and_stays_below_offline():
    e = dict(next(x for x in _rows() if x["arrival"] == "server"), requests=400)
    p, sched = ef.profile(validation.profile_of(e)), validation.schedule(e)
    server = sb.run(e, p, sched)
    offline = sb.run({**e, "arrival": "offline"}, p, sched)
    assert 0 < server < offline
    # A TPOT bound below any step time: no rate meets it.
    assert sb.run({**e, "tpot_limit_ms": 0.5}, p, sched) == 0.0


def test_a_rate_row_reads_the_median_tpot_which_for_lone_requests_is_the_decode_step():
    """Poisson arrivals 100 s apart on average: each request runs alone, so its TPOT is the mean
    of its 10 decode steps at batch 1 (contexts 101 to 110), from efficiency.step_time (every step
    scheduled: the row's own multi-step runs would spread the step overhead, test_engine_multistep.py)."""
    e = dict(next(x for x in _rows() if x["arrival"] == "rate"))
    e.update(lengths="fixed", input_tokens=100, output_tokens=11, requests=3, request_rate=0.01, num_scheduler_steps=1)
    p, sched = ef.profile(validation.profile_of(e)), validation.schedule(e)
    m, g = models()[e["model"]], gpus()[e["gpu"]]
    kw = {"weight_dtype": e["weight_dtype"], "kv_dtype": e["kv_dtype"], "tp": e["tp"]}
    steps = [cm.step_time(m, g, [(1, 100 + k)], **kw, eff=p).time_s for k in range(10)]
    assert sb.run(e, p, sched) == pytest.approx(sum(steps) / 10, rel=1e-3)
    assert validation.PREDICTIONS["median_tpot_ms"](e, p) == pytest.approx(1e3 * sum(steps) / 10, rel=1e-3)
    with pytest.raises(ValueError, match="arrival must be"):
        sb.run({**e, "arrival": "sometimes"}, p, sched)


def test_a_fused_layers_row_pays_no_layer_overhead_and_others_pay_layers_times_it():
    """gpt-fast compiles its decode step: the torchao rows skip vLLM's per-layer time. Without the
    flag, the batch-1 decode of Llama-3-8B (32 layers) takes 32 x layer_overhead_us longer."""
    e = next(x for x in validation.measurements() if x["id"] == "torchao-llama3-8b-bf16-a100")
    assert e["fused_layers"] and "torch.compile" in e["fused_layers_source"]
    p = ef.profile("vllm")
    rate = validation.PREDICTIONS[e["quantity"]]
    fused = rate(e, p)
    assert fused == rate(e, dataclasses.replace(p, layer_overhead_us=0.0))
    unfused = rate({**e, "fused_layers": False}, p)
    assert 1 / unfused - 1 / fused == pytest.approx(32 * p.layer_overhead_us * 1e-6, rel=1e-9)


def test_runs_made_ahead_in_other_processes_are_the_runs_made_here():
    # run_ahead lists the runs a computation asks for (each answered NaN, nothing kept), has the
    # build's map make them in other processes (sitebuild/processes.py) and keeps them: the real call
    # then finds the same values it would make here. Without a map nothing runs ahead.
    batch = [e for e in _rows() if e["arrival"] == "batch"][:3]
    profiles = [ef.profile(validation.profile_of(e)) for e in batch]

    def ask() -> list[float]:
        return [sb.run(e, p, validation.schedule(e)) for e, p in zip(batch, profiles, strict=True)]

    # a build made in this process may have set a map and kept runs
    kept, before, lookup = sb.known_runs(), sb.run_many, sb.kept
    try:
        api.make_runs_with(None)
        sb._RUNS.clear()
        here = ask()
        sb._RUNS.clear()
        sb.run_ahead(ask)
        assert sb.known_runs() == {}  # no map: nothing made ahead, nothing kept from the listing
        api.make_runs_with(processes.run_many)
        sb.run_ahead(ask)
        ahead = sb.known_runs()
        assert len(ahead) == len(batch) and not any(v != v for v in ahead.values())  # no NaN kept
        assert ask() == here
    finally:
        api.make_runs_with(before, lookup)
        sb._RUNS.clear()
        sb._RUNS.update(kept)
