"""Every parsed call checked against its tool's schema: a whole answer whose call fails is
asked for again once with what is wrong (CALL_REPAIR_RETRIES), and a repair that fails again,
a streamed call, or a route that turns repairs off is sent as written with an error record.
Counted in the metrics by outcome."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from observability import scrape
from servers import Proxy, StartProxy, chat_body, serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from upstream_server import USAGE, Late, Reply, ScriptedUpstream, rendered_calls
from waits import HUNG_AFTER_SECONDS

from protocols.formats.forced_call import render_forced_call_correction
from service.exchange.asking_again import MAX_ECHOED_REPLY_CHARS
from service.exchange.call_check import MAX_NAMED_CALLS


@pytest.fixture
def proxy(start_proxy: StartProxy) -> Proxy:
    """A proxy that asks again once for a call that fails its schema (off by default)."""
    return start_proxy(call_repair_retries=1)


@pytest.fixture
def protocol_proxy(start_proxy: StartProxy, protocol: str) -> Proxy:
    return start_proxy(tool_protocol=protocol, call_repair_retries=1)


def tool(name: str, parameters: dict[str, Any], **declared: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters, **declared}}


WEATHER_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 12},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer"},
    },
    "required": ["city"],
    "additionalProperties": False,
}
WEATHER = tool("get_weather", WEATHER_SCHEMA)
STRICT_WEATHER = tool("get_weather", WEATHER_SCHEMA, strict=True)
OPEN_WEATHER = tool("get_weather", {**WEATHER_SCHEMA, "additionalProperties": True})
PARIS = {"city": "Paris"}


def call(arguments: dict[str, Any], protocol: str = "json-mix", name: str = "get_weather") -> str:
    """What the model writes to call `name` with these arguments."""
    return rendered_calls(name, arguments)[protocol]


def invalid(proxy: Proxy, outcome: str) -> float:
    return scrape(proxy.http).value("toolcall_proxy_invalid_tool_calls_total", outcome=outcome)


def correction_for(problem: str) -> str:
    """What the model is told of its one get_weather call that fails with `problem`."""
    return (
        f"Error: the call to get_weather is not valid: {problem} (its parameters: city, unit,"
        " days). Write the reply again with the call corrected."
    )


def asked_again(proxy: Proxy) -> float:
    return scrape(proxy.http).value("toolcall_proxy_call_repair_retries_total")


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        pytest.param({"unit": "celsius"}, "'city' is a required property", id="required"),
        pytest.param(
            {"city": "Paris", "unit": "kelvin"},
            "unit: 'kelvin' is not one of ['celsius', 'fahrenheit']",
            id="enum",
        ),
        pytest.param(
            {"city": "Paris", "country": "FR"},
            "Additional properties are not allowed ('country' was unexpected)",
            id="additional-properties",
        ),
        pytest.param(
            {"city": ["Paris", "Lyon"]},
            "city: ['Paris', 'Lyon'] is not of type 'string'",
            id="type",
        ),
    ],
)
def test_a_whole_answer_whose_call_fails_is_asked_for_again_with_the_problem(
    upstream: ScriptedUpstream, proxy: Proxy, arguments: Any, problem: str
) -> None:
    first = f"Let me look. {call(arguments)}"
    upstream.script(Reply(first), Reply(f"Sorry. {call(PARIS)}"))

    completion = proxy.chat(chat_body(WEATHER))

    assert completion.calls == [("get_weather", PARIS)]
    assert completion.content == "Sorry. "
    assert completion.finish_reason == "tool_calls"
    assert completion.usage == {key: 2 * value for key, value in USAGE.items()}
    sent, again = upstream.chat_requests
    assert again.json["messages"][:-2] == sent.json["messages"]
    assert again.json["messages"][-2:] == [
        {"role": "assistant", "content": first},
        {"role": "user", "content": correction_for(problem)},
    ]
    assert (invalid(proxy, "repaired"), invalid(proxy, "sent"), asked_again(proxy)) == (1, 0, 1)


def test_a_call_missing_a_required_property_is_repaired_in_every_protocol(
    upstream: ScriptedUpstream, protocol_proxy: Proxy, protocol: str
) -> None:
    upstream.script(Reply(call({"unit": "celsius"}, protocol)), Reply(call(PARIS, protocol)))

    completion = protocol_proxy.chat(chat_body(WEATHER))

    assert completion.calls == [("get_weather", PARIS)]
    correction = upstream.chat_requests[1].json["messages"][-1]["content"]
    assert correction == correction_for("'city' is a required property")


def test_a_repair_that_fails_again_sends_the_first_call_as_written(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply(call({"unit": "celsius"})), Reply(call({"unit": "fahrenheit"})))

    completion = proxy.chat(chat_body(WEATHER))

    assert completion.calls == [("get_weather", {"unit": "celsius"})]
    assert completion.usage == {key: 2 * value for key, value in USAGE.items()}
    assert len(upstream.chat_requests) == 2
    assert (invalid(proxy, "repaired"), invalid(proxy, "sent"), asked_again(proxy)) == (0, 1, 1)


def test_a_reply_to_the_correction_without_a_call_is_no_repair(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply(call({})), Reply("I cannot tell which city you mean."))

    completion = proxy.chat(chat_body(WEATHER))

    assert (completion.content, completion.calls) == ("", [("get_weather", {})])
    assert invalid(proxy, "sent") == 1


def test_a_streamed_call_is_sent_as_written_and_never_asked_for_again(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply("Let me look. ", call({"unit": "celsius"})))

    completion = proxy.chat(chat_body(WEATHER, stream=True))

    assert completion.calls == [("get_weather", {"unit": "celsius"})]
    assert len(upstream.chat_requests) == 1
    assert (invalid(proxy, "sent"), asked_again(proxy)) == (1, 0)


def test_call_repair_retries_zero_sends_the_call_as_written(
    upstream: ScriptedUpstream, start_proxy: StartProxy, stream: bool
) -> None:
    proxy = start_proxy(call_repair_retries=0)
    upstream.script(Reply(call({})))

    completion = proxy.chat(chat_body(WEATHER, stream=stream))

    assert completion.calls == [("get_weather", {})]
    assert len(upstream.chat_requests) == 1
    assert (invalid(proxy, "sent"), asked_again(proxy)) == (1, 0)


def test_a_route_can_turn_repairs_off(
    upstream: ScriptedUpstream, start_proxy: StartProxy, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text("[routes.careful]\n[routes.quick]\ncall_repair_retries = 0\n")
    proxy = start_proxy(routes_file=routes, call_repair_retries=1)
    upstream.script(Reply(call({})), Reply(call({})), Reply(call(PARIS)))

    quick = proxy.chat(chat_body(WEATHER, model="quick"))
    careful = proxy.chat(chat_body(WEATHER, model="careful"))

    assert (quick.calls, careful.calls) == ([("get_weather", {})], [("get_weather", PARIS)])
    assert len(upstream.chat_requests) == 3


def test_a_strict_tool_is_held_to_every_keyword_of_its_schema(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    """A city longer than `maxLength`: the tool's own business unless it is declared strict."""
    long_city = {"city": "Llanfairpwllgwyngyll"}
    upstream.script(Reply(call(long_city)), Reply(call(long_city)), Reply(call(PARIS)))

    loose = proxy.chat(chat_body(WEATHER))
    strict = proxy.chat(chat_body(STRICT_WEATHER))

    assert (loose.calls, strict.calls) == ([("get_weather", long_city)], [("get_weather", PARIS)])
    correction = upstream.chat_requests[2].json["messages"][-1]["content"]
    assert "city: 'Llanfairpwllgwyngyll' is too long" in correction


