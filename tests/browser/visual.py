"""Screenshots compared with committed baselines, and the layout measured in the page.

A screenshot is reduced before it is kept or compared: grey, half the width and half the height
(a quarter of the area, each pixel the mean of four), 16 grey levels, a 4-bit PNG. That keeps a
baseline small (about 20 KB for a 1280 x 720 view) and forgives sub-pixel anti-aliasing, while a
moved block, a lost grid column or a missing chart still changes thousands of pixels.

Accept new baselines (after a deliberate change of the look; check the diff images first):

    COURSE_ACCEPT_SCREENSHOTS=1 python -m pytest -q tests/browser/test_visual.py

On a mismatch, tests/browser/visual-diffs/ (git-ignored) receives NAME.actual.png and
NAME.diff.png (the baseline in grey, differing pixels in red).
"""

import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

HERE = Path(__file__).resolve().parent
BASELINES = HERE / "baselines"
DIFFS = HERE / "visual-diffs"
ACCEPT = os.environ.get("COURSE_ACCEPT_SCREENSHOTS") == "1"

LEVELS = 16
# A pixel differs when its grey level moves by more than one step of the 16; a screenshot
# differs when more than this share of its pixels do (a changed word is about 0.02%).
PIXEL_TOLERANCE = 255 // LEVELS + 1
SHARE_TOLERANCE = 0.002


