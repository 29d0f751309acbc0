"""Validation: the cost model's predictions side by side with published figures.

Each published point in data/measurements.toml names a quantity the cost model can predict
(decode speed, prefill time, file size, KV bytes, ridge point...) and the conditions it was
measured under. For each we compute the ideal prediction (every efficiency 1.0: the physical
floor for a time, the ceiling for a rate), the default prediction (the sourced efficiencies of
data/assumptions.toml) and the ratio published / default. A ratio near 1 means the defaults
describe that system; the spread of ratios is the honest error bar of every number the course
computes. Points we cannot check yet are listed with the reason.

`render_markdown()` gives the table the site includes (docs/validation-table.md, written by
scripts/validation_table.py and at build time).
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from . import costmodel as cm
from .catalog import assumptions, gpus, models


@cache
def _data() -> dict[str, Any]:
    text = resources.files("simulators").joinpath("data").joinpath("measurements.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def measurements() -> list[dict[str, Any]]:
    """Every published point, in file order."""
    return list(_data()["measurement"])


def skipped() -> list[dict[str, Any]]:
    """Published points not checked yet, each with its reason."""
    return list(_data().get("skipped", []))


def _formats(e: dict[str, Any], eff: cm.Efficiency) -> dict[str, Any]:
    return {
        "weight_dtype": e.get("weight_dtype", "bf16"),
        "activation_dtype": e.get("activation_dtype"),
        "kv_dtype": e.get("kv_dtype", "bf16"),
        "eff": eff,
        "tp": e.get("tp", 1),
    }


def _batch(e: dict[str, Any]) -> int:
    """The batch of a measurement: a number, or "fit": as many sequences as the KV cache holds."""
    if e.get("batch_size", 1) != "fit":
        return int(e.get("batch_size", 1))
    fit = cm.memory_fit(
        models()[e["model"]],
        gpus()[e["gpu"]],
        num_gpus=e.get("tp", 1),
        weight_dtype=e.get("weight_dtype", "bf16"),
        kv_dtype=e.get("kv_dtype", "bf16"),
    )
    return max(1, fit.kv_token_capacity // int(e["context_tokens"]))


def _decode(e: dict[str, Any], eff: cm.Efficiency) -> tuple[int, cm.StepTime]:
    b = _batch(e)
    step = cm.decode_step_time(models()[e["model"]], gpus()[e["gpu"]], [e["context_tokens"]] * b, **_formats(e, eff))
    return b, step


def _decode_rate(e: dict[str, Any], eff: cm.Efficiency) -> float:
    b, step = _decode(e, eff)
    return b / step.time_s


def _decode_rate_per_gpu(e: dict[str, Any], eff: cm.Efficiency) -> float:
    return _decode_rate(e, eff) / float(e.get("tp", 1))


def _prefill_ms(e: dict[str, Any], eff: cm.Efficiency) -> float:
    m, gpu = models()[e["model"]], gpus()[e["gpu"]]
    return cm.step_time(m, gpu, [(e["context_tokens"], 0)] * _batch(e), **_formats(e, eff)).time_s * 1e3


# Each quantity a measurement can name, as a function of (measurement, efficiency).
PREDICTIONS: dict[str, Callable[[dict[str, Any], cm.Efficiency], float]] = {
    "decode_tokens_per_s": _decode_rate,
    "decode_tokens_per_s_per_gpu": _decode_rate_per_gpu,
    "decode_step_ms": lambda e, eff: _decode(e, eff)[1].time_s * 1e3,
    "prefill_ms": _prefill_ms,
    "weight_GiB": lambda e, eff: cm.weight_bytes(models()[e["model"]], e.get("weight_dtype", "bf16")) / cm.GiB,
    "params_B": lambda e, eff: cm.param_counts(models()[e["model"]]).total / 1e9,
    "kv_bytes_per_token": lambda e, eff: cm.kv_bytes_per_token(models()[e["model"]], e.get("kv_dtype", "bf16")),
    "kv_GiB_per_sequence": lambda e, eff: (
        cm.kv_bytes_per_sequence(models()[e["model"]], e["context_tokens"], e.get("kv_dtype", "bf16")) / cm.GiB
    ),
    "ridge_flop_per_byte": lambda e, eff: cm.ridge_point(gpus()[e["gpu"]]) or 0.0,
}


@dataclass(frozen=True)
class Row:
    id: str
    what: str
    kind: str
    unit: str
    conditions: str
    source: str
    ideal: float  # every efficiency 1.0
    default: float  # the sourced default efficiencies
    published: float

    @property
    def ratio(self) -> float:
        """Published over default prediction: 1 means the defaults describe this system."""
        return self.published / self.default


def rows() -> list[Row]:
    out = []
    for e in measurements():
        predict = PREDICTIONS[e["quantity"]]
        out.append(
            Row(
                id=e["id"],
                what=e["what"],
                kind=e["kind"],
                unit=e["unit"],
                conditions=e["conditions"],
                source=e["source"],
                ideal=predict(e, cm.IDEAL),
                default=predict(e, cm.default_efficiency()),
                published=float(e["value"]),
            )
        )
    return out


def _num(x: float) -> str:
    if x == int(x) and abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}" if abs(x) < 10 else f"{x:.1f}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown() -> str:
    """The validation page's table: ideal, default, published, ratio and source for every point."""
    eff = assumptions()["efficiency"]
    lines = [
        "<!-- Generated by scripts/validation_table.py from simulators/data/measurements.toml; do not edit. -->",
        "",
        "| Published point | Unit | Ideal (100% of peak) | Default prediction | Published | Published / default | Kind | Conditions | Source |",
        "|---|---|---:|---:|---:|---:|---|---|---|",
    ]
    for r in rows():
        lines.append(
            f"| {_cell(r.what)} | {r.unit} | {_num(r.ideal)} | {_num(r.default)} | {_num(r.published)} | {r.ratio:.2f} "
            f"| {_cell(r.kind)} | {_cell(r.conditions)} | {_cell(r.source)} |"
        )
    lines += [
        "",
        f"*Ideal* sets the achieved fractions of peak bandwidth and FLOPs to 1.0: a floor for a time, a ceiling for a rate. "
        f"*Default* uses the course's sourced efficiencies (bandwidth {eff['bandwidth']:.2f}, compute {eff['compute']:.2f}; "
        "`simulators/data/assumptions.toml`). A ratio above 1 means the real system did better than the default predicts, "
        "below 1 worse. Sizes, parameter counts, KV bytes and ridge points do not depend on efficiency, so ideal and default agree.",
        "",
        "Not checked yet:",
        "",
    ]
    lines += [f"- {_cell(s['what'])}: {s['reason']} ({s['source']})" for s in skipped()]
    return "\n".join(lines) + "\n"
