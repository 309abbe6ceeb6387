"""RXML: turn the body of a Morph-XML tool call (`<path>a.py</path><limit>20</limit>`) into a
dict of arguments, tolerating the malformed XML models write.

Rules beyond the spec, decided here:

- String-typed properties keep the raw inner text of their tag, not parsed as XML: entities
  stay as written and stray `<` or `&` are kept. Layout whitespace is trimmed: a value with
  no line break inside is stripped; a multi-line value loses a blank first line and the
  indentation after its last line break, so `<c>\\nx\\n</c>` gives `"x\\n"`. Whitespace
  outside CDATA is stripped entirely when a value uses CDATA, whose inside is kept as is.
- Other values are converted through lxml after repairing bare `&` and `<`; their text gets
  the same trim. Attributes are ignored. Mixed text and child tags keep the markup as a
  string: byte-exact for a top-level argument, re-serialised by lxml when nested.
- An unclosed argument tag runs to the end of the body; text between argument tags is dropped.
- Numeric tags (`<0>`, `<1>`) are accepted, so `{"0": .., "1": ..}` objects can become lists.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lxml import etree

from .coerce import is_string_schema

# A whole source file written in one call fits many times over; anything longer is a
# runaway generation and parsing it would only burn CPU.
MAX_BODY_CHARS = 4 * 1024 * 1024
# Far beyond the nesting of any tool schema; protects the recursive conversion.
MAX_DEPTH = 64
# Integers beyond 2**53 lose precision in JavaScript clients, so `<item>` keeps them as text.
MAX_SAFE_INTEGER = 2**53
# XML names cannot start with a digit; `<0>` is renamed to this prefix for lxml and back.
_INDEX_TAG_PREFIX = "rxml-index-"
# Wraps a value's content for lxml; a name models have no reason to write.
_SYNTHETIC_ROOT = "rxml-root"

# XML names, plus all-digit names: models write `<0>` for tuple members.
_NAME = r"[^\W\d][\w.:-]*|\d+"
_OPEN_TAG = re.compile(rf"<(?P<name>{_NAME})(?P<rest>[\s/][^<>]*)?>")
_CDATA_START = "<![CDATA["
_CDATA_END = "]]>"
# Markup skipped between argument tags (comments, PIs, DOCTYPE), mapped to what ends it.
_SKIPPED_MARKUP = {"<!--": "-->", "<?": "?>", "<!": ">"}
# re.split with this yields [text, cdata, text, ..., text]; an unterminated section runs to
# the end of the text.
_CDATA_SECTION = re.compile(r"<!\[CDATA\[(.*?)(?:\]\]>|\Z)", re.DOTALL)
# Before lxml: escape a bare `&` or `<` (code in a value) that libxml2 recovery would drop,
# and rename numeric tags, which it rejects; CDATA sections are matched to stay untouched.
_LXML_REPAIRS = re.compile(
    r"(?P<cdata><!\[CDATA\[.*?(?:\]\]>|\Z))"
    r"|<(?P<slash>/?)(?P<index>\d+)(?=\s*/?>)"
    r"|(?P<amp>&)(?!#\d+;|#x[0-9A-Fa-f]+;|[^\W\d][\w.-]*;)"
    r"|(?P<lt><)(?![/!?]|[^\W\d])",
    re.DOTALL,
)
_EXACT_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


class RelaxedXMLError(ValueError):
    """The body cannot be understood as tool call arguments."""


class DuplicateStringTagError(RelaxedXMLError):
    """A string-typed property was given by two top-level tags."""


@dataclass(frozen=True, slots=True)
class _ArgumentTag:
    """A top-level tag of the body: its name and where its inner content lies."""

    name: str
    inner_start: int
    inner_end: int
    closed: bool


def parse_xml_arguments(body: str, schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Parse `<key>value</key>...` into `{"key": value, ...}`, keys in document order.

    Raises RelaxedXMLError (never anything else) when the body cannot be understood.
    """
    if len(body) > MAX_BODY_CHARS:
        raise RelaxedXMLError(f"body of {len(body)} characters exceeds {MAX_BODY_CHARS}")
    tags, has_stray_text = _scan_top_level(body)
    if not tags and has_stray_text:
        raise RelaxedXMLError("body has text but no argument tags")
    string_keys = _string_properties(schema or {})
    parser = etree.XMLParser(
        recover=True, resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False
    )
    pairs: list[tuple[str, Any]] = []
    seen_string_keys: set[str] = set()
    for tag in tags:
        inner = body[tag.inner_start : tag.inner_end]
        if tag.name not in string_keys:
            pairs.append((tag.name, _parse_value(inner, parser)))
        elif tag.name in seen_string_keys:
            raise DuplicateStringTagError(f"string property {tag.name!r} given more than once")
        else:
            seen_string_keys.add(tag.name)
            pairs.append((tag.name, _string_value(inner)))
    return _group_repeated(pairs)


