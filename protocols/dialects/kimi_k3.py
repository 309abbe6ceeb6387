"""Kimi K3 ("XTML"): the reply and the calls in channels built from the special tokens
`<|open|>`, `<|close|>` and `<|sep|>`; each call names its tool in an attribute, each
argument its key and type (a `string` is raw text, any other type JSON):

    <|open|>tools<|sep|>
    <|open|>call tool="get_weather" index="1"<|sep|>
    <|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>
    <|open|>argument key="days" type="integer"<|sep|>3<|close|>argument<|sep|>
    <|close|>call<|sep|>
    <|close|>tools<|sep|>

Checked against vLLM's and SGLang's `kimi_k3` parsers. Attribute values undo `&quot;` and
`&amp;`. The section (or a call written without it) is read whole once it closes; a section
the output ends inside is read as far as its calls are whole, as both engines do. The think
channel is a think block of the tag loop (`THINK_TAGS`): no call is read inside it."""

from __future__ import annotations

import re
from typing import Any

from ..lenient.relaxed_json import RelaxedParseBudget
from ..lenient.tagged_values import attributes, json_or_text, tagged_arguments
from ..registry import register
from ..streaming.delimited_call import DelimitedBody, delimited
from ..streaming.dialect_forms import (
    Dialect,
    Piece,
    blanks,
    followed_by,
    literal,
    open_form,
)

OPEN, CLOSE, SEP = "<|open|>", "<|close|>", "<|sep|>"
TOOLS_OPEN, TOOLS_CLOSE = f"{OPEN}tools{SEP}", f"{CLOSE}tools{SEP}"
CALL_OPEN, CALL_CLOSE = f"{OPEN}call", f"{CLOSE}call{SEP}"
_ESCAPED = re.escape
_CALL = re.compile(
    rf"{_ESCAPED(CALL_OPEN)}\s+([^<]*?){_ESCAPED(SEP)}(.*?){_ESCAPED(CALL_CLOSE)}", re.DOTALL
)
ARGUMENT_CLOSE = f"{CLOSE}argument{SEP}"
_ARGUMENT = re.compile(
    rf"{_ESCAPED(OPEN)}argument\s+([^<]*?){_ESCAPED(SEP)}(.*?){_ESCAPED(ARGUMENT_CLOSE)}",
    re.DOTALL,
)


def _arguments(body: str, budget: RelaxedParseBudget) -> dict[str, Any]:
    def argument(tag: re.Match[str]) -> tuple[str, Any]:
        described, value = attributes(tag.group(1)), tag.group(2)
        typed = described.get("type", "string") != "string"
        return described.get("key", ""), json_or_text(value, budget) if typed else value

    return tagged_arguments(body, _ARGUMENT, argument, budget, _through_last(body, ARGUMENT_CLOSE))


def _section(body: str, _name: str, budget: RelaxedParseBudget) -> list[tuple[str, dict[str, Any]]]:
    return [
        (attributes(attrs).get("tool", ""), _arguments(inner, budget))
        for attrs, inner in _CALL.findall(body, 0, _through_last(body, CALL_CLOSE))
    ]


def _through_last(body: str, close: str) -> int:
    """Where the last `close` in `body` ends (0 when there is none). A match ends with its
    close, so none lies past it; searched beyond, each opening after the last close was
    looked for its close through the rest of the body: 2 MB of openings took minutes."""
    last = body.rfind(close)
    return 0 if last == -1 else last + len(close)


def _call(body: str, name: str, budget: RelaxedParseBudget) -> list[tuple[str, dict[str, Any]]]:
    return [(name, _arguments(body, budget))]


_SECTION = DelimitedBody(ends=(TOOLS_CLOSE,), read=_section, end_optional=True)
_ONE_CALL = DelimitedBody(ends=(CALL_CLOSE,), read=_call)
_NAME = r'[^"<>]{1,128}'


@register("kimi-k3")
class KimiK3(Dialect):
    forms = (
        open_form(
            TOOLS_OPEN,
            [blanks(), followed_by(_ESCAPED(CALL_OPEN), CALL_OPEN)],
            delimited(_SECTION),
        ),
        open_form(
            CALL_OPEN,
            [
                Piece(r"\s{1,8}", r"\s{0,8}", first=r"\s", blank=False),
                literal('tool="'),
                Piece(_NAME, r'(?P<name>[^"<>]{0,128})', names_tool=True, first=r'[^"<>]'),
                literal('"'),
                Piece(r"[^<>|]{0,64}", r"[^<>|]{0,64}"),
                literal(SEP),
            ],
            delimited(_ONE_CALL),
        ),
    )
