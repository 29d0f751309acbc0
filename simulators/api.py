"""The one boundary between the page (or the CLI) and the simulators.

    run_json(name, params_json, seed=0, view=None) -> str
        {"ok": true, "metrics": {...}, "result": {...}, "figure": {...}, "summary": "..."}
        {"ok": false, "errors": [{"field": ..., "message": ...}]}
    Session().run_json(...)        the same, answered from the session's store when kept
    Session().run_json_stream(name, params_json, seed=0, post=None, view=None) -> str
        run_json's answer; before it, post({"ok": true, "partial": true, "figure": {...}} as JSON)
        for each growing result a streaming run() yields (the browser worker redraws as they come)

Only JSON crosses. The dispatch table below is the whole registry: a simulator is one module and
one line here. Every module has `TITLE`, `DESCRIPTION`, `METRICS`, a frozen `Params`, `run(params,
*, seed, keep, view)`, `figure` and `summary` (with `VIEWS` when it draws several charts), and may
name `MEMO_ENTRIES`, `EXPORTS`, `TABLES`, `UNTIMED` and `GIVEN` (docs/extending.md has the contract). api calls every run() the
same way: `keep(key, make)` is the simulator's namespace of the caller's store (results_cache.py),
`view` the chart asked for; a run() that is a generator yields growing results and returns the
full one, and each yielded result's chart is posted while a page listens. A `view` key among the
parameters is the chart choice, not a simulation input: each chart's answer is kept apart, and the
runs the charts share come back from `keep`. An `export` key asks for a file (the module's EXPORTS)
instead of a chart.
"""

import dataclasses
import json
import math
from collections.abc import Callable
from types import ModuleType
from typing import Any

from . import sims
from .core.catalog import CatalogError
from .engine import blockhash
from .params import ParamError, ParamErrors, missing_figure, param, parse, priced_by, schema_fields
from .plotting import running
from .results_cache import DEFAULT_ENTRIES, MAX_RESULTS, LruCache, ResultsCache
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
    published,
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
    "published": published,
    "quantization": quantization,
    "reasoning": reasoning,
    "slo": slo,
    "sparsity": sparsity,
    "speculative": speculative,
}


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite number {value!r} in a simulator result")
        # 10 significant digits, so that CPython and Pyodide print byte-identical JSON: their libm
        # (exp, log) can differ in the last bit, which 12 digits could still show.
        return float(f"{value:.10g}")
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
    chart = [(VIEW, str, param(views[0][0], label="Chart", choices=views))] if views else []
    return {
        "name": name,
        "title": mod.TITLE,
        "description": mod.DESCRIPTION,
        "params": schema_fields(mod.Params) + schema_fields(dataclasses.make_dataclass("Chart", chart)),
        "metrics": [{"name": k, "label": label, "unit": unit} for k, (label, unit) in mod.METRICS.items()],
        "exports": [{"kind": k, "label": label, "file": file} for k, label, file in getattr(mod, "EXPORTS", [])],
    }


def schemas() -> dict[str, dict[str, Any]]:
    return {name: schema(name) for name in SIMULATORS}


def _module(name: str) -> ModuleType:
    if name not in SIMULATORS:
        raise KeyError(f"unknown simulator '{name}'; known: {', '.join(SIMULATORS)}")
    return SIMULATORS[name]


def _views(mod: ModuleType) -> list[tuple[str, str]]:
    return list(getattr(mod, "VIEWS", []))


def _chart(mod: ModuleType, view: Any) -> str | None:
    """The chart to draw: `view`, or the module's first; ParamErrors if it draws no such chart."""
    views = [v for v, _ in _views(mod)]
    if view is None:
        return views[0] if views else None
    if not views:
        raise ParamErrors([{"field": VIEW, "message": "this simulator draws one chart: leave out 'view'"}])
    if view not in views:
        raise ParamErrors([{"field": VIEW, "message": f"unknown chart {view!r}; choose one of: {', '.join(views)}"}])
    return str(view)


