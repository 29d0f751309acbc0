"""The engine explorer's charts and words: one request followed through the engine (request) and
which lever is the largest at each batch size and context length (operating_points)."""

from __future__ import annotations

from typing import Any

from ..plotting import MARKERS, PALETTE, bar, chart, layout, line, markers
from ..plotting import figure as make_figure

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


def _merged_chunks(segs: list[tuple[float, float]]) -> tuple[list[tuple[float, float]], list[str]]:
    """Back-to-back chunk phases as one bar each run, with the number of chunks in its label."""
    runs: list[list[float]] = []  # [start, end, chunks]
    for a, b in segs:
        if runs and runs[-1][1] == a:
            runs[-1][1] = b
            runs[-1][2] += 1
        else:
            runs.append([a, b, 1])
    return [(a, b) for a, b, _ in runs], [f"Prefill, {n:.0f} chunks: {a:.3f} s to {b:.3f} s" for a, b, n in runs]


def _request_figure(r: dict[str, Any]) -> dict[str, Any]:
    f = r["follow"]
    lane = "This request"
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
    data.append(markers(at, [lane] * len(marks), "Events", showlegend=False, text=labels, **hover, marker=tick))
    s = f["series"]
    data.append(line([x[0] for x in s], [x[1] for x in s], "KV blocks in use (share)", 2, shape="hv", yaxis="y2"))
    data.append(line([x[0] for x in s], [x[2] for x in s], "Sequences running", 4, shape="hv", yaxis="y3"))
    title = f"One {r['prompt_tokens']:,}-token request among background traffic ({r['budget']:,}-token step budget)"
    # Three panes: the request's lane on top, KV blocks below, sequences running on its right axis.
    kv = {"domain": [0.0, 0.58], "range": [0, 1.05], "title": {"text": "KV blocks in use"}, "tickformat": ".0%"}
    running = {"overlaying": "y2", "side": "right", "title": {"text": "Sequences running"}, "rangemode": "tozero"}
    axes = {
        "xaxis": {"range": f["window"], "anchor": "y2"},
        "yaxis": {"domain": [0.7, 1.0], "title": {"text": ""}},
        "yaxis2": {**kv, "anchor": "x"},
        "yaxis3": {**running, "tickformat": ",d", "automargin": True},
    }
    return chart(data, title, "Time (s)", "", **axes, barmode="overlay")


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
    return _points_figure(r) if view == "operating_points" else _request_figure(r)


def summary(r: dict[str, Any], view: str) -> str:
    m, pt = r["metrics"], r["point"]
    if view == "operating_points":
        counts = {key: sum(1 for g in r["grid"] if g["region"] == key) for key, _ in REGIONS}
        parts = ", ".join(f"{name.split(':')[0]} {counts[key]}" for key, name in REGIONS if counts[key])
        return (
            f"Of {len(r['grid'])} operating points: {parts}. At batch {pt['batch']} and {pt['context']:,}-token prompts, weights are "
            f"{m['weight_bytes_share']:.0%} of a decode step's bytes, prefill is {m['prefill_share']:.0%} of GPU time, "
            f"{m['compute_share']:.0%} of GPU time is compute-bound, a prefix cache would save {m['prefix_saving_share']:.0%}, and the batch "
            f"needs {m['kv_capacity_use']:.0%} of the KV memory: {dict(REGIONS)[pt['region']]}."
        ) + "".join(" " + n for n in r["notes"])
    f = r["follow"]
    return (
        f"The {r['prompt_tokens']:,}-token request waits {m['queue_s'] * 1e3:,.0f} ms, is prefilled in {m['num_prefill_chunks']:.0f} chunks "
        f"of at most {r['budget']:,} tokens, gets its first token after {m['ttft_s'] * 1e3:,.0f} ms and its last after {m['e2e_s']:,.2f} s. "
        f"It was preempted {_times(m['num_preemptions'])} and allocated {m['blocks_allocated']:.0f} KV blocks in all; background "
        f"requests were preempted {_times(f['background_preemptions'])}."
    )


def _times(n: float) -> str:
    return "once" if n == 1 else f"{n:,.0f} times"
