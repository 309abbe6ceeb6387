"""Tests for schema-driven coercion of tool arguments."""

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.lenient.coerce import MAX_SCHEMA_DEPTH, MAX_SCHEMA_VISITS, coerce_by_schema
from protocols.lenient.relaxed_json import RELAXED_PARSE_BUDGET_CHARS, RelaxedParseBudget


@pytest.mark.parametrize(
    ("schema_type", "value", "expected"),
    [
        ("integer", "5", 5),
        ("integer", " 5 ", 5),
        ("integer", "-12", -12),
        ("integer", "5.0", 5),
        ("integer", "1e3", 1000),
        ("integer", 5.0, 5),
        ("integer", "5.5", "5.5"),
        ("integer", 5.5, 5.5),
        ("integer", "five", "five"),
        ("integer", "1_000", "1_000"),
        ("integer", "9" * 5000, "9" * 5000),
        ("integer", True, True),
        ("number", "3.14", 3.14),
        ("number", "2", 2),
        ("number", "1e3", 1000.0),
        ("number", "-.5", -0.5),
        ("number", "abc", "abc"),
        ("number", "nan", "nan"),
        ("number", "inf", "inf"),
        ("number", "1e999", "1e999"),
        ("boolean", "true", True),
        ("boolean", " FALSE ", False),
        ("boolean", "True", True),
        ("boolean", "1", "1"),
        ("boolean", "yes", "yes"),
        ("boolean", 0, 0),
        ("null", "null", None),
        ("null", "None", None),
        ("null", "", None),
        ("null", "nothing", "nothing"),
        ("string", 5, "5"),
        ("string", 2.5, "2.5"),
        ("string", True, "true"),
        ("string", "as is", "as is"),
        ("string", None, None),
        ("string", {"a": 1}, {"a": 1}),
        ("string", [1], [1]),
    ],
)
def test_scalar_types_convert_only_when_exact(schema_type: str, value: Any, expected: Any) -> None:
    result = coerce_by_schema(value, {"type": schema_type})
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        ({"type": "array"}, "[1, 2]", [1, 2]),
        ({"type": "array"}, "[]", []),
        ({"type": "array"}, "['a', 'b',]", ["a", "b"]),
        ({"type": "array"}, "just text", ["just text"]),
        ({"type": "array"}, "[draft] notes", ["[draft] notes"]),
        ({"type": "array"}, '{"a": 1}', ['{"a": 1}']),
        ({"type": "array"}, {"a": 1}, [{"a": 1}]),
        ({"type": "array"}, 7, [7]),
        ({"type": "array"}, None, None),
        ({"type": "array", "items": {"type": "integer"}}, ["1", "2", "x"], [1, 2, "x"]),
        ({"type": "array", "items": {"type": "integer"}}, "5", [5]),
        ({"type": "array", "items": {"type": "integer"}}, '["1", 2]', [1, 2]),
        (
            {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "boolean"}]},
            ["1", "true", "3"],
            [1, True, "3"],
        ),
        (
            {
                "type": "array",
                "prefixItems": [{"type": "string"}],
                "items": {"type": "integer"},
            },
            [1, "2", "3"],
            ["1", 2, 3],
        ),
        ({"type": "array", "items": [{"type": "integer"}]}, ["1", "2"], [1, "2"]),
    ],
)
def test_arrays_are_parsed_wrapped_and_coerced_by_items(
    schema: dict[str, Any], value: Any, expected: Any
) -> None:
    assert coerce_by_schema(value, schema) == expected


