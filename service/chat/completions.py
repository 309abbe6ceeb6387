"""One chat completion's life: decode the request, rewrite it for its upstream, then answer
by relaying (nothing to parse), parsing a stream, parsing a whole answer, or forcing one call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import Response

from protocols import Protocol, ToolSpec

from ..context import ProxyContext
from ..exchange import (
    FORCED_CHOICES,
    ChatRequest,
    ChoiceMode,
    content_text,
    needs_rewrite,
    parse_chat_request,
    rewrite_request,
)
from ..observability import (
    NO_PROTOCOL,
    CompletionObserver,
    ParserTrace,
    UpstreamFailure,
    request_record,
)
from ..settings import Settings
from ..upstream import (
    ClosingResponse,
    Target,
    UpstreamStream,
    call_fragments,
    checked_answer,
    relayed,
)
from ..wire import (
    EventStream,
    ProxyError,
    joined_when_ready,
    json_bytes,
    json_response,
    read_limited,
    while_connected,
)
from .chunks import MessageBuilder, finish_reason
from .forced_answer import ForcedCall, forced_call_completion, forced_call_events
from .parser_config import OutputParsing
from .stream import stream_completion

# Comment events keep idle intermediaries from closing the stream during a long prefill;
# clients ignore them.
KEEPALIVE_PING_SECONDS = 15
# The model name an answer carries when the upstream names none and the client named none.
UNNAMED_MODEL = "unknown"


async def create_completion(request: Request, context: ProxyContext) -> Response:
    """`POST /v1/chat/completions`."""
    raw = await read_limited(request, context.settings.max_request_bytes)
    chat = parse_chat_request(raw)
    record = request_record(request)
    model = chat.body.get("model")
    record.model, record.stream = (model if isinstance(model, str) else None), chat.stream
    target = context.router.target_for(model)
    exchange = ChatExchange(request, context, chat, target)
    if not needs_rewrite(chat):
        # Pure pass-through: the body as it came (unless a route renames the model), the
        # answer relayed byte for byte.
        as_sent = raw if target.model is None else json_bytes({**chat.body, "model": target.model})
        return await exchange.relay(as_sent)
    protocol = context.router.protocol_for(target)
    body = exchange.upstream_body(protocol)
    if not chat.tools or chat.choice is ChoiceMode.NONE:
        # The history's rewrite (or, to an upstream that calls tools itself, nothing) was
        # all there was to do.
        return await exchange.relay(json_bytes(body))
    return answer_response(await exchange.answered(protocol, body), context.settings)


def native_body(chat: ChatRequest, upstream_model: str | None) -> dict[str, Any]:
    """The body for an upstream that calls tools itself: as the client sent it, tools,
    `tool_choice` and `parallel_tool_calls` included (the model renamed by a route)."""
    return chat.body if upstream_model is None else {**chat.body, "model": upstream_model}


def parsed_completion(answer: dict[str, Any], parsing: OutputParsing) -> dict[str, Any]:
    """The upstream's completion (checked: `ChatExchange.answer`) with each choice's text
    parsed into content and calls; every other field (id, created, model, usage,
    system_fingerprint...) kept."""
    choices = []
    for choice in answer.get("choices") or ():
        message = choice.get("message") or {}
        mapper = parsing.mapper()
        builder = MessageBuilder()
        builder.add(mapper.deltas(parsing.parse_whole(content_text(message.get("content")))))
        if parsing.native:
            builder.add(mapper.native(call_fragments(message.get("tool_calls"), whole=True)))
        builder.add(mapper.rescued())
        reason = finish_reason(choice.get("finish_reason"), mapper)
        choices.append({**choice, "message": builder.message(message), "finish_reason": reason})
    parsing.observer.usage(answer.get("usage"))
    return {**answer, "choices": choices}


@dataclass(frozen=True, slots=True)
class ChatAnswer:
    """A chat completion the proxy made from the upstream's: whole, or as SSE event bytes
    (`stream_completion`'s) with the upstream stream they read from, if any."""

    trace: ParserTrace | None
    completion: dict[str, Any] | None = None
    events: EventStream | None = None
    upstream: UpstreamStream | None = None


class ChatExchange:
    """One chat request and its upstream target, answered one of three ways. Every wait on
    the upstream is abandoned if the client leaves."""

    def __init__(
        self,
        request: Request,
        context: ProxyContext,
        chat: ChatRequest,
        target: Target,
        *,
        held_whole: bool = False,
    ) -> None:
        """`held_whole`: the endpoint keeps the whole answer however it streams (a Responses
        stream ends with every item in `response.completed`), so a streamed answer is
        bounded as a whole one is, by UPSTREAM_MAX_BODY_BYTES."""
        self._request = request
        self._context = context
        self._chat = chat
        self._target = target
        self._url = target.chat_url
        self._held_whole = held_whole

    async def relay(self, body: bytes) -> Response:
        """Nothing to parse: the upstream's answer goes back byte for byte."""
        headers = self._context.headers_for(self._request, self._target, relay=True)
        opening = self._context.upstream.open_stream(
            "POST", self._url, headers=headers, content=body
        )
        stream = await while_connected(self._request.receive, opening)
        return relayed(stream, send_timeout=self._context.settings.server_send_timeout)

    def upstream_body(self, protocol: Protocol) -> dict[str, Any]:
        """The request the upstream gets: rewritten for a text-only one (tools in the
        prompt; a forced call asked for by schema where the route says it takes one), as
        sent for one that calls tools itself."""
        target = self._target
        if target.native_tools:
            return native_body(self._chat, target.model)
        return rewrite_request(
            self._chat, protocol, target.model, structured_output=target.structured_output
        )

    async def answered(self, protocol: Protocol, body: dict[str, Any]) -> ChatAnswer:
        """The answer to `body` (`upstream_body`'s): one forced call for an explicit
        `tool_choice` (an upstream that calls tools itself forces its own), else the
        model's output parsed."""
        if self._chat.choice in FORCED_CHOICES and not self._target.native_tools:
            return await self.forced_call(protocol, body)
        return await self.parsed(protocol, json_bytes(body))

    async def parsed(self, protocol: Protocol, body: bytes) -> ChatAnswer:
        """The model's text parsed into content and calls. With no tools offered (none
        declared, or `tool_choice: "none"`), for an endpoint that translates the answer,
        nothing is parsed, but the answer is checked and shaped all the same."""
        chat, settings = self._chat, self._context.settings
        tools = () if chat.choice is ChoiceMode.NONE else chat.tools
        observer, trace = self.observers(protocol, tools)
        parsing = OutputParsing.configured(
            settings,
            protocol,
            tools,
            single_call=chat.single_call,
            observer=observer,
            trace=trace,
            native=self._target.native_tools,
        )
        if not chat.stream:
            return ChatAnswer(trace, parsed_completion(await self.answer(body), parsing))
        stream = await self.open_stream(body)
        events = stream_completion(
            stream,
            parsing,
            n=chat.n,
            include_usage=chat.include_usage,
            fallback_model=self.model_name(),
        )
        return ChatAnswer(trace, events=events, upstream=stream)

    async def forced_call(self, protocol: Protocol, body: dict[str, Any]) -> ChatAnswer:
        """Tool-choice mode: whole upstream answers, asked again (FORCED_CALL_RETRIES) while
        they hold no call; exactly one call back, or the model's text (`ForcedCall`)."""
        chat = self._chat
        observer, trace = self.observers(protocol, chat.tools)
        forced = ForcedCall(chat, protocol, body, observer, trace)
        reply = forced.read(await self.answer(json_bytes(body)))
        for _ in range(self._context.settings.forced_call_retries):
            if reply.problem is None:
                break
            reply = forced.read(await self.answer(json_bytes(forced.asked_again())))
        answer, deltas, reason = forced.outcome()
        if not chat.stream:
            return ChatAnswer(trace, forced_call_completion(answer, deltas, reason))
        events = forced_call_events(
            answer,
            deltas,
            reason,
            include_usage=chat.include_usage,
            fallback_model=self.model_name(),
        )
        return ChatAnswer(trace, events=events)

    def observers(
        self, protocol: Protocol, tools: tuple[ToolSpec, ...]
    ) -> tuple[CompletionObserver, ParserTrace | None]:
        """Who hears about this completion: the metrics always, the debug trace if it is on.
        With no tools offered nothing is parsed: no protocol is named, nothing traced."""
        record = request_record(self._request)
        metrics, debug = self._context.metrics, self._context.debug
        if not tools:
            return CompletionObserver(NO_PROTOCOL, metrics, record), None
        trace = None if debug is None else debug.trace(record.request_id, protocol, tools)
        return CompletionObserver(protocol.name, metrics, record, trace), trace

    async def answer(self, body: bytes) -> dict[str, Any]:
        """The upstream's whole JSON answer, its choices checked (a bad one counted) before
        anything reads them."""
        headers = self._context.headers_for(self._request, self._target, relay=False)
        asking = self._context.upstream.request_json(
            "POST", self._url, headers=headers, content=body
        )
        answer = await while_connected(self._request.receive, asking)
        try:
            return checked_answer(answer, self._chat.n, calls=self._target.native_tools)
        except ProxyError:
            self._context.metrics.upstream_errors.labels(UpstreamFailure.BAD_RESPONSE).inc()
            raise

    async def open_stream(self, body: bytes) -> UpstreamStream:
        """The upstream's streamed answer, its status already 2xx; the caller closes it."""
        headers = self._context.headers_for(self._request, self._target, relay=False)
        opening = self._context.upstream.open_stream(
            "POST", self._url, headers=headers, content=body, held_whole=self._held_whole
        )
        return await while_connected(self._request.receive, opening)

    def model_name(self) -> str:
        """The model an answer names when the upstream's chunks name none."""
        model = self._chat.body.get("model")
        return model if isinstance(model, str) and model else UNNAMED_MODEL


def answer_response(answer: ChatAnswer, settings: Settings) -> Response:
    """The chat answer as the client's JSON or event-stream response."""
    if answer.events is None:
        return traced_json_response(answer.completion or {}, answer.trace)
    return traced_event_response(answer.events, answer.trace, answer.upstream, settings)


def traced_json_response(answer: dict[str, Any], trace: ParserTrace | None) -> Response:
    if trace is not None:
        trace.client_answer(answer)
    return json_response(answer)


def traced_event_response(
    events: EventStream,
    trace: ParserTrace | None,
    upstream: UpstreamStream | None,
    settings: Settings,
) -> Response:
    """An event stream; `upstream`, if any, owned by the response: closed however it ends,
    even if the client left before the first event was pulled."""
    if trace is not None:
        events = trace.client_events(events)
    # At shutdown sse-starlette would end the stream at once; it gets DRAIN_TIMEOUT to finish,
    # as uvicorn gives the whole server (`timeout_graceful_shutdown`).
    response = EventSourceResponse(
        joined_when_ready(events),
        ping=KEEPALIVE_PING_SECONDS,
        sep="\n",
        shutdown_grace_period=settings.drain_timeout,
    )
    if upstream is None:
        return response
    return ClosingResponse(response, upstream, send_timeout=settings.server_send_timeout)
