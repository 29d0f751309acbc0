"""The fit of the engine-profile constants that say "fitted", and its leave-one-group-out refits.

Each `Fit` solves one constant of one profile so that its calibration rows' predictions equal their
published values (several rows: the geometric mean of their predicted / published speed ratios
is 1), holding the other constants where they are; passes repeat until the constants settle (they
interact weakly: one row is decode-bound, another compute-bound). Only calibration rows are read.

`fit(without=GROUP)` is the same fit with every row of one source group left out: the
cross-validation on the validation page scores that group with it (validation.cross_validated),
so no row is predicted by a constant its own source set. A constant left with no row falls back
to its prior: the median of the same constant on the other engines (their fitted value where
fitted), or the dataclass default where no other engine has it. A profile reads only its own rows,
so a refit changes only the profiles with a fitted row in the left-out group (and the constants
tied to them: SGLang takes vLLM's bandwidth and FP8 GEMM share, engine_profiles.toml).

scripts/fit_engine_profiles.py prints the full fit; its values, rounded, are the TOML's.
"""

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from functools import cache
from typing import Any

from ..core import efficiency as ef
from . import validation


@dataclass(frozen=True)
class Fit:
    profile: str
    factor: str
    rows: tuple[str, ...]  # calibration row ids
    lo: float
    hi: float


FITS: tuple[Fit, ...] = (
    Fit("vllm", "bandwidth", ("torchao-llama3-8b-bf16-a100",), 0.3, 1.0),
    Fit("vllm", "gemm_fp8", ("mlperf41-llama2-70b-offline-8x-mi300x-vllm",), 0.05, 1.0),
    Fit("trtllm", "bandwidth", ("trtllm-llama31-8b-fp8-h100-sxm-128-2048",), 0.3, 1.0),
    Fit("trtllm", "gemm_fp8", ("trtllm-llama31-8b-fp8-h100-sxm-2048-128",), 0.05, 1.0),
    Fit("llamacpp", "bandwidth", ("llamacpp-llama3-8b-q4_0-rtx3090-pp512-ub1",), 0.3, 1.0),
    Fit("llamacpp", "gemm_int8", ("llamacpp-llama3-8b-q4_0-rtx4090-pp512-ub512",), 0.05, 1.0),
    Fit("llamacpp", "gemm_m_half", ("llamacpp-llama3-8b-q4_0-rtx4090-pp512-ub16",), 1.0, 400.0),
    Fit(
        "llamacpp",
        "matvec_bytes_per_sm_cycle",
        ("llamacpp-stream-llama3-8b-a100-sxm-tg512", "llamacpp-stream-llama3-8b-h100-pcie-tg512"),
        0.5,
        40.0,
    ),
    Fit("llamacpp-metal", "bandwidth", ("llamacpp-metal-llama3-8b-f16-m2-ultra-tg512",), 0.3, 1.0),
    Fit("llamacpp-metal", "layer_overhead_us", ("llamacpp-metal-llama3-8b-q4_k_m-m2-ultra-tg512",), 0.0, 400.0),
    Fit("llamacpp-metal", "gemm_bf16", ("llamacpp-metal-llama3-8b-f16-m2-ultra-pp512",), 0.05, 1.0),
    Fit(
        "vllm",
        "layer_overhead_us",
        (
            "vllm060-llama31-8b-a100-sharegpt-rps4-tpot",
            "vllm060-llama31-70b-h100-tp4-sharegpt-rps4-tpot",
            "vllm-ci-latency-llama31-8b-h200-b8",
            "vllm-ci-latency-llama3-70b-h200-tp4-b8",
        ),
        0.0,
        400.0,
    ),
    Fit(
        "sglang",
        "layer_overhead_us",
        ("sglang030-llama31-8b-a100-sharegpt-rps4-tpot", "sglang030-llama31-70b-h100-tp4-sharegpt-rps4-tpot"),
        0.0,
        400.0,
    ),
)
# Constants that make a rate lower (a time longer) as they grow: the solver looks the other way.
DECREASING = ("gemm_m_half", "layer_overhead_us")
# (profile, constant) -> the (profile, constant) it copies (engine_profiles.toml: "the vLLM factor").
TIES: dict[tuple[str, str], tuple[str, str]] = {
    ("sglang", "bandwidth"): ("vllm", "bandwidth"),
    ("sglang", "gemm_fp8"): ("vllm", "gemm_fp8"),
}
Keys = set[tuple[str, str]]  # (profile, constant) pairs
TOLERANCE = 1e-3  # |log(predicted / published)| at which a constant counts as solved (0.1%)


def _entries() -> dict[str, dict[str, Any]]:
    return {e["id"]: e for e in validation.measurements()}


def speeds(p: ef.EngineProfile, e: dict[str, Any]) -> tuple[float, float]:
    """(predicted, published) as speeds: a time's pair is inverted, so "above" means optimistic."""
    if e.get("role") != "calibration":
        raise ValueError(f"{e['id']} is not a calibration row: refusing to fit on it")
    pred, published = validation.PREDICTIONS[e["quantity"]](e, p), float(e["value"])
    return (published, pred) if e["quantity"] in validation.TIMES else (pred, published)


