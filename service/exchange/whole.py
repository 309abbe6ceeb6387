"""A whole (non-streamed) answer as the engine's events: each choice's text parsed at once
(`feed(all); finish()`, the same parser as a stream's), its calls checked before anything
is sent (and asked for again: `repair.py`), and its deltas given in the order its
message is read: reasoning, content, then each call."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from protocols import Part

from ..upstream import REASONING_KEYS, call_fragments, matched_stop
from .deltas import STOP, finish_reason
from .events import (
    AnswerEnd,
    AnswerStart,
    ChoiceEnd,
    ChoiceStart,
    ContentDelta,
    Delta,
    Event,
    ReasoningDelta,
)
from .parsing import OutputParsing
from .request import content_text


def parsed_choices(answer: dict[str, Any], parsing: OutputParsing) -> list[list[Part]]:
    """The parts of each choice's text in the upstream's whole completion (checked:
    `Exchange.answer`)."""
    return [
        parsing.parse_whole(content_text((choice.get("message") or {}).get("content")))
        for choice in answer.get("choices") or ()
    ]


def whole_events(
    answer: dict[str, Any], parsed: list[list[Part]], parsing: OutputParsing
) -> list[Event]:
    """The events of the upstream's whole completion, each choice's text as `parsed` into
    content and calls."""
    events: list[Event] = [AnswerStart(answer)]
    for choice, parts in zip(answer.get("choices") or (), parsed, strict=True):
        index = choice.get("index", 0)
        message = choice.get("message") or {}
        mapper = parsing.mapper(index)
        deltas = mapper.deltas(parts)
        if parsing.native:
            deltas += mapper.native(call_fragments(message.get("tool_calls"), whole=True))
        deltas += mapper.rescued()
        reason = finish_reason(choice.get("finish_reason"), mapper)
        events += [ChoiceStart(index), *message_order(message, deltas, index)]
        events.append(whole_choice_end(choice, reason, index))
    usage = answer.get("usage")
    parsing.observer.usage(usage)
    events.append(AnswerEnd(usage if isinstance(usage, Mapping) else None))
    return events


def message_order(
    message: Mapping[str, Any], deltas: Iterable[Delta], choice: int = 0
) -> list[Delta]:
    """A whole message's deltas as its message is read: the upstream's own reasoning and the
    reasoning parsed from its text, then its text, each as one delta, then its calls."""
    own = next((message[key] for key in REASONING_KEYS if message.get(key)), "")
    reasoning, content, calls = [own], [], []
    for delta in deltas:
        if isinstance(delta, ReasoningDelta):
            reasoning.append(delta.text)
        elif isinstance(delta, ContentDelta):
            content.append(delta.text)
        else:
            calls.append(delta)
    ordered: list[Delta] = []
    if text := "".join(reasoning):
        ordered.append(ReasoningDelta(text, choice))
    if text := "".join(content):
        ordered.append(ContentDelta(text, choice))
    return ordered + calls


def whole_choice_end(choice: dict[str, Any], reason: str, index: int = 0) -> ChoiceEnd:
    """A whole choice's end: its finish reason, the stop sequence the upstream says ended a
    `stop`, and the upstream's choice for the fields a front door passes on."""
    stop = matched_stop(choice) if reason == STOP else None
    return ChoiceEnd(reason, stop, index, upstream=choice)
