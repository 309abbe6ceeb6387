"""DeepSeek V3.2 and V4 ("DSML"): a section of `invoke`s, each parameter tagged with whether
its value is a raw string (`string="true"`) or JSON (`string="false"`); V4 names the section
`tool_calls` where V3.2 wrote `function_calls`:

    <｜DSML｜function_calls>
    <｜DSML｜invoke name="get_weather">
    <｜DSML｜parameter name="city" string="true">Hangzhou</｜DSML｜parameter>
    <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜function_calls>

Checked against vLLM's `deepseekv32` and `deepseekv4` tool parsers and SGLang's DeepSeek
V3.2/V4 detectors. The section is read whole once it closes (`delimited_call`)."""

from __future__ import annotations

import re
from typing import Any

from ..lenient.relaxed_json import RelaxedParseBudget
from ..lenient.tagged_values import json_or_text
from ..registry import register
from ..streaming.delimited_call import DelimitedBody, delimited
from ..streaming.dialect_forms import Dialect, blanks, followed_by, open_form

BAR = "｜DSML｜"
SECTIONS = (f"<{BAR}function_calls>", f"<{BAR}tool_calls>")
_INVOKE = re.compile(rf'<{BAR}invoke\s+name="([^"]+)"\s*>(.*?)</{BAR}invoke>', re.DOTALL)
_PARAMETER = re.compile(
    rf'<{BAR}parameter\s+name="([^"]+)"(?:\s+string="(true|false)")?\s*>(.*?)</{BAR}parameter>',
    re.DOTALL,
)


def _read(body: str, _name: str, budget: RelaxedParseBudget) -> list[tuple[str, dict[str, Any]]]:
    calls = []
    for name, inner in _INVOKE.findall(body):
        arguments = {
            key: json_or_text(value, budget) if string == "false" else value
            for key, string, value in _PARAMETER.findall(inner)
        }
        calls.append((name, arguments))
    return calls


def _form(section: str) -> Any:
    body = DelimitedBody(ends=("</" + section[1:],), read=_read)
    return open_form(
        section,
        [blanks(), followed_by(re.escape(f"<{BAR}invoke"), f"<{BAR}invoke")],
        delimited(body),
    )


@register("dsml")
class Dsml(Dialect):
    forms = tuple(_form(section) for section in SECTIONS)
