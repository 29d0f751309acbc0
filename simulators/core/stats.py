"""Distribution statistics as GuideLLM computes them: the project's one percentile rule.

Every percentile the course shows (load tests, SLO, evaluation) comes from `percentile` here.
The rule is GuideLLM 0.8's (src/guidellm/schemas/base/statistics.py, `Percentiles.from_pdf`):
equal values are merged, each value's probability is its weight over the total weight, and the
q-th percentile is the FIRST value whose cumulative probability reaches q
(`numpy.searchsorted(cumsum(p), q, side="left")`). With equal weights it is the nearest-rank
percentile (the ceil(q n)-th smallest value); it never interpolates, so a p99 is always a value
some request saw. The cumulative sum is taken left to right in floating point, as numpy's
cumsum does, so the chosen value is GuideLLM's to the last bit.

`summary` gives GuideLLM's DistributionSummary fields (mean, median, mode, variance, std_dev,
min, max, count, total_sum, percentiles p001..p999). `rate_summary` and `concurrency_summary`
are its time-based distributions (`rate_distribution_from_timings`,
`concurrency_distribution_from_timings`): a rate's mean is events / window, concurrency is the
time-weighted number of requests in flight, not throughput x latency.
"""

import bisect
import math
from collections import Counter
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

# GuideLLM's percentiles, named by their decimals: p001 = 0.001, p50 = 0.5.
PERCENTILES = {k: float("0." + k[1:]) for k in "p001 p01 p05 p10 p25 p50 p75 p90 p95 p99 p999".split()}
MERGE_THRESHOLD_S = 1e-4  # GuideLLM merges events closer than 0.1 ms into one


class Pdf:
    """Sorted distinct values with their probabilities and cumulative probabilities."""

    __slots__ = ("cdf", "count", "probs", "values")

    def __init__(self, values: Sequence[float], weights: Sequence[float] | None = None, count: int | None = None):
        if weights is None:
            # Equal values merged: a Counter of the sorted values keeps them in sorted order (its
            # first-seen order), each with its count (k ones add up to exactly k).
            counts = Counter(sorted(values))
            vals, wts = list(counts), [float(c) for c in counts.values()]
        else:
            if len(values) != len(weights):
                raise ValueError("values and weights differ in length")
            if len(set(values)) == len(values):
                # Distinct values (the usual case): ordered by value alone, which is the pairs'
                # order, and nothing to merge. A float key sorts several times faster than pairs.
                order = sorted(range(len(values)), key=values.__getitem__)
                vals, wts = [values[i] for i in order], [weights[i] for i in order]
            else:
                vals, wts = [], []
                for x, w in sorted(zip(values, weights, strict=True)):
                    if vals and vals[-1] == x:
                        wts[-1] += w
                    else:
                        vals.append(x)
                        wts.append(w)
            if min(wts, default=1.0) <= 0:
                kept = [(x, w) for x, w in zip(vals, wts, strict=True) if w > 0]
                vals, wts = [x for x, _ in kept], [w for _, w in kept]
        total = sum(wts)
        if total <= 1e-6:  # GuideLLM's epsilon: weights that sum to nothing count equally
            wts = [1.0] * len(vals)
            total = float(len(vals))
        self.values = vals
        self.probs = [w / total for w in wts]
        self.cdf = list(accumulate(self.probs))
        self.count = len(values) if count is None else count

    def percentile(self, q: float) -> float:
        return self.values[min(bisect.bisect_left(self.cdf, q), len(self.values) - 1)] if self.values else 0.0


def percentile(values: Sequence[float], q: float, weights: Sequence[float] | None = None) -> float:
    """The first value whose weighted cumulative probability reaches q (0 <= q <= 1); 0 if empty."""
    return Pdf(values, weights).percentile(q)


