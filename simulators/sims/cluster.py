"""A cluster of replicas behind a router, llm-d style; and prefill/decode disaggregation.

Model: `num_replicas` identical replicas (simulators/engine, each with its own paged KV and
block-hash prefix cache) receive one seeded shared-prefix trace through each router in turn:
round robin, least queue depth, least KV use, most prefix-cache hits, and llm-d's weighted
sum of those scorers (engine/cluster.py). Per router: the cluster's cache hit rate, how evenly
the requests spread (busiest replica's share over the mean) and TTFT percentiles. The
disaggregation view compares the same replicas colocated (least-queue routing) with
`num_prefill` of them doing only prefill and the rest only decode; each prefill's KV crosses the
GPU interconnect (costmodel.link_GBps_one_way) before decoding starts, which adds to TTFT
and stops long prefills from stalling other requests' decode steps.

References: 1) llm-d inference scheduler and "KV-Cache Wins You Can See" (llm-d.ai);
2) Zhong et al. 2024, DistServe (arXiv 2401.09670); Patel et al. 2024, Splitwise (ISCA).
"""

import json
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..engine import EngineSpec, SchedulerConfig, serve, summarize, workload
from ..engine.cluster import ROUTERS, serve_shown
from ..engine.metrics import RequestRecord
from ..engine.replica import Replica
from ..parallel import check_serving, layout_of, pipeline_parallel_param, tensor_parallel_param
from ..params import ModelGpuEngine, ParamError, arrival_rate_param, num_requests_param, param
from ..plotting import LOG, PERCENT, bar, chart, right_axis, so_far
from ..results_cache import Keep, KeptSteps, Show, Streamed, for_call, kept, kept_steps

TITLE = "Routing across replicas, and prefill/decode disaggregation"
DESCRIPTION = "Which replica each request goes to decides cache hits, balance and tail latency; splitting prefill from decode changes TTFT and TPOT."
ROUTER_NAMES = {
    "round_robin": "Round robin",
    "least_queue": "Least queue",
    "least_kv": "Least KV use",
    "prefix": "Prefix-aware",
    "weighted": "Weighted (llm-d)",
}
PLACEMENTS = (("colocated", "Colocated"), ("disaggregated", "Disaggregated"))  # in METRICS' order
STORY = ("round_robin", "prefix", "weighted", "least_queue", "least_kv")
METRICS = {
    # Every router's p99 TTFT, then their hit rates, in the order the story goes: round robin, the
    # cache-aware ones. Eight key figures hold all five TTFTs (learner review: by pairs, one router fell out).
    **{f"ttft_{r}_s_p99": (f"{ROUTER_NAMES[r]}: p99 TTFT", "s") for r in STORY},
    **{f"hit_rate_{r}": (f"{ROUTER_NAMES[r]}: cache hit rate", "") for r in STORY},
    **{f"imbalance_{r}": (f"{n}: busiest replica / mean", "x") for r, n in ROUTER_NAMES.items()},
    **{f"ttft_{v}_s_p99": (f"{n}: p99 TTFT", "s") for v, n in PLACEMENTS},
    **{f"tpot_{v}_s_p99": (f"{n}: p99 TPOT", "s") for v, n in PLACEMENTS},
}
SHARING = [
    ("system", "Shared system prompts"),
    ("multi_turn", "Multi-turn conversations"),
    ("agent", "Agent trajectories"),
]

VIEWS = [
    ("routers", "Hit rate and tail TTFT per router"),
    ("balance", "Requests per replica"),
    ("disagg", "Colocated vs disaggregated"),
]
# The balance and placement charts' tables hold their own figures (api.run; learner review).
TABLES = {
    "balance": ("imbalance_",),
    "disagg": ("ttft_colocated_", "ttft_disaggregated_", "tpot_colocated_", "tpot_disaggregated_"),
}
# Runs kept through the caller's keep (api.Session's store), keyed by every parameter they depend on:
# a new split re-serves only the disaggregated run (one of six). One scenario: its trace, each
# router's run and the disaggregated run of the latest split.
MEMO_ENTRIES = len(ROUTERS) + 2
Run = tuple[dict[str, Any], dict[str, float], dict[str, float]]  # chart entry, metrics, summary


