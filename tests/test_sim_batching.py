"""batching: continuous batching beats static batching once the slots are contended."""

import pytest

from simulators import api
from simulators.core.catalog import resolve_gpu, resolve_model
from simulators.engine import EngineSpec, SchedulerConfig, serve
from simulators.engine.workload import Request
from simulators.params import parse
from simulators.sims import batching, result


def test_continuous_beats_static_under_load_and_ties_when_idle():
    busy = result(batching.run(parse(batching.Params, {"rate_per_s": 16}), seed=0))["metrics"]
    assert busy["throughput_gain"] > 1.5
    assert busy["ttft_continuous_s_p50"] < busy["ttft_static_s_p50"] / 10
    assert busy["slot_occupancy_continuous"] > busy["slot_occupancy_static"]
    idle = result(batching.run(parse(batching.Params, {"rate_per_s": 0.5, "num_requests": 40}), seed=0))["metrics"]
    assert 0.9 < idle["throughput_gain"] < 1.2


def test_a_static_batch_is_busy_during_its_prefill():
    # Two requests (2,000-token prompt, 10-token answer) 100 s apart through a one-slot static
    # batcher: each batch is one big prefill step and 9 decode steps, D seconds in all, the slot
    # busy throughout; between them the engine is idle.
    m, gpu = resolve_model("llama-3-8b"), resolve_gpu("h100-sxm")
    reqs = [Request(i, 100.0 * i, 2000, 10, ((i + 1, 2000),)) for i in range(2)]
    served = serve(reqs, EngineSpec(m, gpu, SchedulerConfig(batching="static", max_num_seqs=1)))
    d = served.records[0].e2e_s
    assert served.records[0].ttft_s > 0.3 * d  # the prefill is a large share of the batch's time
    series = served.replicas[0].series
    # The sample at each batch's start already holds its sequence: the prefill step is busy.
    assert [(t, slots, running) for t, slots, _, _, _, running in series if t in (0.0, 100.0)] == [
        (0.0, 1, 1),
        (100.0, 1, 1),
    ]
    # Busy 2D of the 100 + D seconds from the first arrival to the last completion (sampling
    # each step's end would have counted the second prefill as idle).
    assert batching.slot_occupancy(series, 1) == pytest.approx(2 * d / (100 + d))


def test_fixed_lengths_are_refused_only_past_the_context_and_uniform_at_their_longest():
    """Learner review (lesson 05): a fixed 1 + 5,461-token request was refused, by the 1.5x allowance
    meant for uniform lengths (which reach +50%)."""
    from simulators import api

    def refused(lengths: str, output: int) -> bool:
        return not api.run("batching", {"lengths": lengths, "prompt_tokens": 1, "output_tokens": output})["ok"]

    assert not refused("fixed", 5461) and not refused("fixed", 8000)
    assert refused("uniform", 5461) and not refused("uniform", 5000)
    too_long = api.run("batching", {"lengths": "fixed", "prompt_tokens": 2000, "output_tokens": 8000})
    assert too_long["errors"][0]["message"].startswith("prompt plus output (10,000 tokens) must fit")


def test_with_fixed_lengths_static_batching_waits_for_the_whole_batch_not_a_slowest_member():
    """Learner review: with fixed lengths the summary still blamed "the slowest member of the batch" and
    the legend listed a static "still running" line hidden under the "slots held" one."""
    fixed = api.run("batching", {"lengths": "fixed"})
    assert (
        "slowest member" not in fixed["summary"] and "wait for the whole batch in flight to finish" in fixed["summary"]
    )
    names = [t["name"] for t in fixed["figure"]["data"]]
    assert any(n.endswith("(under the slots held: equal lengths end together)") for n in names)
    assert "slowest member" in api.run("batching", {})["summary"]


def test_the_latency_percentiles_are_points_on_their_log_axis_not_bars():
    """Learner review: on a log axis a bar starts at an arbitrary floor, so its length says nothing of
    the value (continuous batching's 0.07 s looked a tenth of static's 1.87 s). Each percentile is a point."""
    fig = api.run("batching", {"num_requests": 200, "view": "latency"})["figure"]
    assert fig["layout"]["yaxis"]["type"] == "log"
    assert [(t["type"], t["mode"]) for t in fig["data"]] == [("scatter", "markers")] * 2
