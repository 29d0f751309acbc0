"""load_test: GuideLLM's names in the export; goodput rises with load below the knee; requests too
long for the context are dropped, counted, and do not stop a closed-loop user."""

import dataclasses
import random

from simulators import api
from simulators.benchmark.export import GUIDELLM_NAMES
from simulators.benchmark.loadgen import requests_for
from simulators.benchmark.searches import constrained_run
from simulators.core.catalog import resolve_gpu, resolve_model
from simulators.engine import EngineSpec, SchedulerConfig, serve, workload
from simulators.engine.metrics import RequestRecord
from simulators.engine.workload import Request
from simulators.sims import load_test, result


def _result(params, seed=0):
    """The result the page gets for these parameters (a \"view\" among them picks the chart)."""
    return api.run("load_test", params, seed)["result"]


def test_export_uses_guidellm_metric_names():
    r = _result({"view": "goodput"})
    header = r["csv"].splitlines()[0].split(",")
    for name in (
        "requests_per_second",
        "time_to_first_token_ms_median",
        "inter_token_latency_ms_p99",
        "time_per_output_token_ms_mean",
    ):
        assert name in header
    rec = r["guidellm"][1]
    assert set(GUIDELLM_NAMES) <= set(rec)
    # GuideLLM's time per output token includes the first token, so it is never below its ITL.
    assert rec["time_per_output_token_ms"]["mean"] >= rec["inter_token_latency_ms"]["mean"]


def test_goodput_grows_with_offered_load_below_the_knee():
    r = _result({"view": "goodput"})
    below = [x["goodput"] for x in r["open"] if x["offered"] <= 0.8 * r["metrics"]["max_throughput_per_s"]]
    assert len(below) >= 3 and below == sorted(below)


def test_closed_loop_cannot_exceed_its_users_and_open_loop_queues_past_capacity():
    r = _result({"view": "knee"})
    # One closed-loop user is the synchronous profile: never more than one request in flight.
    assert r["closed"][0]["ttft_p99"] < 0.5
    assert r["open"][-1]["ttft_p99"] > r["open"][0]["ttft_p99"]


def _one_user(prompt_lengths, output_tokens=10):
    """One closed-loop user's requests, each sent when the previous one ends."""
    return [
        Request(i, 0.0, p, output_tokens, ((i + 1, p),), after=i - 1 if i else None)
        for i, p in enumerate(prompt_lengths)
    ]


SPEC = EngineSpec(resolve_model("llama-3-8b"), resolve_gpu("h100-sxm"), SchedulerConfig(max_model_len=8192))


def test_a_request_longer_than_the_context_is_dropped_and_the_user_goes_on():
    # Request 1 asks for 9,000 + 10 tokens of an 8,192-token context: it is reported dropped,
    # and the user sends request 2 at once, as GuideLLM records an error and continues.
    served = serve(_one_user([100, 9000, 100]), SPEC)
    assert [r.id for r in served.dropped] == [1]
    assert sorted(r.id for r in served.records) == [0, 2]
    first, last = sorted(served.records, key=lambda r: r.id)
    assert last.arrival_s == first.arrival_s + first.e2e_s  # sent when request 0 ended


def test_a_conversation_ends_with_its_dropped_turn():
    # Turn 1 re-sends turn 0's answer (segment 10) and is too long; turn 2 re-sends turn 1's
    # answer, which never came: both are dropped, unlike a closed-loop user's next request.
    turn0 = Request(0, 0.0, 100, 10, ((1, 100),), output_segment=10)
    turn1 = Request(1, 1.0, 9000, 10, ((1, 100), (10, 10), (2, 8890)), after=0, output_segment=11)
    turn2 = Request(2, 1.0, 9100, 10, ((1, 100), (10, 10), (2, 8890), (11, 10), (3, 90)), after=1)
    served = serve([turn0, turn1, turn2], SPEC)
    assert [r.id for r in served.records] == [0]
    assert [r.id for r in served.dropped] == [1, 2]


