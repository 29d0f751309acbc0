"""Lesson 00.1's generation widgets: the sampling view labelled as itself (learner report).

The fixed distribution has twelve candidates, logits 4.1 down to -1.5. At temperature 1 the last
one, " purple", has e^(-1.5 - 4.1) / sum_j e^(z_j - 4.1) = 0.0037 / 3.02, about 0.12%: kept (no
top-k, no top-p) but too small to show as a percentage.
"""

import math

import pytest

from simulators import api
from sitebuild.numbers import KEY_FIGURES


def key_figures(answer):
    """The widget's "Key figures": the answer's metrics in METRICS order, the first KEY_FIGURES
    (sitebuild/sim_block.py, results.js); the rest go under "More figures"."""
    order = [m["name"] for m in api.schema("generation")["metrics"]]
    return [k for k in order if k in answer["metrics"]][:KEY_FIGURES]


def test_the_sampling_view_shows_the_samplers_figures_first_and_prices_no_time():
    """Its key figures are the entropy and the candidates left, not TTFT, ITL and E2E, and no
    "Times priced with" suffix is added: the view prices no time."""
    sampling = api.run("generation", {"view": "sampling"})
    assert key_figures(sampling) == ["sample_entropy_bits", "sample_candidates"]
    assert "priced_by" not in sampling and "priced" not in sampling["summary"]
    timeline = api.run("generation", {})  # the timeline prices times and says with what
    assert key_figures(timeline)[:3] == ["ttft_s", "itl_s", "e2e_s"]
    assert timeline["summary"].endswith("Times priced with the vLLM (default settings) profile.")
    # The caption above every generation widget is the module's title: it names both charts.
    assert "sampled" in api.schema("generation")["title"]


def test_the_summary_lists_or_counts_every_candidate_it_says_it_keeps():
    """12 kept at temperature 1: 11 shown with their percentage, " purple" (0.12%) counted."""
    answer = api.run("generation", {"view": "sampling"})
    assert answer["metrics"]["sample_candidates"] == 12
    assert min(answer["result"]["probabilities"]) == pytest.approx(0.00122, abs=1e-5)
    assert answer["summary"].startswith("Sampling keeps 12 candidate tokens (entropy 2.76 bits): memory 33%,")
    assert answer["summary"].endswith("tricky 1%, and 1 more under 0.5%.")
    cold = api.run("generation", {"view": "sampling", "temperature": 0.2})  # 91%, 7%, 2%, nine tiny ones
    assert cold["summary"].endswith("bandwidth 2%, and 9 more under 0.5% each.")


def test_greedy_keeps_one_token_with_zero_entropy_not_minus_zero():
    """Temperature 0: one token with probability 1, entropy -1 * log2(1) = 0, printed "0.00"."""
    answer = api.run("generation", {"view": "sampling", "temperature": 0})
    entropy = answer["metrics"]["sample_entropy_bits"]
    assert entropy == 0.0 and math.copysign(1.0, entropy) == 1.0
    assert answer["summary"] == "Sampling keeps 1 candidate token (entropy 0.00 bits): memory 100%."


def test_a_request_past_the_trained_context_says_so():
    """Learner review (F4): the 20,000-token timeline ran past Llama-3-8B's 8,192 tokens without a word."""
    long = api.run("generation", {"output_tokens": 20000})
    assert "was trained for 8,192 tokens of context" in long["summary"]
    assert "trained for" not in api.run("generation", {})["summary"]


def test_a_one_token_answer_has_no_decode_steps_to_describe():
    """Learner review (lesson 08): "Each of the next 0 tokens needs its own ... pass, 0.00 ms apart"."""
    told = api.run("generation", {"output_tokens": 1})["summary"]
    assert "next 0 tokens" not in told and "no decode step follows" in told


def test_a_batch_prefill_is_said_to_be_every_prompt_in_one_pass():
    """Learner review: at batch 128 the summary gave "prefill of 2,000 tokens ... after 7,168.9 ms" under
    the title "One request"; both now say the pass holds every request's prompt."""
    r = api.run("generation", {"batch_size": 128})
    assert "the prefill of 128 x 2,000 tokens, one pass for all, is" in r["summary"]
    assert "gives each request its first token after" in r["summary"]
    assert r["figure"]["layout"]["title"]["text"].startswith("One of 128 requests in a batch on ")
    one = api.run("generation", {})
    assert "batch 1: prefill of 2,000 tokens is" in one["summary"] and one["figure"]["layout"]["title"][
        "text"
    ].startswith("One request on ")
