"""RXML: turn the body of a Morph-XML tool call (`<path>a.py</path><limit>20</limit>`) into a
dict of arguments, tolerating the malformed XML models write.

Rules beyond the spec, decided here:

- String-typed properties keep the raw inner text of their tag, not parsed as XML: entities
  stay as written and stray `<` or `&` are kept. Values keep their bytes; only layout goes
  (`ValueLayout`): a one-line value is exact, indentation included; a multi-line value loses
  the line break right after its open tag and the indentation before a close tag that starts
  its own line, so `<c>\\nx\\n</c>` gives `"x\\n"`. CDATA markers go only when CDATA
  sections wrap the whole value (whitespace around them is then layout); a value that merely
  contains a section (an SVG's `<style><![CDATA[...]]></style>`) keeps them.
- Other values are converted through lxml after repairing bare `&` and `<`; their text gets
  the same layout rule, and whitespace-only text is empty. Attributes are ignored here. Mixed
  text and child tags keep the markup as a string: byte-exact for a top-level argument,
  re-serialised by lxml when nested. An array written with a wrapper
  (`<tags><tag>a</tag><tag>b</tag></tags>`) is a list when the schema says array.
- An unclosed argument tag runs to the end of the body; text between argument tags is dropped.
- Numeric tags (`<0>`, `<1>`) are accepted, so `{"0": .., "1": ..}` objects can become lists.
- A parameter that takes one value (a declared type, not an array) given by two tags makes
  the body no arguments, unless the body is several calls (`parse_xml_calls`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lxml import etree

from .coerce import declared_types, is_string_schema

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
# Any tag or CDATA start, to find the close tag matching an open tag by comparing names (one
# pattern for every name: compiling one per tag name costs more than the parse).
_TAG_OR_CDATA = re.compile(
    rf"(?P<cdata><!\[CDATA\[)|<(?P<slash>/?)(?P<name>{_NAME})(?:\s*>|[\s/][^<>]*>)"
)
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
# The element the prompt has models write list members as; at the top of a call it holds
# one call's arguments (see parse_xml_calls).
LIST_MEMBER = "item"


class RelaxedXMLError(ValueError):
    """The body cannot be understood as tool call arguments."""


class DuplicateStringTagError(RelaxedXMLError):
    """A property that takes one value (a string above all) was given by two top-level tags."""


@dataclass(frozen=True, slots=True)
class _ArgumentTag:
    """A top-level tag of the body: its name and where its inner content lies."""

    name: str
    inner_start: int
    inner_end: int
    closed: bool


def parse_xml_arguments(
    body: str,
    schema: Mapping[str, Any] | None = None,
    parsed_values: Mapping[tuple[str, str], Any] | None = None,
) -> dict[str, Any]:
    """Parse `<key>value</key>...` into `{"key": value, ...}`, keys in document order.

    `parsed_values` maps a non-string argument's (name, raw inner text) to the value
    `parse_xml_value` already gave it (while streaming), so it is not parsed twice; the
    name is part of the key because the same text reads differently under another schema.
    Raises RelaxedXMLError (never anything else) when the body cannot be understood.
    """
    tags = _argument_tags(body)
    return _arguments(body, tags, _properties(schema or {}), parsed_values or {})


def parse_xml_calls(
    body: str,
    schema: Mapping[str, Any] | None = None,
    parsed_values: Mapping[tuple[str, str], Any] | None = None,
) -> list[dict[str, Any]]:
    """The arguments of each call one tool element's `body` holds (see parse_xml_arguments).

    Models write several calls of one tool in one element in two ways, each read as that
    many calls: the same run of arguments again (`<height>6</height><weight>80</weight>
    <height>5.6</height><weight>60</weight>`: at least two arguments a run, the same ones in
    the same order each time, every required one in each, and again only where an argument
    that takes one value comes back); or `<item>` elements, when no parameter is named
    `item`, each holding one call's argument elements (arguments beside them go to every
    call). Items holding anything else stay an `item` argument.
    """
    tags = _argument_tags(body)
    properties = _properties(schema or {})
    known = parsed_values or {}
    names = {tag.name for tag in tags}
    items = LIST_MEMBER in names and LIST_MEMBER not in properties
    if len(names) == len(tags) and not items:  # one call (the common case, at once)
        return [_arguments(body, tags, properties, known)]
    if items:
        calls = _item_calls(body, tags, properties, known)
        if calls is not None:
            return calls
    return [
        _arguments(body, run, properties, known)
        for run in _repeated_runs(tags, properties, _required(schema or {}))
    ]


def _argument_tags(body: str) -> list[_ArgumentTag]:
    if len(body) > MAX_BODY_CHARS:
        raise RelaxedXMLError(f"body of {len(body)} characters exceeds {MAX_BODY_CHARS}")
    tags, has_stray_text = _scan_top_level(body)
    if not tags and has_stray_text:
        raise RelaxedXMLError("body has text but no argument tags")
    return tags


def _arguments(
    body: str,
    tags: Iterable[_ArgumentTag],
    properties: Mapping[str, Any],
    known: Mapping[tuple[str, str], Any],
) -> dict[str, Any]:
    """One call's arguments from its top-level `tags` in `body`."""
    pairs: list[tuple[str, Any]] = []
    seen: set[str] = set()
    for tag in tags:
        inner = body[tag.inner_start : tag.inner_end]
        property_schema = properties.get(tag.name)
        if tag.name in seen and _takes_one_value(property_schema):
            raise DuplicateStringTagError(f"argument {tag.name!r} given more than once")
        seen.add(tag.name)
        if not isinstance(property_schema, Mapping) or not is_string_schema(property_schema):
            cached = (tag.name, inner)
            value = known[cached] if cached in known else parse_xml_value(inner, property_schema)
            pairs.append((tag.name, value))
        else:
            pairs.append((tag.name, _string_value(inner)))
    return _group_repeated(pairs)


