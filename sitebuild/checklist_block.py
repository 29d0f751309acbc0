"""A ```checklist fence → a list the reader ticks, kept in their progress (`checklist.js`).

    ```checklist
    id: benchmark-audit                      # unique on the page; the ticks are saved under it
    title: Tick what the benchmark states    # optional; the legend (default "Checklist")
    items:
      - Open-loop arrivals (Poisson), the rate swept past the knee
      - p50 / p95 / p99 of TTFT and TPOT, separately
    ```

Items are inline Markdown (`code`, links, $math$). Each box is saved under a short hash of its
text, so reordering items keeps the reader's ticks and rewording one clears only that one.
"""

import hashlib
import html

from sitebuild.block_yaml import BlockError, read_mapping
from sitebuild.sim_block import WIDGET_ID

KEYS = ("id", "title", "items")


def render(source: str, used_ids: dict[str, int], line: int = 0) -> str:
    """HTML for one checklist; `used_ids` maps the page's ids to their blocks' lines (this one, at `line`, added)."""
    spec, lines = read_mapping(source, "checklist", KEYS, "items", "id:, items:, optional title:")
    checklist_id = spec.get("id")
    if not isinstance(checklist_id, str) or not WIDGET_ID.match(checklist_id):
        raise BlockError(
            lines.get("id", 0), f"a checklist needs 'id:' of lower-case letters, digits, - or _, not {checklist_id!r}"
        )
    if (earlier := used_ids.get(f"checklist:{checklist_id}")) is not None:
        raise BlockError(lines["id"], f"checklist id {checklist_id!r} is already used by the block at line {earlier}")
    title = spec.get("title", "Checklist")
    if not isinstance(title, str) or not title.strip():
        raise BlockError(lines.get("title", 0), "'title' must be text")
    items = spec.get("items")
    if not isinstance(items, list) or not items:
        raise BlockError(lines.get("items", 0), "a checklist needs 'items:', a YAML list of at least one line of text")
    for index, item in enumerate(items):
        if not isinstance(item, str) or not item.strip():
            raise BlockError(lines.get(f"items.{index}", lines["items"]), f"item {index + 1} must be a line of text")
    values = [hashlib.sha256(item.strip().encode()).hexdigest()[:8] for item in items]
    if len(set(values)) < len(values):
        raise BlockError(lines["items"], "two items have the same text")
    used_ids[f"checklist:{checklist_id}"] = line
    prefix = f"checklist-{checklist_id}"
    items_html = [
        f'<li markdown="span"><input type="checkbox" id="{prefix}-{index}" value="{value}"> '
        f'<label for="{prefix}-{index}">{item.strip()}</label></li>'
        for index, (item, value) in enumerate(zip(items, values, strict=True), start=1)
    ]
    parts = [
        f'<fieldset class="checklist" id="{prefix}" data-checklist="{html.escape(checklist_id)}" markdown="1">',
        f'<legend markdown="span">{title.strip()}</legend>',
        '<ul class="checklist-items" markdown="1">',
        *items_html,
        "</ul>",
        f'<p class="checklist-status" role="status" aria-live="polite">0 of {len(items)} checked</p>',
        '<p class="checklist-actions"><button type="button" class="md-button checklist-reset">'
        "Clear the ticks</button></p>",
        "</fieldset>",
    ]
    return "\n".join(parts)
