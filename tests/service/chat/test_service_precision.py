"""Through chat completions, streamed and whole: a call form the model only shows (a format
explained in a fence, inline code) is content, next to the upstream's own calls too; what
the model wrote to act (a fence of calls after a line of prose, a call of a 2026 format left
in a native upstream's text) is a call."""

from __future__ import annotations

import pytest
from observability import scrape
from servers import TIME_TOOL, WEATHER_TOOL, StartProxy, chat_body
from upstream_server import PARIS_WEATHER, UTC_TIME, Reply, ScriptedUpstream, native_call

NATIVE_ID = "call_upstream_paris"
TIME_OBJECT = '{"name": "get_time", "arguments": {"zone": "UTC"}}'
SHOWN = {
    "fenced-example": (
        "A call looks like this:\n\n```text\n<tool_call>\n" + TIME_OBJECT + "\n</tool_call>\n```\n"
        "\nThe proxy turns it into a tool call."
    ),
    "inline-code": f"Write `<tool_call>{TIME_OBJECT}</tool_call>` and the proxy calls the tool.",
    "quoted-output": f"grep found it:\n\n12:<tool_call>{TIME_OBJECT}</tool_call>\n\nThat's all.",
}
# get_time(zone="UTC") as the formats of 2026 write it, left in a native upstream's text.
LEAKED = {
    "dsml": (
        '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_time">\n'
        '<｜DSML｜parameter name="zone" string="true">UTC</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜tool_calls>"
    ),
    "kimi-k3": (
        '<|open|>tools<|sep|><|open|>call tool="get_time" index="1"<|sep|>'
        '<|open|>argument key="zone" type="string"<|sep|>UTC<|close|>argument<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|>"
    ),
    "minimax-m3": (
        ']<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="get_time">'
        "]<]minimax[>[<zone>UTC]<]minimax[>[</zone>]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>"
    ),
    "gemma4": '<|tool_call>call:get_time{zone:<|"|>UTC<|"|>}<tool_call|>',
    "lfm2": '<|tool_call_start|>[get_time(zone="UTC")]<|tool_call_end|>',
}


@pytest.mark.parametrize("shown", SHOWN.values(), ids=SHOWN.keys())
def test_a_call_form_the_model_shows_is_content(
    upstream: ScriptedUpstream, start_proxy: StartProxy, protocol: str, stream: bool, shown: str
) -> None:
    proxy = start_proxy(tool_protocol=protocol)
    upstream.script(Reply(*[shown[i : i + 9] for i in range(0, len(shown), 9)]))

    completion = proxy.chat(chat_body(WEATHER_TOOL, TIME_TOOL, stream=stream))

    assert completion.calls == []
    assert completion.content == shown
    assert completion.finish_reason == "stop"


@pytest.mark.parametrize("shown", SHOWN.values(), ids=SHOWN.keys())
def test_a_call_form_shown_next_to_a_native_call_is_not_a_second_call(
    upstream: ScriptedUpstream, start_proxy: StartProxy, stream: bool, shown: str
) -> None:
    proxy = start_proxy(upstream_native_tools=True)
    native = native_call(0, NATIVE_ID, *PARIS_WEATHER)
    upstream.script(Reply(shown, *native, finish_reason="tool_calls"))

    completion = proxy.chat(chat_body(WEATHER_TOOL, TIME_TOOL, stream=stream))

    assert completion.calls == [PARIS_WEATHER]
    assert completion.content == shown
    assert scrape(proxy.http).value("toolcall_proxy_rescued_tool_calls_total") == 0


def test_a_fence_of_calls_after_a_line_of_prose_is_the_calls(
    upstream: ScriptedUpstream, start_proxy: StartProxy, protocol: str, stream: bool
) -> None:
    proxy = start_proxy(tool_protocol=protocol)
    fence = (
        '```json\n[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
        + TIME_OBJECT
        + "]\n```"
    )
    upstream.script(Reply("You can use the following JSON array of calls:\n", fence))

    completion = proxy.chat(chat_body(WEATHER_TOOL, TIME_TOOL, stream=stream))

    assert completion.calls == [PARIS_WEATHER, UTC_TIME]
    assert completion.content == "You can use the following JSON array of calls:\n"
    assert completion.finish_reason == "tool_calls"


@pytest.mark.parametrize("leaked", LEAKED.values(), ids=LEAKED.keys())
def test_a_2026_format_call_left_next_to_native_calls_is_rescued(
    upstream: ScriptedUpstream, start_proxy: StartProxy, stream: bool, leaked: str
) -> None:
    proxy = start_proxy(upstream_native_tools=True)
    native = native_call(0, NATIVE_ID, *PARIS_WEATHER)
    upstream.script(Reply("Checking both.\n", *native, leaked, finish_reason="tool_calls"))

    completion = proxy.chat(chat_body(WEATHER_TOOL, TIME_TOOL, stream=stream))

    assert completion.calls == [PARIS_WEATHER, UTC_TIME]
    assert completion.tool_calls[0].id == NATIVE_ID
    assert completion.content == "Checking both.\n"
    assert scrape(proxy.http).value("toolcall_proxy_rescued_tool_calls_total") == 1
