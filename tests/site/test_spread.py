"""`spread(…, seeds=N)` in a lesson's numbers: the range of a figure over N seeds (review
2026-12-03, B-05: one seed near capacity read as a property of the server)."""

import pytest
from kept import KeptSimulators

from simulators import api
from sitebuild import expressions

SIMS = KeptSimulators()  # the build's answers where it kept them (tests/kept.py)
NEAR_KNEE = {"num_requests": 2000, "rate_per_s": 15}


def test_a_spread_is_the_lowest_and_highest_value_over_the_seeds() -> None:
    text = expressions.figure(
        "spread(load_test.ttft_s_p99(num_requests=2000, rate_per_s=15) * 1000, seeds=5) :,.0f", SIMS
    ).text
    # computed apart, straight from the api, seed by seed
    values = [api.evaluate("load_test", seed=s, **NEAR_KNEE)["metrics"]["ttft_s_p99"] * 1000 for s in range(5)]
    assert text == f"{min(values):,.0f}–{max(values):,.0f}"
    assert min(values) < max(values)  # near the knee the seed matters, which is why the range is quoted


@pytest.mark.parametrize(
    "source",
    [
        "spread(load_test.ttft_s_p99(num_requests=2000), seeds=1)",
        "spread(load_test.ttft_s_p99(num_requests=2000), seeds=50)",
        "spread(load_test.ttft_s_p99(num_requests=2000))",
        "spread(load_test.ttft_s_p99(num_requests=2000), seeds=3) * 1000",
        "spread(spread(load_test.ttft_s_p99(num_requests=2000), seeds=3), seeds=3)",
    ],
)
def test_a_malformed_spread_is_refused_with_the_form_to_write(source: str) -> None:
    with pytest.raises(ValueError, match="spread"):
        expressions.figure(source, SIMS)
