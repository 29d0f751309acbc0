"""The project's one percentile rule against GuideLLM 0.8.1's own code (a test dependency)."""

import random

import pytest
from guidellm.schemas.base import statistics as guidellm_stats

from simulators.core import stats

DS = guidellm_stats.DistributionSummary


def _same(ours: dict, theirs, rel: float = 1e-9) -> None:
    t = theirs.model_dump()
    assert ours["count"] == t["count"]
    for k in ("mean", "median", "mode", "min", "max", "std_dev"):
        assert ours[k] == pytest.approx(t[k], rel=rel, abs=1e-12), k
    for k in stats.PERCENTILES:
        assert ours["percentiles"][k] == t["percentiles"][k], k  # the very same value, not close


@pytest.mark.parametrize("n", [1, 2, 7, 10, 99, 100, 101, 150, 1000])
def test_unweighted_percentiles_are_guidellms(n):
    rng = random.Random(n)
    xs = [round(rng.lognormvariate(0, 1), 3) for _ in range(n)]  # rounded: ties occur
    _same(stats.summary(xs), DS.from_values(xs))


def test_weighted_percentiles_are_guidellms():
    rng = random.Random(3)
    pairs = [(rng.uniform(5, 50), float(rng.randint(1, 400))) for _ in range(300)]
    ours = stats.summary([v for v, _ in pairs], [w for _, w in pairs])
    _same(ours, DS.from_values(pairs))


def test_rate_and_concurrency_distributions_are_guidellms():
    rng = random.Random(5)
    starts = sorted(rng.uniform(0, 10) for _ in range(200))
    spans = [(s, s + rng.uniform(0.1, 3)) for s in starts]
    start, end = 0.0, max(b for _, b in spans)
    ends = [(b, 1.0) for _, b in spans]
    _same(stats.rate_summary(ends, start, end), DS.rate_distribution_from_timings(ends, start, end), rel=1e-7)
    _same(
        stats.concurrency_summary(spans, start, end),
        DS.concurrency_distribution_from_timings(spans, start, end),
        rel=1e-7,
    )
    # the plain time-weighted mean the load tests use agrees with GuideLLM's distribution's mean
    theirs = DS.concurrency_distribution_from_timings(spans, start, end).mean
    assert stats.concurrency_mean(spans, start, end) == pytest.approx(theirs, rel=1e-4)
    # the rate's mean is the events in the window over the window (what GuideLLM reports as req/s)
    assert stats.rate_summary(ends, start, end)["mean"] == pytest.approx(len(ends) / (end - start))


def test_percentile_never_interpolates():
    assert stats.percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0  # numpy's linear rule says 2.5
    assert stats.percentile([1.0, 2.0, 3.0, 4.0], 0.99) == 4.0
    assert stats.percentile([], 0.5) == 0.0
