"""The engine's answer written as a Responses-API answer: its deltas (content, reasoning, a
call's start and more of its arguments) become output items and the streaming event
sequence, numbered; the same object also holds the whole `response` for non-streaming."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..exchange import (
    SEQUENCE,
    TEXT,
    ApiEvent,
    CallStart,
    EventTemplate,
    EventWriter,
    HeldText,
    Written,
)
from .reported import reported_fields
from .tools import CUSTOM, FUNCTION, TOOL_SEARCH, ResponsesTools

Item = dict[str, Any]
LENGTH = "length"  # the chat finish_reason for a stop at the token limit
TEXT_EVENTS = {  # an item type -> the events of its text part: (delta, done)
    "message": ("response.output_text.delta", "response.output_text.done"),
    "reasoning": ("response.reasoning_text.delta", "response.reasoning_text.done"),
}
# What else those events carry: a message's text its log probabilities, none (as its
# `output_text` part does), since the upstream is asked for none.
TEXT_EVENT_FIELDS: dict[str, dict[str, Any]] = {"message": {"logprobs": []}, "reasoning": {}}


@dataclass(frozen=True, slots=True)
class CallItem:
    """The output item that answers a call to one kind of tool."""

    type: str
    prefix: str  # of its id
    text: str  # the field that grows as the call streams
    # Its streaming events, (delta, done) with `text` (and a function call's name) in done;
    # none for a tool_search call, whose arguments are one object set when the call is done.
    events: tuple[str, str] | None


CALL_ITEMS = {  # a tool's kind -> the item a call to it is
    FUNCTION: CallItem(
        "function_call",
        "fc",
        "arguments",
        ("response.function_call_arguments.delta", "response.function_call_arguments.done"),
    ),
    CUSTOM: CallItem(
        "custom_tool_call",
        "ctc",
        "input",
        ("response.custom_tool_call_input.delta", "response.custom_tool_call_input.done"),
    ),
    TOOL_SEARCH: CallItem("tool_search_call", "tsc", "arguments", None),
}
ITEM_CALLS = {call.type: call for call in CALL_ITEMS.values()}  # an item type -> its CallItem


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


class ResponseWriter(EventWriter):
    """One response's output items, grown delta by delta; each step returns its events.

    >>> writer = ResponseWriter(request_body, model="m", stream=True)
    >>> writer.write(AnswerStart({}))  # response.created, response.in_progress
    >>> writer.write(ContentDelta("Hi"))  # output_item.added, content_part.added, ...delta
    >>> writer.write(ChoiceEnd("stop")), writer.write(AnswerEnd(usage))  # ...done, completed
    """

    def __init__(
        self,
        request_body: dict[str, Any],
        *,
        model: str,
        stream: bool,
        tools: ResponsesTools | None = None,
    ) -> None:
        super().__init__(stream=stream)
        self.output: list[Item] = []
        self._tools = tools or ResponsesTools()  # whose calls the model's are
        self._open: Item | None = None  # the item deltas currently add to
        # The open item's text or arguments, read when it is done. Adding each fragment to a
        # string would copy it whole every time (a 20 KB file write comes in thousands); a
        # list of fragments costs some 60 bytes per fragment beside its text. `HeldText`
        # holds the text once, and takes only strings: what `fail` reads can always be read.
        self._open_text = HeldText()
        self._calls: dict[int, Item] = {}  # chat tool-call index -> its call item
        self._indexes: dict[str, int] = {}  # item id -> its index in the output
        self._item_id: Callable[[str], str] = new_id  # a new item's id, from its prefix
        self._completed_at: int | None = None  # when the response was completed, once it is
        self._response: dict[str, Any] = {
            "id": new_id("resp"),
            "object": "response",
            "created_at": int(time.time()),
            "completed_at": None,
            "status": "in_progress",
            "error": None,
            "incomplete_details": None,
            "instructions": request_body.get("instructions"),
            "max_output_tokens": request_body.get("max_output_tokens"),
            "model": model,
            "output": self.output,
            "parallel_tool_calls": request_body.get("parallel_tool_calls") is not False,
            "previous_response_id": request_body.get("previous_response_id"),
            "store": request_body.get("store") is not False,
            "tool_choice": request_body.get("tool_choice") or "auto",
            **reported_fields(request_body),
            "metadata": request_body.get("metadata") or {},
            "user": request_body.get("user"),
            "usage": None,
        }

    @classmethod
    def replaying(cls, response: dict[str, Any], tools: ResponsesTools) -> ResponseWriter:
        """A writer that streams `response`, answered earlier, again: its fields, its id and
        time, and its items' ids, in order, as they were (see `replay.py`)."""
        writer = cls(response, model=response["model"], stream=True, tools=tools)
        writer._response.update(id=response["id"], created_at=response["created_at"])
        writer._completed_at = response.get("completed_at")
        ids = iter([item["id"] for item in response["output"]])
        writer._item_id = lambda prefix: next(ids)
        return writer

    def whole(self) -> dict[str, Any]:
        """The response, as it stands (whole once the answer ended)."""
        return self._response

    def start(self) -> list[Written]:
        return [
            self._event("response.created", response=self._snapshot()),
            self._event("response.in_progress", response=self._snapshot()),
        ]

    def reasoning_delta(self, text: str) -> list[Written]:
        return self._open_text_item("reasoning")

    def content_delta(self, text: str) -> list[Written]:
        return self._open_text_item("message")

    def finish(
        self, finish_reason: str | None, usage: Mapping[str, Any] | None, matched_stop: str | None
    ) -> list[Written]:
        """Every open item done, then the response completed, or incomplete at the limit."""
        events = self._close()
        self._response["usage"] = _usage(usage)
        if finish_reason == LENGTH:
            self._response["status"] = "incomplete"
            self._response["incomplete_details"] = {"reason": "max_output_tokens"}
            return [*events, self._event("response.incomplete", response=self._snapshot())]
        self._response["status"] = "completed"
        self._response["completed_at"] = self._completed_at or int(time.time())
        return [*events, self._event("response.completed", response=self._snapshot())]

    def fail(self, error: dict[str, Any]) -> list[Written]:
        """An `error` event, then the response failed; the items so far are kept in it."""
        code, message = error.get("code"), str(error.get("message") or "upstream failed")
        self._settle()
        self._response["status"] = "failed"
        self._response["error"] = {"code": code or "server_error", "message": message}
        return [
            self._event("error", code=code, message=message, param=error.get("param")),
            self._event("response.failed", response=self._snapshot()),
        ]

    def _open_text_item(self, kind: str) -> list[Written]:
        """A message or reasoning item, opened for the text that comes."""
        events = self._close()
        part: dict[str, Any]
        if kind == "message":
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            item: Item = {"id": self._item_id("msg"), "type": "message", "role": "assistant"}
        else:
            part = {"type": "reasoning_text", "text": ""}
            item = {"id": self._item_id("rs"), "type": "reasoning", "summary": []}
        item.update(status="in_progress", content=[])
        events += self._add(item)
        item["content"].append(part)
        events.append(
            self._event(
                "response.content_part.added", **self._where(item), content_index=0, part=dict(part)
            )
        )
        return events

    def call_start(self, call: CallStart) -> list[Written]:
        events = self._close()
        item = self._call_item(call.name, call.call_id, custom=call.kind == CUSTOM)
        self._calls[call.index] = item
        return events + self._add(item)

    def call_delta(self, index: int, text: str) -> list[Written]:
        """More of a call's text (a function call's arguments, or a custom call's input)
        while another item is open."""
        item = self._calls[index]
        self._write(item, text)
        if call_events := ITEM_CALLS[item["type"]].events:
            return [self._event(call_events[0], **self._where(item), delta=text)]
        return []

    def _call_item(self, model_name: str, call_id: str, *, custom: bool) -> Item:
        """A new output item for the model's call, of the type its tool's kind calls for."""
        tool = self._tools.client_tool(model_name, custom=custom)
        call = CALL_ITEMS[tool.kind]
        item: Item = {"id": self._item_id(call.prefix), "type": call.type, "status": "in_progress"}
        item["call_id"] = call_id
        if tool.kind == TOOL_SEARCH:
            item.update(execution="client", arguments={})
            return item
        item.update({"name": tool.name, call.text: ""})
        if tool.namespace is not None:
            item["namespace"] = tool.namespace
        return item

    def _add(self, item: Item) -> list[Written]:
        """`item` added to the output, and open for what continues the event it answers."""
        self._indexes[item["id"]] = len(self.output)
        self.output.append(item)
        self._open, self._open_text = item, HeldText()
        self.open_text(self._open_text, self._delta_template(item))
        # The item grows before this event is sent: its lists and objects as they are now
        # (all empty: nothing nested in them yet).
        added = {
            key: value.copy() if isinstance(value, list | dict) else value
            for key, value in item.items()
        }
        return [
            self._event(
                "response.output_item.added", output_index=self._indexes[item["id"]], item=added
            )
        ]

    def _delta_template(self, item: Item) -> EventTemplate | None:
        """The event that carries more of `item`'s text (None for an item that has none)."""
        if item["type"] in TEXT_EVENTS:
            kind = TEXT_EVENTS[item["type"]][0]
            fields = {"content_index": 0, **TEXT_EVENT_FIELDS[item["type"]]}
        elif (call_events := ITEM_CALLS[item["type"]].events) is not None:
            kind, fields = call_events[0], {}
        else:
            return None
        where = self._where(item)
        event = {"type": kind, "sequence_number": SEQUENCE, **where, **fields, "delta": TEXT}
        return EventTemplate(event)

    def _settle(self) -> None:
        """The open item's text so far written into it."""
        if self._open is not None:
            self._write(self._open, self._open_text.value())
        self._open_text = HeldText()
        self.close_text()

    def _write(self, item: Item, text: str) -> None:
        kind = item["type"]
        if kind in TEXT_EVENTS:
            item["content"][0]["text"] += text
        elif kind == CALL_ITEMS[TOOL_SEARCH].type:
            item["arguments"] = _arguments_object(text)
        else:
            item[ITEM_CALLS[kind].text] += text

    def _close(self) -> list[Written]:
        self._settle()
        item, self._open = self._open, None
        if item is None:
            return []
        events: list[Written] = []
        where = self._where(item)
        call = ITEM_CALLS.get(item["type"])
        if call is not None and call.events is not None:
            fields = {call.text: item[call.text]}
            if call is CALL_ITEMS[FUNCTION]:
                fields["name"] = item["name"]
            events.append(self._event(call.events[1], **where, **fields))
        elif item["type"] in TEXT_EVENTS:
            part = item["content"][0]
            done = TEXT_EVENTS[item["type"]][1]
            fields = TEXT_EVENT_FIELDS[item["type"]]
            events.append(self._event(done, **where, content_index=0, text=part["text"], **fields))
            events.append(
                self._event("response.content_part.done", **where, content_index=0, part=dict(part))
            )
        item["status"] = "completed"
        events.append(
            self._event("response.output_item.done", output_index=where["output_index"], item=item)
        )
        return events

    def _where(self, item: Item) -> dict[str, Any]:
        return {"item_id": item["id"], "output_index": self._indexes[item["id"]]}

    def _snapshot(self) -> dict[str, Any]:
        return {**self._response, "output": list(self.output)}

    def _event(self, kind: str, **fields: Any) -> ApiEvent:
        event = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return event


def _arguments_object(text: str) -> Any:
    """A tool_search call's arguments, an object in its item; {} when they do not parse (a
    call the stream left unfinished)."""
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return {}


def _usage(usage: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Chat usage in the Responses names."""
    if usage is None:
        return None
    prompt, completion = usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0
    details = usage.get("completion_tokens_details") or {}
    return {
        "input_tokens": prompt,
        "input_tokens_details": {
            "cached_tokens": (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        },
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": details.get("reasoning_tokens") or 0},
        "total_tokens": usage.get("total_tokens") or prompt + completion,
    }
