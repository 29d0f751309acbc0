"""The one boundary between the page (or the CLI) and the simulators.

    run_json(name, params_json, seed=0, view=None) -> str
        {"ok": true, "metrics": {...}, "result": {...}, "figure": {...}, "summary": "..."}
        {"ok": false, "errors": [{"field": ..., "message": ...}]}
    Session().run_json(...)        the same, answered from the session's ResultsCache when kept
    Session().figure_json(name, params_json, seed=0, view=None) -> str
        {"ok": true, "figure": {...}, "summary": "..."}: a chart switch, drawn from the kept result
    Session().run_json_stream(name, params_json, seed=0, post=None, view=None) -> str
        run_json's answer; before it, post({"ok": true, "partial": true, "figure": {...}} as JSON)
        for each point of a chart that streams (the browser worker redraws as they come)

Only JSON crosses: no Python object reaches JavaScript. The dispatch table below is the whole
registry: adding a simulator is one module and one line here.

Every simulator module provides `TITLE`, `DESCRIPTION`, `METRICS` ({name: (label, unit)}),
a frozen `Params` dataclass, `run(params, *, seed) -> dict` (with a flat "metrics" dict),
`figure(result, view) -> dict` (plotly) and `summary(result, view) -> str` (the chart in words),
with `VIEWS` [(value, label)] the charts it draws, the first the default (a module with one chart
has no VIEWS and its figure() and summary() take the result alone). Optional: `view_data(params,
result, view, *, seed) -> dict`, what only some charts draw and costs a simulation (merged into the
result for that chart), and `MEMO_ENTRIES` with `run(..., memo=)`: the simulator reuses
intermediate work across calls from the memo a session gives it (results_cache.py).

Optional too: `EXPORTS` [(kind, label, file name)] and `export(params, kind, *, seed) -> str`, a
file the page offers for download (load_test: GuideLLM's report). It is made only when asked: an
`export` key among the parameters answers {"ok": true, "export": {"kind", "file", "text"}} instead
of a chart.

The chart choice is not a simulation input: a `view` key among the parameters (a lesson's sim
block, the CLI's --set view=..., the page's address) is taken out and passed to figure(), so a
session answers "the same scenario, another chart" by drawing its kept result again.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .core import costmodel as cm
from .core.catalog import CatalogError, resolve_gpu
from .engine import blockhash
from .params import ParamErrors, parse, schema_fields
from .results_cache import MAX_RESULTS, LruCache, ResultsCache
from .sims import (
    batching,
    cheapest,
    cluster,
    compare_benchmark,
    compression,
    deployment,
    diagnose,
    engine_explorer,
    evaluation,
    generation,
    gpu_memory,
    kv_cache,
    load_test,
    paged_kv,
    prefix_cache,
    quantization,
    reasoning,
    slo,
    sparsity,
    speculative,
)

SIMULATORS: dict[str, ModuleType] = {
    "batching": batching,
    "cheapest": cheapest,
    "cluster": cluster,
    "compare_benchmark": compare_benchmark,
    "compression": compression,
    "deployment": deployment,
    "engine": engine_explorer,
    "evaluation": evaluation,
    "generation": generation,
    "gpu_memory": gpu_memory,
    "kv_cache": kv_cache,
    "diagnose": diagnose,
    "load_test": load_test,
    "paged_kv": paged_kv,
    "prefix_cache": prefix_cache,
    "quantization": quantization,
    "reasoning": reasoning,
    "slo": slo,
    "sparsity": sparsity,
    "speculative": speculative,
}

# Floats are rounded to 10 significant digits so that CPython and Pyodide print byte-identical
# JSON: their libm (exp, log) can differ in the last bit, which 12 digits could still show.
_DIGITS = 10


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite number {value!r} in a simulator result")
        return float(f"{value:.{_DIGITS}g}")
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def dumps(value: Any) -> str:
    return json.dumps(_clean(value), sort_keys=True, separators=(",", ":"), allow_nan=False)


VIEW = "view"  # the chart choice's name among the parameters a page or the CLI sends
EXPORT = "export"  # a file asked for instead of a chart (the module's EXPORTS)


def schema(name: str) -> dict[str, Any]:
    mod = _module(name)
    views = _views(mod)
    # The chart choice is listed with the parameters, last, so that pages build its control alike.
    chart = {
        "name": VIEW,
        "label": "Chart",
        "type": "choice",
        "default": views[0][0] if views else None,
        "unit": "",
        "help": "",
        "custom": None,
        "choices": [{"value": v, "label": label} for v, label in views],
    }
    return {
        "name": name,
        "title": mod.TITLE,
        "description": mod.DESCRIPTION,
        "params": schema_fields(mod.Params) + ([chart] if views else []),
        "metrics": [{"name": k, "label": label, "unit": unit} for k, (label, unit) in mod.METRICS.items()],
        "exports": [{"kind": k, "label": label, "file": file} for k, label, file in getattr(mod, "EXPORTS", [])],
    }


def schemas() -> dict[str, dict[str, Any]]:
    return {name: schema(name) for name in SIMULATORS}


class UnknownSimulator(KeyError):
    pass


def _module(name: str) -> ModuleType:
    try:
        return SIMULATORS[name]
    except KeyError:
        raise UnknownSimulator(f"unknown simulator '{name}'; known: {', '.join(SIMULATORS)}") from None


def _views(mod: ModuleType) -> list[tuple[str, str]]:
    return list(getattr(mod, "VIEWS", []))


def _chart(mod: ModuleType, view: Any) -> str | None:
    """The chart to draw: `view`, or the module's first; ParamErrors if it draws no such chart."""
    views = _views(mod)
    if not views:
        if view is None:
            return None
        raise ParamErrors([{"field": VIEW, "message": "this simulator draws one chart: leave out 'view'"}])
    if view is None:
        return views[0][0]
    if view not in [v for v, _ in views]:
        choices = ", ".join(v for v, _ in views)
        raise ParamErrors([{"field": VIEW, "message": f"unknown chart {view!r}; choose one of: {choices}"}])
    return str(view)