def test_one_closed_loop_user_completes_every_request_that_fits():
    # Azure lengths: a few of 1,000 draws exceed the 8,192-token context. Every other request
    # completes (it was 291 of 1,000 when a drop ended the user's loop), and the run says so.
    lengths = workload.lengths_for("azure")
    run, _ = constrained_run("concurrent", SPEC, 1000, lengths, 0, users=1)
    too_long = sum(
        1
        for r in requests_for("concurrent", random.Random(0), 1000, lengths, users=1)
        if r.prompt_tokens + r.output_tokens > 8192
    )
    assert too_long > 0
    assert run.metrics["num_dropped"] == too_long
    assert run.metrics["num_requests"] == 1000 - too_long
    r = _result({"num_requests": 1000, "users": 1, "view": "percentiles"})
    assert r["metrics"]["num_dropped"] == too_long
    assert f"{too_long} of the 1,000 requests" in load_test.summary(r, "percentiles")


def test_a_long_chain_of_dropped_turns_does_not_recurse():
    # 5,000 turns of one conversation, the first too long: all are dropped, without recursion.
    reqs = [Request(0, 0.0, 9000, 10, ((1, 9000),), output_segment=0)]
    reqs += [Request(i, 0.0, 9000, 10, ((1, 9000), (i - 1, 10)), after=i - 1, output_segment=i) for i in range(1, 5000)]
    assert len(serve(reqs, SPEC).dropped) == 5000


def test_the_knee_view_runs_at_the_request_sliders_maximum():
    # Its 1-user closed loop of 2,000 requests once released followers recursively and raised
    # RecursionError. (tests/test_slider_extremes.py runs every view at every slider's ends.)
    top = next(f for f in dataclasses.fields(load_test.Params) if f.name == "num_requests").metadata["max"]
    r = _result({"num_requests": top, "view": "knee"})
    assert r["metrics"]["num_dropped"] > 0
    assert len(r["closed"]) == len(load_test.USERS)


def _rec(*, arrival: float, e2e: float, tokens: int) -> RequestRecord:
    # id 0, no queue, 0.1 s TTFT, 10 ms TPOT, `tokens` in and out, none cached or preempted, replica 0
    return RequestRecord(0, arrival, 0.0, 0.1, e2e, 0.01, tokens, tokens, 0, 0, 0)


def test_refused_requests_count_against_slo_attainment():
    # Two served requests that meet a generous SLO, and one refused inside the window:
    # attainment is 2 of 3 attempts, as GuideLLM counts errored requests.
    from simulators.engine.metrics import Slo, summarize

    slo = Slo(ttft_s=1.0, tpot_s=1.0)
    served = [_rec(arrival=0.0, e2e=1.0, tokens=10), _rec(arrival=2.0, e2e=1.0, tokens=10)]
    assert summarize(served, slo=slo)["slo_attainment"] == 1.0
    assert summarize(served, slo=slo, dropped_arrivals=[1.0])["slo_attainment"] == 2 / 3
    # A refusal outside the measurement window (here before a 1.5 s warm-up ends) does not count.
    assert summarize(served, slo=slo, dropped_arrivals=[1.0], warmup="1.5s")["slo_attainment"] == 1.0


def _default_spec():
    from simulators.engine import SchedulerConfig

    p = load_test.Params()
    m = resolve_model(p.model)
    sched = SchedulerConfig(max_num_seqs=p.max_num_seqs, max_model_len=m.max_context_tokens)
    return p, EngineSpec(m, resolve_gpu(p.gpu), sched)


def _plateau(spec, lengths, rate):
    """The long-run throughput past the knee, measured as GuideLLM measures: 4,000 requests."""
    return constrained_run("poisson", spec, 4000, lengths, 0, rate=rate)[0].metrics["request_throughput_per_s"]


def test_maximum_throughput_agrees_with_the_long_run_plateau():
    # Issue 14's acceptance: within 10% (it was 22.9 req/s against a 17.7 req/s plateau, 29%).
    p, spec = _default_spec()
    cap = result(load_test.run(p, seed=0))["metrics"]["max_throughput_per_s"]
    plateau = _plateau(spec, workload.lengths_for(p.lengths), 3 * cap)
    assert abs(cap / plateau - 1) < 0.10, (cap, plateau)


