"""Compare with your benchmark: a GuideLLM report over the simulated server's GuideLLM sweep.

The reader opens a report GuideLLM wrote (any schema from 0.2 to 0.8, JSON or YAML; the page
reads the file itself and passes its text as the `report` parameter, nothing leaves the page).
Its benchmarks are drawn per rate, TTFT or ITL percentiles against the throughput achieved, over
the sweep GuideLLM would run against the simulated server of the chosen model and GPU
(synchronous, throughput, then constant rates between their measured rates, measured as GuideLLM
measures: simulators/benchmark/loadgen.py), with the server's steady-state ceiling (the most
requests per second the cost model's step times allow with every batch slot busy).

Every point carries its sample count; a p99 from fewer than 100 requests is marked. What the
simulation cannot mean as the report does: no client, network or tokenizer delays, and the
simulated lengths are the chosen distribution, not the report's dataset.
"""

from dataclasses import dataclass
from typing import Any

from ..benchmark.guidellm_read import ReportError, read
from ..benchmark.loadgen import CEILING_REQUESTS, FEW_SAMPLES, LoadRun, ServedMemo, sweep_rates
from ..engine import EngineSpec, SchedulerConfig, workload
from ..parallel import check_serving, layout_of
from ..params import ModelGpuEngine, ParamError, batch_slots_param, num_requests_param, param
from ..plotting import LOG, chart, line, sweep
from ..results_cache import Keep, Streamed, for_call

TITLE = "Compare with your benchmark (GuideLLM report)"
DESCRIPTION = "Open a GuideLLM report and see it over the sweep GuideLLM would run against the simulated server."
METRICS = {
    "sim_sweep_top_per_s": ("Simulated sweep: highest throughput measured", "req/s"),
    "sim_max_throughput_per_s": ("Simulated server's ceiling (steady state)", "req/s"),
    "report_benchmarks": ("Benchmarks in the report (0: none opened)", ""),
    "report_top_per_s": ("Report: highest throughput measured (0: none opened)", "req/s"),
    "report_min_samples": ("Report: fewest requests behind a point (0: none opened)", "requests"),
}
VIEWS = [("ttft", "TTFT p50 and p99"), ("itl", "ITL p50 and p99"), ("throughput", "Throughput per rate")]
SWEEP_SIZE = 10  # GuideLLM's default
# The simulated runs, kept through the caller's keep (api.Session's store) as load_test's: two entries
# a scenario (its sweep, its ceiling), so the last few stay and a new report or chart re-simulates nothing.
MEMO_ENTRIES = 6


@dataclass(frozen=True)
class Params(ModelGpuEngine):
    max_num_seqs: int = batch_slots_param(256, label="Server batch slots")
    lengths: str = param("azure", label="Lengths", choices=workload.LENGTH_CHOICES)
    num_requests: int = num_requests_param(300, min=50, max=2000, label="Requests per simulated run")
    # The report's text: the page reads the chosen file and passes its content; empty: none.
    report: str = param("", label="GuideLLM report (JSON or YAML)", file=".json,.yaml,.yml")

    def check(self) -> None:
        check_serving(*self.resolved(), layout_of(self))
        if self.report.strip():
            try:
                read(self.report)
            except ReportError as e:
                raise ParamError("report", str(e)) from None


def _memo_for(p: Params, what: str, spec: EngineSpec, n: int, seed: int, keep: Keep) -> ServedMemo:
    key = repr((p.model, p.gpu, p.engine, p.max_num_seqs, seed, what, n))
    served: ServedMemo = keep(key, lambda: ServedMemo(spec, n, seed))
    return served


def _point(run: LoadRun, label: str) -> dict[str, Any]:
    m = run.metrics
    return {
        "label": label,
        "offered": run.rate,
        "throughput": m["request_throughput_per_s"],
        **{f"{k}_{q}_ms": m[f"{k}_s_{q}"] * 1e3 for k in ("ttft", "itl") for q in ("p50", "p99")},
        "samples": int(m["ttft_s_count"]),
    }


