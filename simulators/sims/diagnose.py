"""Why is my model slow? One deployment as it is run, its evidence, and the levers ranked.

The reader pastes the server's command line (`vllm serve …`, SGLang's or llama.cpp's for the flags
they share: serve_command.parse_command), names the GPU, and brings any evidence: vLLM's start-up
log (serve_command.parse_log), a GuideLLM report (guidellm_read) or a few typed figures.

The model (one speed model: costmodel at the engine's profile, vllm_memory for the memory):
- KV cache: vLLM's start-up accounting for these flags (vllm_memory.account), against the log.
- Operating point: b requests in flight (the report's mean concurrency, the typed figure, or
  Little's law b = rate x predicted end-to-end), each at the mean context (prompt + output / 2).
- TTFT, unqueued: one prefill of the prompt (costmodel.prefill_time).
- ITL: a decode step of the batch, stretched by the prefills that share the GPU: at a request
  rate r each second carries r prefills, so decodes get 1 - r x prefill of it,
  ITL = step / (1 - r x prefill) (capped at 95% prefill).
- A gap between observed and predicted beyond +-35% (the validation page's yardstick) is named,
  with where to look.
- Levers: each one command-line change, re-priced at the same operating point, ranked by the
  relative change of the SLO figure that binds (the larger observed-or-predicted / target); a lever
  that moves another figure comes after, drawn as a series of its own.

References: 1) vLLM's start-up log lines (vllm/v1/core/kv_cache_utils.py); 2) Little's law;
3) the course's lessons named by each lever.
"""

import json
import shlex
from dataclasses import dataclass
from typing import Any

from ..benchmark import diagnosis as dx
from ..benchmark import serve_command as sc
from ..benchmark.guidellm_read import ReportError, read
from ..core.catalog import CatalogError, model_for_repo, resolve_gpu, resolve_model, running_example
from ..core.costmodel import GiB
from ..params import ParamError, gpu_param, param
from ..plotting import bar, chart
from ..results_cache import Keep

TITLE = "Why is my model slow?"
DESCRIPTION = "Paste your server's command line and any evidence (vLLM's log, a GuideLLM report, figures): predicted against observed, where the time goes, and the levers ranked."
METRICS = {
    "predicted_ttft_s": ("TTFT, unqueued (predicted)", "s"),
    "observed_ttft_s": ("TTFT p50, observed", "s"),
    "predicted_itl_s": ("ITL at the operating point (predicted)", "s"),
    "observed_itl_s": ("ITL p50, observed", "s"),
    "predicted_kv_tokens": ("GPU KV cache size, predicted", "tokens"),
    "logged_kv_tokens": ("GPU KV cache size, logged", "tokens"),
    "kv_capacity_use": ("Share of the KV cache the batch holds", ""),
    "best_lever_change": ("Best lever: change of the binding figure", ""),
    "batch": ("Requests in flight (operating point)", "requests"),
    "kv_tokens_error": ("KV cache size: predicted / logged - 1", ""),
}
GIVEN = ("observed_ttft_s", "observed_itl_s", "logged_kv_tokens", "kv_tokens_error")  # only with the evidence
VIEWS = [("levers", "Levers, ranked"), ("time", "Where the time goes"), ("evidence", "Predicted against observed")]
EX = running_example()
DEFAULT_COMMAND = "vllm serve meta-llama/Meta-Llama-3-8B-Instruct --max-model-len 8192"
_QUANT = {"fp8": "fp8", "awq": "int4", "awq_marlin": "int4", "gptq": "int4", "gptq_marlin": "int4"}


def _measured(what: str, unit: str, top: float, low: float, help: str = "0: not given.") -> Any:
    """A figure measured on the reader's own server, if they have it: 0 (the default) means not given.
    Its slider is logarithmic from `low` up, with a notch for 0 (the ranges span six to seven decades)."""
    return param(0.0, label=f"Observed {what}", unit=unit, min=0.0, max=top, step=low, log=True, help=help)


