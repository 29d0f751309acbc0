"""Why local models, and what "fast enough" means: cost per token, latency percentiles, goodput.

Model of the server: continuous batching of the running example at `batch_size` requests in flight.
A request is prefilled alone when it joins (costmodel.prefill_time), and every prefill pauses the
others' decoding (no chunked prefill). While `batch_size` requests pass through the server end to
end, it runs `batch_size` prefills and output_tokens - 1 decode steps at that batch, whose contexts
in steady state add up to batch_size * (prompt + (output_tokens - 1) / 2) (costmodel.decode_line):

    cycle_s      = batch * prefill_s + (output_tokens - 1) * step_s
    tokens_per_s = batch * output_tokens / cycle_s
    TTFT         = prefill_s                              (arrivals below capacity: no queue)
    TPOT         = (cycle_s - prefill_s) / (output_tokens - 1)  (its own steps + others' prefills)
    cost per 1M output tokens = price_per_hour / 3600 / (tokens_per_s * utilization) * 1e6

TPOT follows the common convention (E2E - TTFT) / (output_tokens - 1), which GuideLLM calls ITL.
The GPU price, utilisation and hosted price are the reader's assumptions, not facts: replace them
with your own quotes. The hosted price is per output token; input tokens are not billed here, while
the local cost includes the GPU time of the prefills.

Latency sample (illustrative, not measured): `num_requests` requests, each with
    TTFT_i = TTFT * exp(sigma * Z_i) + slow_i * long_prefill_s
    TPOT_i = TPOT * exp(sigma * Z'_i) + stall_i * long_prefill_s / (output_tokens - 1)
Z, Z' standard normal (a lognormal spread whose median is the cost-model value); slow_i and stall_i
independent Bernoulli(tail_probability): the request waited behind, or had its decoding paused once
by, the prefill of a long prompt of `long_prompt_tokens` (costed by the cost model). At batch 1 no
other request runs, so stall_i = 0. The largest batch that fits (`max_batch_fits`) is vLLM's count
at its defaults (vllm_memory.account: KV blocks left after weights, the profiled activation
peak and non-torch memory on one GPU, divided by the blocks of one request). Percentiles are
nearest-rank: pXX is the ceil(XX / 100 * n)-th smallest value. The SLO holds when the chosen
percentile of TTFT and of TPOT are both within target; goodput counts the requests that meet both
targets themselves, and their rate when the server runs flat out.

References: 1) Zhong et al. 2024, DistServe (arXiv 2401.09670), goodput under TTFT/TPOT SLOs;
2) GuideLLM metric definitions (github vllm-project/guidellm docs/guides/metrics.md); 3) Dean and
Barroso 2013, The Tail at Scale (Communications of the ACM 56(2)).
"""

import bisect
import math
import random
from dataclasses import dataclass
from typing import Any

from ..core import costmodel as cm
from ..core import stats
from ..core import vllm_memory as vm
from ..core.capacity import BATCH_GRID
from ..core.catalog import Gpu, Model, resolve_model, running_example
from ..params import ModelGpuEngine, ParamError, param
from ..plotting import LOG, chart, line, markers
from ..results_cache import Keep, for_call

TITLE = "Cost per token, latency SLOs and goodput"
DESCRIPTION = (
    "What a million output tokens cost on your own GPU against a hosted price, and whether the latency "
    "percentiles meet a service-level objective: the mean hides the tail."
)
PERCENTILES = (50, 90, 95, 99)
METRICS = {
    "local_tokens_per_s": ("Local output tokens per second, GPU busy", "tokens/s"),
    "cost_per_million_tokens_local_usd": ("Local cost per million output tokens", "USD"),
    "cost_per_million_tokens_hosted_usd": ("Hosted price per million output tokens (assumed)", "USD"),
    # The default percentile's TTFT and TPOT among the key figures (a repeated key keeps this place).
    "ttft_p90_s": ("TTFT p90", "s"),
    "tpot_p90_s": ("TPOT p90", "s"),
    "slo_met": ("SLO met at the chosen percentile (1 yes, 0 no)", ""),
    "goodput_fraction": ("Share of requests meeting both targets", ""),
    "goodput_rps": ("Goodput: requests per second meeting both targets", "requests/s"),
    "ttft_mean_s": ("TTFT mean", "s"),
    **{f"ttft_p{q}_s": (f"TTFT p{q}", "s") for q in PERCENTILES},
    "tpot_mean_s": ("TPOT mean", "s"),
    **{f"tpot_p{q}_s": (f"TPOT p{q}", "s") for q in PERCENTILES},
    "max_batch_fits": ("Largest batch whose KV cache fits", "requests"),
    "max_batch_meeting_slo": ("Largest batch meeting the SLO at the chosen percentile (0: none)", "requests"),
    "break_even_utilization": ("Utilisation where local costs the hosted price", ""),
    "request_rate_rps": ("Requests per second served, GPU busy", "requests/s"),
}
MAX_BATCH = BATCH_GRID[-1]  # the batch slider's end, and the largest batch the SLO search reports
MAX_CDF_POINTS = 200

