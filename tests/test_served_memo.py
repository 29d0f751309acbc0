"""ServedMemo (engine/loadgen.py) answers exactly as a fresh searches.constrained_run, and a new
SLO, the control a reader drags, re-measures nothing but the two figures that depend on it (SLO attainment and
goodput): the percentiles, the window and the throughput are measured once per run and window."""

import pytest

from simulators.benchmark.loadgen import ServedMemo
from simulators.benchmark.searches import constrained_run
from simulators.engine import Slo
from simulators.params import parse
from simulators.sims import load_test

P = parse(load_test.Params, {"num_requests": 80, "max_num_seqs": 16})
SPEC, _, _, LENGTHS = load_test._server(P)
SLOS = [None, Slo(0.5, 0.05), Slo(0.05, 0.02), Slo(5.0, 0.001), Slo(60.0, 1.0)]


@pytest.mark.parametrize(("profile", "load"), [("poisson", {"rate": 6.0}), ("concurrent", {"users": 12})])
@pytest.mark.parametrize("warmup", [None, "10%"])
def test_every_slo_gives_exactly_a_fresh_measurement(profile, load, warmup):
    memo = ServedMemo(SPEC, 80, 0)
    for slo in SLOS:
        kept = memo.run(profile, LENGTHS, warmup=warmup, cooldown=warmup, slo=slo, **load)
        fresh, _ = constrained_run(profile, SPEC, 80, LENGTHS, 0, warmup=warmup, cooldown=warmup, slo=slo, **load)
        assert kept == fresh
        assert list(kept.metrics) == list(fresh.metrics)  # same figures in the same order (the CSV's)
    strict = memo.run(profile, LENGTHS, slo=Slo(0.001, 0.0001), **load).metrics
    assert (
        strict["goodput_per_s"] == 0.0 < memo.run(profile, LENGTHS, slo=Slo(60.0, 1.0), **load).metrics["goodput_per_s"]
    )


def test_a_new_slo_re_measures_only_what_depends_on_it(monkeypatch):
    from simulators.benchmark import loadgen

    memo = ServedMemo(SPEC, 80, 0)
    calls = []
    real = loadgen.measure_apart
    monkeypatch.setattr(loadgen, "measure_apart", lambda *a, **k: calls.append(1) or real(*a, **k))
    for slo in SLOS:
        memo.run("poisson", LENGTHS, rate=6.0, slo=slo)
    assert len(calls) == 1  # one measurement of the window and the percentiles, five SLOs
    memo.run("poisson", LENGTHS, rate=6.0, warmup="10%", cooldown="10%", slo=SLOS[1])
    assert len(calls) == 2  # another window is another measurement
