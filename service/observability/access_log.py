"""One access line per request on the `toolcall_proxy.access` logger: a human-readable
message, with the same facts as fields of the record that the JSON format (LOG_FORMAT=json)
writes as keys of the line's object. Paths are logged without their query
string and no header is logged, so keys sent either way never reach the log."""

from __future__ import annotations

import json
import logging
import sys
from enum import StrEnum
from typing import Any

from .request_record import RequestRecord

LOGGER_NAME = "toolcall_proxy"  # the parent of the access and debug loggers
ACCESS_LOGGER = f"{LOGGER_NAME}.access"
DEBUG_LOGGER = f"{LOGGER_NAME}.debug"
# Loggers whose lines are complete as written (no level prefix in text logs). Only these:
# any other logger under LOGGER_NAME writes warnings, and a warning must say it is one.
LINE_LOGGERS = (ACCESS_LOGGER, DEBUG_LOGGER)
access_logger = logging.getLogger(ACCESS_LOGGER)
# A model name is the client's string: logged whole up to here, then cut.
MAX_LOGGED_MODEL_CHARS = 128
MILLISECONDS = 1000
# The log record attribute holding the access line's fields, for the JSON formatter.
ACCESS_FIELDS = "access_fields"


class LogFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


def log_access(record: RequestRecord) -> None:
    fields = _fields(record)
    access_logger.info(_text_line(fields), extra={ACCESS_FIELDS: fields})


def use_stderr_unless_configured(formatter: logging.Formatter) -> None:
    """Give the access and debug loggers a stderr handler at INFO, unless the application
    that runs the proxy (or the `toolcall-proxy` command) has configured logging already
    (then its handlers and levels rule)."""
    parent = logging.getLogger(LOGGER_NAME)
    if parent.level == logging.NOTSET:
        parent.setLevel(logging.INFO)
    for name in LINE_LOGGERS:
        logger = logging.getLogger(name)
        if not logger.hasHandlers():
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(formatter)
            logger.addHandler(handler)


def _fields(record: RequestRecord) -> dict[str, Any]:
    model = record.model[:MAX_LOGGED_MODEL_CHARS] if record.model is not None else None
    return {
        "request_id": record.request_id,
        "method": record.method,
        "path": record.path,
        "status": record.status,
        "duration_ms": round(record.duration * MILLISECONDS, 1),
        "model": model,
        "protocol": record.protocol,
        "stream": record.stream,
        "tool_calls": record.tool_calls,
        "client_disconnected": record.client_disconnected,
        "session": record.session,
    }


def _text_line(fields: dict[str, Any]) -> str:
    """`POST /v1/chat/completions 200 12.3ms model="m" protocol=json-mix stream=true
    tool_calls=1 request_id=...` (and `session=...` when the client named one); the client's
    strings JSON-quoted, so no newline gets in."""
    request = json.dumps(f"{fields['method']} {fields['path']}")
    line = (
        f"{request} {fields['status']} {fields['duration_ms']}ms"
        f" model={json.dumps(fields['model'])} protocol={fields['protocol']}"
        f" stream={json.dumps(fields['stream'])} tool_calls={fields['tool_calls']}"
        f" request_id={fields['request_id']}"
    )
    if fields["client_disconnected"]:
        line += " client_disconnected=true"
    if fields["session"] is not None:
        line += f" session={fields['session']}"
    return line
