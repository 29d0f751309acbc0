"""Serving-level published benchmarks, run on the event engine under their own conditions.

A serving figure (offline throughput, a server scenario's throughput under latency bounds, the
latency of a batch started together) depends on how the benchmark fed the engine: its requests'
lengths (a heavy-tailed distribution keeps fewer sequences in flight and leaves a drain at the
end, which a closed form at the mean lengths misses), how many it sent and when. Each such row of
data/measurements.toml states those conditions; `run(row, profile)` serves its requests with
`engine.serve` (every simulator's entry point) and measures the benchmark's figure from the records.

Conditions a row states (validation.py reads the rest: model, GPU, formats, tp, scheduler caps):
- `lengths`: "fixed" (every request `input_tokens` in, `output_tokens` out), or a named
  distribution of LENGTHS below with those means, drawn with a fixed seed;
- `max_input_tokens`, `max_total_tokens`, `fixed_output`: the data set's caps, and outputs all
  `output_tokens` long (MLPerf llama3.1-8b);
- `requests`: how many requests are simulated (the benchmark's own count where small enough,
  else a stated sample of it: `benchmark_requests` keeps the benchmark's count), or "batch": one
  batch of the row's `batch_size` (a static-batching benchmark, e.g. QServe's tables);
- `arrival`: "offline" (every request queued at once), "batch" (one batch of `batch_size`
  started together: vLLM's latency benchmark), "server" (Poisson arrivals at the highest rate
  whose 99th percentile TTFT and TPOT stay within `ttft_limit_ms` and `tpot_limit_ms`: MLPerf
  Server's rule) or "rate" (Poisson arrivals at the row's `request_rate` per second; the figure is
  the median TPOT, or TTFT for a `median_ttft_ms` row: sglang.bench_serving's online table).

The engine's step time is the row's engine profile, priced by costmodel.step_time and read off as
the linear form the engine needs (engine/steptime.py), as for every simulator.
"""

import math
import random
import statistics
from collections.abc import Callable
from functools import cache
from typing import Any

from ..core import efficiency as ef
from ..core.catalog import gpus, models
from ..engine.cluster import EngineSpec, serve
from ..engine.metrics import RequestRecord
from ..engine.scheduler import SchedulerConfig
from ..engine.workload import AZURE_CONV_OUTPUT, AZURE_CONV_PROMPT
from . import benchmarks as bm
from .loadgen import arrange

SEED = 16

# Length distributions: (input sigma, output sigma) of ln(tokens) for a lognormal with the row's
# means, filters (min tokens, max input, max input + output) and the source of each.
LENGTHS: dict[str, dict[str, Any]] = {
    "sharegpt": {
        # WildChat paper Table 1 (reference section 8): ShareGPT user turns 94.46 +- 626.39,
        # assistant turns 348.45 +- 269.93 tokens: coefficients of variation 6.63 and 0.775.
        "cv": (626.39 / 94.46, 269.93 / 348.45),
        # vLLM / SGLang sample_sharegpt_requests: drop prompt or output under 4 tokens, prompt over
        # 1,024 or prompt + output over 2,048 (vllm benchmarks/benchmark_serving.py; SGLang's
        # bench_serving.py copied it).
        "min": 4,
        "max_input": 1024,
        "max_total": 2048,
        "source": "ShareGPT spread: WildChat (Zhao et al. 2024) Table 1; filter: vLLM/SGLang sample_sharegpt_requests",
    },
    "conversation": {
        # Azure LLM inference trace 2023, conversation: lognormal sigmas of ln(tokens)
        # (engine/workload.py, reference section 8); shape only: the means are the row's.
        "sigma": (AZURE_CONV_PROMPT[1], AZURE_CONV_OUTPUT[1]),
        "min": 1,
        "max_input": 1 << 20,  # a row states its data set's caps (max_input_tokens, max_total_tokens)
        "max_total": 1 << 20,
        "source": "spread of the Azure LLM inference trace 2023 (conversation), assumed for a data set whose spread we could not read",
    },
}


def draw_lengths(e: dict[str, Any], n: int) -> list[tuple[int, int]]:
    """The row's n (input, output) lengths: fixed, or a lognormal with the row's means, filtered."""
    return list(_draw_lengths(tuple(sorted(e.items())), n))


