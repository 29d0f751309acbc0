"""The small random scenario that tests/test_engine_properties.py and test_engine_reference.py
both draw from hypothesis: a few hundred-token requests, maybe sharing prefixes or following
each other as conversation turns, and a scheduler with every limit small enough to bind."""

import random

from simulators.engine import SchedulerConfig, workload


def small_requests(seed: int, n: int, rate: float, sharing: str) -> list[workload.Request]:
    """n requests of about 300 prompt and 60 output tokens, Poisson at `rate`; `sharing` as in workload.build."""
    rng = random.Random(seed)
    return workload.build(
        rng,
        n,
        workload.Lengths("uniform", 300, 60),
        workload.arrival_times(rng, n, "poisson", rate),
        sharing=sharing,
        shared_tokens=200,
        turns=3,
    ).requests


def small_scheduler(
    batching: str,
    max_num_seqs: int,
    budget: int,
    chunked: bool,
    spec_k: int,
    *,
    max_model_len: int = 4096,
    reserve_full_isl: bool = True,
    num_scheduler_steps: int = 1,
) -> SchedulerConfig:
    """A scheduler whose token budget holds at least one token per sequence (as vLLM requires)."""
    return SchedulerConfig(
        batching=batching,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max(budget, max_num_seqs),
        chunked_prefill=chunked,
        max_model_len=max_model_len,
        reserve_full_isl=reserve_full_isl,
        num_speculative_tokens=spec_k,
        num_scheduler_steps=num_scheduler_steps,
    )
