"""Speculative decoding: a cheap draft guesses, the target model checks several tokens in one pass.

Model: a draft model proposes `draft_tokens` (gamma) tokens one by one; the target model then
scores all of them, plus one more position, in a single forward pass of gamma + 1 tokens per
sequence, and keeps the longest accepted prefix plus one token of its own. With each draft token
accepted independently with probability alpha, the tokens gained per target pass are
(Leviathan et al. 2023, eq. 1)

    E = (1 - alpha^(gamma + 1)) / (1 - alpha)        (E = gamma + 1 when alpha = 1)

and a seeded Monte Carlo over many verification rounds checks it. One round costs gamma draft
passes, each `draft_cost_ratio` (c) times one target decode step, plus the verify pass; both the
decode step and the verify pass come from costmodel.step_time, so the verify pass is almost as
cheap as one decode step while the batch is memory-bound and costs up to (gamma + 1) times as
much once it is compute-bound:

    speedup = E * t_step / (gamma * c * t_step + t_verify)

Speculation spends idle compute; batching spends the same idle compute, so the gain shrinks as
the batch grows towards the ridge point (course seed 000, open problem 3).

Assumptions: acceptance is independent of position and of the batch; the draft's cost scales
with the batch like the target's; sampling is lossless (Chen et al. 2023), so quality is unchanged.

References: 1) Leviathan, Kalman, Matias 2023, Fast Inference from Transformers via Speculative
Decoding (arXiv 2211.17192), eq. 1 and section 3.4; 2) Chen et al. 2023, Accelerating Large
Language Model Decoding with Speculative Sampling (arXiv 2302.01318).
"""

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core import capacity
from ..core import costmodel as cm
from ..core.capacity import BATCH_GRID
from ..params import ModelGpu, context_param, engine_param, param
from ..plotting import LOG, chart, line, markers
from ..results_cache import Keep, for_call

TITLE = "Speculative decoding: draft, verify, accept"
DESCRIPTION = (
    "Tokens gained per target pass, the wall-clock speed-up, the best draft length, and how batching eats the gain."
)
METRICS = {
    "speedup": ("Wall-clock speed-up over plain decoding", "x"),
    "best_draft_tokens": ("Best draft length (tokens)", ""),  # "1", not "1 tokens"
    "best_speedup": ("Speed-up at the best draft length", "x"),
    "expected_tokens_per_step": ("Expected tokens per target pass (closed form)", "tokens"),
    "itl_s": ("Effective inter-token latency", "s"),
    "itl_baseline_s": ("Inter-token latency without speculation", "s"),
    "verify_cost_ratio": ("Verify pass / one decode step", "x"),
    "monte_carlo_tokens_per_step": ("Tokens per target pass (Monte Carlo)", "tokens"),
    "monte_carlo_stderr": ("Monte Carlo standard error", "tokens"),
    "verify_step_s": ("Verify pass (gamma + 1 tokens per sequence)", "s"),
    "draft_s": ("Draft passes per round", "s"),
}

MAX_DRAFT = 16
NUM_ROUNDS = 4000  # Monte Carlo verification rounds; standard error about 0.02 tokens at alpha 0.8
SHORT_CONTEXT = 256  # a short chat turn, drawn next to the chosen context for contrast

VIEWS = [("batch", "Speed-up vs batch size"), ("draft", "Gain vs draft length")]


@dataclass(frozen=True)
class Params(ModelGpu):
    # Probability that the target accepts one draft token (alpha); 1 means the draft is never wrong.
    acceptance_rate: float = param(0.8, label="Acceptance rate (alpha)", min=0.0, max=1.0, step=0.01)
    # Tokens the draft proposes before each verify pass (gamma).
    draft_tokens: int = param(4, label="Draft length (gamma)", unit="tokens", min=1, max=MAX_DRAFT, step=1)
    # Time of one draft pass over one target decode step (c); small draft models are 0.02-0.1.
    draft_cost_ratio: float = param(0.05, label="Draft cost ratio (c)", min=0.0, max=1.0, step=0.01)
    # Sequences decoded together; each one is speculated and verified.
    batch_size: int = param(1, label="Batch size", unit="sequences", min=1, max=1024, step=1, log=True)
    # Tokens already in each sequence's KV cache.
    context_tokens: int = context_param(step=1)
    # Peak bandwidth and FLOPs (the physical floor) instead of the sourced achieved fractions.
    ideal: bool = param(False, label="Ideal hardware (100% of peak)")
    engine: str = engine_param()


