"""Coerce parsed tool arguments to the types a tool's JSON schema declares, since models
(XML ones above all, where everything is text) write "5" for 5 and "true" for true."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .relaxed_json import RelaxedJSONError, RelaxedParseBudget, parse_relaxed_json

# How many schema levels (nesting and `$ref` hops together) coercion follows. Real tool
# schemas are a few levels deep; the bound stops `$ref` cycles and hostile schemas from
# recursing without end, and past it values are simply left as they are.
MAX_SCHEMA_DEPTH = 64

# How many schema nodes one call may visit: about one per value node for a real schema, and
# a model's tool call holds at most a few thousand values. The cap stops the exponential
# fan-out of nested `anyOf` branches (or a branching `$ref` cycle) in a hostile schema at a
# few tens of milliseconds; values past it are left as they are.
MAX_SCHEMA_VISITS = 10_000

# Number literals as a model writes them; stricter than float() (no "nan", "inf", "1_000").
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")
_BOOLEANS = {"true": True, "false": False}
_NULLS = frozenset({"null", "None", ""})
_SCALARS = (bool, int, float)

_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}
# Keywords that a single-typed copy of a schema must not repeat, or it would apply them again.
_COMBINING_KEYWORDS = frozenset({"$ref", "allOf", "anyOf", "oneOf", "type", "nullable"})
# Keywords that may change a value that already has its schema's one type. Under none of
# them such a scalar stays as it is and such an object only has its members coerced, which
# is most arguments of most calls: the general walk (type lists, branches, refs and enums
# looked for at every value) is skipped.
_CHANGING_KEYWORDS = frozenset({"$ref", "allOf", "anyOf", "oneOf", "enum", "const"})
_SCALAR_TYPE_CHECKS = {
    name: check for name, check in _TYPE_CHECKS.items() if name not in ("array", "object")
}


def coerce_by_schema(
    value: Any, schema: Mapping[str, Any] | None, budget: RelaxedParseBudget | None = None
) -> Any:
    """`value` converted where `schema` asks for another type and the conversion is exact.

    Never raises and never drops data: a value that does not convert is returned as it was.
    Strings read as JSON (an array written as text) are charged to `budget` (a default-sized
    one of its own when none is given); past it they stay strings.
    """
    if not isinstance(schema, Mapping):
        return value
    return _coerce(
        value, schema, _CoercionRun(root=schema, budget=budget or RelaxedParseBudget()), 0
    )


@dataclass(slots=True)
class _CoercionRun:
    """One coerce_by_schema call: the schema that local `$ref`s point into, the visits it
    has left, and the budget its JSON reading is charged to."""

    root: Mapping[str, Any]
    budget: RelaxedParseBudget
    visits_left: int = MAX_SCHEMA_VISITS


def _coerce(value: Any, schema: Any, run: _CoercionRun, depth: int) -> Any:
    if not isinstance(schema, Mapping) or depth > MAX_SCHEMA_DEPTH or run.visits_left <= 0:
        return value
    run.visits_left -= 1
    declared = schema.get("type")
    if isinstance(declared, str) and _CHANGING_KEYWORDS.isdisjoint(schema):
        if declared == "object" and type(value) is dict:
            return _members(value, schema, run, depth + 1)
        check = _SCALAR_TYPE_CHECKS.get(declared)
        if check is not None and check(value):
            return value
    deeper = depth + 1
    # `$ref` and `allOf` members each constrain the value, so each is applied in turn.
    for part in (_resolve_ref(schema, run.root), *_schema_list(schema, "allOf")):
        value = _coerce(value, part, run, deeper)
    branches = _schema_list(schema, "anyOf") or _schema_list(schema, "oneOf")
    if branches:
        value = _coerce_to_branch(value, branches, run, deeper)
    # `items` and `properties` apply to a list or dict even when the schema names no type.
    types = declared_types(schema) or _structural_type(value)
    if len(types) == 1:
        value = _coerce_to_type(value, types[0], schema, run, deeper)
    elif types:
        # Several types are alternatives: one single-typed copy of the schema per type.
        plain = {key: rule for key, rule in schema.items() if key not in _COMBINING_KEYWORDS}
        typed_branches = [{**plain, "type": name} for name in types]
        value = _coerce_to_branch(value, typed_branches, run, deeper)
    return _match_enum(value, schema)


def _coerce_to_branch(value: Any, branches: list[Any], run: _CoercionRun, depth: int) -> Any:
    """Coerced by the first branch the value already fits, else by the first it can be made
    to fit, else unchanged; so a valid value is never reinterpreted ("5" for string|integer
    stays a string)."""
    for branch in branches:
        if _fits(value, branch, run, depth):
            return _coerce(value, branch, run, depth)
    for branch in branches:
        coerced = _coerce(value, branch, run, depth)
        if _fits(coerced, branch, run, depth):
            return coerced
    return value


def _fits(value: Any, schema: Any, run: _CoercionRun, depth: int) -> bool:
    """Whether `value` has one of the types `schema` declares (a schema with none fits all)."""
    if not isinstance(schema, Mapping) or depth > MAX_SCHEMA_DEPTH:
        return True
    target = _resolve_ref(schema, run.root)
    if target is not None and not _fits(value, target, run, depth + 1):
        return False
    types = declared_types(schema)
    return not types or any(_is_type(value, name) for name in types)


def _is_type(value: Any, name: str) -> bool:
    check = _TYPE_CHECKS.get(name)
    return check is None or check(value)


def declared_types(schema: Mapping[str, Any]) -> list[str]:
    """The types a schema names (`type` as a string or list, OpenAPI's `nullable`)."""
    declared = schema.get("type")
    names = [declared] if isinstance(declared, str) else declared
    types = [name for name in names if isinstance(name, str)] if isinstance(names, list) else []
    if types and schema.get("nullable") is True and "null" not in types:
        types.append("null")  # OpenAPI 3.0's way to say ["<type>", "null"]
    return types


def declared_properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """An object schema's `properties`, or none when it declares none (or not as a mapping)."""
    properties = schema.get("properties")
    return properties if isinstance(properties, Mapping) else {}


def is_string_schema(schema: Mapping[str, Any]) -> bool:
    """`"string"`, `["string", "null"]`, or an anyOf/oneOf whose only non-null type is string:
    a value that is text, which the XML protocols keep raw and may stream as it arrives."""
    types = set(declared_types(schema))
    branches = schema.get("anyOf", schema.get("oneOf"))
    if not types and isinstance(branches, list) and branches:
        for branch in branches:
            branch_types = declared_types(branch) if isinstance(branch, Mapping) else []
            if not branch_types:  # an untyped branch may be anything
                return False
            types.update(branch_types)
    return types - {"null"} == {"string"}


def _structural_type(value: Any) -> list[str]:
    if isinstance(value, list):
        return ["array"]
    return ["object"] if isinstance(value, dict) else []


def _schema_list(schema: Mapping[str, Any], keyword: str) -> list[Any]:
    members = schema.get(keyword)
    return members if isinstance(members, list) else []


def _resolve_ref(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    """The schema a local `$ref` ("#", "#/$defs/Name", any JSON pointer) names, or None."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None  # remote references are never fetched
    target: Any = root
    for token in filter(None, ref[1:].split("/")):
        key = token.replace("~1", "/").replace("~0", "~")
        if isinstance(target, Mapping):
            target = target.get(key)
        elif isinstance(target, list) and key.isdigit() and int(key) < len(target):
            target = target[int(key)]
        else:
            return None
    return target


def _coerce_to_type(
    value: Any, name: str, schema: Mapping[str, Any], run: _CoercionRun, depth: int
) -> Any:
    if name == "array":
        return _to_array(value, schema, run, depth)
    if name == "object":
        return _to_object(value, schema, run, depth)
    scalar = _SCALAR_COERCIONS.get(name)
    return value if scalar is None else scalar(value)


def _parse_number(text: str) -> int | float | None:
    text = text.strip()
    if _INTEGER.fullmatch(text):
        try:
            return int(text)
        except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
            return None
    if _NUMBER.fullmatch(text):
        number = float(text)
        return number if math.isfinite(number) else None
    return None


def _to_integer(value: Any) -> Any:
    number = _parse_number(value) if isinstance(value, str) else value
    if isinstance(number, float) and number.is_integer():
        return int(number)
    if isinstance(number, int) and not isinstance(number, bool):
        return number
    return value


def _to_number(value: Any) -> Any:
    if isinstance(value, str):
        number = _parse_number(value)
        return value if number is None else number
    return value


def _to_boolean(value: Any) -> Any:
    # Only the words: "1"/"0" or "yes"/"no" could be meant as text, so they stay for the
    # tool to reject, which tells the model what to fix.
    if isinstance(value, str):
        return _BOOLEANS.get(value.strip().lower(), value)
    return value


def _to_null(value: Any) -> Any:
    if isinstance(value, str) and value.strip() in _NULLS:
        return None
    return value


def _to_string(value: Any) -> Any:
    # Scalars as JSON writes them (True -> "true"); containers and null carry structure
    # that a string would lose, so they stay.
    if isinstance(value, _SCALARS):
        return json.dumps(value)
    return value


_SCALAR_COERCIONS: dict[str, Callable[[Any], Any]] = {
    "integer": _to_integer,
    "number": _to_number,
    "boolean": _to_boolean,
    "null": _to_null,
    "string": _to_string,
}


def _parse_container(value: str, container: type, budget: RelaxedParseBudget) -> Any:
    """The list or dict that `value` spells in relaxed JSON, or None."""
    opener = "[" if container is list else "{"
    if not value.lstrip().startswith(opener):
        return None
    try:
        budget.spend_reread(len(value))  # the string was read once, as a string
        parsed = parse_relaxed_json(value, budget=budget)
    except RelaxedJSONError:
        return None
    return parsed if isinstance(parsed, container) else None


def _to_array(value: Any, schema: Mapping[str, Any], run: _CoercionRun, depth: int) -> Any:
    if value is None:
        return value  # [null] would invent an element
    if value == "":
        return []  # an empty XML element: the list has no items
    if isinstance(value, str):
        parsed = _parse_container(value, list, run.budget)
        value = [value] if parsed is None else parsed
    elif not isinstance(value, list):
        value = [value]  # XML writes a one-element list as a single tag
    items = schema.get("items")
    prefix = _schema_list(schema, "prefixItems") or (items if isinstance(items, list) else [])
    rest = items if isinstance(items, Mapping) else None
    return [
        _coerce(item, prefix[index] if index < len(prefix) else rest, run, depth)
        for index, item in enumerate(value)
    ]


def _to_object(value: Any, schema: Mapping[str, Any], run: _CoercionRun, depth: int) -> Any:
    if value == "":
        return {}  # an empty XML element: the object has no properties
    if isinstance(value, str):
        parsed = _parse_container(value, dict, run.budget)
        value = value if parsed is None else parsed
    if not isinstance(value, dict):
        return value
    return _members(value, schema, run, depth)


def _members(
    value: dict[str, Any], schema: Mapping[str, Any], run: _CoercionRun, depth: int
) -> dict[str, Any]:
    """Each member coerced by its property's schema, else by `additionalProperties`."""
    properties = declared_properties(schema)
    additional = schema.get("additionalProperties")
    return {
        key: _coerce(item, properties.get(key, additional), run, depth)
        for key, item in value.items()
    }


def _match_enum(value: Any, schema: Mapping[str, Any]) -> Any:
    """A string that spells a non-string enum or const member ("1" for 1), as that member."""
    options = _schema_list(schema, "enum") or ([schema["const"]] if "const" in schema else [])
    if not isinstance(value, str) or value in options:
        return value
    spelled = value.strip()
    scalars = (option for option in options if option is None or isinstance(option, _SCALARS))
    return next((option for option in scalars if json.dumps(option) == spelled), value)
