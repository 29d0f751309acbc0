"""Validation: the cost model's predictions side by side with published figures.

Each published point in data/measurements.toml names a quantity the cost model can predict
(decode speed, prefill time, file size, KV bytes, ridge point...) and the conditions it was
measured under. For each we compute the ideal prediction (every efficiency 1.0: the physical
floor for a time, the ceiling for a rate), the prediction of the row's engine profile
(data/engine_profiles.toml) and the ratio published / predicted. A ratio near 1 means the defaults
describe that system; the spread of ratios is the honest error bar of every number the course
computes. Points we cannot check yet are listed with the reason.

`render_markdown()` gives the table the site includes (docs/validation-table.md, written by
scripts/validation_table.py and at build time).
"""

import math
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from ..core import costmodel as cm
from ..core import efficiency as ef
from ..core.catalog import Gpu, Model, data_file, gpus, models
from . import benchmarks as bm
from . import served_benchmarks as sb
from .commands import cell, profile_of


def measurements() -> list[dict[str, Any]]:
    """Every published point, in file order."""
    return list(data_file("measurements.toml")["measurement"])


def group_notes() -> list[dict[str, Any]]:
    """Why a source group misses under cross-validation: {"group", "cause"} (crossval.render_groups)."""
    return list(data_file("measurements.toml").get("group_note", []))


def skipped() -> list[dict[str, Any]]:
    """Published points not checked yet, each with its reason."""
    return list(data_file("measurements.toml").get("skipped", []))


def _setup(e: dict[str, Any]) -> tuple[Model, Gpu, bm.Formats]:
    """The row's model, GPU and formats."""
    return models()[e["model"]], gpus()[e["gpu"]], bm.formats(e)


def schedule(e: dict[str, Any]) -> ef.EngineProfile:
    """The engine profile with the benchmark's own scheduler settings, where it states them."""
    p = ef.profile(profile_of(e))
    keys = {k: int(e[k]) for k in ("max_num_seqs", "max_num_batched_tokens") if k in e}
    return replace(p, **keys) if keys else p  # type: ignore[arg-type]


def _batch(e: dict[str, Any], p: ef.EngineProfile, seq_tokens: int) -> int:
    """A measurement's batch: a number, or "fit": as many sequences as the KV cache (and engine) holds."""
    if e.get("batch_size", 1) != "fit":
        return int(e.get("batch_size", 1))
    return bm.in_flight(schedule(e), *_setup(e), seq_tokens)  # the ceiling runs this schedule too


def _decode_rate(e: dict[str, Any], p: ef.EngineProfile) -> float:
    return bm.decode_rate(p, *_setup(e), int(e["context_tokens"]), _batch(e, p, int(e["context_tokens"])))


def _prefill_ms(e: dict[str, Any], p: ef.EngineProfile) -> float:
    m, g, f = _setup(e)
    seqs = [(int(e["context_tokens"]), 0)] * _batch(e, p, int(e["context_tokens"]))
    return cm.step_time(m, g, seqs, **f.kw(), eff=p).time_s * 1e3


SERVED = ("arrival", "lengths", "requests")  # what a serving-level row must state (served_benchmarks.py)


def _served(e: dict[str, Any], p: ef.EngineProfile) -> float:
    """A serving-level row's figure from the event engine under the row's own conditions."""
    need = SERVED if e.get("arrival") != "batch" else ("arrival", "lengths", "batch_size")
    if missing := [k for k in need if k not in e]:
        raise ValueError(f"measurement '{e['id']}': a serving-level row needs {', '.join(missing)}")
    if e.get("requests") == "batch":  # one static batch: the row's batch (in-flight batching off)
        e = dict(e, requests=_batch(e, p, int(e["input_tokens"]) + int(e["output_tokens"])))
    return sb.run(e, p, schedule(e))


