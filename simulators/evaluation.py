"""Evaluating an optimised model: why perplexity can stay flat while the answers change.

Model: a seeded stand-in for a language model's next-token distributions at `num_positions`
positions of an evaluation text, over a small vocabulary. Each position's logits fall off with
rank (a Zipf-like shape, as natural text does) plus seeded noise; the "observed" next token is
drawn from the baseline, so the baseline's perplexity is what it would measure on its own text.

The optimised model is the baseline plus two kinds of damage, the shapes seed 000 warns about:
- uniform noise of `noise_scale` on every logit (what rounding weights does everywhere);
- at a `damaged_fraction` of positions (rare tokens, numbers, long-range facts), the runner-up
  token is pushed `damage_margin` nats above the favourite: greedy decoding now emits a
  different, still plausible token. Fluent but wrong.

Metrics: perplexity exp(mean negative log-likelihood of the observed tokens) for both models;
KL(baseline || optimised) per position, its mean and its tail; top-1 (greedy) agreement.
Perplexity averages over every position, so damage at a few positions barely moves it; the
per-position KL and the greedy agreement expose it.

Float sums use math.fsum: Python 3.12 changed the built-in sum() of floats to compensated
summation, so CPython 3.11 and Pyodide (3.14) would otherwise differ in the last digits.

References: 1) Kurtic et al. 2024, "Give Me BF16 or Give Me Death"? (arXiv 2411.02355);
2) Dutta et al. 2024, Accuracy is Not All You Need (arXiv 2407.09141): flips and KL divergence
as better signals than aggregate accuracy or perplexity.
"""

from __future__ import annotations

import functools
import math
import random
from array import array
from dataclasses import dataclass
from typing import Any, NamedTuple

from .params import param
from .plotting import figure as make_figure
from .plotting import layout, markers

TITLE = "Evaluating an optimised model: perplexity vs KL divergence"
DESCRIPTION = "A baseline and a perturbed next-token distribution: near-equal perplexity can hide damage concentrated at a few positions."
METRICS = {
    "ppl_baseline": ("Perplexity, baseline", ""),
    "ppl_optimised": ("Perplexity, optimised", ""),
    "ppl_change": ("Perplexity change", ""),
    "kl_mean_nats": ("Mean KL divergence", "nats"),
    "kl_p99_nats": ("99th-percentile KL divergence", "nats"),
    "kl_share_top_5pct": ("Share of total KL in the worst 5% of positions", ""),
    "top1_agreement": ("Greedy (top-1) agreement", ""),
    "num_damaged_positions": ("Damaged positions drawn", "positions"),
}
VOCAB = 64
LOG_RANKS = [math.log(r + 1) for r in range(VOCAB)]  # the Zipf fall-off, log(rank), once


@dataclass(frozen=True)
class Params:
    # Positions of evaluation text scored.
    num_positions: int = param(600, label="Positions", unit="tokens", min=50, max=5000, step=50)
    # Standard deviation of the noise added to every logit by the optimisation.
    noise_scale: float = param(0.05, label="Logit noise", unit="nats", min=0.0, max=2.0, step=0.01)
    # Share of positions where the runner-up token overtakes the favourite.
    damaged_fraction: float = param(0.03, label="Damaged positions", min=0.0, max=0.5, step=0.005)
    # How far above the old favourite the runner-up is pushed at a damaged position.
    damage_margin: float = param(1.0, label="Damage margin", unit="nats", min=0.0, max=5.0, step=0.1)


def _softmax(logits: list[float]) -> list[float]:
    top = max(logits)
    w = [math.exp(x - top) for x in logits]
    s = math.fsum(w)
    return [x / s for x in w]


def _percentile(sorted_values: list[float], q: float) -> float:
    i = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[i]


class Baseline(NamedTuple):
    """The baseline model's side of `num_positions` positions, and every random draw of a run.

    Flat arrays of doubles, position-major (VOCAB values per position): compact, since a run
    keeps up to 5,000 x 3 x 64 of them. They are cached: never change them (a slice is a copy).
    """

    base: array[float]  # baseline logits
    z: array[float]  # standard normals; the optimised model's noise is z * noise_scale
    pb: array[float]  # baseline next-token probabilities
    u: tuple[float, ...]  # one uniform per position: damaged if below damaged_fraction
    top: tuple[int, ...]  # the baseline's greedy pick
    token: tuple[int, ...]  # the observed next token, drawn from the baseline
    nll: float  # the baseline's total negative log-likelihood


