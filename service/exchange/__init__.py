"""The engine every front door shares: a chat exchange with the upstream (the request's route
and rewrite, asking, parsing, the commit policy, forced calls), which answers in TYPED events,
never bytes; and what the front doors write them with.

A front door decodes its own request into the engine's `ChatRequest`, and writes the
engine's events in its own wire shape with a `Writer`: `write(event)` returns what a streamed
answer sends for the event, `whole()` the answer's JSON value once every event is written.
Nothing reads another door's bytes back. The events (`events.py`):

    AnswerStart(upstream)                       the upstream began; its envelope
    ChoiceStart(choice)                         a choice's first event
    ReasoningDelta(text, choice)                more reasoning
    ContentDelta(text, choice)                  more text, the calls taken out
    CallStart(index, call_id, name, kind, choice)   a call begins
    CallDelta(index, text, choice)              more of its arguments (JSON text)
    ChoiceEnd(finish_reason, matched_stop, choice, upstream)
    AnswerEnd(usage)                            whole: nothing follows
    Failure(error)                              failed after it began: nothing follows

A front door in full (a writer of plain text, streamed one line per delta):

    class PlainWriter:
        def __init__(self) -> None:
            self.text: list[str] = []

        def write(self, event: Event) -> bytes:
            if isinstance(event, ContentDelta):
                self.text.append(event.text)
                return event.text.encode() + b"\\n"
            if isinstance(event, Failure):
                return b"error: " + event.error.message.encode()
            return b""

        def whole(self) -> Any:
            return {"text": "".join(self.text)}

    async def create_plain(request: Request, context: ProxyContext) -> Response:
        chat = checked_chat_request(plain_request_as_chat(await request.body()))
        exchange = ChatExchange(request, context, chat)
        return await respond(await exchange.answered(), PlainWriter(), context.settings)

An API that streams named JSON events (the Responses API, Anthropic's Messages API) writes
its events by subclassing `EventWriter`."""

from __future__ import annotations

from .engine import Answer, ChatExchange
from .event_writer import (
    SEQUENCE,
    TEXT,
    ApiEvent,
    Counted,
    EventTemplate,
    EventWriter,
    HeldText,
    Written,
    named_event,
)
from .events import (
    AnswerEnd,
    AnswerStart,
    CallDelta,
    CallKind,
    CallStart,
    ChoiceEnd,
    ChoiceStart,
    ContentDelta,
    Delta,
    Event,
    Failure,
    ReasoningDelta,
    Sent,
    Writer,
)
from .hosted_tools import check_hosted_tool, count_dropped_tools
from .request import (
    ChatRequest,
    ChoiceMode,
    assistant_message,
    checked_chat_request,
    content_text,
    decoded_body,
    invalid,
    parse_chat_request,
)
from .rewrite import FORCED_CHOICES, needs_rewrite, offered_tools, rewrite_request
from .sending import respond, written_stream
from .tokens import estimated_prompt_tokens, tokens_in_text

__all__ = [
    "FORCED_CHOICES",
    "SEQUENCE",
    "TEXT",
    "Answer",
    "AnswerEnd",
    "AnswerStart",
    "ApiEvent",
    "CallDelta",
    "CallKind",
    "CallStart",
    "ChatExchange",
    "ChatRequest",
    "ChoiceEnd",
    "ChoiceMode",
    "ChoiceStart",
    "ContentDelta",
    "Counted",
    "Delta",
    "Event",
    "EventTemplate",
    "EventWriter",
    "Failure",
    "HeldText",
    "ReasoningDelta",
    "Sent",
    "Writer",
    "Written",
    "assistant_message",
    "check_hosted_tool",
    "checked_chat_request",
    "content_text",
    "count_dropped_tools",
    "decoded_body",
    "estimated_prompt_tokens",
    "invalid",
    "named_event",
    "needs_rewrite",
    "offered_tools",
    "parse_chat_request",
    "respond",
    "rewrite_request",
    "tokens_in_text",
    "written_stream",
]