@dataclass(frozen=True)
class Params:
    command: str = param(
        DEFAULT_COMMAND,
        label="Server command line",
        lines=3,
        help="vllm serve MODEL [flags]; SGLang's launch_server or llama-server for the flags they share.",
    )
    gpu: Any = gpu_param()
    config: str = param("", label="config.json, if the model is not in the catalogue", file=".json", lines=3)
    log: str = param("", label="vLLM start-up log", file=".log,.txt", lines=4)
    report: str = param("", label="GuideLLM report", file=".json,.yaml,.yml", lines=3)
    benchmark: int = param(
        0, label="Report benchmark", min=0, max=1000, step=1, log=True, help="1 = the report's first; 0: its busiest."
    )
    prompt_tokens: int = param(
        EX["prompt_tokens"],
        label="Prompt",
        unit="tokens",
        min=1,
        max=1_048_576,
        log=True,
        help="A report's mean lengths replace these.",
    )
    output_tokens: int = param(EX["output_tokens"], label="Output", unit="tokens", min=2, max=131_072, log=True)
    rate_per_s: float = _measured("request rate", "req/s", 10_000.0, 0.01)
    concurrency: float = _measured(
        "requests in flight", "requests", 65_536.0, 1, "0: from the report, or Little's law."
    )
    ttft_p50_ms: float = _measured("TTFT p50", "ms", 1e7, 1)
    itl_p50_ms: float = _measured("ITL p50", "ms", 1e6, 0.1)
    ttft_slo_ms: float = param(500.0, label="TTFT target", unit="ms", min=1.0, max=1e6, log=True)
    itl_slo_ms: float = param(25.0, label="ITL target", unit="ms", min=0.1, max=1e5, log=True)

    def check(self) -> None:
        deployment(self)


def deployment(p: Params) -> dx.Deployment:
    """The deployment the command line runs, with its evidence; ParamError names the field."""
    try:
        serve = sc.parse_command(p.command)
    except ValueError as e:
        raise ParamError("command", str(e)) from None
    m = model_for_repo(serve.model)
    if m is None and not p.config.strip():
        raise ParamError("config", f"'{serve.model}' is not in the catalogue: paste its config.json")
    if m is None:
        try:
            config = json.loads(p.config)
            if not isinstance(config, dict):
                raise ValueError("a config.json is one JSON object")
            m = resolve_model(config)
        except json.JSONDecodeError as e:
            raise ParamError("config", f"not JSON: line {e.lineno}: {e.msg}") from None
        except (CatalogError, ValueError) as e:
            raise ParamError("config", str(e)) from None
    log = None
    if p.log.strip():
        try:
            log = sc.parse_log(p.log)
        except ValueError as e:
            raise ParamError("log", str(e)) from None
    s = serve.settings
    weight = _QUANT.get(str(s.get("quantization")).lower(), "")  # compressed-tensors, none and others: the config's
    d = dx.Deployment(
        serve, m, resolve_gpu(p.gpu), serve.engine, weight or m.weight_format or "bf16",
        "fp8" if s.get("kv_cache_dtype") == "fp8" else "bf16",
        int(s.get("tensor_parallel_size", 1)), int(s.get("pipeline_parallel_size", 1)), log, _observed(p),
    )  # fmt: skip
    if (asked := int(s.get("max_model_len", 0))) > m.max_context_tokens:  # vLLM's ModelConfig refuses it first
        raise ParamError(
            "command",
            f"vLLM would not start this: a maximum model length of {asked:,} is over {m.name}'s context of "
            f"{m.max_context_tokens:,} tokens (max_position_embeddings in its config.json); vLLM allows it only with "
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 set.",
        )
    try:
        mem = dx.memory(d)
    except ValueError as e:
        raise ParamError("command", f"vLLM would not start this: {e}") from None
    if not mem.fits:  # vLLM refuses at start-up: no memory for KV blocks, or not one max-length request (GPU field)
        short = min(mem.stages, key=lambda st: st.kv_bytes)
        why = (
            f"the KV cache holds {mem.kv_tokens:,} tokens, fewer than one request of the maximum model length "
            f"({dx.max_model_len(d):,} tokens)"
            if short.kv_bytes > 0
            else f"weights, activations and non-torch memory take {(short.requested_bytes - short.kv_bytes) / GiB:,.1f} "
            f"GiB of the {short.requested_bytes / GiB:,.1f} GiB it may use on a GPU, leaving none for the KV cache"
        )
        raise ParamError(
            "gpu", f"vLLM would not start this: {why}. Use more GPUs, smaller weights or a shorter --max-model-len."
        )
    return d


