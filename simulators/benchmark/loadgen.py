"""Load generation as GuideLLM does it: profiles and a rate sweep (the export: benchmark/export.py).

Profiles (GuideLLM `--profile`):
- synchronous: one request at a time; the next is sent when the previous one ends.
- concurrent: N users in a closed loop, each sending its next request when its last one ends.
- throughput: every request at once (the server's maximum, queueing included).
- constant: open loop, requests exactly 1/rate apart.
- poisson: open loop, exponential gaps at the rate (the honest model of independent users).
- sweep: synchronous and throughput first, then open-loop runs at GuideLLM's rates:
  `linspace(synchronous rate, throughput rate, sweep_size - 1)[1:]` (benchmark/profiles/sweep.py),
  so the last open-loop rate is the throughput profile's measured rate; constant by default.

GuideLLM's goodput and knee profiles, over_saturation stopping and rampup: benchmark/searches.py and
benchmark/saturation.py.

Constraints (GuideLLM scheduler/constraints): `max_requests` is the run's length; `max_seconds`
stops sending at that time after the first start and cuts the requests still running there:
they are *incomplete* (their latency ends at the cut), outside the successful statistics.

Closed loop (synchronous, concurrent) cannot show overload: when the server slows down the
users send less, so the queue never grows. Open loop (constant, poisson) keeps sending, so past
capacity the queue and the latency grow without bound: the knee.

Reference: vllm-project/guidellm 0.8.1, src/guidellm/benchmark/profiles/ (sweep.py,
throughput.py, concurrent.py), scheduler/constraints/request.py, benchmark/schemas/.
"""

import bisect
import random
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from ..engine.cluster import EngineSpec, Served, serve_steps
from ..engine.eventloop import Progress, run_out, show_once
from ..engine.metrics import Phase, RequestRecord, Slo, as_phase, records, slo_figures, summarize_apart
from ..engine.workload import Lengths, Request, arrival_times

CEILING_REQUESTS = 2000  # a server's maximum is read on a run this long (steady state, not start-up and drain)
FEW_SAMPLES = 100  # a p99 from fewer requests rests on one or two of them

SWEEP_SIZE = 10  # GuideLLM's default number of benchmarks in a sweep (synchronous and throughput included)


def requests_for(profile: str, rng: random.Random, n: int, lengths: Lengths, **arrangement: Any) -> list[Request]:
    """n requests arranged by a profile (`arrangement`: arrange's rate and users)."""
    return arrange(profile, [lengths.draw(rng) for _ in range(n)], rng, **arrangement)


def arrange(
    profile: str, drawn: list[tuple[int, int]], rng: random.Random, *, rate: float = 1.0, users: int = 1
) -> list[Request]:
    """requests_for, the (prompt, output) lengths already drawn from `rng` (closed loop: Request.after)."""
    n, closed = len(drawn), profile in ("synchronous", "concurrent")
    users = 1 if profile == "synchronous" else max(1, users)
    kind = "constant" if profile == "constant" else "poisson"
    times = [0.0] * n if closed or profile == "throughput" else arrival_times(rng, n, kind, rate)
    # closed loop: request i is sent when request i - users ends
    after = [i - users if closed and i >= users else None for i in range(n)]
    return [Request(i, times[i], p, o, ((i + 1, p),), after=after[i]) for i, (p, o) in enumerate(drawn)]


@dataclass(frozen=True)
class LoadRun:
    profile: str
    rate: float  # offered rate for open loop; achieved rate for closed loop and throughput
    metrics: dict[str, float]
    concurrency: float  # requests in flight, time-weighted mean over the window (GuideLLM's)


RunKey = tuple[str, tuple[Any, ...], float, int]  # profile, lengths' key, rate, users: what decides a run
T = TypeVar("T")


