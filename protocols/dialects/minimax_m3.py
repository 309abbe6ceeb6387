"""MiniMax M3: MiniMax-M2's `<invoke>` calls, every tag prefixed by the namespace marker
`]<]minimax[>[`, each argument an element named after it (nested elements for an object,
`<item>`s for a list), several `invoke`s to a block:

    ]<]minimax[>[<tool_call>
    ]<]minimax[>[<invoke name="get_weather">
    ]<]minimax[>[<city>Paris]<]minimax[>[</city>
    ]<]minimax[>[</invoke>
    ]<]minimax[>[</tool_call>

Checked against vLLM's and SGLang's `minimax_m3` parsers (blanks between the marker and its
tag are tolerated, as there). The block, or an `invoke` written without it, is read whole
once it closes: the markers go, and the elements are read as Morph-XML arguments are. Before
this dialect the bare `<invoke name=...>` inside was taken for M2's and lost its arguments."""

from __future__ import annotations

import re
from typing import Any

from ..lenient.relaxed_json import RelaxedParseBudget
from ..lenient.relaxed_xml import parse_xml_arguments
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

MARK = "]<]minimax[>["
_MARKS = re.compile(re.escape(MARK) + r"[ \t\r\n]*(?=<)")
_INVOKE = re.compile(r'<invoke name="([^"]+)">(.*?)</invoke>', re.DOTALL)


def _block(body: str, _name: str, budget: RelaxedParseBudget) -> list[tuple[str, dict[str, Any]]]:
    return [
        (name, parse_xml_arguments(inner, budget=budget))
        for name, inner in _INVOKE.findall(_MARKS.sub("", body))
    ]


def _invoke(body: str, name: str, budget: RelaxedParseBudget) -> list[tuple[str, dict[str, Any]]]:
    return [(name, parse_xml_arguments(_MARKS.sub("", body), budget=budget))]


_BLOCK = DelimitedBody(ends=(f"{MARK}</tool_call>",), read=_block)
_ONE_INVOKE = DelimitedBody(ends=(f"{MARK}</invoke>",), read=_invoke)
_INVOKE_TAG = [
    literal('<invoke name="'),
    Piece(r'[^"<>]{1,128}', r'(?P<name>[^"<>]{0,128})', names_tool=True, first=r'[^"<>]'),
    literal('">'),
]


@register("minimax-m3")
class MinimaxM3(Dialect):
    forms = (
        open_form(
            MARK,
            [blanks(8), literal("<tool_call>"), blanks(), followed_by(re.escape(MARK), MARK)],
            delimited(_BLOCK),
        ),
        open_form(
            MARK,
            [blanks(8), *_INVOKE_TAG],
            delimited(_ONE_INVOKE),
        ),
    )
