"""The home page and the reader's progress: counts from front matter, completion, self-checks."""

import re
from pathlib import Path

import pytest
import yaml
from browser_helpers import ROOT, RUNTIME_LIMIT_MS, Records, Site, assert_clean
from playwright.sync_api import BrowserContext, Page

from sitebuild.course import estimated_minutes


def front_matter(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8").split("---\n")[1])


@pytest.fixture(scope="module")
def page(context: BrowserContext, site: Site) -> Page:
    tab = context.new_page()
    tab.goto(site.url)
    return tab


def test_home_counts_lessons_and_minutes_from_front_matter(page: Page) -> None:
    lessons = [front_matter(p) for p in sorted((ROOT / "lessons").glob("*.md"))]
    # The 14 numbered lessons of the course map, plus any frontier pages (ids F1, F2, …).
    assert len([x for x in lessons if not str(x["id"]).startswith("F")]) == 14
    core = [x for x in lessons if not str(x["id"]).startswith("F")]
    core_paths = [(front_matter(p), p) for p in sorted((ROOT / "lessons").glob("*.md")) if not p.name.startswith("F")]
    assert page.locator(".course-card").count() == len(lessons)
    assert page.locator("[data-course-total]").inner_text() == "14"
    # Each lesson shows at least its reading estimate (sitebuild.course.estimated_minutes, review L-11).
    shown = [
        max(x["minutes"], estimated_minutes(p.read_text(encoding="utf-8").split("---\n", 2)[2])) for x, p in core_paths
    ]
    assert page.locator("[data-course-minutes]").inner_text() == str(sum(shown))
    assert page.locator(".course-stats").inner_text().count("0 / 14 completed") == 1
    assert page.locator("[data-course-frontier]").inner_text() == str(len(lessons) - len(core))
    assert page.locator("[data-course-next-label]").inner_text() == "Begin with"
    titles = {x["title"] for x in lessons}
    assert page.locator(".course-card h3").all_inner_texts()[0] in titles
    assert page.locator(".course-synthesis tbody tr").count() >= 5


def test_marking_a_lesson_complete_survives_a_reload(page: Page, site: Site) -> None:
    page.locator(".course-card h3 a").first.click()
    button = page.locator(".lesson-complete-button")
    button.click()
    assert button.get_attribute("aria-pressed") == "true"
    page.reload()
    assert page.locator(".lesson-complete-button").get_attribute("aria-pressed") == "true"
    page.goto(site.url)
    assert page.locator("[data-course-completed]").inner_text() == "1"
    assert page.locator(".course-card").first.locator(".course-card-done").is_visible()
    assert page.locator("[data-course-next-label]").inner_text() == "Continue with"


def test_reset_forgets_the_progress(page: Page) -> None:
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("[data-course-reset]").click()
    assert page.locator("[data-course-completed]").inner_text() == "0"
    assert page.locator("[data-course-next-label]").inner_text() == "Begin with"


def test_unreadable_saved_progress_is_ignored_with_a_notice(page: Page) -> None:
    page.evaluate("() => localStorage.setItem('llm-course:progress:v1', '{not json')")
    page.reload()
    assert "could not be read" in page.locator(".course-notice").inner_text()
    assert page.locator("[data-course-completed]").inner_text() == "0"
    page.evaluate("() => localStorage.clear()")


def test_self_check_gives_feedback_and_remembers_the_answer(page: Page, site: Site) -> None:
    quiz_pages = site.pages_with('class="quiz-q"')
    assert quiz_pages, "no lesson has a quiz block"
    page.goto(site.url + quiz_pages[0])
    choice = page.locator(".quiz-q[data-type=choice]").first
    wrong = choice.locator("input[data-correct=false]").first
    wrong.check()
    feedback = choice.locator(".quiz-feedback")
    assert feedback.get_attribute("data-result") == "incorrect"
    assert all(why.is_visible() for why in choice.locator(".quiz-why").all()), "every option explains itself"
    number = page.locator(".quiz-q[data-type=number]").first
    answer = number.get_attribute("data-answer")
    number.locator("input").fill(answer)
    number.locator(".quiz-check").click()
    assert number.locator(".quiz-feedback").get_attribute("data-result") == "correct"
    assert number.locator(".quiz-explanation").is_visible()
    page.reload()
    assert (
        page.locator(".quiz-q[data-type=choice]").first.locator(".quiz-feedback").get_attribute("data-result")
        == "incorrect"
    )
    assert page.locator(".quiz-q[data-type=number]").first.locator("input").input_value() == answer


def test_a_share_may_be_typed_as_a_percentage(page: Page, site: Site) -> None:
    """Learner review: F3 asks for a share (0.904); "90%" was "not a number" and 90 only "not quite".
    A percentage with its sign is read as a share; without it, the feedback says how to write it."""
    share = re.compile(r'class="quiz-q" data-answer="(0\.\d+)"[^>]*data-type="number"')
    url = next(
        u for u in site.pages_with('data-type="number"') if share.search((site.dir / u / "index.html").read_text())
    )
    page.goto(site.url + url)
    answer = float(share.search((site.dir / url / "index.html").read_text()).group(1))
    number = page.locator(f'.quiz-q[data-type=number][data-answer="{answer!r}"]').first
    number.locator("input").fill(f"{answer * 100:g}%")
    number.locator(".quiz-check").click()
    assert number.locator(".quiz-feedback").get_attribute("data-result") == "correct"
    number.locator("input").fill(f"{answer * 100:g}")
    number.locator(".quiz-check").click()
    feedback = number.locator(".quiz-feedback")
    assert feedback.get_attribute("data-result") == "incorrect" and "It is a fraction" in feedback.inner_text()
    page.evaluate("() => localStorage.clear()")


def test_search_finds_a_lesson_and_the_palette_toggles(context: BrowserContext, site: Site) -> None:
    page = context.new_page()
    page.goto(site.url)
    query = page.locator("input[data-md-component=search-query]")
    # A query typed before the search worker has built its index gets no answer. The theme says when
    # the index is ready: its result line leaves "Initializing search" ("Type to start searching").
    # The worker shares the CPU with the other tests, so the wait is generous; then one query.
    page.wait_for_function(
        "() => !document.querySelector('.md-search-result__meta').textContent.includes('Initializing')",
        timeout=3 * RUNTIME_LIMIT_MS,
    )
    # The theme reads the box on keyup or focus, not on input: fill() alone races the focus read (it
    # lost under load in CI). A key released after the text is in the box makes the read certain.
    query.fill("cache")
    query.press("End")
    page.locator(".md-search-result__item").first.wait_for(timeout=RUNTIME_LIMIT_MS)
    assert page.locator(".md-search-result__item").count() > 0
    scheme = page.evaluate("() => document.body.dataset.mdColorScheme")
    page.keyboard.press("Escape")
    page.locator("form[data-md-component=palette] label:visible").first.click()
    assert page.evaluate("() => document.body.dataset.mdColorScheme") != scheme
    page.close()


def test_pages_fit_a_390_px_phone_and_render_math_offline(page: Page, site: Site) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    for url in [site.url, site.url + site.pages_with('data-sim="')[0]]:
        page.goto(url)
        page.wait_for_load_state("networkidle")
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390, url
    math_pages = site.pages_with('class="arithmatex"')
    page.goto(site.url + math_pages[0])
    page.locator(".arithmatex .katex").first.wait_for()
    page.set_viewport_size({"width": 1280, "height": 720})


def test_no_request_left_the_site_and_no_error_happened(page: Page, records: Records) -> None:
    assert_clean(records)
