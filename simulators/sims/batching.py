"""Static vs continuous batching: the same trace through both schedulers.

Model: one replica (the serving engine, simulators/engine) receives the same seeded open-loop
trace twice. Static batching admits up to `max_num_seqs` waiting requests only when the engine
is empty, prefills them together and decodes until the longest is done; a finished sequence's
slot idles until then (its tokens still stream to its user). Continuous (iteration-level)
batching re-plans every step: finished sequences leave and waiting ones join at once, with
chunked prefill sharing steps with decodes. Every step time comes from the cost model
(costmodel.step_time for the batch's actual composition); KV is paged with vLLM's defaults.
Assumptions: static batching pays no padding (finished slots cost no compute), which flatters it.
Throughput here is every request over the makespan (first arrival to last completion).

Slot occupancy is time-weighted: the engine samples each step's state at the step's *start*, after
scheduling, and the sample holds until the next one, so a slot counts as busy during every step
that processes its sequence, prefill included. (Sampling at each step's end would draw a static
batch's long prefill step as the empty engine before it and count those slots idle.) A static
batch's slot is idle from its sequence's last token to the end of the batch's longest answer.

References: 1) Yu et al. 2022, Orca: A Distributed Serving System for Transformer-Based
Generative Models (OSDI), iteration-level scheduling; 2) Kwon et al. 2023 (arXiv 2309.06180);
3) Azure LLM inference trace 2023 for the default lengths (reference section 8).
"""

import math
from dataclasses import dataclass
from functools import partial
from operator import itemgetter
from typing import Any

from ..engine import EngineSpec, SchedulerConfig, workload
from ..engine.cluster import serve_shown
from ..engine.metrics import RequestRecord, describe, downsample, time_average
from ..engine.replica import Replica
from ..parallel import check_serving, layout_of, pipeline_parallel_param, tensor_parallel_param
from ..params import ModelGpuEngine, ParamError, arrival_rate_param, batch_slots_param, num_requests_param, param
from ..plotting import LOG, chart, line, markers, so_far
from ..results_cache import Keep, Streamed, for_call, kept_steps, run_key

TITLE = "Static vs continuous batching"
DESCRIPTION = (
    "The same requests through a scheduler that waits for the whole batch and one that refills slots every step."
)
POLICIES = ("static", "continuous")  # served and drawn in this order (static is the cheaper run)
METRICS = {  # each policy's figures, continuous first
    **{f"throughput_{v}_per_s": (f"{v.capitalize()}: requests per second", "req/s") for v in POLICIES[::-1]},
    "throughput_gain": ("Continuous / static throughput", "x"),
    **{f"ttft_{v}_s_p50": (f"{v.capitalize()}: median TTFT", "s") for v in POLICIES[::-1]},
    **{f"ttft_{v}_s_p99": (f"{v.capitalize()}: p99 TTFT", "s") for v in POLICIES[::-1]},
    **{f"slot_occupancy_{v}": (f"{v.capitalize()}: busy share of batch slots", "") for v in POLICIES[::-1]},
    **{f"tokens_{v}_per_s": (f"{v.capitalize()}: output tokens per second", "tokens/s") for v in POLICIES[::-1]},
    **{f"e2e_{v}_s_p99": (f"{v.capitalize()}: p99 end-to-end", "s") for v in POLICIES[::-1]},
}
LENGTHS = [("azure", "Azure 2023 conversation (lognormal)"), ("fixed", "Fixed"), ("uniform", "Uniform +-50%")]

VIEWS = [("occupancy", "Busy slots over time"), ("latency", "Latency percentiles")]
# Kept through the caller's keep (api.Session's store) for a chart switch or a rerun: the trace and its two runs.
MEMO_ENTRIES = 1 + len(POLICIES)


