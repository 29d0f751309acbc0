"""A GuideLLM-style load test, run against the simulated server instead of a real one.

Model: one replica (simulators/engine, vLLM-like defaults: continuous batching, chunked prefill,
paged KV) is driven by GuideLLM's profiles. The *knee* view sweeps the offered rate: open-loop
Poisson arrivals at fractions of the server's measured maximum (twice as many closed-loop users as
batch slots, so that every slot stays busy), and closed-loop runs with 1 to 128 concurrent users;
TTFT p99 is plotted against the throughput achieved. Closed loop stays flat because slow responses
slow the users down; open loop turns up sharply at the knee. The *goodput* view counts only requests
meeting the SLO (TTFT and TPOT bounds) per second. The *lengths* view repeats the sweep with every
request at the mean lengths (fixed) instead of the heavy-tailed Azure lognormal. The *percentiles*
view shows mean against p50 / p90 / p99 at one rate. Warm-up and cool-down: the first and last
fractions of the arrivals are left out of the statistics; the metrics give both kept and discarded
figures (a simulated server has no CUDA graphs to capture, but it does start empty, which flatters
early requests and lowers measured throughput). A request longer than the model's context (prompt
plus output) cannot be served: it is dropped and counted (`num_dropped`), as GuideLLM counts errored
requests, and a closed-loop user sends its next request at once.

The result carries the run in GuideLLM's metric names (`guidellm`: requests_per_second,
time_to_first_token_ms, inter_token_latency_ms, time_per_output_token_ms, request_latency...,
with mean / median / p90 / p95 / p99) and as CSV (`csv`). Note GuideLLM's time per output token
includes the first token (metrics.py).

References: 1) vllm-project/guidellm (profiles, metrics guide; reference section 6); 2) course
seed 000, "benchmarking errors" 1-5; 3) Zhong et al. 2024, DistServe (goodput).
"""

import json
import math
from collections.abc import Generator
from dataclasses import dataclass
from functools import partial
from typing import Any

from .. import parallel
from ..benchmark import guidellm_report as guidellm_report_mod
from ..benchmark import loadgen
from ..benchmark.export import guidellm_record, to_csv
from ..benchmark.loadgen import LoadRun, ServedMemo
from ..engine import EngineSpec, SchedulerConfig, Slo, workload
from ..params import ModelGpuEngine, ParamError, arrival_rate_param, batch_slots_param, num_requests_param, param
from ..plotting import so_far
from ..results_cache import Keep, Streamed, for_call
from .load_test_view import DRAIN_DOMINATES, FRACTIONS, USERS, figure, summary  # noqa: F401 (the charts and words)

TITLE = "Load testing: open vs closed loop, percentiles, goodput"
DESCRIPTION = "A GuideLLM-style benchmark of the simulated server: where the knee is, what closed loops hide, and what meets the SLO."
METRICS = {
    "max_throughput_per_s": ("Maximum throughput (every slot kept busy, steady state)", "req/s"),
    "request_throughput_per_s": ("Throughput at the chosen rate", "req/s"),
    "ttft_s_p99": ("TTFT p99 at the chosen rate", "s"),
    "closed_loop_throughput_per_s": ("Closed loop: throughput", "req/s"),
    "closed_loop_ttft_s_p99": ("Closed loop: TTFT p99", "s"),
    "goodput_per_s": ("Goodput at the chosen rate", "req/s"),
    "slo_attainment": ("Share of requests meeting the SLO", ""),
    "ttft_s_p50": ("TTFT p50 at the chosen rate", "s"),
    "ttft_s_mean": ("TTFT mean at the chosen rate", "s"),
    "tpot_s_mean": ("TPOT mean at the chosen rate", "s"),
    "tpot_s_p99": ("TPOT p99 at the chosen rate", "s"),
    "ttft_s_p99_warmup_kept": ("TTFT p99 with warm-up kept", "s"),
    "request_throughput_warmup_kept_per_s": ("Throughput with warm-up kept", "req/s"),
    "num_dropped": ("Requests per run longer than the context (errors)", "requests"),
    "ttft_samples": ("Requests behind the percentiles at the chosen rate", "requests"),
    "drain_share": ("Share of the run spent draining (server no longer full)", ""),
    "few_samples_for_p99": ("p99 from under 100 requests (1 yes, 0 no)", ""),
}
WARMUPS = [("0", "None (GuideLLM's default)"), *((f"{n}%", f"{n}% of the requests") for n in (10, 20))]
WARMUPS += [(f"{n}", f"{n} requests") for n in (10, 50)] + [(f"{n}s", f"{n} seconds") for n in (5, 20)]

