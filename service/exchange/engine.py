"""One chat exchange with the upstream, whichever front door it serves: the request's route
chosen and its body rewritten, then the answer, as the engine's events, from a parsed stream,
a parsed whole answer, or one forced call; or, with nothing to parse, relayed byte for byte.

A whole answer or a forced call may be asked for again (a forced call that did not come, a
call that fails its tool's schema), always within the request's one deadline,
UPSTREAM_TOTAL_TIMEOUT from its first upstream request: another answer is asked for only
while the time left is at least what the last one took."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import Response

from protocols import CheckBudget, ForcedReply, Part, Protocol, QuotedLines, ToolSpec

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
from .call_check import CallCheck
from .events import Event
from .forced import ForcedCall, forced_events
from .hosted_tools import count_dropped_tools
from .parsing import OutputParsing
from .repair import CallRepair
from .request import ChatRequest, ChoiceMode
from .rewrite import FORCED_CHOICES, joined_turns, rewrite_request
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
        self._target = context.router.target_for(model)
        self.chat = chat.under_route(self._target.single_call)
        self._url = self._target.chat_url
        self._held_whole = held_whole
        self._check = CallCheck(chat.tools, chat.strict_tools)
        self._deadline: float | None = None  # on the event loop's clock, from the first ask
        self._last_answer_seconds = 0.0

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
            body = chat.body if target.model is None else {**chat.body, "model": target.model}
            messages = joined_turns(chat.messages)
            return body if messages is chat.messages else {**body, "messages": messages}
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
        options = self._context.parser_options
        if tools:  # only calls are judged by what the model read; the model's own formats
            options = replace(
                options,
                quoted_lines=QuotedLines.of(chat.tool_results),
                dialects=self._target.dialects,
            )
        parsing = OutputParsing.configured(
            options,
            self.protocol,
            tools,
            think_as_reasoning=settings.think_as_reasoning,
            single_call=chat.single_call,
            observer=observer,
            trace=trace,
            native=self._target.native_tools,
            check=self._check,
        )
        body = json_bytes(self.upstream_body)
        if not chat.stream:
            answer, parsed = await self._repaired(body, parsing)
            return Answer(whole_events(answer, parsed, parsing), False, trace)
        stream = await self._open_stream(body)
        return Answer(stream_events(stream, parsing, n=chat.n), True, trace, stream)

    async def _repaired(
        self, body: bytes, parsing: OutputParsing
    ) -> tuple[dict[str, Any], list[list[Part]]]:
        """A whole answer and its choices' parts, asked for again (CALL_REPAIR_RETRIES, one
        choice only) while its calls fail their schemas (`CallRepair`)."""
        repair = CallRepair(parsing, self._check, self.upstream_body)
        failed = repair.read(await self._answer(body))
        retries = 0 if self.chat.n > 1 or parsing.native else self._target.call_repair_retries
        counted = parsing.observer.call_repair_retry
        for _ in range(retries):
            if not failed:
                break
            answer = await self._asked_again(repair.asked_again(), counted)
            if answer is None:
                break
            failed = repair.read(answer)
        return repair.outcome()

    async def _forced_call(self) -> Answer:
        """Tool-choice mode: whole upstream answers, asked again (FORCED_CALL_RETRIES) while
        they hold no call, and (CALL_REPAIR_RETRIES) while the call fails its schema; exactly
        one call back, or the model's text (`ForcedCall`)."""
        chat, body = self.chat, self.upstream_body
        observer, trace = self._observers(chat.tools)
        forced = ForcedCall(chat, self.protocol, body, observer, trace)
        reply = forced.read(await self._answer(json_bytes(body)))
        for _ in range(self._context.settings.forced_call_retries):
            if reply.problem is None:
                break
            answer = await self._asked_again(forced.asked_again(), observer.forced_call_retry)
            if answer is None:
                break
            reply = forced.read(answer)
        if reply.name is not None and reply.problem is None:
            await self._repair_forced(forced, reply, observer)
        answer, deltas, reason = forced.outcome()
        events = forced_events(answer, deltas, reason, whole=not chat.stream)
        return Answer(events, chat.stream, trace)

    async def _repair_forced(
        self, forced: ForcedCall, reply: ForcedReply, observer: CompletionObserver
    ) -> None:
        """A forced call that fails its schema asked for again (CALL_REPAIR_RETRIES); the
        reply answered with is the first whose call passes, else the first, as written."""
        assert reply.name is not None
        problem = self._check.problem(reply.name, reply.arguments, CheckBudget())
        if problem is None:
            return
        repaired = False
        for _ in range(self._target.call_repair_retries):
            why = f"the arguments do not follow the schema of {reply.name} ({problem})"
            answer = await self._asked_again(forced.asked_again(why), observer.call_repair_retry)
            if answer is None:
                break
            again = forced.read(answer)
            repaired = (
                again.name is not None
                and again.problem is None
                and self._check.problem(again.name, again.arguments, CheckBudget()) is None
            )
            if repaired:
                break
            forced.withdraw()
        observer.invalid_call(reply.name, problem, repaired=repaired)

    async def _asked_again(
        self, body: dict[str, Any] | None, counted: Callable[[], None]
    ) -> dict[str, Any] | None:
        """The upstream's answer to a correction (`counted` first); None when there is none
        to send (the reply too long to echo) or the deadline leaves too little time."""
        if body is None or not self._time_for_another_answer():
            return None
        counted()
        return await self._answer(json_bytes(body))

    def _time_for_another_answer(self) -> bool:
        """Whether the request's deadline leaves as much time as its last answer took."""
        assert self._deadline is not None, "asked again before asking"
        return self._deadline - anyio.current_time() >= self._last_answer_seconds

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

    async def _answer(self, body: bytes) -> dict[str, Any]:
        """The upstream's whole JSON answer, its choices checked (a bad one counted) before
        anything reads them."""
        headers = self._context.headers_for(self._request, self._target, relay=False)
        asked = anyio.current_time()
        if self._deadline is None:
            self._deadline = asked + self._context.settings.upstream_total_timeout
        asking = self._context.upstream.request_json(
            "POST", self._url, headers=headers, content=body, timeout=self._deadline - asked
        )
        answer = await while_connected(self._request.receive, asking)
        self._last_answer_seconds = anyio.current_time() - asked
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
