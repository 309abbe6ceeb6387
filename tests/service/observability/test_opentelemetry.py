"""OpenTelemetry, as an operator's collector sees it: the proxy, configured by OTEL_* alone,
exports to a real OTLP/HTTP receiver on loopback, whose protobuf bytes are decoded with
OpenTelemetry's own definitions. Every front door, streamed and whole, answers with one
server span continuing the client's trace, and one GenAI client span per upstream request,
whose context the upstream receives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any

import httpx
import openai
import pytest
from gemini_client import TOOLS as GEMINI_TOOLS
from gemini_client import generate
from messages_client import WEATHER, anthropic_client, message_params
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from otlp_receiver import CLIENT, ERROR, SERVER, OtlpReceiver, Span
from responses_client import WEATHER_FUNCTION
from servers import MODEL, WEATHER_TOOL, Proxy, chat_body, read_events, serve
from upstream_server import (
    UPSTREAM_ID,
    USAGE,
    WEATHER_CALL,
    Fail,
    Hang,
    Reply,
    ScriptedUpstream,
    rendered_calls,
)
from waits import HUNG_AFTER_SECONDS

from service.observability.otel.content import MAX_CAPTURED_CHARS
from service.observability.otel.setup import OpenTelemetry

CLIENT_TIMEOUT_SECONDS = 10.0
# The client's own span, in the W3C header it sends.
CLIENT_TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CLIENT_TRACE_ID}-{CLIENT_SPAN_ID}-01"
CLIENT_KEY = "sk-client-secret-never-exported"
UPSTREAM_KEY = "sk-upstream-secret-never-exported"
FORCED_CALL = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
WEB_SEARCH = {"type": "web_search"}
DOORS = {
    "chat": "POST /v1/chat/completions",
    "responses": "POST /v1/responses",
    "messages": "POST /v1/messages",
    "gemini": "POST /v1beta/models/{target:path}",
}
# What tracing brings in beyond the OpenTelemetry API.
SDK_MODULES = ("opentelemetry.sdk", "opentelemetry.exporter", "grpc", "google.protobuf", "requests")
TracedProxy = Callable[..., AbstractContextManager[Proxy]]


@pytest.fixture
def receiver() -> Iterator[tuple[OtlpReceiver, str]]:
    receiver = OtlpReceiver()
    with serve(receiver.app) as url:
        yield receiver, url


@pytest.fixture
def traced_proxy(
    receiver: tuple[OtlpReceiver, str], upstream_url: str, monkeypatch: pytest.MonkeyPatch
) -> TracedProxy:
    """`with traced_proxy(**settings, env={...}) as proxy:` a proxy exporting to the receiver,
    configured by OTEL_* (and `env`) alone; on leaving the block it has stopped, and its
    providers have sent all they held."""
    from service.app import create_app
    from service.settings import Settings

    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver[1])
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "10")  # ms: spans go out as they end

    @contextmanager
    def traced(env: dict[str, str] | None = None, **settings: Any) -> Iterator[Proxy]:
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        app = create_app(Settings(**{"upstream_base_url": upstream_url, **settings}))
        with ExitStack() as stack:
            url = stack.enter_context(serve(app))
            headers = {"traceparent": TRACEPARENT, "authorization": f"Bearer {CLIENT_KEY}"}
            http = stack.enter_context(
                httpx.Client(base_url=url, timeout=CLIENT_TIMEOUT_SECONDS, headers=headers)
            )
            client = stack.enter_context(
                openai.OpenAI(
                    base_url=url + "/v1",
                    api_key=CLIENT_KEY,
                    max_retries=0,
                    timeout=CLIENT_TIMEOUT_SECONDS,
                    default_headers={"traceparent": TRACEPARENT},
                )
            )
            yield Proxy(url, client, http)

    return traced


def call_door(proxy: Proxy, door: str, stream: bool) -> None:
    """Ask for the weather through `door` with its official client, the tool declared."""
    if door == "chat":
        proxy.chat(chat_body(WEATHER_TOOL, stream=stream))
    elif door == "responses":
        params = {"model": MODEL, "input": "Weather in Paris?", "tools": [WEATHER_FUNCTION]}
        if stream:
            with proxy.client.responses.create(stream=True, **params) as events:
                list(events)
        else:
            proxy.client.responses.create(**params)
    elif door == "gemini":
        generate(proxy, stream, tools=GEMINI_TOOLS, headers={"traceparent": TRACEPARENT})
    else:
        with anthropic_client(proxy) as client:
            params = message_params(tools=[WEATHER])
            extra = {"extra_headers": {"traceparent": TRACEPARENT}}
            if stream:
                with client.messages.stream(**params, **extra) as events:
                    list(events)
            else:
                client.messages.create(**params, **extra)


def server_span(receiver: OtlpReceiver) -> Span:
    receiver.wait_for(lambda: receiver.of_kind(SERVER))
    [span] = receiver.of_kind(SERVER)
    return span


@pytest.mark.parametrize("door", list(DOORS))
def test_every_front_door_makes_a_server_span_and_a_genai_client_span_joined_upstream(
    upstream: ScriptedUpstream,
    traced_proxy: TracedProxy,
    receiver: tuple[OtlpReceiver, str],
    door: str,
    stream: bool,
) -> None:
    received, _url = receiver
    upstream.script(Reply("Let me check. ", WEATHER_CALL["json-mix"]))

    with traced_proxy() as proxy:
        call_door(proxy, door, stream)
        served = server_span(received)

    assert served.name == DOORS[door]
    assert served.trace_id == CLIENT_TRACE_ID and served.parent_span_id == CLIENT_SPAN_ID
    assert served.attributes["http.response.status_code"] == 200
    assert served.attributes["toolcall_proxy.route"] == door
    assert served.attributes["toolcall_proxy.protocol"] == "json-mix"
    assert served.attributes["toolcall_proxy.calls.parsed"] == 1
    assert served.attributes["gen_ai.request.model"] == MODEL
    assert served.attributes["gen_ai.operation.name"] == "chat"
    assert served.resource["service.name"] == "toolcall-proxy"
    assert [event.attributes for event in served.events_named("toolcall_proxy.tool_call")] == [
        {"gen_ai.tool.name": "get_weather"}
    ]
    [asked] = received.children_of(served)
    assert asked.kind == CLIENT and asked.name == f"chat {MODEL}"
    assert asked.trace_id == CLIENT_TRACE_ID
    attributes = asked.attributes
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == MODEL
    assert attributes["gen_ai.request.stream"] is stream
    assert attributes["gen_ai.response.model"] == MODEL
    assert attributes["gen_ai.response.id"] == UPSTREAM_ID
    assert attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert attributes["http.response.status_code"] == 200
    assert ("gen_ai.response.time_to_first_chunk" in attributes) is stream
    if "gen_ai.usage.input_tokens" in attributes or not stream:
        assert attributes["gen_ai.usage.input_tokens"] == USAGE["prompt_tokens"]
        assert attributes["gen_ai.usage.output_tokens"] == USAGE["completion_tokens"]
    # The model server continues the trace from the proxy's client span.
    [sent] = upstream.chat_requests
    assert sent.headers["traceparent"] == f"00-{CLIENT_TRACE_ID}-{asked.span_id}-01"


def test_probes_and_the_metrics_scrape_make_no_span(
    traced_proxy: TracedProxy, receiver: tuple[OtlpReceiver, str]
) -> None:
    received, _url = receiver
    with traced_proxy() as proxy:
        for path in ("/healthz", "/readyz", "/metrics", "/v1/models"):
            assert proxy.http.get(path).status_code == 200
        received.wait_for(lambda: received.of_kind(SERVER))

    assert [span.name for span in received.of_kind(SERVER)] == ["GET /v1/models"]
    [models] = received.of_kind(SERVER)
    [listed] = received.children_of(models)
    assert listed.name == "GET" and "gen_ai.operation.name" not in listed.attributes


def test_fastapis_own_telemetry_adds_no_second_server_span(
    traced_proxy: TracedProxy, receiver: tuple[OtlpReceiver, str]
) -> None:
    """FastAPI 0.165 makes server spans of its own when global providers are set, and sets
    them itself from OTEL_* with FASTAPI_OTEL_AUTO_CONFIGURE: the proxy turns that off, its
    own spans carrying what FastAPI's would and more."""
    received, _url = receiver
    with traced_proxy(env={"FASTAPI_OTEL_AUTO_CONFIGURE": "true"}) as proxy:
        assert proxy.http.get("/v1/models").status_code == 200
        received.wait_for(lambda: received.of_kind(SERVER))

    assert [span.name for span in received.of_kind(SERVER)] == ["GET /v1/models"]


