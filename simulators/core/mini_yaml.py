"""A small block-style YAML reader, enough for the reports GuideLLM writes (PyYAML `safe_dump`).

The simulators run in the browser on the standard library alone (no PyYAML there), so GuideLLM's
`--output kind=yaml` files are read here: nested mappings and lists in block style, plain,
single- and double-quoted scalars (folded over several lines as PyYAML folds long ones), null,
booleans, numbers, and empty or simple one-line flow collections. Anchors, tags and block
scalars (| and >) are refused with a message: GuideLLM does not write them.
"""

import json
import re
from typing import Any


class YamlError(ValueError):
    pass


_INT = re.compile(r"^[-+]?\d+$")
_FLOAT = re.compile(r"^[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?$")
# A quoted scalar: single quotes escape a quote by doubling it, double quotes by a backslash
# (possessive, so that an escaped quote is never taken back as the closing one).
_QUOTED = {"'": re.compile(r"'(?:[^']|'')*+'"), '"': re.compile(r'"(?:[^"\\]|\\.)*+"', re.DOTALL)}


def loads(text: str) -> Any:
    lines: list[tuple[int, str, int]] = []  # (indent, content, line number)
    for no, raw in _logical_lines(text.splitlines()):
        s = raw.rstrip()
        body = s.lstrip(" ")
        if not body or body.startswith("#") or body in ("---", "..."):
            continue
        if "\t" in s[: len(s) - len(body)]:
            raise YamlError(f"line {no}: tab in indentation")
        lines.append((len(s) - len(body), body, no))
    if not lines:
        return None
    value, i = _block(lines, 0, lines[0][0])
    if i < len(lines):
        raise YamlError(f"line {lines[i][2]}: unexpected indentation")
    return value


def _open_quote(line: str) -> str:
    """The quote character of a quoted scalar that starts on this line and does not end there."""
    body = line.lstrip(" ")
    while body.startswith("- "):
        body = body[2:].lstrip(" ")
    kv = _split_key(body) if body and body[0] not in "'\"" else None
    value = kv[1] if kv else body
    return value[0] if value[:1] in ("'", '"') and _quote_end(value) < 0 else ""


def _logical_lines(raw: list[str]) -> list[tuple[int, str]]:
    """Lines, with a quoted scalar folded over several lines joined back into one (YAML's
    folding: a line break is a space, an empty line a newline, a trailing backslash nothing)."""
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(raw):
        line, no = raw[i], i + 1
        q = _open_quote(line) if line.strip() else ""
        i += 1
        while q and i < len(raw):
            nxt = raw[i].strip()
            i += 1
            if not nxt:
                line += "\\n" if q == '"' else "\n"
                continue
            if q == '"' and line.endswith("\\") and not line.endswith("\\\\"):
                line = line[:-1] + nxt
            elif line.endswith("\\n") or line.endswith("\n"):
                line += nxt
            else:
                line += " " + nxt
            if _quote_end(line[line.index(q) :]) >= 0:
                q = ""
        out.append((no, line))
    return out


def _is_item(body: str) -> bool:
    return body == "-" or body.startswith("- ")


def _block(lines: list[tuple[int, str, int]], i: int, indent: int) -> tuple[Any, int]:
    return _list(lines, i, indent) if _is_item(lines[i][1]) else _mapping(lines, i, indent)


def _list(lines: list[tuple[int, str, int]], i: int, indent: int) -> tuple[list[Any], int]:
    out: list[Any] = []
    while i < len(lines) and lines[i][0] == indent and _is_item(lines[i][1]):
        rest = lines[i][1][1:].lstrip(" ")
        if not rest:
            if i + 1 < len(lines) and lines[i + 1][0] > indent:
                value, i = _block(lines, i + 1, lines[i + 1][0])
            else:
                value, i = None, i + 1
        elif _split_key(rest) is not None:  # "- key: value" opens a mapping one level in
            inner = indent + (len(lines[i][1]) - len(rest))
            lines[i] = (inner, rest, lines[i][2])
            value, i = _mapping(lines, i, inner)
        else:
            value, i = _scalar_lines(lines, i, indent, rest)
        out.append(value)
    return out, i


def _mapping(lines: list[tuple[int, str, int]], i: int, indent: int) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    while i < len(lines) and lines[i][0] == indent and not _is_item(lines[i][1]):
        kv = _split_key(lines[i][1])
        if kv is None:
            raise YamlError(f"line {lines[i][2]}: expected 'key: value'")
        key, rest = kv
        if rest:
            out[key], i = _scalar_lines(lines, i, indent, rest)
            continue
        i += 1
        nxt = lines[i] if i < len(lines) else None
        if nxt and (nxt[0] > indent or (nxt[0] == indent and _is_item(nxt[1]))):
            out[key], i = _block(lines, i, nxt[0])
        else:
            out[key] = None
    return out, i


def _split_key(body: str) -> tuple[str, str] | None:
    if body[0] in "'\"":
        end = _quote_end(body)
        if end < 0 or not body[end + 1 :].startswith(":"):
            return None
        return _unquote(body[: end + 1]), body[end + 2 :].strip()
    m = re.match(r"^([^:#]*?[^\s:]|[^:\s]):(?:\s+(.*)|$)", body, re.DOTALL)
    return (m.group(1), (m.group(2) or "").strip()) if m else None


def _quote_end(s: str) -> int:
    """The index of the quote that closes the one s starts with ('' and a backslash escape), or -1."""
    closed = _QUOTED[s[0]].match(s)
    return closed.end() - 1 if closed else -1


def _scalar_lines(lines: list[tuple[int, str, int]], i: int, indent: int, rest: str) -> tuple[Any, int]:
    """A scalar starting on line i, with the more-indented lines PyYAML folded it onto."""
    parts = [rest]
    i += 1
    while i < len(lines) and lines[i][0] > indent:
        parts.append(lines[i][1])
        i += 1
    return _scalar(" ".join(parts), lines[i - 1][2]), i


def _unquote(s: str) -> str:
    return s[1:-1].replace("''", "'") if s[0] == "'" else str(json.loads(s))


def _scalar(s: str, no: int) -> Any:
    if s[0] in "'\"":
        if _quote_end(s) != len(s) - 1:
            raise YamlError(f"line {no}: unterminated quoted string")
        return _unquote(s)
    if s[0] in "&*!|>":
        raise YamlError(f"line {no}: anchors, tags and block scalars are not supported")
    if s[0] in "[{":
        inner = s[1:-1].strip()
        if not inner:
            return [] if s[0] == "[" else {}
        if s[0] == "[":
            return [_scalar(x.strip(), no) for x in inner.split(",")]
        return {k.strip(): _scalar(v.strip(), no) for k, v in (x.split(":", 1) for x in inner.split(","))}
    low = s.lower()
    if low in ("null", "~"):
        return None
    if low in ("true", "false"):
        return low == "true"
    if _INT.match(s):
        return int(s)
    if _FLOAT.match(s) or low in (".inf", "-.inf", ".nan"):
        return float(s.replace(".inf", "inf").replace(".nan", "nan"))
    return s
