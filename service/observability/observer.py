"""The seam through which one completion reports what happened inside it (calls sent, parse
errors, calls dropped by `parallel_tool_calls: false`, calls rescued from a native upstream's
text, forced calls asked again, calls that failed their schema and answers asked again for
them, the upstream's token usage): counted in the metrics by
protocol, noted in the request's record for its access line, and told to the record's
listener (the request's span) when tracing is on."""

from __future__ import annotations

import logging
from typing import Any

from protocols import ParseError

from .debug import ParserTrace
from .metrics import CallOutcome, ProxyMetrics
from .request_record import RequestRecord

logger = logging.getLogger(__name__)


class CompletionObserver:
    """Told about events inside one completion written in `protocol`.

    Model output may hold user data, so nothing here logs it above debug.

    >>> observer = CompletionObserver("json-mix", metrics, record)
    >>> parser = protocol.stream_parser(tools, on_error=observer.parse_error)
    """

    def __init__(
        self,
        protocol: str,
        metrics: ProxyMetrics,
        record: RequestRecord,
        trace: ParserTrace | None = None,
    ) -> None:
        self._protocol = protocol
        self._metrics = metrics
        self._record = record
        self._trace = trace  # DEBUG_PARSER_MW's, when it is on
        self._listener = record.listener  # the request's span, when tracing is on
        record.protocol = protocol

    def tool_call(self, name: str) -> None:
        self._metrics.tool_calls.labels(self._protocol, self._metrics.tool_label(name)).inc()
        self._record.tool_calls += 1
        if self._listener is not None:
            self._listener.tool_call(name)

    def parse_error(self, error: ParseError) -> None:
        self._metrics.parse_failures.labels(self._protocol, error.kind).inc()
        logger.debug("model output kept as text (%s): %s", error.kind, error.message)
        if self._trace is not None:
            self._trace.parse_error(error)
        if self._listener is not None:
            self._listener.parse_error(error)

    def dropped_call(self, name: str) -> None:
        self._metrics.dropped_calls.labels(self._protocol).inc()
        logger.debug("dropped call to %r: parallel_tool_calls is false", name)
        if self._trace is not None:
            self._trace.call_not_sent(name, "one call an answer")
        if self._listener is not None:
            self._listener.dropped_call(name)

    def repeated_call(self, name: str) -> None:
        """A call identical to one made earlier in the answer: not sent again."""
        self._metrics.repeated_calls.labels(self._protocol).inc()
        logger.debug("repeated call to %r: sent once", name)
        if self._trace is not None:
            self._trace.call_not_sent(name, "a repeat of an earlier call")

    def answer_ended(self, reason: str) -> None:
        """A streamed answer ended before the model's output did (why: `reason`): the
        proxy closed the upstream stream without reading the rest."""
        self._metrics.answers_ended_early.labels(self._protocol, reason).inc()
        logger.debug("answer ended early (%s): upstream stream closed", reason)

    def rescued_call(self, name: str) -> None:
        """A call the upstream, which calls tools itself, left in its text: parsed out of it."""
        self._metrics.rescued_calls.labels(self._protocol).inc()
        logger.debug("rescued a call to %r from the upstream's text", name)
        if self._listener is not None:
            self._listener.rescued_call(name)

    def forced_call_retry(self) -> None:
        """A forced call's reply held none: the model is asked again."""
        self._metrics.forced_call_retries.labels(self._protocol).inc()
        if self._listener is not None:
            self._listener.forced_call_retry()

    def invalid_call(self, name: str, problem: str, *, repaired: bool) -> None:
        """A call's arguments did not follow its tool's schema: it was `repaired` by asking
        again, or sent as written. `problem` quotes the model's output."""
        outcome = CallOutcome.REPAIRED if repaired else CallOutcome.SENT
        self._metrics.invalid_calls.labels(self._protocol, outcome).inc()
        logger.debug("call to %r does not follow its schema (%s): %s", name, outcome, problem)
        if self._trace is not None:
            self._trace.log(f"invalid call ({outcome})", f"{name}: {problem}")
        if self._listener is not None:
            self._listener.invalid_call(name, problem, repaired=repaired)

    def call_repair_retry(self) -> None:
        """An answer whose calls did not follow their schemas: the model is asked again."""
        self._metrics.call_repair_retries.labels(self._protocol).inc()
        if self._listener is not None:
            self._listener.call_repair_retry()

    def usage(self, usage: Any) -> None:
        """The upstream's `usage` object, whatever it holds."""
        if isinstance(usage, dict):
            self._record.prompt_tokens = _token_count(usage.get("prompt_tokens"))
            self._record.completion_tokens = _token_count(usage.get("completion_tokens"))


def _token_count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0
