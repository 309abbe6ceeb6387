"""Tests for RJSON: strict JSON, JSON5, each named repair, fences, multiple values, limits."""

import contextlib
import itertools
import json
from typing import Any
from unittest.mock import Mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.lenient import relaxed_json
from protocols.lenient.json_values import TopLevelReader, parse_json_values
from protocols.lenient.relaxed_json import (
    MAX_NESTING_DEPTH,
    PARSE_CHARGE_CHARS,
    RELAXED_PARSE_BUDGET_CHARS,
    REPAIRS,
    STRICT_CHARS_PER_CHARGED_CHAR,
    RelaxedJSONError,
    RelaxedParseBudget,
    parse_relaxed_json,
    strip_code_fence,
    walk_tokens,
)

REPAIR_BY_NAME = dict(REPAIRS)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1, "b": [true, null]}', {"a": 1, "b": [True, None]}),
        ("  \n[1, 2]\n  ", [1, 2]),
        ('"just a string"', "just a string"),
        ("42", 42),
        # JSON5
        ("{a: 1, b: 'two'}", {"a": 1, "b": "two"}),
        ('{"a": 1 /* why */, // note\n "b": 2}', {"a": 1, "b": 2}),
        ("{a: 0x10, b: +1, c: .5}", {"a": 16, "b": 1, "c": 0.5}),
        ("{'it': 'it\\'s'}", {"it": "it's"}),
        ("{True: 1}", {"True": 1}),
    ],
)
def test_parse_relaxed_json_accepts_json_and_json5(text: str, expected: Any) -> None:
    assert parse_relaxed_json(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"path": "C:\\Users\\me"}', {"path": "C:\\Users\\me"}),
        ('{"pattern": "^\\d+\\.\\w*$"}', {"pattern": "^\\d+\\.\\w*$"}),
        ('{"bad_unicode": "\\user"}', {"bad_unicode": "\\user"}),
        ('{"said": "it\\\'s"}', {"said": "it's"}),
        ('{"code": "line one\nline two\tend\r"}', {"code": "line one\nline two\tend\r"}),
        ('{"bell": "\x07"}', {"bell": "\x07"}),
        ('{"shell": "ls \\\n -la"}', {"shell": "ls \\\n -la"}),
        ("{'a': True, 'b': [False, None]}", {"a": True, "b": [False, None]}),
        ('{"a": [1, {"b": "cut off', {"a": [1, {"b": "cut off"}]}),
        ('{"a": "ends in a dangling escape\\', {"a": "ends in a dangling escape"}),
        ('{"a": 1, // a comment to the end', {"a": 1}),
        ("[1, 2, 3,", [1, 2, 3]),
        ('{"a": [1, 2,], "b": {"c": 1,},}', {"a": [1, 2], "b": {"c": 1}}),
        (
            '{"text": "raw\nnewline", "flag": True, "list": [1, 2',
            {
                "text": "raw\nnewline",
                "flag": True,
                "list": [1, 2],
            },
        ),
    ],
)
def test_parse_relaxed_json_repairs_what_models_write(text: str, expected: Any) -> None:
    assert parse_relaxed_json(text) == expected


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("invalid_escapes", '"C:\\Temp" "\\d" "\\n\\u0041"', '"C:\\\\Temp" "\\\\d" "\\n\\u0041"'),
        ("invalid_escapes", "'\\d' x\\y", "'\\d' x\\y"),
        ("invalid_escapes", '"don\\\'t"', '"don\'t"'),
        ("control_characters", '{"a": "x\ny\tz"}', '{"a": "x\\ny\\tz"}'),
        ("control_characters", '{"a": "\x01"}', '{"a": "\\u0001"}'),
        ("control_characters", "[1,\n\t2]", "[1,\n\t2]"),
        ("python_literals", '[True, False, None, "True"]', '[true, false, null, "True"]'),
        ("python_literals", "{None: 1, x: Nonesuch}", "{None: 1, x: Nonesuch}"),
        ("unclosed_brackets", '{"a": [{"b": 1', '{"a": [{"b": 1}]}'),
        ("unclosed_brackets", '["a", "b', '["a", "b"]'),
        ("unclosed_brackets", '{"a": "}]', '{"a": "}]"}'),
        ("unclosed_brackets", "[1 /* cut", "[1 /* cut*/]"),
        ("unclosed_brackets", "[1 // cut", "[1 // cut\n]"),
        ("unclosed_brackets", '{"a": 1}', '{"a": 1}'),
        ("trailing_commas", "[1, 2 , ]", "[1, 2  ]"),
        ("trailing_commas", '{"a,": ",]"}', '{"a,": ",]"}'),
    ],
)
def test_each_repair_rewrites_only_what_it_names(name: str, text: str, expected: str) -> None:
    assert REPAIR_BY_NAME[name](text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('```json\n{"a": 1}\n```', '{"a": 1}\n'),
        ("  ```\n[1]\n```  ", "[1]\n"),
        ("```JSON5 \n{a: 1}\n```", "{a: 1}\n"),
        ('```json\n{"a": 1', '{"a": 1'),
        ('{"a": "```"}', '{"a": "```"}'),
        ("```python code```", "```python code```"),
        ("```not a tag!\n{}\n```", "```not a tag!\n{}\n```"),
    ],
)
def test_strip_code_fence(text: str, expected: str) -> None:
    assert strip_code_fence(text) == expected