def expected_tokens(alpha: float, gamma: int) -> float:
    """Leviathan et al. eq. 1: expected tokens per target pass (costmodel.speculative_tokens_per_pass)."""
    return cm.speculative_tokens_per_pass(alpha, gamma)


def simulate_tokens(alpha: float, gamma: int, rounds: int, rng: random.Random) -> list[int]:
    """Tokens gained in each of `rounds` rounds: accepted draft tokens (to the first rejection) plus one."""
    return [next((k for k in range(gamma) if rng.random() >= alpha), gamma) + 1 for _ in range(rounds)]


StepTimes = tuple[cm.StepTime, list[cm.StepTime]]


def _kept_times(keep: Keep, p: Params, ctx: int) -> Callable[[int], StepTimes]:
    """By batch at one context: one decode step and the verify pass for every draft length 1..MAX_DRAFT,
    kept in the caller's memo: they do not depend on alpha, gamma or c, so changing those prices nothing."""
    # The model and GPU may be a reader's config objects (dicts): the key holds them as canonical JSON.
    key = json.dumps(["step times", p.model, p.gpu, p.ideal, p.engine, ctx], sort_keys=True)
    table: dict[int, StepTimes] = keep(key, dict)
    m, gpu, eff = *p.resolved(), cm.efficiency(p.ideal, p.engine)

    def times(batch: int) -> StepTimes:
        if batch not in table:
            step = cm.step_time(m, gpu, [(1, ctx)] * batch, eff=eff)
            verify = [cm.step_time(m, gpu, [(g + 1, ctx)] * batch, eff=eff) for g in range(1, MAX_DRAFT + 1)]
            table[batch] = step, verify
        return table[batch]

    return times


def speedup(alpha: float, gamma: int, c: float, t_step: float, t_verify: float) -> float:
    """Tokens per second with over without speculation: t_step / time per token with it."""
    return t_step / cm.speculative_time_per_token_s(t_step, t_verify, gamma, c, alpha)


