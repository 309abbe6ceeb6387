"""How every log line of the process is written: uvicorn's, the proxy's, warnings. With
LOG_FORMAT=json each line is one JSON object (time, level, logger, message, and the request
id while a request is being answered); with text, uvicorn's lines keep uvicorn's look and the
proxy's access and debug lines are written as they are.

Logged text quotes clients, upstreams and models (an upstream's error message, a path, a
model name), so both formats escape it (`escaped`): it can neither drive the operator's
terminal nor start a log line of its own, whatever splits the lines.

>>> logging.config.dictConfig(logging_config(LogFormat.JSON, LogLevel.INFO))
"""

from __future__ import annotations

import json
import logging
import logging.config
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from copy import copy
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from uvicorn.logging import DefaultFormatter

from .access_log import ACCESS_FIELDS, LINE_LOGGERS, LOGGER_NAME, LogFormat

# The request being answered in this task: set by the telemetry middleware for its duration.
current_request_id: ContextVar[str | None] = ContextVar("current_request_id", default=None)
# uvicorn's numeric level for "trace", below DEBUG.
TRACE_LEVEL = 5
# What logged text shows escaped (as `\xNN`, `\uNNNN`): control characters (ESC and the C1
# CSI drive a terminal, CR overwrites a line) and the line breaks a splitter may cut at
# (str.splitlines cuts at U+0085, U+2028, U+2029, and at VT, FF and the C0 separators).
CONTROL_CHARACTERS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
# In text logs each newline of logged text (a message's, a traceback's) starts an indented
# line: only the proxy's own text starts a line at its first column, so none is forged.
CONTINUATION = "\n  "
# A record with this attribute true holds a message escaped where it was built (the debug
# summary, whose highlight escape codes must reach the terminal): text logs write it as is.
ESCAPED_RECORD_KEY = "escaped"


class LogLevel(StrEnum):
    """uvicorn's log levels; the level of every logger of the process."""

    CRITICAL = "critical"
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    DEBUG = "debug"
    TRACE = "trace"

    @property
    def number(self) -> int:
        return TRACE_LEVEL if self is LogLevel.TRACE else logging.getLevelName(self.upper())


def escaped(text: str, newline: str) -> str:
    """`text` safe for a terminal and a log: control characters as `\\xNN`/`\\uNNNN`,
    each newline as `newline`."""
    text = CONTROL_CHARACTERS.sub(lambda match: ascii(match.group())[1:-1], text)
    return text.replace("\n", newline)


class TextFormatter(DefaultFormatter):
    """uvicorn's text format (its level prefix, coloured on a terminal) with each record's
    message and traceback escaped, their newlines as indented continuation lines."""

    def format(self, record: logging.LogRecord) -> str:
        if getattr(record, ESCAPED_RECORD_KEY, False):
            return super().format(record)
        safe = copy(record)  # other handlers of the record see it unchanged
        safe.msg, safe.args = escaped(record.getMessage(), CONTINUATION), None
        # uvicorn's coloured variant of a message would be written instead of the escaped one.
        safe.__dict__.pop("color_message", None)
        if record.exc_info:  # never another formatter's traceback text, cached unescaped
            safe.exc_text = _continued(self.formatException(record.exc_info))
        if record.stack_info:
            safe.stack_info = _continued(record.stack_info)
        return super().format(safe)


def _continued(block: str) -> str:
    """A record's traceback or stack, escaped and indented under its message."""
    return CONTINUATION.removeprefix("\n") + escaped(block, CONTINUATION)


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line, every string in it escaped (its newlines
    written as JSON's `\\n`)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = current_request_id.get()
        if request_id is not None:
            line["request_id"] = request_id
        line.update(getattr(record, ACCESS_FIELDS, {}))
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(
            {key: _json_safe(value) for key, value in line.items()},
            ensure_ascii=False,
            default=lambda value: _json_safe(str(value)),
        )


def _json_safe(value: Any) -> Any:
    return escaped(value, "\n") if isinstance(value, str) else value


def line_formatter(log_format: LogFormat) -> logging.Formatter:
    """The formatter of the proxy's own lines (access, debug) in `log_format`."""
    if log_format is LogFormat.JSON:
        return JsonFormatter()
    return TextFormatter("%(message)s")


def logging_config(log_format: LogFormat, level: LogLevel) -> dict[str, Any]:
    """A `logging.config.dictConfig` for the whole process, also handed to uvicorn (which
    applies it in every worker). uvicorn's own access log is never on (the proxy writes its
    own access line), so `uvicorn.access` has no formatter of its own."""
    if log_format is LogFormat.JSON:
        formatters: dict[str, Any] = {name: {"()": JsonFormatter} for name in ("default", "plain")}
    else:
        formatters = {
            "default": {"()": TextFormatter, "fmt": "%(levelprefix)s %(message)s"},
            # The proxy's access and debug lines are complete as written.
            "plain": {"()": TextFormatter, "fmt": "%(message)s"},
        }

    def handler(formatter: str) -> dict[str, Any]:
        return {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stderr",
            "formatter": formatter,
        }

    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": formatters,
        "handlers": {name: handler(name) for name in formatters},
        "loggers": {
            "uvicorn": {"handlers": ["default"], "level": level.number, "propagate": False},
            LOGGER_NAME: {"level": level.number},
            **{name: {"handlers": ["plain"], "propagate": False} for name in LINE_LOGGERS},
            # httpx logs every upstream request with its URL, query string (and any key in it)
            # included, at INFO: only its warnings are wanted.
            "httpx": {"level": max(logging.WARNING, level.number)},
            "httpcore": {"level": max(logging.WARNING, level.number)},
        },
        # Module loggers (settings warnings), Python warnings and anything else: uvicorn's look.
        "root": {"handlers": ["default"], "level": level.number},
    }


def configure_logging(log_format: LogFormat, level: LogLevel) -> dict[str, Any]:
    """Apply `logging_config` to this process, route `warnings.warn` through it, and return
    the configuration for uvicorn to apply in its workers."""
    config = logging_config(log_format, level)
    logging.addLevelName(TRACE_LEVEL, "TRACE")
    logging.config.dictConfig(config)
    logging.captureWarnings(True)
    return config


class _Held(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def held_records() -> Iterator[list[logging.LogRecord]]:
    """Keep what is logged to the root logger inside (warnings while the settings are read,
    before the log format is known) instead of writing it; the caller hands each record to
    its logger once logging is configured."""
    held = _Held()
    root = logging.getLogger()
    root.addHandler(held)
    try:
        yield held.records
    finally:
        root.removeHandler(held)
