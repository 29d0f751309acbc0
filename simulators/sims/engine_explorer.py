"""Inside a serving engine: one request followed through it, and where each engine's organising bet pays.

Request view. One replica (simulators/engine, vLLM v1's scheduler) serves seeded background
traffic (Azure 2023 conversation lengths, Poisson arrivals) and one followed request arriving
halfway through it. The engine's event log gives the request's life: it waits; is admitted when a
batch slot and KV blocks for its whole current sequence are free (vLLM's scheduler_reserve_full_isl);
has its prompt computed in chunks sharing each step's token budget (`max_num_batched_tokens`) with
the running decodes; takes a new KV block every `block_size` tokens; may be preempted (blocks freed,
progress recomputed later) when blocks run out; and finishes. Alone on the replica its prompt takes
ceil(prompt / budget) chunks; among decodes each step leaves it budget - decodes tokens.

Operating points view. A grid of batch size (1 to 1,024) by prompt length (256 to 131,072 tokens)
for requests with `output_tokens` answers. Every figure comes from costmodel.step_time, through
the engine's exact linear form of it (engine/steptime.py). Per point, with decode steps priced
at the mean context prompt + output / 2 (step time is affine in context):
- weight share = weight bytes / (weight + KV bytes) of one decode step;
- prefill share = P / (P + D), P = one prefill pass of the prompt, D = output x decode step / batch
  (GPU time per request);
- prefix saving = (P - P') / (P + D), P' = the same prefill with the first `prefix_share` of the
  prompt already cached (SGLang's and vLLM's prefix caches skip exactly that work);
- compute share = the part of P + D spent in passes whose compute time exceeds their memory time.
A point is given to one organising bet (course seed 000), first rule that holds:
1. it does not fit: batch x KV tokens of a finished sequence > the KV memory (costmodel.memory_fit);
2. SGLang (structured workloads): prefix saving >= 20%, as much as the "last 20-30%" that the
   seed credits to build-time kernel choices;
3. TensorRT-LLM (build-time kernel, fusion and layout choices): compute share >= 50%, most GPU
   time is at the compute roof, where kernel quality sets the speed;
4. llama.cpp (the weight-dominated regime): weight share >= 80%; quantising the weights is
   the lever;
5. vLLM (memory management): KV bytes >= weight bytes; KV memory sets how large a batch fits;
6. otherwise mixed: batching amortises the weights and no single bet dominates.
The thresholds are the course's teaching choices, not measurements; no bet's speed claim is modelled
(no kernel is timed): the chart shows where each bet's lever is the largest term of the cost model.

References: 1) course seed 000, "Systems and the frontier" (the four organising bets);
2) vLLM v1 vllm/v1/core/sched/scheduler.py (waiting, running, token budget, preempt);
3) Kwon et al. 2023 (arXiv 2309.06180); Zheng et al. 2024, SGLang (arXiv 2312.07104);
4) Agrawal et al. 2024, Sarathi-Serve (arXiv 2403.02310), chunked prefill.
"""

from dataclasses import dataclass
from functools import partial
from typing import Any

from .. import parallel
from ..core import costmodel as cm
from ..core.catalog import running_example
from ..core.layout import pooled_kv_tokens
from ..engine import EngineSpec, SchedulerConfig, serve, workload
from ..engine.metrics import downsample
from ..engine.steptime import StepCost, attention_keys
from ..params import ModelGpuEngine, ParamError, arrival_rate_param, batch_slots_param, dtype_choices, param
from ..plotting import MARKERS, PALETTE, bar, chart, layout, line, markers, right_axis
from ..plotting import figure as make_figure
from ..results_cache import Keep