def test_parse_relaxed_json_reads_inside_a_code_fence() -> None:
    assert parse_relaxed_json('```json\n{"a": True,}\n```') == {"a": True}


@pytest.mark.parametrize(
    "text",
    ["", "   ", "hello", '{"a": }', "{'a' 1}", '{"a"', "[1] [2]", '{"a": 1}}', "```json\n```"],
)
def test_parse_relaxed_json_rejects_what_no_repair_explains(text: str) -> None:
    with pytest.raises(RelaxedJSONError):
        parse_relaxed_json(text)


@pytest.mark.parametrize(
    "text",
    ['{"a": [1, 2', '{"a": "cut off', '{"a": 1} {"b": 2', "[1, 2,"],
)
def test_complete_only_rejects_a_cut_off_end_instead_of_closing_it(text: str) -> None:
    assert parse_json_values(text)  # closed when allowed
    with pytest.raises(RelaxedJSONError):
        parse_json_values(text, complete_only=True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{'a': True, 'b': [1, 2,],}", {"a": True, "b": [1, 2]}),
        ('{"text": "raw\nnewline", "re": "\\d"}', {"text": "raw\nnewline", "re": "\\d"}),
    ],
)
def test_complete_only_still_applies_the_other_repairs(text: str, expected: Any) -> None:
    assert parse_relaxed_json(text, complete_only=True) == expected


def test_relaxed_json_error_says_what_was_tried() -> None:
    with pytest.raises(RelaxedJSONError, match=r"unclosed_brackets.*JSON5"):
        parse_relaxed_json('{"a": ')


def test_nesting_at_the_limit_parses() -> None:
    text = "[" * MAX_NESTING_DEPTH + "]" * MAX_NESTING_DEPTH
    value = parse_relaxed_json(text)
    for _ in range(MAX_NESTING_DEPTH - 1):
        value = value[0]
    assert value == []


@pytest.mark.parametrize("depth", [MAX_NESTING_DEPTH + 1, 100_000])
def test_nesting_past_the_limit_is_a_relaxed_json_error(depth: int) -> None:
    with pytest.raises(RelaxedJSONError, match="nested deeper"):
        parse_relaxed_json('{"a": ' * depth)


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = json.dumps({"text": "[{" * (MAX_NESTING_DEPTH * 2)})
    assert parse_relaxed_json(text) == {"text": "[{" * (MAX_NESTING_DEPTH * 2)}


def test_large_text_with_raw_newlines_parses_by_repair() -> None:
    content = "x = 1\n\tprint('y')\n" * 12_000  # about 200 KB
    text = '{"path": "a.py", "content": "' + content + '"}'
    assert parse_relaxed_json(text) == {"path": "a.py", "content": content}


