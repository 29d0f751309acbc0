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