def arguments_are_complete(body: str) -> bool:
    """Whether every top-level argument tag and CDATA section in `body` is closed, i.e. the
    output was not cut off in the middle of an argument."""
    tags, _ = _scan_top_level(body)
    return all(tag.closed for tag in tags) and body.count(_CDATA_START) == body.count(_CDATA_END)


def _scan_top_level(body: str) -> tuple[list[_ArgumentTag], bool]:
    """The body's top-level tags, and whether non-whitespace text lies between them."""
    tags: list[_ArgumentTag] = []
    has_stray_text = False
    position = 0
    while (lt := body.find("<", position)) >= 0:
        has_stray_text = has_stray_text or _has_text(body[position:lt])
        if body.startswith(_CDATA_START, lt):
            position = _skip_past(body, lt, _CDATA_END)
            has_stray_text = has_stray_text or bool(_string_value(body[lt:position]))
        elif opened := _OPEN_TAG.match(body, lt):
            inner_end, position, closed = _find_close(body, opened)
            tags.append(_ArgumentTag(opened["name"], opened.end(), inner_end, closed))
        elif markup := next((m for m in _SKIPPED_MARKUP if body.startswith(m, lt)), None):
            position = _skip_past(body, lt, _SKIPPED_MARKUP[markup])
        else:  # a stray close tag or a bare `<`
            has_stray_text = True
            position = lt + 1
    return tags, has_stray_text or _has_text(body[position:])


def _has_text(segment: str) -> bool:
    return bool(segment.strip())


def _find_close(body: str, opened: re.Match[str]) -> tuple[int, int, bool]:
    """Where the tag opened by `opened` ends: (start, end) of its matching close tag, and
    whether it was closed at all.

    Only tags of the same name count for depth, so stray markup inside a raw value cannot end
    it early; CDATA is skipped. A self-closing tag is empty; an unclosed one runs to the end.
    """
    if (opened["rest"] or "").rstrip().endswith("/"):
        return opened.end(), opened.end(), True
    name = re.escape(opened["name"])
    boundary = re.compile(rf"{re.escape(_CDATA_START)}|<{name}(?:[\s/][^<>]*)?>|</{name}\s*>")
    depth = 1
    position = opened.end()
    while found := boundary.search(body, position):
        token = found.group()
        position = found.end()
        if token == _CDATA_START:
            position = _skip_past(body, found.start(), _CDATA_END)
        elif token.startswith("</"):
            depth -= 1
            if depth == 0:
                return found.start(), found.end(), True
        elif not token.endswith("/>"):
            depth += 1
            if depth > MAX_DEPTH:
                raise RelaxedXMLError(f"<{opened['name']}> nested deeper than {MAX_DEPTH}")
    return len(body), len(body), False


def _skip_past(text: str, start: int, terminator: str) -> int:
    end = text.find(terminator, start)
    return len(text) if end < 0 else end + len(terminator)


def _string_properties(schema: Mapping[str, Any]) -> frozenset[str]:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return frozenset()
    return frozenset(
        key for key, sub in properties.items() if isinstance(sub, Mapping) and is_string_schema(sub)
    )


