"""Lessons quote a default time with the validation page's held-out band (`heldout.*` in prose), and a
factor of the default engine profile as the simulators read it (`profile.*`)."""

import statistics
from pathlib import Path

import pytest
from kept import KeptSimulators
from lesson_fixtures import FRONT

from simulators.benchmark import validation
from sitebuild import course, expressions

SIMS = KeptSimulators()  # the build's answers where it kept them (tests/kept.py)


def _held_out_errors() -> list[float]:
    return [abs(r.error) for r in validation.rows() if r.role == "held_out" and r.is_speed]


def test_the_band_in_prose_is_the_held_out_rows_own_statistics() -> None:
    errors = _held_out_errors()
    assert expressions.figure("heldout.median_error", SIMS).value == statistics.median(errors)
    assert expressions.figure("heldout.points", SIMS).value == len(errors)
    within = sum(1 for e in errors if e <= 0.35) / len(errors)
    assert expressions.figure("heldout.within_35", SIMS).value == within
    # No calibration or check row counts: the band is on held-out rows only.
    every = [r for r in validation.rows() if r.is_speed]
    assert len(errors) < len(every)


def test_a_time_is_quoted_between_its_band_edges() -> None:
    t = expressions.figure("generation.ttft_s()", SIMS).value
    e = statistics.median(_held_out_errors())
    low = expressions.figure("generation.ttft_s() * (1 - heldout.median_error)", SIMS).value
    high = expressions.figure("generation.ttft_s() * (1 + heldout.median_error)", SIMS).value
    assert low == pytest.approx(t * (1 - e)) and high == pytest.approx(t * (1 + e))
    assert low < t < high


def test_an_unknown_statistic_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="heldout has no figure 'median'"):
        expressions.figure("heldout.median", SIMS)


@pytest.mark.parametrize("name", ["heldout", "profile"])
def test_reserved_names_cannot_be_scenarios(tmp_path: Path, name: str) -> None:
    text = FRONT.replace("summary:", f"scenarios:\n  {name}: {{batch_size: 8}}\nsummary:", 1) + "Body.\n"
    path = tmp_path / "01-kv-cache.md"
    path.write_text(text)
    with pytest.raises(course.LessonError, match="reserved"):
        course.parse_lesson(path)


def test_a_profile_constant_is_the_one_the_simulators_price_with() -> None:
    from simulators.core import efficiency as ef

    p = ef.profile(ef.DEFAULT)
    assert expressions.figure("profile.gemm_fp8", SIMS).value == p.gemm_fp8
    assert expressions.figure("profile.layer_overhead_us * 32", SIMS).value == p.layer_overhead_us * 32
    with pytest.raises(ValueError, match="profile has no figure 'gemm_fp9'"):
        expressions.figure("profile.gemm_fp9", SIMS)
