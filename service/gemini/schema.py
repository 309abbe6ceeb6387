"""Gemini's `Schema` (the OpenAPI 3.0 subset of a declaration's `parameters` and of
`responseSchema`) as the JSON Schema the protocols render: upper-case types lower-cased,
`nullable` as a `null` type, counts sent as strings (proto3 writes 64-bit integers so) read
as numbers, properties in their `propertyOrdering`. Fields it does not know are left out."""

from __future__ import annotations

from typing import Any

from ..exchange import invalid
from .fields import field

TYPES = {
    "STRING": "string",
    "NUMBER": "number",
    "INTEGER": "integer",
    "BOOLEAN": "boolean",
    "ARRAY": "array",
    "OBJECT": "object",
    "NULL": "null",
}
UNSPECIFIED_TYPE = "TYPE_UNSPECIFIED"
# Kept under the same name (or its snake_case spelling).
KEPT_FIELDS = (
    "title",
    "description",
    "enum",
    "pattern",
    "minimum",
    "maximum",
    "default",
    "required",
)
# int64 in Google's protos, which proto3's JSON writes as strings.
COUNT_FIELDS = ("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties")
# `format: "enum"` marks a string enum, which `enum` already says.
ENUM_FORMAT = "enum"
# Tool parameters are a few levels deep; a schema nested past this is refused before the
# converter's recursion could reach Python's limit.
MAX_SCHEMA_DEPTH = 64
DEFS_REF_PREFIX, JSON_DEFS_REF_PREFIX = "#/defs/", "#/$defs/"


def json_schema(schema: Any, param: str, depth: int = 0) -> dict[str, Any]:
    """`schema` as JSON Schema; anything malformed is a 400 naming `param`.

    >>> json_schema({"type": "STRING", "nullable": True}, "parameters")
    {'type': ['string', 'null']}
    """
    if not isinstance(schema, dict):
        raise invalid("a schema must be an object", param)
    if depth > MAX_SCHEMA_DEPTH:
        raise invalid(f"a schema may nest {MAX_SCHEMA_DEPTH} levels deep at most", param)
    converted: dict[str, Any] = {}
    if (kind := _type(field(schema, "type"), f"{param}.type")) is not None:
        converted["type"] = kind
    for name in KEPT_FIELDS:
        if (value := field(schema, name)) is not None:
            converted[name] = value
    if (fmt := field(schema, "format")) not in (None, ENUM_FORMAT):
        converted["format"] = fmt
    if (example := field(schema, "example")) is not None:
        converted["examples"] = [example]
    for name in COUNT_FIELDS:
        if (value := field(schema, name)) is not None:
            converted[name] = _count(value, f"{param}.{name}")
    _add_subschemas(converted, schema, param, depth + 1)
    if field(schema, "nullable") is True:
        _allow_null(converted)
    return converted


def _type(kind: Any, param: str) -> str | None:
    if kind is None:
        return None
    named = kind.upper() if isinstance(kind, str) else None
    if named == UNSPECIFIED_TYPE:
        return None
    if named not in TYPES:
        raise invalid(f"type must be one of {', '.join(TYPES)}", param)
    return TYPES[named]


def _count(value: Any, param: str) -> int:
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if type(value) is not int:
        raise invalid("must be a non-negative integer", param)
    return value


def _add_subschemas(
    converted: dict[str, Any], schema: dict[str, Any], param: str, depth: int
) -> None:
    """`properties` (in `propertyOrdering` where given), `items`, `anyOf`,
    `additionalProperties`, `defs` and `ref`, converted."""
    properties = field(schema, "properties")
    if properties is not None:
        if not isinstance(properties, dict):
            raise invalid("properties must be an object", f"{param}.properties")
        ordering = field(schema, "propertyOrdering")
        names = _ordered(list(properties), ordering if isinstance(ordering, list) else [])
        converted["properties"] = {
            name: json_schema(properties[name], f"{param}.properties.{name}", depth)
            for name in names
        }
    if (items := field(schema, "items")) is not None:
        converted["items"] = json_schema(items, f"{param}.items", depth)
    if (any_of := field(schema, "anyOf")) is not None:
        if not isinstance(any_of, list):
            raise invalid("anyOf must be an array of schemas", f"{param}.anyOf")
        converted["anyOf"] = [
            json_schema(option, f"{param}.anyOf[{index}]", depth)
            for index, option in enumerate(any_of)
        ]
    additional = field(schema, "additionalProperties")
    if isinstance(additional, bool):
        converted["additionalProperties"] = additional
    elif additional is not None:
        converted["additionalProperties"] = json_schema(
            additional, f"{param}.additionalProperties", depth
        )
    defs = schema.get("$defs", field(schema, "defs"))
    if isinstance(defs, dict):
        converted["$defs"] = {
            name: json_schema(definition, f"{param}.defs.{name}", depth)
            for name, definition in defs.items()
        }
    ref = schema.get("$ref", field(schema, "ref"))
    if isinstance(ref, str):
        if ref.startswith(DEFS_REF_PREFIX):
            ref = JSON_DEFS_REF_PREFIX + ref.removeprefix(DEFS_REF_PREFIX)
        converted["$ref"] = ref


def _ordered(names: list[str], ordering: list[Any]) -> list[str]:
    """The property names in `ordering`'s order, any it leaves out after them as given
    (looked up in sets: 20,000 names in lists cost 3.7 s)."""
    known = set(names)
    first = [name for name in ordering if isinstance(name, str) and name in known]
    placed = set(first)
    return first + [name for name in names if name not in placed]


def _allow_null(converted: dict[str, Any]) -> None:
    """`nullable: true`: null is one more value the schema takes."""
    if "anyOf" in converted:
        converted["anyOf"].append({"type": "null"})
    elif isinstance(kind := converted.get("type"), str) and kind != "null":
        converted["type"] = [kind, "null"]
    if isinstance(converted.get("enum"), list) and None not in converted["enum"]:
        converted["enum"] = [*converted["enum"], None]
