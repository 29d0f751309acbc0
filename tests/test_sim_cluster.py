"""cluster: prefix-aware routing finds more cache hits than blind routing; disaggregation trades TTFT for TPOT."""

from simulators import cluster
from simulators.params import parse


def test_prefix_aware_routing_hits_more_and_round_robin_balances_best():
    m = cluster.run(parse(cluster.Params, {}), seed=0)["metrics"]
    assert m["hit_rate_prefix"] > m["hit_rate_round_robin"]
    assert m["hit_rate_weighted"] > m["hit_rate_round_robin"]
    assert m["imbalance_round_robin"] <= min(m["imbalance_prefix"], m["imbalance_least_kv"])


def test_disaggregation_pays_the_kv_transfer_in_ttft():
    m = cluster.run(parse(cluster.Params, {"num_requests": 60}), seed=1)["metrics"]
    assert m["ttft_disaggregated_s_p99"] > 0 and m["tpot_disaggregated_s_p99"] > 0
