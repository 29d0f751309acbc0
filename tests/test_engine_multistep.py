"""Multi-step scheduling (vLLM v0.6's --num-scheduler-steps): decode steps run in runs of k, the
scheduler looks again only when a run ends, and the CPU time between passes is paid once per run.
(tests/test_engine_reference.py checks the fast engine against the plain one with runs of 3 and 8.)"""

import pytest

from simulators.core import costmodel as cm
from simulators.core.catalog import resolve_gpu, resolve_model
from simulators.engine import EngineSpec, SchedulerConfig, serve
from simulators.engine.workload import Request

MODEL, GPU = resolve_model("llama-3-8b"), resolve_gpu("h100-sxm")


def _serve(runs: int, second_at: float | None) -> list:
    sched = SchedulerConfig(
        max_num_seqs=8, max_num_batched_tokens=4096, chunked_prefill=False, num_scheduler_steps=runs
    )
    reqs = [Request(0, 0.0, 100, 200, ((1, 100),))]
    if second_at is not None:
        reqs.append(Request(1, second_at, 100, 5, ((2, 100),)))
    return sorted(serve(reqs, EngineSpec(MODEL, GPU, sched)).records)


def test_an_arrival_mid_run_waits_for_the_run_to_end():
    first = _serve(1, None)[0]
    step = (first.e2e_s - first.ttft_s) / 199  # one decode step of the first request alone
    first10 = _serve(10, None)[0]
    step10 = (first10.e2e_s - first10.ttft_s) / 200  # 199 steps, rounded up to whole runs of 10
    at = first.ttft_s + 2.5 * step  # in the third decode step
    alone, runs = _serve(1, at)[1], _serve(10, at)[1]
    # Every step: admitted when the step in progress ends (within one step); runs of 10: when
    # the run that started at the first token ends, 10 steps after it.
    assert alone.queue_s <= step * 1.01
    assert runs.arrival_s + runs.queue_s == pytest.approx(first10.ttft_s + 10 * step10, rel=0.01)
    assert runs.ttft_s > alone.ttft_s + 5 * step10


def test_a_finished_sequence_leaves_when_its_run_ends():
    short = _serve(10, 0.0)[1]  # 5 output tokens: its last comes in the first run, which lasts 10 steps
    first10 = _serve(10, None)[0]
    step10 = (first10.e2e_s - first10.ttft_s) / 200
    assert short.e2e_s - short.ttft_s == pytest.approx(10 * step10, rel=0.05)


def test_the_step_overhead_is_paid_once_per_run():
    spec1 = EngineSpec(MODEL, GPU, SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=4096))
    spec10 = EngineSpec(
        MODEL, GPU, SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=4096, num_scheduler_steps=10)
    )
    one, ten = spec1.efficiency(), spec10.efficiency()
    assert ten.step_overhead_us == pytest.approx(one.step_overhead_us / 10)
    gap = spec1.step_cost().time_s(1, 1, 100, 100) - spec10.step_cost().time_s(1, 1, 100, 100)
    assert gap == pytest.approx(one.step_overhead_us * 0.9e-6, rel=1e-6)
    assert cm.efficiency(False, "vllm").step_overhead_us == one.step_overhead_us


def test_multi_step_needs_continuous_batching_without_speculation():
    with pytest.raises(ValueError, match="multi-step"):
        SchedulerConfig(num_scheduler_steps=4, num_speculative_tokens=2)
    with pytest.raises(ValueError, match="multi-step"):
        SchedulerConfig(num_scheduler_steps=4, batching="static")
    with pytest.raises(ValueError, match="at least 1"):
        SchedulerConfig(num_scheduler_steps=0)
