"""GuideLLM 0.8.1's over_saturation stopping constraint and its rampup, on a simulated run.

Over-saturation (scheduler/constraints/saturation.py, "OSD"): each time a request is sent the
detector records (seconds since the start, requests in flight), and each time a first token
arrives (seconds since the start, its TTFT). Both series are kept in a sliding window (at most
`max_window_seconds` old and at most `maximum_window_ratio` of all points seen); a least-squares
slope is fitted to each, with a t-distribution margin of error relative to the slope. The run is
over-saturated, and stopped (no more sends, the running requests cancelled: incomplete), when,
after `min_seconds`, at least half the windowed TTFTs exceed `minimum_ttft` and both slopes are
positive with a margin of error under `moe_threshold` (the TTFT slope only once it has
`minimum_window_size` points). A server at steady state has flat slopes; one whose queue grows
has both rising.

Rampup (scheduler/strategies.py): constant rate rises linearly from 0 over `rampup` seconds
(request i, from 1, at sqrt(2 i R / rate) while i <= rate R / 2, then R + (i - rate R / 2) / rate);
concurrent users start `rampup / streams` apart. Poisson has no rampup in 0.8.1.

Where the simulation differs: GuideLLM checks on every scheduler update and poll in wall-clock
time; here the detector is fed the run's own send and first-token events in simulated time, so
it decides at the first event at which the rule holds (a poll between events changes nothing,
since only events add points). The simulated server has no client overhead.
"""

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..engine.metrics import RequestRecord
from ..engine.workload import Request


def approx_t_ppf(p: float, df: float) -> float:
    """GuideLLM's t quantile (utils/statistics.py): Abramowitz & Stegun 26.2.23 for z, then two
    Cornish-Fisher terms for the t correction."""
    if df <= 0:
        return float("nan")
    c, d = (2.515517, 0.802853, 0.010328), (1.432788, 0.189269, 0.001308)
    t = math.sqrt(-2.0 * math.log(p if p < 0.5 else 1.0 - p))
    z = t - ((c[2] * t + c[1]) * t + c[0]) / (((d[2] * t + d[1]) * t + d[0]) * t + 1.0)
    z = -z if p < 0.5 else z
    g1 = (z**3 + z) / 4.0
    g2 = (5.0 * z**4 + 16.0 * z**3 + 3.0 * z**2) / 96.0
    return z + g1 / df + g2 / (df * df)


class SlopeChecker:
    """Running least-squares slope of (x, y) points with GuideLLM's margin-of-error test."""

    def __init__(self, moe_threshold: float, confidence: float, eps: float = 1e-12):
        self.n, self.sx, self.sy, self.sxy, self.sxx, self.syy = 0, 0.0, 0.0, 0.0, 0.0, 0.0
        self.moe_threshold, self.confidence, self.eps = moe_threshold, confidence, eps
        self.slope: float | None = None
        self.margin_of_error: float | None = None

    def add(self, x: float, y: float, sign: int = 1) -> None:
        self.n += sign
        self.sx += sign * x
        self.sy += sign * y
        self.sxy += sign * x * y
        self.sxx += sign * x * x
        self.syy += sign * y * y

    def check(self, effective_n: float) -> bool:
        """True when the slope is positive and its margin of error (relative) is under the threshold."""
        if effective_n < 3:
            return False
        cxx = max(self.sxx - self.sx**2 / self.n, self.eps)
        cxy = self.sxy - self.sx * self.sy / self.n
        cyy = self.syy - self.sy**2 / self.n
        slope = cxy / cxx
        rss = max(cyy - cxy**2 / cxx, 0.0)
        dof = effective_n - 2
        se = (rss / dof / cxx) ** 0.5
        t = approx_t_ppf(1 - (1 - self.confidence) / 2, df=dof)
        self.slope, self.margin_of_error = slope, t * se / max(slope, self.eps)
        return slope > 0 and self.margin_of_error < self.moe_threshold


@dataclass(frozen=True)
class OverSaturation:
    """GuideLLM's `--over-saturation` arguments and their defaults (OverSaturationConstraintArgs)."""

    min_seconds: float = 30.0
    max_window_seconds: float = 120.0
    moe_threshold: float = 2.0
    minimum_ttft: float = 2.5
    maximum_window_ratio: float = 0.75
    minimum_window_size: int = 5
    confidence: float = 0.95


