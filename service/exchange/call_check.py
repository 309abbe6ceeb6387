"""Every parsed call held to its tool's schema (protocols/lenient/schema_check.py), after the
parser's coercions. A call that fails is, where it has not gone out yet (a whole answer, a
forced call), asked for again with what is wrong with it (`repair.py`); a streamed call has
gone out by the time it ends, and is sent as written. Either way each failed call is
recorded, as repaired or as sent."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from protocols import CheckBudget, Part, SchemaCheck, StreamParser, ToolCall, ToolSpec

from ..observability import CompletionObserver

logger = logging.getLogger(__name__)

Invalid = tuple[str, str]  # a failed call's tool name, and what is wrong with its arguments

# A correction names each tool's parameters once, however many of its calls failed, and the
# first calls that failed, with how many more did: the model writes the whole reply again.
# A 21 KB reply of 500 bad calls to a tool of 20,000 parameters was asked again in a 77 MB
# request (each call named every parameter). Past MAX_CORRECTION_CHARS in all (parameter
# names are the client's, of any length) the reply is not asked for again; it stands.
MAX_NAMED_CALLS = 8
MAX_CORRECTION_CHARS = 32_768


class CallCheck:
    """The schemas of one request's tools, and which are `strict` (held to every keyword).

    >>> check = CallCheck(chat.tools, chat.strict_tools)
    >>> check.problem("get_weather", {}, CheckBudget())
    "'city' is a required property"
    """

    def __init__(self, tools: Sequence[ToolSpec], strict: Iterable[str] = ()) -> None:
        self._schemas = {
            tool.name: tool.parameters for tool in tools if tool.parameters and not tool.free_form
        }
        self._strict = frozenset(strict)
        # Each tool's check, built at its first call: a request may declare tools by the
        # dozen and call none of them.
        self._checks: dict[str, SchemaCheck] = {}
        self._unknown_references_logged: set[str] = set()

    def problem(self, name: str, arguments: Any, budget: CheckBudget) -> str | None:
        """What is wrong with a call's arguments, or None (an undeclared or free-form tool's
        are not checked)."""
        schema = self._schemas.get(name)
        if schema is None:
            return None
        strict = name in self._strict
        check = self._checks.get(name)
        if check is None:
            check = self._checks[name] = SchemaCheck(schema, strict=strict)
        references_before = len(budget.unknown_references)
        problems = check.problems(arguments, budget)
        refers_out = len(budget.unknown_references) > references_before
        if refers_out and name not in self._unknown_references_logged:
            # The addresses are the client's, not shown: where a schema points is its business.
            self._unknown_references_logged.add(name)
            logger.info(
                "the schema of tool %r refers outside the request (%d reference(s), never"
                " fetched): its calls are not checked there",
                name,
                len(budget.unknown_references) - references_before,
            )
        open_schema = not strict and schema.get("additionalProperties") is not False
        if problems and open_schema and isinstance(arguments, dict):
            # A misnamed argument is named, where the schema itself lets it be: told only that
            # "'path' is a required property", Qwen2.5-Coder 1.5B wrote its `file_path` again.
            unknown = [repr(key) for key in arguments if key not in _properties(schema)]
            if unknown:
                problems.append(f"{name} has no parameter {', '.join(unknown)}")
        return "; ".join(problems) or None

    def correction(self, invalid: Sequence[Invalid]) -> str | None:
        """What the model is told of a reply whose calls do not follow their schemas: which,
        why, each tool's parameters, and to write the reply again (its tools and their format
        are in the system prompt it still has); None when that would pass
        MAX_CORRECTION_CHARS. Worded as an error to fix, with the names the tool takes: told
        that its calls "do not follow their tools' schemas", Qwen2.5-Coder 1.5B answered "I'm
        sorry, but I can't assist with that" to 15 of 16 spoiled json-mix calls
        (docs/protocols.md has the measurement)."""
        if len(invalid) == 1:
            [(name, problem)] = invalid
            said = (
                f"Error: the call to {name} is not valid: {problem}{self._parameters(name)}."
                " Write the reply again with the call corrected."
            )
        else:
            named: set[str] = set()
            calls = []
            for name, problem in invalid[:MAX_NAMED_CALLS]:
                parameters = "" if name in named else self._parameters(name)
                named.add(name)
                calls.append(f"{name}: {problem}{parameters}")
            more = len(invalid) - MAX_NAMED_CALLS
            more_said = f" (and {more} more calls)" if more > 0 else ""
            said = (
                f"Error: these calls are not valid: {'; '.join(calls)}{more_said}."
                " Write the reply again with the calls corrected."
            )
        return said if len(said) <= MAX_CORRECTION_CHARS else None

    def invalid(
        self, parts: Iterable[Part], budget: CheckBudget, *, single_call: bool
    ) -> list[Invalid]:
        """The failed calls among `parts`; with `single_call`, only the first call is sent,
        and only it is checked."""
        calls = [part for part in parts if isinstance(part, ToolCall)]
        failed = []
        for call in calls[:1] if single_call else calls:
            problem = self.problem(call.name, call.input, budget)
            if problem is not None:
                failed.append((call.name, problem))
        return failed

    def _parameters(self, name: str) -> str:
        declared = _properties(self._schemas[name])
        return f" (its parameters: {', '.join(declared)})" if declared else ""


def _properties(schema: Any) -> list[str]:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return list(properties) if isinstance(properties, dict) else []


class CheckedParser(StreamParser):
    """A stream's parser whose calls are checked as they end, each failure recorded: a call
    that streams has gone out by then, so it is sent as written."""

    def __init__(
        self,
        parser: StreamParser,
        check: CallCheck,
        observer: CompletionObserver,
        *,
        single_call: bool,
    ) -> None:
        self._parser = parser
        self._check = check
        self._observer = observer
        self._single_call = single_call
        self._budget = CheckBudget()
        self._checked_one = False

    def feed(self, text: str) -> list[Part]:
        return self._checked(self._parser.feed(text))

    def finish(self) -> list[Part]:
        return self._checked(self._parser.finish())

    @property
    def ended(self) -> bool:
        return self._parser.ended

    def _checked(self, parts: list[Part]) -> list[Part]:
        for part in parts:
            if not isinstance(part, ToolCall) or (self._single_call and self._checked_one):
                continue
            self._checked_one = True
            problem = self._check.problem(part.name, part.input, self._budget)
            if problem is not None:
                self._observer.invalid_call(part.name, problem, repaired=False)
        return parts
