"""What a benchmark reports: per-request latencies, their percentiles, throughput and goodput.

Per request (times in seconds, from the request's arrival at the server):
- TTFT: arrival to the first output token (includes queueing and the whole prefill).
- queueing delay: arrival to the first step that schedules it (vLLM's "queued" interval).
- e2e: arrival to the last output token.
- TPOT, as vLLM's benchmark defines it: (e2e - TTFT) / (output_tokens - 1), the mean gap
  between output tokens after the first; undefined for one-token answers (left out).
- ITL: the gaps between consecutive tokens. vLLM's benchmark pools every gap of every request
  before taking percentiles; GuideLLM averages the gaps of each request (its "inter-token
  latency", first token excluded) and takes percentiles over requests. We report GuideLLM's:
  per request it equals vLLM's TPOT, so `itl` and `tpot` percentiles coincide here; pooled
  gaps would weight long answers more and show single stalls (a preemption) that a mean hides.
- GuideLLM's "time per output token" INCLUDES the first token: e2e / output_tokens. It is
  reported as `time_per_output_token` and is larger than TPOT whenever TTFT exceeds a gap.

Statistics: mean and the p50, p90, p95, p99 percentiles with linear interpolation between
order statistics (numpy's default). Throughput counts requests and output tokens that finish
inside the measurement window, divided by the window. Goodput (DistServe) is the throughput
times the share of measured requests that met every SLO bound. Warm-up and cool-down: requests that arrive in the first `warmup`
or last `cooldown` fraction of the arrival span are left out of the statistics (GuideLLM's
windows exclude them likewise).

References: 1) vLLM benchmarks/benchmark_serving.py (TTFT, TPOT, ITL, e2el); 2) GuideLLM
docs/guides/metrics.md (reference section 6); 3) Zhong et al. 2024, DistServe (goodput).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from .scheduler import Seq

STATS = ("mean", "p50", "p90", "p95", "p99")
MAX_POINTS = 300


def percentile(xs: list[float], q: float) -> float:
    """q-th percentile (0-100) with linear interpolation; xs must be sorted and non-empty."""
    if len(xs) == 1:
        return xs[0]
    pos = (len(xs) - 1) * q / 100.0
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def describe(values: list[float]) -> dict[str, float]:
    """mean, p50, p90, p95, p99 of values (zeros when there are none)."""
    if not values:
        return dict.fromkeys(STATS, 0.0)
    xs = sorted(values)
    return {
        "mean": sum(xs) / len(xs),
        "p50": percentile(xs, 50),
        "p90": percentile(xs, 90),
        "p95": percentile(xs, 95),
        "p99": percentile(xs, 99),
    }


class RequestRecord(NamedTuple):  # a named tuple: one per finished request, and tuples build fastest
    id: int
    arrival_s: float
    queue_s: float
    ttft_s: float
    e2e_s: float
    tpot_s: float | None  # None for a one-token answer
    prompt_tokens: int
    output_tokens: int
    cached_tokens: int
    num_preemptions: int
    replica: int

    @property
    def time_per_output_token_s(self) -> float:
        """GuideLLM's time per output token: e2e / output tokens, first token included."""
        return self.e2e_s / self.output_tokens


def records(done: list[Seq]) -> list[RequestRecord]:
    out: list[RequestRecord] = []
    append = out.append
    for s in sorted(done, key=_by_id):
        req = s.req
        n = req.output_tokens
        t0 = s.t_arrival
        e2e = s.t_finish - t0
        ttft = s.t_first_token - t0
        append(
            RequestRecord(
                s.id,
                t0,
                s.t_scheduled - t0,
                ttft,
                e2e,
                (e2e - ttft) / (n - 1) if n > 1 else None,
                req.prompt_tokens,
                n,
                s.cached_tokens,
                s.num_preemptions,
                s.replica,
            )
        )
    return out


_by_id = operator.attrgetter("id")


@dataclass(frozen=True)
class Slo:
    ttft_s: float = 0.5  # seed 000's example SLO: TTFT under 500 ms ...
    tpot_s: float = 0.05  # ... and TPOT under 50 ms

    def met(self, r: RequestRecord) -> bool:
        return r.ttft_s <= self.ttft_s and (r.tpot_s is None or r.tpot_s <= self.tpot_s)


