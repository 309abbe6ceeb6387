"""RXML: turn the body of a Morph-XML tool call (`<path>a.py</path><limit>20</limit>`) into a
dict of arguments, tolerating the malformed XML models write (each value is read by
`xml_values`).

Rules beyond the spec, decided here:

- An unclosed argument tag runs to the end of the body; text between argument tags is dropped.
- Numeric tags (`<0>`, `<1>`) are accepted, so `{"0": .., "1": ..}` objects can become lists.
- A parameter that takes one value (a declared type, not an array) given by two tags makes
  the body no arguments, unless the body is several calls (`parse_xml_calls`).
- A body of text alone (`<bash>python3 hello.py</bash>`) is the value of the tool's one
  required parameter, when that takes a string (`bare_value_parameter`): what else could
  the model have meant. Otherwise it is no arguments.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .coerce import declared_properties, declared_types, is_string_schema
from .relaxed_json import RelaxedJSONError, RelaxedParseBudget
from .xml_values import (
    LIST_MEMBER,
    MAX_DEPTH,
    RelaxedXMLError,
    group_repeated,
    parse_xml_value,
    string_value,
)

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
    budget: RelaxedParseBudget | None = None,
) -> dict[str, Any]:
    """Parse `<key>value</key>...` into `{"key": value, ...}`, keys in document order.

    `parsed_values` maps a non-string argument's (name, raw inner text) to the value
    `parse_xml_value` already gave it (while streaming), so it is not parsed twice; the
    name is part of the key because the same text reads differently under another schema.
    Each argument tag is charged to `budget` (a default-sized one of its own when none is
    given). Raises RelaxedXMLError (never anything else) when the body cannot be understood.
    """
    properties = declared_properties(schema or {})
    tags = _argument_tags(body, budget or RelaxedParseBudget(), properties)
    return _arguments(body, tags, properties, parsed_values or {})


def parse_xml_calls(
    body: str,
    schema: Mapping[str, Any] | None = None,
    parsed_values: Mapping[tuple[str, str], Any] | None = None,
    budget: RelaxedParseBudget | None = None,
) -> list[dict[str, Any]]:
    """The arguments of each call one tool element's `body` holds (see parse_xml_arguments).

    Models write several calls of one tool in one element in two ways, each read as that
    many calls: the same run of arguments again (`<height>6</height><weight>80</weight>
    <height>5.6</height><weight>60</weight>`: at least two arguments a run, the same ones in
    the same order each time, every required one in each, and again only where an argument
    that takes one value comes back); or `<item>` elements, when no parameter is named
    `item`, each holding one call's argument elements (arguments beside them go to every
    call). Items holding anything else stay an `item` argument. Charged as
    parse_xml_arguments is.
    """
    budget = budget or RelaxedParseBudget()
    properties = declared_properties(schema or {})
    tags, has_stray_text = _scan_top_level(body, budget, properties)
    if not tags and has_stray_text:
        bare = bare_value_parameter(schema or {})
        if bare is None:
            raise RelaxedXMLError("body has text but no argument tags")
        return [{bare: string_value(body)}]
    known = parsed_values or {}
    names = {tag.name for tag in tags}
    items = LIST_MEMBER in names and LIST_MEMBER not in properties
    if len(names) == len(tags) and not items:  # one call (the common case, at once)
        return [_arguments(body, tags, properties, known)]
    if items:
        calls = _item_calls(body, tags, properties, known, budget)
        if calls is not None:
            return calls
    return [
        _arguments(body, run, properties, known)
        for run in _repeated_runs(tags, properties, _required(schema or {}))
    ]


def _argument_tags(
    body: str, budget: RelaxedParseBudget, declared: Collection[str]
) -> list[_ArgumentTag]:
    tags, has_stray_text = _scan_top_level(body, budget, declared)
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
            pairs.append((tag.name, string_value(inner)))
    return group_repeated(pairs)


def bare_value_parameter(schema: Mapping[str, Any]) -> str | None:
    """The parameter a tool element's text is when written bare, with no argument element
    (`<bash>ls</bash>`): the tool's one required parameter, when it takes a string. None
    for any other tool: which parameter the text is would be a guess."""
    required = _required(schema)
    if len(required) != 1:
        return None
    (key,) = required
    property_schema = declared_properties(schema).get(key)
    return (
        key if isinstance(property_schema, Mapping) and is_string_schema(property_schema) else None
    )


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
    budget: RelaxedParseBudget,
) -> list[dict[str, Any]] | None:
    """One call per top-level `<item>`, each with the arguments beside the items; None unless
    every item holds argument elements alone (each naming a declared parameter)."""
    shared = _arguments(body, [tag for tag in tags if tag.name != LIST_MEMBER], properties, known)
    calls = []
    for item in tags:
        if item.name != LIST_MEMBER:
            continue
        inner = body[item.inner_start : item.inner_end]
        inner_tags, has_stray_text = _scan_top_level(inner, budget)
        undeclared = properties and any(tag.name not in properties for tag in inner_tags)
        if not inner_tags or has_stray_text or undeclared:
            return None
        own = _arguments(inner, inner_tags, properties, known)
        if shared.keys() & own.keys():
            raise DuplicateStringTagError(f"{sorted(shared.keys() & own.keys())} given twice")
        calls.append({**shared, **own})
    return calls


def arguments_are_complete(body: str, budget: RelaxedParseBudget | None = None) -> bool:
    """Whether every top-level argument tag and CDATA section in `body` is closed, i.e. the
    output was not cut off in the middle of an argument. Charged as parse_xml_arguments is;
    raises RelaxedXMLError past the budget."""
    tags, _ = _scan_top_level(body, budget or RelaxedParseBudget())
    return all(tag.closed for tag in tags) and body.count(_CDATA_START) == body.count(_CDATA_END)


def _scan_top_level(
    body: str, budget: RelaxedParseBudget, declared: Collection[str] = ()
) -> tuple[list[_ArgumentTag], bool]:
    """The body's top-level tags, and whether non-whitespace text lies between them. Each
    tag is charged to `budget`. A tag of a `declared` argument left unclosed ends where
    another declared argument's tag does (see `_misclosed`)."""
    tags: list[_ArgumentTag] = []
    has_stray_text = False
    position = 0
    while (lt := body.find("<", position)) >= 0:
        has_stray_text = has_stray_text or _has_text(body[position:lt])
        if body.startswith(_CDATA_START, lt):
            position = _skip_past(body, lt, _CDATA_END)
            has_stray_text = has_stray_text or bool(string_value(body[lt:position]))
        elif opened := _OPEN_TAG.match(body, lt):
            try:
                budget.spend_argument()
            except RelaxedJSONError as error:
                raise RelaxedXMLError(str(error)) from None
            inner_end, position, closed = _find_close(body, opened)
            if not closed and opened["name"] in declared:
                inner_end, position, closed = _misclosed(body, opened, declared) or (
                    inner_end,
                    position,
                    closed,
                )
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


def _misclosed(
    body: str, opened: re.Match[str], declared: Collection[str]
) -> tuple[int, int, bool] | None:
    """Where an argument never closed by its own tag ends: at the closing tag of another
    declared argument, which the model wrote in its place (`<end>SF</start>`), or at the
    next declared argument's opening tag. As `_find_close` gives it, or None."""
    name = opened["name"]
    position = opened.end()
    while found := _TAG_OR_CDATA.search(body, position):
        position = found.end()
        if found["cdata"]:
            position = _skip_past(body, found.start(), _CDATA_END)
        elif found["name"] != name and found["name"] in declared:
            # A tag on a line of its own: the line break before it is layout.
            before = body[opened.end() : found.start()].rstrip(" \t")
            end = opened.end() + len(before.removesuffix("\n").removesuffix("\r"))
            return end, found.end() if found["slash"] else found.start(), True
    return None


def _skip_past(text: str, start: int, terminator: str) -> int:
    end = text.find(terminator, start)
    return len(text) if end < 0 else end + len(terminator)
