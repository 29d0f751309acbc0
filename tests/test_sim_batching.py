"""batching: continuous batching beats static batching once the slots are contended."""

from simulators import batching
from simulators.params import parse


def test_continuous_beats_static_under_load_and_ties_when_idle():
    busy = batching.run(parse(batching.Params, {"rate_per_s": 16}), seed=0)["metrics"]
    assert busy["throughput_gain"] > 1.5
    assert busy["ttft_continuous_s_p50"] < busy["ttft_static_s_p50"] / 10
    assert busy["slot_occupancy_continuous"] > busy["slot_occupancy_static"]
    idle = batching.run(parse(batching.Params, {"rate_per_s": 0.5, "num_requests": 40}), seed=0)["metrics"]
    assert 0.9 < idle["throughput_gain"] < 1.2
