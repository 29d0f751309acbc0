"""GuideLLM's measurement rules in simulators.engine.metrics, by hand on small cases (the
mock-server test checks them against GuideLLM's own figures on real timings)."""

import pytest

from simulators.benchmark.loadgen import cut_at, sweep_rates
from simulators.engine.cluster import Served
from simulators.engine.metrics import Phase, RequestRecord, summarize, window


def rec(i: int, start: float, e2e: float, n: int = 11, ttft: float = 0.1) -> RequestRecord:
    return RequestRecord(i, start, 0.0, ttft, e2e, (e2e - ttft) / (n - 1) if n > 1 else None, 10, n, 0, 0, 0)


@pytest.mark.parametrize(
    ("text", "phase"),
    [
        ("0", Phase()),
        ("", Phase()),
        ("10%", Phase("percent", 0.1)),
        (0.2, Phase("percent", 0.2)),
        ("5s", Phase("seconds", 5.0)),
        ("20", Phase("requests", 20.0)),
    ],
)
def test_warmup_is_a_percent_seconds_or_requests_and_none_by_default(text, phase):
    assert Phase.parse(text) == phase


@pytest.mark.parametrize("bad", ["ten", "150%", "-3", "s"])
def test_a_bad_warmup_is_refused_with_the_forms_it_takes(bad):
    with pytest.raises(ValueError, match="warm-up"):
        Phase.parse(bad)


def test_the_window_runs_from_first_start_to_last_completion_and_overlap_counts():
    recs = [rec(0, 0.0, 1.0), rec(1, 0.5, 5.0), rec(2, 2.0, 1.0)]
    assert window(recs) == (0.0, 5.5)
    # A 1 s warm-up: request 0 ended at 1.0, still touching the window; request 1 started before
    # the window and ends inside it: both overlap, as GuideLLM's get_within_range counts them.
    m = summarize(recs, warmup="1s")
    assert m["num_successful"] == 3
    m = summarize(recs, warmup="1.5s")
    assert m["num_successful"] == 2  # request 0 ended before the window began
    # throughput: completions inside the window over its length
    assert m["request_throughput_per_s"] == pytest.approx(2 / 4.0)


def test_itl_is_weighted_by_output_tokens_minus_one():
    short = rec(0, 0.0, 0.1 + 0.010, n=2)  # one gap of 10 ms
    long = rec(1, 0.0, 0.1 + 100 * 0.020, n=101)  # 100 gaps of 20 ms
    m = summarize([short, long])
    assert m["itl_s_mean"] == pytest.approx((1 * 0.010 + 100 * 0.020) / 101)
    assert m["itl_s_count"] == 101  # gaps, as GuideLLM counts them
    assert m["tpot_s_mean"] == pytest.approx((0.010 + 0.020) / 2)  # per request: what an SLO bounds
    # GuideLLM's time per output token: e2e / n weighted by n, i.e. total time over total tokens
    assert m["time_per_output_token_s_mean"] == pytest.approx((short.e2e_s + long.e2e_s) / 103)


def test_concurrency_is_the_time_weighted_number_in_flight():
    # Ten requests at 0 s for 0.1 s, then one alone until 10 s: 10 in flight for 0.1 s, 1 for 9.9 s.
    recs = [rec(0, 0.0, 10.0)] + [rec(i, 0.0, 0.1) for i in range(1, 10)]
    m = summarize(recs)
    assert m["concurrency_mean"] == pytest.approx((10 * 0.1 + 1 * 9.9) / 10.0)
    # With a 5 s warm-up the window holds only the lone request: one in flight, all the time.
    assert summarize(recs, warmup="5s")["concurrency_mean"] == pytest.approx(1.0)


def test_max_seconds_cuts_running_requests_into_incomplete():
    served = Served([rec(0, 0.0, 1.0), rec(1, 0.5, 3.0), rec(2, 2.5, 0.2)], [], 0, [], [])
    ok, cut, errored = cut_at(served, 2.0)
    assert [r.id for r in ok] == [0] and [r.id for r in cut] == [1] and errored == []
    assert cut[0].e2e_s == pytest.approx(1.5)  # its latency ends at the cut
    m = summarize(ok, incomplete=cut, max_seconds=2.0)
    assert m["num_incomplete"] == 1 and m["window_s"] == pytest.approx(2.0)


def test_sweep_rates_are_guidellms_linspace_without_its_first():
    assert sweep_rates(1.0, 10.0, 10) == pytest.approx([1 + 9 * i / 8 for i in range(1, 9)])
    assert sweep_rates(1.0, 10.0, 10)[-1] == pytest.approx(10.0)  # the throughput rate is the top