def summary(
    values: Sequence[float], weights: Sequence[float] | None = None, count: int | None = None
) -> dict[str, Any]:
    """GuideLLM's DistributionSummary of (optionally weighted) values, as a plain dict. `count`: the
    number of values, or the rounded sum of the weights (a token-weighted ITL counts tokens)."""
    if count is None:
        count = len(values) if weights is None else round(sum(weights))
    pdf = Pdf(values, weights, count)
    if not pdf.values:
        zero = dict.fromkeys(("mean", "median", "mode", "variance", "std_dev", "min", "max"), 0.0)
        return {**zero, "count": pdf.count, "total_sum": 0.0, "percentiles": dict.fromkeys(PERCENTILES, 0.0)}
    vals, probs = pdf.values, pdf.probs
    mean = math.fsum([v * p for v, p in zip(vals, probs, strict=True)])
    variance = math.fsum([(v - mean) ** 2 * p for v, p in zip(vals, probs, strict=True)])
    pct = {k: pdf.percentile(q) for k, q in PERCENTILES.items()}
    return {
        "mean": mean,
        "median": pct["p50"],
        "mode": vals[probs.index(max(probs))],
        "variance": variance,
        "std_dev": math.sqrt(variance),
        "min": vals[0],
        "max": vals[-1],
        "count": pdf.count,
        "total_sum": mean * pdf.count,
        "percentiles": pct,
    }


def _merge(events: list[tuple[float, float]], threshold: float) -> list[tuple[float, float]]:
    """Sorted (time, weight) events, equal times summed, then runs within `threshold` of a
    group's first time folded into it (GuideLLM's `_merge_sorted_times_with_weights`)."""
    out: list[list[float]] = []
    for t, w in sorted(events):
        if out and out[-1][0] == t:
            out[-1][1] += w
        else:
            out.append([t, w])
    if threshold <= 0 or len(out) <= 1:
        return [(t, w) for t, w in out]
    groups: list[tuple[float, float]] = []
    start, acc = out[0]
    for t, w in out[1:]:
        if t - start <= threshold:
            acc += w
        else:
            groups.append((start, acc))
            start, acc = t, w
    groups.append((start, acc))
    return groups


def rate_summary(
    events: Sequence[tuple[float, float]], start: float, end: float, threshold: float = MERGE_THRESHOLD_S
) -> dict[str, Any]:
    """Events per second over [start, end] (events as (time, weight)): each merged event's rate
    is its weight over the time around it (half-way to its neighbours), weighted by that time.
    The mean is the total weight inside the window over its length."""
    inside = [(start, 0.0)] + [e for e in events if start <= e[0] <= end] + [(end, 0.0)]
    merged = _merge(inside, threshold)
    if len(merged) <= 1:
        return summary([], count=len(merged))
    times = [t for t, _ in merged]
    mids = [(a + b) / 2 for a, b in zip(times, times[1:], strict=False)]
    durs = [mids[0] - times[0], *[b - a for a, b in zip(mids, mids[1:], strict=False)], max(times[-1] - mids[-1], 1e-6)]
    rates = [w / d if d > 0 else 0.0 for (_, w), d in zip(merged, durs, strict=True)]
    return summary(rates, durs, count=round(sum(w for _, w in merged)))


def concurrency_mean(intervals: Sequence[tuple[float, float]], start: float, end: float) -> float:
    """The time-weighted mean of concurrency_summary, without building the distribution (GuideLLM
    merges events closer than 0.1 ms first, which moves this mean by at most that much)."""
    inside = sum(max(0.0, min(b, end) - max(a, start)) for a, b in intervals)
    return inside / (end - start) if end > start else 0.0


def concurrency_summary(
    intervals: Sequence[tuple[float, float]], start: float, end: float, threshold: float = MERGE_THRESHOLD_S
) -> dict[str, Any]:
    """Requests in flight over [start, end], each level weighted by how long it lasted."""
    kept = [(a, b) for a, b in intervals if b >= start and a <= end]
    if not kept:
        return summary([], count=0)
    merged = _merge([(a, 1.0) for a, _ in kept] + [(b, -1.0) for _, b in kept], threshold)
    i = bisect.bisect_left([t for t, _ in merged], start)
    steps = [(start, sum(w for _, w in merged[:i])), *merged[i:]]
    j = bisect.bisect_right([t for t, _ in steps], end)
    steps = [*steps[:j], (end, 0.0)]
    levels = [max(0.0, x) for x in accumulate(w for _, w in steps)]
    durs = [max(0.0, b[0] - a[0]) for a, b in zip(steps, steps[1:], strict=False)]
    if not any(d > 0 for d in durs):
        return summary([], count=len(kept))
    return summary(levels[:-1], durs, count=len(kept))