NUMBERED = {
    "type": "object",
    "properties": {"count": {"type": "integer"}, "ok": {"type": "boolean"}},
}


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        (NUMBERED, {"count": "3", "ok": "false"}, {"count": 3, "ok": False}),
        (NUMBERED, {"count": "3", "extra": "7"}, {"count": 3, "extra": "7"}),
        (NUMBERED, '{"count": "3"}', {"count": 3}),
        (NUMBERED, "{count: 4,}", {"count": 4}),
        (NUMBERED, "{}", {}),
        (NUMBERED, "not an object", "not an object"),
        (NUMBERED, "[1]", "[1]"),
        (NUMBERED, ["count", "3"], ["count", "3"]),
        (
            {**NUMBERED, "additionalProperties": {"type": "number"}},
            {"count": "3", "extra": "7.5"},
            {"count": 3, "extra": 7.5},
        ),
        (
            {**NUMBERED, "additionalProperties": True},
            {"extra": "7"},
            {"extra": "7"},
        ),
        (
            {
                "type": "object",
                "properties": {
                    "inner": {"type": "object", "properties": {"n": {"type": "integer"}}}
                },
            },
            {"inner": '{"n": "1"}'},
            {"inner": {"n": 1}},
        ),
    ],
)
def test_objects_are_parsed_and_coerced_by_properties(
    schema: dict[str, Any], value: Any, expected: Any
) -> None:
    assert coerce_by_schema(value, schema) == expected


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        ({"type": ["integer", "null"]}, "5", 5),
        ({"type": ["integer", "null"]}, "null", None),
        ({"type": ["integer", "null"]}, "x", "x"),
        ({"type": ["string", "null"]}, "", ""),
        ({"type": ["string", "integer"]}, "5", "5"),
        ({"type": ["integer", "string"]}, "5", "5"),
        ({"type": ["boolean", "integer"]}, "7", 7),
        ({"type": "integer", "nullable": True}, "null", None),
        ({"type": "integer", "nullable": True}, "8", 8),
        ({"type": ["array", "null"], "items": {"type": "integer"}}, ["1"], [1]),
        ({"anyOf": [{"type": "integer"}, {"type": "boolean"}]}, "true", True),
        ({"anyOf": [{"type": "integer"}, {"type": "boolean"}]}, "3", 3),
        ({"anyOf": [{"type": "integer"}, {"type": "boolean"}]}, "x", "x"),
        ({"oneOf": [{"type": "null"}, {"type": "number"}]}, "2.5", 2.5),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "5", "5"),
        (
            {"anyOf": [{"type": "object", "properties": {"n": {"type": "integer"}}}]},
            {"n": "4"},
            {"n": 4},
        ),
        ({"allOf": [{"type": "integer"}, {"minimum": 0}]}, "3", 3),
        ({"allOf": [{"type": "string"}, {"maxLength": 3}]}, 1, "1"),
    ],
)
def test_type_lists_and_combinators_pick_a_fitting_branch(
    schema: dict[str, Any], value: Any, expected: Any
) -> None:
    result = coerce_by_schema(value, schema)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        ({"enum": [1, 2]}, "1", 1),
        ({"enum": [1, 2]}, " 2 ", 2),
        ({"enum": [1, 2]}, "3", "3"),
        ({"enum": ["1", 2]}, "1", "1"),
        ({"enum": [True, None]}, "true", True),
        ({"enum": [True, None]}, "null", None),
        ({"enum": [{"a": 1}]}, '{"a": 1}', '{"a": 1}'),
        ({"const": 7}, "7", 7),
        ({"const": "7"}, 7, 7),
    ],
)
def test_enum_and_const_members_are_matched_by_their_spelling(
    schema: dict[str, Any], value: Any, expected: Any
) -> None:
    result = coerce_by_schema(value, schema)
    assert result == expected
    assert type(result) is type(expected)


DEFS_SCHEMA = {
    "type": "object",
    "properties": {
        "point": {"$ref": "#/$defs/Point"},
        "legacy": {"$ref": "#/definitions/Count"},
        "escaped": {"$ref": "#/$defs/a~1b"},
        "remote": {"$ref": "https://example.invalid/schema.json"},
        "dangling": {"$ref": "#/$defs/Missing"},
    },
    "$defs": {
        "Point": {
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
        },
        "a/b": {"type": "boolean"},
    },
    "definitions": {"Count": {"type": "integer"}},
}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"point": {"x": "1.5", "y": "2"}}, {"point": {"x": 1.5, "y": 2}}),
        ({"legacy": "9"}, {"legacy": 9}),
        ({"escaped": "false"}, {"escaped": False}),
        ({"remote": "9"}, {"remote": "9"}),
        ({"dangling": "9"}, {"dangling": "9"}),
    ],
)
def test_local_refs_resolve_against_the_root_schema(value: Any, expected: Any) -> None:
    assert coerce_by_schema(value, DEFS_SCHEMA) == expected


def test_root_ref_coerces_a_recursive_tree() -> None:
    tree_schema = {
        "type": "object",
        "properties": {"value": {"type": "integer"}, "children": {"items": {"$ref": "#"}}},
    }
    value = {"value": "1", "children": [{"value": "2", "children": [{"value": "3"}]}]}
    expected = {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}
    assert coerce_by_schema(value, tree_schema) == expected


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}},
        {"anyOf": [{"$ref": "#"}]},
        {"allOf": [{"$ref": "#"}], "type": "integer"},
    ],
)
def test_reference_cycles_end_without_error(schema: dict[str, Any]) -> None:
    assert coerce_by_schema("5", schema) in ("5", 5)