class ServedMemo:
    """Profile runs of one server, run length and seed, simulating each distinct load only once.

    Warm-up, cool-down and the SLO change only the statistics, not the run: two figures of one
    load share one simulation, and its statistics under the same options are measured once.
    Answers are exactly searches.constrained_run's (shared, not copied: callers only read them)."""

    def __init__(self, spec: EngineSpec, n: int, seed: int):
        self.spec, self.n, self.seed = spec, n, seed
        # Keyed by what decides a run, so equal samplers made by different calls share runs.
        self._served: dict[RunKey, Served] = {}
        # Every run draws its lengths first from a fresh Random(seed): draw them once per
        # distribution, and keep the generator's state after them for the arrival times.
        self._drawn: dict[tuple[Any, ...], tuple[list[tuple[int, int]], Any]] = {}
        self._measured: dict[tuple[Any, ...], LoadRun] = {}  # keyed by the run and the statistics' options
        self._apart: dict[tuple[Any, ...], Apart] = {}  # the same but for the SLO (measure_apart)

    def has(self, profile: str, lengths: Lengths, *, rate: float = 1.0, users: int = 1) -> bool:
        """Whether this load is already simulated (run() would only measure it)."""
        return (profile, lengths.key(), rate, users) in self._served

    def _draw(self, lengths: Lengths) -> tuple[Any, ...]:
        """The lengths' key, their requests' lengths drawn (once) first from a fresh Random(seed)."""
        key = lengths.key()
        if key not in self._drawn:
            rng = random.Random(self.seed)
            self._drawn[key] = ([lengths.draw(rng) for _ in range(self.n)], rng.getstate())
        return key

    def _simulate(self, key: RunKey, every: int) -> Generator[Progress, None, None]:
        """Simulate the load `key` and keep it, yielding what has finished each `every` requests."""
        profile, lengths_key, rate, users = key
        drawn, state = self._drawn[lengths_key]
        rng = random.Random()
        rng.setstate(state)
        # measure() reads only the records, the dropped requests and the event count: no
        # per-step series is recorded, and the replicas (their KV state) are not kept.
        requests = arrange(profile, drawn, rng, rate=rate, users=users)
        served = yield from serve_steps(requests, self.spec, keep_series=False, every=every)
        self._served[key] = replace(served, replicas=[], log=[])

    def stream(
        self,
        profile: str,
        lengths: Lengths,
        show: Callable[[LoadRun, int], T],
        *,
        rate: float = 1.0,
        users: int = 1,
        share: float = 0.25,
        **stats: Any,
    ) -> Generator[T, None, LoadRun]:
        """run(); and when the load is not yet simulated, show(the requests finished so far,
        measured as run() measures them, how many) once, when `share` of them have finished: a page
        draws the run as it goes, as GuideLLM's progress display does (share 0: no partial)."""
        key = (profile, self._draw(lengths), rate, users)
        if key not in self._served:

            def partial(progress: Progress) -> T:
                done, dropped, _ = progress
                so_far = Served(records(done), list(dropped), 0, [], [])
                return show(measure(so_far, profile, rate, slots=self.spec.sched.max_num_seqs, **stats), len(done))

            yield from show_once(self._simulate(key, int(self.n * share)), partial)
        return self.run(profile, lengths, rate=rate, users=users, **stats)

    def run(
        self,
        profile: str,
        lengths: Lengths,
        *,
        rate: float = 1.0,
        users: int = 1,
        warmup: Phase | str | float | None = None,
        cooldown: Phase | str | float | None = None,
        slo: Slo | None = None,
        max_seconds: float | None = None,
    ) -> LoadRun:
        key = (profile, self._draw(lengths), rate, users)
        if key not in self._served:
            run_out(self._simulate(key, 0))
        # The statistics but the SLO's are measured once per window; a new SLO counts only which
        # requests meet it (a reader dragging the SLO re-measures no percentile).
        window = (key, as_phase(warmup), as_phase(cooldown), max_seconds)
        if (window, slo) not in self._measured:
            if len(self._measured) >= 256:  # a reader dragging the SLO: keep the memory bounded
                self._measured.clear()
                self._apart.clear()
            if window not in self._apart:
                kw: dict[str, Any] = {"max_seconds": max_seconds, "slots": self.spec.sched.max_num_seqs}
                apart = measure_apart(self._served[key], profile, rate, warmup=warmup, cooldown=cooldown, **kw)
                if not apart.summary["ttft_s_count"] and (window[1].kind != "none" or window[2].kind != "none"):
                    # No first token inside the window, so every latency statistic would read 0: as
                    # metrics.summarize_apart does for an empty window, measure the whole run (flagged).
                    apart = measure_apart(self._served[key], profile, rate, warmup=None, cooldown=None, **kw)
                    apart = replace(apart, summary={**apart.summary, "phases_ignored": 1.0})
                self._apart[window] = apart
            self._measured[(window, slo)] = with_slo(self._apart[window], slo)
        return self._measured[(window, slo)]


