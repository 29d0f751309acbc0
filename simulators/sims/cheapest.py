"""Cheapest deployment: the GPU, count, parallelism and weight format that meet a TTFT / ITL SLO at a rate.

The reader gives a model, a request rate, the request lengths (fixed, or the course's Azure
conversation workload), targets for the chosen percentile of TTFT and of ITL (here TPOT, the
per-request mean gap between output tokens, what an SLO bounds), and optionally the GPUs allowed
and their prices. The search (simulators/benchmark/sizing_search.py) tries every GPU with a price x weight
format the GPU runs x replica shape: tensor parallel 1-8 x pipeline parallel 1-8 and, for a mixture
of experts, data-parallel attention with expert parallelism, at most 8 GPUs a replica
(sizing_search.shapes). It keeps the layouts vLLM would start, drops those whose closed-form
floors already miss a target, and confirms the rest with the event engine, cheapest lower bound
first: for each, the highest rate per replica at which the engine meets the targets (independent
of the request rate, so kept across calls), hence the fewest replicas, i.e. the layout's cheapest
configuration. It stops when no unconfirmed layout's lower bound is below the `TOP`-th cheapest
found: the table is the `TOP` cheapest layouts, each at its fewest replicas, in order (as brute
force over the engine over the same space finds, tests/test_sim_cheapest.py).

Cost: GPUs x price per GPU-hour (data/gpu_prices.toml: one provider's list prices, cited there;
the `prices` field replaces any of them); per million output tokens: USD per hour / (3600 x rate
x mean output tokens) x 10^6 at the offered rate. Headroom: 1 - max(p-TTFT / target, p-ITL /
target), the share of the tighter target left unused.

Not searched: replicas of more than 8 GPUs (one node), pipelines with data-parallel attention,
tensor parallelism with expert parallelism and no DP (the same bytes and time as TP), disaggregated
prefill, prefix caching. The engine runs a DP group as one scheduler with dp times one rank's
limits (sizing_search.spec).
The engine's runs are short (`num_requests`, 10% left out at each end): a configuration near
its knee can pass a short run and fail a long one; raise num_requests to check the winner.

References: 1) vllm-project/vllm, vllm/v1/worker/gpu_worker.py (memory); 2) Zhong et al. 2024,
DistServe (arXiv 2401.09670), goodput under TTFT and TPOT SLOs; 3) NVIDIA AIConfigurator and
llm-d-planner, which search the same space (github.com/ai-dynamo/aiconfigurator,
github.com/llm-d-incubation/llm-d-planner).
"""

import json
import random
from dataclasses import dataclass
from typing import Any

from ..benchmark import sizing_search as ss
from ..core import costmodel as cm
from ..core import efficiency as ef
from ..core.catalog import Gpu, data_file, gpus, resolve_model, running_example
from ..engine import workload
from ..parallel import check_link
from ..params import ParamError, model_param, num_requests_param, param
from ..results_cache import Keep, Streamed, for_call
from .cheapest_view import NO_PRICE, figure, summary  # noqa: F401 (the charts and words)

TITLE = "Cheapest deployment for an SLO"
DESCRIPTION = (
    "The GPU, count, tensor parallelism and weight format that meet a TTFT and ITL target at a request "
    "rate for the least money, found with the cost model and confirmed with the serving engine."
)

METRICS = {
    "usd_per_hour": ("Cheapest configuration: price", "USD/h"),
    "usd_per_million_output_tokens": ("Cheapest: cost per million output tokens", "USD"),
    "num_gpus": ("Cheapest: GPUs", "GPUs"),
    "ttft_s": ("Cheapest: TTFT at the percentile", "s"),
    "tpot_s": ("Cheapest: ITL (TPOT) at the percentile", "s"),
    "headroom": ("Cheapest: share of the tighter target left", ""),
    "layouts_tried": ("Layouts that vLLM would start", "layouts"),
    "layouts_confirmed": ("Layouts confirmed with the engine", "layouts"),
}
TOP = 3  # layouts listed: the three cheapest, each at its fewest replicas
MEMO_ENTRIES = 1024  # one entry per layout: about 180 for a mixture of experts on every GPU
ARRIVALS_SEED = 0  # the Poisson arrivals of every engine run (run's docstring)
FORMATS = [("bf16", "BF16 only"), ("bf16,fp8", "BF16, and FP8 on GPUs with FP8 cores"),
           ("bf16,fp8,int4", "BF16, FP8 and INT4 weight-only")]  # fmt: skip