def _offline(e: dict[str, Any], p: ef.EngineProfile) -> float:
    tp = int(e.get("tp", 1))
    total = _served(e, p) * (int(e.get("num_gpus", tp)) // tp)  # every replica serves as one does
    return total / int(e.get("num_gpus", tp)) if e.get("per_gpu") else total


def _matvec_stream(e: dict[str, Any], p: ef.EngineProfile) -> float:
    """GB/s a one-token (matrix-vector) decode step streams: its bytes over its memory time."""
    m, g, f = _setup(e)
    seqs = [(1, int(e["context_tokens"]))]
    real, ideal = (cm.step_time(m, g, seqs, **f.kw(), eff=x).memory_s for x in (p, ef.ceiling(p)))
    return g.hbm_bandwidth_GBps * ideal / real


Predict = Callable[[dict[str, Any], ef.EngineProfile], float]
# Each quantity a measurement can name, as a function of (measurement, engine profile).
PREDICTIONS: dict[str, Predict] = {
    "decode_tokens_per_s": _decode_rate,
    "decode_step_ms": lambda e, p: 1e3 * _batch(e, p, int(e["context_tokens"])) / _decode_rate(e, p),
    "prefill_ms": _prefill_ms,
    "offline_output_tokens_per_s": _offline,
    "prompt_tokens_per_s": lambda e, p: bm.prompt_rate(p, *_setup(e), int(e["prompt_tokens"]), int(e["ubatch"])),
    "matvec_stream_GBps": _matvec_stream,
    "batch_latency_s": _served,
    "median_tpot_ms": lambda e, p: _served(e, p) * 1e3,
    "median_ttft_ms": lambda e, p: _served(e, p) * 1e3,
    "weight_GiB": lambda e, p: cm.weight_bytes(models()[e["model"]], e.get("weight_dtype", "bf16")) / cm.GiB,
    "params_B": lambda e, p: cm.param_counts(models()[e["model"]]).total / 1e9,
    "kv_bytes_per_token": lambda e, p: cm.kv_bytes_per_token(models()[e["model"]], e.get("kv_dtype", "bf16")),
    "kv_GiB_per_sequence": lambda e, p: (
        cm.kv_bytes_per_sequence(models()[e["model"]], e["context_tokens"], e.get("kv_dtype", "bf16")) / cm.GiB
    ),
    "ridge_flop_per_byte": lambda e, p: cm.ridge_point(gpus()[e["gpu"]]) or 0.0,
}


def _as_run(fn: Predict) -> Predict:
    """The prediction with the profile as the row's engine ran: a row with `fused_layers` (its engine
    compiles each layer's small kernels together, e.g. gpt-fast's torch.compile of the whole decode
    step) pays no per-layer fixed time (the profile's layer_overhead_us, fitted on an engine that does not)."""
    return lambda e, p: fn(e, replace(p, layer_overhead_us=0.0) if e.get("fused_layers") else p)


PREDICTIONS = {q: _as_run(fn) for q, fn in PREDICTIONS.items()}
RATES = ("decode_tokens_per_s", "offline_output_tokens_per_s", "prompt_tokens_per_s", "matvec_stream_GBps")
TIMES = ("decode_step_ms", "prefill_ms", "batch_latency_s", "median_tpot_ms", "median_ttft_ms")
ROLES = ("calibration", "held_out", "check")


@dataclass(frozen=True)
class Row:
    id: str
    what: str
    unit: str
    conditions: str
    source: str
    role: str  # calibration, held_out, check; or same_source: held out, from a calibration row's source
    engine: str  # the engine profile the prediction used
    quantity: str
    gpu: str
    ideal: float  # every efficiency 1.0, no overhead: the physical ceiling (floor for a time)
    predicted: float  # the engine profile's prediction
    published: float
    group: str = ""  # the source group (source_group): one submission, campaign or paper table
    command: str = ""  # the public command that prints the prediction, or why none can (commands.py)

    @property
    def ratio(self) -> float:
        """Published speed over predicted speed (for a time: predicted / published); 1: the profile fits."""
        if self.quantity in TIMES:
            return self.predicted / self.published
        return self.published / self.predicted

    @property
    def error(self) -> float:
        """Signed relative error as a speed: predicted speed / published speed - 1 (> 0: optimistic);
        for a time, whose speed is its inverse, published / predicted - 1."""
        if self.quantity in TIMES:
            return self.published / self.predicted - 1
        return self.predicted / self.published - 1

    @property
    def is_speed(self) -> bool:
        return self.quantity in RATES or self.quantity in TIMES


def rows() -> list[Row]:
    """Every row with its predictions, computed once per process (the serving rows run the event engine)."""
    return list(_rows())


def source_group(e: dict[str, Any]) -> str:
    """The row's source group: its `group` key, else derived from its source. An MLPerf result is grouped
    by round and submitter (one submission's 1-GPU and 8-GPU systems are one group); any other source by
    its document (the text before its first comma or parenthesis): one campaign, README or paper table."""
    if "group" in e:
        return str(e["group"])
    src = str(e["source"])
    if mlperf := re.search(r"inference_results_(v[\d.]+).*?closed/([^/]+)/", src):
        return f"MLPerf Inference {mlperf.group(1)} {mlperf.group(2)}"
    return re.split(r"[,(]", src, maxsplit=1)[0].strip()


@cache
def _rows() -> tuple[Row, ...]:
    sb.run_ahead(_make_rows)  # the serving rows' engine runs, in parallel processes
    return _make_rows()


def _make_rows() -> tuple[Row, ...]:
    entries = measurements()
    # A group is calibration or held out as a whole: a held-out row from the source of a
    # calibration row (a near-twin of what set a factor) does not count as held out.
    calibrated = {source_group(e) for e in entries if e.get("role") == "calibration"}
    out = []
    for e in entries:
        predict, engine, group = PREDICTIONS[e["quantity"]], profile_of(e), source_group(e)
        role = "same_source" if e.get("role") == "held_out" and group in calibrated else e.get("role", "check")
        out.append(
            Row(
                **{k: e[k] for k in ("id", "what", "unit", "conditions", "source", "quantity")},
                role=role,
                engine=engine,
                gpu=e.get("gpu", ""),
                ideal=predict(e, ef.ceiling(ef.profile(engine))),
                predicted=predict(e, ef.profile(engine)),
                published=float(e["value"]),
                group=group,
                command=cell(e),
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class Stats:
    points: int
    groups: int
    median_abs_error: float
    within_35: float  # share of points with |error| <= 35%
    optimistic: int  # predicted faster than published
    p90_abs_error: float  # nine in ten within this


def stats(rows: list[Row]) -> Stats:
    """The error statistics of `rows` (the band below; crossval's per quantity and engine)."""
    errors = sorted(abs(r.error) for r in rows)
    if not errors:
        return Stats(0, 0, 0.0, 0.0, 0, 0.0)
    return Stats(
        points=len(errors),
        groups=len({r.group for r in rows}),
        median_abs_error=statistics.median(errors),
        within_35=sum(x <= 0.35 for x in errors) / len(errors),
        optimistic=sum(r.error > 0 for r in rows),
        p90_abs_error=errors[math.ceil(0.9 * len(errors)) - 1],  # the smallest bound nine in ten rows meet
    )


@dataclass(frozen=True)
class Band(Stats):
    role: str
    engines: tuple[str, ...]
    gpus: tuple[str, ...]
    median_ratio: float  # published / predicted


def band(role: str = "held_out") -> Band:
    """The error band of the speed rows of one role (the page quotes the held-out band only)."""
    speed = [r for r in rows() if r.role == role and r.is_speed]
    return Band(
        **vars(stats(speed)),
        role=role,
        engines=tuple(sorted({r.engine for r in speed})),
        gpus=tuple(sorted({r.gpu for r in speed})),
        median_ratio=statistics.median(r.ratio for r in speed) if speed else 0.0,
    )


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.1f}" if abs(x) >= 10 else f"{x:.3g}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


HEADER = (
    "| Published point | Unit | Engine profile | Ideal (100% of peak) | Predicted | Published | Error | Conditions "
    "| Source | Public command |",
    "|---|---|---|---:|---:|---:|---:|---|---|---|",
)


def _table(selected: list[Row]) -> list[str]:
    return [*HEADER] + [
        f"| {_cell(r.what)} | {r.unit} | {r.engine if r.is_speed else '-'} | {_num(r.ideal)} | {_num(r.predicted)} "
        f"| {_num(r.published)} | {r.error:+.0%} | {_cell(r.conditions)} | {_cell(r.source)} | {_cell(r.command)} |"
        for r in selected
    ]


def band_text(b: Band) -> str:
    return (
        f"{b.points} {b.role.replace('_', '-')} speed points from {b.groups} source groups "
        f"({len(b.engines)} engines: {', '.join(b.engines)}; "
        f"{len(b.gpus)} GPU models: {', '.join(b.gpus)}): median |error| **{b.median_abs_error:.0%}**, "
        f"**{b.within_35:.0%}** of points within ±35%, median published / predicted speed **{b.median_ratio:.2f}**."
    )


def band_summary() -> str:
    """The band of the validation table, in words, computed on the held-out rows only (never typed)."""
    held, calib, twins = (band(r) for r in ("held_out", "calibration", "same_source"))
    every = rows()
    checks = [r for r in every if r.role == "check" and not r.is_speed]
    worst = max((r for r in every if r.role == "held_out" and r.is_speed), key=lambda r: abs(r.error), default=None)
    miss = f" The largest miss is *{worst.what}* ({worst.error:+.0%})." if worst else ""
    lines = [
        f"- **Speed, held out.** {band_text(held)}{miss}",
        f"- **Speed, calibration.** The {calib.points} rows the factors were fitted on land within "
        f"{calib.median_abs_error:.0%} (median |error|); they are shown apart and do not count in the band.",
        f"- **Speed, same source as a calibration row.** {twins.points} rows were not fitted on but come from "
        f"the submission, campaign or table of a row that was; they land within {twins.median_abs_error:.0%} "
        "(median |error|), which says how much closer a twin of the fit lands than an independent source.",
    ]
    if checks:
        off = max(checks, key=lambda r: abs(r.error))
        lines.append(
            f"- **Sizes and shapes.** The {len(checks)} sizes, counts and course figures agree to within "
            f"**{abs(off.error):.0%}** (the largest difference: *{off.what}*)."
        )
    return "\n".join(lines)


def render_markdown() -> str:
    """The validation page's tables: calibration, held-out and exact checks apart, with the held-out band."""
    same = (
        "A group (one submission, campaign or paper table) is calibration or held out as a whole: these rows "
        "were not fitted on, but share a source with rows that were (the same build, machine or table), so "
        "they are not independent of the fit. " + band_text(band("same_source"))
    )
    lines = [
        "<!-- Generated by scripts/validation_table.py from simulators/data/measurements.toml; do not edit. -->",
        "",
        "Held-out band: " + band_text(band("held_out")),
    ]
    for role, title, intro in (
        ("held_out", "Held out (no row of their source group set a factor)", []),
        ("same_source", "Not fitted, but from a calibration row's source (not counted as held out)", [same, ""]),
        ("calibration", "Calibration (the engine-profile factors were fitted on these)", []),
        ("check", "Sizes, shapes and the course's own figures", []),
    ):
        lines += ["", f"### {title}", "", *intro, *_table([r for r in rows() if r.role == role])]
    lines += [
        "",
        "*Ideal* sets every efficiency to 1.0 and drops the per-step overhead, on the kernel path the engine uses: "
        "a ceiling for a rate, a floor for a time. *Predicted* applies the named engine profile "
        "(`simulators/data/engine_profiles.toml`). *Error* is predicted speed / published speed - 1 (for a time, "
        "published / predicted - 1): positive means the prediction is optimistic. Sizes, parameter counts, KV bytes and ridge points do not depend on efficiency. "
        "*Public command* prints the prediction (`published` takes the row's stated conditions and calls this "
        "table's prediction function; `--set ideal=true` gives *Ideal*); a test runs every command and compares.",
        "",
        "Not checked yet:",
        "",
    ]
    lines += [f"- {_cell(s['what'])}: {s['reason']} ({s['source']})" for s in skipped()]
    return "\n".join(lines) + "\n"
