"""Property-based checks of the engine over random small configurations."""

from engine_scenario import small_requests, small_scheduler
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulators.core.catalog import resolve_gpu, resolve_model
from simulators.engine import EngineSpec, serve

M, GPU = resolve_model("llama-3-8b"), resolve_gpu("h100-sxm")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(
    n=st.integers(1, 40),
    rate=st.floats(0.5, 200),
    block_size=st.sampled_from([1, 8, 16, 64]),
    num_blocks=st.integers(600, 3000),
    max_num_seqs=st.integers(1, 64),
    budget=st.integers(64, 4096),
    chunked=st.booleans(),
    batching=st.sampled_from(["continuous", "static"]),
    prefix=st.sampled_from(["off", "hash", "radix"]),
    layout=st.sampled_from(["paged", "contiguous"]),
    sharing=st.sampled_from(["none", "system", "multi_turn", "agent"]),
    spec_k=st.integers(0, 4),
    seed=st.integers(0, 1000),
)
def test_every_request_finishes_or_is_dropped_and_blocks_balance(
    n, rate, block_size, num_blocks, max_num_seqs, budget, chunked, batching, prefix, layout, sharing, spec_k, seed
):
    reqs = small_requests(seed, n, rate, sharing)
    sched = small_scheduler(batching, max_num_seqs, budget, chunked, spec_k)
    spec = EngineSpec(
        M, GPU, sched, block_size=block_size, num_blocks=max(1, num_blocks // block_size), layout=layout, prefix=prefix
    )
    served = serve(reqs, spec)
    assert len(served.records) + len(served.dropped) == n
    kv = served.replicas[0].kv
    assert kv.num_available() == kv.num_blocks
    assert all(0 <= used <= kv.num_blocks for _, _, _, used, _, _ in served.replicas[0].series)
    for r in served.records:
        assert 0 <= r.queue_s <= r.ttft_s <= r.e2e_s
    # Striding never changes what a step-by-step run computes.
    single = serve(reqs, spec, single_step=True)
    assert [(r.id, round(r.e2e_s, 6)) for r in single.records] == [(r.id, round(r.e2e_s, 6)) for r in served.records]
