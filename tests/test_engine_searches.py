"""GuideLLM 0.8.1's goodput and knee profiles, over_saturation constraint and rampup
(simulators/benchmark/searches.py, saturation.py): the ports agree with GuideLLM's own functions,
and on the simulated server they mean what GuideLLM means."""

import random
from types import SimpleNamespace

import pytest
from guidellm.benchmark.analysis import knee as gl_knee
from guidellm.scheduler.constraints import saturation as gl_sat
from guidellm.scheduler.strategies import AsyncConstantStrategy
from guidellm.utils.statistics import approx_t_ppf as gl_t_ppf
from guidellm.utils.statistics import wilson_interval as gl_wilson

from simulators.benchmark.saturation import OverSaturation, SlopeChecker, approx_t_ppf, constant_rampup_times, detect
from simulators.benchmark.searches import (
    adaptive_grid,
    constrained_run,
    find_throughput_knee,
    goodput_search,
    knee_search,
    wilson_interval,
)
from simulators.core.catalog import resolve_gpu, resolve_model
from simulators.engine import EngineSpec, SchedulerConfig, Slo, workload
from simulators.sims import load_test


def _spec(slots=64):
    p = load_test.Params()
    m = resolve_model(p.model)
    return EngineSpec(m, resolve_gpu(p.gpu), SchedulerConfig(max_num_seqs=slots, max_model_len=m.max_context_tokens))


FIXED = workload.lengths_for("fixed")


# --- the ports against GuideLLM's own code -------------------------------------------------------


@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.995, 0.2])
@pytest.mark.parametrize("df", [1, 3, 10, 57.5, 1e9])
def test_t_quantile_is_guidellms(p, df):
    assert approx_t_ppf(p, df) == pytest.approx(gl_t_ppf(p, df), rel=1e-12)


@pytest.mark.parametrize(
    ("k", "n", "conf"), [(0, 10, 0.95), (95, 100, 0.95), (7, 7, 0.9), (140, 150, 0.99), (3, 0, 0.95)]
)
def test_wilson_interval_is_guidellms(k, n, conf):
    assert wilson_interval(k, n, conf) == pytest.approx(gl_wilson(k, n, conf), rel=1e-12)


def test_slope_checker_is_guidellms():
    rng = random.Random(3)
    ours, theirs = SlopeChecker(2.0, 0.95), gl_sat.SlopeChecker(moe_threshold=2.0, confidence=0.95)
    pts = [(t, 0.3 * t + rng.gauss(0, 2)) for t in range(40)]
    for x, y in pts:
        ours.add(x, y)
        theirs.add_data_point(x, y)
    for x, y in pts[:7]:
        ours.add(x, y, -1)
        theirs.remove_data_point(x, y)
    assert ours.check(20.5) == theirs.check_slope(20.5)
    assert ours.slope == pytest.approx(theirs.slope) and ours.margin_of_error == pytest.approx(theirs.margin_of_error)


def test_knee_fit_is_guidellms_on_random_curves():
    rng = random.Random(7)
    seen = set()
    for _ in range(200):
        xs = sorted(rng.sample(range(1, 300), rng.randint(4, 12)))
        sat = rng.uniform(1, 300)
        ys = [min(x, sat) * rng.uniform(0.9, 1.1) + rng.uniform(0, 20) for x in xs]
        ours, theirs = find_throughput_knee(xs, ys), gl_knee.find_throughput_knee(xs, ys)
        seen.add(ours["status"])
        assert ours["status"] == theirs.status and ours["reason"] == theirs.reason
        if theirs.status == "ok":
            assert ours["knee"] == pytest.approx(theirs.knee)
            assert ours["saturation_concurrency"] == theirs.saturation_concurrency
    assert seen == {"ok", "no_knee"}


@pytest.mark.parametrize("center", [1.2, 3.7, 12.4, 60.01, 250.0])
def test_adaptive_grid_is_guidellms(center):
    assert tuple(adaptive_grid(center, 5, 5)) == gl_knee._adaptive_grid(center, 5, 5)[2]


def test_constant_rampup_is_guidellms():
    rate, ramp, n = 8.0, 3.0, 40
    s = AsyncConstantStrategy(rate=rate, rampup_duration=ramp)
    index = iter(range(1, n + 1))
    # GuideLLM's shared counter and start time, without worker processes.
    object.__setattr__(s, "next_request_index", lambda: next(index))
    object.__setattr__(s, "get_processes_start_time", _zero)
    import asyncio

    async def times():
        return [await s.next_request_time(0) for _ in range(n)]

    assert constant_rampup_times(n, rate, ramp) == pytest.approx(asyncio.run(times()))
    # Without rampup GuideLLM sends request i at i / rate: the same gaps, the first at 0 here.
    assert constant_rampup_times(4, 2.0, 0.0) == [0.0, 0.5, 1.0, 1.5]