@dataclass(frozen=True)
class Params(ModelGpuEngine):
    num_replicas: int = param(4, label="Replicas", min=2, max=32, step=1)
    sharing: str = param("system", label="Workload", choices=SHARING)
    # Distinct system prompts: more than the replicas can all cache spreads the hits thin.
    num_prefixes: int = param(8, label="Distinct system prompts", min=1, max=64, step=1)
    shared_tokens: int = param(2000, label="Shared prefix", unit="tokens", min=0, max=6000, step=10)
    # Requests in the trace. At most 500: every view serves it seven times (five routers,
    # colocated, disaggregated), and 1,000 requests took about 2 s in CPython (more in the browser).
    num_requests: int = num_requests_param(60, min=20, max=500)
    rate_per_s: float = arrival_rate_param(30.0, max=1000.0, label="Arrival rate (cluster)")
    # Disaggregation: replicas that only prefill (the rest only decode).
    num_prefill: int = param(1, label="Prefill replicas (disaggregated)", min=1, max=31, step=1)
    tensor_parallel_size: int = tensor_parallel_param()
    pipeline_parallel_size: int = pipeline_parallel_param()

    def check(self) -> None:
        check_serving(*self.resolved(), layout_of(self))
        if self.num_prefill >= self.num_replicas:
            raise ParamError("num_prefill", f"must leave at least one decode replica: below {self.num_replicas}")


def _scenario(p: Params, seed: int, keep: Keep) -> tuple[list[Any], list[workload.Request], EngineSpec]:
    """The scenario's key, the trace every router serves and the replicas' engine (kept)."""
    trace = (p.model, p.gpu, p.num_replicas, p.sharing, p.num_prefixes, p.shared_tokens, p.num_requests, p.rate_per_s)
    key = [*trace, p.engine, repr(layout_of(p)), seed]  # the profile and the layout price every step

    def make() -> tuple[list[workload.Request], EngineSpec]:
        m, gpu = p.resolved()
        sharing = {"sharing": p.sharing, "num_prefixes": p.num_prefixes, "shared_tokens": p.shared_tokens}
        reqs = workload.shared_prefix_trace(seed, m.max_context_tokens, p.num_requests, p.rate_per_s, **sharing)
        config = SchedulerConfig(max_model_len=m.max_context_tokens)
        return reqs, EngineSpec(m, gpu, config, prefix="hash", engine=p.engine, **layout_of(p).cost_kw())

    reqs, spec = keep(json.dumps(key, sort_keys=True), make)
    return key, reqs, spec


def _router(p: Params, seed: int, keep: Keep, name: str, show: Show[Run] | None = None) -> KeptSteps[Run]:
    """One router's run (its chart entry, metrics and summary); made now with `show`, shown while it goes."""
    key, reqs, spec = _scenario(p, seed, keep)
    measure, opts = partial(_measured, p, name), {"num_replicas": p.num_replicas, "router": name, "keep_series": False}
    run_key = json.dumps([*key, name], sort_keys=True)
    return (yield from kept_steps(keep, run_key, lambda: serve_shown(reqs, spec, measure, show, **opts)))


def _measured(p: Params, name: str, recs: list[RequestRecord], dropped: list[Any], replicas: list[Replica]) -> Run:
    s = summarize(recs)
    counts = [sum(r.replica == i for r in recs) for i in range(p.num_replicas)]
    hits = sum(rep.hit_tokens for rep in replicas)
    computed = sum(rep.prefill_tokens for rep in replicas)
    metrics = {
        f"hit_rate_{name}": hits / (hits + computed) if hits + computed else 0.0,
        f"ttft_{name}_s_p99": s["ttft_s_p99"],
        f"imbalance_{name}": max(counts) / (sum(counts) / len(counts)) if sum(counts) else 1.0,
    }
    entry = {"counts": counts, "ttft": [s["ttft_s_p50"], s["ttft_s_p90"], s["ttft_s_p99"]], "dropped": len(dropped)}
    return entry, metrics, s


def _percentiles(s: dict[str, float]) -> dict[str, list[float]]:
    """What the disaggregation chart draws of one run: median and p99 TTFT and TPOT."""
    return {k: [s[f"{k}_s_p50"], s[f"{k}_s_p99"]] for k in ("ttft", "tpot")}