def test_nesting_deeper_than_the_bound_is_left_unchanged() -> None:
    schema: dict[str, Any] = {"type": "integer"}
    value: Any = "1"
    for _ in range(MAX_SCHEMA_DEPTH + 5):
        schema = {"type": "array", "items": schema}
        value = [value]
    innermost = coerce_by_schema(value, schema)
    for _ in range(MAX_SCHEMA_DEPTH + 5):
        innermost = innermost[0]
    assert innermost == "1"


def test_exponential_branching_is_cut_off_by_the_visit_budget() -> None:
    # Every level tries two branches that both recurse to the root: 2**64 paths unbounded.
    schema = {"anyOf": [{"$ref": "#"}, {"$ref": "#"}], "type": "integer"}
    assert coerce_by_schema("x", schema) == "x"


def test_values_past_the_visit_budget_are_left_as_parsed() -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    coerced = coerce_by_schema(["1"] * (MAX_SCHEMA_VISITS + 10), schema)
    assert coerced[0] == 1
    assert coerced[-1] == "1"
    assert len(coerced) == MAX_SCHEMA_VISITS + 10


def test_strings_read_as_json_are_charged_to_the_budget_and_kept_whole_past_it() -> None:
    # Each branch may read the same string again: a hostile schema multiplies the reading.
    schema = {"anyOf": [{"type": "array", "items": {"type": "integer"}}] * 3}
    budget = RelaxedParseBudget()
    assert coerce_by_schema("[1, 2,]", schema, budget) == [1, 2]
    assert budget.remaining < RELAXED_PARSE_BUDGET_CHARS
    # Not read, the string is kept whole, as the one item of the list (XML's one-item list).
    assert coerce_by_schema("[1, 2,]", schema, RelaxedParseBudget(0)) == ["[1, 2,]"]


@pytest.mark.parametrize(
    "schema",
    [None, {}, {"type": "file"}, {"type": 5}, {"description": "no type"}, {"properties": []}],
)
@pytest.mark.parametrize("value", ["5", 5, None, [1, "2"], {"a": "b"}])
def test_absent_empty_or_unknown_schemas_leave_the_value_alone(
    schema: dict[str, Any] | None, value: Any
) -> None:
    assert coerce_by_schema(value, schema) == value


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        ({"items": {"type": "integer"}}, ["1"], [1]),
        ({"properties": {"n": {"type": "integer"}}}, {"n": "1"}, {"n": 1}),
        ({"items": {"type": "integer"}}, "[1]", "[1]"),
        ({"properties": {"n": {"type": "integer"}}}, "1", "1"),
    ],
)
def test_items_and_properties_apply_without_a_declared_type(
    schema: dict[str, Any], value: Any, expected: Any
) -> None:
    assert coerce_by_schema(value, schema) == expected


def test_the_input_value_is_not_mutated() -> None:
    value = {"count": "3", "list": ["1"]}
    schema = {**NUMBERED, "additionalProperties": {"items": {"type": "integer"}}}
    assert coerce_by_schema(value, schema) == {"count": 3, "list": [1]}
    assert value == {"count": "3", "list": ["1"]}


# No NaN: it is unequal to itself, which would make equality checks meaningless.
json_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=10,
)
type_names = st.sampled_from(
    ["integer", "number", "boolean", "null", "string", "array", "object", "bogus"]
)
schema_keys = st.sampled_from(
    [
        "type",
        "items",
        "prefixItems",
        "properties",
        "additionalProperties",
        "anyOf",
        "oneOf",
        "allOf",
        "nullable",
        "enum",
        "const",
        "$ref",
        "$defs",
    ]
)
refs = st.sampled_from(["#", "#/$defs/a", "#/properties/x", "#/items/0", "#/nope", "other"])
schemas = st.recursive(
    st.fixed_dictionaries({"type": type_names | st.lists(type_names, max_size=3)}) | json_values,
    lambda children: (
        st.dictionaries(schema_keys, children | refs | st.lists(children), max_size=4)
        | st.dictionaries(st.sampled_from(["a", "x"]), children, max_size=2)
    ),
    max_leaves=12,
)


@given(json_values, schemas)
def test_coerce_by_schema_never_raises(value: Any, schema: Any) -> None:
    coerce_by_schema(value, schema)


@given(json_values)
def test_an_empty_schema_leaves_any_value_unchanged(value: Any) -> None:
    assert coerce_by_schema(value, {}) == value