def _at_batch(times: Callable[[int], StepTimes], batch: int, a: float, g: int, c: float) -> dict[str, float]:
    """Speed-up at draft length g and at the best draft length for one batch (zeros for batch 0)."""
    if batch < 1:
        return {"batch": 0, "speedup": 0.0, "best_speedup": 0.0}
    bs, bv = times(batch)
    per_gamma = [speedup(a, k, c, bs.time_s, bv[k - 1].time_s) for k in range(1, MAX_DRAFT + 1)]
    return {"batch": batch, "speedup": per_gamma[g - 1], "best_speedup": max(per_gamma)}


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> dict[str, Any]:
    m, gpu = p.resolved()
    a, g, c = p.acceptance_rate, p.draft_tokens, p.draft_cost_ratio
    times, short_times = (_kept_times(for_call(keep), p, ctx) for ctx in (p.context_tokens, SHORT_CONTEXT))
    step, verify = times(p.batch_size)
    t_step, t_verify = step.time_s, verify[g - 1].time_s
    gammas = list(range(1, MAX_DRAFT + 1))
    s_by_gamma = [speedup(a, k, c, t_step, verify[k - 1].time_s) for k in gammas]
    best = max(gammas, key=lambda k: s_by_gamma[k - 1])
    draws = simulate_tokens(a, g, NUM_ROUNDS, random.Random(seed))
    mc = sum(draws) / NUM_ROUNDS
    by_batch = [_at_batch(times, b, a, g, c) for b in BATCH_GRID]
    verify_bound_batch = next((b for b in BATCH_GRID if times(b)[1][g - 1].bound == "compute"), None)
    # The most sequences whose KV cache fits next to the weights at this context, as vLLM counts (0: none).
    fit_batch = capacity.most_sequences(m, gpu, p.context_tokens)
    # The summary's headline batch: the largest one memory holds (at most the sweep's top), not the
    # sweep's top, which can lie past memory.
    at_fit = _at_batch(times, min(fit_batch, BATCH_GRID[-1]), a, g, c)
    short_at_fit = _at_batch(short_times, min(capacity.most_sequences(m, gpu, SHORT_CONTEXT), BATCH_GRID[-1]), a, g, c)
    e = expected_tokens(a, g)
    round_s = g * c * t_step + t_verify
    notes, batch_notes = [], []
    if verify_bound_batch is None:
        batch_notes.append(
            f"The verify pass stays memory-bound up to batch {BATCH_GRID[-1]:,}: at {p.context_tokens:,} tokens of context "
            "reading the KV cache dominates, and checking more tokens against the same cache is almost free."
        )
    if s_by_gamma[best - 1] < 1:
        notes.append("No draft length pays here: the drafts and the verify pass cost more than the tokens they save.")
    return {
        **p.stated("acceptance_rate", "draft_tokens", "draft_cost_ratio", "batch_size", "context_tokens"),
        "step_bound": step.bound,
        "verify_bound_batch": verify_bound_batch,
        "fit_batch": fit_batch,
        "gammas": gammas,
        "expected_by_gamma": [expected_tokens(a, k) for k in gammas],
        "speedup_by_gamma": s_by_gamma,
        "batch_grid": list(BATCH_GRID),
        "at_fit": at_fit,  # {batch, speedup, best_speedup} at the largest batch that fits (batch 0: none)
        "short_at_fit": short_at_fit,  # the same at SHORT_CONTEXT
        "speedup_by_batch": [x["speedup"] for x in by_batch],
        "best_speedup_by_batch": [x["best_speedup"] for x in by_batch],
        "short_context_speedup_by_batch": [_at_batch(short_times, b, a, g, c)["speedup"] for b in BATCH_GRID],
        "notes": notes,
        "batch_notes": batch_notes,  # said under the batch view only
        "metrics": {
            "expected_tokens_per_step": e,
            "monte_carlo_tokens_per_step": mc,
            "monte_carlo_stderr": (sum((x - mc) ** 2 for x in draws) / (NUM_ROUNDS - 1) / NUM_ROUNDS) ** 0.5,
            "speedup": e * t_step / round_s,
            "best_draft_tokens": best,
            "best_speedup": s_by_gamma[best - 1],
            "itl_s": round_s / e,
            "itl_baseline_s": t_step,
            "verify_step_s": t_verify,
            "verify_cost_ratio": t_verify / t_step,
            "draft_s": g * c * t_step,
        },
    }


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    if view == "draft":
        x, chosen, a, c = r["gammas"], r["draft_tokens"], r["acceptance_rate"], r["draft_cost_ratio"]
        data = [
            line(x, r["expected_by_gamma"], "Tokens per target pass, E (closed form)", 0),
            line(x, r["speedup_by_gamma"], "Wall-clock speed-up", 1),
            line([x[0], x[-1]], [1, 1], "No gain (1x)", 6),
            markers([chosen], [r["speedup_by_gamma"][chosen - 1]], "Chosen draft length", 2),
        ]
        title = f"alpha = {a:g}, c = {c:g}, batch {r['batch_size']} on {r['gpu']}"
        return chart(data, title, "Draft length gamma (tokens)", "Tokens per pass / speed-up (x)")
    x, gamma = r["batch_grid"], f"gamma = {r['draft_tokens']}"
    data = [
        line(x, r["speedup_by_batch"], f"Speed-up, {gamma}, {r['context_tokens']:,}-token context", 0),
        line(x, r["best_speedup_by_batch"], "Speed-up at the best gamma for each batch", 1),
        line([x[0], x[-1]], [1, 1], "No gain (1x)", 6),
    ]
    if r["context_tokens"] != SHORT_CONTEXT:  # at that context the first line is this one (as the summary says)
        short = line(x, r["short_context_speedup_by_batch"], f"Speed-up, {gamma}, {SHORT_CONTEXT}-token context", 4)
        data.insert(2, short)
    top = max(r["best_speedup_by_batch"] + r["short_context_speedup_by_batch"] + [1.0])
    at = f", {r['context_tokens']:,}-token context"  # both marks belong to the chosen context, not the short one
    if (b := r["verify_bound_batch"]) is not None:
        data.append(line([b, b], [0, top], f"Verify pass ({gamma}) turns compute-bound{at}", 2))
    if 0 < r["fit_batch"] < x[-1]:
        data.append(line([r["fit_batch"], r["fit_batch"]], [0, top], f"Most sequences whose KV cache fits{at}", 3))
    title = f"Speculation vs batching: {r['model']} on {r['gpu']}"
    return chart(data, title, "Batch size (sequences)", "Speed-up (x)", xaxis=LOG)