def window(recs: list[RequestRecord], warmup: float, cooldown: float) -> tuple[list[RequestRecord], float, float]:
    """Requests arriving inside the measurement window, and the window's (start, end) in seconds.

    The window spans arrivals [first + warmup * span, last - cooldown * span]. When all
    requests arrive at once (span 0: the throughput profile) it runs to the last completion.
    """
    if not recs:
        return [], 0.0, 0.0
    arrivals = [r.arrival_s for r in recs]  # (lists, not generators: faster in Pyodide)
    first, last = min(arrivals), max(arrivals)
    span = last - first
    lo, hi = first + warmup * span, last - cooldown * span
    kept = [r for r in recs if lo <= r.arrival_s <= hi] or recs
    if hi - lo <= 1e-9 * max(1.0, hi):
        hi = max([r.arrival_s + r.e2e_s for r in recs])
    return kept, lo, hi


def summarize(
    recs: list[RequestRecord],
    *,
    slo: Slo | None = None,
    warmup: float = 0.0,
    cooldown: float = 0.0,
    dropped_arrivals: list[float] | None = None,
) -> dict[str, float]:
    """Flat metrics: ttft_s_p99, tpot_s_mean, ..., throughput, goodput, cache hit rate.

    `dropped_arrivals` are the arrival times of requests the server refused (longer than the
    context): those inside the window count against SLO attainment, as GuideLLM counts errors.
    """
    kept, start, end = window(recs, warmup, cooldown)
    dur = max(end - start, 1e-12)
    out: dict[str, float] = {}
    tpot = describe([r.tpot_s for r in kept if r.tpot_s is not None])
    series = {
        "ttft_s": describe([r.ttft_s for r in kept]),
        "tpot_s": tpot,
        "itl_s": tpot,  # per request, GuideLLM's ITL is vLLM's TPOT (module docstring)
        "e2e_s": describe([r.e2e_s for r in kept]),
        "queue_s": describe([r.queue_s for r in kept]),
        "time_per_output_token_s": describe([r.e2e_s / r.output_tokens for r in kept]),  # the property, inlined
    }
    for name, stats in series.items():
        for stat, v in stats.items():
            out[f"{name}_{stat}"] = v
    prompt = sum([r.prompt_tokens for r in kept])
    # Throughput: what completes inside the window (any arrival time), per second of window.
    ended = [r for r in recs if start <= r.arrival_s + r.e2e_s <= end]
    out["num_requests"] = len(kept)
    out["request_throughput_per_s"] = len(ended) / dur
    out["output_tokens_per_s"] = sum([r.output_tokens for r in ended]) / dur
    out["cache_hit_rate"] = sum([r.cached_tokens for r in kept]) / prompt if prompt else 0.0
    out["num_preemptions"] = sum([r.num_preemptions for r in kept])
    slo = slo or Slo()
    good = [r for r in kept if slo.met(r)]
    errors = len([t for t in dropped_arrivals or [] if start <= t <= end])
    attempted = len(kept) + errors
    out["slo_attainment"] = len(good) / attempted if attempted else 0.0
    out["goodput_per_s"] = out["request_throughput_per_s"] * len(good) / len(kept) if kept else 0.0
    return out


def downsample(points: list[tuple[Any, ...]], limit: int = MAX_POINTS) -> list[tuple[Any, ...]]:
    """At most `limit` points, evenly spaced in index, keeping the first and the last."""
    if len(points) <= limit:
        return points
    step = (len(points) - 1) / (limit - 1)
    return [points[round(i * step)] for i in range(limit)]


def time_average(points: Sequence[tuple[float, float]]) -> float:
    """Time-weighted mean of a step function sampled as (t, value) at each change."""
    total = area = 0.0
    for (t0, v0), (t1, _) in zip(points, points[1:], strict=False):
        area += v0 * (t1 - t0)
        total += t1 - t0
    return area / total if total > 0 else (points[0][1] if points else 0.0)


def littles_law(recs: list[RequestRecord], t1: float, t2: float) -> tuple[float, float]:
    """Both sides of L = lambda W over the window [t1, t2]: (L measured, lambda x W).

    L is the time-average of the number of requests in the system inside the window; lambda
    the arrivals inside it per second; W the mean time in system of those arrivals.
    """
    changes = sorted([(r.arrival_s, 1) for r in recs] + [(r.arrival_s + r.e2e_s, -1) for r in recs])
    n, area, prev = 0, 0.0, t1
    for t, d in changes:
        if t > t1:
            area += n * (min(t, t2) - prev)
            prev = min(t, t2)
        if t >= t2:
            break
        n += d
    inside = [r for r in recs if t1 <= r.arrival_s < t2]
    if not inside:
        return 0.0, 0.0
    lam = len(inside) / (t2 - t1)
    return area / (t2 - t1), lam * sum(r.e2e_s for r in inside) / len(inside)