def test_unknown_properties_pass_where_the_schema_allows_them(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    arguments = {"city": "Paris", "country": "FR"}
    upstream.script(Reply(call(arguments)))

    completion = proxy.chat(chat_body(OPEN_WEATHER))

    assert completion.calls == [("get_weather", arguments)]
    assert invalid(proxy, "sent") + invalid(proxy, "repaired") == 0


def test_a_misnamed_argument_is_named_in_the_correction_where_the_schema_allows_unknown_ones(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply(call({"location": "Paris"})), Reply(call(PARIS)))

    completion = proxy.chat(chat_body(OPEN_WEATHER))

    assert completion.calls == [("get_weather", PARIS)]
    correction = upstream.chat_requests[1].json["messages"][-1]["content"]
    assert correction == correction_for(
        "'city' is a required property; get_weather has no parameter 'location'"
    )


def test_every_failed_call_is_named_in_one_correction(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    limit = {"query": {"type": "string"}, "limit": {"type": "integer"}}
    search = tool("search", {"type": "object", "properties": limit})
    failing = call({"unit": "kelvin"}) + call({"query": "news", "limit": "many"}, name="search")
    upstream.script(Reply(failing), Reply(call(PARIS) + call({"query": "news"}, name="search")))

    completion = proxy.chat(chat_body(WEATHER, search))

    assert completion.calls == [("get_weather", PARIS), ("search", {"query": "news"})]
    assert upstream.chat_requests[1].json["messages"][-1]["content"] == (
        "Error: these calls are not valid: get_weather: unit: 'kelvin' is not one of"
        " ['celsius', 'fahrenheit']; 'city' is a required property (its parameters: city, unit,"
        " days); search: limit: 'many' is not of type 'integer' (its parameters: query, limit)."
        " Write the reply again with the calls corrected."
    )


def test_a_correction_names_a_tools_parameters_once_and_the_first_calls(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    calls = MAX_NAMED_CALLS + 2
    upstream.script(Reply(call({"unit": "kelvin"}) * calls), Reply(call(PARIS)))

    proxy.chat(chat_body(WEATHER))

    problem = (
        "get_weather: unit: 'kelvin' is not one of ['celsius', 'fahrenheit'];"
        " 'city' is a required property"
    )
    assert upstream.chat_requests[1].json["messages"][-1]["content"] == (
        f"Error: these calls are not valid: {problem} (its parameters: city, unit, days); "
        + "; ".join([problem] * (MAX_NAMED_CALLS - 1))
        + " (and 2 more calls). Write the reply again with the calls corrected."
    )


def test_a_correction_past_its_bound_is_not_sent_and_the_reply_stands(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    """500 failed calls to a tool of 20,000 parameters: each call named every parameter in
    a 77 MB request; named once, they still pass MAX_CORRECTION_CHARS."""
    parameters = {f"parameter_{index}": {"type": "string"} for index in range(20_000)}
    big = tool("big", {"type": "object", "properties": parameters, "required": ["parameter_0"]})
    # Each call its own (identical calls would go out once: repeats).
    failed = [{"parameter_1": str(index)} for index in range(500)]
    upstream.script(Reply("".join(call(arguments, name="big") for arguments in failed)))

    completion = proxy.chat(chat_body(big))

    assert completion.calls == [("big", arguments) for arguments in failed]
    assert len(upstream.chat_requests) == 1
    assert (invalid(proxy, "sent"), asked_again(proxy)) == (500, 0)


def test_safe_coercions_come_first_and_need_no_repair(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    """A number written as a string is the number the schema declares."""
    upstream.script(Reply(call({"city": "Paris", "days": "3"})))

    completion = proxy.chat(chat_body(WEATHER))

    assert completion.calls == [("get_weather", {"city": "Paris", "days": 3})]
    assert len(upstream.chat_requests) == 1


def test_a_reply_too_long_to_send_back_is_sent_as_written(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    note = {"unit": "celsius", "note": "x" * MAX_ECHOED_REPLY_CHARS}
    upstream.script(Reply(call(note)))

    completion = proxy.chat(chat_body(OPEN_WEATHER))

    assert completion.calls == [("get_weather", note)]
    assert len(upstream.chat_requests) == 1
    assert (invalid(proxy, "sent"), asked_again(proxy)) == (1, 0)


def test_no_repair_is_asked_for_when_the_deadline_leaves_less_than_the_first_answer_took(
    upstream: ScriptedUpstream, start_proxy: StartProxy
) -> None:
    """One deadline per request: a first answer that took 2.5 s of 4 leaves too little."""
    proxy = start_proxy(upstream_total_timeout=4.0, call_repair_retries=1)
    slow = Late(Reply(call({})))
    upstream.script(slow)
    answers: list[Any] = []
    asking = threading.Thread(target=lambda: answers.append(proxy.chat(chat_body(WEATHER))))
    asking.start()
    assert slow.asked.wait(HUNG_AFTER_SECONDS)
    threading.Event().wait(2.5)  # the model thinking: an answer slow to come, not a wait
    slow.resume.set()
    asking.join()

    assert answers[0].calls == [("get_weather", {})]
    assert len(upstream.chat_requests) == 1
    assert invalid(proxy, "sent") == 1


def test_a_forced_call_that_fails_its_schema_is_asked_for_again(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    wrong = '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "kelvin"}}'
    upstream.script(Reply(wrong), Reply('{"name": "get_weather", "arguments": {"city": "Paris"}}'))

    completion = proxy.chat(chat_body(WEATHER, tool_choice="required", stream=stream))

    assert completion.calls == [("get_weather", PARIS)]
    reply, correction = upstream.chat_requests[1].json["messages"][-2:]
    assert reply == {"role": "assistant", "content": wrong}
    why = (
        "the arguments do not follow the schema of get_weather"
        " (unit: 'kelvin' is not one of ['celsius', 'fahrenheit'])"
    )
    assert correction["content"] == render_forced_call_correction(why, named=None)
    metrics = scrape(proxy.http)
    assert metrics.value("toolcall_proxy_forced_call_retries_total") == 0
    assert (invalid(proxy, "repaired"), asked_again(proxy)) == (1, 1)


def test_a_forced_call_whose_repair_fails_is_the_first_call_as_written(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(
        Reply('{"name": "get_weather", "arguments": {"unit": "celsius"}}'), Reply("No idea.")
    )

    completion = proxy.chat(chat_body(WEATHER, tool_choice="required"))

    assert completion.calls == [("get_weather", {"unit": "celsius"})]
    assert invalid(proxy, "sent") == 1
    assert scrape(proxy.http).value("toolcall_proxy_parse_failures_total") == 0


def test_only_the_call_sent_is_checked_when_one_call_is_allowed(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    upstream.script(Reply(call(PARIS), call({})))

    completion = proxy.chat(chat_body(WEATHER, parallel_tool_calls=False, stream=stream))

    assert completion.calls == [("get_weather", PARIS)]
    assert len(upstream.chat_requests) == 1
    assert invalid(proxy, "sent") == 0


def test_calls_to_undeclared_or_schemaless_tools_are_not_checked(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    upstream.script(Reply(call({"x": 1}, name="lookup"), call({"y": 2}, name="get_time")))

    completion = proxy.chat(chat_body(WEATHER, tool("get_time", {})))

    assert completion.calls == [("lookup", {"x": 1}), ("get_time", {"y": 2})]
    assert len(upstream.chat_requests) == 1


def test_a_forced_call_answered_with_prose_too_long_to_send_back_is_not_asked_again(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    """Asking again sends the reply back whole: past its bound, the reply stands."""
    prose = "It depends. " * (MAX_ECHOED_REPLY_CHARS // 12 + 1)
    upstream.script(Reply(prose))

    completion = proxy.chat(chat_body(WEATHER, tool_choice="required"))

    assert (completion.content, completion.calls) == (prose, [("get_weather", {})])
    assert len(upstream.chat_requests) == 1
    assert scrape(proxy.http).value("toolcall_proxy_forced_call_retries_total") == 0


def test_a_schema_reference_outside_the_request_is_never_fetched(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool, tmp_path: Path
) -> None:
    """A tool's `$ref` to a URL or a file: neither is read (jsonschema's default fetched the
    URL from the proxy's network and read the file from its disk, and a repair sent what it
    read upstream); the check treats the reference as permissive and the call goes out."""
    fetched: list[str] = []

    async def schema(request: Request) -> Response:
        fetched.append(request.url.path)
        return JSONResponse({"type": "integer"})

    on_disk = tmp_path / "city.json"
    on_disk.write_text('{"type": "integer", "description": "READ FROM THE PROXY HOST"}')
    with serve(Starlette(routes=[Route("/{path:path}", schema)])) as schema_host:
        referring = tool(
            "get_weather",
            {
                "type": "object",
                "properties": {
                    "city": {"$ref": f"{schema_host}/city.json"},
                    "unit": {"$ref": on_disk.as_uri()},
                },
            },
        )
        upstream.script(Reply(call({"city": "Paris", "unit": "celsius"})))

        completion = proxy.chat(chat_body(referring, stream=stream))

    assert completion.calls == [("get_weather", {"city": "Paris", "unit": "celsius"})]
    assert fetched == []
    assert len(upstream.chat_requests) == 1
    assert (invalid(proxy, "sent"), asked_again(proxy)) == (0, 0)


@pytest.mark.parametrize("keyword", ["$schema", "$id"])
def test_a_schema_the_check_cannot_read_lets_its_calls_go_as_written(
    upstream: ScriptedUpstream, proxy: Proxy, keyword: str
) -> None:
    """A `$schema` or `$id` that is not a string: the check cannot read the schema, and the
    tool judges its calls (building its check failed the request with a 500)."""
    unreadable = tool("get_weather", {**WEATHER_SCHEMA, keyword: 7})
    upstream.script(Reply(call({"unit": "kelvin"})))

    completion = proxy.chat(chat_body(unreadable))

    assert completion.calls == [("get_weather", {"unit": "kelvin"})]
    assert len(upstream.chat_requests) == 1
