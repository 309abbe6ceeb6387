"""Tests for protocols.lenient.relaxed_xml: Morph-XML call bodies into argument dicts."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.lenient.relaxed_xml import DuplicateStringTagError, parse_xml_arguments
from protocols.lenient.xml_values import (
    MAX_DEPTH,
    MAX_MARKUP_VALUE_CHARS,
    RelaxedXMLError,
    ValueLayout,
)

WRITE_FILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "content": {"type": "string"},
        "code": {"type": "string"},
        "limit": {"type": "integer"},
        "options": {"type": "object"},
    },
}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            '<content>if a < b && c > d: print("<div>&amp;")</content>',
            'if a < b && c > d: print("<div>&amp;")',
        ),
        ("<code><![CDATA[x < y </code> ]]></code>", "x < y </code> "),
        ("<code>a <![CDATA[<b>]]> c <![CDATA[&d;]]></code>", "a <![CDATA[<b>]]> c <![CDATA[&d;]]>"),
        ("<code><![CDATA[unterminated </code>", "unterminated </code>"),
        ("<content>a <content>b</content> c</content>", "a <content>b</content> c"),
        ("<content><!-- kept --><p class='x'>hi</content>", "<!-- kept --><p class='x'>hi"),
        ("<content/>", ""),
        ("<content></content>", ""),
    ],
)
def test_string_property_keeps_raw_inner_text(body: str, expected: str) -> None:
    key = "code" if body.startswith("<code") else "content"
    assert parse_xml_arguments(body, WRITE_FILE_SCHEMA) == {key: expected}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  src/a.py  ", "  src/a.py  "),
        ("    return a - b;", "    return a - b;"),
        ("\n  src/a.py\n", "  src/a.py\n"),
        ("\ndef f():\n    pass\n", "def f():\n    pass\n"),
        ("def f():\n    pass", "def f():\n    pass"),
        ("\n    indented\n    block\n  ", "    indented\n    block\n"),
        ("\r\nline one\r\nline two\r\n", "line one\r\nline two\r\n"),
        ("\n\nafter a blank line\nend", "\nafter a blank line\nend"),
        ("\n<![CDATA[  spaced  ]]>\n", "  spaced  "),
    ],
)
def test_string_property_trims_only_layout_whitespace(raw: str, expected: str) -> None:
    assert parse_xml_arguments(f"<content>{raw}</content>", WRITE_FILE_SCHEMA) == {
        "content": expected
    }


@pytest.mark.parametrize(
    "property_schema",
    [
        {"type": "string"},
        {"type": ["string", "null"]},
        {"anyOf": [{"type": "string"}, {"type": "null"}]},
        {"oneOf": [{"type": ["null", "string"]}]},
    ],
)
def test_string_typed_schemas_take_raw_text(property_schema: dict[str, Any]) -> None:
    schema = {"properties": {"q": property_schema}}
    assert parse_xml_arguments("<q>a && b</q>", schema) == {"q": "a && b"}


@pytest.mark.parametrize(
    "property_schema",
    [
        {"type": "integer"},
        {"type": ["string", "integer"]},
        {"anyOf": [{"type": "string"}, {"enum": [1, 2]}]},
        {"description": "no type"},
    ],
)
def test_non_string_schemas_parse_as_xml(property_schema: dict[str, Any]) -> None:
    schema = {"properties": {"q": property_schema}}
    assert parse_xml_arguments("<q>a &amp; b</q>", schema) == {"q": "a & b"}


def test_two_tags_for_one_string_property_is_an_error() -> None:
    with pytest.raises(DuplicateStringTagError):
        parse_xml_arguments("<path>a.py</path><path>b.py</path>", WRITE_FILE_SCHEMA)


def test_nested_tag_with_a_string_property_name_is_not_top_level() -> None:
    body = "<options><path>inner</path></options><path>outer</path>"
    assert parse_xml_arguments(body, WRITE_FILE_SCHEMA) == {
        "options": {"path": "inner"},
        "path": "outer",
    }


def test_keys_follow_document_order_across_string_and_xml_values() -> None:
    body = "<limit>5</limit><path>a.py</path><options><x>1</x></options><content>c</content>"
    arguments = parse_xml_arguments(body, WRITE_FILE_SCHEMA)
    assert list(arguments) == ["limit", "path", "options", "content"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("<limit>20</limit>", {"limit": "20"}),
        ("<limit>\n  20\n</limit>", {"limit": "  20\n"}),
        ("<limit>\n  \n</limit>", {"limit": ""}),
        ("<q>a &amp; b &lt; c</q>", {"q": "a & b < c"}),
        ("<q>ls && echo 'a < b'</q>", {"q": "ls && echo 'a < b'"}),
        ("<q>&unknown; stays</q>", {"q": "&unknown; stays"}),
        ("<q><![CDATA[<raw> & ]]>tail</q>", {"q": "<raw> & tail"}),
        ("<q>x<!-- dropped -->y</q>", {"q": "xy"}),
        ("<flag/>", {"flag": ""}),
        ("<flag></flag>", {"flag": ""}),
        ('<q mode="fast" n=1>text</q>', {"q": "text"}),
        ("<tag>a</tag><tag>b</tag><tag>c</tag>", {"tag": ["a", "b", "c"]}),
        ("<o><a>1</a><b><c>2</c></b></o>", {"o": {"a": "1", "b": {"c": "2"}}}),
        ("<o><a>1</a><a>2</a><b>3</b></o>", {"o": {"a": ["1", "2"], "b": "3"}}),
        ("<o>\n  <a>1</a>\n  <b>2</b>\n</o>", {"o": {"a": "1", "b": "2"}}),
        ('<o xmlns="urn:x"><a>1</a></o>', {"o": {"a": "1"}}),
        ("<0>a</0><1>b</1>", {"0": "a", "1": "b"}),
    ],
)
def test_other_values_convert_through_xml(body: str, expected: dict[str, Any]) -> None:
    assert parse_xml_arguments(body) == expected


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        (["3", "2.5", "-4", "0"], [3, 2.5, -4, 0]),
        (["007", "1.10", "-0", "1e5", "nan", " 7 "], ["007", "1.10", "-0", "1e5", "nan", 7]),
        (["9007199254740992", "9007199254740993"], [2**53, "9007199254740993"]),
        (["a", "b"], ["a", "b"]),
        (["only"], ["only"]),
    ],
)
def test_item_lists_become_arrays_with_exact_numbers(items: list[str], expected: list[Any]) -> None:
    body = "<values>" + "".join(f"<item>{item}</item>" for item in items) + "</values>"
    assert parse_xml_arguments(body) == {"values": expected}


def test_item_list_of_objects_becomes_array_of_dicts() -> None:
    body = "<edits><item><old>a</old><new>b</new></item><item><old>c</old></item></edits>"
    assert parse_xml_arguments(body) == {"edits": [{"old": "a", "new": "b"}, {"old": "c"}]}


def test_repeated_tags_keep_numeric_text_as_strings() -> None:
    assert parse_xml_arguments("<n>1</n><n>2</n>") == {"n": ["1", "2"]}


@pytest.mark.parametrize(
    ("inner", "expected"),
    [
        ("<0>a</0><1>b</1>", ["a", "b"]),
        ("<1>b</1><0>a</0><2>c</2>", ["a", "b", "c"]),
        ("<0>a</0><2>c</2>", {"0": "a", "2": "c"}),
        ("<0><x>1</x></0>", [{"x": "1"}]),
    ],
)
def test_numeric_keys_become_list_in_index_order_when_complete(inner: str, expected: Any) -> None:
    assert parse_xml_arguments(f"<point>{inner}</point>") == {"point": expected}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('<q>x = "<div>" ok</q>', {"q": 'x = "<div>" ok'}),
        ("<q>see <b>this</b> here</q>", {"q": "see <b>this</b> here"}),
        ("<o><q>see <b>this</b> here</q></o>", {"o": {"q": "see <b>this</b> here"}}),
    ],
)
def test_mixed_text_and_tags_keep_the_markup_as_text(body: str, expected: dict[str, Any]) -> None:
    assert parse_xml_arguments(body) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("<o><a>1</o>", {"o": {"a": "1"}}),
        ("<path>a.py</path><content>a = 1\nb = 2\n", {"path": "a.py", "content": "a = 1\nb = 2\n"}),
        ("<o><a>1</a></b></o>", {"o": {"a": "1"}}),
        ("<a>1</a></stray><b>2</b>", {"a": "1", "b": "2"}),
        ("Sure:\n<a>1</a>\ndone", {"a": "1"}),
        ("<!-- note --><?pi x?><a>1</a>", {"a": "1"}),
    ],
)
def test_malformed_xml_is_recovered(body: str, expected: dict[str, Any]) -> None:
    assert parse_xml_arguments(body, WRITE_FILE_SCHEMA) == expected


@pytest.mark.parametrize("body", ["", "  \n\t ", "<!-- only a comment -->"])
def test_body_without_arguments_is_empty(body: str) -> None:
    assert parse_xml_arguments(body) == {}


@pytest.mark.parametrize("body", ["now", "a < b", "</orphan>", "<![CDATA[text]]>"])
def test_text_without_tags_is_an_error(body: str) -> None:
    with pytest.raises(RelaxedXMLError):
        parse_xml_arguments(body)


@pytest.mark.parametrize(
    "body",
    [
        "<a>" * (MAX_DEPTH + 1),
        "<o>" + "<a>" * (MAX_DEPTH + 1) + "</a>" * (MAX_DEPTH + 1) + "</o>",
        "<o>" + "<a>" * (MAX_DEPTH + 1) + "</o>",
        "<a><b>" + "x" * MAX_MARKUP_VALUE_CHARS + "</b></a>",
    ],
)
def test_limits_raise_relaxed_xml_error(body: str) -> None:
    with pytest.raises(RelaxedXMLError):
        parse_xml_arguments(body)


def test_nesting_within_the_depth_limit_parses() -> None:
    depth = MAX_DEPTH - 1
    body = "<o>" + "<a>" * depth + "leaf" + "</a>" * depth + "</o>"
    value = parse_xml_arguments(body)["o"]
    for _ in range(depth):
        value = value["a"]
    assert value == "leaf"


def test_entity_declarations_are_never_expanded() -> None:
    body = '<!DOCTYPE x [<!ENTITY boom "BOOM">]><a>&boom;</a>'
    assert parse_xml_arguments(body) == {"a": "&boom;"}


XML_ALPHABET = st.sampled_from(
    ["<", ">", "/", "&", ";", "!", "[", "]", "-", "?", "=", '"', " ", "\n", "a", "0", "é"]
)
XML_FRAGMENTS = st.sampled_from(
    ["<path>", "</path>", "<content>", "</content>", "<item>", "</item>", "<0>", "<![CDATA[",
     "]]>", "<!--", "-->", "&amp;", "&x;", "<a/>", "<o>", "</o>", "<?", "\x00", "\ud800"]
)  # fmt: skip
NOISY_BODIES = st.lists(st.one_of(XML_ALPHABET, XML_FRAGMENTS, st.text(max_size=5))).map("".join)


@given(body=NOISY_BODIES, with_schema=st.booleans())
def test_only_relaxed_xml_error_escapes_on_arbitrary_bodies(body: str, with_schema: bool) -> None:
    try:
        arguments = parse_xml_arguments(body, WRITE_FILE_SCHEMA if with_schema else None)
    except RelaxedXMLError:
        return
    assert isinstance(arguments, dict)


@given(content=st.text().filter(lambda text: "<" not in text and text == text.strip()))
def test_string_property_without_markup_or_edge_whitespace_is_byte_exact(content: str) -> None:
    body = f"<path>a.py</path><content>{content}</content>"
    assert parse_xml_arguments(body, WRITE_FILE_SCHEMA)["content"] == content


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("ab \t\r\n"), max_size=24),
    cuts=st.lists(st.integers(min_value=0, max_value=24), max_size=6),
    drop_final_line_break=st.booleans(),
)
def test_value_layout_streams_what_it_gives_for_the_whole_text(
    text: str, cuts: list[int], drop_final_line_break: bool
) -> None:
    def laid_out(pieces: list[str]) -> str:
        layout = ValueLayout(drop_final_line_break=drop_final_line_break)
        return "".join(layout.feed(piece) for piece in pieces) + layout.finish()

    bounds = [0, *sorted(cut for cut in cuts if cut <= len(text)), len(text)]
    pieces = [text[start:end] for start, end in itertools.pairwise(bounds)]
    assert laid_out(pieces) == laid_out([text])
    if "\n" not in text:
        assert laid_out([text]) == text  # a one-line value is exact