def _string_value(raw: str) -> str:
    """A raw value with CDATA markers removed and layout whitespace trimmed."""
    pieces = _CDATA_SECTION.split(raw)
    if len(pieces) > 1:
        pieces[0], pieces[-1] = pieces[0].lstrip(), pieces[-1].rstrip()
        return "".join(pieces)
    return _trim_layout(raw)


def _trim_layout(text: str) -> str:
    """Strip a one-line value; keep a multi-line one but its blank first line and last indent."""
    core = text.strip()
    if "\n" not in core:
        return core
    leading = text[: len(text) - len(text.lstrip())]
    trailing = text[len(text.rstrip()) :]
    kept_leading = leading[leading.find("\n") + 1 :]
    kept_trailing = trailing[: trailing.rfind("\n") + 1] if "\n" in trailing else trailing
    return kept_leading + core + kept_trailing


def _parse_value(raw: str, parser: Any) -> Any:
    """Convert a non-string argument's inner content through lxml."""
    repaired = _LXML_REPAIRS.sub(_repair, raw)
    document = f"<{_SYNTHETIC_ROOT}>{repaired}</{_SYNTHETIC_ROOT}>"
    try:
        # Lone surrogates can arrive from JSON-escaped model output; pass them through as
        # invalid bytes for libxml2 to recover from instead of failing the encode.
        root = etree.fromstring(document.encode("utf-8", "surrogatepass"), parser)
    except (etree.LxmlError, ValueError) as error:
        raise RelaxedXMLError(f"unreadable XML: {error}") from error
    if root is None:
        raise RelaxedXMLError("unreadable XML")
    return _element_value(root, depth=1, raw_inner=raw)


def _repair(match: re.Match[str]) -> str:
    """The replacement for one `_LXML_REPAIRS` match."""
    if match["cdata"]:
        return match.group()
    if match["index"]:
        return f"<{match['slash']}{_INDEX_TAG_PREFIX}{match['index']}"
    return "&amp;" if match["amp"] else "&lt;"


def _element_value(element: Any, depth: int, raw_inner: str | None = None) -> Any:
    """Text for a leaf, list for `<item>`s or numeric keys, dict otherwise."""
    if depth > MAX_DEPTH:
        raise RelaxedXMLError(f"arguments nested deeper than {MAX_DEPTH}")
    # Comments, processing instructions and entity references are not arguments.
    children = [child for child in element if isinstance(child.tag, str)]
    if not children:
        return _trim_layout("".join(element.itertext()))
    loose_text = [element.text or ""] + [node.tail or "" for node in element]
    if "".join(loose_text).strip():
        if raw_inner is not None:
            return _string_value(raw_inner)
        markup = (etree.tostring(node, encoding="unicode") for node in element)
        return _trim_layout((element.text or "") + "".join(markup))
    pairs = [(_key(child), _element_value(child, depth + 1)) for child in children]
    if all(key == "item" for key, _ in pairs):
        return [_number_if_exact(value) for _, value in pairs]
    grouped = _group_repeated(pairs)
    if set(grouped) == {str(index) for index in range(len(grouped))}:
        return [grouped[str(index)] for index in range(len(grouped))]
    return grouped


def _key(element: Any) -> str:
    tag: str = element.tag
    local_name = tag.rpartition("}")[2]  # drop a namespace a model declared with xmlns
    return local_name.removeprefix(_INDEX_TAG_PREFIX)


def _group_repeated(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Keys in order of first appearance; a repeated key's values become a list."""
    grouped: dict[str, list[Any]] = {}
    for key, value in pairs:
        grouped.setdefault(key, []).append(value)
    return {key: values[0] if len(values) == 1 else values for key, values in grouped.items()}


def _number_if_exact(value: Any) -> Any:
    """`"3"` -> 3 and `"2.5"` -> 2.5, only when printing the number gives back the text."""
    if not isinstance(value, str) or not _EXACT_NUMBER.fullmatch(value):
        return value
    if "." in value:
        number = float(value)
        return number if repr(number) == value else value
    integer = int(value)
    return integer if str(integer) == value and abs(integer) <= MAX_SAFE_INTEGER else value
