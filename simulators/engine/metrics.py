"""What a benchmark reports, measured as GuideLLM 0.8 measures it.

Per request (times in seconds, from the moment the client sends it, GuideLLM's request start):
- TTFT: start to the first output token (includes queueing and the whole prefill).
- queueing delay: start to the first step that schedules it (vLLM's "queued" interval).
- e2e (GuideLLM's request latency): start to the last output token.
- TPOT, as vLLM's benchmark defines it: (e2e - TTFT) / (output_tokens - 1), undefined for
  one-token answers; per request, this is what an SLO bounds (`Slo`).
- ITL (GuideLLM's inter-token latency): the same per-request mean gap, but its distribution is
  weighted by output tokens - 1, so a long answer counts once per gap, not once per request.
- GuideLLM's time per output token INCLUDES the first token: e2e / output_tokens, weighted by
  output tokens. It is larger than the ITL whenever TTFT exceeds a gap.

The measurement window (GuideLLM benchmark/schemas/accumulator.py) runs from the first request
start to the last completion; every request that OVERLAPS it counts (TTFT is windowed on the
first token, ITL from the first token on). Warm-up and cool-down are none by default; each is a
`Phase`: a fraction of the run, seconds, or a number of requests (TransientPhaseConfig).
Throughput is GuideLLM's rate distribution mean: completions inside the window over the window.
Concurrency is time-weighted (requests in flight, averaged over time). Percentiles follow the
project's one rule (simulators/core/stats.py: the first value whose weighted CDF reaches q).

Statuses: a request that finished is successful; one cut by `max_seconds` while running is
incomplete; one the server refused (longer than the context) is errored. Goodput (DistServe) is
the throughput times the share of successful requests that met every SLO bound.

References: 1) vLLM benchmarks/benchmark_serving.py (TTFT, TPOT, ITL, e2el); 2) GuideLLM 0.8.1
src/guidellm/benchmark/schemas/metrics.py and accumulator.py, schemas/base/request_stats.py,
schemas/benchmark/transient.py; 3) Zhong et al. 2024, DistServe (goodput).
"""

import heapq
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..core import stats
from .sequence import Seq

STATS = ("mean", "p50", "p90", "p95", "p99")
MAX_POINTS = 300


def describe(values: Sequence[float], weights: Sequence[float] | None = None) -> dict[str, float]:
    """mean, p50, p90, p95, p99 and count of (optionally weighted) values, by stats' one rule."""
    pdf = stats.Pdf(values, weights)
    if not pdf.values:
        return {**dict.fromkeys(STATS, 0.0), "count": 0}
    mean = sum([v * p for v, p in zip(pdf.values, pdf.probs, strict=True)])
    out = {"mean": mean, **{k: pdf.percentile(int(k[1:]) / 100) for k in STATS[1:]}}
    out["count"] = len(values) if weights is None else round(sum(weights))
    return out


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


def records(done: list[Seq]) -> list[RequestRecord]:
    out: list[RequestRecord] = []
    for s in sorted(done, key=operator.attrgetter("id")):
        r, t0 = s.req, s.t_arrival
        n, e2e, ttft = r.output_tokens, s.t_finish - t0, s.t_first_token - t0
        tpot = (e2e - ttft) / (n - 1) if n > 1 else None
        counts = (r.prompt_tokens, n, s.cached_tokens, s.num_preemptions, s.replica)
        out.append(RequestRecord(s.id, t0, s.t_scheduled - t0, ttft, e2e, tpot, *counts))
    return out


@dataclass(frozen=True)
class Slo:
    ttft_s: float = 0.5  # seed 000's example SLO: TTFT under 500 ms ...
    tpot_s: float = 0.05  # ... and TPOT under 50 ms

    def met(self, r: RequestRecord) -> bool:
        return r.ttft_s <= self.ttft_s and (r.tpot_s is None or r.tpot_s <= self.tpot_s)


@dataclass(frozen=True)
class Phase:
    """A warm-up or cool-down as GuideLLM takes it: `kind` "none", "percent" (a fraction of the
    run: of max_seconds when the run is timed, else of the requests), "seconds" or "requests"."""

    kind: str = "none"
    amount: float = 0.0

    @staticmethod
    def parse(text: str | float | None) -> "Phase":
        """'' / 0 -> none; '10%' -> percent 0.1; '5s' -> seconds; '20' -> requests; 0.1 -> percent
        (a bare number below 1 is a fraction and from 1 on a count, as GuideLLM's --warmup)."""
        if text is None or text == "" or text == 0:
            return Phase()
        t = str(text).strip().lower()
        try:
            if t.endswith("%"):
                v, kind = float(t[:-1]) / 100, "percent"
            elif t.endswith("s"):
                v, kind = float(t[:-1]), "seconds"
            else:
                v = float(t)
                kind = "percent" if v < 1 else "requests"
        except ValueError:
            raise ValueError(f"warm-up / cool-down {text!r}: write 10%, 5s, 20 (requests) or 0") from None
        if v < 0 or (kind == "percent" and v >= 1):
            raise ValueError(
                f"warm-up / cool-down {text!r} out of range (a percent below 100, seconds or requests >= 0)"
            )
        return Phase(kind, v) if v > 0 else Phase()