class _Window:
    """One detector series: points in arrival order, pruned by count ratio and by age."""

    def __init__(self, cfg: OverSaturation):
        self.cfg, self.total = cfg, 0
        self.points: deque[tuple[float, float]] = deque()
        self.slope = SlopeChecker(cfg.moe_threshold, cfg.confidence)

    def add(self, t: float, y: float) -> None:
        self.total += 1
        self.points.append((t, y))
        self.slope.add(t, y)

    def prune(self, now: float) -> list[float]:
        """Drop old points; the y values dropped (the TTFT series counts its violations)."""
        gone = []
        while len(self.points) > int(self.total * self.cfg.maximum_window_ratio) or (
            self.points and now - self.points[0][0] > self.cfg.max_window_seconds
        ):
            t, y = self.points.popleft()
            self.slope.add(t, y, -1)
            gone.append(y)
        return gone


def detect(records: list[RequestRecord], cfg: OverSaturation, dropped: Sequence[float] = ()) -> dict[str, Any]:
    """Feed a run's events to GuideLLM's detector in time order: {"stop_s": seconds after the first
    send at which it fires (None: never), and its last slopes, margins and counts}."""
    sends = sorted([r.arrival_s for r in records] + list(dropped))
    if not sends:
        return {"stop_s": None, "is_over_saturated": False}
    t0 = sends[0]
    ends = sorted(r.arrival_s + r.e2e_s for r in records)
    # Events: (time, order, kind, value); a send sees the requests in flight, itself included.
    events = [(a - t0, 1, "send", 0.0) for a in sends]
    events += [(r.arrival_s + r.ttft_s - t0, 0, "ttft", r.ttft_s) for r in records]
    events.sort()
    conc, ttft = _Window(cfg), _Window(cfg)
    violations, started, e = 0, 0, 0
    for t, _, kind, y in events:
        if kind == "send":
            started += 1
            while e < len(ends) and ends[e] - t0 <= t:
                e += 1
            conc.add(t, float(started - e))
        else:
            ttft.add(t, y)
            violations += y > cfg.minimum_ttft
        conc.prune(t)
        violations -= sum(1 for v in ttft.prune(t) if v > cfg.minimum_ttft)
        n_conc, n_ttft = min(t, conc.slope.n), min(t, ttft.slope.n)
        early = t < max(cfg.min_seconds, cfg.minimum_ttft)
        if early or ttft.slope.n > 2 * violations or n_conc < cfg.minimum_window_size:
            continue
        fired = conc.slope.check(n_conc)
        if n_ttft >= cfg.minimum_window_size:
            fired = ttft.slope.check(n_ttft) and fired
        if fired:
            return {"stop_s": t, "is_over_saturated": True, **_state(conc, ttft, violations)}
    return {"stop_s": None, "is_over_saturated": False, **_state(conc, ttft, violations)}


def _state(conc: _Window, ttft: _Window, violations: int) -> dict[str, Any]:
    """Each series' slope, its margin of error and its points (concurrent_*, ttft_*), then the violations."""
    out: dict[str, Any] = {}
    for name, s in (("concurrent", conc.slope), ("ttft", ttft.slope)):
        out |= {f"{name}_slope": s.slope, f"{name}_slope_moe": s.margin_of_error, f"{name}_n": s.n}
    return out | {"ttft_violations": violations}


def constant_rampup_times(n: int, rate: float, rampup: float) -> list[float]:
    """Send times of n requests at a constant rate rising linearly from 0 over `rampup` seconds
    (GuideLLM AsyncConstantStrategy, indices from 1), shifted so the first is sent at 0."""
    if rampup <= 0:
        return [i / rate for i in range(n)]
    n_ramp = rate * rampup / 2.0
    return [
        0.0 if i == 1 else math.sqrt(2.0 * i * rampup / rate) if i <= n_ramp else rampup + (i - n_ramp) / rate
        for i in range(1, n + 1)
    ]


def with_rampup(profile: str, requests: list[Request], *, rate: float, users: int, rampup: float) -> list[Request]:
    """Requests arranged by loadgen.arrange, with GuideLLM's rampup (module docstring) applied."""
    if profile == "constant":
        times = constant_rampup_times(len(requests), rate, rampup)
        return [r._replace(arrival_s=t) for r, t in zip(requests, times, strict=True)]
    if profile == "concurrent":
        return [r._replace(arrival_s=rampup * r.id / max(1, users)) if r.after is None else r for r in requests]
    return requests
