"""Key figures a person reads: in the unit one would say, the simulator's headline figures first,
at most KEY_FIGURES rows (the rest under "Data table"); the build (sitebuild/numbers.py) and the
browser (docs/assets/js/numbers.mjs) print them alike."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from simulators import api
from sitebuild import sim_block
from sitebuild.numbers import KEY_FIGURES, format_metric, format_number
from sitebuild.sims import Simulators

ROOT = Path(__file__).resolve().parents[2]
NUMBERS_JS = ROOT / "docs" / "assets" / "js" / "numbers.mjs"

# (value, declared unit) -> (text, unit shown), worked out by hand.
METRIC_CASES = [
    ((0.04782, "s"), ("47.8", "ms")),  # 47.82 ms, 3 significant digits
    ((2.618e-5, "s"), ("26.2", "µs")),
    ((1.87, "s"), ("1.87", "s")),
    ((642.09, "s"), ("642", "s")),
    ((1234.5, "s"), ("1,235", "s")),  # from 1,000 up: whole, with separators, halves up
    ((0.9996, "s"), ("1", "s")),  # rounds to 1.00 s, not to "1,000 ms"
    ((0.0009996, "s"), ("1", "ms")),
    ((5e-10, "s"), ("0.0005", "µs")),  # below the smallest unit: stays in it
    ((0, "s"), ("0", "s")),
    ((58.17e9, "B"), ("58.2", "GB")),
    ((131072, "B"), ("131", "KB")),
    ((1073741824, "bytes"), ("1.07", "GB")),
    ((512, "bytes"), ("512", "bytes")),
    ((10.25e9, "B"), ("10.3", "GB")),  # an exact half: up, as JavaScript's toPrecision rounds
    ((1.125, "B"), ("1.125", "B")),  # eighths under 10 written out (lesson 04's bitmask: 1 + 1/8 B)
    ((1.0625, "B"), ("1.06", "B")),  # a sixteenth: three digits
    ((0.268435456, "GB"), ("268", "MB")),
    ((-2.5, "GB"), ("-2.5", "GB")),
    ((0.5, "GiB"), ("512", "MiB")),  # 0.5 x 1,024
    ((54.17382812, "GiB"), ("54.2", "GiB")),
    ((1.3845036e14, "FLOP"), ("138", "TFLOP")),
    ((4.87891653e17, "FLOP"), ("488", "PFLOP")),
    ((0.3736551163, ""), ("0.3737", "")),  # a share: the plain rule, 4 significant digits
    ((443792, "tokens"), ("443,792", "tokens")),
    ((200.990874, "x"), ("200.99", "x")),  # a ratio: 2 decimals, as vLLM logs its concurrency (not "201")
    ((2989.8276, "x"), ("2,989.83", "x")),
    ((0.125, "x"), ("0.13", "x")),  # an exact half: away from zero on both sides
    ((3, "x"), ("3", "x")),  # a whole number stays whole
    ((1.0, "x"), ("1", "x")),  # a float too (JSON gives the browser 1)
    ((True, ""), ("yes", "")),
    ((False, "s"), ("no", "s")),
]
NUMBER_CASES = [(0.009702514142, "0.009703"), (1896.768662, "1,897"), (0.000119975, "0.00012"), (5.0, "5"), (2, "2")]


@pytest.mark.parametrize(("given", "shown"), METRIC_CASES)
def test_a_key_figure_is_in_the_unit_a_person_would_say(given: tuple, shown: tuple) -> None:
    assert format_metric(*given) == shown


def test_the_browser_prints_every_figure_as_the_build_does() -> None:
    node = shutil.which("node")
    assert node is not None, "Node.js runs the browser's formatting rules"
    script = (
        f"import {{ formatMetric, formatNumber, KEY_FIGURES }} from {json.dumps(NUMBERS_JS.as_uri())};\n"
        "const [metrics, numbers] = JSON.parse(process.argv[1]);\n"
        "console.log(JSON.stringify([metrics.map(([v, u]) => formatMetric(v, u)),"
        " numbers.map((v) => formatNumber(v)), KEY_FIGURES]));"
    )
    given = [[list(g) for g, _ in METRIC_CASES], [v for v, _ in NUMBER_CASES]]
    done = subprocess.run(
        [node, "--input-type=module", "-e", script, json.dumps(given)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    metrics, numbers, key_figures = json.loads(done.stdout)
    assert [tuple(m) for m in metrics] == [s for _, s in METRIC_CASES]
    assert numbers == [s for _, s in NUMBER_CASES] == [format_number(v) for v, _ in NUMBER_CASES]
    assert key_figures == KEY_FIGURES


ROW = re.compile(
    r'<tr data-metric="([^"]+)" data-unit="([^"]*)"><th scope="row">[^<]*</th><td>([^<]*)</td><td>([^<]*)</td>'
)


@pytest.fixture(scope="module")
def sims() -> Simulators:
    return Simulators()


@pytest.mark.parametrize("name", list(api.SIMULATORS))
def test_key_figures_are_the_first_declared_metrics_and_the_rest_is_one_click_away(name: str, sims: Simulators) -> None:
    page = sim_block.render(f"sim: {name}\n", sims, {})
    key = page[page.index('<table class="sim-metrics">') : page.index("</table>")]
    rows = ROW.findall(key)
    metrics = sims.run(name, {})["metrics"]
    given = getattr(api.SIMULATORS[name], "GIVEN", ())  # absent until the reader gives them
    declared = [(m["name"], m["unit"]) for m in api.schema(name)["metrics"] if m["name"] not in given]
    assert [(k, u) for k, u, _, _ in rows] == declared[:KEY_FIGURES]
    more = ROW.findall(page[page.index('<details class="sim-data">') :])
    assert [(k, u) for k, u, _, _ in more] == declared[KEY_FIGURES:]
    assert [(text, shown) for k, u, text, shown in rows + more] == [format_metric(metrics[k], u) for k, u in declared]
