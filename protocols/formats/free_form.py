"""Free-form tools (OpenAI's `custom` tools): a tool that takes one raw text, not JSON
arguments, such as a patch. The model is offered it as a tool with one string argument,
`input`, so every protocol writes and parses it as any other call (Morph-XML carries the
text raw, JSON-mix as one JSON string) under the same commit policy; the call's arguments
are read back as the text, whole or as their fragments stream."""

from __future__ import annotations

import json
import re
from typing import Any

from ..lenient.json_text import json_text
from ..parts import ToolSpec

# The one argument a free-form tool is offered with.
FREE_FORM_INPUT = "input"
FREE_FORM_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {FREE_FORM_INPUT: {"type": "string"}},
    "required": [FREE_FORM_INPUT],
    "additionalProperties": False,
}
GRAMMAR_NAMES = {"lark": "Lark grammar", "regex": "regular expression"}
# How canonical arguments (json_text's) begin when `input` is their first key.
_INPUT_START = json_text({FREE_FORM_INPUT: ""})[:-2]
# A JSON string's content up to an escape that is not complete yet, or its closing quote.
_STRING_PIECE = re.compile(r'(?:[^"\\]+|\\u[0-9A-Fa-f]{4}|\\[^u])*')


def free_form_tool(
    name: str, description: str, *, syntax: str | None = None, grammar: str | None = None
) -> ToolSpec:
    """A free-form tool as the model is offered it: its description says that the text goes
    whole into `input`, and which grammar (`syntax` "lark" or "regex") it must follow."""
    how = (
        f"This tool takes free-form text, not JSON: write the whole text as its one"
        f" argument, `{FREE_FORM_INPUT}`."
    )
    if grammar:
        how += f" The text must match this {GRAMMAR_NAMES.get(syntax or '', 'grammar')}:\n{grammar}"
    text = f"{description}\n\n{how}" if description else how
    return ToolSpec(name, text, FREE_FORM_PARAMETERS, free_form=True)


def free_form_input(arguments: Any) -> str:
    """The text a free-form call carries: its `input` string, or, when the model wrote no
    such string, its arguments as JSON (the tool then says what it could not read)."""
    if isinstance(arguments, dict) and isinstance(arguments.get(FREE_FORM_INPUT), str):
        return str(arguments[FREE_FORM_INPUT])
    return json_text(arguments)


class FreeFormInputStream:
    """A streamed free-form call's argument fragments (canonical JSON, as the commit policy
    sends them) read as its text: the content of `input` when that is the first key,
    decoded as it arrives; nothing otherwise, the whole call then decides. The text sent is
    always a prefix of `free_form_input` of the call's final arguments (the commit policy
    ends a call unfinished whose final arguments do not begin with its fragments).

    >>> stream = FreeFormInputStream()
    >>> stream.feed('{"input": "a\\\\'), stream.feed('nb')
    ('a', '\\nb')
    """

    __slots__ = ("_held", "_reading", "sent_chars")

    def __init__(self) -> None:
        self._held = ""  # fragments not decoded yet: the start, or an unfinished escape
        self._reading: bool | None = None  # None until the start shows whether `input` leads
        self.sent_chars = 0

    def feed(self, fragment: str) -> str:
        """The text `fragment` adds."""
        held, self._held = self._held + fragment, ""
        if self._reading is None:
            if len(held) < len(_INPUT_START) and _INPUT_START.startswith(held):
                self._held = held
                return ""
            self._reading = held.startswith(_INPUT_START)
            held = held[len(_INPUT_START) :]
        if not self._reading:
            return ""
        # json_text escapes only `"`, `\` and control characters (never half a surrogate
        # pair), so each complete escape decodes on its own; an unfinished one waits.
        piece = _STRING_PIECE.match(held)
        assert piece is not None  # the pattern matches the empty string
        end = piece.end()
        if end < len(held) and held[end] == '"':  # the string ends: the rest is not text
            self._reading = False
        else:
            self._held = held[end:]
        text = piece.group()
        if "\\" in text:  # most of a text has no escape: decoding it would only copy it
            text = str(json.loads(f'"{text}"'))
        self.sent_chars += len(text)
        return text