def upstream_events(proxy: Proxy, body: dict[str, Any]) -> list[Any]:
    with proxy.http.stream("POST", "/v1/chat/completions", json=body) as response:
        return list(read_events(response.iter_lines()))


@pytest.mark.parametrize(
    "env",
    [{}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_SDK_DISABLED": "true"}],
    ids=["unset", "disabled"],
)
def test_off_the_proxy_imports_nothing_of_opentelemetry(env: dict[str, str]) -> None:
    """Off costs nothing: not even the import of the SDK, its exporters or their transports
    (the app is built as a worker builds it). The API alone FastAPI imports itself."""
    code = (
        "import sys\n"
        "from service.app import create_app\n"
        "from service.settings import Settings\n"
        "create_app(Settings(upstream_base_url='http://127.0.0.1:9/v1'))\n"
        f"print(sorted(m for m in sys.modules if m.startswith({SDK_MODULES!r})))\n"
    )
    clean = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
    ran = subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    assert ran.stdout.strip() == "[]"


ENDPOINT = "http://collector:4318"


@pytest.mark.parametrize(
    ("env", "traces", "metrics"),
    [
        ({}, False, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT}, True, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ENDPOINT + "/v1/traces"}, True, False),
        ({"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": ENDPOINT + "/v1/metrics"}, False, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT, "OTEL_SDK_DISABLED": "TRUE"}, False, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT, "OTEL_SDK_DISABLED": "false"}, True, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT, "OTEL_METRICS_EXPORTER": "none"}, True, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT, "OTEL_TRACES_EXPORTER": "none"}, False, True),
    ],
)
def test_signals_are_on_as_the_standard_variables_say(
    env: dict[str, str], traces: bool, metrics: bool
) -> None:
    from service.observability import otel

    wanted = otel.signals(env)

    assert (wanted.traces, wanted.metrics) == (traces, metrics)