TITLE = "Inside the engine: one request, and where each engine's bet pays"
DESCRIPTION = "Follow one request through admission, chunked prefill, KV blocks and preemption; then see which lever (KV memory, prefix reuse, compute, weight bytes) is the largest at which batch size and context length."
METRICS = {
    "queue_s": ("Followed request: waiting before admission", "s"),
    "num_prefill_chunks": ("Followed request: prefill chunks", "chunks"),
    "ttft_s": ("Followed request: time to first token", "s"),
    "e2e_s": ("Followed request: end to end", "s"),
    "num_preemptions": ("Followed request: preemptions", "preemptions"),
    "blocks_allocated": ("Followed request: KV blocks allocated", "blocks"),
    "weight_bytes_share": ("Chosen point: weight share of a decode step's bytes", ""),
    "prefill_share": ("Chosen point: prefill share of GPU time", ""),
    "prefix_saving_share": ("Chosen point: GPU time a prefix cache saves", ""),
    "compute_share": ("Chosen point: GPU time at the compute roof", ""),
    "kv_capacity_use": ("Chosen point: share of KV memory the batch needs", ""),
}
FOLLOWED = ("ttft_s", "e2e_s", "queue_s", "num_prefill_chunks", "num_preemptions", "blocks_allocated")  # metrics
PREFIX_PAYS, COMPUTE_BINDS, WEIGHT_DOMINATED = 0.2, 0.5, 0.8
VIEWS = [("request", "Follow one request"), ("operating_points", "Operating points: which bet pays where")]
# The map's table holds the marked point's figures, not the followed request's (api.run).
TABLES = {
    "operating_points": ("weight_bytes_share", "prefill_share", "prefix_saving_share", "compute_share", "kv_capacity_")
}
EX = running_example()
BATCHES = tuple(2**i for i in range(11))  # 1 ... 1,024
CONTEXTS = tuple(256 * 2**i for i in range(10))  # 256 ... 131,072
# (key, legend) in the order the rules are tried (see the module docstring). The legends name the
# mechanism, not the engine whose bet it is (the key keeps the engine, for the lesson's mapping).
REGIONS = (
    ("none", "Does not fit in KV memory"),
    ("sglang", "Prefix reuse: shared prefixes save >= 20% of GPU time"),
    ("tensorrt", "Compute-bound: most GPU time at the compute roof"),
    ("llamacpp", "Weight-bound: weights >= 80% of decode bytes"),
    ("vllm", "KV-bound: KV bytes >= weight bytes"),
    ("mixed", "Mixed: weights 50-80%, batching amortises them"),
)
# Prefill chunks drawn one bar each up to this many; beyond (a tiny budget cuts a prompt into hundreds),
# back-to-back chunks are one bar, labelled with their count: a hundred one-pixel bars cost tens of ms a redraw.
MAX_CHUNK_BARS = 32
SERIES_POINTS = 600  # points per line of the request view's lower chart, at most
# The followed request's state after each event of its log (any other: done).
NEXT_STATE = dict(admit="waiting", chunk="chunk", first_token="decode", recomputed="decode", preempt="preempted")