VIEWS = [("cost", "Cost per million tokens vs batch"), ("ttft", "TTFT distribution"), ("tpot", "TPOT distribution")]

EXAMPLE = running_example()  # the course's running example: default lengths and formats
PRICE_HELP = "An assumption to replace with your own quote, not a market fact."


@dataclass(frozen=True)
class Params(ModelGpuEngine):
    # Prompt and answer of each request (the running example by default).
    prompt_tokens: int = param(EXAMPLE["prompt_tokens"], label="Prompt", unit="tokens", min=1, max=131_072, log=True)
    output_tokens: int = param(EXAMPLE["output_tokens"], label="Output", unit="tokens", min=2, max=50_000, log=True)
    # Requests decoding together: more is cheaper per token and slower per request.
    batch_size: int = param(32, label="Batch size", unit="requests", min=1, max=MAX_BATCH, step=1, log=True)
    # Your assumption: what one GPU-hour costs you (a rental quote, or hardware + power amortised).
    gpu_price_per_hour_usd: float = param(
        2.5, label="GPU price (your assumption)", unit="USD/h", min=0.01, max=100.0, step=0.1, help=PRICE_HELP
    )
    # Your assumption: share of paid hours the GPU is busy serving at this batch size.
    utilization: float = param(0.5, label="Utilisation (your assumption)", min=0.01, max=1.0, step=0.01)
    # Your assumption: a hosted API's price for the same model.
    hosted_price_per_million_usd: float = param(
        0.6,
        label="Hosted price (your assumption)",
        unit="USD per 1M output tokens",
        min=0.01,
        max=1000.0,
        step=0.05,
        help="An assumption to replace with a real price list; input tokens are not billed here.",
    )
    # The SLO: this percentile of TTFT and of TPOT must be within the targets below.
    percentile: str = param("90", label="SLO percentile", choices=[(str(q), f"p{q}") for q in PERCENTILES])
    ttft_slo_s: float = param(0.5, label="TTFT target", unit="s", min=0.001, max=60.0, step=0.01, log=True)
    tpot_slo_s: float = param(0.03, label="TPOT target", unit="s", min=0.0001, max=10.0, step=0.001, log=True)
    # Lognormal spread (sigma of ln) of ordinary requests around the cost-model latencies.
    jitter_sigma: float = param(
        0.3, label="Spread of ordinary requests", unit="sigma of ln", min=0.0, max=2.0, step=0.05
    )
    # Chance that a request waits behind (TTFT) or is paused by (TPOT) a long prompt's prefill.
    tail_probability: float = param(0.05, label="Chance of a long-prefill hiccup", min=0.0, max=1.0, step=0.01)
    long_prompt_tokens: int = param(32_000, label="Long prompt", unit="tokens", min=1, max=131_072, log=True)
    # Requests in the seeded latency sample.
    num_requests: int = param(2000, label="Requests sampled", min=100, max=20_000, step=100)

    def check(self) -> None:
        limit = 2 * max(resolve_model(self.model).max_context_tokens, 131_072)
        if self.prompt_tokens + self.output_tokens > limit:
            raise ParamError("output_tokens", f"prompt plus output must stay below {limit:,} tokens for this model")


