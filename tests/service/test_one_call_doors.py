"""One step at a time, at every front door, streamed and whole: a client that asks for one
call (`parallel_tool_calls: false`, Messages' `disable_parallel_tool_use`) or a route that
gives one to clients that say nothing gets the first call, and the answer ends there; a
call repeated in one answer goes out once, and past a bound of repeats the answer ends; a
result the model writes for its own call ends the answer. A streamed answer that ends so
closes the upstream stream (a `Hang` upstream sees its client go: nothing after is read).
Parallel calls still go out where the client allows them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gemini_client import declaration, generate
from google.genai import types
from messages_client import anthropic_tool, create, tool_uses
from messages_client import text as message_text
from observability import scrape
from responses_client import calls as response_calls
from responses_client import flat_function, respond
from responses_client import text as response_text
from servers import TIME_TOOL, WEATHER_TOOL, Proxy, StartProxy, chat_body
from upstream_server import (
    PARIS_WEATHER,
    TIME_CALL,
    UTC_TIME,
    WEATHER_CALL,
    Hang,
    Reply,
    ScriptedUpstream,
)
from waits import HUNG_AFTER_SECONDS

from service.exchange.deltas import REPEATS_BEFORE_END

TOOLS = [WEATHER_TOOL, TIME_TOOL]
WEATHER, TIME = WEATHER_CALL["json-mix"], TIME_CALL["json-mix"]
RESULT = '\n<tool_response>\n{"temperature": 21}\n</tool_response>\n'
Answered = tuple[str, list[tuple[str | None, Any]]]  # the text and calls a client assembled
# What the client says of parallel calls: True asks for one call, False allows several,
# None says nothing.
Door = Callable[[Proxy, bool, bool | None, str], Answered]


def _chat(proxy: Proxy, stream: bool, one: bool | None, model: str) -> Answered:
    said = {} if one is None else {"parallel_tool_calls": not one}
    completion = proxy.chat(chat_body(*TOOLS, stream=stream, model=model, **said))
    return completion.content or "", list(completion.calls)


def _responses(proxy: Proxy, stream: bool, one: bool | None, model: str) -> Answered:
    said = {} if one is None else {"parallel_tool_calls": not one}
    tools = [flat_function(tool) for tool in TOOLS]
    response = respond(proxy, stream, model=model, input="Weather?", tools=tools, **said)
    return response_text(response), list(response_calls(response))


def _messages(proxy: Proxy, stream: bool, one: bool | None, model: str) -> Answered:
    said = (
        {} if one is None else {"tool_choice": {"type": "auto", "disable_parallel_tool_use": one}}
    )
    tools = [anthropic_tool(tool) for tool in TOOLS]
    message = create(proxy, stream, model=model, tools=tools, **said)
    return message_text(message), list(tool_uses(message))


def _gemini(proxy: Proxy, stream: bool, one: bool | None, model: str) -> Answered:
    assert one is None  # the Gemini API has no word for it
    declared = [types.Tool(function_declarations=[declaration(tool) for tool in TOOLS])]
    answer = generate(proxy, stream, model=model, tools=declared)
    return answer.text or "", answer.called


DOORS: dict[str, Door] = {
    "chat": _chat,
    "responses": _responses,
    "messages": _messages,
    "gemini": _gemini,
}
# The doors whose clients can ask for one call.
ASKING = ("chat", "responses", "messages")
MODEL = "test-model"


def _answer(upstream: ScriptedUpstream, stream: bool, *chunks: str) -> None:
    """Script the model's output: streamed, by an upstream that never ends its stream on
    its own (the proxy must close it); whole, as one completion."""
    upstream.script(Hang(*chunks) if stream else Reply(*chunks))


def _closed(upstream: ScriptedUpstream, stream: bool) -> None:
    """A streamed answer's upstream stream was closed by the proxy."""
    if stream:
        assert upstream.client_gone.wait(HUNG_AFTER_SECONDS)


def _ended(proxy: Proxy, reason: str) -> float:
    return scrape(proxy.http).value("toolcall_proxy_answers_ended_early_total", reason=reason)


@pytest.mark.parametrize("door", ASKING)
def test_a_client_that_asks_for_one_call_gets_the_first_and_the_answer_ends(
    upstream: ScriptedUpstream, start_proxy: StartProxy, door: str, stream: bool
) -> None:
    proxy = start_proxy()
    _answer(upstream, stream, "I'll check.\n", WEATHER, "\nThen the time:\n", TIME)

    text, calls = DOORS[door](proxy, stream, True, MODEL)

    assert (text, calls) == ("I'll check.\n", [PARIS_WEATHER])
    _closed(upstream, stream)
    assert _ended(proxy, "single_call") == (1 if stream else 0)