def _observed(p: Params) -> dict[str, float]:
    """Observed figures: the report's chosen benchmark, then the typed ones (which win)."""
    out: dict[str, float] = {"prompt_tokens": p.prompt_tokens, "output_tokens": p.output_tokens}
    if p.report.strip():
        try:
            benches = read(p.report)["benchmarks"]
        except ReportError as e:
            raise ParamError("report", str(e)) from None
        if p.benchmark > len(benches):
            raise ParamError("benchmark", f"the report holds {len(benches)} benchmarks")
        pick = lambda b: b["metrics"]["requests_per_second"]["mean"]  # noqa: E731
        mt = (benches[p.benchmark - 1] if p.benchmark else max(benches, key=pick))["metrics"]
        out["rate_per_s"] = mt["requests_per_second"]["mean"]
        ttft = mt["time_to_first_token_ms"]
        out["ttft_s"], out["ttft_p99_s"] = ttft["p50"] / 1e3, ttft["p99"] / 1e3
        if "inter_token_latency_ms" in mt:
            out["itl_s"] = mt["inter_token_latency_ms"]["p50"] / 1e3
        if "request_concurrency" in mt:
            out["concurrency"] = mt["request_concurrency"]["mean"]
        for key, name in (("prompt_tokens", "prompt_token_count"), ("output_tokens", "output_token_count")):
            if name in mt and mt[name]["mean"] >= 1:
                out[key] = max(2, round(mt[name]["mean"])) if key == "output_tokens" else round(mt[name]["mean"])
    typed = dict(
        rate_per_s=p.rate_per_s, concurrency=p.concurrency, ttft_s=p.ttft_p50_ms / 1e3, itl_s=p.itl_p50_ms / 1e3
    )
    out.update({k: v for k, v in typed.items() if v > 0})
    return out


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> dict[str, Any]:
    d = deployment(p)
    a, obs = dx.memory(d), d.observed
    ctx = obs["prompt_tokens"] + obs["output_tokens"] / 2
    cap = dx.limit(d, "max_num_seqs")
    batch = obs.get("concurrency") or 1.0
    if "concurrency" not in obs and obs.get("rate_per_s"):  # Little's law on the predicted end-to-end time
        for _ in range(2):  # alone, then at the batch that implies
            at = dx.speed(d, max(1, min(cap, round(batch))))
            batch = obs["rate_per_s"] * (at["ttft_s"] + at["itl_s"] * (obs["output_tokens"] - 1))
    b = max(1, min(cap, round(batch)))
    now = dx.speed(d, b)
    gaps = dx.gaps(obs, now, a, d.log, d.serve.settings)
    # Each figure (observed, else predicted) over its target; the larger binds (ITL on a tie).
    use = {
        k: (obs.get(k) or now[k]) / (slo_ms / 1e3) for k, slo_ms in (("itl_s", p.itl_slo_ms), ("ttft_s", p.ttft_slo_ms))
    }
    binding = max(use, key=lambda k: use[k])
    # Levers on the binding figure first, by their change; then those on each other figure, by theirs.
    levers = sorted(dx.levers(d, b, now, binding), key=lambda x: (x["key"] != binding, x["key"], x["change"]))
    logged = float(d.log["kv_tokens"]) if d.log else 0.0
    metrics = {
        "batch": float(b),
        "predicted_kv_tokens": float(a.kv_tokens),
        "kv_capacity_use": b * ctx / a.kv_tokens if a.kv_tokens else 0.0,
        "predicted_ttft_s": now["ttft_s"],
        "predicted_itl_s": now["itl_s"],
        "best_lever_change": levers[0]["change"] if levers else 0.0,
    }
    if logged:  # what was not given is left out, not shown as 0
        metrics |= {"logged_kv_tokens": logged, "kv_tokens_error": a.kv_tokens / logged - 1}
    metrics |= {f"observed_{k}": obs[k] for k in ("ttft_s", "itl_s") if obs.get(k)}
    reproduce = "python -m simulators run diagnose --set " + " --set ".join(
        f"{k}={shlex.quote(str(v))}" for k, v in (("command", p.command), ("gpu", d.gpu.id)) if v
    )
    return {
        "model": d.model.name, "gpu": d.gpu.name, "command": shlex.join(d.serve.tokens), "engine": d.engine, "weight_dtype": d.weight_dtype,
        "kv_dtype": d.kv_dtype, "ignored_flags": d.serve.ignored, "log": {k: v for k, v in (d.log or {}).items() if k != "lines"},
        "observed": obs, "predicted": now, "gaps": gaps, "binding": binding, "slo_use": use[binding], "levers": levers,
        "max_concurrency": a.max_concurrency, "reproduce": reproduce, "metrics": metrics,
    }  # fmt: skip


