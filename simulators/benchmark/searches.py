"""GuideLLM 0.8.1's goodput and knee profiles, and runs under its over_saturation constraint.

- `constrained_run`: one profile run with GuideLLM's rampup and, optionally, the over_saturation
  constraint (benchmark/saturation.py): when it fires, nothing more is sent and the requests still
  running are cancelled (incomplete), as GuideLLM's `max_seconds` cut does (loadgen.cut_at).
- `goodput_search` (benchmark/profiles/goodput.py): concurrent probes, doubling from
  `initial_streams` until one fails the target SLO attainment (default 95%), then bisecting
  between the highest passing and lowest failing concurrency until the bracket is within
  `tolerance` of the best (or one stream). Attainment = requests meeting every objective over
  the successful and errored ones (incomplete excluded); a probe is *resolved* when the Wilson
  interval of that fraction lies wholly on one side of the target. The answer is a
  concurrency, not a rate: GuideLLM searches over concurrency because a rate past capacity has
  no steady state.
- `knee_search` (benchmark/profiles/knee.py, benchmark/analysis/knee.py): concurrent runs at
  five or more stream counts; output tokens per second against concurrency is fitted with two
  lines (rising, then flat) at every inner breakpoint, normalised to [0, 1]. A knee is accepted
  when the tail slope is at most 25% of the rising slope, the two-line fit removes at least 50%
  of the one-line error, and the breakpoint reaches 85% of the peak throughput; the knee is the
  lines' crossing. With `adaptive`, one more grid of up to 2 x 5 + 1 points, `max_step` apart,
  is run around it.

Where the simulation differs: GuideLLM's knee analysis also cross-checks the over-saturation
detector's verdict per concurrency; here the knee is the throughput fit alone (its
"throughput_only" assessment). The SLO objectives are the course's (TTFT and TPOT bounds).
"""

import math
import random
from collections.abc import Sequence
from typing import Any

from ..engine.cluster import EngineSpec, serve
from ..engine.metrics import Slo
from ..engine.workload import Lengths
from .loadgen import LoadRun, measure, requests_for
from .saturation import OverSaturation, approx_t_ppf, detect, with_rampup

MIN_POINTS, MAX_TAIL_SLOPE_RATIO, MIN_FIT_IMPROVEMENT, MIN_THROUGHPUT_FRACTION = 5, 0.25, 0.50, 0.85


def constrained_run(
    profile: str,
    spec: EngineSpec,
    n: int,
    lengths: Lengths,
    seed: int,
    *,
    rate: float = 1.0,
    users: int = 1,
    rampup: float = 0.0,
    over_saturation: OverSaturation | None = None,
    **stats: Any,
) -> tuple[LoadRun, dict[str, Any]]:
    """A profile run with rampup and the over_saturation constraint: (the run, the detector's state);
    `stats`: loadgen.measure's slo, warmup and cooldown."""
    reqs = requests_for(profile, random.Random(seed), n, lengths, rate=rate, users=users)
    served = serve(with_rampup(profile, reqs, rate=rate, users=users, rampup=rampup), spec, keep_series=False)
    state: dict[str, Any] = {"stop_s": None, "is_over_saturated": False}
    if over_saturation is not None:
        state = detect(served.records, over_saturation, [r.arrival_s for r in served.dropped])
    run = measure(served, profile, rate, max_seconds=state["stop_s"] or None, slots=spec.sched.max_num_seqs, **stats)
    return run, state


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """GuideLLM's Wilson score interval (utils/statistics.py), z from its t quantile at 1e9 df."""
    if trials <= 0:
        return 0.0, 1.0
    successes = min(max(successes, 0), trials)
    confidence = min(max(confidence, 0.5), 0.999)
    z = approx_t_ppf((1.0 + confidence) / 2.0, 1.0e9)
    p = successes / trials
    den = 1.0 + z * z / trials
    center = (p + z * z / (2.0 * trials)) / den
    spread = z * math.sqrt(p * (1.0 - p) / trials + z * z / (4.0 * trials**2)) / den
    return max(0.0, center - spread), min(1.0, center + spread)


