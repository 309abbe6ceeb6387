"""A stored response streamed again (`GET /v1/responses/{id}?stream=true`): its output items
become the engine's events once more, and the writer that streams every response writes
them, so the client reads the event sequence it would have read when the response was
answered, with the same ids (each item's text in one delta, where the model's came in many).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from starlette.responses import Response

from ..exchange import (
    Answer,
    AnswerEnd,
    AnswerStart,
    CallDelta,
    CallKind,
    CallStart,
    ChoiceEnd,
    ChoiceStart,
    ContentDelta,
    Event,
    ReasoningDelta,
    Sent,
    respond,
)
from ..settings import HostedTools, Settings
from ..wire import json_bytes
from .events import LENGTH, ResponseWriter
from .request import loaded_tools
from .store import Item
from .tools import TOOL_SEARCH, ResponsesTools, responses_tools

# A response that was answered in full ended its choice so; which reason, the Responses API
# does not say (calls or not, the response is `completed`).
STOPPED = "stop"
EVENT_END = b"\n\n"  # what ends each server-sent event; an event's JSON holds no newline


async def replayed(
    response: dict[str, Any],
    inputs: Sequence[Item],
    settings: Settings,
    *,
    starting_after: int | None = None,
) -> Response:
    """`response`, answered to `inputs`, as its event stream; from the event after the one
    numbered `starting_after`, if given."""
    # Its calls are written as the items their tools call for: the tools it was offered,
    # and those its conversation's tool searches loaded.
    tools = responses_tools(response["tools"], HostedTools.DROP, loaded=loaded_tools(inputs))
    writer = ResponseWriter.replaying(response, tools)
    sent = writer if starting_after is None else _StartingAfter(writer, starting_after)
    answer = Answer(replayed_events(response, tools), stream=True)
    return await respond(answer, sent, settings)


def replayed_events(response: dict[str, Any], tools: ResponsesTools) -> list[Event]:
    """The engine's events that `response`'s writer made it from: its items' text and calls,
    under the names the model knew its tools by."""
    events: list[Event] = [AnswerStart({}), ChoiceStart()]
    calls = 0
    for item in response["output"]:
        kind = item["type"]
        if kind == "message":
            events.append(ContentDelta(_text(item)))
        elif kind == "reasoning":
            events.append(ReasoningDelta(_text(item)))
        else:
            events += _call(calls, item, tools)
            calls += 1
    finish_reason = LENGTH if response["status"] == "incomplete" else STOPPED
    events += [ChoiceEnd(finish_reason), AnswerEnd(_chat_usage(response.get("usage")))]
    return events


def _call(index: int, item: Item, tools: ResponsesTools) -> list[Event]:
    if item["type"] == "tool_search_call":
        name, text = tools.model_name(TOOL_SEARCH), json_bytes(item["arguments"]).decode()
    else:
        name = tools.model_name(item["name"], item.get("namespace"))
        text = item["input"] if item["type"] == "custom_tool_call" else item["arguments"]
    kind: CallKind = "custom" if item["type"] == "custom_tool_call" else "function"
    return [CallStart(index, item["call_id"], name, kind), CallDelta(index, text)]


def _text(item: Item) -> str:
    return "".join(part["text"] for part in item["content"])


def _chat_usage(usage: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The response's usage in chat's names, which its writer wrote it from."""
    if usage is None:
        return None
    return {
        "prompt_tokens": usage["input_tokens"],
        "completion_tokens": usage["output_tokens"],
        "total_tokens": usage["total_tokens"],
        "prompt_tokens_details": usage["input_tokens_details"],
        "completion_tokens_details": usage["output_tokens_details"],
    }


class _StartingAfter:
    """What `writer` streams, from the event after the one numbered `after` on."""

    def __init__(self, writer: ResponseWriter, after: int) -> None:
        self._writer, self._after = writer, after

    def write(self, event: Event) -> Sent:
        first = self._writer.sequence  # the number of the first event this write makes
        written = self._writer.write(event)
        skipped = self._after + 1 - first
        if skipped <= 0:
            return written
        if isinstance(written, bytes):
            return b"".join(sent + EVENT_END for sent in written.split(EVENT_END)[skipped:-1])
        return _skipping(written, skipped)

    def whole(self) -> Any:
        return self._writer.whole()


def _skipping(pieces: Iterator[bytes], events: int) -> Iterator[bytes]:
    """`pieces` but those of the first `events` events (a piece never ends inside an event
    as one ends: JSON escapes every line break)."""
    for piece in pieces:
        if events <= 0:
            yield piece
        elif piece.endswith(EVENT_END):
            events -= 1
