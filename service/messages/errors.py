"""Anthropic's error shape `{"type": "error", "error": {type, message}}`, which the clients of
the Messages API read: the body of every error answered under its paths (registered with the
app's `ErrorShapes`) and the data of a Messages stream's `error` event."""

from __future__ import annotations

from typing import Any

from .overflow import context_overflow

# The path the Messages API is served under; every path below it answers in its shape too.
MESSAGES_PATH = "/v1/messages"
# Anthropic's error types by HTTP status (its documented pairs, and the proxy's 502 and 504,
# which Anthropic's clients know as an API error and a timeout).
ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}
BAD_REQUEST = 400
# An error mid-stream has no status of its own: its code says what it was.
ANTHROPIC_TYPE_BY_CODE = {"upstream_timeout": "timeout_error", "server_busy": "overloaded_error"}


def anthropic_error_type(status: int) -> str:
    return ANTHROPIC_ERROR_TYPES.get(
        status, "api_error" if status >= 500 else "invalid_request_error"
    )


def anthropic_error_body(message: str, error_type: str) -> dict[str, Any]:
    """`{"type": "error", "error": {"type": ..., "message": ...}}`, Anthropic's error body and
    the data of its streams' `error` event."""
    return {"type": "error", "error": {"type": error_type, "message": message}}


def anthropic_error_answer(error: dict[str, Any], status: int) -> tuple[dict[str, Any], int]:
    """The app's error shape under the Messages API's paths: the status kept."""
    return anthropic_error_of(error, status), status


def anthropic_error_of(error: dict[str, Any], status: int | None = None) -> dict[str, Any]:
    """An OpenAI error body's `error` in Anthropic's shape: typed by the status it was
    answered with, or, mid-stream, by its code; the field at fault, which Anthropic's shape
    has no place for, leads the message. A request that did not fit the upstream's context
    is refused in Anthropic's words (`overflow.py`)."""
    if status == BAD_REQUEST and (overflow := context_overflow(error)) is not None:
        return anthropic_error_body(overflow.anthropic_message(), ANTHROPIC_ERROR_TYPES[status])
    message = str(error.get("message") or "upstream failed")
    if error.get("param"):
        message = f"{error['param']}: {message}"
    if status is not None:
        return anthropic_error_body(message, anthropic_error_type(status))
    code = str(error.get("code"))
    return anthropic_error_body(message, ANTHROPIC_TYPE_BY_CODE.get(code, "api_error"))