def test_an_otlp_protocol_without_an_exporter_here_is_a_configuration_error() -> None:
    from service.observability import otel

    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
    with pytest.raises(otel.OpenTelemetryConfigError, match="http/protobuf, grpc"):
        otel.signals(env)
    grpc = {**env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}
    assert otel.signals({**grpc, "OTEL_METRICS_EXPORTER": "none"}).traces_protocol == "grpc"


def all_values(receiver: OtlpReceiver) -> str:
    """Every span's name, attributes and events, as one text to search."""
    return "\n".join(
        f"{span.name} {span.attributes} {span.events} {span.resource}" for span in receiver.spans
    )


def test_a_forced_call_asked_again_is_a_second_client_span_and_the_story_says_so(
    upstream: ScriptedUpstream, traced_proxy: TracedProxy, receiver: tuple[OtlpReceiver, str]
) -> None:
    received, _url = receiver
    upstream.script(Reply("It is sunny in Paris."), Reply(FORCED_CALL))

    with traced_proxy() as proxy:
        proxy.chat(chat_body(WEATHER_TOOL, tool_choice="required"))
        served = server_span(received)

    first, again = received.children_of(served)
    assert [first.name, again.name] == [f"chat {MODEL}", f"chat {MODEL}"]
    attempts = [span.attributes["toolcall_proxy.upstream.attempt"] for span in (first, again)]
    assert attempts == [1, 2]
    assert served.attributes["toolcall_proxy.forced_call.asked_again"] == 1
    assert served.attributes["toolcall_proxy.upstream.requests"] == 2
    assert len(served.events_named("toolcall_proxy.forced_call_asked_again")) == 1
    assert served.attributes["toolcall_proxy.calls.parsed"] == 1
    # Both answers' tokens, as the client's usage sums them.
    assert served.attributes["gen_ai.usage.input_tokens"] == 2 * USAGE["prompt_tokens"]


