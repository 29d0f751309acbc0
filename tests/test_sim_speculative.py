"""Speculative decoding: the closed form, a Monte Carlo that agrees with it, and the physics of the speed-up."""

import random

import numpy as np
import pytest
from test_catalog import LLAMA_3_8B_CONFIG

from simulators import api, params
from simulators.sims import speculative as spec


def _run(**kw):
    return spec.run(params.parse(spec.Params, kw), seed=0)


def test_closed_form_by_hand():
    # alpha 0.8, gamma 4: E = (1 - 0.8^5) / (1 - 0.8) = (1 - 0.32768) / 0.2 = 3.3616 tokens per pass.
    assert spec.expected_tokens(0.8, 4) == pytest.approx(3.3616, abs=1e-12)
    # alpha 0: the draft is always wrong, the target still gives its own token.
    assert spec.expected_tokens(0.0, 7) == 1.0
    # alpha 1: every draft token is kept, plus the target's bonus token.
    assert spec.expected_tokens(1.0, 4) == 5.0
    assert _run(acceptance_rate=0.8, draft_tokens=4)["metrics"]["expected_tokens_per_step"] == pytest.approx(3.3616)


def _numpy_oracle(alpha, gamma, rounds, seed):
    """Independent vectorised Monte Carlo: tokens = 1 + length of the leading run of acceptances."""
    rng = np.random.default_rng(seed)
    accept = rng.random((rounds, gamma)) < alpha
    leading = np.cumprod(accept, axis=1).sum(axis=1)
    return float((leading + 1).mean())


@pytest.mark.parametrize(("alpha", "gamma"), [(0.8, 4), (0.5, 3), (0.95, 16), (0.1, 1), (0.6, 8)])
def test_monte_carlo_agrees_with_the_closed_form(alpha, gamma):
    closed = spec.expected_tokens(alpha, gamma)
    r = _run(acceptance_rate=alpha, draft_tokens=gamma)["metrics"]
    # Within five standard errors of the closed form (a false alarm about once in 3 million runs).
    assert abs(r["monte_carlo_tokens_per_step"] - closed) < 5 * r["monte_carlo_stderr"] + 1e-9
    # The numpy oracle over 200,000 rounds and the stdlib simulation over 50,000 agree with the
    # closed form within five of their standard errors (at most about 0.06 tokens).
    assert _numpy_oracle(alpha, gamma, 200_000, seed=1) == pytest.approx(closed, abs=0.04)
    draws = spec.simulate_tokens(alpha, gamma, 50_000, random.Random(5))
    mean = sum(draws) / len(draws)
    stderr = (sum((x - mean) ** 2 for x in draws) / (len(draws) - 1) / len(draws)) ** 0.5
    assert abs(mean - closed) < 5 * stderr + 1e-9
    assert min(draws) >= 1 and max(draws) <= gamma + 1


def test_speedup_formula_by_hand():
    # E = 3.3616; drafts 4 x 0.05 x 10 ms = 2 ms; verify 10 ms: 3.3616 x 10 / 12 = 2.8013x.
    assert spec.speedup(0.8, 4, 0.05, 0.010, 0.010) == pytest.approx(3.3616 * 10 / 12)


def test_speculation_loses_when_drafts_are_bad_and_expensive():
    m = _run(acceptance_rate=0.05, draft_cost_ratio=0.9, draft_tokens=4)["metrics"]
    assert m["speedup"] < 1
    assert m["itl_s"] > m["itl_baseline_s"]
    assert m["best_draft_tokens"] == 1  # the least damage


def test_verify_pass_is_cheap_while_memory_bound():
    # Batch 1 on an H100: checking 5 tokens costs about one decode step (weights are read once).
    m = _run(batch_size=1)["metrics"]
    assert m["verify_cost_ratio"] == pytest.approx(1.0, abs=0.01)
    assert m["itl_s"] == pytest.approx(m["itl_baseline_s"] / m["speedup"])