async def _zero():
    return 0.0


def test_detector_stops_where_guidellms_constraint_stops(monkeypatch):
    """The same events fed to GuideLLM's OverSaturationConstraint, its clock set to each event."""
    cfg = OverSaturation(min_seconds=10.0)
    served_recs = _records(1200, 40.0)
    ours = detect(served_recs, cfg)
    assert ours["stop_s"] is not None  # 40 req/s is twice the maximum: the detector fires
    clock = SimpleNamespace(t=0.0)
    monkeypatch.setattr(gl_sat, "time", SimpleNamespace(time=lambda: clock.t))
    c = gl_sat.OverSaturationConstraint(minimum_duration=cfg.min_seconds)
    t0 = min(r.arrival_s for r in served_recs)
    ends = sorted(r.arrival_s + r.e2e_s for r in served_recs)
    events = sorted(
        [(r.arrival_s - t0, 1, r) for r in served_recs] + [(r.arrival_s + r.ttft_s - t0, 0, r) for r in served_recs],
        key=lambda e: e[:2],
    )
    state = SimpleNamespace(start_time=0.0, processing_requests=0)
    theirs, sent = None, 0
    for t, kind, r in events:
        clock.t = t
        if kind == 1:
            sent += 1
            state.processing_requests = sent - sum(1 for e in ends if e - t0 <= t)
            info = SimpleNamespace(status="in_progress", request_id=r.id, timings=None)
        else:
            # Wall-clock stamps (GuideLLM skips a request_start of 0 as missing).
            start = 1.7e9 + r.arrival_s
            timings = SimpleNamespace(first_token_iteration=start + r.ttft_s, request_start=start)
            info = SimpleNamespace(status="first_token", request_id=r.id, timings=timings)
        if c(state, info).metadata["is_over_saturated"]:
            theirs = t
            break
    assert theirs == pytest.approx(ours["stop_s"])


def _records(n, rate):
    from simulators.benchmark.loadgen import requests_for
    from simulators.engine.cluster import serve

    return serve(requests_for("poisson", random.Random(0), n, FIXED, rate=rate), _spec()).records


# --- what they mean on the simulated server ------------------------------------------------------


def _max_rate():
    """The spec's most requests per second: 500 requests queued at once, over the time they take."""
    from simulators.benchmark.loadgen import requests_for
    from simulators.engine.cluster import serve

    recs = serve(requests_for("poisson", random.Random(0), 500, FIXED, rate=1e9), _spec()).records
    return len(recs) / max(r.arrival_s + r.e2e_s for r in recs)


def test_over_saturation_stops_a_growing_queue_not_a_steady_one():
    cfg = OverSaturation()
    top = _max_rate()
    over, state = constrained_run("poisson", _spec(), 2000, FIXED, 0, rate=2 * top, over_saturation=cfg)
    # Twice the maximum: the backlog grows, TTFT and concurrency climb; stopped after min_seconds.
    assert state["is_over_saturated"] and cfg.min_seconds <= state["stop_s"] < cfg.min_seconds + 5
    assert state["concurrent_slope"] > 0 and state["ttft_slope"] > 0
    assert over.metrics["num_incomplete"] > 0  # the requests running at the stop are cancelled
    # Below the maximum (steady state) and a closed loop of 128 users on 64 slots (TTFT past
    # 2.5 s, but flat: the users wait instead of the queue growing) are not stopped. (With 256
    # users or more, all sent at once, the first wave still drains at 30 s and it fires: so it
    # would on a real server.)
    for profile, kw in (("poisson", {"rate": 0.8 * top}), ("concurrent", {"users": 128})):
        run, st = constrained_run(profile, _spec(), 2000, FIXED, 0, over_saturation=cfg, **kw)
        assert not st["is_over_saturated"] and run.metrics["num_incomplete"] == 0, profile
    closed = constrained_run("concurrent", _spec(), 2000, FIXED, 0, users=128)[0]
    assert closed.metrics["ttft_s_p50"] > cfg.minimum_ttft