VIEWS = [("cost", "Price of each configuration"), ("latency", "Latency against the targets")]
Candidate = tuple[float, str, ss.Layout, ss.Bounds, int]  # lower-bound price, label, layout, bounds, replicas
RunsBy = dict[str, dict[int, dict[str, float]]]  # each layout's engine runs by grid rate index


def default_prices() -> dict[str, float]:
    return {gid: float(v["usd_per_hour"]) for gid, v in data_file("gpu_prices.toml").items() if isinstance(v, dict)}


def parse_prices(text: str) -> dict[str, float]:
    """The reader's "id=USD/h, ..." over the defaults; ParamError naming the bad entry."""
    prices = default_prices()
    for item in filter(None, (x.strip() for x in text.replace(";", ",").split(","))):
        gid, _, value = map(str.strip, item.partition("="))
        if gid not in gpus():
            raise ParamError("prices", f"unknown GPU '{gid}' in '{item}'; known: {', '.join(gpus())}")
        try:
            price = float(value)
        except ValueError:
            raise ParamError("prices", f"'{item}' is not id=USD per hour (e.g. h100-sxm=2.5)") from None
        if not 0 < price < 1000:
            raise ParamError("prices", f"'{item}': a price per GPU-hour between 0 and 1,000 USD")
        prices[gid] = price
    return prices


def requested_gpus(text: str) -> list[Gpu]:
    """The GPUs a search was asked for: "all", or catalogue ids separated by commas."""
    ids = list(gpus()) if text.strip() in ("", "all") else [x.strip() for x in text.split(",") if x.strip()]
    if unknown := [g for g in ids if g not in gpus()]:
        raise ParamError("gpus", f"unknown GPU {', '.join(unknown)}; known: {', '.join(gpus())}")
    return [gpus()[g] for g in ids]


def allowed_gpus(text: str, prices: dict[str, float]) -> list[Gpu]:
    """Those of them with a price (the others are named as skipped)."""
    return [g for g in requested_gpus(text) if g.id in prices]


@dataclass(frozen=True)
class Params:
    model: Any = model_param()
    # Requests per second the deployment must serve (open-loop Poisson arrivals).
    request_rate_per_s: float = param(20.0, label="Request rate", unit="req/s", min=0.01, max=5000.0, log=True)
    ttft_slo_s: float = param(0.5, label="TTFT target", unit="s", min=0.001, max=600.0, step=0.01, log=True)
    tpot_slo_s: float = param(
        0.05, label="ITL (TPOT) target", unit="s", min=0.0001, max=10.0, step=0.001, log=True,
        help="Per request: (end-to-end - TTFT) / (output tokens - 1), vLLM's TPOT, GuideLLM's ITL.",
    )  # fmt: skip
    percentile: str = param("90", label="SLO percentile", choices=[(q, f"p{q}") for q in ("50", "90", "95", "99")])
    lengths: str = param(
        "fixed", label="Requests", choices=[("fixed", "Fixed lengths (below)"), ("azure", "Azure conversation trace")]
    )
    prompt_tokens: int = param(running_example()["prompt_tokens"], label="Prompt", unit="tokens", min=1, max=131_072)
    output_tokens: int = param(running_example()["output_tokens"], label="Output", unit="tokens", min=2, max=32_768)
    # Catalogue GPU ids separated by commas, or "all" (those with a price).
    gpus: str = param("all", label="GPUs allowed", help="'all', or ids such as 'h100-sxm, l40s, l4'.")
    max_gpus: int = param(8, label="At most", unit="GPUs", min=1, max=64, step=1)
    weight_formats: str = param("bf16,fp8", label="Weight formats", choices=FORMATS)
    prices: str = param(
        "", label="Your prices", unit="USD per GPU-hour",
        help="id=price pairs replacing the cited defaults, e.g. 'h100-sxm=2.1, l4=0.7'; a GPU without a price is left out.",
    )  # fmt: skip
    # Requests per engine run (10% left out at each end). At most 1,000: since the one speed model, a search
    # at 2,000 took 5 s of CPU, past what the browser's run limit leaves for Pyodide (tests/test_slider_extremes.py).
    num_requests: int = num_requests_param(300, min=100, max=1000, step=100, label="Requests per engine run")

    def check(self) -> None:
        m = resolve_model(self.model)
        if not allowed_gpus(self.gpus, parse_prices(self.prices)):
            raise ParamError("prices", "none of the GPUs allowed has a price: give one, e.g. 'l40s=1.2'")
        if self.lengths == "fixed" and self.prompt_tokens + self.output_tokens > m.max_context_tokens:
            raise ParamError("output_tokens", f"prompt plus output exceed {m.name}'s {m.max_context_tokens:,} tokens")


