"""compare_benchmark: the simulated GuideLLM sweep a report is drawn over, and what its summary says."""

from simulators import api


def test_the_summary_says_why_the_sweep_stops_short_of_the_ceiling_and_a_longer_run_comes_closer():
    """Learner review: the sweep's top rate stopped well under the ceiling and nothing said why. Its top
    is the throughput run's rate, whose fill and drain weigh less as the run grows."""
    short, long = (api.run("compare_benchmark", {"num_requests": n}) for n in (300, 2000))
    top = [a["metrics"]["sim_sweep_top_per_s"] for a in (short, long)]
    ceiling = short["metrics"]["sim_max_throughput_per_s"]
    assert long["metrics"]["sim_max_throughput_per_s"] == ceiling  # the ceiling is its own run's
    assert top[0] < 0.9 * ceiling and top[0] < top[1] <= ceiling
    assert "stops short of the ceiling because its top rate is the throughput run's: 300 requests" in short["summary"]
    said = "stops short" in long["summary"]
    assert said == (top[1] < 0.9 * ceiling)
