"""Leave-one-group-out cross-validation of the engine profiles: the error a reader should expect.

A calibration row is predicted in-sample: a constant was solved to make it right. Scoring it so
flatters the model, and so does scoring a row of the same source (one submission, campaign or
paper table: validation.source_group), which shares a build, machine or table with it. Here every
row of a calibration group (its calibration and same-source rows) is predicted by the fit made
without that whole group (fitting.fit(without=group)); held-out rows, which no constant read, are
predicted by the full fit, as the page shows them. The statistics per quantity and per engine are
then those of predictions no row's own source set.
"""

from dataclasses import dataclass, replace
from functools import cache

from . import fitting, validation
from . import served_benchmarks as sb
from .validation import Row, Stats, stats

# The quantity a lesson states, for each measured quantity (timing-free rows are not scored here).
# A TTFT under load (queueing, steps shared with other requests) is a serving latency; a prefill
# alone is the TTFT of a request alone on the GPU, which is what the lessons' running example states.
QUANTITY_CLASS = dict.fromkeys(("decode_tokens_per_s", "decode_step_ms", "matvec_stream_GBps"), "decode step")
QUANTITY_CLASS |= dict.fromkeys(("prefill_ms", "prompt_tokens_per_s"), "prefill (TTFT alone)")
QUANTITY_CLASS["offline_output_tokens_per_s"] = "throughput (offline, server)"
SERVING = "serving latency (TTFT, TPOT at a rate; a batch)"
QUANTITY_CLASS |= dict.fromkeys(("median_ttft_ms", "median_tpot_ms", "batch_latency_s"), SERVING)
CLASSES = tuple(dict.fromkeys(QUANTITY_CLASS.values()))
# The short name a lesson quotes each class by (api.held_out_band: `heldout.ttft_median_error`...).
BAND_KEYS = dict(zip(("decode", "ttft", "throughput", "serving"), CLASSES, strict=True))


@dataclass(frozen=True)
class Scored:
    fit: Row  # the row as the page shows it: predicted by the shipped (full-fit) profile
    cv: Row  # the same row predicted without its source group in the fit (held out: the same)

    @property
    def quantity_class(self) -> str:
        return QUANTITY_CLASS.get(self.fit.quantity, self.fit.quantity)


@cache
def _scored() -> tuple[Scored, ...]:
    refits = {r.group for r in validation.rows() if _refit(r)}
    for group in sorted(refits):  # the refits first (each solve waits on the last), then the rows'
        fitting.fit(without=group)  # engine runs ahead, in parallel processes
    sb.run_ahead(_make_scored)
    return _make_scored()


def _refit(r: Row) -> bool:
    """Whether the row is predicted by a refit without its group (a calibration group's speed row)."""
    speed = r.is_speed and r.role != "check"
    return speed and r.group in fitting.calibration_groups() and r.engine in fitting.affected(r.group)


def _make_scored() -> tuple[Scored, ...]:
    entries = {e["id"]: e for e in validation.measurements()}

    def held_out(r: Row) -> Row:
        if not _refit(r):
            return r
        p = fitting.fit(without=r.group)[r.engine]
        return replace(r, predicted=validation.PREDICTIONS[r.quantity](entries[r.id], p))

    return tuple(Scored(r, held_out(r)) for r in validation.rows() if r.is_speed and r.role != "check")


def scored() -> list[Scored]:
    """Every speed row with its in-sample and its cross-validated prediction (computed once)."""
    return list(_scored())


def by(key: str) -> dict[str, tuple[Stats, Stats]]:
    """(cross-validated, in-sample) statistics per quantity class ("quantity"), engine ("engine"),
    source group ("group"), or all rows ("all")."""
    groups: dict[str, list[Scored]] = {}
    for s in scored():
        k = {"quantity": s.quantity_class, "engine": s.fit.engine, "group": s.fit.group, "all": "all"}[key]
        groups.setdefault(k, []).append(s)
    order = {c: i for i, c in enumerate(CLASSES)}
    return {
        k: (stats([s.cv for s in v]), stats([s.fit for s in v]))
        for k, v in sorted(groups.items(), key=lambda kv: (order.get(kv[0], 99), kv[0]))
    }


TARGET = (0.20, 0.80, 0.30)  # issue 29: median |error| <= 20%, >= 80% within +-35%, no quantity above 30%


def _line(name: str, cv: Stats, fit: Stats) -> str:
    return (
        f"| {name} | {cv.points} | {cv.groups} | **{cv.median_abs_error:.0%}** | {cv.p90_abs_error:.0%} "
        f"| **{cv.within_35:.0%}** | {cv.optimistic} of {cv.points} | {fit.median_abs_error:.0%} | {fit.within_35:.0%} |"
    )


HEADER = (
    "| Rows | Points | Groups | Median \\|error\\|, cross-validated | 9 in 10 within | Within ±35% "
    "| Optimistic | Median \\|error\\|, in-sample fit | Within ±35%, in-sample |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
)