def test_large_json5_text_parses() -> None:
    numbers = list(range(10_000))
    text = "{data: [" + ", ".join(map(str, numbers)) + "], note: 'x'}"  # about 60 KB
    assert parse_relaxed_json(text) == {"data": numbers, "note": "x"}


def test_every_parse_is_charged_to_the_budget_and_refused_past_it() -> None:
    relaxed, strict = "{a: 'x'}", '{"strict": 1}'
    relaxed_charge = PARSE_CHARGE_CHARS + len(relaxed)  # tried strictly first
    budget = RelaxedParseBudget(relaxed_charge + 2 * PARSE_CHARGE_CHARS)
    assert parse_relaxed_json(relaxed, budget=budget) == {"a": "x"}
    assert parse_relaxed_json(strict, budget=budget) == {"strict": 1}
    assert budget.remaining == PARSE_CHARGE_CHARS
    with pytest.raises(RelaxedJSONError, match="too small to repair"):
        parse_relaxed_json(relaxed, budget=budget)  # its strict try fits, its repair not
    with pytest.raises(RelaxedJSONError, match="too small to read"):
        parse_relaxed_json(strict, budget=budget)


def test_strict_reading_is_charged_by_the_parse_not_by_the_character() -> None:
    # A 50 MB file write was cut when every strict character was charged: read once, in C,
    # it costs what receiving it did.
    big = json.dumps({"content": "x" * 10 * RELAXED_PARSE_BUDGET_CHARS})
    budget = RelaxedParseBudget(PARSE_CHARGE_CHARS)
    assert parse_relaxed_json(big, budget=budget) == json.loads(big)
    assert budget.remaining == 0


def test_text_read_again_is_charged_by_its_length() -> None:
    budget = RelaxedParseBudget()
    budget.spend_reread(8_000)
    charged = PARSE_CHARGE_CHARS + 8_000 // STRICT_CHARS_PER_CHARGED_CHAR
    assert budget.remaining == RELAXED_PARSE_BUDGET_CHARS - charged


def test_strict_parses_are_charged_so_a_million_values_cannot_be_read_for_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A million bare `1`s cost seconds: each strict parse was free, and each has a fixed cost.
    # A budget of a thousand parses reads a thousand (the default one pays for 187,500).
    parses = Mock(wraps=json.loads)
    monkeypatch.setattr(relaxed_json.json, "loads", parses)
    budget = RelaxedParseBudget(1_000 * PARSE_CHARGE_CHARS)
    with pytest.raises(RelaxedJSONError, match="budget"):
        parse_json_values("1 " * 1_000_000, budget=budget)
    assert parses.call_count == 1_000


def test_a_parse_without_a_budget_gets_a_default_one() -> None:
    too_long = "[" + "1," * RELAXED_PARSE_BUDGET_CHARS + "]"  # needs a repair: the comma
    with pytest.raises(RelaxedJSONError, match="budget"):
        parse_relaxed_json(too_long)


def test_parse_json_values_charges_every_value_to_one_budget() -> None:
    budget = RelaxedParseBudget(len("{a: 1}") + 1)
    with pytest.raises(RelaxedJSONError, match="budget"):
        parse_json_values("{a: 1}\n{b: 2}", budget=budget)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', [{"a": 1}]),
        ('{"a": 1}{"b": 2}', [{"a": 1}, {"b": 2}]),
        ('{"a": 1}\n{"b": 2}\n', [{"a": 1}, {"b": 2}]),
        ('{"a": 1}, {"b": 2}', [{"a": 1}, {"b": 2}]),
        ("[1, 2] [3]", [[1, 2], [3]]),
        ('1 "two" true', [1, "two", True]),
        ("{a: 1} // first\n{b: 'x',}", [{"a": 1}, {"b": "x"}]),
        ('{"s": "}{"} {"t": "]["}', [{"s": "}{"}, {"t": "]["}]),
        ('{"a": 1}\n{"b": [2, 3', [{"a": 1}, {"b": [2, 3]}]),
        ('```json\n{"a": 1}\n{"b": 2}\n```', [{"a": 1}, {"b": 2}]),
    ],
)
def test_parse_json_values_reads_every_value(text: str, expected: list[Any]) -> None:
    assert parse_json_values(text) == expected