CHAINS = "engine.chains"  # the session's namespace for the engine's block-hash chains (engine/blockhash.py)
Partial = Callable[[dict[str, Any]], None]
Post = Callable[[str], Any]


def _simulate(
    name: str, mod: ModuleType, p: Any, seed: int, view: str | None, cache: ResultsCache | None, partial: Partial | None
) -> dict[str, Any]:
    """run()'s full result for this chart, kept in `cache` (else a store for this call alone); each
    growing result a run() yields is drawn and handed to `partial`, when someone listens."""
    store = cache if cache is not None else ResultsCache()

    def simulate() -> dict[str, Any]:
        keep = store.keep(name, getattr(mod, "MEMO_ENTRIES", DEFAULT_ENTRIES))
        with blockhash.kept_in(store.memo(CHAINS, blockhash.BLOCK_SIZES_KEPT)):  # type: ignore[arg-type]
            draw = mod.figure if view is None else lambda part: mod.figure(part, view)
            post = None if partial is None else lambda part: partial(running(draw(part), part))  # "simulating"
            return sims.result(mod.run(p, seed=seed, keep=keep, view=view), post)

    return store.results.get_or_make((name, dumps(dataclasses.asdict(p)), seed, view), simulate)  # type: ignore[return-value]


def run(
    name: str,
    params: dict[str, Any],
    seed: int = 0,
    view: str | None = None,
    *,
    cache: ResultsCache | None = None,
    partial: Partial | None = None,
) -> dict[str, Any]:
    """Validate, run and draw: the answer run_json serialises; never raises on bad input. `view` picks
    the chart (default: a "view" key in `params`, else the first); with a `cache`, a scenario already
    simulated is only drawn; `partial` receives the chart as it grows (_simulate)."""
    try:
        mod = _module(name)
    except KeyError as e:
        return _failed(e.args[0])
    if isinstance(params, dict):
        params = dict(params)
        chosen = params.pop(VIEW, None)
        view = chosen if view is None else view
        if EXPORT in params:
            return _export(name, mod, params.pop(EXPORT), params, seed)
    try:
        chart = _chart(mod, view)
        p = parse(mod.Params, params, (VIEW,) if _views(mod) else ())
    except ParamErrors as e:
        return {"ok": False, "errors": e.errors}
    if unpriced := missing_figure(p):
        return {"ok": False, "errors": [unpriced]}
    try:
        result = _simulate(name, mod, p, seed, chart, cache, partial)
    except ParamError as e:  # a rule run() works out with its kept work (cheapest: no layout can)
        return _failed(e.message, e.field)
    except CatalogError as e:
        return _failed(str(e))
    chosen = () if chart is None else (chart,)  # a simulator with one chart takes no view
    drawn = {"figure": mod.figure(result, *chosen), "summary": mod.summary(result, *chosen)}
    if (priced := priced_by(p)) and chart not in getattr(mod, "UNTIMED", ()):  # answers with times name their profile
        drawn |= {"summary": f"{drawn['summary']} Times priced with {priced}.", "priced_by": priced}
    return {"ok": True, "metrics": _table(mod, chart, result["metrics"]), "result": result, **drawn}


def _table(mod: ModuleType, chart: str | None, metrics: dict[str, float]) -> dict[str, float]:
    """The metrics a chart's table shows: those its module's TABLES names for it (by prefix), else all."""
    own = getattr(mod, "TABLES", {}).get(chart)
    return metrics if own is None else {k: v for k, v in metrics.items() if k.startswith(own)}


def _failed(message: str, field: str = "") -> dict[str, Any]:
    return {"ok": False, "errors": [{"field": field, "message": message}]}