VIEWS = [
    ("knee", "Open vs closed loop"),
    ("goodput", "Goodput vs offered load"),
    ("lengths", "Fixed vs heavy-tailed lengths"),
    ("percentiles", "Mean vs percentiles"),
]


@dataclass(frozen=True)
class Params(ModelGpuEngine):
    # Requests per benchmark run.
    num_requests: int = num_requests_param(150, min=20, max=2000, label="Requests per run")
    # The open-loop Poisson rate the single-rate figures are taken at.
    rate_per_s: float = arrival_rate_param(10.0, max=500.0, label="Request rate")
    # Closed loop: concurrent users, each waiting for its answer before sending again. The
    # default, as many users as batch slots, is also a point of the closed-loop curve (USERS).
    users: int = param(64, label="Concurrent users (closed loop)", min=1, max=1024, step=1, log=True)
    lengths: str = param("azure", label="Lengths", choices=workload.LENGTH_CHOICES)
    # Server batch slots (vLLM --max-num-seqs): past them, requests queue.
    max_num_seqs: int = batch_slots_param(64, label="Server batch slots")
    # SLO for goodput: both bounds must hold.
    slo_ttft_s: float = param(0.5, label="SLO: TTFT", unit="s", min=0.01, max=60.0, step=0.01, log=True)
    slo_tpot_s: float = param(0.05, label="SLO: TPOT", unit="s", min=0.001, max=1.0, step=0.001, log=True)
    # Left out of the statistics at the start and at the end, as GuideLLM's --warmup and
    # --cooldown: none by default; a percent of the requests, seconds, or a number of requests.
    warmup: str = param("0", label="Warm-up and cool-down", choices=WARMUPS)
    tensor_parallel_size: int = parallel.tensor_parallel_param()
    pipeline_parallel_size: int = parallel.pipeline_parallel_param()
    data_parallel_size: int = parallel.data_parallel_param()
    enable_expert_parallel: bool = parallel.expert_parallel_param()

    def check(self) -> None:
        m, gpu = self.resolved()
        parallel.check_serving(m, gpu, parallel.layout_of(self))
        # Requests longer than the context are dropped; when the typical one is, none is served.
        fixed = workload.lengths_for("fixed")
        azure = math.exp(workload.AZURE_CONV_PROMPT[0]) + math.exp(workload.AZURE_CONV_OUTPUT[0])  # the medians
        need = fixed.prompt + fixed.output if self.lengths == "fixed" else azure
        if need > m.max_context_tokens:
            raise ParamError(
                "lengths",
                f"requests of about {need:,.0f} tokens do not fit {m.name}'s {m.max_context_tokens:,}-token context",
            )


# The simulated runs of the latest scenarios, kept through the caller's keep (api.Session's store),
# keyed by what decides a run: a new rate re-simulates one run of the sixteen, a new SLO, warm-up or
# chart none. A scenario takes two entries (its runs, ~7 MB at 1,000 requests, and its ceiling's).
# Eight: a page's widgets (lesson 11: 64 and 256 slots) and its warm-up seeds share this keep.
MEMO_ENTRIES = 8


def _runs(p: Params, spec: EngineSpec, seed: int, keep: Keep) -> tuple[ServedMemo, ServedMemo]:
    """The kept runs of this server (ServedMemo simulates each distinct load once): of `num_requests`
    requests, and those the maximum is read from, of at least loadgen.CEILING_REQUESTS."""
    lay = parallel.layout_of(p)  # the engine profile and the GPU layout price every step, so they key the runs too
    server = [p.model, p.gpu, p.engine, lay.tp, lay.pp, lay.dp, lay.ep, p.max_num_seqs]
    sizes = (p.num_requests, max(p.num_requests, loadgen.CEILING_REQUESTS))
    runs = [keep(json.dumps([*server, n, seed], sort_keys=True), partial(ServedMemo, spec, n, seed)) for n in sizes]
    return runs[0], runs[1]


def _point(r: LoadRun) -> dict[str, float]:
    """A chart point: the offered rate and the run's figures (keys), as the charts name them (names)."""
    names = "throughput ttft_p50 ttft_p99 goodput tpot_p99 e2e_p99 samples drain_share"
    keys = "request_throughput_per_s ttft_s_p50 ttft_s_p99 goodput_per_s tpot_s_p99 e2e_s_p99 ttft_s_count drain_share"
    return {"offered": r.rate, **{k: r.metrics[v] for k, v in zip(names.split(), keys.split(), strict=True)}}