def attainment(run: LoadRun) -> tuple[float, int]:
    """GuideLLM's (slo_attainment, determined requests): conforming over successful + errored."""
    m = run.metrics
    attempted = m["num_successful"] + m["num_errored"] + m["num_incomplete"]
    determined = int(m["num_successful"] + m["num_errored"])
    return (round(m["slo_attainment"] * attempted) / determined if determined else 0.0), determined


def goodput_search(
    spec: EngineSpec,
    n: int,
    lengths: Lengths,
    seed: int,
    slo: Slo,
    *,
    target_attainment: float = 0.95,
    initial_streams: int = 4,
    max_streams: int = 1024,
    tolerance: float = 0.1,
    max_probes: int = 15,
    confidence: float = 0.95,
    **constraints: Any,
) -> dict[str, Any]:
    """GuideLLM's goodput profile: {"probes", "best_passing_streams", "lowest_failing_streams", "stop_reason"};
    `constraints`: constrained_run's rampup and over_saturation."""
    probes: list[dict[str, Any]] = []
    best = worst = None
    nxt: int | None = initial_streams
    reason = None
    while nxt is not None:
        if len(probes) >= max_probes:
            reason = "max_probes_exhausted"
            break
        run, state = constrained_run("concurrent", spec, n, lengths, seed, users=nxt, slo=slo, **constraints)
        att, det = attainment(run)
        lo, hi = wilson_interval(round(att * det), det, confidence)
        probe = {
            "streams": nxt,
            "attainment": att,
            "attainment_lower": lo,
            "attainment_upper": hi,
            "determined_requests": det,
            "goodput": run.metrics["goodput_per_s"],
            "passed": att >= target_attainment,
            "resolved": lo >= target_attainment or hi < target_attainment,
            "aborted": bool(state["is_over_saturated"]),
        }
        probes.append(probe)
        if probe["aborted"]:
            reason = "constraint_stopped_escalation"
            break
        if probe["passed"]:
            best = nxt if best is None else max(best, nxt)
        else:
            worst = nxt if worst is None else min(worst, nxt)
        nxt, reason = _advance(best, worst, initial_streams, max_streams, tolerance, probes)
    return {"probes": probes, "best_passing_streams": best, "lowest_failing_streams": worst, "stop_reason": reason}


def _advance(
    best: int | None, worst: int | None, initial: int, max_streams: int, tolerance: float, probes: list[dict[str, Any]]
) -> tuple[int | None, str | None]:
    """GuideLLM GoodputProfile._advance: double, walk down, or bisect; or stop with a reason."""
    if worst is None:
        current = best if best is not None else initial
        if current >= max_streams:
            return None, "max_streams_reached"
        return min(current * 2, max_streams), None
    if best is None:
        if worst <= 1:
            resolved = all(p["resolved"] for p in probes)
            return None, "objectives_unmet_at_minimum" if resolved else "indeterminate_at_minimum"
        return worst // 2, None
    if worst - best <= max(1, tolerance * best):
        return None, "converged"
    return (best + worst) // 2, None