@dataclass(frozen=True)
class Params(ModelGpuEngine):
    # Requests in the trace (both schedulers get the same ones).
    num_requests: int = num_requests_param(200, min=10, max=2000)
    rate_per_s: float = arrival_rate_param(8.0, max=200.0)
    max_num_seqs: int = batch_slots_param(32, unit="sequences")
    # Length distribution; fixed and uniform use the two means below.
    lengths: str = param("azure", label="Lengths", choices=LENGTHS)
    prompt_tokens: int = param(1000, label="Prompt (fixed/uniform)", unit="tokens", min=1, max=8000, step=1, log=True)
    output_tokens: int = param(200, label="Output (fixed/uniform)", unit="tokens", min=1, max=8000, step=1, log=True)
    tensor_parallel_size: int = tensor_parallel_param()
    pipeline_parallel_size: int = pipeline_parallel_param()

    def check(self) -> None:
        m, gpu = self.resolved()
        check_serving(m, gpu, layout_of(self))
        median = math.exp(workload.AZURE_CONV_PROMPT[0]) + math.exp(workload.AZURE_CONV_OUTPUT[0])
        if self.lengths == "azure" and median > m.max_context_tokens:
            # Requests longer than the context are dropped: most of the trace would be.
            raise ParamError(
                "lengths",
                f"the Azure trace's median request ({median:,.0f} tokens) is longer than {m.name}'s "
                f"{m.max_context_tokens:,}-token context",
            )
        longest = {"fixed": 1.0, "uniform": 1.5}.get(self.lengths, 0.0) * (self.prompt_tokens + self.output_tokens)
        if longest > m.max_context_tokens:  # uniform lengths reach 1.5x the sliders (learner review: fixed did too)
            raise ParamError(
                "output_tokens",
                f"prompt plus output ({longest:,.0f} tokens{' at the +50% end' if self.lengths == 'uniform' else ''}) "
                f"must fit {m.name}'s {m.max_context_tokens:,}-token context",
            )


def slot_occupancy(series: list[tuple[float, int, int, int, int, int]], max_num_seqs: int) -> float:
    """Busy share of the batch slots: sequences running (prefilling or decoding), time-weighted over
    `series` (one sample per step, at its start) from the first step to the engine's last idle moment."""
    return time_average([(t, running) for t, _, _, _, _, running in series]) / max_num_seqs


