"""The serving engine's core: step times, strides, event logs, invariants and queueing closed forms."""

import random

import pytest

from simulators.core import costmodel as cm
from simulators.core.catalog import resolve_gpu, resolve_model
from simulators.engine import EngineSpec, SchedulerConfig, serve, summarize, workload
from simulators.engine.metrics import RequestRecord
from simulators.engine.steptime import StepCost, stride_time_s
from simulators.engine.workload import Request

M, GPU = resolve_model("llama-3-8b"), resolve_gpu("h100-sxm")


def fixed(n, prompt, output, times):
    return [Request(i, times[i], prompt, output, ((i + 1, prompt),)) for i in range(n)]


@pytest.mark.parametrize("model", ["llama-3-8b", "mixtral-8x7b", "mistral-7b", "deepseek-v3", "gpt2-small"])
@pytest.mark.parametrize("tp", [1, 2])
def test_linear_step_cost_equals_step_time(model, tp):
    m = resolve_model(model)
    sc = StepCost(m, GPU, tp=tp)
    rng = random.Random(0)
    for _ in range(30):
        seqs = [(rng.choice([1, 1, rng.randint(1, 3000)]), rng.randint(0, 9000)) for _ in range(rng.randint(1, 30))]
        assert sc.batch_time_s(seqs) == pytest.approx(cm.step_time(m, GPU, seqs, tp=tp).time_s, rel=1e-10)


def test_stride_sum_equals_step_by_step_sum_across_the_roofline_crossing():
    sc = StepCost(M, GPU)
    # 64 sequences at 3,000 tokens start memory-bound... compute grows faster with context
    ctx = [3000 + 37 * i for i in range(64)]
    total = sum(sc.batch_time_s([(1, c + k) for c in ctx]) for k in range(500))
    c0, c1, m0, m1, u = sc.decode_stride(64, sum(ctx), sum(ctx), 64)
    assert stride_time_s(c0, c1, m0, m1, u, 500) == pytest.approx(total, rel=1e-12)
    # A synthetic crossing: compute starts below memory and overtakes it at k = 10.
    steps = [max(1.0 + 0.2 * k, 3.0 + 0.0 * k) for k in range(25)]
    assert stride_time_s(1.0, 0.2, 3.0, 0.0, 0.0, 25) == pytest.approx(sum(steps))


