"""One argument's value in the XML formats (Morph-XML's tags, Qwen3-Coder's parameters): its
text without its layout, as it streams or whole, and a value of another type read through
lxml.

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
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .coerce import declared_properties, declared_types

# A value read as XML through lxml (an object, an array): far beyond any real one, and
# past it building the tree would only burn CPU and memory. String values are kept as
# written, in one pass, so a call body as such has no limit (a 50 MB file write was cut).
MAX_MARKUP_VALUE_CHARS = 4 * 1024 * 1024
# Far beyond the nesting of any tool schema; protects the recursive conversion.
MAX_DEPTH = 64
# Integers beyond 2**53 lose precision in JavaScript clients, so `<item>` keeps them as text.
MAX_SAFE_INTEGER = 2**53
# XML names cannot start with a digit; `<0>` is renamed to this prefix for lxml and back.
_INDEX_TAG_PREFIX = "rxml-index-"
# Wraps a value's content for lxml; a name models have no reason to write.
_SYNTHETIC_ROOT = "rxml-root"
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
# one call's arguments (see `relaxed_xml.parse_xml_calls`).
LIST_MEMBER = "item"


class RelaxedXMLError(ValueError):
    """The body cannot be understood as tool call arguments."""


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


def string_value(raw: str) -> str:
    """A raw value without its layout, and without CDATA markers that wrap all of it."""
    inside = whole_cdata(raw)
    return inside if inside is not None else layout_trimmed(raw)


if TYPE_CHECKING:
    from lxml import etree


@functools.cache
def _lxml() -> tuple[ModuleType, etree.XMLParser]:
    """lxml and its parser, imported with the first value that holds markup: few do, and
    imported with the module lxml took 4 MB of every worker's memory from its start."""
    from lxml import etree

    parser = etree.XMLParser(
        recover=True, resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False
    )
    return etree, parser


def parse_xml_value(raw: str, schema: Any = None) -> Any:
    """Convert a non-string argument's inner content through lxml; `schema` (the
    argument's, if declared) tells which wrapped child lists are arrays."""
    if "<" not in raw and "&" not in raw:
        return _leaf_text(raw)  # no markup: what lxml would give, without its cost
    if len(raw) > MAX_MARKUP_VALUE_CHARS:
        raise RelaxedXMLError(f"a value of {len(raw)} characters exceeds {MAX_MARKUP_VALUE_CHARS}")
    repaired = _LXML_REPAIRS.sub(_repair, raw)
    document = f"<{_SYNTHETIC_ROOT}>{repaired}</{_SYNTHETIC_ROOT}>"
    etree, parser = _lxml()
    try:
        # Lone surrogates can arrive from JSON-escaped model output; pass them through as
        # invalid bytes for libxml2 to recover from instead of failing the encode.
        root = etree.fromstring(document.encode("utf-8", "surrogatepass"), parser)
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
            return string_value(raw_inner)
        etree, _ = _lxml()
        markup = (etree.tostring(node, encoding="unicode") for node in element)
        return layout_trimmed((element.text or "") + "".join(markup))
    schema = schema if isinstance(schema, Mapping) else {}
    types = declared_types(schema)
    is_array = "array" in types and "object" not in types
    items, properties = schema.get("items"), declared_properties(schema)
    if is_array and isinstance(items, Mapping) and _names_members(children, items):
        # One object of the array, written with the array's name (repeated, the element is
        # the list's member, as Roo Code's `<files><path>a</path></files>` is), not a
        # wrapper whose children are the members.
        return _element_value(element, items, depth, raw_inner)
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
    grouped = group_repeated(pairs)
    if set(grouped) == {str(index) for index in range(len(grouped))}:
        return [grouped[str(index)] for index in range(len(grouped))]
    return grouped


def _names_members(children: list[Any], schema: Mapping[str, Any]) -> bool:
    """Whether every child element names a member of the object `schema` declares
    (`<item>` never does: it is the list's own member)."""
    members = declared_properties(schema)
    return bool(members) and all(
        (key := _key(child)) in members and key != LIST_MEMBER for child in children
    )


def _leaf_text(text: str) -> str:
    """A non-string leaf's text: the layout rule, and whitespace alone is empty."""
    return layout_trimmed(text) if text.strip() else ""


def _key(element: Any) -> str:
    tag: str = element.tag
    local_name = tag.rpartition("}")[2]  # drop a namespace a model declared with xmlns
    return local_name.removeprefix(_INDEX_TAG_PREFIX)


def group_repeated(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
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