@dataclass(frozen=True)
class Params(ModelGpuEngine):
    # The parallel layout of a replica, as vLLM's flags (simulators/parallel.py).
    tensor_parallel_size: int = parallel.tensor_parallel_param()
    pipeline_parallel_size: int = parallel.pipeline_parallel_param()
    data_parallel_size: int = parallel.data_parallel_param()
    enable_expert_parallel: bool = parallel.expert_parallel_param()
    weight_dtype: str = param(EX["weight_dtype"], label="Weight format", choices=dtype_choices())
    kv_dtype: str = param(EX["kv_dtype"], label="KV cache format", choices=dtype_choices("bf16", "fp8", "int8", "int4"))
    # The followed request (request view) and the point marked on the grid (operating points).
    prompt_tokens: int = param(3000, label="Prompt", unit="tokens", min=1, max=131072, step=1, log=True)
    output_tokens: int = param(EX["output_tokens"], label="Output", unit="tokens", min=1, max=32768, step=1, log=True)
    # Step token budget shared by decodes and prefill chunks (vLLM --max-num-batched-tokens).
    max_num_batched_tokens: int = param(
        512, label="Token budget per step", unit="tokens", min=16, max=16384, step=16, log=True
    )
    block_size: int = param(16, label="Block size", unit="tokens", min=1, max=256, step=1, log=True)
    # KV memory of the replica; small values make preemption likely.
    kv_budget_GiB: float = param(1.5, label="KV memory", unit="GiB", min=0.25, max=400.0, step=0.25, log=True)
    num_background: int = param(60, label="Background requests", min=0, max=500, step=10)
    rate_per_s: float = arrival_rate_param(12.0, max=200.0, label="Background arrival rate")
    max_num_seqs: int = batch_slots_param(256, unit="sequences")
    # Operating points: the batch marked on the grid, and the share of every prompt that is shared.
    batch_size: int = param(64, label="Batch (marked point)", unit="sequences", min=1, max=1024, step=1, log=True)
    prefix_share: float = param(0.4, label="Shared prefix share of the prompt", min=0.0, max=1.0, step=0.05)

    def check(self) -> None:
        m, gpu = self.resolved()
        parallel.check_serving(m, gpu, parallel.layout_of(self), **_formats(self))
        need = (self.prompt_tokens + self.output_tokens) * cm.kv_bytes_per_token(m, self.kv_dtype)
        if self.kv_budget_GiB * cm.GiB < need:
            raise ParamError(
                "kv_budget_GiB",
                f"must hold the followed request's {self.prompt_tokens + self.output_tokens:,} tokens: at least {need / cm.GiB:.2f} GiB",
            )


def operating_point(
    cost: StepCost, capacity: int, batch: int, prompt: int, output: int, prefix_share: float
) -> dict[str, Any]:
    """The cost-model shares of one (batch, prompt) point and the bet they point to (see above)."""
    ctx = prompt + output // 2
    dc, dm, du = cost.parts(batch, batch, batch * attention_keys(1, ctx), batch * (cost.held(ctx) + 1))
    pc, pm, pu = cost.parts(prompt, 1, attention_keys(prompt, 0), prompt)
    rest = prompt - min(int(prompt * prefix_share), prompt - 1)  # the last prompt token is always computed
    p_rest = cost.time_s(rest, 1, attention_keys(rest, prompt - rest), cost.held(prompt - rest) + rest)
    P, D = max(pc, pm) + pu, output * (max(dc, dm) + du) / batch
    out: dict[str, Any] = {
        "weight_share": cost.weights_s(batch) / dm,
        "prefill_share": P / (P + D),
        "prefix_saving": (P - p_rest) / (P + D),
        "compute_share": ((P if pc > pm else 0.0) + (D if dc > dm else 0.0)) / (P + D),
        "kv_use": batch * cost.held(prompt + output) / max(capacity, 1),
    }
    rules = (
        ("none", out["kv_use"] > 1),
        ("sglang", out["prefix_saving"] >= PREFIX_PAYS),
        ("tensorrt", out["compute_share"] >= COMPUTE_BINDS),
        ("llamacpp", out["weight_share"] >= WEIGHT_DOMINATED),
        ("vllm", out["weight_share"] <= 0.5),
    )
    out["region"] = next((region for region, holds in rules if holds), "mixed")
    return out


def _formats(p: Params) -> dict[str, Any]:
    return {"weight_dtype": p.weight_dtype, "kv_dtype": p.kv_dtype}


