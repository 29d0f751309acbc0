"""A ```checklist on a lesson page: ticks are kept in the reader's progress across a reload."""

import pytest
from browser_helpers import Records, Site, assert_clean
from playwright.sync_api import BrowserContext, Page, expect


@pytest.fixture(scope="module")
def lesson(site: Site) -> str:
    pages = site.pages_with('data-checklist="')
    assert pages, "no lesson page holds a checklist"
    return pages[0]


@pytest.fixture(scope="module")
def page(context: BrowserContext, site: Site, lesson: str) -> Page:
    tab = context.new_page()
    tab.goto(site.url + lesson)
    return tab


def test_a_tick_survives_a_reload_and_clearing_forgets_it(page: Page, site: Site, lesson: str) -> None:
    checklist = page.locator("fieldset.checklist").first
    boxes = checklist.locator("input[type=checkbox]")
    total = boxes.count()
    assert total >= 2
    checklist.locator("label").nth(1).click()  # the label toggles its box
    expect(boxes.nth(1)).to_be_checked()
    expect(checklist.locator(".checklist-status")).to_have_text(f"1 of {total} checked")

    page.reload()
    checklist = page.locator("fieldset.checklist").first
    boxes = checklist.locator("input[type=checkbox]")
    expect(checklist.locator(".checklist-status")).to_have_text(f"1 of {total} checked")
    expect(boxes.nth(1)).to_be_checked()
    expect(boxes.nth(0)).not_to_be_checked()

    # Instant navigation swaps the page without reloading the scripts: the ticks come back too.
    page.goto(site.url)
    page.evaluate("() => (window.sameDocument = true)")
    page.locator(f'.course-card h3 a[href$="{lesson}"]').click()
    checklist = page.locator("fieldset.checklist").first
    checklist.wait_for()
    assert page.evaluate("() => window.sameDocument === true"), "the link did a full page load"
    expect(checklist.locator(".checklist-status")).to_have_text(f"1 of {total} checked")
    expect(checklist.locator("input[type=checkbox]").nth(1)).to_be_checked()

    checklist.locator(".checklist-reset").click()
    expect(checklist.locator(".checklist-status")).to_have_text(f"0 of {total} checked")
    answers = page.evaluate("() => JSON.parse(localStorage.getItem('llm-course:progress:v1')).answers")
    ticks = [v for lesson in answers.values() for k, v in lesson.items() if k.startswith("checklist:")]
    assert ticks == [[]]  # cleared in the saved progress, not only on the page
    page.reload()
    expect(page.locator("fieldset.checklist .checklist-status").first).to_have_text(f"0 of {total} checked")
    expect(page.locator("fieldset.checklist input[type=checkbox]:checked")).to_have_count(0)


def test_no_request_left_the_site_and_no_error_happened(records: Records) -> None:
    assert_clean(records)
