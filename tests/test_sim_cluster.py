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


def test_the_chart_and_the_prefill_split_reuse_the_router_runs_and_answer_as_fresh_runs(monkeypatch):
    calls = []
    real = cluster.serve
    monkeypatch.setattr(cluster, "serve", lambda *a, **k: calls.append(k.get("num_prefill", 0)) or real(*a, **k))
    base = {"num_requests": 40, "num_replicas": 3}
    cluster._latest.clear()
    cluster.run(parse(cluster.Params, base), seed=2)
    assert calls == [0, 0, 0, 0, 0, 1]  # five routers, then the disaggregated run
    for change in ({"view": "balance"}, {"num_prefill": 2}):
        calls.clear()
        params = parse(cluster.Params, {**base, **change})
        kept = cluster.run(params, seed=2)
        assert calls == [change.get("num_prefill", 1)]  # only the disaggregated run again
        cluster._latest.clear()
        assert kept == cluster.run(params, seed=2)  # every run served afresh
    calls.clear()
    cluster.run(parse(cluster.Params, {**base, "rate_per_s": 12.0}), seed=2)
    assert len(calls) == 6  # a new arrival rate serves everything again