def test_parse_errors_rescued_calls_and_hosted_tools_are_the_proxys_story(
    upstream: ScriptedUpstream, traced_proxy: TracedProxy, receiver: tuple[OtlpReceiver, str]
) -> None:
    received, _url = receiver
    upstream.script(
        Reply("<tool_call>not json</tool_call>"),
        Reply(WEATHER_CALL["json-mix"]),
    )
    body = {"model": MODEL, "input": "Weather?", "tools": [WEATHER_FUNCTION, WEB_SEARCH]}

    with traced_proxy() as proxy:
        proxy.chat(chat_body(WEATHER_TOOL))
        assert proxy.http.post("/v1/responses", json=body).status_code == 200
        received.wait_for(lambda: len(received.of_kind(SERVER)) == 2)

    chat, responses = sorted(received.of_kind(SERVER), key=lambda span: span.start_ns)
    assert chat.attributes["toolcall_proxy.parse_errors"] == 1
    assert chat.attributes["toolcall_proxy.parse_error.kinds"] == ["malformed_json"]
    [error] = chat.events_named("toolcall_proxy.parse_error")
    assert error.attributes == {"toolcall_proxy.parse_error.kind": "malformed_json"}
    assert responses.attributes["toolcall_proxy.hosted_tools.dropped"] == ["web_search"]
    assert len(responses.events_named("toolcall_proxy.hosted_tools_dropped")) == 1


def test_a_call_made_under_the_name_its_spelling_means_is_a_repair_and_a_second_a_drop(
    upstream: ScriptedUpstream, traced_proxy: TracedProxy, receiver: tuple[OtlpReceiver, str]
) -> None:
    received, _url = receiver
    misspelt = '<tool_call>{"name": "Get-Weather", "arguments": {"city": "Paris"}}</tool_call>'
    upstream.script(Reply(misspelt, WEATHER_CALL["json-mix"]))

    with traced_proxy() as proxy:
        proxy.chat(chat_body(WEATHER_TOOL, parallel_tool_calls=False))
        served = server_span(received)

    assert served.attributes["toolcall_proxy.calls.parsed"] == 1
    assert served.attributes["toolcall_proxy.calls.repaired"] == 1
    assert served.attributes["toolcall_proxy.parse_error.kinds"] == ["tool_name_spelling"]
    assert served.attributes["toolcall_proxy.calls.dropped"] == 1
    [dropped] = served.events_named("toolcall_proxy.call_dropped")
    assert dropped.attributes == {"gen_ai.tool.name": "get_weather"}


def test_a_call_rescued_from_a_native_upstreams_text_is_counted(
    upstream: ScriptedUpstream, traced_proxy: TracedProxy, receiver: tuple[OtlpReceiver, str]
) -> None:
    received, _url = receiver
    upstream.script(Reply(WEATHER_CALL["json-mix"]))

    with traced_proxy(upstream_native_tools=True) as proxy:
        proxy.chat(chat_body(WEATHER_TOOL))
        served = server_span(received)

    assert served.attributes["toolcall_proxy.calls.rescued"] == 1
    [rescued] = served.events_named("toolcall_proxy.call_rescued")
    assert rescued.attributes == {"gen_ai.tool.name": "get_weather"}


def test_a_call_that_fails_its_schema_is_repaired_by_asking_again_or_sent_as_written(
    upstream: ScriptedUpstream,
    traced_proxy: TracedProxy,
    receiver: tuple[OtlpReceiver, str],
    stream: bool,
) -> None:
    """Whole: asked again (a second client span) and repaired. Streamed: it went out as it
    ended, and is recorded as sent."""
    received, _url = receiver
    upstream.script(
        Reply(rendered_calls("get_weather", {})["json-mix"]), Reply(WEATHER_CALL["json-mix"])
    )

    with traced_proxy(call_repair_retries=1) as proxy:
        proxy.chat(chat_body(WEATHER_TOOL, stream=stream))
        served = server_span(received)

    counted = {
        name: served.attributes.get(f"toolcall_proxy.calls.{name}")
        for name in ("repaired", "invalid", "asked_again")
    }
    event = "toolcall_proxy.call_invalid" if stream else "toolcall_proxy.call_repaired"
    [checked] = served.events_named(event)
    assert checked.attributes == {"gen_ai.tool.name": "get_weather"}  # no model text
    if stream:
        assert counted == {"repaired": None, "invalid": 1, "asked_again": None}
        assert len(received.children_of(served)) == 1
    else:
        assert counted == {"repaired": 1, "invalid": None, "asked_again": 1}
        assert len(served.events_named("toolcall_proxy.calls_asked_again")) == 1
        _first, again = sorted(received.children_of(served), key=lambda span: span.start_ns)
        assert again.attributes["toolcall_proxy.upstream.attempt"] == 2