def _takes_one_value(schema: Any) -> bool:
    """A declared property whose value is a string or of another type that is no array."""
    if not isinstance(schema, Mapping):
        return False
    types = declared_types(schema)
    return is_string_schema(schema) or (bool(types) and "array" not in types)


def _required(schema: Mapping[str, Any]) -> set[str]:
    required = schema.get("required")
    return (
        {name for name in required if isinstance(name, str)}
        if isinstance(required, list)
        else set()
    )


def _repeated_runs(
    tags: list[_ArgumentTag], properties: Mapping[str, Any], required: set[str]
) -> list[list[_ArgumentTag]]:
    """The tags cut where an argument that takes one value comes back, if that gives runs
    of several calls (see parse_xml_calls); else all of them, one call."""
    runs: list[list[_ArgumentTag]] = [[]]
    in_run: set[str] = set()
    for tag in tags:
        if tag.name in in_run and _takes_one_value(properties.get(tag.name)):
            runs.append([])
            in_run = set()
        runs[-1].append(tag)
        in_run.add(tag.name)
    names = [tag.name for tag in runs[0]]
    several_calls = (
        len(runs) > 1
        and len(names) > 1
        and required <= set(names)
        and all([tag.name for tag in run] == names for run in runs)
    )
    return runs if several_calls else [tags]