def figure(r: dict[str, Any], view: str = "levers") -> dict[str, Any]:
    if view == "time":
        t = r["predicted"]
        parts = [("Weights streamed", t["weights_s"]), ("KV cache read", t["kv_s"]), ("Compute past memory", t["compute_over_s"]),
                 ("Fixed step overhead", t["overhead_s"]), ("Prefills sharing the GPU", t["itl_s"] - t["step_s"])]  # fmt: skip
        data = [bar([v * 1e3], ["ITL"], k, i, orientation="h") for i, (k, v) in enumerate(parts)]
        b = r["metrics"]["batch"]
        title = f"Where a token's time goes at {b:.0f} request{'s' * (b != 1)} in flight"
        return chart(data, title, "ms per token", "", barmode="stack")
    if view == "evidence":
        m, shown = r["metrics"], (("TTFT p50 (ms)", "ttft_s"), ("ITL p50 (ms)", "itl_s"))
        rows = [(name, r["predicted"][k] * 1e3, r["observed"][k] * 1e3) for name, k in shown if r["observed"].get(k)]
        if "logged_kv_tokens" in m:
            rows.append(("KV cache (k tokens)", m["predicted_kv_tokens"] / 1e3, m["logged_kv_tokens"] / 1e3))
        if not rows:  # no evidence yet: the model's own figures, to hold yours against
            names, pred = [name for name, _ in shown], [r["predicted"][k] * 1e3 for _, k in shown]
            title = "The model's figures (give a log, a report or figures to compare)"
            return chart([bar(names, pred, "Predicted", 0)], title, "", "ms", barmode="group")
        names, pred, seen = map(list, zip(*rows, strict=True))
        data = [bar(names, pred, "Predicted", 0), bar(names, seen, "Observed", 1)]
        return chart(data, "Predicted against observed", "", "value (unit in the label)", barmode="group")
    levers, name = r["levers"], r["levers"][0]["binding"] if r["levers"] else "the binding figure"
    # One series per figure a lever moves: a lever on another figure is ranked after, and drawn apart.
    data = [
        bar([x["change"] for x in levers if x["key"] == key], [x["lever"] for x in levers if x["key"] == key],
            f"Change of {fig}" if key == r["binding"] else f"{fig}, ranked after", i, orientation="h")
        for i, (key, fig) in enumerate(dict.fromkeys((x["key"], x["figure"]) for x in levers))
    ]  # fmt: skip
    x_title, reversed_ = "predicted change (negative: faster)", {"autorange": "reversed"}
    return chart(data, f"Levers ranked by their effect on {name}", x_title, "", barmode="overlay",
                 xaxis={"tickformat": "+.0%"}, yaxis=reversed_)  # fmt: skip


