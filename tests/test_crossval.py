"""Leave-one-group-out: the refit without a source group, checked on cases computed by hand."""

import math
import statistics

import pytest

from simulators.benchmark import crossval, fitting, validation
from simulators.core import efficiency as ef

FASTDIV = "ggml-org/llama.cpp pull request #15802 'CUDA: fastdiv"  # one calibration row: llama.cpp's bandwidth


def test_solve_finds_the_root_from_either_side_and_both_directions():
    for x0 in (0.31, 0.9):
        assert fitting.solve(lambda x: math.log(x / 0.6), x0, 0.3, 1.0, True) == pytest.approx(0.6, rel=2e-3)
        # a constant that slows the prediction as it grows (gemm_m_half, layer_overhead_us)
        assert fitting.solve(lambda x: math.log(0.6 / x), x0, 0.3, 1.0, False) == pytest.approx(0.6, rel=2e-3)
    assert fitting.solve(lambda x: math.log(x / 5.0), 0.5, 0.3, 1.0, True) == pytest.approx(1.0, rel=1e-6)  # a bound


def test_the_full_fit_reproduces_the_shipped_constants():
    fitted = fitting.fit()
    for f in fitting.FITS:
        shipped = getattr(ef.profile(f.profile), f.factor)
        assert getattr(fitted[f.profile], f.factor) == pytest.approx(shipped, rel=0.015), (f.profile, f.factor)


def test_leaving_out_the_only_row_of_a_constant_falls_back_to_the_other_engines_median():
    assert FASTDIV in fitting.calibration_groups()
    assert fitting.affected(FASTDIV) == {"llamacpp"}
    refit = fitting.fit(without=FASTDIV)
    expected = statistics.median([ef.profile("vllm").bandwidth, ef.profile("trtllm").bandwidth])
    assert refit["llamacpp"].bandwidth == pytest.approx(expected, rel=1e-12)
    # the prior is below the fitted 0.87: the group's own row, scored without it, becomes pessimistic
    assert refit["llamacpp"].bandwidth < fitting.fit()["llamacpp"].bandwidth
    row = next(s for s in crossval.scored() if s.fit.id == "llamacpp-llama3-8b-q4_0-rtx3090-pp512-ub1")
    assert row.cv.error < row.fit.error
    assert row.cv.predicted == pytest.approx(row.fit.predicted * refit["llamacpp"].bandwidth / 0.87, rel=0.05)
    # profiles with no row in the group are the shipped ones
    assert refit["vllm"] == ef.profile("vllm") and refit["trtllm"] == ef.profile("trtllm")


def test_a_tied_constant_follows_its_source_when_the_source_is_refit():
    torchao = validation.source_group(next(e for e in validation.measurements() if e["id"].startswith("torchao")))
    refit = fitting.fit(without=torchao)
    assert fitting.affected(torchao) == {"vllm", "sglang"}
    assert refit["sglang"].bandwidth == refit["vllm"].bandwidth
    expected = statistics.median([refit["trtllm"].bandwidth, refit["llamacpp"].bandwidth])
    assert refit["vllm"].bandwidth == pytest.approx(expected)


def test_held_out_rows_keep_their_prediction_and_calibration_groups_are_scored_without_themselves():
    calibrated = set(fitting.calibration_groups())
    rows = crossval.scored()
    assert rows and all(s.fit.is_speed and s.fit.role != "check" for s in rows)
    for s in rows:
        if s.fit.group not in calibrated:
            assert s.cv == s.fit
    moved = [s for s in rows if s.fit.group in calibrated and s.cv.predicted != s.fit.predicted]
    assert {s.fit.group for s in moved} == calibrated  # every calibration group is re-predicted
    cv, fit = crossval.by("all")["all"]
    assert cv.points == fit.points == len(rows)
    assert cv.median_abs_error > fit.median_abs_error  # the in-sample fit flatters itself


def test_statistics_are_those_of_the_rows():
    rows = [r.cv for r in crossval.scored()]
    s = crossval.stats(rows)
    errors = sorted(abs(r.error) for r in rows)
    assert s.median_abs_error == pytest.approx(statistics.median(errors))
    assert s.within_35 == pytest.approx(sum(e <= 0.35 for e in errors) / len(errors))
    assert s.optimistic == sum(r.error > 0 for r in rows)
    assert sum(x <= s.p90_abs_error for x in errors) >= 0.9 * len(errors)
    assert sum(x < s.p90_abs_error for x in errors) < 0.9 * len(errors)  # and no smaller bound
    per_q = crossval.by("quantity")
    assert sum(cv.points for cv, _ in per_q.values()) == s.points
    text = crossval.render_markdown()
    assert "Cross-validated error" in text and "Target (issue 29)" in text
    for name in per_q:
        assert f"| {name} |" in text


def test_every_group_is_listed_and_every_miss_names_its_cause(monkeypatch):
    groups = crossval.by("group")
    assert sum(cv.points for cv, _ in groups.values()) == crossval.by("all")["all"][0].points
    text = crossval.render_groups()
    misses = [g for g, (cv, _) in groups.items() if cv.median_abs_error > crossval.MISS]
    for g, (cv, _) in groups.items():
        assert f"| {g} | {cv.points} | {cv.median_abs_error:.0%} |" in text
    notes = {n["group"]: n["cause"] for n in validation.group_notes()}
    for g in misses:
        assert f"- **{g}**" in text and notes[g] in text
    # a note must name a group of the table (a renamed source leaves it stale)
    assert set(notes) <= set(groups), set(notes) - set(groups)
    if misses:  # a miss without a note fails the build, naming the group
        monkeypatch.setattr(validation, "group_notes", lambda: [])
        with pytest.raises(ValueError, match="no \\[\\[group_note\\]\\]"):
            crossval.render_groups()