def _report_points(text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rep = read(text)
    out = []
    for b in rep["benchmarks"]:
        m = b["metrics"]
        ttft, rps = m["time_to_first_token_ms"], m["requests_per_second"]
        itl = m.get("inter_token_latency_ms", {"p50": 0.0, "p99": 0.0})
        where = f"@{b['rate']:g}/s" if b["rate"] else f" x{b['streams']}" if b["streams"] else ""
        point = {"label": f"{b['strategy']}{where}", "offered": b["rate"] or rps["mean"], "throughput": rps["mean"]}
        point |= {f"{k}_{q}_ms": ms[q] for k, ms in (("ttft", ttft), ("itl", itl)) for q in ("p50", "p99")}
        out.append(point | {"samples": ttft["count"]})
    return rep, out


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> Streamed:
    """GuideLLM's sweep of the simulated server and its ceiling, the chart yielded after each point
    (the sweep in GuideLLM's order, then the ceiling: its 2,000-request run comes last), with the
    report's points, if one is opened, drawn from the first one on."""
    keep = for_call(keep, MEMO_ENTRIES)
    m, gpu = p.resolved()
    sched = SchedulerConfig(max_num_seqs=p.max_num_seqs, max_model_len=m.max_context_tokens)
    spec = EngineSpec(m, gpu, sched, engine=p.engine)
    lengths = workload.lengths_for(p.lengths)
    rep, pts = _report_points(p.report) if p.report.strip() else ({}, [])
    served = _memo_for(p, "sweep", spec, p.num_requests, seed, keep)
    out: dict[str, Any] = {"model": m.name, "gpu": gpu.name, "requests": p.num_requests, "sim": []}
    out |= {"report": pts} if pts else {}
    for kind in ("synchronous", "throughput"):
        out["sim"].append(_point(served.run(kind, lengths), kind))
        yield dict(out)
    sync_rate, top_rate = (x["offered"] for x in out["sim"])
    for rate in sweep_rates(sync_rate, top_rate, SWEEP_SIZE):
        out["sim"].append(_point(served.run("constant", lengths, rate=rate), f"constant@{rate:.3g}/s"))
        yield dict(out)
    ceiling = _memo_for(p, "ceiling", spec, CEILING_REQUESTS, seed, keep)
    out["ceiling"] = ceiling.run("concurrent", lengths, users=2 * p.max_num_seqs).metrics["steady_throughput_per_s"]
    yield dict(out)
    if pts:
        out["report_version"] = rep["guidellm_version"]
    out["metrics"] = {
        "sim_max_throughput_per_s": out["ceiling"],
        "sim_sweep_top_per_s": max(r["throughput"] for r in out["sim"]),
        # No report opened: zeros (every declared metric is always there).
        "report_benchmarks": len(pts),
        "report_top_per_s": max((r["throughput"] for r in pts), default=0.0),
        "report_min_samples": min((r["samples"] for r in pts), default=0),
    }
    return out


def _hover(r: dict[str, Any]) -> str:
    flag = " (p99 from under 100 requests)" if r["samples"] < FEW_SAMPLES else ""
    return f"{r['label']}, {r['samples']} requests{flag}"


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    sim, rep, c = r["sim"], r.get("report", []), r.get("ceiling")
    series = [("Simulated", sim, 0), *([("Your report", rep, 2)] if rep else [])]
    data = []
    if view == "throughput":
        for name, pts, color in series:
            pts = sorted(pts, key=lambda x: x["offered"])
            data.append(sweep(pts, "offered", "throughput", f"{name}: achieved", color, text=[_hover(x) for x in pts]))
        xs = [x["offered"] for _, pts, _ in series for x in pts]
        ceiling = [min(xs), max(xs)], [c, c]
        title, xt, yt, ylog = "Throughput per rate", "Offered rate (req/s)", "Achieved (req/s)", False
    else:
        k, up = view, view.upper()
        for name, pts, color in series:
            pts = sorted(pts, key=lambda x: x["throughput"])
            for q, dash in (("p50", 0), ("p99", 1)):
                label, hover = f"{name}: {up} {q}", [_hover(x) for x in pts]
                data.append(sweep(pts, "throughput", f"{k}_{q}_ms", label, color + dash, text=hover))
        ys = [x[f"{k}_p99_ms"] for _, pts, _ in series for x in pts] or [1.0]
        ceiling = [c, c], [min(ys), max(ys)]
        title, xt, yt, ylog = f"{up} against throughput", "Achieved throughput (req/s)", f"{up} (ms)", True
    # The ceiling's line, across the rates or along the latencies; no points while it is simulated (streaming).
    data.append(line(*(ceiling if c is not None else ([], [])), "Ceiling (cost model, every slot busy)", 4))
    return chart(data, f"{title}: {r['model']} on {r['gpu']}", xt, yt, **({"yaxis": LOG} if ylog else {}))


def summary(r: dict[str, Any], view: str) -> str:
    m, sim = r["metrics"], r["sim"]
    text = (
        f"GuideLLM's sweep of the simulated {r['model']} on one {r['gpu']}: "
        f"{len(sim)} benchmarks, up to {m['sim_sweep_top_per_s']:.1f} requests/s measured, against a steady-state "
        f"ceiling of {m['sim_max_throughput_per_s']:.1f}. Simulated, {_drawn(sim, view)}"
    )
    if m["sim_sweep_top_per_s"] < 0.9 * m["sim_max_throughput_per_s"]:  # learner review: why it stops short
        text += (
            f" The sweep stops short of the ceiling because its top rate is the throughput run's: {r['requests']:,} "
            "requests sent at once, timed from the first sent to the last finished, so the rush of prefills at its "
            "start and the drain at its end (fewer requests left than batch slots) count in it, as in a real short run; more requests per run come closer."
        )
    if "report" not in r:
        return text + " Open a GuideLLM report (JSON or YAML) to draw it over the sweep; it is read in this page only."
    few = [x for x in r["report"] if x["samples"] < FEW_SAMPLES]
    text += (
        f" Your report (GuideLLM {r['report_version']}): {int(m['report_benchmarks'])} "
        f"benchmark{'s' if m['report_benchmarks'] != 1 else ''}, up to "
        f"{m['report_top_per_s']:.1f} requests/s; {_drawn(r['report'], view)}"
    )
    if few and view != "throughput":
        text += (
            f" {len(few)} of its points rest on fewer than {FEW_SAMPLES} requests: their p99 is one or two requests."
        )
    return text + " The simulation has no client, network or tokenizer delays, and its lengths are not your dataset's."


def _drawn(pts: list[dict[str, Any]], k: str) -> str:
    """One series of the chart in words, a sentence: its lowest and highest point by throughput (TTFT,
    ITL), or each benchmark's achieved rate, by the rate offered (throughput)."""
    if k == "throughput":
        rates = "; ".join(f"{x['label']} {x['throughput']:.2f}" for x in sorted(pts, key=lambda x: x["offered"]))
        return f"requests/s achieved per benchmark, by the rate offered: {rates}."
    lo, hi = min(pts, key=lambda x: x["throughput"]), max(pts, key=lambda x: x["throughput"])

    def at(x: dict[str, Any]) -> str:
        return (
            f"p50 {x[f'{k}_p50_ms']:,.1f} ms and p99 {x[f'{k}_p99_ms']:,.1f} ms at {x['throughput']:.2f} requests/s "
            f"({x['label']})"
        )

    return f"{k.upper()} is {at(lo)}." if lo is hi else f"{k.upper()} goes from {at(lo)} to {at(hi)}."
