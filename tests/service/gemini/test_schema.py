"""Gemini's OpenAPI-subset `Schema` as JSON Schema: types lower-cased, `nullable` as a null
type, counts sent as strings read as numbers, properties in their declared order, nesting
bounded."""

from __future__ import annotations

from typing import Any

import pytest

from service.gemini.schema import MAX_SCHEMA_DEPTH, json_schema
from service.wire import ProxyError


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "STRING"}, {"type": "string"}),
        ({"type": "integer", "format": "int64"}, {"type": "integer", "format": "int64"}),
        ({"type": "TYPE_UNSPECIFIED", "description": "any"}, {"description": "any"}),
        ({"type": "STRING", "nullable": True}, {"type": ["string", "null"]}),
        (
            {"type": "STRING", "format": "enum", "enum": ["c", "f"], "nullable": True},
            {"type": ["string", "null"], "enum": ["c", "f", None]},
        ),
        (
            {"anyOf": [{"type": "STRING"}, {"type": "NUMBER"}], "nullable": True},
            {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "null"}]},
        ),
        (
            {"type": "ARRAY", "items": {"type": "NUMBER"}, "minItems": "1", "max_items": 3},
            {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "number"}},
        ),
        (
            {"type": "STRING", "example": "Paris", "pattern": "^[A-Z]", "title": "City"},
            {"type": "string", "title": "City", "pattern": "^[A-Z]", "examples": ["Paris"]},
        ),
        (
            {"type": "OBJECT", "additionalProperties": {"type": "BOOLEAN"}},
            {"type": "object", "additionalProperties": {"type": "boolean"}},
        ),
        (
            {"defs": {"Point": {"type": "OBJECT"}}, "ref": "#/defs/Point"},
            {"$defs": {"Point": {"type": "object"}}, "$ref": "#/$defs/Point"},
        ),
        ({"type": "NUMBER", "unknownField": 1, "minimum": 0}, {"type": "number", "minimum": 0}),
    ],
)
def test_an_openapi_schema_becomes_json_schema(schema: dict[str, Any], expected: Any) -> None:
    assert json_schema(schema, "parameters") == expected


def test_properties_come_in_their_declared_order_and_keep_their_own_names() -> None:
    schema = {
        "type": "OBJECT",
        "properties": {"unit": {"type": "STRING"}, "max_items": {"type": "INTEGER"}},
        "property_ordering": ["max_items", "unit"],
    }

    converted = json_schema(schema, "parameters")

    assert list(converted["properties"]) == ["max_items", "unit"]
    assert converted["properties"]["max_items"] == {"type": "integer"}


@pytest.mark.parametrize(
    ("schema", "param"),
    [
        ("OBJECT", "parameters"),
        ({"type": "TUPLE"}, "parameters.type"),
        ({"type": "OBJECT", "properties": {"a": {"type": 3}}}, "parameters.properties.a.type"),
        ({"type": "ARRAY", "maxItems": "many"}, "parameters.maxItems"),
        ({"anyOf": {"type": "STRING"}}, "parameters.anyOf"),
        ({"type": "OBJECT", "properties": []}, "parameters.properties"),
    ],
)
def test_a_malformed_schema_is_a_400_naming_the_field(schema: Any, param: str) -> None:
    with pytest.raises(ProxyError) as caught:
        json_schema(schema, "parameters")

    assert caught.value.status == 400 and caught.value.param == param


def test_a_schema_nested_past_the_bound_is_a_400_not_a_recursion_error() -> None:
    schema: dict[str, Any] = {"type": "STRING"}
    for _ in range(MAX_SCHEMA_DEPTH + 1):
        schema = {"type": "ARRAY", "items": schema}

    with pytest.raises(ProxyError) as caught:
        json_schema(schema, "parameters")

    assert "nest" in caught.value.message
    assert json_schema(schema["items"], "parameters")["type"] == "array"
