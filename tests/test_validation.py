"""The validation table: every published point has a source, a prediction and a finite ratio."""

import importlib.util
import math
from pathlib import Path

import pytest

from simulators import validation

ROOT = Path(__file__).resolve().parent.parent
RATES = {"decode_tokens_per_s", "decode_tokens_per_s_per_gpu"}
TIMES = {"decode_step_ms", "prefill_ms"}


def test_every_measurement_has_a_source_conditions_and_a_known_quantity():
    entries = validation.measurements()
    assert len(entries) >= 10
    assert len({e["id"] for e in entries}) == len(entries)
    for e in entries:
        assert e["source"].strip() and e["conditions"].strip() and e["kind"].strip(), e["id"]
        assert e["quantity"] in validation.PREDICTIONS, e["id"]
        assert e["value"] > 0
    for s in validation.skipped():
        assert s["source"].strip() and s["reason"].strip()


def test_rows_are_computed_and_ratios_finite():
    rows = validation.rows()
    assert len(rows) == len(validation.measurements())
    for r in rows:
        assert math.isfinite(r.ideal) and math.isfinite(r.default) and r.default > 0
        assert math.isfinite(r.ratio) and 0.1 < r.ratio < 10, (r.id, r.ratio)


def test_ideal_bounds_the_default():
    by_id = {r.id: r for r in validation.rows()}
    for e in validation.measurements():
        r = by_id[e["id"]]
        if e["quantity"] in RATES:
            assert r.ideal >= r.default  # a ceiling for a rate
        elif e["quantity"] in TIMES:
            assert r.ideal <= r.default  # a floor for a time
        else:
            assert r.ideal == r.default  # sizes and ridge points do not depend on efficiency


def test_the_calibration_row_and_the_exact_checks():
    by_id = {r.id: r for r in validation.rows()}
    # The default bandwidth efficiency (0.70) comes from torchao's bf16 row, so it must land close.
    assert by_id["torchao-llama3-8b-bf16-a100"].ratio == pytest.approx(1.0, abs=0.05)
    assert by_id["claim-kv-llama3-8b"].default == 131_072
    assert by_id["claim-ridge-a100"].default == pytest.approx(153.0, abs=0.1)
    assert by_id["llamacpp-llama2-7b-params"].default == pytest.approx(6.74, abs=0.01)


def test_markdown_has_one_row_per_point_and_escapes_pipes():
    text = validation.render_markdown()
    table = [ln for ln in text.splitlines() if ln.startswith("| ") and "Published point" not in ln]
    assert len(table) == len(validation.measurements())
    for ln in table:
        # 9 columns: 10 unescaped pipes.
        assert ln.replace("\\|", "").count("|") == 10, ln
    assert "Not checked yet" in text


def test_the_script_is_importable_and_renders_the_same_text():
    spec = importlib.util.spec_from_file_location("validation_table", ROOT / "scripts" / "validation_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.render_markdown() == validation.render_markdown()
    assert mod.OUTPUT == ROOT / "docs" / "validation-table.md"
