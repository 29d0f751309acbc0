"""The validation table: every published point has a source, a prediction and a finite ratio."""

import importlib.util
import math
from pathlib import Path

import pytest

from simulators.benchmark import crossval, fitting, validation

ROOT = Path(__file__).resolve().parent.parent


def test_every_measurement_has_a_source_conditions_a_role_and_a_known_quantity():
    entries = validation.measurements()
    assert len(entries) >= 10
    assert len({e["id"] for e in entries}) == len(entries)
    for e in entries:
        assert e["source"].strip() and e["conditions"].strip() and e["kind"].strip(), e["id"]
        assert e["quantity"] in validation.PREDICTIONS, e["id"]
        assert e["value"] > 0
        assert e.get("role") in validation.ROLES, e["id"]
        if e["quantity"] in validation.RATES + validation.TIMES and e["role"] != "check":
            assert e.get("engine"), e["id"]  # every speed point names the engine that measured it
    for s in validation.skipped():
        assert s["source"].strip() and s["reason"].strip()


def test_rows_are_computed_and_ratios_finite():
    rows = validation.rows()
    assert len(rows) == len(validation.measurements())
    for r in rows:
        assert math.isfinite(r.ideal) and math.isfinite(r.predicted) and r.predicted > 0
        assert math.isfinite(r.ratio) and 0.1 < r.ratio < 10, (r.id, r.ratio)


def test_no_measurement_beats_the_ideal_ceiling():
    # Ideal is every factor 1.0 and no overhead on the engine's own kernel path: nothing real is faster.
    for r in validation.rows():
        if r.quantity in validation.RATES:
            assert r.published <= r.ideal, r.id
            assert r.predicted <= r.ideal, r.id
        elif r.quantity in validation.TIMES and r.role != "check":
            assert r.ideal <= r.published and r.ideal <= r.predicted, r.id
        elif r.quantity in validation.TIMES:
            assert r.ideal <= r.predicted, r.id  # course claims may sit below the floor; the page says so
        else:
            assert r.ideal == r.predicted  # sizes and ridge points do not depend on efficiency


def test_calibration_rows_are_fitted_and_the_exact_checks_hold():
    by_id = {r.id: r for r in validation.rows()}
    # simulators/benchmark/fitting.py solves a factor fitted on one row exactly; one fitted on
    # several makes their ratios' geometric mean 1, leaving each its own residual.
    joint = {one for f in fitting.FITS if len(f.rows) > 1 for one in f.rows}
    assert joint  # the layer overhead's rows
    for r in by_id.values():
        if r.role == "calibration":
            assert abs(r.error) < (0.10 if r.id in joint else 0.05), (r.id, r.error)
    assert by_id["claim-kv-llama3-8b"].predicted == 131_072
    assert by_id["claim-ridge-a100"].predicted == pytest.approx(153.0, abs=0.1)
    assert by_id["llamacpp-llama2-7b-params"].predicted == pytest.approx(6.74, abs=0.01)