def _line_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    xm, ym = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - xm) ** 2 for x in xs)
    slope = sum((x - xm) * (y - ym) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0
    icpt = ym - slope * xm
    return icpt, slope, sum((y - (icpt + slope * x)) ** 2 for x, y in zip(xs, ys, strict=True))


def find_throughput_knee(concurrencies: Sequence[float], throughputs: Sequence[float]) -> dict[str, Any]:
    """GuideLLM's find_throughput_knee: {"status": "ok" | "no_knee", "reason", "knee", ...}."""
    by: dict[float, list[float]] = {}
    for c, y in zip(concurrencies, throughputs, strict=True):
        by.setdefault(float(c), []).append(float(y))
    xs = sorted(by)
    ys = [sum(by[x]) / len(by[x]) for x in xs]
    if len(xs) < MIN_POINTS:
        return {
            "status": "no_knee",
            "reason": f"Need at least {MIN_POINTS} distinct concurrency points; found {len(xs)}",
        }
    if xs[-1] == xs[0] or max(ys) == min(ys):
        return {"status": "no_knee", "reason": "The throughput curve has no usable range"}
    nx = [(x - xs[0]) / (xs[-1] - xs[0]) for x in xs]
    ny = [(y - min(ys)) / (max(ys) - min(ys)) for y in ys]
    single = _line_fit(nx, ny)[2]
    if single <= 1e-12:
        return {"status": "no_knee", "reason": "The throughput curve is approximately linear"}
    fits: list[tuple[Any, ...]] = []  # (error, breakpoint, the two lines, the three tests) of each accepted breakpoint
    stop = len(nx) - 1 if len(nx) == MIN_POINTS else len(nx) - 2
    for i in range(2, stop):
        pi, ps, pe = _line_fit(nx[: i + 1], ny[: i + 1])
        ti, ts, te = _line_fit(nx[i:], ny[i:])
        if ps <= 0:
            continue
        ratio, improvement, fraction = ts / ps, 1.0 - (pe + te) / single, ys[i] / max(ys)
        if ratio > MAX_TAIL_SLOPE_RATIO or improvement < MIN_FIT_IMPROVEMENT or fraction < MIN_THROUGHPUT_FRACTION:
            continue
        fits.append((pe + te, i, pi, ps, ti, ts, ratio, improvement, fraction))
    if not fits:
        return {"status": "no_knee", "reason": "No breakpoint satisfied the saturation thresholds"}
    _, i, pi, ps, ti, ts, ratio, improvement, fraction = min(fits)
    k = (ti - pi) / (ps - ts) if abs(ps - ts) > 1e-12 else nx[i]
    if not nx[i - 1] <= k <= nx[i + 1]:
        k = nx[i]
    knee = xs[0] + k * (xs[-1] - xs[0])
    eps = (xs[-1] - xs[0]) * 1e-9
    return {
        "status": "ok",
        "reason": "A rising segment followed by a substantially flatter tail was detected",
        "knee": knee,
        "saturation_concurrency": next((x for x in xs if x >= knee - eps), xs[-1]),
        "breakpoint_concurrency": xs[i],
        "slope_ratio": ratio,
        "fit_improvement": improvement,
        "throughput_fraction": fraction,
    }


def adaptive_grid(center: float, points_each_side: int = 5, max_step: int = 5) -> list[int]:
    """GuideLLM's _adaptive_grid: integer points around `center`, the largest step that keeps them positive."""
    anchor, step = max(1, math.floor(center + 0.5)), 1
    for step in range(max_step, 0, -1):
        anchor = max(step, math.floor(center / step + 0.5) * step)
        if anchor - points_each_side * step > 0:
            break
    return sorted({anchor + k * step for k in range(-points_each_side, points_each_side + 1) if anchor + k * step > 0})


def knee_search(
    spec: EngineSpec,
    n: int,
    lengths: Lengths,
    seed: int,
    streams: Sequence[int],
    *,
    adaptive: bool = False,
    points_each_side: int = 5,
    max_step: int = 5,
    rampup: float = 0.0,
) -> dict[str, Any]:
    """GuideLLM's knee profile: {"points": [(streams, output tok/s)], "initial", "final"} (knee fits)."""
    if len(set(streams)) < MIN_POINTS or list(streams) != sorted(set(streams)):
        raise ValueError(f"the knee profile needs at least {MIN_POINTS} distinct concurrencies in increasing order")

    def probe(u: int) -> float:
        run, _ = constrained_run("concurrent", spec, n, lengths, seed, users=u, rampup=rampup)
        return run.metrics["output_tokens_per_s"]

    points = {u: probe(u) for u in streams}  # streams -> output tokens per second
    initial = find_throughput_knee(list(points), list(points.values()))
    if adaptive and initial["status"] == "ok":
        points |= {u: probe(u) for u in adaptive_grid(initial["knee"], points_each_side, max_step) if u not in points}
    final = find_throughput_knee(list(points), list(points.values()))
    return {"points": list(points.items()), "initial": initial, "final": final}
