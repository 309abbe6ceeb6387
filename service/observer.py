"""The seam through which a completion reports what happened inside it (parse errors, calls
dropped by `parallel_tool_calls: false`); metrics and tracing subclass it."""

from __future__ import annotations

import logging

from protocols import ParseError

logger = logging.getLogger(__name__)


class CompletionObserver:
    """Told about events inside completions; this default only logs them at debug level.

    Model output may hold user data, so nothing here logs it above debug.
    """

    def parse_error(self, error: ParseError) -> None:
        logger.debug("model output kept as text (%s): %s", error.kind, error.message)

    def dropped_call(self, name: str) -> None:
        logger.debug("dropped call to %r: parallel_tool_calls is false", name)
