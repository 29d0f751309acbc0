"""The evaluation demo: perplexity barely moves while KL and greedy flips expose the damage."""

import bisect
import itertools
import math
import random

import numpy as np
from guidellm.schemas.base.statistics import DistributionSummary

from simulators.results_cache import LruCache
from simulators.sims import evaluation as ev


def test_no_damage_no_noise_is_identical():
    r = ev.run(ev.Params(noise_scale=0.0, damaged_fraction=0.0), seed=1)["metrics"]
    assert r["ppl_baseline"] == r["ppl_optimised"]
    assert r["kl_mean_nats"] == 0 and r["top1_agreement"] == 1


def test_the_summary_claims_no_contrast_where_nothing_changed():
    """Learner review: at noise 0 and damage 0 the summary read "yet ... a different token at 0.0%"."""
    same = ev.summary(ev.run(ev.Params(noise_scale=0.0, damaged_fraction=0.0)))
    assert "yet" not in same and "moves" not in same and "same token at every position" in same
    flips = ev.summary(ev.run(ev.Params()))
    assert "yet greedy decoding picks a different token at" in flips


def test_default_damage_hides_from_perplexity_but_not_from_kl():
    r = ev.run(ev.Params(), seed=0)
    m = r["metrics"]
    assert abs(m["ppl_change"]) < 0.02  # under 2% perplexity change...
    assert 1 - m["top1_agreement"] >= 0.02  # ...while greedy output changes at 2%+ of positions
    assert m["kl_share_top_5pct"] > 0.5  # and the divergence sits in the tail
    # Every damaged position flips the greedy choice, so flips >= damaged positions' share.
    assert 1 - m["top1_agreement"] >= r["num_damaged"] / 600


