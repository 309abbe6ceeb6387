"""DeepSeek V3, R1 and V3.1: calls between DeepSeek's tool tokens (full-width bars, `▁` for
spaces), in a section `<｜tool▁calls▁begin｜>` ... `<｜tool▁calls▁end｜>`. V3 and R1 write
the call's type, the name, then the arguments in a JSON fence; V3.1 the name, then the JSON:

    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
    ```json
    {"city": "Paris"}
    ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}
    <｜tool▁call▁end｜><｜tool▁calls▁end｜>          (one line, cut here to fit)

Checked against DeepSeek-R1's and DeepSeek-V3.1's chat templates and vLLM's `deepseek_v3`
and `deepseek_v31` tool parsers."""

from __future__ import annotations

from ..registry import register
from ..streaming.commit_policy import CallContext, CallScanner
from ..streaming.dialect_forms import (
    Dialect,
    Piece,
    blanks,
    followed_by,
    literal,
    open_form,
    tool_name,
)
from ..streaming.json_body import JsonBody, JsonBodyCall

CALLS_BEGIN, CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CALL_BEGIN, CALL_END, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
_BODY = JsonBody(closers=((CALL_END,), (CALLS_END,)))
# V3 and R1 write the call's type first; V3.1 the name (where `function` would be).
_V3: list[Piece] = [literal("function"), literal(SEP), tool_name(), followed_by(r"\s")]
_V31: list[Piece] = [tool_name(), literal(SEP)]


def _call(ctx: CallContext, open_tag: str, name: str) -> CallScanner:
    return JsonBodyCall(ctx, open_tag, name, _BODY)


@register("deepseek")
class DeepSeek(Dialect):
    forms = tuple(
        open_form(marker, [*before, *pieces], _call)
        for marker, before in (
            (CALLS_BEGIN, [blanks(), literal(CALL_BEGIN)]),
            (CALL_BEGIN, []),
        )
        for pieces in (_V3, _V31)
    )