def _follow(p: Params, m: Any, gpu: Any, seed: int) -> dict[str, Any]:
    n = p.num_background
    reqs = workload.poisson_trace(seed, n, p.rate_per_s, workload.azure_lengths())
    arrival_s = reqs[n // 2].arrival_s if n else 0.0  # the background's middle arrival
    me = workload.Request(n, arrival_s, p.prompt_tokens, p.output_tokens, ((1 << 40, p.prompt_tokens),))
    limits = {k: getattr(p, k) for k in ("max_num_seqs", "max_num_batched_tokens")}
    sched = SchedulerConfig(**limits, max_model_len=max(m.max_context_tokens, p.prompt_tokens + p.output_tokens))
    blocks = int(p.kv_budget_GiB * cm.GiB // (cm.kv_bytes_per_token(m, p.kv_dtype) * p.block_size))
    kw = {**_formats(p), **parallel.layout_of(p).cost_kw(), "block_size": p.block_size, "num_blocks": blocks}
    served = serve([*reqs, me], EngineSpec(m, gpu, sched, engine=p.engine, **kw), keep_log=True)
    rec = next(r for r in served.records if r.id == me.id)
    events = [(t, what, extra) for t, _, what, rid, extra in served.log if rid == me.id]
    # Phases from consecutive events: a chunk runs until the request's next event.
    states = ["waiting"] + [NEXT_STATE.get(what, "done") for _, what, _ in events[1:]]
    phases = [(state, a[0], b[0]) for state, a, b in zip(states, events, events[1:], strict=False) if b[0] > a[0]]
    t0, t1 = rec.arrival_s, rec.arrival_s + rec.e2e_s
    pad = 0.05 * (t1 - t0)
    rep = served.replicas[0]
    # One point per step in the window, thinned to what a chart's width shows (a one-token-a-step
    # budget runs thousands of steps; 2,000 points per line cost the page more than the run).
    steps = [(t, used / blocks, running) for t, _, _, used, _, running in rep.series if t0 - pad <= t <= t1 + pad]
    return {
        "events": events,
        "phases": phases,
        "series": downsample(steps, SERIES_POINTS),
        "num_blocks": blocks,
        "window": [t0 - pad, t1 + pad],
        **{k: getattr(rec, k) for k in ("ttft_s", "e2e_s", "queue_s", "num_preemptions")},
        "num_prefill_chunks": sum(1 for _, w, _ in events if w == "chunk"),
        "blocks_allocated": sum(x for _, w, x in events if w in ("preempt", "finish")),
        "background_preemptions": rep.num_preemptions - rec.num_preemptions,
    }


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> dict[str, Any]:
    m, gpu = p.resolved()
    lay = parallel.layout_of(p)
    cost = EngineSpec(m, gpu, **_formats(p), engine=p.engine, **lay.cost_kw()).step_cost()
    capacity = pooled_kv_tokens(m, gpu, lay, **_formats(p))
    at = partial(operating_point, cost, capacity, output=p.output_tokens, prefix_share=p.prefix_share)
    point = at(p.batch_size, p.prompt_tokens)
    follow = _follow(p, m, gpu, seed)
    return {
        **p.stated("output_tokens", "prefix_share", "prompt_tokens"),
        "grid": [{"batch": b, "context": c, **at(b, c)} for c in CONTEXTS for b in BATCHES],
        "point": {"batch": p.batch_size, "context": p.prompt_tokens, **point},
        "capacity_tokens": capacity,
        "budget": p.max_num_batched_tokens,
        "follow": follow,
        "notes": m.beyond_context(max(CONTEXTS)),
        "metrics": {
            **{k: float(follow[k]) for k in FOLLOWED},
            "weight_bytes_share": point["weight_share"],
            "prefill_share": point["prefill_share"],
            "prefix_saving_share": point["prefix_saving"],
            "compute_share": point["compute_share"],
            "kv_capacity_use": point["kv_use"],
        },
    }


def _merged_chunks(segs: list[tuple[float, float]]) -> tuple[list[tuple[float, float]], list[str]]:
    """Back-to-back chunk phases as one bar each run, with the number of chunks in its label."""
    # A run starts at each chunk that does not begin where the one before it ends.
    starts = [i for i in range(len(segs)) if i == 0 or segs[i - 1][1] != segs[i][0]]
    runs = [(segs[i][0], segs[j - 1][1], j - i) for i, j in zip(starts, [*starts[1:], len(segs)], strict=False)]
    return [(a, b) for a, b, _ in runs], [f"Prefill, {n:.0f} chunks: {a:.3f} s to {b:.3f} s" for a, b, n in runs]


def _scatter(x: list[Any], y: list[Any], name: str, **extra: Any) -> dict[str, Any]:
    return {"type": "scatter", "mode": "markers", "x": x, "y": y, "name": name, **extra}


def _points_figure(r: dict[str, Any]) -> dict[str, Any]:
    data = []
    for i, (key, name) in enumerate(REGIONS):
        pts = [g for g in r["grid"] if g["region"] == key]
        if not pts:
            continue
        color = "#bbbbbb" if key == "none" else PALETTE[(i - 1) % len(PALETTE)]
        marker = {"color": color, "symbol": "x-thin-open" if key == "none" else MARKERS[i % len(MARKERS)], "size": 15}
        text = [
            f"weights {g['weight_share']:.0%} of decode bytes, prefill {g['prefill_share']:.0%} of GPU time, compute-bound {g['compute_share']:.0%}, prefix saves {g['prefix_saving']:.0%}, KV {g['kv_use']:.0%} of memory"
            for g in pts
        ]
        hover = "batch %{x}, prompt %{y:,} tokens<br>%{text}<extra></extra>"
        xs, ys = [g["batch"] for g in pts], [g["context"] for g in pts]
        data.append(_scatter(xs, ys, name, marker=marker, text=text, hovertemplate=hover))
    pt = r["point"]
    ring = {"color": "#000000", "size": 28, "line": {"width": 2.5}, "symbol": "circle-open"}
    name = f"Marked: batch {pt['batch']}, {pt['context']:,} tokens"
    data.append(_scatter([pt["batch"]], [pt["context"]], name, marker=ring, hoverinfo="skip"))
    x_axis = {"type": "log", "tickvals": list(BATCHES), "ticktext": [f"{b:,}" for b in BATCHES]}
    y_ticks = [f"{c // 1024}k" if c >= 1024 else str(c) for c in CONTEXTS]
    y_axis = {"type": "log", "tickvals": list(CONTEXTS), "ticktext": y_ticks}
    x_title, y_title = "Batch size (sequences decoding together)", "Prompt length (tokens)"
    lay = layout("Which organising bet pays where", x_title, y_title, xaxis=x_axis, yaxis=y_axis, margin={"t": 70})
    # A subtitle, not <sub> markup: plotly writes that as a style attribute, which the CSP refuses.
    subtitle = f"{r['model']} on {r['gpu']}, {r['output_tokens']:,}-token answers, {r['prefix_share']:.0%} of each prompt shared"
    lay["title"] = {**lay["title"], "subtitle": {"text": subtitle}}
    return make_figure(data, lay)


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    if view == "operating_points":
        return _points_figure(r)
    f, lane = r["follow"], "This request"
    names = {"waiting": "Waiting", "chunk": "Prefill chunk", "decode": "Decoding", "preempted": "Preempted, waiting"}
    data: list[dict[str, Any]] = []
    for i, (key, name) in enumerate(names.items()):
        segs = [(a, b) for k, a, b in f["phases"] if k == key]
        text = [f"{name}: {a:.3f} s to {b:.3f} s" for a, b in segs]
        if key == "chunk" and len(segs) > MAX_CHUNK_BARS:
            segs, text = _merged_chunks(segs)
        if segs:
            edge = {"color": "#ffffff", "width": 0.5}
            marker = {"color": PALETTE[(3, 1, 0, 6)[i]], "pattern": {"shape": ("", "/", "x", ".")[i]}, "line": edge}
            hover: dict[str, Any] = {"text": text, "textposition": "none", "hovertemplate": "%{text}<extra></extra>"}
            dx, base, lanes = [b - a for a, b in segs], [a for a, _ in segs], [lane] * len(segs)
            data.append(bar(dx, lanes, name, orientation="h", base=base, yaxis="y", marker=marker, **hover))
    marks = [(t, w.replace("_", " ")) for t, w, _ in f["events"] if w != "chunk"]
    shown = ("first token", "preempt", "recomputed", "finish")
    labels = [w if w in shown and all(w != v for _, v in marks[:i]) else "" for i, (_, w) in enumerate(marks)]
    tick = {"color": "#000000", "symbol": "line-ns-open", "size": 18}
    hover = {"hovertext": [f"{w} at {t:.3f} s" for t, w in marks], "hoverinfo": "text"}
    at = [t for t, _ in marks]
    data.append(markers(at, [lane] * len(marks), "Events", showlegend=False, mode="markers", **hover, marker=tick))
    # The labels on a row of their own above the lane, clear of its bars (learner review: "first token"
    # on them), each reaching toward the middle so that none is cut at an edge.
    mid = sum(f["window"]) / 2
    for side, past_mid in (("left", True), ("right", False)):
        named = [(t, w) for t, w in zip(at, labels, strict=True) if w and (t > mid) == past_mid]
        data.append(markers([t for t, _ in named], [" "] * len(named), "Event names", showlegend=False, mode="text",
                            text=[w for _, w in named], textposition=f"middle {side}", hoverinfo="skip"))  # fmt: skip
    s = f["series"]
    data.append(line([x[0] for x in s], [x[1] for x in s], "KV blocks in use (share)", 2, shape="hv", yaxis="y2"))
    data.append(line([x[0] for x in s], [x[2] for x in s], "Sequences running", 4, shape="hv", yaxis="y3"))
    title = f"One {r['prompt_tokens']:,}-token request among background traffic ({r['budget']:,}-token step budget)"
    # Three panes: the request's lane on top, KV blocks below, sequences running on its right axis.
    kv = {"domain": [0.0, 0.58], "range": [0, 1.05], "title": {"text": "KV blocks in use"}, "tickformat": ".0%"}
    running = right_axis("Sequences running", overlaying="y2", rangemode="tozero", tickformat=",d")
    axes = {
        "xaxis": {"range": f["window"], "anchor": "y2"},
        "yaxis": {"domain": [0.7, 1.0], "title": {"text": ""}, "range": [-0.5, 1.5]},  # the lane, its labels above
        "yaxis2": {**kv, "anchor": "x"},
        "yaxis3": running,
    }
    return chart(data, title, "Time (s)", "", **axes, barmode="overlay")


def summary(r: dict[str, Any], view: str) -> str:
    m, pt = r["metrics"], r["point"]
    if view == "operating_points":
        counts = {key: sum(1 for g in r["grid"] if g["region"] == key) for key, _ in REGIONS}
        parts = ", ".join(f"{name.split(':')[0]} {counts[key]}" for key, name in REGIONS if counts[key])
        name = dict(REGIONS)[pt["region"]]
        region = name.replace(": ", " (", 1) + ")" if ": " in name else name
        # Learner review: the KV memory and batch slot controls size the followed request's server, not this grid.
        return (
            f"Of {len(r['grid'])} operating points: {parts}. At batch {pt['batch']} and {pt['context']:,}-token prompts, weights are "
            f"{m['weight_bytes_share']:.0%} of a decode step's bytes, prefill takes {m['prefill_share']:.0%} of GPU time, steps "
            f"at the compute roof {m['compute_share']:.0%}, a prefix cache would save {m['prefix_saving_share']:.0%}, and the batch "
            f"needs {m['kv_capacity_use']:.0%} of the KV cache vLLM allocates on one {r['gpu']} ({r['capacity_tokens']:,} "
            f"tokens; the KV memory and batch slots set only the followed request's server). Its region: {region}."
        ) + "".join(" " + n for n in r["notes"])
    return (
        f"The {r['prompt_tokens']:,}-token request waits {m['queue_s'] * 1e3:,.0f} ms, is prefilled in {m['num_prefill_chunks']:.0f} chunks "
        f"of at most {r['budget']:,} tokens, gets its first token after {m['ttft_s'] * 1e3:,.0f} ms and its last after {m['e2e_s']:,.2f} s. "
        f"It was preempted {_times(m['num_preemptions'])} and allocated {m['blocks_allocated']:.0f} KV blocks in all; background "
        f"requests were preempted {_times(r['follow']['background_preemptions'])}."
    )


def _times(n: float) -> str:
    return "once" if n == 1 else f"{n:,.0f} times"