def _server(p: Params) -> tuple[EngineSpec, Slo, dict[str, Any], workload.Lengths]:
    """The simulated server, the SLO, the statistics' options (warm-up, cool-down, SLO), the lengths."""
    m, gpu = p.resolved()
    config = SchedulerConfig(max_num_seqs=p.max_num_seqs, max_model_len=m.max_context_tokens)
    spec = EngineSpec(m, gpu, config, engine=p.engine, **parallel.layout_of(p).cost_kw())
    slo = Slo(p.slo_ttft_s, p.slo_tpot_s)
    return spec, slo, {"warmup": p.warmup, "cooldown": p.warmup, "slo": slo}, workload.lengths_for(p.lengths)


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> Streamed:
    """The server's maximum, the run at the chosen rate and the closed loop at the chosen users;
    the sweep charts add their sweeps (_sweep), yielded point by point. The percentiles chart needs
    only the run at the chosen rate: it is yielded first, before the ceiling."""
    spec, slo, kw, lengths = _server(p)
    served, ceiling = _runs(p, spec, seed, for_call(keep, MEMO_ENTRIES))
    if view == "percentiles":
        show = so_far({"rate_per_s": p.rate_per_s}, "percentiles", served.n, lambda part: _percentiles(part.metrics))
        alone = yield from served.stream("poisson", lengths, show, rate=p.rate_per_s, **kw)
        yield {"rate_per_s": p.rate_per_s, "percentiles": _percentiles(alone.metrics)}
    swept = (yield from _sweep(p, str(view), served, ceiling)) if view in ("knee", "goodput", "lengths") else {}
    # The server's maximum: more users than slots keep every slot busy (GuideLLM's throughput profile
    # sends everything at once: a short run measures the drain too), read as completions per second over
    # the middle of the completion timeline (loadgen.steady_throughput): the steady state, not start or drain.
    top = ceiling.run("concurrent", lengths, users=2 * p.max_num_seqs, slo=slo)
    at_rate = served.run("poisson", lengths, rate=p.rate_per_s, **kw)
    kept = served.run("poisson", lengths, rate=p.rate_per_s, slo=slo)  # the same run, other statistics
    closed = served.run("concurrent", lengths, users=p.users, **kw)
    runs, a = [top, at_rate, closed], at_rate.metrics
    out = p.stated("rate_per_s", "users", "lengths", "warmup", "num_requests", "max_num_seqs")
    out |= {"percentiles": _percentiles(a), "max_context_tokens": spec.model.max_context_tokens}
    if a["phases_ignored"]:  # the warm-up and cool-down left nothing to measure: the whole run is (metrics.py)
        out["phases_ignored"] = dict(WARMUPS)[p.warmup].lower()
    out["metrics"] = {
        "max_throughput_per_s": top.metrics["steady_throughput_per_s"],
        **{k: a[k] for k in ("ttft_s_mean", "ttft_s_p50", "ttft_s_p99", "tpot_s_mean", "tpot_s_p99", "drain_share")},
        **{k: a[k] for k in ("goodput_per_s", "slo_attainment", "request_throughput_per_s")},
        "ttft_s_p99_warmup_kept": kept.metrics["ttft_s_p99"],
        "request_throughput_warmup_kept_per_s": kept.metrics["request_throughput_per_s"],
        "closed_loop_ttft_s_p99": closed.metrics["ttft_s_p99"],
        "closed_loop_throughput_per_s": closed.metrics["request_throughput_per_s"],
        # Every run draws the same lengths (same seed, lengths drawn first), so the same requests.
        "num_dropped": a["num_dropped"],
        "ttft_samples": a["ttft_s_count"],
        "few_samples_for_p99": float(a["ttft_s_count"] < loadgen.FEW_SAMPLES),
    }
    return {**out, "guidellm": [guidellm_record(r) for r in runs], "csv": to_csv(runs), **swept}


def _percentiles(a: dict[str, float]) -> dict[str, list[float]]:
    return {k: [a[f"{k}_mean"], a[f"{k}_p50"], a[f"{k}_p90"], a[f"{k}_p99"]] for k in ("ttft_s", "tpot_s", "e2e_s")}


def guidellm_report(p: Params, *, seed: int = 0) -> dict[str, Any]:
    """GuideLLM's default sweep of this server (model, GPU, batch slots, lengths, requests per
    run), written as the report GuideLLM 0.8.1 writes (simulators/benchmark/guidellm_report.py)."""
    spec, _, _, lengths = _server(p)
    return guidellm_report_mod.sweep_report(spec, p.num_requests, lengths, seed)


# Files the page offers for download (api.EXPORT), made only when asked: GuideLLM's report of
# its default sweep, and its goodput and knee searches (engine/searches.py) of this server.
EXPORTS = [
    ("guidellm", "Download GuideLLM report (JSON)", "guidellm-benchmarks.json"),
    ("goodput", "Goodput search (JSON)", "goodput-search.json"),
    ("knee", "Knee search (JSON)", "knee-search.json"),
]


