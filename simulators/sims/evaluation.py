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

The draws. Positions come in chunks of CHUNK; chunk c of seed s has its own generator,
random.Random(f"{s}:{c}"), which draws, in this order:
1. CHUNK * VOCAB radii r = sqrt(-2 log(1 - u)), then CHUNK * VOCAB angles a = 2 pi u (u uniform);
   Box-Muller turns pair j into two independent standard normals, r cos a and r sin a;
2. CHUNK sharpnesses 0.6 + 1.4 u, then CHUNK damage uniforms, then CHUNK token uniforms.
Position k of the chunk uses the k-th block of VOCAB normals of each kind: its baseline logits
are -sharpness * log(rank) + 0.3 * (r cos a), its unit noise z is r sin a (the optimised model
adds noise_scale * z), it is damaged when its damage uniform is below `damaged_fraction`, and
its observed token inverts the baseline's cumulative distribution at its token uniform times
the total. So a position's draws do not depend on `num_positions`: a run of n positions is the
first n positions of any longer one.

The KL without a log per logit. With x the baseline logits, y = x + d the optimised ones, p and
q their softmaxes and L(v) = log sum exp(v): log p_i = x_i - L(x) and log q_i = y_i - L(y), so,
as the p_i sum to 1, KL(p || q) = sum p_i (log p_i - log q_i) = L(y) - L(x) - sum p_i d_i, and
L(y) - L(x) = log sum p_i exp(d_i) = log1p(sum p_i expm1(d_i)). Where the position is not
damaged, d = noise_scale * z, so sum p_i d_i = noise_scale * sum p_i z_i, drawn once per
position; a damaged position adds the change at its runner-up. A run thus needs one expm1 per
logit and no log. The KL is of order noise^2, its two terms of order noise: expm1 and log1p
keep those terms accurate to their own size. Subtracting two log-sum-exps of a few nats instead
would leave their rounding (about 1e-16 of a few nats) in a KL of 1e-5 nats or less, enough for
CPython and Pyodide, whose libm can differ in the last bit, to print different 10-digit results.
The baseline logits stay within about +-13 nats, so L(x) needs no shift against overflow.

Float sums use math.fsum: Python 3.12 changed the built-in sum() of floats to compensated
summation, so CPython 3.11 and Pyodide (3.14) would otherwise differ in the last digits.