@cache  # a row's draw, shared by its ideal and profile runs
def _draw_lengths(items: tuple[tuple[str, Any], ...], n: int) -> list[tuple[int, int]]:
    e = dict(items)
    isl, osl = int(e["input_tokens"]), int(e["output_tokens"])
    kind = e.get("lengths", "fixed")
    if kind == "fixed":
        return [(isl, osl)] * n
    d = LENGTHS[kind]
    cap_in, cap_total = int(e.get("max_input_tokens", d["max_input"])), int(e.get("max_total_tokens", d["max_total"]))
    if isl >= cap_in or isl + osl >= cap_total:
        raise ValueError(f"measurement '{e.get('id')}': mean lengths {isl}/{osl} do not fit the caps of '{kind}'")
    # a lognormal's sigma from its coefficient of variation: sqrt(ln(1 + cv^2))
    si, so = (float(x) for x in d["sigma"]) if "sigma" in d else (math.sqrt(math.log(1 + cv * cv)) for cv in d["cv"])
    # The row's means are those of the requests sent, after the filter: shift the lognormals'
    # medians until the filtered sample has them (a few fixed-point steps).
    mu_i, mu_o = math.log(isl) - si * si / 2, math.log(osl) - so * so / 2
    for _ in range(20):
        rng = random.Random(SEED)
        out: list[tuple[int, int]] = []
        while len(out) < n:
            p = round(rng.lognormvariate(mu_i, si))
            o = osl if e.get("fixed_output") else round(rng.lognormvariate(mu_o, so))
            if p < d["min"] or o < d["min"] or p > cap_in or p + o > cap_total:
                continue  # the benchmark's own filter: such a request is never sent
            out.append((p, o))
        mi, mo = (sum(x[k] for x in out) / n for k in (0, 1))
        mu_i, mu_o = mu_i + math.log(isl / mi), mu_o + math.log(osl / mo)
    return out


class Unserved(ValueError):
    """No request of a run was served (each needs more KV cache than the server holds)."""


def _served(lengths: list[tuple[int, int]], spec: EngineSpec, rate: float = 0.0) -> list[RequestRecord]:
    """The records of requests of these lengths, all sent at 0 (rate 0) or Poisson at `rate` per second
    from 0 (the same draw for every rate)."""
    reqs = arrange("poisson" if rate else "throughput", lengths, random.Random(SEED), rate=rate)
    recs = serve(reqs, spec, keep_series=False).records
    if not recs:  # every statistic of the run would divide by zero
        longest = max(a + b for a, b in lengths)
        raise Unserved(
            f"none of the {len(lengths):,} requests could be served: one of {longest:,} tokens needs more KV cache "
            f"than one replica of {spec.model.name} on {spec.gpu.name} holds after its weights"
        )
    return recs


def _throughput(recs: list[RequestRecord]) -> float:
    """Output tokens over the run: first send to last completion (MLPerf's and trtllm-bench's count)."""
    span = max(r.arrival_s + r.e2e_s for r in recs) - min(r.arrival_s for r in recs)
    return sum(r.output_tokens for r in recs) / span


def _p99(xs: list[float]) -> float:
    return sorted(xs)[min(len(xs) - 1, math.ceil(0.99 * len(xs)) - 1)]


def _server(e: dict[str, Any], spec: EngineSpec, lengths: list[tuple[int, int]]) -> float:
    """Highest Poisson rate whose p99 TTFT and TPOT meet the bounds: its output tokens per second."""
    ttft, tpot = float(e["ttft_limit_ms"]) / 1e3, float(e["tpot_limit_ms"]) / 1e3
    n, mean_out = len(lengths), sum(o for _, o in lengths) / len(lengths)
    hi = _throughput(_served(lengths, spec)) / mean_out  # requests/s: no rate above the offline one holds
    lo, best = 0.0, 0.0
    for _ in range(int(e.get("rate_steps", 7))):
        mid = (lo + hi) / 2
        recs = _served(lengths, spec, mid)  # a rate meets if every request is served within both bounds
        if len(recs) == n and _p99([r.ttft_s for r in recs]) <= ttft and _p99([r.tpot_s or 0.0 for r in recs]) <= tpot:
            lo, best = mid, _throughput(recs)
        else:
            hi = mid
    return best


