"""One chat exchange with the upstream, whichever front door it serves: the request's route
chosen and its body rewritten, then the answer, as the engine's events, from a parsed stream,
a parsed whole answer, or one forced call; or, with nothing to parse, relayed byte for byte."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import Response

from protocols import Protocol, ToolSpec

from ..context import ProxyContext
from ..observability import (
    NO_PROTOCOL,
    CompletionObserver,
    ParserTrace,
    UpstreamFailure,
    request_record,
)
from ..upstream import UpstreamStream, checked_answer, relayed
from ..wire import ProxyError, json_bytes, while_connected
from .events import Event
from .forced import ForcedCall, forced_events
from .hosted_tools import count_dropped_tools
from .parsing import OutputParsing
from .request import ChatRequest, ChoiceMode
from .rewrite import FORCED_CHOICES, rewrite_request
from .stream import Events, stream_events
from .whole import whole_events

# The model name an answer carries when the upstream names none and the client named none.
UNNAMED_MODEL = "unknown"


@dataclass(frozen=True, slots=True)
class Answer:
    """The engine's answer to one exchange: its events, all known (a whole answer, or one
    forced call), or as the upstream streams them (a list per chunk, read from `upstream`,
    which whoever sends the answer closes); and whether the client asked for a stream."""

    events: list[Event] | Events
    stream: bool
    trace: ParserTrace | None = None
    upstream: UpstreamStream | None = None


class ChatExchange:
    """One chat request and its upstream target. Every wait on the upstream is abandoned if
    the client leaves.

    >>> exchange = ChatExchange(request, context, chat)
    >>> answer = await exchange.answered()  # its events, for the front door's writer
    """

    def __init__(
        self,
        request: Request,
        context: ProxyContext,
        chat: ChatRequest,
        *,
        dropped: tuple[str, ...] = (),
        held_whole: bool = False,
    ) -> None:
        """The request's record told its model and stream, the hosted tools its front door
        left out (`dropped`) counted, its route chosen. `held_whole`: the front door keeps
        the whole answer however it streams (a Responses stream ends with every item in
        `response.completed`), so a streamed answer is bounded as a whole one is, by
        UPSTREAM_MAX_BODY_BYTES."""
        record = request_record(request)
        count_dropped_tools(context, record, dropped)
        model = chat.body.get("model")
        record.model, record.stream = (model if isinstance(model, str) else None), chat.stream
        self._request = request
        self._context = context
        self.chat = chat
        self._target = context.router.target_for(model)
        self._url = self._target.chat_url
        self._held_whole = held_whole

    @cached_property
    def protocol(self) -> Protocol:
        """The protocol of the request's route."""
        return self._context.router.protocol_for(self._target)

    @cached_property
    def upstream_body(self) -> dict[str, Any]:
        """The request the upstream gets: rewritten for a text-only one (tools in the
        prompt; a forced call asked for by schema where the route says it takes one), as
        sent for one that calls tools itself (the model renamed by a route)."""
        target, chat = self._target, self.chat
        if target.native_tools:  # the tools and `tool_choice` included
            return chat.body if target.model is None else {**chat.body, "model": target.model}
        return rewrite_request(
            chat, self.protocol, target.model, structured_output=target.structured_output
        )

    @property
    def upstream_model(self) -> str | None:
        """The model name the request's route sends it upstream under (None: its own)."""
        return self._target.model

    async def relayed(self, body: bytes) -> Response:
        """Nothing to parse: `body` goes upstream, the answer comes back byte for byte."""
        headers = self._context.headers_for(self._request, self._target, relay=True)
        opening = self._context.upstream.open_stream(
            "POST", self._url, headers=headers, content=body
        )
        stream = await while_connected(self._request.receive, opening)
        return relayed(stream, send_timeout=self._context.settings.server_send_timeout)

    async def answered(self) -> Answer:
        """The answer to `upstream_body`: one forced call for an explicit `tool_choice` (an
        upstream that calls tools itself forces its own), else the model's output parsed."""
        if self.chat.choice in FORCED_CHOICES and not self._target.native_tools:
            return await self._forced_call()
        return await self._parsed()

    async def _parsed(self) -> Answer:
        """The model's text parsed into content and calls. With no tools offered (none
        declared, or `tool_choice: "none"`), nothing is parsed, but the answer is checked
        and shaped all the same."""
        chat, settings = self.chat, self._context.settings
        tools = () if chat.choice is ChoiceMode.NONE else chat.tools
        observer, trace = self._observers(tools)
        parsing = OutputParsing.configured(
            self._context.parser_options,
            self.protocol,
            tools,
            think_as_reasoning=settings.think_as_reasoning,
            single_call=chat.single_call,
            observer=observer,
            trace=trace,
            native=self._target.native_tools,
        )
        body = json_bytes(self.upstream_body)
        if not chat.stream:
            return Answer(whole_events(await self._answer(body), parsing), False, trace)
        stream = await self._open_stream(body)
        return Answer(stream_events(stream, parsing, n=chat.n), True, trace, stream)

    async def _forced_call(self) -> Answer:
        """Tool-choice mode: whole upstream answers, asked again (FORCED_CALL_RETRIES) while
        they hold no call and may be (`ForcedCall.may_ask_again`); exactly one call back, or
        the model's text. The exchange has one deadline, UPSTREAM_TOTAL_TIMEOUT from its
        start, whatever it asks: a reply is asked for again only while as much time is left
        as the last one took, and a retry that fails or runs out leaves the answer to the
        replies before it (one request took 16.4 s of a 5 s timeout, each try a deadline)."""
        chat, body = self.chat, self.upstream_body
        observer, trace = self._observers(chat.tools)
        forced = ForcedCall(chat, self.protocol, body, observer, trace)
        asked_at = anyio.current_time()
        deadline = asked_at + self._context.settings.upstream_total_timeout
        forced.read(await self._answer(json_bytes(body), deadline))
        for _ in range(self._context.settings.forced_call_retries):
            now = anyio.current_time()
            if not forced.may_ask_again() or deadline - now < now - asked_at:
                break
            asked_at = now
            try:
                again = await self._answer(json_bytes(forced.asked_again()), deadline)
            except ProxyError:
                break  # already counted and logged as the upstream's failure
            forced.read(again)
        answer, deltas, reason = forced.outcome()
        events = forced_events(answer, deltas, reason, whole=not chat.stream)
        return Answer(events, chat.stream, trace)

    def _observers(
        self, tools: tuple[ToolSpec, ...]
    ) -> tuple[CompletionObserver, ParserTrace | None]:
        """Who hears about this completion: the metrics always, the debug trace if it is on.
        With no tools offered nothing is parsed: no protocol is named, nothing traced."""
        record = request_record(self._request)
        metrics, debug = self._context.metrics, self._context.debug
        if not tools:
            return CompletionObserver(NO_PROTOCOL, metrics, record), None
        protocol = self.protocol
        trace = None if debug is None else debug.trace(record.request_id, protocol, tools)
        return CompletionObserver(protocol.name, metrics, record, trace), trace

    async def _answer(self, body: bytes, deadline: float | None = None) -> dict[str, Any]:
        """The upstream's whole JSON answer, its choices checked (a bad one counted) before
        anything reads them; by `deadline` (the loop's clock) if one is given, else within
        the total timeout."""
        headers = self._context.headers_for(self._request, self._target, relay=False)
        timeout = None if deadline is None else deadline - anyio.current_time()
        asking = self._context.upstream.request_json(
            "POST", self._url, headers=headers, content=body, timeout=timeout
        )
        answer = await while_connected(self._request.receive, asking)
        try:
            return checked_answer(answer, self.chat.n, calls=self._target.native_tools)
        except ProxyError:
            self._context.metrics.upstream_errors.labels(UpstreamFailure.BAD_RESPONSE).inc()
            raise

    async def _open_stream(self, body: bytes) -> UpstreamStream:
        """The upstream's streamed answer, its status already 2xx; the caller closes it."""
        headers = self._context.headers_for(self._request, self._target, relay=False)
        opening = self._context.upstream.open_stream(
            "POST", self._url, headers=headers, content=body, held_whole=self._held_whole
        )
        return await while_connected(self._request.receive, opening)

    def model_name(self) -> str:
        """The model an answer names when the upstream's chunks name none."""
        model = self.chat.body.get("model")
        return model if isinstance(model, str) and model else UNNAMED_MODEL