def test_knee_is_where_throughput_stops_rising_with_concurrency():
    # A server with 64 batch slots: output throughput grows with users until the slots are full.
    k = knee_search(_spec(64), 300, FIXED, 0, [8, 16, 32, 48, 64, 96, 128, 192])
    assert k["final"]["status"] == "ok"
    assert 40 <= k["final"]["knee"] <= 80 and k["final"]["saturation_concurrency"] == 64
    k32 = knee_search(_spec(32), 300, FIXED, 0, [8, 16, 32, 48, 64, 96, 128, 192])
    assert k32["final"]["knee"] < k["final"]["knee"]  # fewer slots, an earlier knee
    flat = knee_search(_spec(64), 300, FIXED, 0, [1, 2, 3, 4, 5])  # all on the rising part
    assert flat["final"]["status"] == "no_knee"
    refined = knee_search(_spec(64), 300, FIXED, 0, [8, 16, 32, 48, 64, 96, 128, 192], adaptive=True)
    assert len(refined["points"]) > 8 and refined["final"]["status"] == "ok"
    with pytest.raises(ValueError):
        knee_search(_spec(64), 300, FIXED, 0, [8, 16, 32])


def test_goodput_finds_the_most_users_meeting_the_slo():
    slo = Slo(0.5, 0.05)
    g = goodput_search(_spec(), 300, FIXED, 0, slo)
    best, worst = g["best_passing_streams"], g["lowest_failing_streams"]
    assert g["stop_reason"] == "converged" and best is not None and worst is not None
    assert worst - best <= max(1, 0.1 * best)
    by = {p["streams"]: p for p in g["probes"]}
    assert by[best]["attainment"] >= 0.95 > by[worst]["attainment"]
    assert [p["streams"] for p in g["probes"]][:3] == [4, 8, 16]  # doubling first
    # A looser TTFT bound admits more users; an impossible one none, even at one stream.
    looser = goodput_search(_spec(), 300, FIXED, 0, Slo(2.0, 0.05))
    assert looser["best_passing_streams"] > best
    never = goodput_search(_spec(), 300, FIXED, 0, Slo(0.001, 0.05))
    assert never["best_passing_streams"] is None and never["stop_reason"] in (
        "objectives_unmet_at_minimum",
        "indeterminate_at_minimum",
    )
    assert [p["streams"] for p in never["probes"]][-1] == 1


def test_concurrent_rampup_staggers_the_first_users():
    from simulators.benchmark.loadgen import requests_for
    from simulators.benchmark.saturation import with_rampup

    reqs = requests_for("concurrent", random.Random(0), 40, FIXED, users=16)
    staggered = with_rampup("concurrent", reqs, rate=1.0, users=16, rampup=8.0)
    assert [r.arrival_s for r in staggered[:16]] == [0.5 * k for k in range(16)]
    assert staggered[16:] == reqs[16:]  # later requests follow their user's previous one
    assert with_rampup("poisson", reqs, rate=1.0, users=16, rampup=8.0) == reqs  # no rampup in 0.8.1
    run0, _ = constrained_run("concurrent", _spec(), 200, FIXED, 0, users=16)
    ramp, _ = constrained_run("concurrent", _spec(), 200, FIXED, 0, users=16, rampup=8.0)
    # Users start 0.5 s apart: the window (first start to last end) is longer.
    assert ramp.metrics["window_s"] > run0.metrics["window_s"]


def test_the_searches_are_offered_as_load_test_files_and_on_the_command_line():
    import json
    import subprocess
    import sys

    from simulators import api

    assert [e["kind"] for e in api.schema("load_test")["exports"]] == ["guidellm", "goodput", "knee"]
    p = {"num_requests": 300, "lengths": "fixed", "max_num_seqs": 32}
    g = json.loads(api.run("load_test", {**p, "export": "goodput"})["export"]["text"])
    direct = goodput_search(_spec(32), 300, FIXED, 0, Slo(load_test.Params().slo_ttft_s, load_test.Params().slo_tpot_s))
    assert g["best_passing_streams"] == direct["best_passing_streams"] and g["stop_reason"] == direct["stop_reason"]
    k = json.loads(api.run("load_test", {**p, "export": "knee"})["export"]["text"])
    assert [u for u, _ in k["points"]] == load_test.knee_streams(32) == [4, 8, 16, 24, 32, 48, 64, 96]
    assert k["final"]["status"] == "ok" and k["final"]["saturation_concurrency"] == 32
    cli = subprocess.run(
        [sys.executable, "-m", "simulators", "run", "load_test", "--set", "export=knee", "--set", "num_requests=300"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0 and json.loads(cli.stdout)["profile"] == "knee"
