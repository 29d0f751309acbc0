"""Text per view (review 2026-12-03, A-16 and pattern 5): a chart's summary describes that chart, so
two views of one simulator never print the same text, and a demo view does not open with the
speed-up paragraph of another view."""

import pytest

from simulators import api


def _views():
    for name, mod in api.SIMULATORS.items():
        views = getattr(mod, "VIEWS", None)
        if views and len(views) > 1:
            yield name, [v for v, _ in views]


@pytest.mark.parametrize(("name", "views"), list(_views()), ids=[n for n, _ in _views()])
def test_each_view_has_its_own_summary(name, views):
    texts = {v: api.run(name, {"view": v})["summary"] for v in views}
    assert len(set(texts.values())) == len(views), f"{name}: two views print the same summary"


@pytest.mark.parametrize("name", ["quantization", "sparsity"])
def test_the_demo_view_does_not_repeat_the_speed_up_story(name):
    first = api.run(name, {})["summary"]
    demo = api.run(name, {"view": "demo"})["summary"]
    assert first.split(". ")[1] not in demo and "speed-up" not in demo.split(". ")[0]


@pytest.mark.parametrize(("name", "views"), list(_views()), ids=[n for n, _ in _views()])
def test_a_chart_table_names_only_its_views_and_keeps_a_declared_figure_of_each_prefix(name, views):
    """api.run trims a chart's table by the module's TABLES prefixes and names no profile for its
    UNTIMED charts: a misspelt view or prefix would silently empty a table or price nothing."""
    mod = api.SIMULATORS[name]
    tables, untimed = getattr(mod, "TABLES", {}), getattr(mod, "UNTIMED", ())
    assert set(tables) | set(untimed) <= set(views)
    for view, prefixes in tables.items():
        shown = api.run(name, {"view": view})["metrics"]
        assert all(any(k.startswith(p) for k in shown) for p in prefixes), (view, prefixes, list(shown))
        assert set(shown) < set(api.run(name, {})["result"]["metrics"])
    for view in untimed:
        assert "priced_by" not in api.run(name, {"view": view})
