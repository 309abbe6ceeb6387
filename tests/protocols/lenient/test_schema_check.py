"""A call's arguments checked against its tool's schema: what the check holds every call to,
what only a strict tool, what it never runs, and the schemas it cannot read."""

import sys
import tracemalloc
from pathlib import Path
from types import FrameType
from typing import Any

import jsonschema
import pytest

from protocols.lenient.schema_check import (
    COMPARISONS_PER_VISIT,
    MAX_CHECK_VISITS,
    MAX_PROBLEM_CHARS,
    MAX_PROBLEMS,
    CheckBudget,
    SchemaCheck,
    argument_problems,
)

# Roo Code's read_file: a list of objects, one property required, no others allowed.
READ_FILE = {
    "type": "object",
    "properties": {
        "files": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "line_ranges": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["path"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["files"],
    "additionalProperties": False,
}
WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 5},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1},
    },
    "required": ["city"],
}


@pytest.mark.parametrize(
    "arguments",
    [
        {"files": [{"path": "a.py"}, {"path": "b.py", "line_ranges": ["1-20"]}]},
        {"files": []},
    ],
)
def test_arguments_that_follow_the_schema_have_no_problem(arguments: Any) -> None:
    assert argument_problems(arguments, READ_FILE) == []


@pytest.mark.parametrize(
    ("arguments", "problems"),
    [
        ({}, ["'files' is a required property"]),
        ({"files": "a.py"}, ["files: 'a.py' is not of type 'array'"]),
        (
            {"files": [{"path": "a"}, {"line_ranges": []}]},
            ["files[1]: 'path' is a required property"],
        ),
        (
            {"files": [{"path": "a", "lines": "1-2"}]},
            ["files[0]: Additional properties are not allowed ('lines' was unexpected)"],
        ),
        (
            {"files": [{"path": 5}], "why": "x"},
            [
                "files[0].path: 5 is not of type 'string'",
                "Additional properties are not allowed ('why' was unexpected)",
            ],
        ),
    ],
)
def test_each_problem_says_where_it_is(arguments: Any, problems: list[str]) -> None:
    assert sorted(argument_problems(arguments, READ_FILE)) == sorted(problems)


def test_a_value_outside_its_enum_is_a_problem() -> None:
    assert argument_problems({"city": "Paris", "unit": "kelvin"}, WEATHER) == [
        "unit: 'kelvin' is not one of ['celsius', 'fahrenheit']"
    ]


def test_a_const_is_held_to() -> None:
    schema = {"type": "object", "properties": {"kind": {"const": "file"}}}

    assert argument_problems({"kind": "dir"}, schema) == ["kind: 'file' was expected"]


def test_other_keywords_bind_only_strict_tools() -> None:
    arguments = {"city": "Paris-on-Seine", "days": 0}

    assert argument_problems(arguments, WEATHER) == []
    assert sorted(argument_problems(arguments, WEATHER, strict=True)) == [
        "city: 'Paris-on-Seine' is too long",
        "days: 0 is less than the minimum of 1",
    ]


def test_regular_expressions_from_the_request_are_never_run() -> None:
    """`(a+)+$` against 40 a's and a `!` would backtrack for longer than the test suite runs."""
    pattern = {"type": "object", "properties": {"name": {"type": "string", "pattern": "(a+)+$"}}}
    patterned = {
        "type": "object",
        "patternProperties": {"(a+)+$": {"type": "string"}},
        "additionalProperties": False,
    }

    assert argument_problems({"name": "a" * 40 + "!"}, pattern, strict=True) == []
    assert argument_problems({"a" * 40 + "!": "x"}, patterned, strict=True) == []


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "any"}}},
        {"type": "object", "properties": {"a": {"$ref": "http://schemas.invalid/a.json"}}},
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}},
        {"type": "object", "properties": {"a": {"multipleOf": 0}}},
        {"$ref": "#"},
        {"type": "object", "required": 5},
        {"$schema": 7, "type": "object"},
        {"$id": 7, "type": "object"},
        ["not", "a", "schema"],
        {},
    ],
    ids=[
        "unknown-type",
        "remote-ref",
        "dangling-ref",
        "zero-multiple",
        "self-ref",
        "bad-required",
        "number-draft",
        "number-id",
        "list",
        "empty",
    ],
)
def test_a_schema_the_check_cannot_read_makes_no_problem(schema: Any) -> None:
    assert argument_problems({"a": 1}, schema, strict=True) == []