CONFIGS = {
    "default": {},
    "tight KV, preemptions": {"num_blocks": 600},
    "prefix hash": {"prefix": "hash"},
    "prefix radix": {"prefix": "radix"},
    "contiguous": {"layout": "contiguous", "num_blocks": 3000},
    "no chunked prefill": {"sched": SchedulerConfig(chunked_prefill=False)},
    "static": {"sched": SchedulerConfig(batching="static", max_num_seqs=16)},
    "speculative": {"sched": SchedulerConfig(num_speculative_tokens=4)},
    "sliding window": {"model": "mistral-7b", "sched": SchedulerConfig(max_model_len=32768)},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_stride_gives_the_same_timings_as_single_steps(name):
    kw = dict(CONFIGS[name])
    model = resolve_model(kw.pop("model", "llama-3-8b"))
    rng = random.Random(2)
    lengths = workload.azure_lengths() if name != "sliding window" else workload.Lengths("fixed", 3000, 2000)
    reqs = workload.build(
        rng,
        120,
        lengths,
        workload.arrival_times(rng, 120, "poisson", 25),
        sharing="multi_turn" if "prefix" in name else "none",
    ).requests
    spec = EngineSpec(model, GPU, **kw)
    a, b = serve(reqs, spec), serve(reqs, spec, single_step=True)
    assert [r.id for r in a.records] == [r.id for r in b.records]
    for x, y in zip(a.records, b.records, strict=True):
        assert x.ttft_s == pytest.approx(y.ttft_s, rel=1e-9, abs=1e-12)
        assert x.e2e_s == pytest.approx(y.e2e_s, rel=1e-9, abs=1e-12)
        assert x.num_preemptions == y.num_preemptions
    assert a.events < b.events  # the point of striding


@pytest.mark.parametrize("name", CONFIGS)
def test_invariants_blocks_tokens_and_completion(name):
    kw = dict(CONFIGS[name])
    model = resolve_model(kw.pop("model", "llama-3-8b"))
    rng = random.Random(5)
    reqs = workload.build(
        rng, 150, workload.azure_lengths(), workload.arrival_times(rng, 150, "poisson", 30), sharing="system"
    ).requests
    spec = EngineSpec(model, GPU, **kw)
    served = serve(reqs, spec)
    rep = served.replicas[0]
    kv = rep.kv
    # Every request finishes or is reported dropped; each finished one produced all its tokens.
    assert len(served.records) + len(served.dropped) == len(reqs)
    by_id = {r.id: r for r in reqs}
    assert all(r.output_tokens == by_id[r.id].output_tokens for r in served.records)
    # KV use never above capacity; afterwards every block is free or cached-and-unreferenced.
    assert all(0 <= used <= kv.num_blocks for _, _, _, used, _, _ in rep.series)
    assert kv.num_available() == kv.num_blocks
    assert all(ref_cnt == 0 for ref_cnt in kv.cached.values())
    assert rep.decode.num_seqs == 0 and rep.decode.sum_context == 0 and rep.prefill_held == 0 and not rep.running
    # Timestamps are ordered for every request.
    for r in served.records:
        assert 0 <= r.queue_s <= r.ttft_s <= r.e2e_s


def test_event_log_of_two_requests_is_exact():
    # Two requests of 32 prompt tokens and 3 output tokens; the second arrives mid-decode.
    sc = StepCost(M, GPU)
    prefill = sc.batch_time_s([(32, 0)])
    reqs = [Request(0, 0.0, 32, 3, ((1, 32),)), Request(1, prefill + 1e-6, 32, 3, ((2, 32),))]
    served = serve(reqs, EngineSpec(M, GPU), keep_log=True)
    t1 = prefill  # request 0's prefill gives its first token
    # Request 1 arrives during request 0's first decode step (context 32), which ends at t2;
    # then one mixed step: request 0 decodes at context 33 while request 1 prefills.
    t2 = t1 + sc.batch_time_s([(1, 32)])
    t3 = t2 + sc.batch_time_s([(1, 33), (32, 0)])  # request 0 done (3 tokens); request 1's first
    t4 = t3 + sc.batch_time_s([(1, 32)])
    t5 = t4 + sc.batch_time_s([(1, 33)])
    expected = [
        (0.0, "arrive", 0),
        (0.0, "admit", 0),
        (0.0, "chunk", 0),
        (t1, "first_token", 0),
        (prefill + 1e-6, "arrive", 1),
        (t2, "admit", 1),
        (t2, "chunk", 1),
        (t3, "first_token", 1),
        (t3, "finish", 0),
        (t5, "finish", 1),
    ]
    got = [(t, what, rid) for t, _, what, rid, _ in served.log]
    assert [g[1:] for g in got] == [e[1:] for e in expected]
    assert [g[0] for g in got] == pytest.approx([round(e[0], 9) for e in expected], abs=2e-9)


def test_single_slot_server_matches_md1_waiting_time():
    # Batch of one, identical requests: deterministic service D; Poisson arrivals at rho = 0.7.
    prompt, output = 200, 20
    one = serve(fixed(1, prompt, output, [0.0]), EngineSpec(M, GPU, SchedulerConfig(max_num_seqs=1)))
    d = one.records[0].e2e_s
    rho = 0.7
    rng = random.Random(11)
    n = 20000
    times = workload.arrival_times(rng, n, "poisson", rho / d)
    served = serve(fixed(n, prompt, output, times), EngineSpec(M, GPU, SchedulerConfig(max_num_seqs=1)))
    assert all(r.e2e_s - r.queue_s == pytest.approx(d) for r in served.records)
    wq = sum(r.queue_s for r in served.records) / n
    mu = 1 / d
    assert wq == pytest.approx(rho / (2 * mu * (1 - rho)), rel=0.06)


def littles_law(recs: list[RequestRecord], t1: float, t2: float) -> tuple[float, float]:
    """Both sides of L = lambda W over the window [t1, t2]: (L measured, lambda x W).

    L is the time-average of the number of requests in the system inside the window; lambda
    the arrivals inside it per second; W the mean time in system of those arrivals.
    """
    changes = sorted([(r.arrival_s, 1) for r in recs] + [(r.arrival_s + r.e2e_s, -1) for r in recs])
    n, area, prev = 0, 0.0, t1
    for t, d in changes:
        if t > t1:
            area += n * (min(t, t2) - prev)
            prev = min(t, t2)
        if t >= t2:
            break
        n += d
    inside = [r for r in recs if t1 <= r.arrival_s < t2]
    if not inside:
        return 0.0, 0.0
    lam = len(inside) / (t2 - t1)
    return area / (t2 - t1), lam * sum(r.e2e_s for r in inside) / len(inside)


def test_littles_law_on_a_stable_open_loop_run():
    rng = random.Random(3)
    n = 3000
    reqs = workload.build(rng, n, workload.azure_lengths(), workload.arrival_times(rng, n, "poisson", 15)).requests
    recs = serve(reqs, EngineSpec(M, GPU)).records
    t_end = max(r.arrival_s for r in recs)
    measured, predicted = littles_law(recs, 0.2 * t_end, 0.8 * t_end)
    assert measured == pytest.approx(predicted, rel=0.05)


def test_goodput_does_not_fall_as_load_rises_below_the_knee():
    goodputs = []
    for rate in (2, 4, 8, 12):
        rng = random.Random(4)
        reqs = workload.build(
            rng, 400, workload.azure_lengths(), workload.arrival_times(rng, 400, "poisson", rate)
        ).requests
        goodputs.append(summarize(serve(reqs, EngineSpec(M, GPU)).records, warmup=0.1, cooldown=0.1)["goodput_per_s"])
    assert goodputs == sorted(goodputs)


def test_a_run_without_its_series_is_the_same_run():
    rng = random.Random(4)
    reqs = workload.build(
        rng, 200, workload.azure_lengths(), workload.arrival_times(rng, 200, "poisson", 40), sharing="system"
    ).requests
    spec = EngineSpec(M, GPU, num_blocks=900, prefix="hash")  # tight: preemptions and evictions too
    kept, lean = (
        serve(reqs, spec, num_replicas=2, router="prefix"),
        serve(reqs, spec, num_replicas=2, router="prefix", keep_series=False),
    )
    assert kept.records == lean.records and kept.events == lean.events
    counters = ("num_preemptions", "num_steps", "num_strides", "prefill_tokens", "hit_tokens", "busy_s")
    for a, b in zip(kept.replicas, lean.replicas, strict=True):
        assert [getattr(a, c) for c in counters] == [getattr(b, c) for c in counters]
        assert a.kv.num_evictions == b.kv.num_evictions
        assert len(a.series) > 100 and b.series == []
    assert sum(r.num_preemptions for r in kept.replicas) > 0


def test_a_run_shown_as_it_goes_is_the_same_run():
    """serve_steps with `every` yields the finished ones each time another `every` have finished
    (never at the end) and returns exactly serve()'s run: showing it changes nothing."""
    from simulators.engine.cluster import serve_steps

    rng = random.Random(5)
    reqs = workload.build(
        rng, 200, workload.azure_lengths(), workload.arrival_times(rng, 200, "poisson", 40), sharing="system"
    ).requests
    spec = EngineSpec(M, GPU, num_blocks=900, prefix="hash")
    steps, seen = serve_steps(reqs, spec, num_replicas=2, router="prefix", every=30), []
    while True:
        try:
            done, dropped, replicas = next(steps)
        except StopIteration as end:
            shown = end.value
            break
        seen.append(len(done))
    assert seen and all(k < 200 for k in seen)
    assert [k // 30 for k in seen] == list(range(1, len(seen) + 1))  # one yield per 30 more finished
    assert 200 - len(seen) * 30 <= 30 + len(shown.dropped)
    plain = serve(reqs, spec, num_replicas=2, router="prefix")
    assert shown.records == plain.records and shown.events == plain.events


def test_an_arrival_comes_before_a_step_end_at_the_same_time():
    spec = EngineSpec(M, GPU)
    first = [Request(0, 0.0, 500, 20, ((1, 500),))]
    end_of_prefill = serve(first, spec).records[0].ttft_s  # the step end, to the last bit
    reqs = [*first, Request(1, end_of_prefill, 300, 20, ((2, 300),))]
    served = serve(reqs, spec, keep_log=True)
    at_tie = [what for t, _, what, _, _ in served.log if t == round(end_of_prefill, 9)]
    assert at_tie[:2] == ["arrive", "first_token"]  # the arrival first: the step that ends sees it


def test_a_spec_makes_its_step_cost_once_and_a_changed_spec_its_own():
    import dataclasses

    spec = EngineSpec(M, GPU)
    assert spec.step_cost() is spec.step_cost()
    two = dataclasses.replace(spec, tp=2)
    assert two.step_cost() is not spec.step_cost() and two.step_cost().kw["tp"] == 2
    assert two == EngineSpec(M, GPU, tp=2)  # the kept cost is not a field: equality is unchanged


def test_a_spec_that_differs_in_blocks_only_adopts_a_kept_step_cost_and_a_different_one_is_refused():
    first = EngineSpec(M, GPU, tp=2, num_blocks=1000)
    other = EngineSpec(M, GPU, tp=2, num_blocks=2000, sched=SchedulerConfig(max_num_seqs=8))
    other.adopt_step_cost(first)
    assert other.step_cost() is first.step_cost()
    fresh = EngineSpec(M, GPU, tp=2, num_blocks=2000).step_cost()
    assert other.step_cost().batch_time_s([(300, 20), (1, 500)]) == fresh.batch_time_s([(300, 20), (1, 500)])
    with pytest.raises(ValueError, match="different step costs"):
        EngineSpec(M, GPU, tp=4).adopt_step_cost(first)


@pytest.mark.parametrize("pp", [1, 2, 4])
def test_the_mean_prefill_compute_in_closed_form_equals_the_mean_of_single_prefills(pp):
    from simulators.engine.steptime import attention_keys

    sc = StepCost(M, GPU, pp=pp)
    draw = random.Random(pp)
    prompts = [draw.randint(1, 8000) for _ in range(50)]
    each = [sc.parts(p, 1, attention_keys(p, 0), p)[0] for p in prompts]
    mean_keys = sum(attention_keys(p, 0) for p in prompts) / len(prompts)
    closed = sc.mean_prefill_compute_s(sum(prompts) / len(prompts), mean_keys)
    assert closed == pytest.approx(sum(each) / len(each), rel=1e-12)