def _median(e: dict[str, Any], spec: EngineSpec, lengths: list[tuple[int, int]]) -> float:
    """Median TPOT (s), or TTFT for a `median_ttft_ms` row, of Poisson arrivals at the row's request_rate
    (sglang.bench_serving: TPOT is (latency - TTFT) / (output tokens - 1), over requests with more than
    one output token; its online table's TTFT includes queueing and the prefill of the request's step)."""
    recs = _served(lengths, spec, float(e["request_rate"]))
    if e.get("quantity") == "median_ttft_ms":
        return statistics.median(r.ttft_s for r in recs)
    return statistics.median(r.tpot_s for r in recs if r.tpot_s is not None)  # numpy's median, as bench_serving's


def run(e: dict[str, Any], p: ef.EngineProfile, sched: ef.EngineProfile) -> float:
    """The row's published quantity, predicted by serving its requests under its conditions."""
    key = run_key(e, p, sched)
    if key not in _RUNS and kept is not None and (value := kept(key)) is not None:
        _RUNS[key] = value
    if key not in _RUNS:
        if _WANTED is not None:  # run_ahead's listing pass: note the run, answer NaN
            _WANTED[key] = (e, p, sched)
            return math.nan
        _RUNS[key] = run_args((e, p, sched))
    return _RUNS[key]


def run_key(e: dict[str, Any], p: ef.EngineProfile, sched: ef.EngineProfile) -> str:
    """The key a run is kept under (known_runs)."""
    return repr((sorted(e.items()), p, sched.max_num_seqs, sched.max_num_batched_tokens))


_RUNS: dict[str, float] = {}  # one simulation per row, profile and schedule
_WANTED: dict[str, tuple[dict[str, Any], ef.EngineProfile, ef.EngineProfile]] | None = None


def run_ahead(ask: Callable[[], object]) -> None:
    """Make the runs `ask()` would make with `run_many` (other processes) and keep them, so the real
    call of `ask` finds them (runs are pure). `ask` is first called with every new run answered NaN, to
    list them, and must not keep what it computes then. Without `run_many` (Pyodide, the CLI, a process
    that has made no site build) nothing runs ahead."""
    global _WANTED
    if run_many is None:
        return
    _WANTED = {}
    try:
        ask()
    finally:
        todo, _WANTED = _WANTED, None
    # the longest first (a server row searches its rate over several runs), so no process idles at the end
    order = sorted(todo, key=lambda k: todo[k][0].get("arrival") != "server")
    _RUNS.update(zip(order, run_many(run_args, [todo[k] for k in order]), strict=True))


# How run_ahead makes its runs: a map of `run_args` over their arguments in other processes, set
# through api.make_runs_with by a caller that has processes (the site build); None: one by one, here.
# (Processes stay out of this package: the browser's standard library holds what it imports.)
run_many: Callable[[Callable[[Any], float], list[Any]], list[float]] | None = None


def known_runs() -> dict[str, float]:
    """The runs made so far in this process, by key (the site build keeps them: sitebuild/sims.py)."""
    return dict(_RUNS)


# Runs made earlier by this same code, by key (None: not made), set through api.make_runs_with by
# a caller that keeps them (the site build); None: none kept.
kept: Callable[[str], float | None] | None = None


def run_args(args: tuple[dict[str, Any], ef.EngineProfile, ef.EngineProfile]) -> float:
    """One run (e, p, sched) of run() or run_ahead's list (module level: another process is sent it by name)."""
    e, p, sched = args
    arrival = e.get("arrival", "offline")
    lengths = draw_lengths(e, int(e["batch_size"]) if arrival == "batch" else int(e["requests"]))
    # The row's server: model, GPU, formats, tensor parallel, the benchmark's scheduler caps, and
    # the longest request as its max sequence length (a benchmark sets its engine's to fit).
    cfg = SchedulerConfig(
        max_num_seqs=sched.max_num_seqs,
        max_num_batched_tokens=sched.max_num_batched_tokens,
        max_model_len=max(a + b for a, b in lengths),
        chunked_prefill=bool(e.get("chunked_prefill", True)),
        num_scheduler_steps=int(e.get("num_scheduler_steps", 1)),
    )
    spec = EngineSpec(models()[e["model"]], gpus()[e["gpu"]], cfg, profile=p, **bm.formats(e).kw())
    if arrival == "server":
        return _server(e, spec, lengths)
    if arrival == "rate":
        return _median(e, spec, lengths)
    if arrival not in ("offline", "batch"):
        raise ValueError(f"measurement '{e['id']}': arrival must be offline, batch, server or rate, got {arrival!r}")
    recs = _served(lengths, spec)
    return sum(r.e2e_s for r in recs) / len(recs) if arrival == "batch" else _throughput(recs)