def _measured(
    p: Params, policy: str, recs: list[RequestRecord], dropped: list[workload.Request], replicas: list[Replica]
) -> tuple[dict[str, Any], dict[str, float]]:
    """A run's chart entry and metrics, from the requests it finished (all of them, or so far)."""
    # Every request counts (no warm-up or cool-down to leave out): summarize()'s figures without
    # the 44 others it computes (~11 of a 2,000-request static run's ~65 ms in Pyodide).
    ttft, e2e = describe([x.ttft_s for x in recs]), describe([x.e2e_s for x in recs])
    makespan = max(x.arrival_s + x.e2e_s for x in recs) - min(x.arrival_s for x in recs) if recs else 1.0
    entry = {
        "series": downsample([(t, slots, running) for t, slots, _, _, _, running in replicas[0].series]),
        "ttft": [ttft["p50"], ttft["p90"], ttft["p99"]],
        "e2e": [e2e["p50"], e2e["p90"], e2e["p99"]],
        "makespan_s": makespan,
        "num_dropped": len(dropped),
    }
    metrics = {
        f"throughput_{policy}_per_s": len(recs) / makespan,
        f"tokens_{policy}_per_s": sum(x.output_tokens for x in recs) / makespan,
        f"ttft_{policy}_s_p50": ttft["p50"],
        f"ttft_{policy}_s_p99": ttft["p99"],
        f"e2e_{policy}_s_p99": e2e["p99"],
        f"slot_occupancy_{policy}": slot_occupancy(replicas[0].series, p.max_num_seqs),
    }
    return entry, metrics


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> Streamed:
    """Both schedulers' runs, static (the cheaper) first, the chart so far yielded after each run made
    now and while the first goes (plotting.running)."""
    keep = for_call(keep, MEMO_ENTRIES)
    m, gpu = p.resolved()
    out: dict[str, Any] = p.stated("max_num_seqs", "rate_per_s", "lengths")
    metrics: dict[str, float] = {}
    fixed_or_uniform = workload.Lengths(p.lengths, p.prompt_tokens, p.output_tokens)
    lengths = workload.azure_lengths() if p.lengths == "azure" else fixed_or_uniform
    reqs = keep(run_key(p, seed, "trace"), partial(workload.poisson_trace, seed, p.num_requests, p.rate_per_s, lengths))
    for policy in POLICIES:
        show = so_far(out, policy, p.num_requests, itemgetter(0)) if policy == POLICIES[0] else None
        sched = SchedulerConfig(batching=policy, max_num_seqs=p.max_num_seqs, max_model_len=m.max_context_tokens)
        spec = EngineSpec(m, gpu, sched, engine=p.engine, **layout_of(p).cost_kw())
        served = partial(serve_shown, reqs, spec, partial(_measured, p, policy), show)
        (out[policy], more), was_kept = yield from kept_steps(keep, run_key(p, seed, policy), served)
        metrics.update(more)
        if not was_kept:
            yield dict(out)
    metrics["throughput_gain"] = metrics["throughput_continuous_per_s"] / metrics["throughput_static_per_s"]
    out["metrics"] = metrics
    return out


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    if view == "latency":
        labels = ["TTFT p50", "TTFT p90", "TTFT p99", "E2E p50", "E2E p90", "E2E p99"]
        # Points, not bars: a bar's length on a log axis is not its value (learner review).
        data = [
            markers(labels, r[k]["ttft"] + r[k]["e2e"], f"{k.capitalize()} batching", i, mode="markers")
            for i, k in enumerate(POLICIES)
            if k in r  # both, but while they stream
        ]
        title = f"Latency percentiles, {r['model']} on {r['gpu']}"
        return chart(data, title, "Metric", "Seconds", yaxis=LOG)
    st, co = r["static"]["series"], r.get("continuous", {}).get("series")  # no continuous run yet while streaming
    times = [x[0] for x in st]
    running = "Static: sequences still running (prefill or decode)"
    running += " (under the slots held: equal lengths end together)" * (r["lengths"] == "fixed")
    data = [
        line(times, [x[2] for x in st], running, 1, shape="hv"),
        line(times, [x[1] for x in st], "Static: slots held by the batch", 3, shape="hv"),
    ]
    if co is not None:
        data.append(line([x[0] for x in co], [x[2] for x in co], "Continuous: sequences running", 0, shape="hv"))
    title = f"Batch slots over time ({r['max_num_seqs']} slots, {r['rate_per_s']:g} req/s)"
    return chart(data, title, "Time (s)", "Sequences")


def summary(r: dict[str, Any], view: str) -> str:
    m, n, rate = r["metrics"], r["max_num_seqs"], r["rate_per_s"]
    head = f"With {n} slot{'s' * (n != 1)} at {rate:g} request{'s' * (rate != 1)} per second, "
    wait = "wait for the slowest member of the batch in flight"  # with fixed lengths there is none (learner review)
    if r["lengths"] == "fixed":
        wait = "wait for the whole batch in flight to finish (of fixed lengths, its members end together)"
    if view == "latency":
        st, co = r["static"], r["continuous"]
        return (
            f"{head}TTFT at p50, p90 and p99 is "
            f"{_seconds(co['ttft'])} s with continuous batching against {_seconds(st['ttft'])} s with static batching; "
            f"end to end, {_seconds(co['e2e'])} s against {_seconds(st['e2e'])} s. Static batching makes new requests "
            f"{wait}."
        )
    return (
        f"{head}continuous batching completes "
        f"{m['throughput_continuous_per_s']:.2f} requests/s against {m['throughput_static_per_s']:.2f} for static batching "
        f"({m['throughput_gain']:.2f}x). Median TTFT is {m['ttft_continuous_s_p50']:.2f} s against {m['ttft_static_s_p50']:.2f} s, "
        f"p99 TTFT {m['ttft_continuous_s_p99']:.2f} s against {m['ttft_static_s_p99']:.2f} s: static batching makes new requests "
        f"{wait}. Slots are busy {m['slot_occupancy_continuous']:.0%} of the time "
        f"with continuous batching and {m['slot_occupancy_static']:.0%} with static batching."
    )


def _seconds(xs: list[float]) -> str:
    """Percentiles in seconds, as "0.03 / 0.09 / 0.18"."""
    return " / ".join(f"{x:.2f}" for x in xs)
