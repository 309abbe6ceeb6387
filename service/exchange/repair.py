"""A whole answer whose calls fail their check asked for again with what is wrong with
them, CALL_REPAIR_RETRIES times at most: a reply whose calls all pass replaces the first;
otherwise the first is sent as written, with an error record for each failed call."""

from __future__ import annotations

from typing import Any

from protocols import CheckBudget, Part, ToolCall

from .asking_again import corrected_body, summed_usage
from .call_check import CallCheck, Invalid
from .parsing import OutputParsing
from .request import content_text
from .whole import parsed_choices


class CallRepair:
    """A whole answer's calls checked, and the answers asked for while they fail.

    >>> repair = CallRepair(parsing, check, body)
    >>> failed = repair.read(answer)  # each upstream answer, in turn
    >>> if failed: body = repair.asked_again()  # None: the reply is not sent back
    >>> answer, parsed = repair.outcome()
    """

    def __init__(self, parsing: OutputParsing, check: CallCheck, body: dict[str, Any]) -> None:
        self._parsing = parsing
        self._check = check
        self._body = body
        self._answers: list[dict[str, Any]] = []
        self._parsed: list[list[list[Part]]] = []
        self._invalid: list[list[Invalid]] = []

    def read(self, answer: dict[str, Any]) -> bool:
        """Parse and check an upstream answer (checked: `ChatExchange.answer`): whether a
        call in it fails its check."""
        parsed = parsed_choices(answer, self._parsing)
        budget = CheckBudget()
        single = self._parsing.single_call
        invalid = [
            failed
            for parts in parsed
            for failed in self._check.invalid(parts, budget, single_call=single)
        ]
        self._answers.append(answer)
        self._parsed.append(parsed)
        self._invalid.append(invalid)
        return bool(invalid)

    def asked_again(self) -> dict[str, Any] | None:
        """The next request: the model's last reply, and what is wrong with its calls."""
        message = (self._answers[-1].get("choices") or [{}])[0].get("message") or {}
        correction = self._check.correction(self._invalid[-1])
        if correction is None:
            return None  # more to say than is worth asking: the reply stands
        return corrected_body(self._body, content_text(message.get("content")), correction)

    def outcome(self) -> tuple[dict[str, Any], list[list[Part]]]:
        """The answer the client gets, and its choices' parts: the last one asked for when
        it holds calls and they all pass, else the first, as written. Its usage is summed
        over every answer; each call that failed in the first is recorded."""
        last = len(self._answers) - 1
        repaired = last > 0 and not self._invalid[last] and _has_calls(self._parsed[last])
        chosen = last if repaired else 0
        for name, problem in self._invalid[0]:
            self._parsing.observer.invalid_call(name, problem, repaired=repaired)
        answer = self._answers[chosen]
        if last > 0:
            answer = {**answer, "usage": summed_usage([a.get("usage") for a in self._answers])}
        return answer, self._parsed[chosen]


def _has_calls(parsed: list[list[Part]]) -> bool:
    return any(isinstance(part, ToolCall) for parts in parsed for part in parts)
