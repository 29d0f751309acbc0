"""The cheapest-deployment chart fits a phone: short, unique bar labels; the full configuration in the hover."""

from simulators import api


def test_bars_carry_short_unique_labels_and_the_full_configuration_in_the_hover() -> None:
    answer = api.run("cheapest", {"gpus": "h100-sxm, l40s, rtx-3090", "num_requests": 100})
    assert answer["ok"]
    table = answer["result"]["table"]
    (trace,) = answer["figure"]["data"]
    assert trace["orientation"] == "h" and answer["figure"]["layout"]["yaxis"]["type"] == "category"
    # Cheapest on top: plotly lists categories bottom-up, so the first row is the last label.
    labels = trace["y"][::-1]
    assert [s.split(" ", 1)[0] for s in labels] == [f"{i + 1}." for i in range(len(table))]
    for label, x in zip(labels, table, strict=True):  # GPUs, GPU id and the layout, as the table has them
        assert label.startswith(f"{table.index(x) + 1}. {x['num_gpus']} x {x['gpu_id']} ")
        assert (f"TP{x['tensor_parallel_size']}" in label) == (x["tensor_parallel_size"] > 1)
        assert (f"PP{x['pipeline_parallel_size']}" in label) == (x["pipeline_parallel_size"] > 1)
        assert (f"{x['replicas']}x" in label) == (x["replicas"] > 1)
    assert len(set(labels)) == len(labels) and max(len(s) for s in labels) <= 28
    assert trace["customdata"][::-1] == [x["config"] for x in table]
    assert trace["x"][::-1] == [x["usd_per_hour"] for x in table]


def test_the_latency_view_shows_the_whole_allowed_box_with_its_corner_inside() -> None:
    """Learner review: the targets' marker sat on the plot's edge, half clipped at 390 px."""
    params = {"gpus": "h100-sxm, l40s, rtx-3090", "num_requests": 100, "view": "latency"}
    answer = api.run("cheapest", params)
    layout, table = answer["figure"]["layout"], answer["result"]["table"]
    x_top = max([answer["result"]["tpot_slo_s"] * 1e3, *(x["tpot_s"] * 1e3 for x in table)])
    y_top = max([answer["result"]["ttft_slo_s"] * 1e3, *(x["ttft_s"] * 1e3 for x in table)])
    assert layout["xaxis"]["range"] == [0, 1.1 * x_top] and layout["yaxis"]["range"] == [0, 1.1 * y_top]
