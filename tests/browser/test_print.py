"""A lesson printed from the browser (docs/assets/css/print.css): its charts, figures and self-check
answers stay, its controls and the site's navigation go."""

from browser_helpers import Records, Site, assert_clean
from playwright.sync_api import BrowserContext, Page

SHOWN = """(selector) => [...document.querySelectorAll(selector)].filter((el) => {
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== "hidden";
}).length"""


def lesson_with_quiz_and_chart(site: Site) -> str:
    return next(u for u in site.pages_with('class="quiz-q"') if u in site.pages_with('data-sim="'))


def test_a_printed_lesson_keeps_charts_and_answers_and_drops_controls(context: BrowserContext, site: Site) -> None:
    page: Page = context.new_page()
    held: list = []
    # Held unanswered, the .wasm and its .gz copy (the worker fetches that first): the printout
    # is the static page.
    page.route("**/pyodide.asm.wasm*", lambda route: held.append(route))
    page.goto(site.url + lesson_with_quiz_and_chart(site))
    page.locator(".sim-static-chart").first.wait_for()
    counts = lambda *selectors: {s: page.evaluate(SHOWN, s) for s in selectors}  # noqa: E731
    on_screen = counts(".sim-controls", ".quiz-why", ".md-header", ".lesson-complete")
    assert on_screen[".sim-controls"] > 0 and on_screen[".quiz-why"] == 0  # the test sees the difference

    page.emulate_media(media="print")
    kept = counts(".sim-static-chart", "figure.sim", ".quiz-q", ".quiz-why", ".quiz-explanation", "h1")
    dropped = counts(
        ".sim-controls",
        ".sim-actions",
        ".sim-status",
        ".quiz-entry",
        ".lesson-complete",
        ".lesson-next",
        ".md-header",
        ".md-sidebar",
        ".md-footer",
        ".course-offline",
    )
    figures = page.locator("figure.sim").count()
    assert kept[".sim-static-chart"] == figures and kept["figure.sim"] == figures, kept
    assert kept[".quiz-why"] == page.locator(".quiz-why").count() > 0, kept
    assert kept[".quiz-explanation"] == page.locator(".quiz-explanation").count(), kept
    assert dropped == dict.fromkeys(dropped, 0), dropped
    # Each choice question names its right answer; each number question prints its answer.
    marks = page.evaluate(
        """() => [...document.querySelectorAll(".quiz-option")].filter((o) =>
             getComputedStyle(o.querySelector("label"), "::after").content.includes("correct answer")).length"""
    )
    right = page.locator(".quiz-option:has(input[data-correct=true])").count()
    assert marks == right > 0
    numbers = page.evaluate(
        """() => [...document.querySelectorAll(".quiz-q[data-type=number]")].map((q) =>
             getComputedStyle(q, "::after").content.includes(q.dataset.answer))"""
    )
    assert all(numbers)
    pdf = page.pdf(format="A4")
    assert pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page") - pdf.count(b"/Type /Pages") >= 2
    page.close()


def test_no_request_left_the_site_and_no_error_happened(records: Records) -> None:
    assert_clean(records)