def _disaggregated(p: Params, seed: int, keep: Keep) -> tuple[dict[str, float], bool]:
    """The same trace on the same replicas split into prefill and decode pools, and whether kept."""
    key, reqs, spec = _scenario(p, seed, keep)
    opts = {"num_replicas": p.num_replicas, "router": "least_queue", "num_prefill": p.num_prefill, "keep_series": False}
    run_key = json.dumps([*key, "disaggregated", p.num_prefill])
    return kept(keep, run_key, lambda: summarize(serve(reqs, spec, **opts).records))


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> Streamed:
    """Every router's run, then the split into prefill and decode pools. The chart asked for is
    yielded as it grows, one run made now at a time (kept runs are drawn with the answer): the
    routers and balance charts router by router; the disaggregation chart's two runs come first."""
    keep, n = for_call(keep, MEMO_ENTRIES), p.num_requests
    split = {"num_replicas": p.num_replicas, "num_prefill": p.num_prefill}
    if view == "disagg":  # colocated is the least-queue router's run: the same requests, replicas and router
        shown = so_far(split, "modes", n, lambda run: {"colocated": _percentiles(run[2])})
        (_, _, colocated), was_kept = yield from _router(p, seed, keep, "least_queue", shown)
        modes = {"colocated": _percentiles(colocated)}
        if not was_kept:
            yield {**split, "modes": modes}
        disaggregated, was_kept = _disaggregated(p, seed, keep)
        if not was_kept:
            yield {**split, "modes": {**modes, "disaggregated": _percentiles(disaggregated)}}
    routers: dict[str, Any] = {}
    metrics: dict[str, float] = {}
    summaries: dict[str, dict[str, float]] = {}
    head = {"num_replicas": p.num_replicas, "sharing": p.sharing}

    def first_so_far(run: Run, done: int) -> dict[str, Any]:  # the chart's first run, while it goes
        return {**head, "routers": {ROUTERS[0]: run[0]}, "metrics": run[1], "running": [done, n]}

    for name in ROUTERS:
        show = first_so_far if view in ("routers", "balance") and name == ROUTERS[0] else None
        (routers[name], more, summaries[name]), was_kept = yield from _router(p, seed, keep, name, show)
        metrics.update(more)
        if view in ("routers", "balance") and not was_kept:
            yield {**head, "routers": dict(routers), "metrics": dict(metrics)}
    modes = {"colocated": _percentiles(summaries["least_queue"])}
    modes["disaggregated"] = _percentiles(_disaggregated(p, seed, keep)[0])
    metrics |= {f"{k}_{mode}_s_p99": v[k][1] for mode, v in modes.items() for k in ("ttft", "tpot")}
    return {
        **p.stated("num_replicas", "num_prefill", "sharing"),
        "routers": routers,
        "modes": modes,
        "metrics": metrics,
    }


def _disagg_reading(prefill: int, decode: int, co: dict[str, list[float]], dis: dict[str, list[float]]) -> str:
    """What the placement did to TTFT and TPOT, and why (learner review: one text whatever the figures)."""
    p, d = f"{prefill} prefill replica{'s' * (prefill > 1)}", f"{decode} decode replica{'s' * (decode > 1)}"
    (d50, d99), (c50, c99) = dis["ttft"], co["ttft"]
    if d50 > 1.1 * c50:
        ttft = f"TTFT rises: prompts queue for the {p}, and each one's KV then crosses the GPU interconnect."
    elif d50 < c50 and d99 > 1.1 * c99:
        ttft = (
            f"TTFT p50 falls (no prompt waits behind decode steps) but p99 rises: bursts of prompts queue for the {p}."
        )
    elif d50 < c50:
        ttft = f"TTFT falls: on the {p} no prompt waits behind decode steps."
    else:
        ttft = "TTFT barely moves: the KV transfer costs about what the separate prefill saves."
    if dis["tpot"][1] < co["tpot"][1]:
        return f"{ttft} TPOT p99 falls: no long prefill stalls a decode step on the {d}."
    return f"{ttft} TPOT does not fall: the {d} carry every decode, more of them each than colocated."