@pytest.mark.parametrize("capture", [False, True], ids=["default", "capture"])
def test_message_content_only_when_asked_and_keys_never(
    upstream: ScriptedUpstream,
    traced_proxy: TracedProxy,
    receiver: tuple[OtlpReceiver, str],
    capture: bool,
    stream: bool,
) -> None:
    received, _url = receiver
    upstream.script(Reply("Sunny. ", "<tool_call>not json</tool_call>"))
    env = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"} if capture else {}

    with traced_proxy(env=env, upstream_api_key=UPSTREAM_KEY) as proxy:
        proxy.chat(chat_body(WEATHER_TOOL, stream=stream))
        served = server_span(received)

    [asked] = received.children_of(served)
    exported = all_values(received)
    assert CLIENT_KEY not in exported and UPSTREAM_KEY not in exported
    assert ("What is the weather in Paris?" in exported) is capture
    assert ("not json" in exported) is capture
    if capture:
        sent = json.loads(asked.attributes["gen_ai.input.messages"])
        assert [message["role"] for message in sent] == ["system", "user"]
        assert sent[1]["parts"] == [{"type": "text", "content": "What is the weather in Paris?"}]
        assert json.loads(asked.attributes["gen_ai.output.messages"]) == [
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": "Sunny. <tool_call>not json</tool_call>"}],
                "finish_reason": "stop",
            }
        ]
        [error] = served.events_named("toolcall_proxy.parse_error")
        assert error.attributes["toolcall_proxy.parse_error.original"] == (
            "<tool_call>not json</tool_call>"
        )


def test_captured_content_is_bounded_on_each_side_of_a_span(
    upstream: ScriptedUpstream,
    traced_proxy: TracedProxy,
    receiver: tuple[OtlpReceiver, str],
    stream: bool,
) -> None:
    """A span is held until it is exported: a long conversation and a long answer carry
    their first MAX_CAPTURED_CHARS of text each, the rest left out."""
    received, _url = receiver
    sentence = "All work and no play makes a dull answer. "
    upstream.script(Reply(*[sentence * 100] * 40))  # 168 KB, in 40 pieces
    long_question = {"role": "user", "content": sentence * 4000}
    env = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}

    with traced_proxy(env=env) as proxy:
        proxy.chat(chat_body(WEATHER_TOOL, stream=stream, messages=[long_question]))
        served = server_span(received)

    [asked] = received.children_of(served)
    sent = json.loads(asked.attributes["gen_ai.input.messages"])
    answered = json.loads(asked.attributes["gen_ai.output.messages"])
    sent_text = "".join(part.get("content", "") for message in sent for part in message["parts"])
    [answer] = answered
    assert len(sent_text) == MAX_CAPTURED_CHARS
    assert answer["parts"] == [{"type": "text", "content": (sentence * 4000)[:MAX_CAPTURED_CHARS]}]


def test_a_client_that_leaves_mid_stream_ends_both_spans_abandoned(
    upstream: ScriptedUpstream, traced_proxy: TracedProxy, receiver: tuple[OtlpReceiver, str]
) -> None:
    received, _url = receiver
    upstream.script(Hang("Let me"))

    with traced_proxy() as proxy:
        body = chat_body(WEATHER_TOOL, stream=True)
        with proxy.http.stream("POST", "/v1/chat/completions", json=body) as response:
            next(response.iter_lines())  # the stream has begun; then the client hangs up
        assert upstream.client_gone.wait(CLIENT_TIMEOUT_SECONDS)
        served = server_span(received)

    assert served.attributes["toolcall_proxy.client_disconnected"] is True
    assert served.status != ERROR
    [asked] = received.children_of(served)
    assert asked.attributes["toolcall_proxy.upstream.abandoned"] is True
    assert asked.status != ERROR and "error.type" not in asked.attributes