def export(p: Params, kind: str, *, seed: int = 0) -> str:
    """The file `kind` of EXPORTS for this server (`run load_test --format guidellm` is the first)."""
    return json.dumps(guidellm_report(p, seed=seed) if kind == "guidellm" else search(p, kind, seed=seed), indent=1)


def knee_streams(slots: int) -> list[int]:
    """The concurrencies the knee search starts from (GuideLLM asks for at least five): from an
    eighth of the batch slots to three times them, so the flat part past the slots is measured."""
    return sorted({max(1, round(slots * f)) for f in (0.125, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)})


def search(p: Params, kind: str, *, seed: int = 0) -> dict[str, Any]:
    """GuideLLM 0.8's goodput or knee profile run against this server (concurrent probes of
    num_requests requests each, the page's SLO for goodput)."""
    from ..benchmark.searches import goodput_search, knee_search

    spec, slo, _, lengths = _server(p)
    head = {"profile": kind, "model": spec.model.name, "gpu": spec.gpu.name, "max_num_seqs": p.max_num_seqs}
    head |= {"lengths": p.lengths, "num_requests": p.num_requests}
    if kind == "goodput":
        found = goodput_search(spec, p.num_requests, lengths, seed, slo)
        return {**head, "slo": {"ttft_s": slo.ttft_s, "tpot_s": slo.tpot_s}, **found}
    return {**head, **knee_search(spec, p.num_requests, lengths, seed, knee_streams(p.max_num_seqs))}


def _sweep(p: Params, view: str, served: ServedMemo, ceiling: ServedMemo) -> Streamed:
    """The sweep charts' points (rates, and users or other lengths), whose runs then fill the GuideLLM
    records and CSV. The chart is yielded after each point, cheapest first (closed loop from one user
    up; open loop from the highest rate down)."""
    _, slo, kw, lengths = _server(p)
    out: dict[str, Any] = {"lengths": p.lengths, "open": [], "closed": [], "other": []}

    def point(
        curve: str, profile: str, lengths: workload.Lengths, **load: Any
    ) -> Generator[dict[str, Any], None, LoadRun]:
        """Add the point of this load to `curve` of the chart, yield the chart, return the run. The
        chart's first run is drawn as it goes (ServedMemo.stream), its point marked as running."""
        first = not (out["open"] or out["closed"] or out["other"] or "chosen" in out)

        def placed(run: LoadRun) -> Any:
            """`curve` with the run's point where the chart draws it (closed loop last, open first)."""
            if curve == "chosen":
                return _point(run)
            return [*out[curve], _point(run)] if curve == "closed" else [_point(run), *out[curve]]

        show = so_far(out, curve, served.n, placed)
        r = yield from served.stream(profile, lengths, show, share=0.25 if first else 0, **load, **kw)
        out[curve] = placed(r)
        yield out
        return r

    if view == "knee":  # closed-loop points need no ceiling: they come first
        for u in USERS:
            yield from point("closed", "concurrent", lengths, users=u)
    # The goodput chart marks the chosen rate (run()'s own run at it). It needs no ceiling run: when
    # the ceiling is still to simulate (new batch slots), that point comes first, one run instead
    # of two before the first chart; else the kept sweep points do, and it comes last.
    chosen_first = view == "goodput" and not ceiling.has("concurrent", lengths, users=2 * p.max_num_seqs)
    if chosen_first:
        yield from point("chosen", "poisson", lengths, rate=p.rate_per_s)
    top = ceiling.run("concurrent", lengths, users=2 * p.max_num_seqs, slo=slo)
    cap = top.metrics["steady_throughput_per_s"]  # run()'s max_throughput_per_s
    sweep: list[LoadRun] = []
    for f in reversed(FRACTIONS):
        sweep.insert(0, (yield from point("open", "poisson", lengths, rate=f * cap)))
    if view == "goodput" and not chosen_first:
        yield from point("chosen", "poisson", lengths, rate=p.rate_per_s)
    if view == "lengths":
        other = workload.lengths_for("fixed" if p.lengths == "azure" else "azure")
        for f in reversed(FRACTIONS):
            yield from point("other", "poisson", other, rate=f * cap)
    shown = {"knee": ("open", "closed"), "goodput": ("open", "chosen"), "lengths": ("open", "other")}[view]
    runs = [top, *sweep]
    return {**{k: out[k] for k in shown}, "guidellm": [guidellm_record(r) for r in runs], "csv": to_csv(runs)}