def reduce(png: bytes) -> Image.Image:
    """A screenshot as kept: grey, a quarter of the area, 16 levels."""
    image = Image.open(io.BytesIO(png)).convert("L")
    half = image.resize((max(1, image.width // 2), max(1, image.height // 2)), Image.Resampling.BOX)
    step = 256 // LEVELS
    return half.point(lambda v: (v // step) * step + step // 2)


def encode(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.quantize(LEVELS, dither=Image.Dither.NONE).save(out, "PNG", optimize=True, bits=4)
    return out.getvalue()


@dataclass
class Outcome:
    name: str
    problem: str | None  # None when the screenshot matches (or was accepted)


def compare(name: str, png: bytes) -> Outcome:
    """Compare a screenshot with baselines/NAME.png; write the baseline instead when accepting."""
    actual = reduce(png)
    baseline_file = BASELINES / f"{name}.png"
    if ACCEPT:
        BASELINES.mkdir(exist_ok=True)
        baseline_file.write_bytes(encode(actual))
        return Outcome(name, None)
    if not baseline_file.is_file():
        _write_diff(name, actual, None, None)
        return Outcome(name, "no baseline (accept one: see tests/browser/visual.py)")
    baseline = Image.open(baseline_file).convert("L")
    if baseline.size != actual.size:
        _write_diff(name, actual, baseline, None)
        return Outcome(name, f"size {actual.size} differs from the baseline's {baseline.size}")
    a = np.asarray(actual, dtype=np.int16)
    b = np.asarray(baseline, dtype=np.int16)
    differs = np.abs(a - b) > PIXEL_TOLERANCE
    share = float(differs.mean())
    if share <= SHARE_TOLERANCE:
        return Outcome(name, None)
    _write_diff(name, actual, baseline, differs)
    return Outcome(name, f"{share:.2%} of pixels differ (tolerance {SHARE_TOLERANCE:.2%})")


def _write_diff(name: str, actual: Image.Image, baseline: Image.Image | None, differs: np.ndarray | None) -> None:
    DIFFS.mkdir(exist_ok=True)
    actual.save(DIFFS / f"{name}.actual.png")
    if baseline is None or differs is None:
        return
    grey = np.asarray(baseline, dtype=np.uint8)
    rgb = np.stack([grey, grey, grey], axis=-1) // 2 + 64
    rgb[differs] = (220, 30, 30)
    Image.fromarray(rgb.astype(np.uint8), "RGB").save(DIFFS / f"{name}.diff.png")


# ---- the layout, measured in the page ----

# In-flow blocks that must never cover one another: a page's top-level blocks, the cells of the
# course map's grids, a widget's parts and controls.
LAYOUT = """() => {
  const box = (el) => el.getBoundingClientRect();
  const meet = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 &&
                         Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  const name = (el) => el.tagName.toLowerCase() + (el.className && typeof el.className === "string" ?
    "." + el.className.trim().split(/\\s+/).join(".") : "");
  const shown = (el) => { const r = box(el); return r.width > 1 && r.height > 1 && getComputedStyle(el).visibility !== "hidden"; };
  const overlaps = [];
  const groups = [".md-content__inner", ".course-cards", ".course-journey", ".course-stats", "figure.sim",
                  ".sim-controls", ".lesson-head", ".lesson-next", ".course-hero"];
  for (const parent of document.querySelectorAll(groups.join(","))) {
    const kids = [...parent.children].filter((el) => shown(el) && getComputedStyle(el).position !== "absolute");
    for (let i = 0; i < kids.length; i++)
      for (let j = i + 1; j < kids.length; j++)
        if (meet(box(kids[i]), box(kids[j]))) overlaps.push(`${name(kids[i])} / ${name(kids[j])}`);
  }
  // Text cut off by a box that hides its overflow (scrolling boxes are not clipping).
  const clipped = [];
  for (const el of document.querySelectorAll(".md-content *, .course-offline *")) {
    const s = getComputedStyle(el);
    const hides = (v) => v === "hidden" || v === "clip";
    const x = hides(s.overflowX) || s.textOverflow === "ellipsis", y = hides(s.overflowY);
    if (!x && !y) continue;
    if (!shown(el) || s.clipPath !== "none" || !el.textContent.trim() || el.closest("svg, .katex")) continue;
    // 3 px of slack: a line box's descent below the last baseline is not lost text.
    if ((x && el.scrollWidth > el.clientWidth + 3) || (y && el.scrollHeight > el.clientHeight + 3)) clipped.push(name(el));
  }
  // A chart's axis titles clear of its tick labels and legend (static SVG or live plotly).
  const axes = [];
  for (const chart of document.querySelectorAll(".sim-chart")) {
    const titles = [...chart.querySelectorAll(".sc-axis-title, .xtitle, .ytitle, .y2title")].filter(shown);
    const others = [...chart.querySelectorAll(".sc-tick text, .xtick text, .ytick text, .y2tick text, .legend")].filter(shown);
    for (const t of titles) for (const o of others)
      if (meet(box(t), box(o))) axes.push(`${chart.closest("figure.sim")?.id}: "${t.textContent}" / "${o.textContent.slice(0, 30)}"`);
  }
  const perRow = (list) => {
    const items = [...list.children].filter(shown);
    return items.filter((el) => Math.abs(box(el).top - box(items[0]).top) < 2).length;
  };
  return {
    scroll_width: document.documentElement.scrollWidth,
    width: innerWidth,
    // What sticks out past the screen's right edge (scrolling boxes, code and display math may).
    too_wide: [...document.querySelectorAll(".md-content *")]
      .filter((el) => box(el).right > innerWidth + 1 && !el.closest(
        ".md-typeset__scrollwrap, pre, .katex-display, div.arithmatex, .sim-data-table"))
      .slice(0, 3).map(name),
    // The build-time charts and the math, there before (and without) the Python runtime.
    figures: document.querySelectorAll("figure.sim").length,
    drawn: document.querySelectorAll("figure.sim .sim-chart:has(.sim-static-chart)").length,
    math: document.querySelectorAll(".arithmatex").length,
    math_rendered: document.querySelectorAll(".arithmatex .katex").length,
    runtime: window.llmCourse?.runtime ? { state: llmCourse.runtime.state, starts: llmCourse.runtime.starts } : null,
    overlaps, clipped, axes,
    journey: [...document.querySelectorAll(".course-journey")].map(perRow),
    journey_items: [...document.querySelectorAll(".course-journey > li")].length,
    cards: [...document.querySelectorAll(".course-cards")].map((list) => ({ items: list.children.length, first_row: perRow(list) })),
    journey_display: [...document.querySelectorAll(".course-journey")].map((el) => getComputedStyle(el).display),
  };
}"""