@pytest.mark.parametrize("failure", ["status", "unreachable"])
def test_an_upstream_that_fails_is_an_error_on_both_spans(
    upstream: ScriptedUpstream,
    traced_proxy: TracedProxy,
    receiver: tuple[OtlpReceiver, str],
    unreachable_url: str,
    failure: str,
    stream: bool,
) -> None:
    received, _url = receiver
    upstream.script(Fail(503))
    settings = {"upstream_base_url": unreachable_url} if failure == "unreachable" else {}

    with traced_proxy(**settings) as proxy:
        answered = proxy.http.post(
            "/v1/chat/completions", json=chat_body(WEATHER_TOOL, stream=stream)
        )
        served = server_span(received)

    assert served.status == ERROR
    assert served.attributes["http.response.status_code"] == answered.status_code >= 500
    assert served.attributes["error.type"] == str(answered.status_code)
    [asked] = received.children_of(served)
    assert asked.status == ERROR
    expected = "503" if failure == "status" else "httpx.ConnectError"
    assert asked.attributes["error.type"] == expected


def test_genai_client_metrics_are_exported_beside_prometheus(
    upstream: ScriptedUpstream, traced_proxy: TracedProxy, receiver: tuple[OtlpReceiver, str]
) -> None:
    received, _url = receiver
    upstream.script(Reply("Sunny."))

    with traced_proxy() as proxy:
        proxy.chat(chat_body(WEATHER_TOOL))
        server_span(received)
        assert "toolcall_proxy_requests_total" in proxy.http.get("/metrics").text
    # Stopped: the last metrics were sent on the way out.

    [duration] = received.points_of("gen_ai.client.operation.duration")
    assert duration.unit == "s" and duration.count == 1
    assert duration.attributes["gen_ai.operation.name"] == "chat"
    assert duration.attributes["gen_ai.provider.name"] == "openai"
    assert duration.attributes["gen_ai.request.model"] == MODEL
    assert duration.attributes["gen_ai.response.model"] == MODEL
    tokens = {
        point.attributes["gen_ai.token.type"]: point.sum
        for point in received.points_of("gen_ai.client.token.usage")
    }
    assert tokens == {"input": USAGE["prompt_tokens"], "output": USAGE["completion_tokens"]}


def test_over_grpc_when_the_protocol_says_so(
    upstream: ScriptedUpstream, traced_proxy: TracedProxy
) -> None:
    received = OtlpReceiver()
    upstream.script(Reply("Sunny."))

    with received.grpc_served() as url:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
        with traced_proxy(env=env) as proxy:
            proxy.chat(chat_body(WEATHER_TOOL))
            served = server_span(received)

    [asked] = received.children_of(served)
    assert asked.attributes["gen_ai.response.id"] == UPSTREAM_ID
    assert received.points_of("gen_ai.client.operation.duration")


def test_the_sampler_is_read_from_the_environment_and_the_context_still_goes_upstream(
    upstream: ScriptedUpstream, traced_proxy: TracedProxy, receiver: tuple[OtlpReceiver, str]
) -> None:
    received, _url = receiver
    upstream.script(Reply("Sunny."))

    with traced_proxy(env={"OTEL_TRACES_SAMPLER": "always_off"}) as proxy:
        proxy.chat(chat_body(WEATHER_TOOL))

    assert received.spans == []
    [sent] = upstream.chat_requests
    version, trace_id, _span_id, flags = sent.headers["traceparent"].split("-")
    assert (version, trace_id, flags) == ("00", CLIENT_TRACE_ID, "00")


def test_the_command_refuses_an_otlp_protocol_it_has_no_exporter_for() -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
    env |= {"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}

    result = subprocess.run(
        [sys.executable, "-m", "service"],
        env=env,
        capture_output=True,
        text=True,
        timeout=HUNG_AFTER_SECONDS,
    )

    assert result.returncode == 2
    assert "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL='http/json': not an OTLP protocol" in result.stderr


class StalledExporter(SpanExporter):
    """A collector that takes an export and never answers, until the test lets it go."""

    def __init__(self) -> None:
        self.exporting = threading.Event()
        self.released = threading.Event()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.exporting.set()
        self.released.wait(HUNG_AFTER_SECONDS)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def test_stopping_gives_a_stalled_collector_only_its_bound() -> None:
    """The app stops with a span still to export and the collector stalled: the shutdown
    returns while the export still waits (it is dropped), the process free to exit."""
    exporter = StalledExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    telemetry = OpenTelemetry(provider, None, capture_content=False)
    provider.get_tracer("test").start_span("last").end()

    try:
        telemetry.shutdown(within=0.1)
        assert exporter.exporting.is_set() and not exporter.released.is_set()
    finally:
        exporter.released.set()