def _draw(mod: ModuleType, result: dict[str, Any], view: str | None) -> dict[str, Any]:
    if view is None:
        return {"figure": mod.figure(result), "summary": mod.summary(result)}
    return {"figure": mod.figure(result, view), "summary": mod.summary(result, view)}


# Simulators whose run() reuses intermediate work from a memo (their module names MEMO_ENTRIES).
_MEMO = {name: "memo" in inspect.signature(mod.run).parameters for name, mod in SIMULATORS.items()}
# Simulators whose view_data() reports its chart as it grows (`progress`) and needs no result.
_STREAMS = {
    name: hasattr(mod, "view_data") and "progress" in inspect.signature(mod.view_data).parameters
    for name, mod in SIMULATORS.items()
}

Partial = Callable[[dict[str, Any]], None]


def _simulate(
    name: str,
    mod: ModuleType,
    p: Any,
    seed: int,
    view: str | None,
    cache: ResultsCache | None,
    partial: Partial | None = None,
) -> dict[str, Any]:
    """run()'s result, with view_data() for `view` merged in; from and into `cache` if given.

    With `partial`, a simulator that streams (its view_data takes `progress`) computes the chart's
    own data first and hands each growing chart to `partial` (the figure dict); the answer is the
    same as without."""
    key = (name, dumps(dataclasses.asdict(p)), seed)
    # run() and view_data() share one memo: the session's, or one for this call alone.
    kw: dict[str, Any] = {}
    if _MEMO[name]:
        kw["memo"] = LruCache(mod.MEMO_ENTRIES) if cache is None else cache.memo(name, mod.MEMO_ENTRIES)

    # The engine's block-hash chains: kept by the session like a memo, else for this call alone.
    chains = blockhash.chain_store() if cache is None else cache.memo(CHAINS, blockhash.BLOCK_SIZES_KEPT)
    with blockhash.kept_in(chains):  # type: ignore[arg-type]
        return _simulate_with(mod, p, seed, view, cache, key, kw, partial)


CHAINS = "engine.chains"  # the session memo that keeps the engine's block-hash chains


def _simulate_with(
    mod: ModuleType,
    p: Any,
    seed: int,
    view: str | None,
    cache: ResultsCache | None,
    key: tuple[str, str, int],
    kw: dict[str, Any],
    partial: Partial | None,
) -> dict[str, Any]:
    def simulate() -> dict[str, Any]:
        answer: dict[str, Any] = mod.run(p, seed=seed, **kw)
        return answer

    first: dict[str, Any] | None = None  # view_data's answer, computed before run()'s (streaming)
    if partial is not None and view is not None and _STREAMS[key[0]]:
        if cache is None or (*key, view) not in cache.results:
            first = mod.view_data(p, None, view, seed=seed, progress=lambda part: partial(mod.figure(part, view)), **kw)
    result: dict[str, Any] = simulate() if cache is None else cache.results.get_or_make(key, simulate)  # type: ignore[assignment]
    if view is None or not hasattr(mod, "view_data"):
        return result

    def extra() -> dict[str, Any]:
        if first is not None:
            return first
        answer: dict[str, Any] = mod.view_data(p, result, view, seed=seed, **kw)
        return answer

    more: dict[str, Any] = extra() if cache is None else cache.results.get_or_make((*key, view), extra)  # type: ignore[assignment]
    return {**result, **more} if more else result


