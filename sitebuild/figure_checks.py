"""Build-time checks that a number in prose can be read as its sentence states it.

Each `{{ … }}` is evaluated by sitebuild/expressions.py; the build then hands every figure, with the
paragraph it sits in, to `check`, which returns the problems found. Three classes of error from the
December 2026 review are caught (docs/contributing.md, "Figures the build refuses"):

1. **Short runs.** A rate, percentile, hit rate or goodput read off an engine run shorter than
   `MIN_RUN` (requests, and seconds of arrivals) includes the ramp and drain, or rests on one or
   two requests, unless the paragraph names the run's length ("a 200-request run").
2. **Operating points that do not fit.** A figure computed at a batch and context whose KV cache
   does not fit next to the weights (`gpu_memory.fits`), or a batch-valued figure beyond what fits,
   unless the paragraph says it is a bound ("does not fit", "hypothetical", "extrapolation", …).
3. **Knife-edge capacities.** A small sequence count (< `KNIFE_MAX_COUNT`) whose unrounded ratio is
   within `KNIFE_MARGIN` of the count below (4.03 shown as "4"), unless the paragraph states the
   margin ("to spare", "margin", "at most", …).

4. **A count printed as a percentage.** A `%` format multiplies by 100: a value above
   `MAX_SHARE` (a byte count, a time, a rate) prints as "16,384,000%". A percentage is for a share.

And one Markdown trap: a line starting with a number and ". " is an ordered-list marker (the number lost).
"""

import math
import re
from typing import Any

from sitebuild.expressions import Figure
from sitebuild.sims import SimulatorRunError, Simulators

# Engine simulators whose rates and percentiles depend on run length: the least number of requests
# and of seconds of arrivals (num_requests / rate_per_s) a quoted figure must come from. From the
# December 2026 review's reproductions: the batching and paged-KV figures settle by 1,000-2,000
# requests (their widgets' maximum, 2,000, must still satisfy the rule at 50 req/s, hence 30 s);
# load_test at 30 req/s moved from 24.3 to 28.2 req/s between 1,000 and 2,000 requests (lifetimes
# of 7-25 s need a minute of arrivals); the cluster's p99s moved until about 400 requests.
MAX_SHARE = 10.0  # the largest value a percentage format may print (1,000%): gains above are "N x"

MIN_RUN: dict[str, tuple[int, float]] = {
    "batching": (1000, 30.0),
    "paged_kv": (1000, 30.0),
    "load_test": (2000, 60.0),
    "cluster": (400, 0.0),
}
RUN_METRIC = re.compile(r"per_s|_p\d\d|goodput|throughput|attainment|within|hit_rate|imbalance")
# Computed analytically, not read off the run.
NOT_RUN = {("load_test", "max_throughput_per_s")}
RUN_STATED = r"\b{n}(?:-| )(?:request|conversation)"

BOUND_WORDS = (
    "not fit|n't fit|more than fits|more than one|cannot run|could not run|cannot hold|beyond memory|"
    "beyond what fits|out of memory|hypothetical|extrapolat|upper bound|a bound|exceeds"
).split("|")
KNIFE_MAX_COUNT = 25
KNIFE_MARGIN = 0.02
KNIFE_WORDS = ("to spare", "margin", "knife", "only just", "barely", "at most", "upper bound", "optimistic")

# gpu_memory metrics that describe the batch's fit itself, or do not depend on the batch.
FIT_EXEMPT = {
    "gpu_memory": set(
        "weights_GB activations_GB reserve_GB kv_budget_GB kv_demand_GB kv_token_capacity max_batch_at_context fits "
        "min_gpus_to_fit ridge_flop_per_byte compute_roof_known prefill_intensity prefill_tflops "
        "decode_compute_bound_batch decode_ever_compute_bound".split()
    ),
    "compression": set(
        "artifact_GB baseline_GB artifact_ratio bits_per_weight kv_token_capacity kv_token_capacity_baseline".split()
    ),
}
# Pages whose figures are being reworked by an open issue: their problems are printed as warnings,
# not failures, until that issue lands (then its entry is removed). Keep this list short.
PENDING: dict[str, str] = {}
# Metrics whose value is a batch size: that batch must fit at the call's context.
BATCH_METRICS = {
    ("quantization", "speedup_stops_paying_batch"),
    ("quantization", "compute_bound_batch"),
    ("gpu_memory", "decode_compute_bound_batch"),
}
LIST_MARKER = re.compile(r"^\s*\d[\d,]*[.)]\s")


def check(paragraph: str, source_line: str, line: str, figures: list[Figure], sims: Simulators) -> list[str]:
    """The problems of the figures on one line (`line` expanded, `source_line` as written)."""
    problems: list[str] = []
    if source_line.lstrip().startswith("{{") and LIST_MARKER.match(line):
        problems.append(
            f"the line starts with {line.split()[0]!r} and a space, which Markdown reads as a list marker "
            "(the number vanishes): move the {{ … }} off the start of the line"
        )
    text = " ".join(paragraph.lower().split())
    for fig in figures:
        if fig.spec.endswith("%") and isinstance(fig.value, int | float) and abs(fig.value) > MAX_SHARE:
            problems.append(
                f"{{{{ {fig.source} }}}} is {fig.value:,.6g}, printed as {fig.text}: a percentage format "
                "multiplies a share by 100 (0.25 -> 25%); this value is not a share (a count, a size or a "
                "time?): use a number format and its unit"
            )
        for name, metric, params in fig.calls:
            full = {**{p["name"]: p["default"] for p in sims.schemas[name]["params"]}, **params}
            problems += _short_run(text, name, metric, full)
            problems += _not_fitting(text, sims, name, metric, full, fig)
            problems += _knife_edge(text, sims, name, metric, full, fig)
    return problems