@pytest.mark.parametrize("text", ["", " , \n", '{"a": 1} junk', '{"a": 1}}', '{"a": 1} {"b":'])
def test_parse_json_values_rejects_leftovers_and_empty_text(text: str) -> None:
    with pytest.raises(RelaxedJSONError):
        parse_json_values(text)


def json_values_up_to(max_leaves: int) -> st.SearchStrategy[Any]:
    """Any JSON value with at most `max_leaves` scalars in it."""
    return st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(),
        lambda children: st.lists(children) | st.dictionaries(st.text(), children),
        max_leaves=max_leaves,
    )


json_values = json_values_up_to(20)


@given(json_values)
def test_strict_json_round_trips(value: Any) -> None:
    assert parse_relaxed_json(json.dumps(value)) == value


# Values nested deep are test_strict_json_round_trips' matter; here the boundaries between
# objects are, and small values keep generation from costing seconds of retried draws.
small_json_values = json_values_up_to(5)


@given(st.lists(st.dictionaries(st.text(), small_json_values, max_size=3), min_size=1, max_size=4))
def test_parse_json_values_reads_back_concatenated_objects(objects: list[Any]) -> None:
    assert parse_json_values("".join(json.dumps(item) for item in objects)) == objects


JSONISH = st.text(alphabet="{}[]\"':,/*\\\n\t TrueFalsNn0123.-ex`", max_size=60)


@given(st.one_of(st.text(), JSONISH))
def test_parse_relaxed_json_fails_only_with_relaxed_json_error(text: str) -> None:
    with contextlib.suppress(RelaxedJSONError):
        parse_relaxed_json(text)


@given(st.one_of(st.text(), JSONISH))
def test_parse_json_values_fails_only_with_relaxed_json_error(text: str) -> None:
    with contextlib.suppress(RelaxedJSONError):
        assert isinstance(parse_json_values(text), list)


def _merged(tokens: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Adjacent code tokens as one: where a code run is cut does not matter."""
    merged: list[tuple[str, str]] = []
    for kind, text in tokens:
        if merged and kind == merged[-1][0] == "code":
            merged[-1] = ("code", merged[-1][1] + text)
        else:
            merged.append((kind, text))
    return merged


def _top_level_tokens_walked(text: str) -> list[tuple[str, str]]:
    """What `walk_tokens` (the reading `parse_json_values` splits by) finds between values."""
    tokens, depth = [], 0
    for token, owed in walk_tokens(text):
        if depth == 0:
            kind = token.lastgroup or ""
            opening = {"string": 1, "comment": 2}.get(kind)
            tokens.append((kind, token[0][:opening] if opening else token[0]))
        depth = len(owed)
    return tokens


@given(
    st.text(alphabet="{}[]\"'/\\*\n ,a1", max_size=60),
    st.lists(st.integers(min_value=0, max_value=60), max_size=8),
)
def test_the_top_level_reader_reads_a_stream_as_parse_json_values_reads_the_text(
    text: str, cuts: list[int]
) -> None:
    text += "\n"  # a `/` at the end waits for what follows it
    try:
        expected: list[tuple[str, str]] | None = _merged(_top_level_tokens_walked(text))
    except RelaxedJSONError:
        expected = None
    reader = TopLevelReader()
    tokens: list[tuple[str, str]] = []
    bounds = [0, *sorted(cut for cut in cuts if cut < len(text)), len(text)]
    try:
        for start, end in itertools.pairwise(bounds):
            tokens += reader.feed(text[start:end])
    except RelaxedJSONError:
        assert expected is None
        return
    assert _merged(tokens) == expected


def test_the_top_level_reader_refuses_what_is_nested_too_deep() -> None:
    reader = TopLevelReader()
    reader.feed("[" * MAX_NESTING_DEPTH + "]" * MAX_NESTING_DEPTH)
    with pytest.raises(RelaxedJSONError, match="nested deeper"):
        reader.feed("[" * (MAX_NESTING_DEPTH + 1))