def server(m: Model, gpu: Gpu, p: Params, batch: int) -> dict[str, float]:
    """Steady-state TTFT, TPOT and throughput of the continuous-batching server (docstring)."""
    eff = cm.efficiency(False, p.engine)
    prefill_s = cm.prefill_time(m, gpu, p.prompt_tokens, eff=eff).time_s
    steps = p.output_tokens - 1
    step_s = cm.decode_line(m, gpu, batch, eff=eff).time_s(batch * (p.prompt_tokens + steps / 2))
    cycle_s = batch * prefill_s + steps * step_s
    tokens_per_s = batch * p.output_tokens / cycle_s
    cost = p.gpu_price_per_hour_usd / 3600 / (tokens_per_s * p.utilization) * 1e6
    return {"ttft_s": prefill_s, "tpot_s": (cycle_s - prefill_s) / steps, "tokens_per_s": tokens_per_s, "cost": cost}


def percentile(sorted_values: list[float], q: float) -> float:
    """q-th percentile (0-100) by the project's one rule, stats.percentile (nearest rank)."""
    return stats.percentile(sorted_values, q / 100)


def _cdf(values: list[float]) -> tuple[list[float], list[float]]:
    n, every = len(values), max(1, len(values) // MAX_CDF_POINTS)
    idx = sorted(set(range(every - 1, n, every)) | {0, n - 1})
    return [values[i] for i in idx], [(i + 1) / n for i in idx]


Draw = tuple[float, bool, float, bool]  # TTFT jitter, waits behind a long prefill, TPOT jitter, stalled by one


def _draws(p: Params, seed: int) -> list[Draw]:
    """Per request: the TTFT and TPOT jitter factors and whether a long prefill delays it (the same
    draws at every batch, so a batch's sample differs from another's only by the cost model)."""
    rng, out = random.Random(seed), []
    for _ in range(p.num_requests):
        j1 = math.exp(p.jitter_sigma * rng.gauss(0.0, 1.0))
        waits = rng.random() < p.tail_probability
        out.append((j1, waits, math.exp(p.jitter_sigma * rng.gauss(0.0, 1.0)), rng.random() < p.tail_probability))
    return out


def _largest_batch_meeting(m: Model, gpu: Gpu, p: Params, draws: list[Draw], long_s: float, limit: int) -> int:
    """The largest batch up to `limit` whose sample meets the TPOT target at the chosen percentile (0:
    none; TTFT is the same at every batch). It meets it when at least `rank` TPOTs (cost-model TPOT x
    jitter + stall) are within it, counted on the sorted jitters of the stalled and the other
    requests (nothing redrawn or sorted per batch); the count falls as the batch grows: a search."""
    rank = int(percentile(list(range(len(draws))), int(p.percentile))) + 1  # the percentile: rank-th smallest
    calm = sorted(j2 for _, _, j2, stalled in draws if not stalled)
    hit = sorted(j2 for _, _, j2, stalled in draws if stalled)
    stall = long_s / (p.output_tokens - 1)

    def meets(b: int) -> bool:
        tpot_s, extra = server(m, gpu, p, b)["tpot_s"], stall if b > 1 else 0.0
        calm_in = bisect.bisect_right(calm, p.tpot_slo_s / tpot_s)
        return calm_in + bisect.bisect_right(hit, (p.tpot_slo_s - extra) / tpot_s) >= rank

    if not meets(1):
        return 0
    # Doubling from 1, then bisection: a step's price grows with its batch, so the large batches
    # near `limit` are priced only when the answer lies among them.
    lo, hi = 1, 2
    while hi <= limit and meets(hi):
        lo, hi = hi, 2 * hi
    hi = min(hi, limit + 1)  # meets(lo); hi: the first batch known to miss (or past the limit)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if meets(mid) else (lo, mid)
    return lo


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> dict[str, Any]:
    m, gpu = p.resolved()
    s = server(m, gpu, p, p.batch_size)
    long_prefill_s = cm.prefill_time(m, gpu, p.long_prompt_tokens, eff=cm.efficiency(False, p.engine)).time_s
    # The draws depend on these four alone: a change of batch, targets, model or GPU reuses them.
    draws: list[Draw] = for_call(keep)(
        ("draws", seed, p.num_requests, p.jitter_sigma, p.tail_probability), lambda: _draws(p, seed)
    )
    # The sampled TTFTs and TPOTs (a stall needs another request's prefill: none at batch 1).
    stall = long_prefill_s / (p.output_tokens - 1) if p.batch_size > 1 else 0.0
    ttft = [s["ttft_s"] * j1 + (long_prefill_s if waits else 0.0) for j1, waits, _, _ in draws]
    tpot = [s["tpot_s"] * j2 + (stall if stalled else 0.0) for _, _, j2, stalled in draws]
    good = sum(t1 <= p.ttft_slo_s and t2 <= p.tpot_slo_s for t1, t2 in zip(ttft, tpot, strict=True))
    ttft, tpot = sorted(ttft), sorted(tpot)
    q = int(p.percentile)
    ttft_pdf, tpot_pdf = stats.Pdf(ttft), stats.Pdf(tpot)  # one each, for every percentile below
    request_rate = s["tokens_per_s"] / p.output_tokens
    # The sweep stops where the batch's KV cache no longer fits (max_batch_fits: see the docstring).
    fit_batch = int(vm.account(m, gpu, max_model_len=p.prompt_tokens + p.output_tokens).max_concurrency)
    # Batch 1 stays in the sweep even when nothing fits, so the chart still shows the bound.
    batches = [b for b in BATCH_GRID if b < fit_batch] + [max(fit_batch, 1)]
    sweep = [server(m, gpu, p, b) for b in batches]
    notes = []
    if p.batch_size > fit_batch:
        notes.append(
            f"Only {fit_batch:,} requests of {p.prompt_tokens + p.output_tokens:,} tokens fit in the KV cache of one "
            f"{gpu.name}: batch {p.batch_size:,} would need memory that is not there, so its figures are a bound."
        )
    metrics: dict[str, float] = {
        "cost_per_million_tokens_local_usd": s["cost"],
        "cost_per_million_tokens_hosted_usd": p.hosted_price_per_million_usd,
        "local_tokens_per_s": s["tokens_per_s"],
        "max_batch_fits": fit_batch,
        "max_batch_meeting_slo": (
            _largest_batch_meeting(m, gpu, p, draws, long_prefill_s, min(max(fit_batch, 1), MAX_BATCH))
            if ttft_pdf.percentile(q / 100) <= p.ttft_slo_s  # TTFT does not depend on the batch here
            else 0
        ),
        # Local cost scales with 1 / utilisation: equal to the hosted price at this utilisation.
        "break_even_utilization": s["cost"] * p.utilization / p.hosted_price_per_million_usd,
        **{f"ttft_p{k}_s": ttft_pdf.percentile(k / 100) for k in PERCENTILES},
        "ttft_mean_s": sum(ttft) / len(ttft),
        **{f"tpot_p{k}_s": tpot_pdf.percentile(k / 100) for k in PERCENTILES},
        "tpot_mean_s": sum(tpot) / len(tpot),
        "slo_met": int(ttft_pdf.percentile(q / 100) <= p.ttft_slo_s and tpot_pdf.percentile(q / 100) <= p.tpot_slo_s),
        "goodput_fraction": good / p.num_requests,
        "goodput_rps": good / p.num_requests * request_rate,
        "request_rate_rps": request_rate,
    }
    return {
        **p.stated("batch_size", "ttft_slo_s", "tpot_slo_s", "utilization"),
        "percentile": q,
        "model_ttft_s": s["ttft_s"],
        "model_tpot_s": s["tpot_s"],
        "long_prefill_s": long_prefill_s,
        "sweep_batch": batches,
        "sweep_cost_usd": [x["cost"] for x in sweep],
        "sweep_tpot_s": [x["tpot_s"] for x in sweep],
        "ttft_cdf": _cdf(ttft),
        "tpot_cdf": _cdf(tpot),
        "notes": notes,
        "metrics": metrics,
    }


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    m = r["metrics"]
    if view == "cost":
        x = r["sweep_batch"]
        hosted = m["cost_per_million_tokens_hosted_usd"]
        data = [
            line(x, r["sweep_cost_usd"], f"Local: 1 x {r['gpu']} at {r['utilization']:.0%} utilisation", 0),
            line([x[0], x[-1]], [hosted, hosted], "Hosted price (your assumption)", 1),
            markers([r["batch_size"]], [m["cost_per_million_tokens_local_usd"]], f"Batch {r['batch_size']}", 2),
        ]
        title = f"Cost per million output tokens, {r['model']}"
        return chart(data, title, "Batch size (requests)", "USD per 1M output tokens", xaxis=LOG, yaxis=LOG)
    xs, ys = r[f"{view}_cdf"]
    q, name = r["percentile"], view.upper()
    marks = [(m[f"{view}_mean_s"], "Mean", 3), (m[f"{view}_p{q}_s"], f"p{q}", 4), (m[f"{view}_p99_s"], "p99", 5)]
    data = [line(xs, ys, f"{name} of {len(xs)} sampled points (CDF)", 0)]
    marks.append((r[f"{view}_slo_s"], "Target", 1))
    data += [line([v, v], [0, 1], f"{label}: {v * 1e3:,.1f} ms", i) for v, label, i in marks]
    title = f"{name} of sampled requests, batch {r['batch_size']}"
    # margin: room for a log axis's last tick label (else plotly widens it: static charts agree)
    return chart(data, title, f"{name} (s)", "Share of requests at or below", xaxis=LOG, margin={"r": 40})


def summary(r: dict[str, Any], view: str) -> str:
    """One text per view: cost against batch and the latency sample, or one latency against its target."""
    m, q = r["metrics"], r["percentile"]
    goodput = (
        f"The p{q} SLO is {'met' if m['slo_met'] else 'missed'}; {m['goodput_fraction']:.1%} of requests meet both "
        f"targets, a goodput of {m['goodput_rps']:,.2f} requests/s."
    )

    def ms(k: str, x: float) -> str:  # TTFT to the millisecond, TPOT to a tenth
        return f"{x * 1e3:,.{0 if k == 'ttft' else 1}f} ms"

    def spread(k: str) -> str:
        return f"mean {ms(k, m[f'{k}_mean_s'])}, p{q} {ms(k, m[f'{k}_p{q}_s'])}, p99 {ms(k, m[f'{k}_p99_s'])}"

    if view in ("ttft", "tpot"):
        k, name, target, at_q = view, view.upper(), r[f"{view}_slo_s"], m[f"{view}_p{q}_s"]
        long = f"{r['long_prefill_s'] * 1e3:,.0f} ms"
        if k == "ttft":
            why = f"a request that waits behind the prefill of a long prompt takes {long} more."
        elif r["batch_size"] > 1:
            why = f"a request whose decoding another request's long prefill pauses once adds that {long}, spread over its output."
        else:
            why = "at batch 1 no other request runs, so no prefill pauses a decode: the spread is the jitter alone."
        text = (
            f"{name} of the sampled requests for {r['model']} on one {r['gpu']} at batch {r['batch_size']}: "
            f"{spread(k)}, against a target of {ms(k, target)} (p{q} {'within' if at_q <= target else 'over'} it). "
            f"The sample spreads around the cost model's {r[f'model_{k}_s'] * 1e3:,.1f} ms; {why} "
        )
    else:
        (best, best_b), b = min(zip(r["sweep_cost_usd"], r["sweep_batch"], strict=True)), r["batch_size"]
        local, hosted = m["cost_per_million_tokens_local_usd"], m["cost_per_million_tokens_hosted_usd"]
        # The sweep stops at the largest batch that fits: a batch past it (a bound) may cost less.
        where = (
            f": the cost falls to ${best:,.2f} at batch {best_b:,}"
            if b < best_b
            else f": batch {b:,} is the cheapest whose KV cache fits"
            if b == best_b
            else f", but the cheapest batch whose KV cache fits is {best_b:,}, at ${best:,.2f}"
        )
        text = (
            f"{r['model']} on one {r['gpu']} at batch {b} makes {m['local_tokens_per_s']:,.0f} output "
            f"tokens/s while busy: at {r['utilization']:.0%} utilisation a million tokens cost ${local:,.2f} locally "
            f"against an assumed ${hosted:,.2f} hosted. "
        )
        if r["sweep_batch"][-1] > 1:  # else at most one request fits: the note says how many
            text += (
                f"Larger batches share each weight read{where}, while TPOT grows from {r['sweep_tpot_s'][0] * 1e3:,.1f} "
                f"ms at batch 1 to {r['sweep_tpot_s'][-1] * 1e3:,.0f} ms at batch {r['sweep_batch'][-1]:,}. "
            )
        text += (
            f"TTFT: {spread('ttft')} (target {ms('ttft', r['ttft_slo_s'])}). "
            f"TPOT: {spread('tpot')} (target {ms('tpot', r['tpot_slo_s'])}). "
        )
    return text + goodput + "".join(" " + n for n in r["notes"])