def as_phase(x: Phase | str | float | None) -> Phase:
    return x if isinstance(x, Phase) else Phase.parse(x)


def window(
    recs: list[RequestRecord],
    warmup: Phase | None = None,
    cooldown: Phase | None = None,
    *,
    extra_starts: Sequence[float] = (),
    max_seconds: float | None = None,
) -> tuple[float, float]:
    """GuideLLM's measurement window (start, end): first request start to last completion,
    moved in by the warm-up and the cool-down (accumulator.py GenerativeBenchmarkTimings)."""
    starts = sorted([r.arrival_s for r in recs] + list(extra_starts))
    if not starts:
        return 0.0, 0.0
    ends = sorted([r.arrival_s + r.e2e_s for r in recs]) or starts
    first, last = starts[0], max(ends[-1], starts[-1])
    # GuideLLM's max_duration ends the window at its stop time, whatever still runs.
    lo, hi = first, min(last, first + max_seconds) if max_seconds else last
    n = len(starts)
    w, c = warmup or Phase(), cooldown or Phase()
    if w.kind == "seconds" or (w.kind == "percent" and max_seconds):
        lo = first + (w.amount if w.kind == "seconds" else w.amount * (max_seconds or 0.0))
    elif w.kind in ("requests", "percent"):
        k = int(w.amount) if w.kind == "requests" else int(w.amount * n)
        lo = starts[min(k, n - 1)]  # the start of the first request after the warm-up ones
    if c.kind == "seconds" or (c.kind == "percent" and max_seconds):
        span = c.amount if c.kind == "seconds" else c.amount * (max_seconds or 0.0)
        hi = first + (max_seconds if max_seconds else last - first) - span
    elif c.kind in ("requests", "percent"):
        k = int(c.amount) if c.kind == "requests" else int(c.amount * n)
        hi = ends[max(len(ends) - 1 - k, 0)]  # completion of the last request before the cool-down
    return lo, max(hi, lo)


def overlapping(recs: list[RequestRecord], lo: float, hi: float) -> list[RequestRecord]:
    """Requests whose [start, end] overlaps [lo, hi] (GuideLLM get_within_range, closed=False)."""
    return [r for r in recs if r.arrival_s + r.e2e_s >= lo and r.arrival_s <= hi]


def summarize(recs: list[RequestRecord], *, slo: Slo | None = None, **apart: Any) -> dict[str, float]:
    """Flat metrics: ttft_s_p99, itl_s_mean, ..., their `_count`, throughput, goodput, statuses.
    `recs` are the successful requests; `apart`: summarize_apart's options: `incomplete` the
    requests cut while running (e2e ends at the cut), `dropped_arrivals` the refused ones' starts."""
    out, kept, attempted = summarize_apart(recs, **apart)
    return {**out, **slo_figures(kept, attempted, out["request_throughput_per_s"], slo)}


