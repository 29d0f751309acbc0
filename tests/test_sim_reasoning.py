"""reasoning: decode dominates, slots turn over slowly, KV per sequence limits concurrency, speculation helps."""

from simulators import api
from simulators.engine.scheduler import SchedulerConfig
from simulators.params import parse
from simulators.sims import reasoning, result


def test_reasoning_traffic_is_decode_and_memory_bound():
    m = result(reasoning.run(parse(reasoning.Params, {"num_requests": 20}), seed=0))["metrics"]
    assert m["decode_share_reasoning"] > 0.99 > m["prefill_share_reasoning"]
    assert m["turnover_reasoning_per_slot_min"] < m["turnover_chat_per_slot_min"] / 20
    assert m["kv_GiB_per_sequence_reasoning"] > 5 * m["kv_GiB_per_sequence_chat"]
    assert m["max_sequences_reasoning"] < m["max_sequences_chat"] / 5
    assert m["speculation_speedup"] > 1.5


def test_expected_tokens_per_speculative_step():
    # k = 4 drafts at acceptance 0.8: (1 - 0.8^5) / (1 - 0.8) = 3.3616 tokens per step.
    assert (
        SchedulerConfig(num_speculative_tokens=4, acceptance_rate=0.8).tokens_per_step()
        == 1 + 0.8 + 0.64 + 0.512 + 0.4096
    )
    assert SchedulerConfig(num_speculative_tokens=0).tokens_per_step() == 1.0


def test_speculation_with_no_acceptance_only_costs():
    m = result(reasoning.run(parse(reasoning.Params, {"num_requests": 10, "acceptance_rate": 0.0}), seed=0))["metrics"]
    assert m["speculation_speedup"] < 1.0


def test_a_gpu_whose_kv_cache_holds_no_reasoning_request_is_a_field_error_in_every_view():
    # Mistral-7B's BF16 weights (14.5 GB) leave a T4's 16 GB a KV cache of a few thousand tokens:
    # the engine drops every reasoning request, and the speed-up of speculation divided by the mean
    # latency of none (ZeroDivisionError). The reader gets the reason on the GPU field instead.
    for view in ("time", "batch", "speculation"):
        out = api.run("reasoning", {"model": "mistral-7b", "gpu": "t4", "view": view})
        assert not out["ok"]
        assert [e["field"] for e in out["errors"]] == ["gpu"]
        assert "serves none of the reasoning requests" in out["errors"][0]["message"]
    assert api.run("reasoning", {"model": "mistral-7b", "gpu": "l4"})["ok"]


def test_the_time_split_says_where_a_preempted_requests_wait_goes():
    """Learner review (F4): 29 preemptions beside "queueing 0.0 s" and "100.0% decoding", unexplained."""
    from simulators import api

    told = api.run("reasoning", {})
    assert told["metrics"]["num_preemptions_reasoning"] > 0
    assert "decode counts a preempted request's wait and recompute" in told["summary"]