def test_the_held_out_set_is_broad_and_its_band_is_computed_from_it_alone():
    held = [r for r in validation.rows() if r.role == "held_out" and r.is_speed]
    b = validation.band("held_out")
    assert b.points == len(held) >= 20 and b.groups == len({r.group for r in held}) >= 7
    assert len(b.engines) >= 3 and len(b.gpus) >= 4
    errors = sorted(abs(r.error) for r in held)
    n = len(errors)
    median = errors[n // 2] if n % 2 else (errors[n // 2 - 1] + errors[n // 2]) / 2
    assert b.median_abs_error == pytest.approx(median)
    assert b.within_35 == pytest.approx(sum(1 for x in errors if x <= 0.35) / n)
    # Calibration rows never count in the held-out band, nor does a row from a calibration row's
    # source group (one submission, campaign or paper table is calibration or held out as a whole).
    calibration = [r for r in validation.rows() if r.role == "calibration"]
    assert not {r.id for r in held} & {r.id for r in calibration}
    assert not {r.group for r in held} & {r.group for r in calibration}
    twins = [r for r in validation.rows() if r.role == "same_source"]
    assert twins and all(e["role"] == "held_out" for e in validation.measurements() if e["id"] in {r.id for r in twins})


def test_source_groups_join_one_submission_and_one_campaign():
    by_id = {r.id: r for r in validation.rows()}
    # The 1x MI300X row of the submission whose 8x row sets vLLM's FP8 factor is not held out.
    amd = [r for r in by_id.values() if r.group == "MLPerf Inference v4.1 AMD"]
    assert {r.role for r in amd} == {"calibration", "same_source"}
    # trtllm-bench's table is one campaign: its rows share the group of its two calibration rows.
    trt = {r.group for r in by_id.values() if "perf-overview.md" in r.source}
    assert len(trt) == 1
    assert validation.source_group({"source": "x", "group": "named"}) == "named"


def test_errors_and_ratios_read_as_speeds_for_times_too():
    by_id = {r.id: r for r in validation.rows()}
    t = by_id["vllm-ci-latency-llama31-8b-h200-b8"]  # a time: shorter predicted = optimistic = positive
    assert t.error == pytest.approx(t.published / t.predicted - 1)
    assert t.ratio == pytest.approx(1 / (1 + t.error))
    s = by_id["mlperf41-llama2-70b-offline-h100"]  # a rate
    assert s.error == pytest.approx(s.predicted / s.published - 1)
    assert s.ratio == pytest.approx(1 / (1 + s.error))


def test_the_offline_prediction_counts_prefill():
    # Same point with a 10x longer prompt: more prefill work per output token, so fewer tokens/s.
    e = next(x for x in validation.measurements() if x["id"] == "mlperf41-llama2-70b-offline-h100")
    p = validation.ef.profile("trtllm")
    long = dict(e, input_tokens=e["input_tokens"] * 10, max_input_tokens=1 << 20, max_total_tokens=1 << 20)
    assert validation.PREDICTIONS[e["quantity"]](long, p) < validation.PREDICTIONS[e["quantity"]](e, p)


def test_markdown_has_one_row_per_point_and_escapes_pipes():
    text = validation.render_markdown()
    table = [ln for ln in text.splitlines() if ln.startswith("| ") and "Published point" not in ln]
    assert len(table) == len(validation.measurements())
    for ln in table:
        # 10 columns: 11 unescaped pipes.
        assert ln.replace("\\|", "").count("|") == 11, ln
    assert text.index("### Held out") < text.index("### Calibration") < text.index("### Sizes")
    assert "Not checked yet" in text


def test_the_script_is_importable_and_renders_the_same_text():
    spec = importlib.util.spec_from_file_location("validation_table", ROOT / "scripts" / "validation_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.render_markdown() == crossval.page_markdown()
    assert validation.render_markdown().split("\n", 1)[1] in mod.render_markdown()
    assert mod.OUTPUT == ROOT / "docs" / "validation-table.md"


def test_the_streaming_rate_row_predicts_the_smaller_of_bandwidth_share_and_sm_cap():
    """A matvec_stream_GBps row: GB/s of a one-token step = min(bandwidth share x peak,
    SMs x boost clock x bytes per SM-cycle); the ideal column is the peak."""
    by_id = {r.id: r for r in validation.rows()}
    p = validation.ef.profile("llamacpp")
    for rid, gid in (
        ("llamacpp-stream-llama3-8b-a100-sxm-tg512", "a100-sxm-80gb"),
        ("llamacpp-stream-llama3-8b-h100-pcie-tg512", "h100-pcie"),
    ):
        g = validation.gpus()[gid]
        r = by_id[rid]
        expected = min(
            p.bandwidth * g.hbm_bandwidth_GBps, g.sm_count * g.boost_clock_MHz * 1e-3 * p.matvec_bytes_per_sm_cycle
        )
        assert r.role == "calibration" and r.quantity in validation.RATES
        assert r.predicted == pytest.approx(expected, rel=1e-9)
        assert r.ideal == pytest.approx(g.hbm_bandwidth_GBps, rel=1e-9)
