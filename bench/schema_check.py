"""What checking a call against its tool's schema costs: µs per call for the tool schemas of
bench/real_model_calls.py and the Anthropic-defined client tools, with arguments that pass
(each schema's example) and arguments that fail (a required property missing, an unknown
one added), checked as a tool is (the core keywords) and as a strict tool is (every keyword),
by a check built once (as a request's first call of a tool builds it); building the check;
and the longest a hostile schema (nested `anyOf`s failing on every branch) holds one answer.

    python bench/schema_check.py [--rounds N]

Times are this thread's CPU time, the median of the rounds.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from real_model_calls import TOOLS

from protocols import CheckBudget, SchemaCheck, argument_problems
from protocols.formats.prompting import example_arguments
from service.messages.tools import CLIENT_TOOLS

CALLS_PER_ROUND = 200
HOSTILE_LEVELS = 40


def schemas() -> dict[str, dict[str, Any]]:
    found = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
    found.update({name: schema for name, (_about, schema) in CLIENT_TOOLS.items()})
    return found


def failing(arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments with their first property left out and an unknown one added."""
    return {**dict(list(arguments.items())[1:]), "unexpected_property": 1}


def cpu_us(check: Callable[[], object], rounds: int) -> float:
    """Median CPU µs of one `check()` over `rounds` rounds of CALLS_PER_ROUND calls."""
    times = []
    for _ in range(rounds):
        started = time.thread_time()
        for _ in range(CALLS_PER_ROUND):
            check()
        times.append((time.thread_time() - started) / CALLS_PER_ROUND * 1e6)
    return statistics.median(times)


def hostile() -> tuple[dict[str, Any], Any]:
    schema: dict[str, Any] = {"type": "string"}
    value: Any = 1
    for _ in range(HOSTILE_LEVELS):
        branch = {"type": "object", "properties": {"x": schema}}
        schema, value = {"anyOf": [branch, dict(branch)]}, {"x": value}
    return schema, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    rounds = parser.parse_args().rounds
    rows = []
    for name, schema in schemas().items():
        good = example_arguments(schema)
        bad = failing(good)
        check, strict = SchemaCheck(schema), SchemaCheck(schema, strict=True)
        assert strict.problems(good) == [], name
        rows.append(
            (
                name,
                cpu_us(partial(check.problems, good), rounds),
                cpu_us(partial(check.problems, bad), rounds),
                cpu_us(partial(strict.problems, good), rounds),
                cpu_us(partial(SchemaCheck, schema), rounds),
            )
        )
    print(f"{'tool':28} {'passes µs':>10} {'fails µs':>10} {'strict µs':>10} {'build µs':>10}")
    for name, *figures in rows:
        print(f"{name:28} " + " ".join(f"{figure:10.1f}" for figure in figures))
    means = [statistics.mean(row[index] for row in rows) for index in (1, 2, 3, 4)]
    print(f"{'mean':28} " + " ".join(f"{figure:10.1f}" for figure in means))
    schema, value = hostile()
    started = time.thread_time()
    argument_problems(value, schema, budget=CheckBudget())
    stalled = (time.thread_time() - started) * 1e3
    print(f"hostile schema ({HOSTILE_LEVELS} nested anyOf levels), one answer: {stalled:.0f} ms")


if __name__ == "__main__":
    main()