def solve(g: Callable[[float], float], x0: float, lo: float, hi: float, increasing: bool) -> float:
    """A root of the monotone g in [lo, hi]: secant steps from x0, bisection when a step leaves the
    bracket (event-engine rows make g a staircase at fine scale). Ends within TOLERANCE or at a bound."""
    a, b = lo, hi
    x, gx = min(max(x0, lo), hi), g(min(max(x0, lo), hi))
    prev: tuple[float, float] | None = None
    for _ in range(40):
        if abs(gx) < TOLERANCE or b - a < 1e-9 * max(1.0, abs(hi)):
            return x
        a, b = (x, b) if (gx < 0) == increasing else (a, x)  # the root stays in [a, b]
        step = None
        if prev is not None and gx != prev[1]:
            step = x - gx * (x - prev[0]) / (gx - prev[1])
        elif prev is None:
            step = x * (1.02 if (gx < 0) == increasing else 0.98) if x else (a + b) / 2
        nxt = step if step is not None and a < step < b else (a + b) / 2
        prev = (x, gx)
        x, gx = nxt, g(nxt)
    return x


def _prior(profiles: dict[str, ef.EngineProfile], pid: str, factor: str, fitted: Keys, gone: Keys) -> Any:
    """A constant with no row left: the median of its value on the other engines of its platform (their fitted ones
    where any other engine fits it), else the dataclass default. `gone`: constants whose rows were
    all left out, and copies of the constant itself, never serve as a prior."""
    others = [q for q in profiles if q != pid and (q, factor) not in gone and TIES.get((q, factor), ("", ""))[0] != pid]
    # Another platform's kernels (llama.cpp's Metal backend) say nothing of a CUDA engine's share of
    # peak, nor the reverse: a prior comes from the same platform's engines where there are any.
    others = [q for q in others if profiles[q].platform == profiles[pid].platform] or others
    pool = [q for q in others if (q, factor) in fitted] or others
    if values := [getattr(profiles[q], factor) for q in pool]:
        return statistics.median(values)
    return next(f.default for f in fields(ef.EngineProfile) if f.name == factor)


def affected(group: str) -> set[str]:
    """The profiles a refit without `group` changes: those with a fitted row in it, and their ties."""
    entries = _entries()
    out = {f.profile for f in FITS if any(validation.source_group(entries[r]) == group for r in f.rows)}
    return out | {q for (q, _), (src, _) in TIES.items() if src in out}


@cache
def fit(without: str | None = None, passes: int = 8) -> dict[str, ef.EngineProfile]:
    """Every fitted profile, solved on the calibration rows (less those of source group `without`),
    starting from the TOML's values. Other profiles come back as the TOML has them."""
    entries = _entries()
    pids = {f.profile for f in FITS} | {q for q, _ in TIES}
    profiles = {pid: ef.profile(pid) for pid in pids}
    todo = affected(without) if without else pids
    rows_of = {f: [entries[r] for r in f.rows if validation.source_group(entries[r]) != without] for f in FITS}
    active = [(f, rows) for f, rows in rows_of.items() if rows and f.profile in todo]
    gone = {(f.profile, f.factor) for f, rows in rows_of.items() if not rows and f.profile in todo}
    fitted = {(f.profile, f.factor) for f in FITS} - gone
    for pid, factor in gone:  # a prior reads only constants that keep rows, which this loop leaves alone
        profiles[pid] = with_value(profiles[pid], factor, _prior(profiles, pid, factor, fitted, gone))
    _tie(profiles)
    for _ in range(passes):
        moved = 0.0
        for f, rows in active:
            p = profiles[f.profile]
            old = getattr(p, f.factor)

            def g(x: float, p: ef.EngineProfile = p, f: Fit = f, rows: list[dict[str, Any]] = rows) -> float:
                """Mean log(predicted / published speed) over the rows at x: 0 when the constant fits them."""
                q = with_value(p, f.factor, x)
                return sum(math.log(a / b) for a, b in (speeds(q, e) for e in rows)) / len(rows)

            new = solve(g, old, f.lo, f.hi, f.factor not in DECREASING)
            profiles[f.profile] = with_value(p, f.factor, new)
            _tie(profiles)
            moved = max(moved, abs(new - old) / max(abs(old), 1e-9))
        if moved < TOLERANCE:
            break
    return profiles


def _tie(profiles: dict[str, ef.EngineProfile]) -> None:
    for (q, factor), (src, src_factor) in TIES.items():
        profiles[q] = with_value(profiles[q], factor, getattr(profiles[src], src_factor))


def with_value(p: ef.EngineProfile, factor: str, value: Any) -> ef.EngineProfile:
    """The profile with one constant set (by name: the fits name their constant)."""
    return replace(p, **{factor: value})


def calibration_groups() -> list[str]:
    """The source groups that hold a calibration row, in file order."""
    calibration = [e for e in validation.measurements() if e.get("role") == "calibration"]
    return list(dict.fromkeys(validation.source_group(e) for e in calibration))
