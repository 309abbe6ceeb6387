"""ByteDance Seed-OSS (Doubao): Qwen3-Coder's `<function=...>` calls inside
`<seed:tool_call>`, the model's reasoning in `<seed:think>`:

    <seed:tool_call>
    <function=get_weather>
    <parameter=city>Paris</parameter>
    </function>
    </seed:tool_call>

Checked against vLLM's `seed_oss` tool parser: values are raw text less one line break
after the open tag and one before the close. The block is read whole once it closes (the
`<function=` inside was read by the qwen3-coder dialect before, and the wrapper left as
content). The `<seed:think>` block is a think block of the tag loop (`THINK_TAGS`): no call
is read inside it."""

from __future__ import annotations

import re
from typing import Any

from ..lenient.relaxed_json import RelaxedParseBudget
from ..registry import register
from ..streaming.delimited_call import DelimitedBody, delimited
from ..streaming.dialect_forms import Dialect, blanks, followed_by, open_form

START, END = "<seed:tool_call>", "</seed:tool_call>"
_FUNCTION = re.compile(r"<function=([^>\n]{1,128})>(.*?)</function>", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([^>\n]{1,128})>(.*?)</parameter>", re.DOTALL)


def _value(raw: str) -> str:
    return raw.removeprefix("\n").removesuffix("\n")


def _read(body: str, _name: str, budget: RelaxedParseBudget) -> list[tuple[str, dict[str, Any]]]:
    return [
        (name.strip(), {key.strip(): _value(value) for key, value in _PARAMETER.findall(inner)})
        for name, inner in _FUNCTION.findall(body)
    ]


_BODY = DelimitedBody(ends=(END,), read=_read)


@register("seed-oss")
class SeedOss(Dialect):
    forms = (
        open_form(
            START,
            [blanks(), followed_by("<function=", "<function=")],
            delimited(_BODY),
        ),
    )
