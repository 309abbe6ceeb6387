"""How every log line of the process is written: uvicorn's, the proxy's, warnings. With
LOG_FORMAT=json each line is one JSON object (time, level, logger, message, and the request
id while a request is being answered); with text, uvicorn's lines keep uvicorn's look and the
proxy's access and debug lines are written as they are.

>>> logging.config.dictConfig(logging_config(LogFormat.JSON, LogLevel.INFO))
"""

from __future__ import annotations

import json
import logging
import logging.config
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from .access_log import ACCESS_FIELDS, LINE_LOGGERS, LOGGER_NAME, LogFormat

# The request being answered in this task: set by the telemetry middleware for its duration.
current_request_id: ContextVar[str | None] = ContextVar("current_request_id", default=None)
# uvicorn's numeric level for "trace", below DEBUG.
TRACE_LEVEL = 5


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


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (newlines in messages are escaped)."""

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
        return json.dumps(line, ensure_ascii=False, default=str)


def line_formatter(log_format: LogFormat) -> logging.Formatter:
    """The formatter of the proxy's own lines (access, debug) in `log_format`."""
    if log_format is LogFormat.JSON:
        return JsonFormatter()
    return logging.Formatter("%(message)s")


def logging_config(log_format: LogFormat, level: LogLevel) -> dict[str, Any]:
    """A `logging.config.dictConfig` for the whole process, also handed to uvicorn (which
    applies it in every worker). The formatter names `default` and `access` are uvicorn's."""
    if log_format is LogFormat.JSON:
        formatters: dict[str, Any] = {
            name: {"()": JsonFormatter} for name in ("default", "access", "plain")
        }
    else:
        formatters = {
            "default": {
                "()": "uvicorn.logging.DefaultFormatter",
                "fmt": "%(levelprefix)s %(message)s",
            },
            "access": {
                "()": "uvicorn.logging.AccessFormatter",
                "fmt": '%(levelprefix)s %(client_addr)s - "%(request_line)s" %(status_code)s',
            },
            # The proxy's access and debug lines are complete as written.
            "plain": {"format": "%(message)s"},
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
            "uvicorn.access": {"handlers": ["access"], "level": level.number, "propagate": False},
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