def _impossible(p: Params, m: Any, chosen: list[Gpu], keep: Keep) -> None:
    """A field error for what no configuration can do, whatever the rate (fixed lengths), before the
    search. The best case does not depend on the rate or the targets: kept per model, GPUs and lengths."""
    key = ("best_case", _key(p.model), tuple(g.id for g in chosen), p.max_gpus, p.weight_formats, p.prompt_tokens,
           p.output_tokens)  # fmt: skip
    context = p.prompt_tokens + p.output_tokens
    best = keep(key, lambda: ss.best_case(m, chosen, p.max_gpus, p.weight_formats, p.prompt_tokens, context))
    if not best["fits"]:
        raise ParamError(
            "max_gpus", f"{m.name} does not fit on {p.max_gpus} or fewer of the GPUs allowed in any weight format tried"
        )
    for k, alone, digits in (("ttft", f"a {p.prompt_tokens:,}-token prefill", 1), ("tpot", "one decode step", 2)):
        if best[f"{k}_s"] > getattr(p, f"{k}_slo_s"):
            at_least = f"{best[f'{k}_s'] * 1e3:,.{digits}f} ms (on {best[f'{k}_at']}, the fastest layout allowed)"
            raise ParamError(f"{k}_slo_s", f"cannot be met: {alone} alone takes at least {at_least}")


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else str(value)


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> Streamed:
    """The search. `seed` is not used: every engine run draws its arrivals from ARRIVALS_SEED, so the
    ranking does not move with the seed and every call (the page's warm-up runs included) shares the
    kept runs. Before each layout is confirmed it yields the search so far (_searching)."""
    keep, m, prices = for_call(keep, MEMO_ENTRIES), resolve_model(p.model), parse_prices(p.prices)
    if p.lengths == "fixed":
        _impossible(p, m, allowed_gpus(p.gpus, prices), keep)
        drawn = [(p.prompt_tokens, p.output_tokens)] * p.num_requests
    else:
        rng = random.Random(1)  # the same requests for every layout and every seed
        lengths = workload.azure_lengths(prompt_cap=m.max_context_tokens // 2)
        drawn = [lengths.draw(rng) for _ in range(p.num_requests)]
    max_len = max(a + b for a, b in drawn)
    out_tokens = sum(o for _, o in drawn) / len(drawn)
    base = (_key(p.model), p.lengths, p.prompt_tokens, p.output_tokens, p.num_requests)
    pruned: list[dict[str, Any]] = []
    candidates: list[Candidate] = []
    tried = on_paper = 0  # layouts vLLM would start; of those, ruled out by their closed-form floors
    runs_by: RunsBy = {}
    slo = (p.percentile, p.ttft_slo_s, p.tpot_slo_s)  # what ss.verdict holds a run to

    def prepare(lay: ss.Layout) -> tuple[ss.Bounds | None, dict[int, dict[str, float]]]:
        """One memo entry per layout: its bounds (None if vLLM would not start it) and, as they
        are made, its engine runs by grid index (for any target)."""
        a = ss.memory(m, lay, max_len)
        if a is None or not a.fits:
            return None, {}
        # The layout's first spec, kept for its step cost (one per layout, whatever the lengths).
        first = keep(("spec", _key(p.model), lay.label), lambda: ss.spec(m, lay, a.num_blocks))
        return ss.bounds(m, lay, a, drawn, like=first), {}

    for gpu in allowed_gpus(p.gpus, prices):
        for dtype in ss.weight_formats(gpu, p.weight_formats):
            for tp, pp, dp, ep in ss.shapes(m, p.max_gpus):
                lay = ss.Layout(gpu, tp, dtype, prices[gpu.id], pp, dp, ep)
                why = _unusable(m, lay)
                b, runs_by[lay.label] = (None, {}) if why else keep(("layout", *base, lay.label), lambda: prepare(lay))  # noqa: B023
                if b is None:
                    pruned.append({"config": lay.label, "why": why or "does not fit (vLLM would refuse to start)"})
                    continue
                tried += 1
                r = ss.replicas_needed(p.request_rate_per_s, b)
                if why := _floors_miss(p, b, r * lay.num_gpus):
                    pruned.append({"config": lay.label, "why": why})
                    on_paper += 1
                    continue
                candidates.append((r * lay.num_gpus * lay.price_per_gpu_h, lay.label, lay, b, r))
    pruned += [{"config": g.id, "why": NO_PRICE} for g in requested_gpus(p.gpus) if g.id not in prices]
    candidates.sort(key=lambda c: (c[0], c[1]))

    def served(lay: ss.Layout, b: ss.Bounds, k: int) -> dict[str, float]:
        """The engine's run of one replica at grid rate k (made once, kept with the layout's runs)."""
        runs = runs_by[lay.label]
        if k not in runs:
            runs[k] = ss.engine_run(b.engine, drawn, ss.at_index(k), ARRIVALS_SEED)
        return runs[k]

    def meets(lay: ss.Layout, b: ss.Bounds, k: int) -> bool:
        """Whether one replica meets the targets at grid rate k: its run there, else a kept miss at a lower
        rate or a pass at a higher one (meeting is taken as monotone in the rate: the brute-force tests
        check it, and a row's own run below settles any doubt), else the engine runs."""
        runs = runs_by[lay.label]
        if k not in runs:
            if any(j < k and not ss.verdict(got, *slo)["meets"] for j, got in runs.items()):
                return False
            if any(j > k and ss.verdict(got, *slo)["meets"] for j, got in runs.items()):
                return True
        return bool(ss.verdict(served(lay, b, k), *slo)["meets"])

    while True:
        steps = ss.rank(candidates, meets, TOP, p.request_rate_per_s, p.max_gpus)
        while True:
            try:
                so_far, taken = next(steps)
            except StopIteration as done:
                ranked, confirmed, full = done.value
                break
            yield _searching(p, m.name, so_far, candidates[taken:], runs_by)
        # The rows' own runs (the engine's figures); a row whose run misses after all is ranked again.
        rows = [(lay, b, r, k, ss.verdict(served(lay, b, k), *slo)) for _, _, lay, b, r, k in ranked]
        if all(v["meets"] for *_, v in rows):
            break
    pruned += full
    table = [_row(p, lay, r, v, ss.at_index(k) / b.rate_bound_per_s, out_tokens) for lay, b, r, k, v in rows]
    table.sort(key=lambda x: (x["usd_per_hour"], -x["headroom"]))  # at one price, the most headroom first
    keys = ("usd_per_hour", "usd_per_million_output_tokens", "num_gpus", "ttft_s", "tpot_s", "headroom")
    metrics: dict[str, float] = {k: float(table[0][k]) if table else 0.0 for k in keys}  # the cheapest row's
    metrics.update(layouts_tried=tried, layouts_confirmed=confirmed)
    return {
        "model": m.name,
        **_targets(p),
        "table": table,
        "pruned": pruned,
        "prices_usd_per_hour": prices,
        "found": bool(table),
        "search": {"ruled_out_on_paper": on_paper, "missed_on_engine": len(full)},  # the summary's accounting
        "metrics": metrics,
    }


def _searching(p: Params, model: str, ranked: list[ss.Entry], left: list[Candidate], runs_by: RunsBy) -> dict[str, Any]:
    """The search so far, for figure(): the rows found (with the engine's figures where the run at the
    row's rate is kept) and, as "pending", the lower-bound prices of the next `TOP` layouts to confirm."""
    rows = []
    for cost, name, lay, _, r, k in ranked:
        got = runs_by[lay.label].get(k)
        v = ss.verdict(got, p.percentile, p.ttft_slo_s, p.tpot_slo_s) if got else {}
        rows.append({"config": name, "short": ss.short_name(lay, r), "usd_per_hour": cost, **v})
    pending = [{"config": ss.config_name(lay, r), "short": ss.short_name(lay, r), "usd_per_hour": bound}
               for bound, _, lay, _, r in left[:TOP]]  # fmt: skip
    return {"model": model, **_targets(p), "table": rows, "pending": pending, "layouts_left": len(left)}


def _targets(p: Params) -> dict[str, Any]:
    return {k: getattr(p, k) for k in ("request_rate_per_s", "percentile", "ttft_slo_s", "tpot_slo_s")}


def _row(p: Params, lay: ss.Layout, r: int, v: dict[str, Any], load: float, out_tokens: float) -> dict[str, Any]:
    cost = r * lay.num_gpus * lay.price_per_gpu_h
    return {"config": ss.config_name(lay, r), "short": ss.short_name(lay, r), "gpu": lay.gpu.name, "gpu_id": lay.gpu.id, "tensor_parallel_size": lay.tp,
            "pipeline_parallel_size": lay.pp, "data_parallel_size": lay.dp, "enable_expert_parallel": lay.ep,
            "replicas": r, "weight_dtype": lay.weight_dtype, "num_gpus": r * lay.num_gpus, "usd_per_hour": cost,
            "usd_per_million_output_tokens": cost / (3600 * p.request_rate_per_s * out_tokens) * 1e6,
            "ttft_s": v["ttft_s"], "tpot_s": v["tpot_s"], "headroom": v["headroom"], "load": load}  # fmt: skip


def _unusable(m: Any, lay: ss.Layout) -> str:
    # A prefill priced as a memory-only floor would win the search on missing data; the search
    # prices with vLLM, which Apple silicon does not run.
    if missing := cm.missing_compute_figure(lay.gpu, lay.weight_dtype):
        return f"skipped: {lay.gpu.name} has no published {missing}, so its prefill cannot be priced"
    if why := ef.unsupported(ef.DEFAULT, lay.gpu):
        return f"skipped: {why}"
    if m.num_heads % lay.tp:
        return f"TP {lay.tp} does not divide {m.num_heads} attention heads"
    try:
        check_link(lay.gpu, lay.num_gpus, "gpus")
    except ParamError as e:
        return e.message
    return ""


def _floors_miss(p: Params, b: ss.Bounds, gpus_needed: int) -> str:
    if b.ttft_floor_s > p.ttft_slo_s:
        return f"its TTFT floor, {b.ttft_floor_s * 1e3:,.0f} ms, is over the target"
    if b.tpot_floor_s > p.tpot_slo_s:
        return f"its ITL floor, {b.tpot_floor_s * 1e3:,.1f} ms, is over the target"
    if gpus_needed > p.max_gpus:
        return f"the rate needs at least {gpus_needed} GPUs (a replica serves under {b.rate_bound_per_s:,.2f} req/s)"
    return ""