def _export(name: str, mod: ModuleType, kind: Any, params: dict[str, Any], seed: int) -> dict[str, Any]:
    """The file `kind` of mod.EXPORTS for these parameters, or field errors."""
    files = {k: file for k, _, file in getattr(mod, "EXPORTS", [])}
    if kind not in files:
        return _failed(f"{name} offers no {kind!r} file (offered: {', '.join(files) or 'none'})", EXPORT)
    try:
        text = mod.export(parse(mod.Params, params), kind, seed=seed)
    except ParamErrors as e:
        return {"ok": False, "errors": e.errors}
    except CatalogError as e:
        return _failed(str(e))
    return {"ok": True, "export": {"kind": kind, "file": files[kind], "text": text}}


def run_json(name: str, params_json: str, seed: int = 0, view: str | None = None) -> str:
    """The browser's entry point: JSON in, JSON out. Keeps nothing (a Session keeps answers)."""
    return Session().run_json(name, params_json, seed, view)


class Session:
    """Answers from one caller (a browser worker, a build) kept in its own ResultsCache: a chart
    switch or a repeated scenario is drawn from the kept result instead of simulated again."""

    def __init__(self, max_results: int = MAX_RESULTS) -> None:
        self.cache = ResultsCache(max_results)

    def run(self, name: str, params: dict[str, Any], seed: int = 0, view: str | None = None) -> dict[str, Any]:
        return run(name, params, seed, view, cache=self.cache)

    def run_json(
        self, name: str, params_json: str, seed: int = 0, view: str | None = None, partial: Partial | None = None
    ) -> str:
        try:
            params = json.loads(params_json) if params_json.strip() else {}
        except json.JSONDecodeError as e:
            return dumps(_failed(f"parameters are not valid JSON: {e}"))
        return dumps(run(name, params, seed, view, cache=self.cache, partial=partial))

    def run_json_stream(
        self, name: str, params_json: str, seed: int = 0, post: Post | None = None, view: str | None = None
    ) -> str:
        """run_json's answer; meanwhile `post` gets each growing chart a streaming simulator draws as
        {"ok": true, "partial": true, "figure": ...} in JSON (the answer's chart is the complete one)."""

        def partial(figure: dict[str, Any]) -> None:
            if post is not None:
                post(dumps({"ok": True, "partial": True, "figure": figure}))

        return self.run_json(name, params_json, seed, view, partial)

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
    """What a lesson may quote as `heldout.*`: the held-out band, and the cross-validated band of each
    quantity (prefixes `ttft`, `decode`, `throughput`, `serving`, and `cv` for every speed row)."""
    from .benchmark import crossval
    from .benchmark.validation import band

    b = band("held_out")
    out = {"median_error": b.median_abs_error, "within_35": b.within_35, "points": float(b.points)}
    out |= {"engines": float(len(b.engines)), "gpus": float(len(b.gpus))}
    for prefix, quantity in (("cv", None), *crossval.BAND_KEYS.items()):
        s = crossval.band(quantity)
        out |= {f"{prefix}_median_error": s.median_abs_error, f"{prefix}_p90_error": s.p90_abs_error}
        out |= {f"{prefix}_within_35": s.within_35, f"{prefix}_points": float(s.points)}
    return out


def profile_constants() -> dict[str, float]:
    """What a lesson may quote as `profile.*`: the default engine profile's numeric constants."""
    from .core import efficiency as ef

    values = dataclasses.asdict(ef.profile(ef.DEFAULT)).items()
    return {k: float(v) for k, v in values if isinstance(v, (int, float)) and not isinstance(v, bool)}


def measurement_runs() -> dict[str, float]:
    """The validation rows' engine runs made in this process (the build keeps them between builds)."""
    from .benchmark import served_benchmarks

    return served_benchmarks.known_runs()


def make_runs_with(
    run_many: Callable[[Callable[[Any], float], list[Any]], list[float]] | None,
    kept: Callable[[str], float | None] | None = None,
) -> None:
    """How validation_page gets its engine runs: `kept(key)`, made earlier by this same code (None: not
    made; keys as `measurement_runs`), else `run_many`, a map in other processes (None: here, in turn)."""
    from .benchmark import served_benchmarks

    served_benchmarks.run_many, served_benchmarks.kept = run_many, kept
