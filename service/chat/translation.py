"""A chat answer retold in another API's shape (Responses, Messages): the one loop that reads
the proxy's own chat answer, whole or as its event stream, and hands each delta, the finish
and any failure to the endpoint's assembler, which returns the events of its own API.

An endpoint writes only its assembler and how one of its events is encoded; how a chat answer
is read, where it ends and how a failure anywhere becomes the endpoint's failure events is
the same for every endpoint."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import Response

from protocols import Protocol as ToolProtocol

from ..context import ProxyContext
from ..observability import request_record
from ..settings import Settings
from ..upstream import REASONING_KEYS, matched_stop
from ..wire import (
    DONE,
    SERVER_ERROR,
    EventStream,
    ProxyError,
    error_body,
    event_payload,
    json_bytes,
    json_value,
)
from .chunks import CONTENT, REASONING, STOP, Delta
from .completions import ChatExchange, traced_event_response, traced_json_response
from .hosted_tools import count_dropped_tools
from .request import ChatRequest

Event = dict[str, Any]  # one event of the endpoint's own API

logger = logging.getLogger(__name__)


class AnswerAssembler(Protocol):
    """An endpoint's answer, grown from chat deltas; each step returns its events."""

    def start(self) -> list[Event]: ...

    def delta(self, delta: Delta) -> list[Event]: ...

    def finish(
        self, finish_reason: str | None, usage: Any, matched_stop: str | None = None
    ) -> list[Event]:
        """`matched_stop`: the stop sequence that ended the text, when the upstream says."""
        ...

    def fail(self, error: dict[str, Any]) -> list[Event]:
        """`error`: the fields of an OpenAI error body's `error` (message, type, code)."""
        ...


class DeltaAssembler(ABC):
    """An assembler that takes a chat delta's parts in the order a client reads them: the
    reasoning, the text, then each tool-call fragment (a call's start, or more of its
    arguments)."""

    def delta(self, delta: Delta) -> list[Event]:
        events: list[Event] = []
        if text := delta.get(REASONING):
            events += self.reasoning_delta(text)
        if text := delta.get(CONTENT):
            events += self.content_delta(text)
        for fragment in delta.get("tool_calls") or ():
            events += self.call_delta(fragment)
        return events

    @abstractmethod
    def reasoning_delta(self, text: str) -> list[Event]: ...

    @abstractmethod
    def content_delta(self, text: str) -> list[Event]: ...

    @abstractmethod
    def call_delta(self, fragment: dict[str, Any]) -> list[Event]: ...


@dataclass(frozen=True, slots=True)
class Translation:
    """A translating endpoint's chat request, ready to send: the exchange that answers it,
    the protocol of its route and the body its upstream gets (`ChatExchange.upstream_body`:
    rendered and tools-free, or as sent to a route whose upstream calls tools itself)."""

    exchange: ChatExchange
    protocol: ToolProtocol
    upstream_body: dict[str, Any]
    settings: Settings

    @classmethod
    def of(
        cls,
        request: Request,
        context: ProxyContext,
        chat: ChatRequest,
        *,
        dropped: tuple[str, ...] = (),
        held_whole: bool = False,
    ) -> Translation:
        """The request's record told its model and stream, the hosted tools left out
        (`dropped`) counted, its route's upstream and protocol chosen, its body made."""
        record = request_record(request)
        count_dropped_tools(context, record, dropped)
        model = chat.body.get("model")
        record.model, record.stream = (model if isinstance(model, str) else None), chat.stream
        target = context.router.target_for(model)
        protocol = context.router.protocol_for(target)
        exchange = ChatExchange(request, context, chat, target, held_whole=held_whole)
        return cls(exchange, protocol, exchange.upstream_body(protocol), context.settings)

    async def respond(
        self,
        assembler: AnswerAssembler,
        whole: Callable[[], dict[str, Any]],
        *,
        on_finished: Callable[[], Awaitable[None]] | None = None,
    ) -> Response:
        """The chat answer, with tools or none checked and shaped as chat's (a forced call,
        or the model's output parsed: `ChatExchange.answered`; never a relay), retold by
        `assembler`: whole, as `whole()` once assembled, or as its named event stream.
        `on_finished` is awaited once an answer ended well, before a whole one is sent."""
        answer = await self.exchange.answered(self.protocol, self.upstream_body)
        if answer.events is None:
            assemble_whole(assembler, answer.completion or {})
            if on_finished is not None:
                await on_finished()
            return traced_json_response(whole(), answer.trace)
        events = assembled_events(assembler, answer.events, named_event, on_finished=on_finished)
        return traced_event_response(events, answer.trace, answer.upstream, self.settings)


def named_event(event: Event) -> bytes:
    """One server-sent event named by its type, as OpenAI's Responses and Anthropic's Messages
    streams send them: `event: <type>` and the event as `data`."""
    return b"event: %s\ndata: %s\n\n" % (event["type"].encode(), json_bytes(event))


def whole_message_delta(message: dict[str, Any]) -> Delta:
    """A whole chat message as the one delta that would have built it."""
    calls = [{"index": index, **call} for index, call in enumerate(message.get("tool_calls") or ())]
    reasoning = next((message[key] for key in REASONING_KEYS if message.get(key)), None)
    return {"reasoning_content": reasoning, "content": message.get("content"), "tool_calls": calls}


def assemble_whole(assembler: AnswerAssembler, completion: dict[str, Any]) -> None:
    """A whole chat completion's first choice given to `assembler` (its events unused: the
    assembler holds the whole answer)."""
    choice = (completion.get("choices") or [{}])[0]
    assembler.delta(whole_message_delta(choice.get("message") or {}))
    reason = choice.get("finish_reason")
    stop = matched_stop(choice) if reason == STOP else None
    assembler.finish(reason, completion.get("usage"), stop)


async def assembled_events(
    assembler: AnswerAssembler,
    chat_events: AsyncIterator[bytes],
    encode: Callable[[Event], bytes],
    *,
    on_finished: Callable[[], Awaitable[None]] | None = None,
) -> EventStream:
    """The endpoint's event stream for the proxy's own chat event stream of one choice (the
    upstream's chunks are checked there). A failure, in the upstream or here, ends it with
    the assembler's failure events; `on_finished` is awaited only for an answer that ended
    well."""
    for event in assembler.start():
        yield encode(event)
    finish_reason, usage, stop = None, None, None
    try:
        async for chat_event in chat_events:
            payload = event_payload(chat_event)
            if payload == DONE:
                break
            chunk = json_value(payload)
            if "error" in chunk:  # the chat stream's last event
                for event in assembler.fail(chunk["error"]):
                    yield encode(event)
                return
            usage = chunk.get("usage") or usage
            for choice in chunk["choices"]:
                for event in assembler.delta(choice["delta"]):
                    yield encode(event)
                finish_reason = choice["finish_reason"] or finish_reason
                stop = choice.get("stop_reason") or stop
        events = assembler.finish(finish_reason, usage, stop)
        if on_finished is not None:
            await on_finished()
    except ProxyError as error:
        logger.warning("upstream stream failed: %s", error.message)
        events = assembler.fail(error.body()["error"])
    except Exception:
        logger.exception("streaming answer failed")
        failure = error_body("internal proxy error", error_type=SERVER_ERROR)
        events = assembler.fail(failure["error"])
    for event in events:
        yield encode(event)
