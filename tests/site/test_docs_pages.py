"""The pages of docs/ that hold computed or checkable content: validation, tools, navigation."""

import json
import re
from pathlib import Path

import pytest

from simulators import api
from simulators.benchmark import crossval, validation, vllm_validation
from simulators.core import catalog
from sitebuild import docs_pages, hooks, sims
from sitebuild.course import load_course

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_the_committed_validation_table_is_fresh():
    # docs/validation-table.md is for readers of the repository; the site renders the table at build time.
    assert (DOCS / "validation-table.md").read_text(encoding="utf-8") == crossval.page_markdown(), (
        "run: python scripts/validation_table.py"
    )


def test_the_committed_validation_runs_are_of_these_simulators():
    # docs/validation-runs.json spares a fresh clone's first build the validation's engine runs; it
    # names the simulators code that made them, and a build uses it only for that code.
    assert sims.committed_runs(ROOT), "run: python scripts/validation_table.py"


def test_committed_runs_are_read_only_for_the_code_that_made_them(tmp_path):
    (tmp_path / "simulators" / "core").mkdir(parents=True)
    (tmp_path / "simulators" / "core" / "m.py").write_text("x = 1\n")
    (tmp_path / "docs").mkdir()
    runs_file = tmp_path / sims.VALIDATION_RUNS
    runs_file.write_text(json.dumps({"simulators": sims.validation_key(tmp_path), "runs": {"ab": 1.5}}))
    assert sims.committed_runs(tmp_path) == {"ab": 1.5}
    (tmp_path / "simulators" / "core" / "m.py").write_text("x = 2\n")  # other code: not read
    assert sims.committed_runs(tmp_path) == {}
    (tmp_path / "simulators" / "sims").mkdir()  # a simulator's module is not what the runs depend on
    (tmp_path / "simulators" / "sims" / "s.py").write_text("y = 1\n")
    runs_file.write_text(json.dumps({"simulators": sims.validation_key(tmp_path), "runs": {"ab": 1.5}}))
    (tmp_path / "simulators" / "sims" / "s.py").write_text("y = 2\n")
    assert sims.committed_runs(tmp_path) == {"ab": 1.5}
    runs_file.write_text("<<<<<<< HEAD\n")  # a merge conflict: the build makes the runs instead
    assert sims.committed_runs(tmp_path) == {}


def test_the_validation_page_gets_the_table_and_a_computed_error_band():
    page = docs_pages.render_validation((DOCS / "validation.md").read_text(encoding="utf-8"))
    assert docs_pages.TABLE_MARKER not in page and docs_pages.BAND_MARKER not in page
    headers = ("Published point", "| Model | Layout |")
    # The cross-validated table (one row per quantity and engine) stands above the rows, as computed.
    cv = [ln for ln in crossval.render_markdown().splitlines() if ln.startswith("| ")]
    assert cv and all(ln in page for ln in cv)
    table = [
        ln for ln in page.splitlines() if ln.startswith("| ") and ln not in cv and not any(h in ln for h in headers)
    ]
    # The KV-capacity table, a separate section (a row whose log has no address says so).
    vllm_rows = [ln for ln in table if "| [log](https://" in ln or "| public file, no address" in ln]
    assert len(table) - len(vllm_rows) == len(validation.measurements())
    assert docs_pages.VLLM_MARKER not in page and len(vllm_rows) == len(vllm_validation.logs())
    # The band is the held-out band, as computed, and says so.
    assert validation.band_text(validation.band("held_out")) in page
    assert "held out" in page.lower()
    for words in ("kernel", "launch overhead", "scheduling overhead", "overlap", "dequantis", "attention kernels"):
        assert words in page.lower(), words
    assert "measure_gpu.py" in page


def test_the_validation_page_needs_its_markers():
    with pytest.raises(Exception, match="validation-table"):
        docs_pages.render_validation("# Validation\n\n<!-- validation-band -->\n")


def json_blocks(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    return [json.loads(m) for m in re.findall(r"^```json\n(.*?)^```$", text, re.M | re.S)]


@pytest.mark.parametrize("page", ["kv-cache-calculator.md", "roofline-planner.md"])
def test_the_tool_pages_json_examples_are_accepted_by_the_simulators(page):
    blocks = json_blocks(DOCS / "tools" / page)
    assert blocks
    for block in blocks:
        if "hbm_bandwidth_GBps" in block:
            catalog.gpu_from_dict(block)
            answer = api.run("gpu_memory", {"gpu": block, "view": "roofline"})
        else:
            catalog.model_from_config(block)
            answer = api.run("kv_cache", {"model": block})
        assert answer["ok"], answer


def test_the_kv_calculator_example_model_matches_its_published_size():
    # Mistral-Nemo is a 12B model (mistralai/Mistral-Nemo-Base-2407): the pasted shape must say so.
    from simulators.core import costmodel as cm

    config = next(b for b in json_blocks(DOCS / "tools" / "kv-cache-calculator.md") if "num_hidden_layers" in b)
    assert cm.param_counts(catalog.model_from_config(config)).total / 1e9 == pytest.approx(12.2, abs=0.1)


def test_tool_pages_compare_h100_and_a100_and_expose_every_control():
    for page, sim in (("kv-cache-calculator.md", "kv_cache"), ("roofline-planner.md", "gpu_memory")):
        text = (DOCS / "tools" / page).read_text(encoding="utf-8")
        blocks = re.findall(r"^```sim\n(.*?)^```$", text, re.M | re.S)
        mine = [b for b in blocks if f"sim: {sim}\n" in b]
        assert len(mine) == 2, page
        assert "gpu: h100-sxm" in mine[0] and "gpu: a100-sxm-80gb" in mine[1]
        assert all("controls:" not in b for b in blocks), "a tool exposes every control (no controls: list)"


def test_navigation_has_tools_and_the_guides():
    course = load_course(ROOT / "lessons")
    nav = hooks._nav(course, DOCS)
    sections = {k: v for entry in nav for k, v in entry.items()}
    assert sections["Tools"] == [
        "tools/diagnose.md",
        "tools/batching-simulator.md",
        "tools/compare-benchmark.md",
        "tools/kv-cache-calculator.md",
        "tools/roofline-planner.md",
    ]
    about = sections["About this site"]
    for page in ("glossary.md", "validation.md", "instructors.md", "contributing.md", "extending.md"):
        assert page in about
    assert "validation-table.md" not in about


def test_links_to_lessons_missing_from_the_build_keep_their_text_only():
    # A build of a subset of lessons (`--lessons DIR`, an instructor hiding lessons) stays strict-clean.
    course = load_course(ROOT / "lessons")
    text = "See [lesson 01](../lessons/01-kv-cache.md#the-bottleneck) and [lesson 99](../lessons/99-gone.md)."
    out = docs_pages.unlink_missing_lessons(text, "tools/x.md", course)
    assert out == "See [lesson 01](../lessons/01-kv-cache.md#the-bottleneck) and lesson 99."
    assert docs_pages.unlink_missing_lessons("[a](lessons/99-gone.md)", "instructors.md", course) == "a"