def run(
    name: str,
    params: dict[str, Any],
    seed: int = 0,
    view: str | None = None,
    *,
    cache: ResultsCache | None = None,
    partial: Partial | None = None,
) -> dict[str, Any]:
    """Validate, run and draw; the answer run_json serialises. Never raises on bad input.

    `view` picks the chart (default: a "view" key in `params`, else the simulator's first chart).
    With a `cache`, a scenario already simulated (the same parameters and seed) is only drawn.
    `partial` receives the chart as it grows, where the simulator streams (see _simulate).
    """
    try:
        mod = _module(name)
    except UnknownSimulator as e:
        return {"ok": False, "errors": [{"field": "", "message": e.args[0]}]}
    params = dict(params) if isinstance(params, dict) else params
    if isinstance(params, dict) and VIEW in params:
        chosen = params.pop(VIEW)
        view = chosen if view is None else view
    if isinstance(params, dict) and EXPORT in params:
        params.pop(VIEW, None)
        return _export(name, mod, params.pop(EXPORT), params, seed)
    # A check that accepts a memo shares the session's with run() (params.parse).
    memo = cache.memo(name, mod.MEMO_ENTRIES) if cache is not None and _MEMO[name] else None
    try:
        chart = _chart(mod, view)
        p = parse(mod.Params, params, memo=memo)
    except ParamErrors as e:
        return {"ok": False, "errors": e.errors}
    unpriced = _missing_figure(p)
    if unpriced:
        return {"ok": False, "errors": [unpriced]}
    try:
        result = _simulate(name, mod, p, seed, chart, cache, partial)
    except CatalogError as e:
        return {"ok": False, "errors": [{"field": "", "message": str(e)}]}
    drawn = _draw(mod, result, chart)
    priced = _priced_by(p)
    if priced:  # each answer says which profile priced its times (one speed model, a named choice)
        drawn["summary"] = f"{drawn['summary']} Times priced with {priced}."
    return {
        "ok": True,
        "metrics": result["metrics"],
        "result": result,
        **drawn,
        **({"priced_by": priced} if priced else {}),
    }


def _missing_figure(p: Any) -> dict[str, str] | None:
    """A field error on `gpu` where a timing simulator (one with an engine) runs on a GPU whose
    catalogue entry, or the reader's custom GPU, lacks the tensor rate its times need: without it
    a time could only be a memory-only floor (issue 29: complete figures, or a refusal)."""
    gpu_value = getattr(p, "gpu", None)
    if not isinstance(getattr(p, "engine", None), str) or gpu_value is None:
        return None
    gpu = resolve_gpu(gpu_value)
    from .core import efficiency

    if why := efficiency.unsupported(p.engine, gpu):  # vLLM on an Apple GPU: not even its ideal runs there
        return {"field": "engine", "message": why}
    missing = cm.missing_compute_figure(gpu, getattr(p, "weight_dtype", "bf16"))
    if not missing:
        return None
    return {
        "field": "gpu",
        "message": f"{gpu.name} has no '{missing}' in the catalogue, and every time needs it (without it a "
        "prefill could only be priced as a memory-only floor): pick another GPU, or give a custom GPU that rate",
    }


def _priced_by(p: Any) -> str:
    """The engine profile (or the ideal ceiling) whose factors priced a run's times; "" if none."""
    engine = getattr(p, "engine", None)
    if not isinstance(engine, str):
        return ""
    if getattr(p, "ideal", False):
        return "ideal hardware (100% of peak, no overhead)"
    from .core import efficiency

    gpu = getattr(p, "gpu", None)
    named = efficiency.profile(engine) if gpu is None else efficiency.profile_for(engine, resolve_gpu(gpu))
    return f"the {named.name} profile"


def _export(name: str, mod: ModuleType, kind: Any, params: dict[str, Any], seed: int) -> dict[str, Any]:
    """The file `kind` of mod.EXPORTS for these parameters, or field errors."""
    files = {k: file for k, _, file in getattr(mod, "EXPORTS", [])}
    if kind not in files:
        offered = ", ".join(files) or "none"
        return {
            "ok": False,
            "errors": [{"field": EXPORT, "message": f"{name} offers no {kind!r} file (offered: {offered})"}],
        }
    try:
        p = parse(mod.Params, params)
        text = mod.export(p, kind, seed=seed)
    except ParamErrors as e:
        return {"ok": False, "errors": e.errors}
    except CatalogError as e:
        return {"ok": False, "errors": [{"field": "", "message": str(e)}]}
    return {"ok": True, "export": {"kind": kind, "file": files[kind], "text": text}}


def run_json(name: str, params_json: str, seed: int = 0, view: str | None = None) -> str:
    """The browser's entry point: JSON in, JSON out. Keeps nothing (a Session keeps answers)."""
    return _run_json(name, params_json, seed, view, None)


