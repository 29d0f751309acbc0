"""The evaluation demo: perplexity barely moves while KL and greedy flips expose the damage."""

import math

import numpy as np

from simulators import evaluation as ev


def test_no_damage_no_noise_is_identical():
    r = ev.run(ev.Params(noise_scale=0.0, damaged_fraction=0.0), seed=1)["metrics"]
    assert r["ppl_baseline"] == r["ppl_optimised"]
    assert r["kl_mean_nats"] == 0 and r["top1_agreement"] == 1


def test_default_damage_hides_from_perplexity_but_not_from_kl():
    r = ev.run(ev.Params(), seed=0)
    m = r["metrics"]
    assert abs(m["ppl_change"]) < 0.02  # under 2% perplexity change...
    assert 1 - m["top1_agreement"] >= 0.02  # ...while greedy output changes at 2%+ of positions
    assert m["kl_share_top_5pct"] > 0.5  # and the divergence sits in the tail
    # Every damaged position flips the greedy choice, so flips >= damaged positions' share.
    assert 1 - m["top1_agreement"] >= r["num_damaged"] / 600


def test_kl_matches_a_numpy_oracle():
    # Recompute one position's KL with numpy from two softmaxes.
    a = np.array([2.0, 1.0, 0.1])
    b = np.array([1.0, 2.0, 0.1])
    pa, pb = np.exp(a) / np.exp(a).sum(), np.exp(b) / np.exp(b).sum()
    expected = float(np.sum(pa * np.log(pa / pb)))
    got = sum(x * math.log(x / y) for x, y in zip(ev._softmax(list(a)), ev._softmax(list(b)), strict=True))
    assert math.isclose(got, expected, rel_tol=1e-12)


def test_more_damage_more_divergence():
    low = ev.run(ev.Params(damaged_fraction=0.01), seed=2)["metrics"]["kl_mean_nats"]
    high = ev.run(ev.Params(damaged_fraction=0.2), seed=2)["metrics"]["kl_mean_nats"]
    assert high > low


def _reference(p, seed):
    """The metrics drawn position by position from one generator, with no cache (the original loop)."""
    import random

    rng = random.Random(seed)
    nll_b = nll_o = 0.0
    kls, flips, hits = [], 0, 0
    for _ in range(p.num_positions):
        sharp = rng.uniform(0.6, 2.0)
        base = [-sharp * math.log(r + 1) + rng.gauss(0, 0.3) for r in range(ev.VOCAB)]
        opt = [x + rng.gauss(0, p.noise_scale) for x in base]
        if rng.random() < p.damaged_fraction:
            hits += 1
            order = sorted(range(ev.VOCAB), key=lambda i: -base[i])
            opt[order[1]] = opt[order[0]] + p.damage_margin
        pb, po = ev._softmax(base), ev._softmax(opt)
        token = rng.choices(range(ev.VOCAB), weights=pb)[0]
        nll_b -= math.log(pb[token])
        nll_o -= math.log(po[token])
        kls.append(math.fsum(a * math.log(a / b) for a, b in zip(pb, po, strict=True) if a > 0))
        flips += max(range(ev.VOCAB), key=pb.__getitem__) != max(range(ev.VOCAB), key=po.__getitem__)
    n = p.num_positions
    return {"ppl_baseline": math.exp(nll_b / n), "ppl_optimised": math.exp(nll_o / n), "kl_mean_nats": math.fsum(kls) / n,
            "top1_agreement": 1 - flips / n, "num_damaged_positions": hits}


def test_an_unrelated_control_reuses_the_baseline_and_changes_nothing():
    a, b = ev.Params(num_positions=300, damaged_fraction=0.1), ev.Params(num_positions=300, damaged_fraction=0.1, noise_scale=0.4, damage_margin=3.0)
    ev.baseline.cache_clear()
    first_a = ev.run(a, seed=4)
    hits = ev.baseline.cache_info().hits
    run_b = ev.run(b, seed=4)
    assert ev.baseline.cache_info().hits == hits + 1  # noise and margin left the baseline alone
    again_a = ev.run(a, seed=4)
    assert again_a == first_a
    for p, r in ((a, again_a), (b, run_b)):
        for key, value in _reference(p, 4).items():
            assert r["metrics"][key] == value, key
    assert ev.baseline(4, 300) is ev.baseline(4, 300)
