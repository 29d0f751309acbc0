"""cluster: prefix-aware routing finds more cache hits than blind routing; disaggregation trades TTFT for TPOT."""

from simulators import api
from simulators.params import parse
from simulators.results_cache import LruCache
from simulators.sims import cluster, result
from sitebuild.numbers import KEY_FIGURES


def test_prefix_aware_routing_hits_more_and_round_robin_balances_best():
    m = result(cluster.run(parse(cluster.Params, {}), seed=0))["metrics"]
    assert m["hit_rate_prefix"] > m["hit_rate_round_robin"]
    assert m["hit_rate_weighted"] > m["hit_rate_round_robin"]
    assert m["imbalance_round_robin"] <= min(m["imbalance_prefix"], m["imbalance_least_kv"])


def test_disaggregation_pays_the_kv_transfer_in_ttft():
    m = result(cluster.run(parse(cluster.Params, {"num_requests": 60}), seed=1))["metrics"]
    assert m["ttft_disaggregated_s_p99"] > 0 and m["tpot_disaggregated_s_p99"] > 0


def test_the_prefill_split_reuses_the_router_runs_from_the_memo_and_answers_as_fresh_runs(monkeypatch):
    calls = []
    for fn in ("serve", "serve_shown"):  # the routers' runs are shown as they go (serve_shown)
        real = getattr(cluster, fn)
        monkeypatch.setattr(
            cluster, fn, lambda *a, real=real, **k: calls.append(k.get("num_prefill", 0)) or real(*a, **k)
        )
    base = {"num_requests": 40, "num_replicas": 3}
    memo = LruCache(cluster.MEMO_ENTRIES)
    result(cluster.run(parse(cluster.Params, base), seed=2, keep=memo.get_or_make))
    assert calls == [0, 0, 0, 0, 0, 1]  # five routers, then the disaggregated run
    calls.clear()
    params = parse(cluster.Params, {**base, "num_prefill": 2})
    kept = result(cluster.run(params, seed=2, keep=memo.get_or_make))
    assert calls == [2]  # only the disaggregated run again
    assert kept == result(cluster.run(params, seed=2))  # without a memo, every run served afresh
    calls.clear()
    result(cluster.run(parse(cluster.Params, {**base, "rate_per_s": 12.0}), seed=2, keep=memo.get_or_make))
    assert len(calls) == 6  # a new arrival rate serves everything again


def test_a_chart_switch_in_a_session_serves_nothing_again(monkeypatch):
    calls = []
    for fn in ("serve", "serve_shown"):  # the routers' runs are shown as they go (serve_shown)
        real = getattr(cluster, fn)
        monkeypatch.setattr(cluster, fn, lambda *a, real=real, **k: calls.append(1) or real(*a, **k))
    session = api.Session()
    first = session.run("cluster", {"num_requests": 40, "view": "routers"})
    assert len(calls) == 6
    switched = session.run("cluster", {"num_requests": 40, "view": "balance"})
    assert len(calls) == 6  # every run came from the session's keep
    assert switched["result"] == first["result"] and switched["figure"] != first["figure"]
    assert switched["metrics"].items() < first["metrics"].items()  # each chart's table holds its own (below)
    assert switched["figure"] == api.run("cluster", {"num_requests": 40}, view="balance")["figure"]


def test_each_chart_tables_the_figures_it_draws():
    """Learner review (lesson 12): the balance and disaggregation charts' key figures were the routers'
    hit rates and TTFTs. Each now holds its own: the busiest replica over the mean, or the placements'
    p99 TTFT and TPOT; the routers chart keeps every figure."""
    declared = [m["name"] for m in api.schema("cluster")["metrics"]]
    balance = api.run("cluster", {"view": "balance"})["metrics"]
    disagg = api.run("cluster", {"view": "disagg"})["metrics"]
    assert set(balance) == {k for k in declared if k.startswith("imbalance_")}
    assert set(disagg) == {f"{k}_{m}_s_p99" for k in ("ttft", "tpot") for m in ("colocated", "disaggregated")}
    assert set(declared) <= set(api.run("cluster", {"view": "routers"})["metrics"])


def test_the_disaggregation_summary_reads_the_figures_it_shows():
    """Learner review (lesson 12): one closing text ("adds to TTFT, ... no longer stall decode steps")
    whatever the figures, beside a disaggregated TTFT 60x the colocated one or a lower one."""
    from simulators.sims.cluster import _disagg_reading

    co = {"ttft": [0.05, 0.16], "tpot": [0.011, 0.017]}
    queued = _disagg_reading(1, 3, co, {"ttft": [3.3, 5.5], "tpot": [0.010, 0.012]})
    assert queued.startswith("TTFT rises: prompts queue for the 1 prefill replica,") and "TPOT p99 falls" in queued
    burst = _disagg_reading(2, 2, co, {"ttft": [0.04, 0.35], "tpot": [0.012, 0.020]})
    assert "p50 falls" in burst and "p99 rises" in burst and "TPOT does not fall: the 2 decode replicas" in burst
    assert _disagg_reading(3, 1, co, {"ttft": [0.04, 0.15], "tpot": [0.010, 0.012]}).startswith("TTFT falls")


def test_the_balance_summary_counts_the_requests_refused_beside_those_served():
    """Learner review (lesson 12): "386 requests" beside a caption and a Requests box of 400."""
    told = api.run("cluster", {"view": "balance", "sharing": "multi_turn", "num_requests": 400, "num_replicas": 8})
    counts = told["result"]["routers"]["round_robin"]["counts"]
    refused = told["result"]["routers"]["round_robin"]["dropped"]
    assert refused > 0 and sum(counts) + refused == 400
    assert f"{sum(counts):,} requests served, {refused:,} of 400 refused as too long" in told["summary"]


def test_the_disaggregation_bars_carry_their_values_on_the_log_axis():
    """Learner review: on the log axis from about 10 ms, TPOT bars of 12.8 and 19.3 ms looked 3x apart;
    every bar is labelled with its milliseconds, the figures the result holds."""
    r = api.run("cluster", {"view": "disagg"})
    assert r["figure"]["layout"]["yaxis"]["type"] == "log"
    for trace, mode in zip(r["figure"]["data"], ("colocated", "disaggregated"), strict=True):
        ms = [x * 1e3 for x in r["result"]["modes"][mode]["ttft"] + r["result"]["modes"][mode]["tpot"]]
        assert trace["text"] == [f"{v:,.1f}" for v in ms] and trace["textposition"] == "outside"


def test_the_key_figures_hold_every_routers_p99_ttft():
    """Learner review (lesson 12): five routers' hit rate and p99 TTFT, by pairs, made ten figures for
    eight places, and the last router's TTFT fell into "More figures"."""
    shown = list(cluster.METRICS)[:KEY_FIGURES]
    assert {f"ttft_{r}_s_p99" for r in cluster.ROUTER_NAMES} <= set(shown)