def _run_json(
    name: str,
    params_json: str,
    seed: int,
    view: str | None,
    cache: ResultsCache | None,
    keys: tuple[str, ...] = (),
    partial: Partial | None = None,
) -> str:
    """run()'s answer as JSON; with `keys`, only those parts of a good answer."""
    try:
        params = json.loads(params_json) if params_json.strip() else {}
    except json.JSONDecodeError as e:
        return dumps({"ok": False, "errors": [{"field": "", "message": f"parameters are not valid JSON: {e}"}]})
    answer = run(name, params, seed, view, cache=cache, partial=partial)
    return dumps({k: answer[k] for k in ("ok", *keys)} if keys and answer["ok"] else answer)


class Session:
    """Answers from one caller (a browser worker, a build) kept in its own ResultsCache: a chart
    switch or a repeated scenario is drawn from the kept result instead of simulated again."""

    def __init__(self, max_results: int = MAX_RESULTS) -> None:
        self.cache = ResultsCache(max_results)

    def run(self, name: str, params: dict[str, Any], seed: int = 0, view: str | None = None) -> dict[str, Any]:
        return run(name, params, seed, view, cache=self.cache)

    def run_json(self, name: str, params_json: str, seed: int = 0, view: str | None = None) -> str:
        return _run_json(name, params_json, seed, view, self.cache)

    def run_json_stream(
        self,
        name: str,
        params_json: str,
        seed: int = 0,
        post: Callable[[str], Any] | None = None,
        view: str | None = None,
    ) -> str:
        """run_json's answer, the same string; meanwhile, where the simulator streams its chart
        (a sweep point by point), `post` gets each growing chart as {"ok": true, "partial": true,
        "figure": ...} in JSON, so the page can redraw before the whole answer is ready. Partial
        charts only add points: the answer's chart is the last and complete one."""

        def partial(figure: dict[str, Any]) -> None:
            if post is not None:
                post(dumps({"ok": True, "partial": True, "figure": figure}))

        return _run_json(name, params_json, seed, view, self.cache, partial=partial)

    def figure_json(self, name: str, params_json: str, seed: int = 0, view: str | None = None) -> str:
        """Only the chart and its words, {"ok": true, "figure": ..., "summary": ...}: for a chart
        switch, drawn from the kept result (simulated first if this scenario is not kept)."""
        return _run_json(name, params_json, seed, view, self.cache, ("figure", "summary"))

    @property
    def results(self) -> LruCache[object]:
        return self.cache.results


def evaluate(name: str, seed: int = 0, **params: Any) -> dict[str, Any]:
    """For build-time numbers: the cleaned answer, or ValueError naming every bad field."""
    answer: dict[str, Any] = json.loads(dumps(run(name, params, seed)))
    if not answer["ok"]:
        raise ValueError("; ".join(f"{e['field'] or name}: {e['message']}" for e in answer["errors"]))
    return answer


# ---- build-time pages (the site build reaches the simulators through this module only) ----


def validation_page() -> dict[str, str]:
    """The validation page's generated parts: its table, the band in words, the vLLM log table."""
    from .benchmark import crossval, validation, vllm_validation

    return {
        "table": crossval.page_markdown().split("\n", 1)[1],  # without the "do not edit" comment
        "band": validation.band_summary(),
        "vllm_table": vllm_validation.render_markdown(),
    }


def held_out_band() -> dict[str, float]:
    """The held-out band's statistics a lesson may quote (`heldout.*`), and the cross-validated band
    of each quantity (`heldout.ttft_median_error`, `heldout.ttft_p90_error`, `heldout.ttft_points`
    for a prefill alone, a request's TTFT on an idle GPU; prefixes `decode`, `throughput`, `serving`
    (TTFT and TPOT under load), and `cv` for every speed row), so that a sentence
    quotes the band of the quantity it states: "half within X%, nine in ten within Y%"."""
    from .benchmark import crossval
    from .benchmark.validation import band

    b = band("held_out")
    out = {
        "median_error": b.median_abs_error,
        "within_35": b.within_35,
        "points": float(b.points),
        "engines": float(len(b.engines)),
        "gpus": float(len(b.gpus)),
    }
    for prefix, quantity in (("cv", None), *crossval.BAND_KEYS.items()):
        s = crossval.band(quantity)
        out |= {
            f"{prefix}_median_error": s.median_abs_error,
            f"{prefix}_p90_error": s.p90_abs_error,
            f"{prefix}_within_35": s.within_35,
            f"{prefix}_points": float(s.points),
        }
    return out


def measurement_runs() -> dict[str, float]:
    """The validation rows' engine runs made in this process (the build keeps them between builds)."""
    from .benchmark import served_benchmarks

    return served_benchmarks.known_runs()


def remember_measurement_runs(runs: dict[str, float]) -> None:
    """Runs made earlier by this same code, so they are not made again."""
    from .benchmark import served_benchmarks

    served_benchmarks.remember_runs(runs)