def test_gain_shrinks_as_the_batch_grows_towards_compute_bound():
    # A short context keeps the KV cache small, so large batches make the verify pass compute-bound.
    r = _run(context_tokens=256, gpu="a100-sxm-80gb")
    s = r["speedup_by_batch"]
    assert all(b <= a + 1e-9 for a, b in zip(s, s[1:], strict=False))
    assert s[0] > 2.5 and s[-1] < 1.0
    assert r["verify_bound_batch"] is not None
    # Direct runs agree with the chart.
    small = _run(context_tokens=256, gpu="a100-sxm-80gb", batch_size=1)["metrics"]["speedup"]
    large = _run(context_tokens=256, gpu="a100-sxm-80gb", batch_size=1024)["metrics"]["speedup"]
    assert large < small
    assert large == pytest.approx(s[-1])


def test_best_draft_length_is_the_argmax():
    r = _run(acceptance_rate=0.7, draft_cost_ratio=0.1)
    best = r["metrics"]["best_draft_tokens"]
    assert r["speedup_by_gamma"][best - 1] == max(r["speedup_by_gamma"])
    assert r["metrics"]["best_speedup"] == pytest.approx(max(r["speedup_by_gamma"]))


def test_seeds_change_only_the_monte_carlo():
    a = api.run("speculative", {}, seed=1)["metrics"]
    b = api.run("speculative", {}, seed=2)["metrics"]
    assert a["speedup"] == b["speedup"]
    assert a["monte_carlo_tokens_per_step"] != b["monte_carlo_tokens_per_step"]


def test_a_readers_config_objects_price_like_the_catalogue_and_are_kept_apart_from_it():
    """A pasted config.json and a custom GPU (dicts) key the session's step-time table too: the
    catalogue's Llama-3-8B shape on the H100's own figures gives the catalogue's answer, and a
    slower custom GPU is not served the H100's kept times."""
    cfg = LLAMA_3_8B_CONFIG
    session = api.Session()
    catalogue = session.run("speculative", {"batch_size": 8})["metrics"]
    pasted = session.run("speculative", {"batch_size": 8, "model": cfg})["metrics"]
    assert pasted["speedup"] == pytest.approx(catalogue["speedup"], rel=1e-9)
    slow = {"name": "Slow GPU", "memory_GiB": 80, "hbm_bandwidth_GBps": 500, "dense_bf16_tflops": 100}
    fresh = api.run("speculative", {"batch_size": 8, "model": cfg, "gpu": slow})["metrics"]
    assert session.run("speculative", {"batch_size": 8, "model": cfg, "gpu": slow})["metrics"] == fresh
    assert fresh["itl_baseline_s"] > 2 * catalogue["itl_baseline_s"]


def test_one_draft_token_is_singular_in_the_summary_and_the_key_figure_has_no_plural_unit():
    # gamma = 1 at alpha 0.8: each pass yields 1 + 0.8 = 1.800 tokens; "1 draft token", never "1 ... tokens".
    for view in ("draft", "batch"):
        s = api.evaluate("speculative", draft_tokens=1, view=view)["summary"]
        assert "1 draft token," in s and "1 draft tokens" not in s
    assert "4 draft tokens" in api.evaluate("speculative", view="draft")["summary"]
    # The key-figures table prints label, value, unit: "Best draft length (tokens) | 1", not "1 tokens".
    assert spec.METRICS["best_draft_tokens"] == ("Best draft length (tokens)", "")


def test_at_acceptance_1_no_draft_token_is_called_less_likely_to_be_accepted():
    """Learner review (lesson 08): at acceptance 1 the summary said each extra draft token is "less
    likely to be accepted than the one before"."""
    from simulators import api

    for rate, said in ((1.0, False), (0.6, True)):
        views = [c["value"] for p in api.schema("speculative")["params"] if p["name"] == "view" for c in p["choices"]]
        texts = [
            api.run("speculative", {"acceptance_rate": rate, "draft_cost_ratio": 0.05, "view": v})["summary"]
            for v in views
        ]
        assert any("less likely to be accepted" in t for t in texts) is said


def test_the_batch_chart_names_the_context_of_its_marks():
    """Learner review: "Verify pass (gamma = 4) turns compute-bound" sat at batch 256, where the
    256-token curve collapses, but it marks the 2,000-token context; every line now names its context."""
    names = [t["name"] for t in api.run("speculative", {"view": "batch"})["figure"]["data"]]
    assert "Speed-up, gamma = 4, 2,000-token context" in names and "Speed-up, gamma = 4, 256-token context" in names
    marks = [n for n in names if n.startswith(("Verify pass", "Most sequences"))]
    assert marks and all(n.endswith(", 2,000-token context") for n in marks)
