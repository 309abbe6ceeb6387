"""The parts a stream parser hands out (text, reasoning markers and tool calls), the errors
it records, and the tools it is given: the vocabulary every module speaks.

Accounting rule (the "nothing lost" contract): concatenating every `TextDelta.text`,
every `ThinkStart.tag`/`ThinkEnd.tag`, and the `original` of every `ToolCall` and
`ToolCallUnfinished` reproduces the model's output, less layout: whitespace-only text that
lies between the start of the output or a call and a call or the end of the output, and
there the empty shell calls were wrapped in (a code fence's lines, a wrapper tag and its
closing; see `streaming/call_shell.py`), and a code fence holding only calls wherever it
stands (`streaming/call_hold.py`); and a result the model invented for its own call, right
after it, which only its error record keeps (`streaming/invented_result.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


@dataclass(frozen=True, slots=True)
class TextStart:
    id: str


# The parts made for every delta of prose or arguments are not frozen (a frozen dataclass's
# __init__ costs an `object.__setattr__` call per field); nothing assigns to a part.
@dataclass(slots=True)
class TextDelta:
    id: str
    text: str


@dataclass(frozen=True, slots=True)
class TextEnd:
    id: str


@dataclass(frozen=True, slots=True)
class ThinkStart:
    """A `<think>` block opens; `tag` is its literal text. Calls are never parsed inside."""

    tag: str


@dataclass(frozen=True, slots=True)
class ThinkEnd:
    """The think block closes; `tag` is "" when the output ended inside it."""

    tag: str


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    """Incremental mode: a call's id and name are known; argument fragments follow."""

    id: str
    name: str


@dataclass(slots=True)
class ToolCallDelta:
    """Incremental mode: the next fragment of a call's JSON `arguments` string."""

    id: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A complete call. In incremental mode it follows the call's start and fragments,
    whose concatenation equals `arguments` exactly."""

    id: str
    name: str
    arguments: str
    input: Any
    original: str


@dataclass(frozen=True, slots=True)
class ToolCallUnfinished:
    """Incremental mode: a call whose start was already sent did not end as a valid call
    (the output ended inside it, or its body turned out invalid). It must not be treated as
    complete: the fragments sent do not parse, and the error record says why."""

    id: str
    name: str
    original: str


class ErrorKind(StrEnum):
    MALFORMED_JSON = "malformed_json"
    MALFORMED_XML = "malformed_xml"
    DUPLICATE_STRING_TAG = "duplicate_string_tag"
    UNFINISHED_CALL = "unfinished_call"
    UNKNOWN_TOOL = "unknown_tool"
    ARGUMENTS_MISMATCH = "arguments_mismatch"
    TOOL_CHOICE_FALLBACK = "tool_choice_fallback"  # a forced call made with {} arguments
    TOOL_CHOICE_UNMET = "tool_choice_unmet"  # a forced choice answered with text, no call
    TOOL_NAME_SPELLING = "tool_name_spelling"  # a call made under the name its written one spells
    PARSE_BUDGET = "parse_budget"  # the response's parse budget is spent: the rest is text
    INVENTED_RESULT = "invented_result"  # a result written for its own call: dropped
    HOLD_LIMIT = "hold_limit"  # held past the read-ahead's bound, undecided: it is text


@dataclass(frozen=True, slots=True)
class ParseError:
    """Model output that could not become a call as-is. Its text was emitted unchanged: as
    text, or (for a call already streamed) as the original of a ToolCallUnfinished; only a
    TOOL_CHOICE_FALLBACK's text became a call anyway (to the named tool, with {}), a
    TOOL_NAME_SPELLING's call was made under the declared name its written name spells, and
    an INVENTED_RESULT's text (a result the model wrote for its own call) was dropped: the
    record's original is the only place it is kept."""

    kind: ErrorKind
    message: str
    original: str


Part = (
    TextStart
    | TextDelta
    | TextEnd
    | ThinkStart
    | ThinkEnd
    | ToolCallStart
    | ToolCallDelta
    | ToolCall
    | ToolCallUnfinished
)

OnError = Callable[[ParseError], None]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One declared tool, as the client sent it (OpenAI `tools[].function`)."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    # Takes one raw text, not JSON arguments (an OpenAI `custom` tool; see formats/free_form.py).
    free_form: bool = False

    @classmethod
    def from_openai(cls, tool: dict[str, Any]) -> ToolSpec:
        function = tool.get("function", tool)
        return cls(
            name=str(function["name"]),
            description=str(function.get("description") or ""),
            parameters=dict(function.get("parameters") or {}),
        )
