"""The YAML body of a ```sim, ```quiz or ```checklist block, read with the line of every key.

One reader for the three block kinds, so they report YAML mistakes and unknown keys alike:
`BlockError.offset` counts lines from the fence's first content line, and the lesson renderer
turns it into `lessons/<file>.md:<line>`.
"""

from typing import Any

import yaml


class BlockError(ValueError):
    """A problem in a block: `offset` counts lines from the fence's first content line."""

    def __init__(self, offset: int, message: str) -> None:
        self.offset = offset
        super().__init__(message)


def compose(source: str, kind: str) -> tuple[Any, yaml.Node | None]:
    """The parsed value and its YAML node tree, or BlockError at the line YAML complained about."""
    try:
        return yaml.safe_load(source), yaml.compose(source, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        message = f"invalid YAML in {kind} block: {exc.problem}"
        mark = exc.problem_mark or exc.context_mark
        if (exc.context or "").startswith("while parsing a flow") and exc.context_mark:  # an unclosed { or [
            mark, opened = exc.context_mark, "{" if "mapping" in str(exc.context) else "["
            message += f" in the {opened} opened on this line (is it closed?)"
        raise BlockError(mark.line if mark else 0, message) from None


def read_mapping(
    source: str, kind: str, keys: tuple[str, ...], nested: str, usage: str
) -> tuple[dict[str, Any], dict[str, int]]:
    """A block that is a mapping of `keys`; lines holds each key's offset, and `nested.<k>` for the
    entries of the value under `nested` (its mapping keys, or its list items by index)."""
    spec, node = compose(source, kind)
    if not isinstance(spec, dict) or not isinstance(node, yaml.MappingNode):
        raise BlockError(0, f"a {kind} block is a YAML mapping ({usage})")
    lines: dict[str, int] = {}
    for key, value in node.value:
        lines[key.value] = key.start_mark.line
        if key.value == nested and isinstance(value, yaml.MappingNode):
            lines |= {f"{nested}.{sub.value}": sub.start_mark.line for sub, _ in value.value}
        if key.value == nested and isinstance(value, yaml.SequenceNode):
            lines |= {f"{nested}.{index}": item.start_mark.line for index, item in enumerate(value.value)}
    if unknown := [key for key in spec if key not in keys]:
        raise BlockError(lines[unknown[0]], f"unknown key {unknown[0]!r} in {kind} block (allowed: {', '.join(keys)})")
    return spec, lines