def _short_run(text: str, name: str, metric: str, p: dict[str, Any]) -> list[str]:
    if name not in MIN_RUN or not RUN_METRIC.search(metric) or (name, metric) in NOT_RUN:
        return []
    least, seconds = MIN_RUN[name]
    n = int(p["num_requests"])
    span = n / float(p["rate_per_s"]) if "rate_per_s" in p else math.inf
    # long enough, or the paragraph says how short the run is
    if n >= least and span >= seconds or re.search(RUN_STATED.format(n=f"(?:{n}|{n:,})"), text):
        return []
    return [
        f"{name}.{metric} is read off a run of {n:,} requests ({span:.0f} s of arrivals): rates and "
        f"percentiles need at least {least:,} requests and {seconds:.0f} s (lesson 11, 'Warm-up "
        f"discarded'); set num_requests, or name the run's length in the sentence ('a {n}-request run')"
    ]


def fit_question(name: str, p: dict[str, Any]) -> dict[str, Any] | None:
    """The gpu_memory parameters that say whether this call's operating point fits, or None."""
    # The precisions and GPUs asked for (sparsity's weight_dtype: the dense baseline it is compared with).
    asked = {k: p[k] for k in ("model", "gpu", "weight_dtype", "kv_dtype", "num_gpus") if k in p}
    if name == "slo":  # slo's own capacity is vLLM's accounting (deployment), so is this check
        asked["accounting"] = "vllm"
    if name in ("generation", "slo"):
        context = int(p["prompt_tokens"]) + int(p["output_tokens"])
        return {**asked, "batch_size": p["batch_size"], "context_tokens": context}
    if name in ("quantization", "sparsity", "speculative", "gpu_memory"):
        return {**asked, "batch_size": p["batch_size"], "context_tokens": p["context_tokens"]}
    if name == "compression":  # compared with bf16 weights: the baseline must run too
        num_gpus = int(p.get("tensor_parallel_size", 1)) * int(p.get("pipeline_parallel_size", 1))
        return {**asked, "num_gpus": num_gpus, "batch_size": p["batch_size"], "context_tokens": p["prompt_tokens"]}
    return None


def _fits(sims: Simulators, question: dict[str, Any]) -> dict[str, Any] | None:
    try:
        if question.get("accounting") == "vllm":
            asked = {k: question[k] for k in ("model", "gpu") if k in question}
            held = sims.run("deployment", {**asked, "max_model_len": question["context_tokens"]})["metrics"]
            count = int(held["max_concurrency"])
            return {"fits": question["batch_size"] <= count, "max_batch_at_context": count}
        return sims.run("gpu_memory", question)["metrics"]
    except SimulatorRunError:
        return None  # e.g. a batch beyond gpu_memory's range: judged by the caller's own checks


def _not_fitting(text: str, sims: Simulators, name: str, metric: str, p: dict[str, Any], fig: Figure) -> list[str]:
    question = fit_question(name, p)
    if question is None or metric in FIT_EXEMPT.get(name, set()) and (name, metric) not in BATCH_METRICS:
        return []
    if (name, metric) in BATCH_METRICS:
        batch = int(fig.value) if len(fig.calls) == 1 else 0
        if batch <= 0:
            return []
        question = {**question, "batch_size": min(batch, 4096)}
    answer = _fits(sims, question)
    if answer is None or answer["fits"] or any(word in text for word in BOUND_WORDS):
        return []
    return [
        f"{name}.{metric} is computed at batch {question['batch_size']:,} × {question['context_tokens']:,} tokens, "
        f"which does not fit ({answer['max_batch_at_context']:,} fit): say so in the sentence "
        "('more than fits', 'a bound', 'hypothetical'), or use a batch that fits"
    ]


# A whole count of sequences and how to read its unrounded ratio: (simulator, ratio metric, None),
# or (simulator, tokens metric, context parameter) for tokens over context.
CAPACITY: dict[tuple[str, str], tuple[str, str, str | None]] = {
    ("kv_cache", "max_concurrent_sequences"): ("kv_cache", "max_concurrency", None),
    ("kv_cache", "max_concurrent_sequences_by_bytes"): ("kv_cache", "kv_token_capacity_by_bytes", "context_tokens"),
    ("gpu_memory", "max_batch_at_context"): ("gpu_memory", "max_concurrency", None),
}


def _knife_edge(text: str, sims: Simulators, name: str, metric: str, p: dict[str, Any], fig: Figure) -> list[str]:
    if (name, metric) not in CAPACITY or len(fig.calls) != 1 or fig.value != int(fig.value):
        return []
    sim, ratio_metric, context_key = CAPACITY[(name, metric)]
    ratio = sims.run(sim, p)["metrics"][ratio_metric] / (int(p[context_key]) if context_key else 1)
    count = math.floor(ratio)
    if not 0 < count < KNIFE_MAX_COUNT or (ratio - count) / ratio >= KNIFE_MARGIN:
        return []
    if any(word in text for word in KNIFE_WORDS):
        return []
    return [
        f"{name}.{metric} = {count} is a knife edge: the memory holds {ratio:.2f} sequences, so "
        f"{(ratio - count) / ratio:.1%} less memory makes it {count - 1}; state the margin in the sentence "
        "('with … to spare', 'at most', 'upper bound')"
    ]
