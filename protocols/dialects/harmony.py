"""gpt-oss (OpenAI Harmony), as text when the server does not parse it: a message to
`functions.<name>` on the commentary channel, its JSON arguments ended by `<|call|>`. The
recipient goes after the channel or, in the role, before it:

    <|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "P"}<|call|>
    <|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{}<|call|>

Checked against OpenAI's Harmony format guide and sglang's `gpt_oss` detector. The analysis
channel before a call stays text."""

from __future__ import annotations

from ..registry import register
from ..streaming.commit_policy import CallContext, CallScanner
from ..streaming.dialect_forms import (
    Dialect,
    Piece,
    blanks,
    literal,
    open_form,
    optional,
    tool_name,
)
from ..streaming.json_body import JsonBody, JsonBodyCall

START, CHANNEL, MESSAGE = "<|start|>", "<|channel|>", "<|message|>"
_BODY = JsonBody(closers=(("<|call|>", "<|end|>"),))
_TO: list[Piece] = [literal("to="), tool_name()]
# What may come between the recipient and the message: the content type, constrained.
_MESSAGE: list[Piece] = [
    blanks(8),
    optional("<|constrain|>"),
    blanks(8),
    optional("json"),
    blanks(8),
    literal(MESSAGE),
]
_COMMENTARY = [literal(CHANNEL), literal("commentary"), blanks(8), *_TO, *_MESSAGE]


def _call(ctx: CallContext, open_tag: str, name: str) -> CallScanner:
    return JsonBodyCall(ctx, open_tag, name, _BODY)


@register("harmony")
class Harmony(Dialect):
    forms = (
        open_form(CHANNEL, _COMMENTARY[1:], _call),
        open_form(START, [literal("assistant"), *_COMMENTARY], _call),
        open_form(
            START,
            [
                literal("assistant"),
                blanks(8),
                *_TO,
                blanks(8),
                literal(CHANNEL),
                literal("commentary"),
                *_MESSAGE,
            ],
            _call,
        ),
    )