def test_an_overloaded_short_run_does_not_collapse():
    # Arrival-windowed statistics showed 9.5, 6.5 and 2.05 req/s at 1.5x, 2x and 3x the maximum
    # (150 requests): a collapse no server shows. Measured from first start to last completion,
    # more offered load can only keep the server as busy: the three agree within 5%.
    p, spec = _default_spec()
    cap = result(load_test.run(p, seed=0))["metrics"]["max_throughput_per_s"]
    for kind in ("azure", "fixed"):
        lengths = workload.lengths_for(kind)
        got = [
            constrained_run("poisson", spec, 150, lengths, 0, rate=f * cap)[0].metrics["request_throughput_per_s"]
            for f in (1.5, 2, 3)
        ]
        assert max(got) / min(got) < 1.05, (kind, got)
    # With fixed lengths a 150-request run past the knee comes within 16% of the plateau (15.1%
    # measured: the last batch drains with slots empty, which GuideLLM's window keeps, as a real
    # run would); with the heavy-tailed Azure lengths the few longest answers drain alone at the
    # end (37% below), and the run says so (drain_share).
    fixed = workload.lengths_for("fixed")
    short = constrained_run("poisson", spec, 150, fixed, 0, rate=2 * cap)[0].metrics
    assert abs(short["request_throughput_per_s"] / _plateau(spec, fixed, 2 * cap) - 1) < 0.16
    azure = constrained_run("poisson", spec, 150, workload.lengths_for("azure"), 0, rate=2 * cap)[0].metrics
    assert azure["drain_share"] > load_test.DRAIN_DOMINATES
    long = constrained_run("poisson", spec, 2000, workload.lengths_for("azure"), 0, rate=2 * cap)[0].metrics
    assert long["drain_share"] < load_test.DRAIN_DOMINATES


def test_steady_throughput_by_hand():
    # Completions at 1, 2, ..., 11 s: the 20% and 80% quantiles are 3 s and 9 s, and the six
    # completions in (3, 9] give 1 per second. All at one instant: the whole run's rate.
    from simulators.benchmark.loadgen import steady_throughput

    assert steady_throughput([_rec(arrival=0.0, e2e=float(t), tokens=1) for t in range(1, 12)]) == 1.0
    assert steady_throughput([_rec(arrival=0.0, e2e=4.0, tokens=1)] * 8) == 2.0


def test_fixed_lengths_with_few_requests_still_have_a_maximum():
    # 150 fixed-length requests from 128 users finish in two waves: no arrival-time window has
    # a steady state, yet the maximum must stay positive (it sets the sweep's rates).

    for view in ("knee", "goodput", "lengths"):
        m = _result({"lengths": "fixed", "view": view})["metrics"]
        assert m["max_throughput_per_s"] > 0


def test_a_change_that_leaves_the_runs_alone_reuses_them_and_answers_as_a_fresh_run(monkeypatch):
    from simulators.benchmark import loadgen

    calls = []
    real = loadgen.serve_steps
    monkeypatch.setattr(
        loadgen, "serve_steps", lambda reqs, spec, **kw: calls.append(len(reqs)) or real(reqs, spec, **kw)
    )
    base = {"num_requests": 60, "view": "knee"}
    session = api.Session()
    session.run("load_test", base, seed=3)
    first = len(calls)
    # A new SLO and warm-up change only the statistics; a new rate, one run (the chosen rate's).
    for change, new_runs in (({"slo_ttft_s": 0.2, "warmup": "20%"}, 0), ({"rate_per_s": 7.0}, 1)):
        before = len(calls)
        reused = session.run("load_test", {**base, **change}, seed=3)
        assert len(calls) - before == new_runs
        assert reused == api.run("load_test", {**base, **change}, seed=3)  # every run simulated afresh
    # The maximum (128 users, 2,000 requests), the chosen rate, 8 sweep rates, 1 to 128 users
    # (64: the chosen users too).
    assert first == 15
    # Another request count (or model, GPU, batch slots, seed) simulates everything again but the
    # maximum, read on 2,000 requests whatever the count below that.
    before = len(calls)
    session.run("load_test", {**base, "num_requests": 70}, seed=3)
    assert len(calls) - before == first - 1
    # Another chart simulates nothing: the session draws its kept runs again.
    before = len(calls)
    session.run("load_test", {**base, "num_requests": 70, "view": "percentiles"}, seed=3)
    assert len(calls) == before