def _named(router: str) -> str:
    """A router's name inside a sentence: "least KV use", not "least kv use"."""
    return ROUTER_NAMES[router][0].lower() + ROUTER_NAMES[router][1:]


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    done = [n for n in ROUTERS if n in r.get("routers", {})]  # all of them, but while they stream
    names = [ROUTER_NAMES[n] for n in done]
    if view == "balance":
        data = [
            bar(names, [r["routers"][n]["counts"][i] for n in done], f"Replica {i + 1}", i)
            for i in range(r["num_replicas"])
        ]
        return chart(data, "Requests per replica, per router", "Router", "Requests", barmode="group")
    if view == "disagg":
        labels = ["TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99"]
        split = f"{r['num_prefill']} prefill + {r['num_replicas'] - r['num_prefill']} decode"
        modes = {"colocated": f"{r['num_replicas']} colocated replicas", "disaggregated": split}
        ms = {k: [x * 1e3 for x in r["modes"][k]["ttft"] + r["modes"][k]["tpot"]] for k in modes if k in r["modes"]}
        data = [  # each bar labelled: on the log axis 12.8 against 19.3 ms looked like 3x (learner review)
            bar(labels, ms[k], name, i, text=[f"{v:,.1f}" for v in ms[k]], textposition="outside")
            for i, (k, name) in enumerate(modes.items())
            if k in ms  # both, but while they stream
        ]
        title = "Colocated vs disaggregated prefill and decode"
        return chart(data, title, "Metric", "Milliseconds", barmode="group", yaxis=LOG)
    m = r["metrics"]
    data = [
        # Offset groups put the two bars side by side although they hang on different y axes.
        bar(names, [m[f"hit_rate_{n}"] for n in done], "Cache hit rate", 0, offsetgroup="hits"),
        bar(names, [m[f"ttft_{n}_s_p99"] for n in done], "p99 TTFT (s)", 1, yaxis="y2", offsetgroup="ttft"),
    ]
    title = f"{r['num_replicas']} replicas, {dict(SHARING)[r['sharing']].lower()}"
    y2 = right_axis("p99 TTFT (s)")
    return chart(data, title, "Router", "Share of prompt tokens from cache", barmode="group", yaxis=PERCENT, yaxis2=y2)


def summary(r: dict[str, Any], view: str) -> str:
    m = r["metrics"]
    if view == "balance":
        even = sorted(ROUTERS, key=lambda n: m[f"imbalance_{n}"])
        counts = "; ".join(
            f"{_named(n)} {' / '.join(str(c) for c in r['routers'][n]['counts'])} "
            f"(busiest {m[f'imbalance_{n}']:.2f}x the mean)"
            for n in ROUTERS
        )
        spread = (
            "Every router spreads them equally."
            if m[f"imbalance_{even[0]}"] == m[f"imbalance_{even[-1]}"]
            else f"The {_named(even[0])} router spreads them most evenly, the {_named(even[-1])} router least."
        )
        first = r["routers"][ROUTERS[0]]
        served, dropped = sum(first["counts"]), first.get("dropped", 0)  # a chart while it streams has none
        longer = f", {dropped:,} of {served + dropped:,} refused as too long to serve, or later turns of those"
        return (
            f"Requests per replica across {r['num_replicas']} replicas ({dict(SHARING)[r['sharing']].lower()}, "
            f"{served:,} requests served{longer if dropped else ''}): {counts}. {spread}"
        )
    if view == "disagg":
        co, dis = r["modes"]["colocated"], r["modes"]["disaggregated"]
        return (
            f"On {r['num_replicas']} replicas, disaggregated ({r['num_prefill']} prefill + "
            f"{r['num_replicas'] - r['num_prefill']} decode) against colocated (least-queue routing): TTFT p50 "
            f"{dis['ttft'][0] * 1e3:,.0f} ms against {co['ttft'][0] * 1e3:,.0f} ms and p99 {dis['ttft'][1] * 1e3:,.0f} ms "
            f"against {co['ttft'][1] * 1e3:,.0f} ms; TPOT p50 {dis['tpot'][0] * 1e3:,.1f} ms against "
            f"{co['tpot'][0] * 1e3:,.1f} ms and p99 {dis['tpot'][1] * 1e3:,.1f} ms against {co['tpot'][1] * 1e3:,.1f} ms. "
            + _disagg_reading(r["num_prefill"], r["num_replicas"] - r["num_prefill"], co, dis)
        )
    best = max(ROUTERS, key=lambda n: m[f"hit_rate_{n}"])
    parts = ", ".join(
        f"{_named(n)} {m[f'hit_rate_{n}']:.0%} hits / {m[f'ttft_{n}_s_p99'] * 1e3:,.0f} ms p99 TTFT / {m[f'imbalance_{n}']:.2f}x"
        for n in ROUTERS
    )
    return (
        f"Across {r['num_replicas']} replicas, cache hits / p99 TTFT / busiest replica's requests over the mean: "
        f"{parts}. The {_named(best)} router finds the most cached prefixes."
    )