def test_kl_matches_a_numpy_oracle():
    # Every position's KL, from the run's log1p/expm1 form, against numpy's sum p log(p / q)
    # over two max-shifted softmaxes of the same logits.
    p = ev.Params(num_positions=120, noise_scale=0.3, damaged_fraction=0.2, damage_margin=2.0)
    got = ev.positions(p, seed=8)
    for j, kl in enumerate(got.kl):
        c, k = ev.chunk(8, j // ev.CHUNK), j % ev.CHUNK
        x = np.array(c.base[k * ev.VOCAB : (k + 1) * ev.VOCAB])
        y = x + p.noise_scale * np.array(c.z[k * ev.VOCAB : (k + 1) * ev.VOCAB])
        if got.damaged[j]:
            y[c.second[k]] = y[c.first[k]] + p.damage_margin
        pa, pb = np.exp(x - x.max()) / np.exp(x - x.max()).sum(), np.exp(y - y.max()) / np.exp(y - y.max()).sum()
        assert math.isclose(kl, float(np.sum(pa * np.log(pa / pb))), rel_tol=1e-9), j
    assert 0 < sum(got.damaged) < 120


def test_more_damage_more_divergence():
    low = ev.run(ev.Params(damaged_fraction=0.01), seed=2)["metrics"]["kl_mean_nats"]
    high = ev.run(ev.Params(damaged_fraction=0.2), seed=2)["metrics"]["kl_mean_nats"]
    assert high > low


def _chunk_draws(seed, index):
    """One chunk's raw draws in the order the module docstring documents, drawn afresh (no memo)."""
    rng = random.Random(f"{seed}:{index}")
    size = ev.CHUNK * ev.VOCAB
    radii = [math.sqrt(-2.0 * math.log(1.0 - rng.random())) for _ in range(size)]
    angles = [2.0 * math.pi * rng.random() for _ in range(size)]
    sharps = [0.6 + 1.4 * rng.random() for _ in range(ev.CHUNK)]
    damage_u = [rng.random() for _ in range(ev.CHUNK)]
    token_u = [rng.random() for _ in range(ev.CHUNK)]
    return radii, angles, sharps, damage_u, token_u


def _reference(p, seed):
    """The metrics recomputed position by position from the documented draws, with no memo and plain lists."""
    n, noise = p.num_positions, p.noise_scale
    nll_b, nll_o, kls, hits, agree = [], [], [], [], 0
    for j in range(n):
        index, k = divmod(j, ev.CHUNK)
        if k == 0:
            radii, angles, sharps, damage_u, token_u = _chunk_draws(seed, index)
        block = range(k * ev.VOCAB, (k + 1) * ev.VOCAB)
        gauss = [radii[i] * math.cos(angles[i]) for i in block]
        z = [radii[i] * math.sin(angles[i]) for i in block]
        base = [-sharps[k] * math.log(r + 1) + 0.3 * g for r, g in enumerate(gauss)]
        e = [math.exp(x) for x in base]
        total = math.fsum(e)
        pb = [w / total for w in e]
        order = sorted(range(ev.VOCAB), key=lambda i: -base[i])
        first, second = order[0], order[1]
        cum = list(itertools.accumulate(e))
        token = min(bisect.bisect(cum, token_u[k] * cum[-1]), ev.VOCAB - 1)
        opt = [x + noise * w for x, w in zip(base, z, strict=True)]
        hit = damage_u[k] < p.damaged_fraction
        if hit:
            opt[second] = opt[first] + p.damage_margin
        lse_b = math.log(total)
        # KL(p || q) = L(y) - L(x) - sum p_i d_i with d = y - x, and L(y) - L(x) = log1p(sum p_i expm1(d_i)).
        grow = [pi * math.expm1(noise * w) for pi, w in zip(pb, z, strict=True)]
        shift = noise * math.fsum(pi * w for pi, w in zip(pb, z, strict=True))
        if hit:
            grow[second] = pb[second] * math.expm1(opt[second] - base[second])
            shift += pb[second] * (opt[second] - base[second] - noise * z[second])
        lift = math.log1p(math.fsum(grow))
        kl = lift - shift
        # The closed form is the textbook sum p log(p / q) (softmaxes shifted by their maximum).
        top = max(opt)
        wo = [math.exp(y - top) for y in opt]
        total_o = math.fsum(wo)
        po = [w / total_o for w in wo]
        direct = math.fsum(a * math.log(a / b) for a, b in zip(pb, po, strict=True))
        assert math.isclose(kl, direct, rel_tol=1e-9, abs_tol=1e-15), (j, kl, direct)
        kls.append(kl)
        hits.append(hit)
        nll_b.append(lse_b - base[token])
        nll_o.append(lse_b + lift - opt[token])
        agree += max(range(ev.VOCAB), key=opt.__getitem__) == first
    ranked = sorted(kls, reverse=True)
    ppl_b, ppl_o = math.exp(math.fsum(nll_b) / n), math.exp(math.fsum(nll_o) / n)
    return {
        "ppl_baseline": ppl_b,
        "ppl_optimised": ppl_o,
        "ppl_change": ppl_o / ppl_b - 1,
        "kl_mean_nats": math.fsum(kls) / n,
        # The project's percentile rule is GuideLLM's: its own code is the reference.
        "kl_p99_nats": DistributionSummary.from_values(kls).percentiles.p99,
        "kl_share_top_5pct": math.fsum(ranked[: max(1, n // 20)]) / (math.fsum(kls) or 1.0),
        "top1_agreement": agree / n,
        "num_damaged_positions": sum(hits),
    }


def test_the_run_matches_an_independent_recomputation():
    for p, seed in (
        (ev.Params(), 0),
        (ev.Params(num_positions=120, noise_scale=1.3, damaged_fraction=0.4, damage_margin=4.0), 7),
        (ev.Params(num_positions=75, noise_scale=0.0, damaged_fraction=0.5, damage_margin=0.0), 3),
    ):
        r = ev.run(p, seed=seed)
        assert r["metrics"] == _reference(p, seed)


def test_an_unrelated_control_reuses_the_draws_and_changes_nothing():
    a, b = (
        ev.Params(num_positions=300, damaged_fraction=0.1),
        ev.Params(num_positions=300, damaged_fraction=0.1, noise_scale=0.4, damage_margin=3.0),
    )
    memo = LruCache(ev.MEMO_ENTRIES)
    draws, scores = ev.stores(memo.get_or_make)
    first_a = ev.run(a, seed=4, keep=memo.get_or_make)
    assert draws.misses == scores.misses == 300 // ev.CHUNK
    run_b = ev.run(b, seed=4, keep=memo.get_or_make)
    assert draws.misses == 300 // ev.CHUNK  # noise and margin drew nothing new
    assert scores.misses == 2 * 300 // ev.CHUNK  # but scored every chunk again
    again_a = ev.run(a, seed=4, keep=memo.get_or_make)
    assert scores.misses == 2 * 300 // ev.CHUNK  # a's scores were kept
    assert again_a == first_a == ev.run(a, seed=4)  # and no memo: drawn afresh
    for p, r in ((a, again_a), (b, run_b)):
        for key, value in _reference(p, 4).items():
            assert r["metrics"][key] == value, key


def test_one_more_position_draws_and_scores_at_most_one_chunk():
    memo = LruCache(ev.MEMO_ENTRIES)
    draws, scores = ev.stores(memo.get_or_make)
    ev.run(ev.Params(num_positions=600), seed=5, keep=memo.get_or_make)
    misses = draws.misses, scores.misses
    ev.run(ev.Params(num_positions=601), seed=5, keep=memo.get_or_make)
    assert (draws.misses, scores.misses) == (misses[0] + 1, misses[1] + 1)
    ev.run(ev.Params(num_positions=649), seed=5, keep=memo.get_or_make)
    ev.run(ev.Params(num_positions=550), seed=5, keep=memo.get_or_make)
    assert (draws.misses, scores.misses) == (misses[0] + 1, misses[1] + 1)


def test_a_shorter_run_is_the_start_of_a_longer_one():
    # A position's draws do not depend on num_positions: the first n positions of a longer run
    # are scored exactly as in a run of n (different chunk boundaries included).
    for n in (50, 601, 777):
        short = ev.positions(ev.Params(num_positions=n), seed=6)
        long = ev.positions(ev.Params(num_positions=1000), seed=6)
        for got, full in zip(short, long, strict=True):
            assert got == full[:n]
    r_short, r_long = ev.run(ev.Params(num_positions=600), seed=6), ev.run(ev.Params(num_positions=1000), seed=6)
    assert r_long["metrics"]["ppl_baseline"] != r_short["metrics"]["ppl_baseline"]  # a longer text, not a copy


def test_the_memo_holds_one_full_run_and_new_scores_never_evict_draws():
    """A reader's mix of changes (the slider's end, other controls at other lengths) draws each
    chunk once: the scores of earlier controls are evicted, never the draws."""
    memo = LruCache(ev.MEMO_ENTRIES)
    draws, scores = ev.stores(memo.get_or_make)
    n = ev.MAX_POSITIONS
    ev.run(ev.Params(num_positions=n), seed=7, keep=memo.get_or_make)
    ev.run(ev.Params(num_positions=n, noise_scale=0.3), seed=7, keep=memo.get_or_make)
    assert draws.misses == n // ev.CHUNK  # the second run drew nothing: all kept
    for p in (
        ev.Params(num_positions=n - 1),
        *(ev.Params(num_positions=n, noise_scale=x) for x in (0.06, 0.07)),
        *(ev.Params(damaged_fraction=x) for x in (0.0, 0.01, 0.02)),
        ev.Params(num_positions=2000),
    ):
        ev.run(p, seed=7, keep=memo.get_or_make)
    assert draws.misses == n // ev.CHUNK
    assert len(memo) == ev.MEMO_ENTRIES and len(draws) == len(scores) == ev.CHUNKS
    assert ev.Params.__dataclass_fields__["num_positions"].metadata["max"] == ev.MAX_POSITIONS
