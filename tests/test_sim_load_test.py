"""load_test: GuideLLM's names in the export; goodput rises with load below the knee."""

from simulators import load_test
from simulators.engine.loadgen import GUIDELLM_NAMES
from simulators.params import parse


def test_export_uses_guidellm_metric_names():
    r = load_test.run(parse(load_test.Params, {"view": "goodput"}), seed=0)
    header = r["csv"].splitlines()[0].split(",")
    for name in ("requests_per_second", "time_to_first_token_ms_median", "inter_token_latency_ms_p99", "time_per_output_token_ms_mean"):
        assert name in header
    rec = r["guidellm"][1]
    assert set(GUIDELLM_NAMES) <= set(rec)
    # GuideLLM's time per output token includes the first token, so it is never below its ITL.
    assert rec["time_per_output_token_ms"]["mean"] >= rec["inter_token_latency_ms"]["mean"]


def test_goodput_grows_with_offered_load_below_the_knee():
    r = load_test.run(parse(load_test.Params, {"view": "goodput"}), seed=0)
    below = [x["goodput"] for x in r["open"] if x["offered"] <= 0.8 * r["metrics"]["max_throughput_per_s"]]
    assert len(below) >= 3 and below == sorted(below)


def test_closed_loop_cannot_exceed_its_users_and_open_loop_queues_past_capacity():
    r = load_test.run(parse(load_test.Params, {"view": "knee"}), seed=0)
    # One closed-loop user is the synchronous profile: never more than one request in flight.
    assert r["closed"][0]["ttft_p99"] < 0.5
    assert r["open"][-1]["ttft_p99"] > r["open"][0]["ttft_p99"]