@pytest.mark.parametrize("door", DOORS)
def test_a_route_gives_one_call_to_clients_that_say_nothing(
    upstream: ScriptedUpstream, start_proxy: StartProxy, door: str, stream: bool
) -> None:
    proxy = start_proxy(single_call=True)
    _answer(upstream, stream, WEATHER, "\n", TIME)

    assert DOORS[door](proxy, stream, None, MODEL) == ("", [PARIS_WEATHER])
    _closed(upstream, stream)


def test_a_response_says_it_made_one_call_where_the_route_gave_one(
    upstream: ScriptedUpstream, start_proxy: StartProxy, stream: bool
) -> None:
    upstream.script(Reply(WEATHER), Reply(WEATHER))
    tools = [flat_function(tool) for tool in TOOLS]

    one = respond(start_proxy(single_call=True), stream, input="Weather?", tools=tools)
    several = respond(start_proxy(), stream, input="Weather?", tools=tools)

    assert (one["parallel_tool_calls"], several["parallel_tool_calls"]) == (False, True)


def test_a_routes_file_route_gives_one_call_and_others_keep_parallel_calls(
    upstream: ScriptedUpstream, start_proxy: StartProxy, tmp_path: Path, stream: bool
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text("[routes.small]\nmodel = 'test-model'\nsingle_call = true\n")
    proxy = start_proxy(routes_file=str(routes))
    _answer(upstream, stream, WEATHER, "\n", TIME)
    upstream.script(Reply(WEATHER, "\n", TIME))

    assert _chat(proxy, stream, None, "small")[1] == [PARIS_WEATHER]
    _closed(upstream, stream)
    assert _chat(proxy, stream, None, MODEL)[1] == [PARIS_WEATHER, UTC_TIME]


@pytest.mark.parametrize("door", DOORS)
def test_parallel_calls_still_go_out_where_the_client_allows_them(
    upstream: ScriptedUpstream, start_proxy: StartProxy, door: str, stream: bool
) -> None:
    proxy = start_proxy()
    upstream.script(Reply("Both:\n", WEATHER, "\n", TIME))

    assert DOORS[door](proxy, stream, None, MODEL) == ("Both:\n", [PARIS_WEATHER, UTC_TIME])


@pytest.mark.parametrize("door", ("chat", "responses"))
def test_a_client_that_allows_parallel_calls_is_heard_over_the_route(
    upstream: ScriptedUpstream, start_proxy: StartProxy, door: str, stream: bool
) -> None:
    upstream.script(*[Reply(WEATHER, "\n", TIME)] * 3)

    assert DOORS[door](start_proxy(single_call=True), stream, False, MODEL)[1] == [
        PARIS_WEATHER,
        UTC_TIME,
    ]
    DOORS[door](start_proxy(), stream, False, MODEL)
    DOORS[door](start_proxy(single_call=True), stream, None, MODEL)
    heard, parallel, single = [asked.json["messages"] for asked in upstream.chat_requests]
    assert heard == parallel != single  # the prompt asks for one call only where one is due


@pytest.mark.parametrize("door", DOORS)
def test_a_call_repeated_in_one_answer_goes_out_once(
    upstream: ScriptedUpstream, start_proxy: StartProxy, door: str, stream: bool
) -> None:
    proxy = start_proxy()
    upstream.script(Reply(WEATHER, "\n", WEATHER, "\n", TIME))

    assert DOORS[door](proxy, stream, None, MODEL)[1] == [PARIS_WEATHER, UTC_TIME]
    metrics = scrape(proxy.http)
    assert metrics.value("toolcall_proxy_repeated_tool_calls_total", protocol="json-mix") == 1
    assert metrics.value("toolcall_proxy_tool_calls_total") == 2


@pytest.mark.parametrize("door", DOORS)
def test_the_answer_ends_after_a_bound_of_repeated_calls(
    upstream: ScriptedUpstream, start_proxy: StartProxy, door: str, stream: bool
) -> None:
    proxy = start_proxy()
    _answer(upstream, stream, *[WEATHER + "\n"] * (REPEATS_BEFORE_END + 1), TIME)

    assert DOORS[door](proxy, stream, None, MODEL)[1] == [PARIS_WEATHER]
    _closed(upstream, stream)
    assert _ended(proxy, "repeated_calls") == (1 if stream else 0)


@pytest.mark.parametrize("door", DOORS)
def test_a_result_the_model_writes_for_its_call_ends_the_answer(
    upstream: ScriptedUpstream, start_proxy: StartProxy, door: str, stream: bool
) -> None:
    proxy = start_proxy()
    _answer(upstream, stream, "Checking.\n", WEATHER, RESULT, "It is 21 degrees.\n", TIME)

    assert DOORS[door](proxy, stream, None, MODEL) == ("Checking.\n", [PARIS_WEATHER])
    _closed(upstream, stream)
    failures = scrape(proxy.http).value(
        "toolcall_proxy_parse_failures_total", kind="invented_result"
    )
    assert failures == (1 if stream else 2)  # whole, what followed it has a record too
    assert _ended(proxy, "invented_result") == (1 if stream else 0)
