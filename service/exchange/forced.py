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
from .asking_again import corrected_body, summed_usage
from .deltas import DeltaMapper, finish_reason
from .events import AnswerEnd, AnswerStart, ChoiceEnd, ChoiceStart, Delta, Event
from .request import ChatRequest, content_text
from .rewrite import offered_tools
from .whole import message_order, whole_choice_end

TEXT_ID = "text"


class ForcedCall:
    """One forced choice's upstream answers and what their replies held.

    >>> forced = ForcedCall(chat, protocol, body, observer, trace)
    >>> reply = forced.read(answer)  # each upstream answer, in turn
    >>> if reply.problem: body = forced.asked_again()  # None: the reply is not sent back
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

    def asked_again(self, problem: str | None = None) -> dict[str, Any] | None:
        """The next request: the model's last reply, and what was wrong with it (`problem`,
        or the reply's own); None when the reply is too long to send back."""
        reply = self._replies[-1]
        problem = problem or reply.problem
        assert problem is not None
        correction = render_forced_call_correction(problem, named=self._request.named_tool)
        return corrected_body(self.body, reply.text, correction)

    def withdraw(self) -> None:
        """The last reply is not answered with (its call was no better than the one before):
        the reply before it is. Its answer's usage still counts."""
        self._replies.pop()

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
        usage = summed_usage([answer.get("usage") for answer in self._answers])
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
