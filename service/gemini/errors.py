"""Google's error shape, `{"error": {"code", "message", "status"}}`, for every failure under
the Gemini API's paths: a google.rpc.Code's name as `status`, and as `code` (and the answer's
HTTP status) the HTTP status Google maps that name to, so every pair is one Google sends; the
field at fault leads the message (the google-genai SDKs raise by `code` and show the
message)."""

from __future__ import annotations

from typing import Any

# google.rpc.Code's names and the HTTP status each maps to (google/rpc/code.proto).
GOOGLE_CODES = {
    "CANCELLED": 499,
    "UNKNOWN": 500,
    "INVALID_ARGUMENT": 400,
    "DEADLINE_EXCEEDED": 504,
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "PERMISSION_DENIED": 403,
    "UNAUTHENTICATED": 401,
    "RESOURCE_EXHAUSTED": 429,
    "FAILED_PRECONDITION": 400,
    "ABORTED": 409,
    "OUT_OF_RANGE": 400,
    "UNIMPLEMENTED": 501,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
    "DATA_LOSS": 500,
}
# The name for each status the proxy (or an upstream) answers. Some have no code of their
# own and take the nearest: the proxy's 502 (an upstream that could not be reached or answered
# badly) is UNAVAILABLE, so 503, which clients retry; a body too large (413) is an
# INVALID_ARGUMENT, 400, as the Gemini API answers one; a timeout (408) DEADLINE_EXCEEDED.
GOOGLE_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
# The Gemini API's own paths: all of its beta, and a model's methods under `/v1/models`.
BETA_PATH, MODELS_PATH = "/v1beta", "/v1/models"


def google_status(status: int) -> tuple[str, int]:
    """The google.rpc.Code name for an HTTP status, and the HTTP status Google pairs it with."""
    name = GOOGLE_STATUSES.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    return name, GOOGLE_CODES[name]


def google_error(error: dict[str, Any], status: int) -> dict[str, Any]:
    """An OpenAI error body's `error` in Google's shape, for the status the proxy chose."""
    message = str(error.get("message") or "upstream failed")
    if error.get("param"):
        message = f"{error['param']}: {message}"
    name, code = google_status(status)
    return {"error": {"code": code, "message": message, "status": name}}


def google_error_answer(error: dict[str, Any], status: int) -> tuple[dict[str, Any], int]:
    """The app's error shape under the Gemini API's paths: answered with the body's code."""
    body = google_error(error, status)
    return body, body["error"]["code"]