def _item_calls(
    body: str,
    tags: list[_ArgumentTag],
    properties: Mapping[str, Any],
    known: Mapping[tuple[str, str], Any],
) -> list[dict[str, Any]] | None:
    """One call per top-level `<item>`, each with the arguments beside the items; None unless
    every item holds argument elements alone (each naming a declared parameter)."""
    shared = _arguments(body, [tag for tag in tags if tag.name != LIST_MEMBER], properties, known)
    calls = []
    for item in tags:
        if item.name != LIST_MEMBER:
            continue
        inner = body[item.inner_start : item.inner_end]
        inner_tags, has_stray_text = _scan_top_level(inner)
        undeclared = properties and any(tag.name not in properties for tag in inner_tags)
        if not inner_tags or has_stray_text or undeclared:
            return None
        own = _arguments(inner, inner_tags, properties, known)
        if shared.keys() & own.keys():
            raise DuplicateStringTagError(f"{sorted(shared.keys() & own.keys())} given twice")
        calls.append({**shared, **own})
    return calls


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
    name = opened["name"]
    depth = 1
    position = opened.end()
    while found := _TAG_OR_CDATA.search(body, position):
        position = found.end()
        if found["cdata"]:
            position = _skip_past(body, found.start(), _CDATA_END)
        elif found["name"] != name:
            continue
        elif found["slash"]:
            depth -= 1
            if depth == 0:
                return found.start(), found.end(), True
        elif not found.group().endswith("/>"):
            depth += 1
            if depth > MAX_DEPTH:
                raise RelaxedXMLError(f"<{opened['name']}> nested deeper than {MAX_DEPTH}")
    return len(body), len(body), False


def _skip_past(text: str, start: int, terminator: str) -> int:
    end = text.find(terminator, start)
    return len(text) if end < 0 else end + len(terminator)


def _properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, Mapping) else {}


class ValueLayout:
    """A value's text as it streams, without its layout: the line break right after its
    open tag, and the indentation before a close tag that starts its own line (with
    `drop_final_line_break`, as Qwen3-Coder writes values, the `\n` before that close tag
    too). Everything else is kept, so a one-line value is exact. Every piece `feed`
    returns is final; what may still be layout is held until text follows it."""

    __slots__ = ("_at_line_start", "_drop_final_line_break", "_held", "_started")

    def __init__(self, *, drop_final_line_break: bool = False) -> None:
        self._drop_final_line_break = drop_final_line_break
        self._started = False
        self._held = ""
        self._at_line_start = False

    def feed(self, text: str) -> str:
        text = self._held + text
        self._held = ""
        if not self._started:
            if text in ("", "\r"):  # `\r` may still become the line break `\r\n`
                self._held = text
                return ""
            self._started = True
            if text.startswith(("\n", "\r\n")):
                text = text[text.index("\n") + 1 :]
                self._at_line_start = True
        kept = len(text.rstrip(" \t"))
        line_start = text.endswith("\n", 0, kept) if kept else self._at_line_start
        if line_start and self._drop_final_line_break and kept:
            kept -= 1  # the `\n` alone, as Qwen's own parser: a `\r` before it is the value's
        if not line_start:
            kept = len(text)
        self._held = text[kept:]
        out = text[:kept]
        if out:
            self._at_line_start = out.endswith("\n")
        return out

    def finish(self) -> str:
        """The value ended: what is still held was layout, unless the value was only `\r`."""
        held = self._held if not self._started else ""
        self._held = ""
        return held


def layout_trimmed(text: str) -> str:
    """`text` without its layout, as `ValueLayout` streams it."""
    if "\n" not in text and text != "\r":
        return text  # one line: nothing is layout (the common case, kept cheap)
    layout = ValueLayout()
    return layout.feed(text) + layout.finish()


def whole_cdata(raw: str) -> str | None:
    """The text inside the CDATA sections that make up all of `raw` (whitespace around
    them is layout), or None when text outside a section is part of the value."""
    pieces = _CDATA_SECTION.split(raw)
    if len(pieces) == 1 or any(pieces[index].strip() for index in range(0, len(pieces), 2)):
        return None
    return "".join(pieces[1::2])


def _string_value(raw: str) -> str:
    """A raw value without its layout, and without CDATA markers that wrap all of it."""
    inside = whole_cdata(raw)
    return inside if inside is not None else layout_trimmed(raw)


