"""Decoding a Gemini body costs what its length does: pairing results with calls, ordering
properties, the allowed functions and the check for a name declared twice each look a name
up once, so twice the names is twice the work, not four times.

Work is counted, not timed: the names are a str whose comparisons and hashes count
themselves, and the decoder's functions are handed them as a decoded body holds them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from service.gemini.contents import chat_messages
from service.gemini.schema import json_schema
from service.gemini.tools import gemini_tools
from service.settings import HostedTools

NAMES = 2_000
# Twice the names may cost a little over twice the work (dicts grow); the square is four.
MAX_WORK_RATIO = 2.5


class CountedName(str):
    """A name that counts the times it is compared or hashed: a lookup's visits."""

    visits = 0

    def __eq__(self, other: object) -> bool:
        CountedName.visits += 1
        return str.__eq__(self, other)

    def __hash__(self) -> int:
        CountedName.visits += 1
        return str.__hash__(self)


def names(count: int, prefix: str = "f") -> list[CountedName]:
    return [CountedName(f"{prefix}{index}") for index in range(count)]


def unpaired_results(count: int) -> None:
    """A history of `count` calls, then `count` results without ids that pair with none."""
    calls = [{"functionCall": {"name": name, "args": {}}} for name in names(count, "call")]
    results = [
        {"functionResponse": {"name": name, "response": {}}} for name in names(count, "result")
    ]
    chat_messages([{"role": "model", "parts": calls}, {"role": "user", "parts": results}])


def results_in_order(count: int) -> None:
    """`count` calls of one name, answered in order by results without ids."""
    name = CountedName("f")
    calls = [{"functionCall": {"name": name, "args": {}}} for _ in range(count)]
    results = [{"functionResponse": {"name": name, "response": {}}} for _ in range(count)]
    chat_messages([{"role": "model", "parts": calls}, {"role": "user", "parts": results}])


def property_ordering(count: int) -> None:
    properties = names(count)
    json_schema(
        {
            "type": "OBJECT",
            "properties": {name: {"type": "STRING"} for name in properties},
            "propertyOrdering": list(reversed(properties)),
        },
        "parameters",
    )


def declarations(count: int) -> list[dict[str, Any]]:
    return [{"functionDeclarations": [{"name": name} for name in names(count)]}]


def allowed_functions(count: int) -> None:
    config = {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": names(count)}}
    gemini_tools(declarations(count), config, HostedTools.DROP)


def declared_once(count: int) -> None:
    gemini_tools(declarations(count), None, HostedTools.DROP)


def work(decode: Callable[[int], None], count: int) -> int:
    CountedName.visits = 0
    decode(count)
    return CountedName.visits


@pytest.mark.parametrize(
    "decode",
    [unpaired_results, results_in_order, property_ordering, allowed_functions, declared_once],
)
def test_twice_the_names_is_twice_the_work(decode: Callable[[int], None]) -> None:
    assert work(decode, 2 * NAMES) <= MAX_WORK_RATIO * work(decode, NAMES)
