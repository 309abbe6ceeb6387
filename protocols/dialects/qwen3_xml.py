"""Qwen3-Coder's XML-like calls,
`<tool_call><function=f><parameter=p>value</parameter></function></tool_call>`, recognised
under every protocol. The qwen3-coder protocol, which prompts for them, is
`protocols.formats.qwen3_coder`; its scanner reads them here too.
Checked against Qwen3-Coder's chat template and vLLM's `qwen3_coder` tool parser."""

from __future__ import annotations

from ..formats.qwen3_coder import CALL_START, FUNCTION_START, MAX_NAME_CHARS, open_call
from ..registry import register
from ..streaming.dialect_forms import Dialect, Piece, blanks, followed_by, literal, open_form
from ..streaming.keyed_values import MAX_GAP_CHARS

_FUNCTION = [
    literal(FUNCTION_START),
    Piece(
        rf"[^\s<>]{{1,{MAX_NAME_CHARS}}}",
        rf"(?P<name>[^\s<>]{{0,{MAX_NAME_CHARS}}})",
        names_tool=True,
        first=r"[^\s<>]",
    ),
    literal(">"),
]


@register("qwen3-coder")
class Qwen3Coder(Dialect):
    forms = (
        open_form(CALL_START, [blanks(MAX_GAP_CHARS), *_FUNCTION], open_call),
        # Unwrapped, what follows tells it from Functionary's `<function=f>{...}`.
        open_form(
            FUNCTION_START,
            [*_FUNCTION[1:], blanks(MAX_GAP_CHARS), followed_by("<", "<")],
            open_call,
        ),
    )