def _drafts(r: dict[str, Any]) -> str:
    return f"{r['draft_tokens']} draft token" + ("s" if r["draft_tokens"] != 1 else "")


def summary(r: dict[str, Any], view: str) -> str:
    """One text per view: the draft-length trade-off (draft), or how batching eats the gain (batch)."""
    m = r["metrics"]
    if view == "draft":
        text = (
            f"With acceptance rate {r['acceptance_rate']:g} and {_drafts(r)}, each target pass yields "
            f"{m['expected_tokens_per_step']:.3f} tokens on average (Monte Carlo over {NUM_ROUNDS:,} rounds: "
            f"{m['monte_carlo_tokens_per_step']:.3f}). For {r['model']} on {r['gpu']} at batch {r['batch_size']}, the "
            f"verify pass costs {m['verify_cost_ratio']:.2f} decode steps and the drafts {m['draft_s'] * 1e3:.2f} ms, so "
            f"speculation gives {m['speedup']:.2f}x (inter-token latency {m['itl_s'] * 1e3:.2f} ms instead of "
            f"{m['itl_baseline_s'] * 1e3:.2f} ms). The best draft length here is {m['best_draft_tokens']} "
            f"({m['best_speedup']:.2f}x)"
        )
        if m["best_draft_tokens"] < MAX_DRAFT:
            text += ": beyond it each extra draft token costs a draft pass and verify work" + (
                ", and is less likely to be accepted than the one before" if r["acceptance_rate"] < 1 else ""
            )  # at acceptance 1 every draft token is accepted (learner review)
        return text + "." + "".join(" " + n for n in r["notes"])
    grid, fit, short = r["batch_grid"], r["at_fit"], r["short_at_fit"]
    text = (
        f"At acceptance rate {r['acceptance_rate']:g} with {_drafts(r)}, the speed-up at "
        f"{r['context_tokens']:,} tokens of context is {r['speedup_by_batch'][0]:.2f}x at batch 1"
    )
    if fit["batch"] < 1:
        text += f"; no sequence of {r['context_tokens']:,} tokens fits in memory, so every point is a roofline extrapolation"
    else:
        held = (
            "the most sequences whose KV cache fits in memory"
            if fit["batch"] == r["fit_batch"]
            else "the top of the sweep, which memory holds"
        )
        text += (
            f" and {fit['speedup']:.2f}x at batch {fit['batch']:,}, {held} ({fit['best_speedup']:.2f}x at the best "
            "draft length for that batch)"
        )
    text += (
        f"; at the chosen batch {r['batch_size']:,} it is {m['speedup']:.2f}x, and the best draft length there is "
        f"{m['best_draft_tokens']} ({m['best_speedup']:.2f}x)"
    )
    if r["verify_bound_batch"] is not None:
        past = r["verify_bound_batch"] > r["fit_batch"]
        text += f". The verify pass turns compute-bound from batch {r['verify_bound_batch']:,}" + (
            ", past what memory holds at this context" if past else ", where checking extra tokens stops being free"
        )
    if r["context_tokens"] != SHORT_CONTEXT and short["batch"] >= 1:
        text += (
            f". With a {SHORT_CONTEXT}-token context the same drafts give {short['speedup']:.2f}x at batch "
            f"{short['batch']:,}, which fits in memory"
        )
    if 0 < r["fit_batch"] < grid[-1]:
        text += (
            f". Points past batch {r['fit_batch']:,} are roofline extrapolations at {r['context_tokens']:,} tokens of "
            "context, not batches one GPU can run"
        )
    return text + "." + "".join(" " + n for n in r["batch_notes"] + r["notes"])