def render_markdown() -> str:
    """The cross-validated error per quantity and per engine beside the in-sample fit, and the target."""
    overall_cv, overall_fit = by("all")["all"]
    quantities = by("quantity")
    worst, worst_error = max(((k, cv.median_abs_error) for k, (cv, _) in quantities.items()), key=lambda kv: kv[1])
    med, within, per_q = TARGET
    overall_met = overall_cv.median_abs_error <= med and overall_cv.within_35 >= within
    met = overall_met and worst_error <= per_q
    overall = (
        f"{'met' if overall_met else 'missed'} overall ({overall_cv.median_abs_error:.0%} median, "
        f"{overall_cv.within_35:.0%} within ±35%)"
    )
    per = f"the worst quantity is {worst} at {worst_error:.0%}" + ("" if worst_error > per_q else ", within its bound")
    lines = [
        "### Cross-validated error (leave one source group out)",
        "",
        "Every row of a calibration group is predicted by the constants refitted without that whole group "
        "(`simulators/benchmark/fitting.py`: a constant left with no row takes the median of the other engines' "
        "value on its platform); held-out rows by the shipped profiles. *In-sample* is the same rows as the tables below show them. "
        "*Optimistic*: predicted faster than published.",
        "",
        *HEADER,
        _line("**All speed rows**", overall_cv, overall_fit),
        *(_line(k, cv, fit) for k, (cv, fit) in quantities.items()),
        *(_line(f"engine: {k}", cv, fit) for k, (cv, fit) in by("engine").items()),
        "",
        f"Target (issue 29): cross-validated median |error| at most {med:.0%} and at least {within:.0%} within ±35% "
        f"overall, no quantity above {per_q:.0%}. " + ("**Met.**" if met else f"**Not met**: {overall}; {per}."),
    ]
    return "\n".join(lines) + "\n\n" + render_groups()


MISS = 0.35  # a source group whose cross-validated median |error| is above this misses: the page says why


def _moves(group: str) -> str:
    """The constants the refit without `group` moves, as computed: "llamacpp gemm_int8 0.306 -> 0.45"."""
    full, refit, todo = fitting.fit(), fitting.fit(without=group), fitting.affected(group)
    pairs = [(f, getattr(full[f.profile], f.factor), getattr(refit[f.profile], f.factor)) for f in fitting.FITS]
    moved = [
        f"{f.profile} `{f.factor}` {a:.3g} → {b:.3g}"
        for f, a, b in pairs
        if f.profile in todo and abs(b - a) > 0.005 * max(abs(a), 1e-9)  # not the refit's own wobble
    ]
    return ", ".join(moved) or "nothing"


def render_groups() -> str:
    """Each source group's cross-validated error; a group that misses gets its cause (measurements.toml's
    [[group_note]]) and the constants its absence moves. A missing cause is an error, not a blank."""
    notes = {n["group"]: n["cause"] for n in validation.group_notes()}
    groups = sorted(by("group").items(), key=lambda kv: -kv[1][0].median_abs_error)
    lines = [
        "#### Per source group",
        "",
        f"A group whose cross-validated median |error| is above {MISS:.0%} misses; below the table, each miss "
        "names its cause and the constants that leaving it out moves (computed by the refit).",
        "",
        "| Source group | Points | Median \\|error\\|, cross-validated | Within ±35% | Optimistic | Left out of the fit |",
        "|---|---:|---:|---:|---:|---|",
    ]
    misses = []
    calibrated = set(fitting.calibration_groups())
    for g, (cv, _) in groups:
        how = "refit without it" if g in calibrated else "held out (never read)"
        lines.append(
            f"| {g} | {cv.points} | {cv.median_abs_error:.0%} | {cv.within_35:.0%} | {cv.optimistic} of {cv.points} | {how} |"
        )
        if cv.median_abs_error > MISS:
            if g not in notes:
                raise ValueError(
                    f"source group {g!r} misses (cross-validated median |error| {cv.median_abs_error:.0%} > {MISS:.0%}) "
                    "and simulators/data/measurements.toml has no [[group_note]] naming its cause"
                )
            misses.append(f"- **{g}** ({cv.median_abs_error:.0%}): {notes[g]} Left out, the refit moves {_moves(g)}.")
    return "\n".join([*lines, "", *misses]) + "\n"


def page_markdown() -> str:
    """docs/validation-table.md: the cross-validated section, then the per-row tables."""
    head, rest = validation.render_markdown().split("\n", 1)
    return f"{head}\n\n{render_markdown()}{rest}"


def band(quantity: str | None = None) -> Stats:
    """The cross-validated band of one quantity class (or all speed rows) a lesson may quote."""
    return stats([s.cv for s in scored() if quantity is None or s.quantity_class == quantity])