def measure(served: Served, profile: str, rate: float, *, slo: Slo | None = None, **window: Any) -> LoadRun:
    """The LoadRun of a served profile, measured as GuideLLM measures (metrics.summarize); `window`:
    metrics.summarize_apart's warmup, cooldown, max_seconds and slots (batch slots, which date the drain)."""
    return with_slo(measure_apart(served, profile, rate, **window), slo)


@dataclass(frozen=True)
class Apart:
    """A run measured but for the SLO: metrics.summarize_apart's parts and measure()'s own figures."""

    profile: str
    rate: float
    summary: dict[str, float]
    kept: list[RequestRecord]
    attempted: int
    more: dict[str, float]


def measure_apart(served: Served, profile: str, rate: float, **window: Any) -> Apart:
    """measure() without the SLO: every statistic that does not depend on it, once (`window`: measure()'s)."""
    recs, cut, dropped = cut_at(served, window.get("max_seconds"))
    summary, kept, attempted = summarize_apart(recs, dropped_arrivals=dropped, incomplete=cut, **window)
    more = {"num_dropped": len(served.dropped), "steady_throughput_per_s": steady_throughput(served.records)}
    return Apart(profile, rate, summary, kept, attempted, more | {"events": served.events})


def with_slo(a: Apart, slo: Slo | None) -> LoadRun:
    """The LoadRun of a run measured apart, under `slo` (exactly measure()'s answer)."""
    met = {**a.summary, **slo_figures(a.kept, a.attempted, a.summary["request_throughput_per_s"], slo), **a.more}
    offered = a.rate if a.profile in ("constant", "poisson") else met["request_throughput_per_s"]
    return LoadRun(a.profile, offered, met, met["concurrency_mean"])


def cut_at(served: Served, max_seconds: float | None) -> tuple[list[RequestRecord], list[RequestRecord], list[float]]:
    """(successful, incomplete, errored start times) under GuideLLM's max_seconds constraint: nothing
    is sent after first start + max_seconds; a request still running then is incomplete, its e2e cut
    there (and its TTFT too, if its first token had not come)."""
    dropped = [r.arrival_s for r in served.dropped]
    if not max_seconds:
        return served.records, [], dropped
    starts = [r.arrival_s for r in served.records] + dropped
    stop = (min(starts) if starts else 0.0) + max_seconds
    done = [r for r in served.records if r.arrival_s + r.e2e_s <= stop]
    running = [r for r in served.records if r.arrival_s <= stop < r.arrival_s + r.e2e_s]
    cut = [r._replace(e2e_s=stop - r.arrival_s, ttft_s=min(r.ttft_s, stop - r.arrival_s)) for r in running]
    return done, cut, [t for t in dropped if t <= stop]


def steady_throughput(recs: list[RequestRecord], trim: float = 0.2) -> float:
    """Completions per second between the `trim` and 1 - `trim` quantiles of completion times: the
    middle of the timeline leaves out the start-up (nothing has finished) and the drain (fewer requests
    than slots), whatever the arrivals; when every request finishes at one instant, the whole run's."""
    ends = sorted([r.arrival_s + r.e2e_s for r in recs])
    if len(ends) < 2:
        return 0.0
    lo, hi = ends[int(trim * (len(ends) - 1))], ends[int((1 - trim) * (len(ends) - 1))]
    if hi - lo > 1e-9 * max(1.0, hi):
        return (bisect.bisect_right(ends, hi) - bisect.bisect_right(ends, lo)) / (hi - lo)  # lo < t <= hi
    return len(ends) / max(ends[-1] - min(r.arrival_s for r in recs), 1e-12)


def sweep_rates(sync_rate: float, throughput_rate: float, sweep_size: int = SWEEP_SIZE) -> list[float]:
    """GuideLLM's sweep rates: linspace(sync, throughput, sweep_size - 1) without its first."""
    k = sweep_size - 1  # under 3 benchmarks: no rate between the two
    rates = [sync_rate + (throughput_rate - sync_rate) * i / (k - 1) for i in range(1, k)]
    return [r for r in rates if r > 0]  # GuideLLM stops at a rate that is not positive
