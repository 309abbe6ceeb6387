"""DeepSeek V3.2 and V4 ("DSML"): a section of `invoke`s, each parameter tagged with whether
its value is a raw string (`string="true"`) or JSON (`string="false"`); V4 names the section
`tool_calls` where V3.2 wrote `function_calls`:

    <｜DSML｜function_calls>
    <｜DSML｜invoke name="get_weather">
    <｜DSML｜parameter name="city" string="true">Hangzhou</｜DSML｜parameter>
    <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜function_calls>

An invoke may hold one JSON object instead of parameters (`{"city": "Hangzhou"}`). V4.1
writes a space before each tag's name and names the section `calls`:

    <｜DSML｜ calls>
    <｜DSML｜ invoke name="get_weather">
    {"city": "Hangzhou", "days": 3}
    </｜DSML｜ invoke>
    </｜DSML｜ calls>

Checked against vLLM's `deepseekv32`, `deepseekv4` and `deepseek_v41` parsers, SGLang's
DeepSeek V3.2/V4/V4.1 detectors and V4.1's encoder. The section is read whole once it
closes (`delimited_call`); an invoke whose body is neither parameters nor an object, or has
text beside its parameters, leaves the section text."""

from __future__ import annotations

import re
from typing import Any

from ..lenient.relaxed_json import RelaxedParseBudget
from ..lenient.tagged_values import json_or_text, tagged_arguments
from ..registry import register
from ..streaming.delimited_call import DelimitedBody, delimited
from ..streaming.dialect_forms import Dialect, blanks, followed_by, open_form

BAR = "｜DSML｜"
SECTIONS = (f"<{BAR}function_calls>", f"<{BAR}tool_calls>", f"<{BAR} calls>")
# The tag names after the bar, with V4.1's space or without.
_INVOKE = re.compile(rf'<{BAR} ?invoke\s+name="([^"]+)"\s*>(.*?)</{BAR} ?invoke>', re.DOTALL)
_PARAMETER = re.compile(
    rf'<{BAR} ?parameter\s+name="([^"]+)"(?:\s+string="(true|false)")?\s*>(.*?)</{BAR} ?parameter>',
    re.DOTALL,
)


def _read(body: str, _name: str, budget: RelaxedParseBudget) -> list[tuple[str, dict[str, Any]]]:
    def parameter(tag: re.Match[str]) -> tuple[str, Any]:
        key, string, value = tag.groups()
        return key, json_or_text(value, budget) if string == "false" else value

    return [
        (name, tagged_arguments(inner, _PARAMETER, parameter, budget))
        for name, inner in _INVOKE.findall(body)
    ]


def _form(section: str) -> Any:
    body = DelimitedBody(ends=("</" + section[1:],), read=_read)
    invoke = f"<{BAR} invoke" if section.startswith(f"<{BAR} ") else f"<{BAR}invoke"
    return open_form(
        section,
        [blanks(), followed_by(re.escape(invoke), invoke)],
        delimited(body),
    )


@register("dsml")
class Dsml(Dialect):
    forms = tuple(_form(section) for section in SECTIONS)
