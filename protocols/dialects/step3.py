"""StepFun Step3: a section of calls between full-width-bar tokens (with `_`, not DeepSeek's
`▁`), each call's type `function`, then a `steptml:invoke` with one `steptml:parameter` per
argument:

    <｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>
    <steptml:invoke name="get_weather">
    <steptml:parameter name="city">Paris</steptml:parameter>
    </steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>        (one line, cut to fit)

Checked against vLLM's and SGLang's `step3` parsers: values are stripped text. The section is
read whole once it closes."""

from __future__ import annotations

import re
from typing import Any

from ..lenient.relaxed_json import RelaxedParseBudget
from ..registry import register
from ..streaming.delimited_call import DelimitedBody, delimited
from ..streaming.dialect_forms import Dialect, blanks, followed_by, open_form

CALLS_BEGIN, CALLS_END = "<｜tool_calls_begin｜>", "<｜tool_calls_end｜>"
CALL_BEGIN, SEP = "<｜tool_call_begin｜>", "<｜tool_sep｜>"
_INVOKE = re.compile(
    rf'{CALL_BEGIN}\s*function\s*{SEP}\s*<steptml:invoke name="([^"]+)">(.*?)</steptml:invoke>',
    re.DOTALL,
)
_PARAMETER = re.compile(r'<steptml:parameter name="([^"]+)">(.*?)</steptml:parameter>', re.DOTALL)


def _read(body: str, _name: str, budget: RelaxedParseBudget) -> list[tuple[str, dict[str, Any]]]:
    return [
        (name, {key: value.strip() for key, value in _PARAMETER.findall(inner)})
        for name, inner in _INVOKE.findall(body)
    ]


_BODY = DelimitedBody(ends=(CALLS_END,), read=_read)


@register("step3")
class Step3(Dialect):
    forms = (
        open_form(
            CALLS_BEGIN,
            [blanks(), followed_by(re.escape(CALL_BEGIN), CALL_BEGIN)],
            delimited(_BODY),
        ),
    )