def test_a_warm_up_that_leaves_no_first_token_to_measure_measures_the_whole_run_and_says_so():
    # 40 requests at 10 req/s arrive in about 4 s: a 5 s warm-up starts the window after the last
    # arrival, so no first token falls inside it. Every latency statistic of that empty window would
    # read 0 (and the percentiles text divided by a zero mean); the whole run is measured instead.
    params = {"num_requests": 40, "warmup": "5s"}
    for view in ("percentiles", "knee", "goodput"):
        out = api.run("load_test", {**params, "view": view})
        assert out["ok"], out.get("errors")
        assert out["metrics"]["ttft_samples"] == 40
        assert out["metrics"]["ttft_s_p99"] >= out["metrics"]["ttft_s_mean"] > 0
        assert out["result"]["phases_ignored"] == "5 seconds"
        assert all(pt["samples"] > 0 for key in ("open", "closed") for pt in out["result"].get(key, []))
    assert "so these figures measure the whole run" in out["summary"]
    # The same run with the whole-run measurement asked for outright gives the same figures.
    whole = api.run("load_test", {"num_requests": 40, "warmup": "0", "view": "percentiles"})
    assert (
        whole["result"]["percentiles"]
        == api.run("load_test", {**params, "view": "percentiles"})["result"]["percentiles"]
    )
    assert "phases_ignored" not in whole["result"]


def test_the_goodput_views_best_counts_the_chosen_rate_and_every_view_says_what_the_maximum_is():
    """Tool review: the goodput chart said "at most 3.71" beside the chosen rate's 3.80 (a separate run
    between two swept rates), and only the goodput view said how the maximum was measured."""
    r = api.run("load_test", {"view": "goodput", "num_requests": 60})["result"]
    swept = max(x["goodput"] for x in r["open"])
    for chosen in (swept / 2, swept + 0.5):  # below every swept point's best, then above it
        told = load_test.summary({**r, "chosen": {**r["chosen"], "goodput": chosen}}, "goodput")
        assert float(told.split("at most ")[1].split()[0]) == round(max(swept, chosen), 2)
    for view in ("knee", "goodput"):
        assert "steady rate with every batch slot busy" in api.run("load_test", {"view": view})["summary"]


def test_the_closed_loop_sentence_says_where_its_tail_comes_from():
    """Learner review: "they slow down instead of queueing" beside a closed-loop TTFT p99 of 2.3 s,
    which the first requests set (all 64 users send at once; later ones wait 20-180 ms)."""
    from simulators.sims.load_test_view import _closed_loop

    assert "The start, when all 64 users send at once, is what sets that p99" in _closed_loop(64, 64, False)
    assert "users send at once, is left out with the warm-up" in _closed_loop(64, 64, True)
    assert _closed_loop(128, 64, False).startswith("Requests do queue here") and "up to 64 wait" in _closed_loop(
        128, 64, False
    )
    assert "never queues" in _closed_loop(1, 64, False)
    told = api.run("load_test", {"view": "knee"})["summary"]
    assert "slow down instead of queueing" not in told and "is what sets that p99" in told
    # A later learner review: with a warm-up left out the sentence still blamed the start it had removed.
    warm = api.run("load_test", {"view": "knee", "users": 32, "warmup": "10"})["summary"]
    assert "is left out with the warm-up" in warm and "what sets that p99" not in warm


def test_a_run_finishing_more_than_was_offered_is_explained():
    """Learner review: 3.05 req/s measured at 2.85 offered, with no word on why."""
    from simulators.sims.load_test_view import _scatter

    assert _scatter([{"offered": 2.85, "throughput": 3.05}, {"offered": 5.7, "throughput": 5.6}]) == (
        " A short Poisson run's arrivals scatter around the offered rate, so 3.05 req/s can finish at 2.85 offered."
    )
    assert _scatter([{"offered": 2.85, "throughput": 2.8}]) == ""


def test_the_knee_view_cautions_where_a_drain_holds_its_points_back():
    """Learner review: the knee's open-loop points top out at 8.8 req/s against a 14.3 maximum, with
    nearly half of each top run the drain, and only the goodput view said so."""
    from simulators.sims.load_test_view import DRAIN_DOMINATES

    answer = api.run("load_test", {"view": "knee"})
    shares = [x["drain_share"] for x in answer["result"]["open"] if x["drain_share"] > DRAIN_DOMINATES]
    assert len(shares) >= 2  # the defaults' top rates: 30% to 49% drain
    expected = f"at {len(shares)} of the {len(answer['result']['open'])} open-loop rates, {min(shares):.0%} to "
    assert f"Caution: {expected}{max(shares):.0%} of each run is the drain" in answer["summary"]
    calm = [{**x, "drain_share": 0.0} for x in answer["result"]["open"]]
    assert "is the drain" not in load_test.summary({**answer["result"], "open": calm}, "knee")