References: 1) Kurtic et al. 2024, "Give Me BF16 or Give Me Death"? (arXiv 2411.02355);
2) Dutta et al. 2024, Accuracy is Not All You Need (arXiv 2407.09141): flips and KL divergence
as better signals than aggregate accuracy or perplexity.
"""

import math
import random
from array import array
from bisect import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from math import cos, exp, expm1, fsum, log, log1p, sin, sqrt
from operator import mul
from typing import Any, NamedTuple

from ..core import stats
from ..params import param
from ..plotting import LOG, chart, markers
from ..results_cache import Keep, LruCache, for_call

TITLE = "Evaluating an optimised model: perplexity vs KL divergence"
DESCRIPTION = "A baseline and a perturbed next-token distribution: near-equal perplexity can hide damage concentrated at a few positions."
METRICS = {
    "ppl_baseline": ("Perplexity, baseline", ""),
    "ppl_optimised": ("Perplexity, optimised", ""),
    "ppl_change": ("Perplexity change", ""),
    "top1_agreement": ("Greedy (top-1) agreement", ""),
    "kl_mean_nats": ("Mean KL divergence", "nats"),
    "kl_share_top_5pct": ("Share of total KL in the worst 5% of positions", ""),
    "num_damaged_positions": ("Damaged positions drawn", "positions"),
    "kl_p99_nats": ("99th-percentile KL divergence", "nats"),
}
VOCAB = 64
LOG_RANKS = [math.log(r + 1) for r in range(VOCAB)]  # the Zipf fall-off, log(rank), once
CHUNK = 50  # positions drawn from one generator (the slider's step, so one step needs one chunk)
MAX_POSITIONS = 5000
# Kept through the caller's keep (api.Session's store), per chunk, in two stores: its draws, by
# (seed, chunk index) alone; its scores, by the draws and the three damage controls (never by
# num_positions). So a new num_positions draws and scores at most one new chunk, another control
# rescores the kept draws. Each store holds one seed's MAX_POSITIONS (a run reads chunks in order: a
# smaller bound would evict each just before its use); two, so new scores never evict draws (~9 MB).
MEMO_ENTRIES = 2
CHUNKS = MAX_POSITIONS // CHUNK
MAX_MARKERS = 1000


@dataclass(frozen=True)
class Params:
    # Positions of evaluation text scored.
    num_positions: int = param(600, label="Positions", unit="tokens", min=50, max=MAX_POSITIONS, step=50)
    # Standard deviation of the noise added to every logit by the optimisation.
    noise_scale: float = param(0.05, label="Logit noise", unit="nats", min=0.0, max=2.0, step=0.01)
    # Share of positions where the runner-up token overtakes the favourite.
    damaged_fraction: float = param(0.03, label="Share of positions damaged", min=0.0, max=0.5, step=0.005)
    # How far above the old favourite the runner-up is pushed at a damaged position.
    damage_margin: float = param(1.0, label="Damage margin", unit="nats", min=0.0, max=5.0, step=0.1)


class Chunk(NamedTuple):
    """CHUNK positions' draws and the baseline's side of them (the module docstring's scheme).
    `base`, `pb` and `z` are flat arrays of doubles, position-major (VOCAB values per position):
    compact, since the memo holds up to MAX_POSITIONS x 3 x VOCAB of them. Never change them."""

    base: "array[float]"  # baseline logits
    pb: "array[float]"  # baseline next-token probabilities
    z: "array[float]"  # standard normals; the optimised model's noise is noise_scale * z
    u: tuple[float, ...]  # damaged if below damaged_fraction
    first: tuple[int, ...]  # the baseline's favourite, its greedy pick
    second: tuple[int, ...]  # the baseline's runner-up
    token: tuple[int, ...]  # the observed next token, drawn from the baseline
    lse: tuple[float, ...]  # log sum exp of the baseline logits
    nll: tuple[float, ...]  # the baseline's negative log-likelihood of the observed token
    pz: tuple[float, ...]  # sum p_i z_i under the baseline's distribution p


def stores(keep: Keep) -> tuple[LruCache[Chunk], LruCache["Positions"]]:
    return keep("draws", lambda: LruCache(CHUNKS)), keep("scores", lambda: LruCache(CHUNKS))


def chunk(seed: int, index: int) -> Chunk:
    rnd = random.Random(f"{seed}:{index}").random
    size = CHUNK * VOCAB
    radii = [sqrt(-2.0 * log(1.0 - rnd())) for _ in range(size)]
    angles = [2.0 * math.pi * rnd() for _ in range(size)]
    gauss = list(map(mul, radii, map(cos, angles)))  # Box-Muller: two normals per pair
    z = array("d", map(mul, radii, map(sin, angles)))
    sharps = [0.6 + 1.4 * rnd() for _ in range(CHUNK)]
    u = tuple([rnd() for _ in range(CHUNK)])
    v = [rnd() for _ in range(CHUNK)]
    base, pb, rows = array("d"), array("d"), []
    for k, sharp in enumerate(sharps):
        at = k * VOCAB
        x = [-sharp * lr + 0.3 * g for lr, g in zip(LOG_RANKS, gauss[at : at + VOCAB], strict=True)]
        e = list(map(exp, x))
        total = fsum(e)
        # Stable: of two equal logits the lower rank comes first, as max() and list.index() pick.
        one, two = sorted(range(VOCAB), key=x.__getitem__, reverse=True)[:2]
        cum = list(accumulate(e))
        tok = min(bisect(cum, v[k] * cum[-1]), VOCAB - 1)
        p = [w / total for w in e]
        base.extend(x)
        pb.extend(p)
        # first, second, token, lse, nll, pz (Chunk's fields)
        rows.append((one, two, tok, log(total), log(total) - x[tok], fsum(map(mul, p, z[at : at + VOCAB]))))
    return Chunk(base, pb, z, u, *zip(*rows, strict=True))


class Positions(NamedTuple):
    """Per-position results, in text order: of a run, or of a whole chunk under one set of damage
    controls (its scores, whose nll_base is the draws' own tuple, shared, not copied)."""

    kl: list[float]  # KL(baseline || optimised), nats
    damaged: list[bool]
    nll_base: Sequence[float]  # negative log-likelihoods of the observed tokens
    nll_opt: list[float]
    agree: list[bool]  # the two models' greedy picks agree


def score(c: Chunk, noise: float, frac: float, margin: float) -> Positions:
    """Every position of a chunk, optimised model against baseline (the module docstring's KL)."""
    out = Positions([], [u < frac for u in c.u], c.nll, [], [])
    kls, hits, nll_opt, agree = out.kl, out.damaged, out.nll_opt, out.agree
    base, pb, zs = c.base, c.pb, c.z
    # The whole chunk at once: the optimised logits y, and p_i expm1(d_i) with d = noise * z.
    opt = [x + noise * z for x, z in zip(base, zs, strict=True)]
    grow = [pi * expm1(noise * z) for pi, z in zip(pb, zs, strict=True)]
    for k in range(CHUNK):
        at = k * VOCAB
        shift = noise * c.pz[k]  # sum p_i d_i without damage
        if hits[k]:  # the runner-up pushed `margin` above the favourite
            two = at + c.second[k]
            opt[two] = opt[at + c.first[k]] + margin
            grow[two] = pb[two] * expm1(opt[two] - base[two])
            shift += pb[two] * (opt[two] - base[two] - noise * zs[two])
        y = opt[at : at + VOCAB]
        lift = log1p(fsum(grow[at : at + VOCAB]))  # L(y) - L(x)
        kls.append(lift - shift)
        nll_opt.append(c.lse[k] + lift - y[c.token[k]])
        agree.append(y.index(max(y)) == c.first[k])
    return out


def positions(p: Params, seed: int = 0, keep: Keep | None = None) -> Positions:
    """Score every position: draws and scores come from `keep` where kept (see MEMO_ENTRIES)."""
    draws, scores = stores(for_call(keep, MEMO_ENTRIES))
    controls = (p.noise_scale, p.damaged_fraction, p.damage_margin)
    cols: list[list[Any]] = [[] for _ in Positions._fields]
    for index, start in enumerate(range(0, p.num_positions, CHUNK)):

        def make(index: int = index) -> Positions:
            return score(draws.get_or_make((seed, index), lambda: chunk(seed, index)), *controls)

        got = scores.get_or_make((seed, index, *controls), make)
        for col, field in zip(cols, Positions._fields, strict=True):
            col.extend(getattr(got, field)[: p.num_positions - start])
    return Positions(*cols)


def run(p: Params, *, seed: int = 0, keep: Keep | None = None, view: str | None = None) -> dict[str, Any]:
    """`keep` keeps the random draws for the caller's next call (none: for this call alone)."""
    r = positions(p, seed, keep)
    kls, n = r.kl, p.num_positions
    ranked = sorted(range(n), key=kls.__getitem__, reverse=True)  # stable: ties keep text order
    kl_ranked = [kls[i] for i in ranked]
    total_kl = fsum(kls)
    ppl_b, ppl_o = math.exp(fsum(r.nll_base) / n), math.exp(fsum(r.nll_opt) / n)
    num_damaged = sum(r.damaged)
    return {
        "kl_ranked": kl_ranked,
        "damaged_ranked": [r.damaged[i] for i in ranked],
        "num_damaged": num_damaged,
        "metrics": {
            "ppl_baseline": ppl_b,
            "ppl_optimised": ppl_o,
            "ppl_change": ppl_o / ppl_b - 1,
            "kl_mean_nats": total_kl / n,
            "kl_p99_nats": stats.percentile(kl_ranked, 0.99),  # the project's one rule
            "kl_share_top_5pct": fsum(kl_ranked[: max(1, n // 20)]) / (total_kl or 1.0),
            "top1_agreement": sum(r.agree) / n,
            "num_damaged_positions": num_damaged,
        },
    }


def figure(r: dict[str, Any]) -> dict[str, Any]:
    n = len(r["kl_ranked"])
    # At most about MAX_MARKERS markers: thousands of SVG markers block the page's main thread for
    # 200 ms and more per redraw. Every stride-th rank is drawn; the downloads keep every position.
    stride = -(-n // MAX_MARKERS)
    shown = range(0, n, stride)
    hit = [i for i in shown if r["damaged_ranked"][i]]
    clean = [i for i in shown if not r["damaged_ranked"][i]]
    # A log axis cannot show zero divergence: zeros sit at a floor, and with nothing but zeros the axis is linear.
    floor, axis = (1e-6, LOG) if max(r["kl_ranked"], default=0) > 0 else (0.0, {"rangemode": "tozero"})
    data = [
        markers([i + 1 for i in ranks], [max(r["kl_ranked"][i], floor) for i in ranks], name, j, mode="markers")
        for j, (name, ranks) in enumerate((("Noise only", clean), ("Damaged position (runner-up pushed ahead)", hit)))
    ]
    x_title = "Position rank" + (f" (one position in {stride} drawn)" if stride > 1 else "")
    return chart(
        data, "KL divergence per position, worst first", x_title, "KL(baseline || optimised), nats", yaxis=axis
    )


def summary(r: dict[str, Any]) -> str:
    m, damaged = r["metrics"], r["num_damaged"]
    flips = 1 - m["top1_agreement"]
    moves = f"Perplexity moves from {m['ppl_baseline']:.3f} to {m['ppl_optimised']:.3f} ({m['ppl_change']:+.1%})"
    if m["kl_mean_nats"] == 0:  # no noise and no damage (learner review: "yet ... 0.0%")
        return (
            f"With no noise and no damaged position the optimised model is the baseline: perplexity stays at "
            f"{m['ppl_baseline']:.3f}, the two pick the same token at every position, and the KL divergence is 0."
        )
    picks = (
        f"yet greedy decoding picks a different token at {flips:.1%} of positions"
        if flips
        else "and greedy decoding picks the same token at every position"
    )
    return (
        f"{moves}, {picks}. The mean KL divergence is {m['kl_mean_nats']:.4f} nats, and the worst 5% of positions carry "
        f"{m['kl_share_top_5pct']:.0%} of it ({damaged} position{' was' if damaged == 1 else 's were'} damaged)."
    )