# The baseline and the draws depend only on (seed, num_positions): the draws per position are the
# same whatever the noise and damage, so a change of those controls reuses them. Two entries: one
# holds up to 7.7 MB (5,000 positions) in the reader's browser for the whole visit.
@functools.lru_cache(maxsize=2)
def baseline(seed: int, num_positions: int) -> Baseline:
    rng = random.Random(seed)
    base_all, z_all, pb_all = array("d"), array("d"), array("d")
    u: list[float] = []
    top: list[int] = []
    tokens: list[int] = []
    nll = 0.0
    gauss = rng.gauss  # a local: the loop draws 2 x VOCAB normals per position
    for _ in range(num_positions):
        # Zipf-like fall-off with rank, sharper at some positions than others.
        sharp = rng.uniform(0.6, 2.0)
        base = [-sharp * log_rank + gauss(0, 0.3) for log_rank in LOG_RANKS]
        # gauss(0.0, 1.0) is z itself, and 0 + z * noise is what gauss(0, noise) would return.
        z_all.extend([gauss(0.0, 1.0) for _ in LOG_RANKS])
        u.append(rng.random())
        pb = _softmax(base)
        top.append(max(range(VOCAB), key=pb.__getitem__))
        token = rng.choices(range(VOCAB), weights=pb)[0]
        nll -= math.log(pb[token])
        tokens.append(token)
        base_all.extend(base)
        pb_all.extend(pb)
    return Baseline(base_all, z_all, pb_all, tuple(u), tuple(top), tuple(tokens), nll)


def run(p: Params, *, seed: int = 0) -> dict[str, Any]:
    b = baseline(seed, p.num_positions)
    nll_base, nll_opt = b.nll, 0.0
    kls: list[float] = []
    damaged: list[bool] = []
    agree = 0
    noise, us, tops, tokens = p.noise_scale, b.u, b.top, b.token
    for k in range(p.num_positions):
        span = slice(k * VOCAB, (k + 1) * VOCAB)
        base = b.base[span]
        opt = [x + (0 + z * noise) for x, z in zip(base, b.z[span], strict=True)]
        hit = us[k] < p.damaged_fraction
        if hit:
            order = sorted(range(VOCAB), key=lambda i: -base[i])
            first, second = order[0], order[1]
            opt[second] = opt[first] + p.damage_margin
        pb, po = b.pb[span], _softmax(opt)
        nll_opt -= math.log(po[tokens[k]])
        kls.append(math.fsum(a * math.log(a / c) for a, c in zip(pb, po, strict=True) if a > 0))
        damaged.append(hit)
        agree += tops[k] == max(range(VOCAB), key=po.__getitem__)
    n = p.num_positions
    ranked = sorted(range(n), key=lambda i: -kls[i])
    worst = ranked[: max(1, n // 20)]
    total_kl = math.fsum(kls) or 1.0
    ppl_b, ppl_o = math.exp(nll_base / n), math.exp(nll_opt / n)
    return {
        "kl_ranked": [kls[i] for i in ranked],
        "damaged_ranked": [damaged[i] for i in ranked],
        "num_damaged": sum(damaged),
        "metrics": {
            "ppl_baseline": ppl_b,
            "ppl_optimised": ppl_o,
            "ppl_change": ppl_o / ppl_b - 1,
            "kl_mean_nats": math.fsum(kls) / n,
            "kl_p99_nats": _percentile(sorted(kls), 0.99),
            "kl_share_top_5pct": math.fsum(kls[i] for i in worst) / total_kl,
            "top1_agreement": agree / n,
            "num_damaged_positions": sum(damaged),
        },
    }


MAX_MARKERS = 1000


def figure(r: dict[str, Any]) -> dict[str, Any]:
    n = len(r["kl_ranked"])
    ranks = list(range(1, n + 1))
    # At most about MAX_MARKERS markers: thousands of SVG markers block the page's main thread for
    # 200 ms and more per redraw. Every stride-th rank is drawn; the downloads keep every position.
    stride = -(-n // MAX_MARKERS)
    shown = range(0, n, stride)
    hit = [i for i in shown if r["damaged_ranked"][i]]
    clean = [i for i in shown if not r["damaged_ranked"][i]]
    floor = 1e-6  # a log axis cannot show zero divergence
    data = [
        markers([ranks[i] for i in clean], [max(r["kl_ranked"][i], floor) for i in clean], "Noise only", 0, mode="markers"),
        markers([ranks[i] for i in hit], [max(r["kl_ranked"][i], floor) for i in hit], "Damaged position (runner-up pushed ahead)", 1, mode="markers"),
    ]
    x_title = "Position rank" + (f" (one position in {stride} drawn)" if stride > 1 else "")
    return make_figure(data, layout("KL divergence per position, worst first", x_title, "KL(baseline || optimised), nats", yaxis={"type": "log"}))


def summary(r: dict[str, Any]) -> str:
    m = r["metrics"]
    return (
        f"Perplexity moves from {m['ppl_baseline']:.3f} to {m['ppl_optimised']:.3f} ({m['ppl_change']:+.1%}), "
        f"yet greedy decoding picks a different token at {1 - m['top1_agreement']:.1%} of positions. "
        f"The mean KL divergence is {m['kl_mean_nats']:.4f} nats, and the worst 5% of positions carry "
        f"{m['kl_share_top_5pct']:.0%} of it ({r['num_damaged']} positions were damaged)."
    )