def test_the_draft_a_schema_names_is_the_one_checked() -> None:
    """Draft 7 writes a tuple as a list of `items` (2020-12 as `prefixItems`)."""
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"pair": {"type": "array", "items": [{"type": "string"}]}},
    }

    assert argument_problems({"pair": [5]}, schema) == ["pair[0]: 5 is not of type 'string'"]


def test_the_checks_of_one_answer_share_a_bounded_number_of_visits() -> None:
    """Two failing branches per level: checked in full, 30 levels would take 2**30 visits."""
    fan_out: dict[str, Any] = {"type": "string"}
    for _ in range(30):
        branch = {"type": "object", "properties": {"x": fan_out}}
        fan_out = {"anyOf": [branch, dict(branch)]}
    value: Any = 1
    for _ in range(30):
        value = {"x": value}
    budget = CheckBudget()

    assert argument_problems(value, fan_out, budget=budget) == []
    assert budget.left < 0
    assert argument_problems({}, WEATHER, budget=budget) == []  # the answer's visits are spent
    assert argument_problems({}, WEATHER) == ["'city' is a required property"]


JSONSCHEMA = str(Path(jsonschema.__file__).parent)


def _comparisons(arguments: Any, schema: dict[str, Any]) -> tuple[int, list[str]]:
    """The values jsonschema compared (its `equal` calls, nested ones included) while the
    check ran, and the problems it found."""
    compared = 0

    def count(frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal compared
        code = frame.f_code
        compared += (
            event == "call" and code.co_name == "equal" and code.co_filename.startswith(JSONSCHEMA)
        )

    sys.setprofile(count)
    try:
        problems = argument_problems(arguments, schema, strict=True)
    finally:
        sys.setprofile(None)
    return compared, problems


# However the schema makes the check compare, it stops within the visits' worth of them
# (an object's comparison compares its members too: a few each).
MAX_COMPARISONS = 4 * MAX_CHECK_VISITS * COMPARISONS_PER_VISIT


@pytest.mark.parametrize(
    ("arguments", "schema"),
    [
        pytest.param(
            {"tags": [f"e{19_999 - index}" for index in range(300)]},  # each near its end
            {
                "type": "object",
                "properties": {
                    "tags": {"type": "array", "items": {"enum": [f"e{i}" for i in range(20_000)]}}
                },
            },
            id="enum",
        ),
        pytest.param(
            {"files": [{"path": f"f{index}", "n": index} for index in range(2_000)]},
            {"type": "object", "properties": {"files": {"type": "array", "uniqueItems": True}}},
            id="uniqueItems",
        ),
    ],
)
def test_keywords_that_compare_are_charged_their_comparisons(
    arguments: dict[str, Any], schema: dict[str, Any]
) -> None:
    compared, problems = _comparisons(arguments, schema)

    assert compared <= MAX_COMPARISONS
    assert problems == []  # past the visits, no verdict: the call goes as written


def _errors_made(arguments: Any, schema: dict[str, Any]) -> tuple[int, list[str]]:
    """The errors jsonschema made (its ValidationError's constructions) while the check ran,
    and the problems it found."""
    made = 0

    def count(frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal made
        code = frame.f_code
        made += (
            event == "call"
            and code.co_name == "__init__"
            and code.co_filename.endswith("exceptions.py")
            and code.co_filename.startswith(JSONSCHEMA)
        )

    sys.setprofile(count)
    try:
        problems = argument_problems(arguments, schema)
    finally:
        sys.setprofile(None)
    return made, problems


@pytest.mark.parametrize(
    ("arguments", "schema"),
    [
        pytest.param(
            {},
            {"anyOf": [{"required": [f"p{i}" for i in range(50_000)]}, {"type": "string"}]},
            id="a-long-required-list",
        ),
        pytest.param(
            {},
            {"oneOf": [{"required": [f"p{i}" for i in range(50_000)]}, {"type": "string"}]},
            id="one-of",
        ),
    ],
)
def test_a_failing_branch_keeps_no_errors(arguments: Any, schema: dict[str, Any]) -> None:
    """A branch of `anyOf` or `oneOf` fails at its first error: the rest are never made, and
    none is kept (each quotes the value, and a problem names only the branches' verdict)."""
    made, problems = _errors_made(arguments, schema)

    assert made <= 1 + len(schema.get("anyOf") or schema["oneOf"])
    assert len(problems) == 1 and "is not valid under any of the given schemas" in problems[0]


def test_failing_branches_hold_no_copy_of_the_value_each() -> None:
    """Each branch's error quotes the value: kept, 200 of them held 200 copies of it."""
    value, branches = "x" * 100_000, 200
    tracemalloc.start()
    try:
        problems = argument_problems(value, {"anyOf": [{"type": "integer"}] * branches})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert len(problems) == 1
    assert peak < 10 * len(value)  # a few copies at once, not one per branch


def test_a_small_enum_and_unique_items_are_checked_as_before() -> None:
    schema = {
        "type": "object",
        "properties": {
            "unit": {"enum": ["celsius", "fahrenheit"]},
            "days": {"type": "array", "uniqueItems": True},
        },
    }
    problems = argument_problems({"unit": "kelvin", "days": [1, 2, 1]}, schema, strict=True)

    assert problems == [
        "unit: 'kelvin' is not one of ['celsius', 'fahrenheit']",
        "days: [1, 2, 1] has non-unique elements",
    ]


def test_problems_are_few_and_short() -> None:
    schema = {
        "type": "object",
        "properties": {f"p{index}": {"type": "integer"} for index in range(10)},
    }
    arguments = {f"p{index}": "x" * 10_000 for index in range(10)}

    problems = argument_problems(arguments, schema)

    assert len(problems) == MAX_PROBLEMS
    assert all(len(problem) <= MAX_PROBLEM_CHARS + len("p0: ") + 3 for problem in problems)
    assert all(problem.endswith("is not of type 'integer'") for problem in problems)


# OpenAI's strict mode: every property required, the optional ones nullable (Roo Code's
# execute_command).
STRICT_COMMAND = {
    "type": "object",
    "properties": {
        "command": {"type": "string"},
        "cwd": {"type": ["string", "null"]},
        "timeout": {"anyOf": [{"type": "number"}, {"type": "null"}]},
    },
    "required": ["command", "cwd", "timeout"],
    "additionalProperties": False,
}


def test_a_nullable_required_property_left_out_means_null() -> None:
    assert argument_problems({"command": "ls"}, STRICT_COMMAND, strict=True) == []


def test_a_required_property_that_cannot_be_null_is_still_missing() -> None:
    assert argument_problems({"cwd": None}, STRICT_COMMAND, strict=True) == [
        "'command' is a required property"
    ]


def test_a_reference_outside_the_schema_is_noted_never_read(tmp_path: Path) -> None:
    """A `file://` ref to a schema that would refuse the value: not read, the value passes."""
    on_disk = tmp_path / "refusing.json"
    on_disk.write_text('{"type": "integer"}')
    elsewhere = {"type": "object", "properties": {"a": {"$ref": on_disk.as_uri()}}}
    budget = CheckBudget()

    assert argument_problems({"a": "x"}, elsewhere, strict=True, budget=budget) == []
    assert budget.unknown_references == {on_disk.as_uri()}


def test_a_check_built_once_charges_each_answer_its_own_budget() -> None:
    """A tool's check is built at its first call and run on the rest, of any answer."""
    remote = "https://schemas.invalid/a.json"
    elsewhere = SchemaCheck({"type": "object", "properties": {"a": {"$ref": remote}}})
    weather = SchemaCheck(WEATHER)
    first, second = CheckBudget(), CheckBudget()

    assert elsewhere.problems({"a": 1}, first) == elsewhere.problems({"a": 1}, second) == []
    assert first.unknown_references == second.unknown_references == {remote}
    assert weather.problems({}, CheckBudget(left=0)) == []
    assert weather.problems({}, first) == ["'city' is a required property"]
    assert first.left < second.left < MAX_CHECK_VISITS


@pytest.mark.parametrize(
    "schema",
    [
        {"$defs": {"n": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/n"}}},
        {
            "$id": "https://tools.example/root",
            "$defs": {"n": {"$id": "https://tools.example/n", "type": "integer"}},
            "properties": {"a": {"$ref": "https://tools.example/n"}},
        },
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": {"n": {"type": "integer"}},
            "properties": {"a": {"$ref": "#/definitions/n"}},
        },
    ],
    ids=["defs", "declared-id", "draft-7-definitions"],
)
def test_references_inside_the_schema_resolve(schema: dict[str, Any]) -> None:
    budget = CheckBudget()

    assert argument_problems({"a": "x"}, schema, budget=budget) == [
        "a: 'x' is not of type 'integer'"
    ]
    assert budget.unknown_references == set()