def summarize_apart(
    recs: list[RequestRecord],
    *,
    warmup: Phase | str | float | None = None,
    cooldown: Phase | str | float | None = None,
    dropped_arrivals: list[float] | None = None,
    incomplete: list[RequestRecord] | None = None,
    max_seconds: float | None = None,
    slots: int = 0,
) -> tuple[dict[str, float], list[RequestRecord], int]:
    """summarize() but for the SLO's two figures, and what slo_figures() computes them from (the
    requests measured, the requests attempted): a new SLO then re-measures nothing else."""
    errored = dropped_arrivals or []
    cut = incomplete or []
    warmup, cooldown = as_phase(warmup), as_phase(cooldown)
    lo, hi = window([*recs, *cut], warmup, cooldown, extra_starts=errored, max_seconds=max_seconds)
    kept = overlapping(recs, lo, hi)
    ignored = False
    if (not kept or hi <= lo) and recs and (warmup.kind != "none" or cooldown.kind != "none"):
        # A warm-up and cool-down longer than the run leave nothing to measure: measure the whole
        # run instead (flagged), rather than report zeros as if the server had done nothing.
        lo, hi = window([*recs, *cut], extra_starts=errored, max_seconds=max_seconds)
        kept = overlapping(recs, lo, hi)
        ignored = True
    dur = max(hi - lo, 1e-12)
    first_tok = [r for r in recs if r.arrival_s + r.ttft_s >= lo and r.arrival_s <= hi]
    after_first = [r for r in recs if r.arrival_s + r.e2e_s >= lo and r.arrival_s + r.ttft_s <= hi]
    series = {
        "ttft_s": describe([r.ttft_s for r in first_tok]),
        "tpot_s": describe([r.tpot_s for r in kept if r.tpot_s is not None]),
        # GuideLLM's ITL: weighted by output tokens - 1; its TPOT: e2e / n, weighted by n.
        "itl_s": describe([r.tpot_s or 0.0 for r in after_first], [r.output_tokens - 1.0 for r in after_first]),
        "e2e_s": describe([r.e2e_s for r in kept]),
        "queue_s": describe([r.queue_s for r in kept]),
        "time_per_output_token_s": describe(
            [r.e2e_s / r.output_tokens for r in kept], [float(r.output_tokens) for r in kept]
        ),
    }
    out: dict[str, float] = {f"{name}_{stat}": v for name, st in series.items() for stat, v in st.items()}
    prompt = sum([r.prompt_tokens for r in kept])
    ended = [r for r in kept if lo <= r.arrival_s + r.e2e_s <= hi]
    out["num_requests"] = out["num_successful"] = len(kept)
    out["num_incomplete"] = n_inc = len(overlapping(cut, lo, hi))
    out["num_errored"] = n_err = len([t for t in errored if lo <= t <= hi])
    out["window_s"] = hi - lo
    out["phases_ignored"] = float(ignored)
    out["request_throughput_per_s"] = len(ended) / dur
    out["output_tokens_per_s"] = sum([_tokens_inside(r, lo, hi) for r in kept]) / dur
    spans = [(r.arrival_s, r.arrival_s + r.e2e_s) for r in [*kept, *cut]] + [(t, t) for t in errored]
    out["concurrency_mean"] = stats.concurrency_mean(spans, lo, hi)
    out["drain_share"] = drain_s(spans, lo, hi, slots) / dur
    out["cache_hit_rate"] = sum([r.cached_tokens for r in kept]) / prompt if prompt else 0.0
    out["num_preemptions"] = sum([r.num_preemptions for r in kept])
    return out, kept, len(kept) + n_err + n_inc


def slo_figures(kept: list[RequestRecord], attempted: int, throughput: float, slo: Slo | None) -> dict[str, float]:
    """SLO attainment (of the requests attempted) and goodput (the throughput's share that met it)."""
    slo = slo or Slo()
    good = [r for r in kept if slo.met(r)]
    return {
        "slo_attainment": len(good) / attempted if attempted else 0.0,
        "goodput_per_s": throughput * len(good) / len(kept) if kept else 0.0,
    }


def drain_s(spans: list[tuple[float, float]], lo: float, hi: float, slots: int) -> float:
    """How long the window ends with the server emptying: from the later of the last request sent
    and the last moment `slots` or more requests were in flight (every batch slot busy) to the
    end. A figure measured mostly over this drain is not the server's steady state."""
    if not spans:
        return 0.0
    starts = sorted([a for a, _ in spans])
    full_until = lo
    if slots > 0:
        # Starts and ends in time order, an end first at equal times (a request that ends when
        # another starts frees its slot first): two sorted lists merged.
        ends = sorted([(b, -1) for _, b in spans])
        n = 0
        for t, d in heapq.merge(ends, [(a, 1) for a in starts]):
            if n >= slots:
                full_until = t  # full up to this event
            n += d
    return max(0.0, hi - max(starts[-1], full_until, lo))


def _tokens_inside(r: RequestRecord, lo: float, hi: float) -> float:
    """Output tokens of r generated inside [lo, hi]: the first at TTFT, the rest evenly spaced to
    the end (GuideLLM's output_tokens_timings spreads them the same way)."""
    t0, t1, n = r.arrival_s + r.ttft_s, r.arrival_s + r.e2e_s, r.output_tokens
    if lo <= t0 and t1 <= hi:
        return float(n)
    inside = 1.0 if lo <= t0 <= hi else 0.0
    if n > 1 and t1 > t0:
        step = (t1 - t0) / (n - 1)  # token k (1..n-1) at t0 + k * step
        k_lo = max(1, math.ceil((lo - t0) / step))
        k_hi = min(n - 1, int((hi - t0) / step))
        inside += max(0, k_hi - k_lo + 1)
    return inside


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