def summary(r: dict[str, Any], view: str = "levers") -> str:
    m, p = r["metrics"], r["predicted"]
    gaps = " ".join(g[0].upper() + g[1:] + "." * (g[-1] != "?") for g in r["gaps"])
    head = (
        f"{r['model']} on {r['gpu']} ({r['engine']}, {r['weight_dtype']} weights, {r['kv_dtype']} KV cache) at "
        f"{m['batch']:.0f} request{'s' if m['batch'] != 1 else ''} in flight: predicted TTFT {p['ttft_s'] * 1e3:,.1f} ms unqueued and ITL "
        f"{p['itl_s'] * 1e3:,.2f} ms; the KV cache holds {m['predicted_kv_tokens']:,.0f} tokens"
        + (f" (your log: {m['logged_kv_tokens']:,.0f}, {m['kv_tokens_error']:+.1%})" if "logged_kv_tokens" in m else "")
        + f", {m['kv_capacity_use']:.0%} of it in use. "
    )
    if r["ignored_flags"]:
        head += f"Ignored flags (not modelled): {', '.join(r['ignored_flags'])}. "
    if view == "time":
        return head + (
            f"Of each {p['itl_s'] * 1e3:,.2f} ms token: weights {p['weights_s'] * 1e3:,.2f} ms, KV reads {p['kv_s'] * 1e3:,.2f} ms, "
            f"compute past memory {p['compute_over_s'] * 1e3:,.2f} ms, fixed overhead {p['overhead_s'] * 1e3:,.2f} ms, and "
            f"{(p['itl_s'] - p['step_s']) * 1e3:,.2f} ms waiting for prefills ({p['prefill_share']:.0%} of GPU time)."
        )
    if view == "evidence":
        return head + (
            gaps
            or (
                "Every figure you gave is within ±35% of the model's."
                if r["observed"].get("ttft_s") or r["observed"].get("itl_s") or "logged_kv_tokens" in m
                else "No evidence given yet: paste vLLM's start-up log or a GuideLLM report, or type a measured TTFT or ITL."
            )
        )
    ranked = " ".join(
        f"{i + 1}. {x['lever']}, {x['flags'] or 'same flags'}: {x['figure']}"
        + ("" if x["key"] == r["binding"] else f" (another figure, ranked after those on {x['binding']})")
        + f" {x['before_s'] * 1e3:,.2f} → {x['after_s'] * 1e3:,.2f} ms ({x['change']:+.0%}; lesson {x['lesson'].split('-')[0]}"
        + (f": {x['note']}" if x["note"] else "") + ")."
        for i, x in enumerate(r["levers"])
    )  # fmt: skip
    name, use = "ITL" if r["binding"] == "itl_s" else "TTFT", r["slo_use"]
    slo = (  # learner review: "ITL binds your SLO" when both targets were met three times over
        f"{name} misses its target, at {use:.2f}x of it. "
        if use > 1
        else f"Both targets are met; {name} is the closer, at {use:.0%} of its target. "
    )
    if r["binding"] == "ttft_s" and r["observed"].get("ttft_s", 0) > 2 * r["predicted"]["ttft_s"]:
        slo += "The levers are priced unqueued: they shorten your TTFT only as far as they shorten its queue. "
    return (
        head
        + slo
        + "Each lever changes one thing in "
        + f"your command, {r['command']}. Levers, ranked: {ranked}"
        + (" " + gaps if gaps else "")
    )