_LXML_PARSER = etree.XMLParser(
    recover=True, resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False
)


def parse_xml_value(raw: str, schema: Any = None) -> Any:
    """Convert a non-string argument's inner content through lxml; `schema` (the
    argument's, if declared) tells which wrapped child lists are arrays."""
    if "<" not in raw and "&" not in raw:
        return _leaf_text(raw)  # no markup: what lxml would give, without its cost
    repaired = _LXML_REPAIRS.sub(_repair, raw)
    document = f"<{_SYNTHETIC_ROOT}>{repaired}</{_SYNTHETIC_ROOT}>"
    try:
        # Lone surrogates can arrive from JSON-escaped model output; pass them through as
        # invalid bytes for libxml2 to recover from instead of failing the encode.
        root = etree.fromstring(document.encode("utf-8", "surrogatepass"), _LXML_PARSER)
    except (etree.LxmlError, ValueError) as error:
        raise RelaxedXMLError(f"unreadable XML: {error}") from error
    if root is None:
        raise RelaxedXMLError("unreadable XML")
    return _element_value(root, schema, depth=1, raw_inner=raw)


def _repair(match: re.Match[str]) -> str:
    """The replacement for one `_LXML_REPAIRS` match."""
    if match["cdata"]:
        return match.group()
    if match["index"]:
        return f"<{match['slash']}{_INDEX_TAG_PREFIX}{match['index']}"
    return "&amp;" if match["amp"] else "&lt;"


def _element_value(element: Any, schema: Any, depth: int, raw_inner: str | None = None) -> Any:
    """Text for a leaf, list for `<item>`s, numeric keys or a wrapper the schema calls an
    array, dict otherwise."""
    if depth > MAX_DEPTH:
        raise RelaxedXMLError(f"arguments nested deeper than {MAX_DEPTH}")
    # Comments, processing instructions and entity references are not arguments.
    children = [child for child in element if isinstance(child.tag, str)]
    if not children:
        return _leaf_text(element.text or "" if len(element) == 0 else "".join(element.itertext()))
    loose_text = [element.text or ""] + [node.tail or "" for node in element]
    if "".join(loose_text).strip():
        if raw_inner is not None:
            return _string_value(raw_inner)
        markup = (etree.tostring(node, encoding="unicode") for node in element)
        return layout_trimmed((element.text or "") + "".join(markup))
    schema = schema if isinstance(schema, Mapping) else {}
    types = declared_types(schema)
    is_array = "array" in types and "object" not in types
    items, properties = schema.get("items"), _properties(schema)
    pairs = [
        (
            key,
            # A leaf inline: objects of many thousand members are parsed in one go.
            _leaf_text(child.text or "")
            if len(child) == 0 and depth < MAX_DEPTH
            else _element_value(child, items if is_array else properties.get(key), depth + 1),
        )
        for child in children
        for key in (_key(child),)
    ]
    if all(key == LIST_MEMBER for key, _ in pairs):
        return [_number_if_exact(value) for _, value in pairs]
    if is_array and len({key for key, _ in pairs}) == 1:
        return [value for _, value in pairs]
    grouped = _group_repeated(pairs)
    if set(grouped) == {str(index) for index in range(len(grouped))}:
        return [grouped[str(index)] for index in range(len(grouped))]
    return grouped


def _leaf_text(text: str) -> str:
    """A non-string leaf's text: the layout rule, and whitespace alone is empty."""
    return layout_trimmed(text) if text.strip() else ""


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
    """`"3"` -> 3 and `"2.5"` -> 2.5, only when printing the number gives back the text
    (whitespace around it aside)."""
    text = value.strip() if isinstance(value, str) else ""
    if not _EXACT_NUMBER.fullmatch(text):
        return value
    if "." in text:
        number = float(text)
        return number if repr(number) == text else value
    integer = int(text)
    return integer if str(integer) == text and abs(integer) <= MAX_SAFE_INTEGER else value
