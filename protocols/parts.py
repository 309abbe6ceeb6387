"""The parts a stream parser hands out (text, reasoning markers and tool calls), and the
writer that collects them for one feed.

Accounting rule (the "nothing lost" contract): concatenating every `TextDelta.text`,
every `ThinkStart.tag`/`ThinkEnd.tag`, and the `original` of every `ToolCall` and
`ToolCallUnfinished` reproduces the model's output, less layout: whitespace-only text that
lies between the start of the output or a call and a call or the end of the output, and
there the empty shell calls were wrapped in (a code fence's lines, a wrapper tag and its
closing; see call_shell).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .streaming.call_shell import CallShell


@dataclass(frozen=True, slots=True)
class TextStart:
    id: str


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class ParseError:
    """Model output that could not become a call as-is. Its text was emitted unchanged: as
    text, or (for a call already streamed) as the original of a ToolCallUnfinished; only a
    TOOL_CHOICE_FALLBACK's text became a call anyway (to the named tool, with {}), and a
    TOOL_NAME_SPELLING's call was made under the declared name its written name spells."""

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
    # Takes one raw text, not JSON arguments (an OpenAI `custom` tool; see free_form.py).
    free_form: bool = False

    @classmethod
    def from_openai(cls, tool: dict[str, Any]) -> ToolSpec:
        function = tool.get("function", tool)
        return cls(
            name=str(function["name"]),
            description=str(function.get("description") or ""),
            parameters=dict(function.get("parameters") or {}),
        )


class PartWriter:
    """Collects parts for one feed, grouping contiguous text into one text block.

    Whitespace-only text next to calls is layout (the line breaks around a call), and so is
    the empty shell of a fence or wrapper tag the calls were written in (see call_shell):
    held until text that is not layout follows, and dropped if a call or the end comes
    first. Clients would otherwise show it as a message of its own. An output with no call
    at all has no layout: a whole answer that is only whitespace (or a lone fence) is its
    text."""

    __slots__ = ("_block", "_blocks", "_called", "_parts", "_shell")

    def __init__(self) -> None:
        self._parts: list[Part] = []
        self._block: str | None = None
        self._blocks = 0
        self._shell = CallShell()  # the text outside blocks, while it may be layout
        self._called = False  # a call part was written: what is held beside it is layout

    def text(self, text: str) -> None:
        if not text:
            return
        block = self._block
        if block is None:
            released = self._shell.feed(text)
            if not released:
                return
            text, block = released, self._open_block()
        self._parts.append(TextDelta(block, text))

    def marker(self, part: Part) -> None:
        """A part that sits inside the text flow (think markers) without closing it; text
        held as layout before it is text after all."""
        self._release(self._shell.flush())
        self._parts.append(part)

    def _release(self, held: str) -> None:
        if held:
            block = self._block if self._block is not None else self._open_block()
            self._parts.append(TextDelta(block, held))

    def _open_block(self) -> str:
        self._block = f"text_{self._blocks}"
        self._blocks += 1
        self._parts.append(TextStart(self._block))
        return self._block

    def _close_block(self) -> None:
        if self._block is not None:
            self._parts.append(TextEnd(self._block))
            self._block = None

    def call_part(self, part: Part) -> None:
        self._release(self._shell.before_call())
        self._close_block()
        self._called = True
        self._parts.append(part)

    def end(self) -> None:
        """The output ended: what is held is layout (dropped) only if a call was written;
        other held text is text."""
        self._release(self._shell.finish() if self._called else self._shell.flush())
        self._close_block()

    def take(self) -> list[Part]:
        parts, self._parts = self._parts, []
        return parts
