"""Forced-call mode (`tool_choice` "required" or a named function): whole upstream answers
holding a single `{name, arguments}` object, answered as exactly one call to a tool the
client offered, streamed to the client when it asked for a stream.

A reply that holds no such call is sent back to the model with what was wrong with it, up
to FORCED_CALL_RETRIES times. If none comes even then, no tool is invented: a named choice
(or a reply naming an offered tool) gets its call with `{}` arguments, the model's text kept
beside it; "required" with no tool named is answered with the model's text and
`finish_reason: "stop"`. Either way the failure is an error record."""

from __future__ import annotations

from typing import Any

from protocols import (
    ErrorKind,
    ForcedReply,
    ParseError,
    Part,
    Protocol,
    TextDelta,
    read_forced_call,
    render_forced_call_correction,
)

from ..observability import CompletionObserver, ParserTrace, parse_traced
from ..upstream import checked_envelope
from .deltas import DeltaMapper, finish_reason
from .events import AnswerEnd, AnswerStart, ChoiceEnd, ChoiceStart, Delta, Event
from .request import ChatRequest, content_text
from .rewrite import offered_tools
from .whole import message_order, whole_choice_end

TEXT_ID = "text"
# Usage fields that add up over the answers one forced call took.
USAGE_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")
# What the model is shown of its reply when it is asked again: the head, where a call that
# went wrong begins (the correction says what was wrong). Each request starts from the
# original messages: echoing every reply whole, after the ones before, a 30 MB prose reply
# made upstream requests of 30 and then 60 MB, past what any client may send.
ECHOED_REPLY_CHARS = 4096
# A reply longer than this is no call gone slightly wrong: it is not asked for again.
MAX_RETRIED_REPLY_CHARS = 65_536


class ForcedCall:
    """One forced choice's upstream answers and what their replies held.

    >>> forced = ForcedCall(chat, protocol, body, observer, trace)
    >>> reply = forced.read(answer)  # each upstream answer, in turn
    >>> if forced.may_ask_again(): body = forced.asked_again()
    >>> answer, deltas, reason = forced.outcome()
    """

    def __init__(
        self,
        request: ChatRequest,
        protocol: Protocol,
        body: dict[str, Any],
        observer: CompletionObserver,
        trace: ParserTrace | None,
    ) -> None:
        self._request = request
        self._protocol = protocol
        self._tools = offered_tools(request)
        # A reply that names no tool calls the named one, or the only one offered.
        only = self._tools[0].name if len(self._tools) == 1 else None
        self._default_name = request.named_tool or only
        self.body = body
        self._observer = observer
        self._trace = trace
        self._answers: list[dict[str, Any]] = []
        self._replies: list[ForcedReply] = []

    def read(self, answer: dict[str, Any]) -> ForcedReply:
        """What the upstream's answer (checked: `ChatExchange.answer`) holds."""
        text = content_text((_first_choice(answer).get("message") or {}).get("content"))
        replies: list[ForcedReply] = []

        def parse() -> list[Part]:
            replies.append(
                read_forced_call(text, self._protocol, self._tools, default_name=self._default_name)
            )
            return [replies[0].call()] if replies[0].problem is None else [TextDelta(TEXT_ID, text)]

        parse_traced(self._trace, text, parse)
        self._answers.append(answer)
        self._replies.append(replies[0])
        return replies[0]

    def may_ask_again(self) -> bool:
        """Whether the last reply held no call and is short enough to be asked for again."""
        reply = self._replies[-1]
        return reply.problem is not None and len(reply.text) <= MAX_RETRIED_REPLY_CHARS

    def asked_again(self) -> dict[str, Any]:
        """The next request: the original one, then the head of the model's last reply and
        what was wrong with it."""
        reply = self._replies[-1]
        assert reply.problem is not None
        self._observer.forced_call_retry()
        correction = render_forced_call_correction(reply.problem, named=self._request.named_tool)
        echoed = reply.text
        if len(echoed) > ECHOED_REPLY_CHARS:
            echoed = echoed[:ECHOED_REPLY_CHARS] + "…"
        messages = [
            *self.body["messages"],
            {"role": "assistant", "content": echoed},
            {"role": "user", "content": correction},
        ]
        return {**self.body, "messages": messages}

    def outcome(self) -> tuple[dict[str, Any], list[Delta], str]:
        """The answer the client gets (the first upstream answer, its usage summed over all
        of them), the deltas of its message, and its finish reason."""
        last, first = self._replies[-1], self._replies[0]
        parts: list[Part] = []
        if last.problem is not None:
            # The model's words to the conversation: its first reply, not the one that
            # answered the proxy's correction.
            parts.append(TextDelta(TEXT_ID, first.text))
            unmet = last.name is None
            kind = ErrorKind.TOOL_CHOICE_UNMET if unmet else ErrorKind.TOOL_CHOICE_FALLBACK
            self._observer.parse_error(ParseError(kind, last.problem, last.text))
        if last.name is not None:
            parts.append(last.call())
        usage = _summed_usage([answer.get("usage") for answer in self._answers])
        self._observer.usage(usage)
        mapper = DeltaMapper(
            think_as_reasoning=False,
            single_call=True,
            tools=self._request.tools,
            on_call=self._observer.tool_call,
        )
        deltas = mapper.deltas(parts)
        answer = {**self._answers[0]}
        if usage is not None:
            answer["usage"] = usage
        return answer, deltas, finish_reason("stop", mapper)


def _summed_usage(usages: list[Any]) -> Any:
    """One answer's usage as it is; several answers' counts added up."""
    if len(usages) == 1:
        return usages[0]
    counted = [usage for usage in usages if isinstance(usage, dict)]
    if not counted:
        return None
    return {
        key: sum(usage.get(key) or 0 for usage in counted)
        for key in USAGE_COUNTS
        if any(isinstance(usage.get(key), int) for usage in counted)
    }


def forced_events(
    answer: dict[str, Any], deltas: list[Delta], reason: str, *, whole: bool
) -> list[Event]:
    """The answer's events (`outcome()`'s): one choice holding the call (or the text). A
    whole one is the upstream's first answer with its message replaced, its reasoning kept;
    a streamed one is the call alone."""
    first = _first_choice(answer)
    usage = answer.get("usage")
    if whole:
        start = AnswerStart(answer)
        deltas = message_order(first.get("message") or {}, deltas)
        end = whole_choice_end({**first, "index": 0}, reason)
    else:
        start, end = AnswerStart(checked_envelope(answer)), ChoiceEnd(reason)
    return [
        start,
        ChoiceStart(),
        *deltas,
        end,
        AnswerEnd(usage if isinstance(usage, dict) else None),
    ]


def _first_choice(answer: dict[str, Any]) -> dict[str, Any]:
    first: dict[str, Any] = (answer.get("choices") or [{}])[0]
    return first
