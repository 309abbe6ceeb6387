"""Google's error shape, `{"error": {"code", "message", "status"}}`, for every failure under
the Gemini API's paths: the HTTP status as `code`, its canonical gRPC name as `status`, the
field at fault leading the message (the google-genai SDKs raise by `code` and show the
message)."""

from __future__ import annotations

from typing import Any

# google.rpc.Code's names by the HTTP status Google maps them to (and the proxy's 502, an
# upstream that could not be reached or answered badly, as unavailable).
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


def google_error(error: dict[str, Any], status: int) -> dict[str, Any]:
    """An OpenAI error body's `error` in Google's shape, for the status it is answered with."""
    message = str(error.get("message") or "upstream failed")
    if error.get("param"):
        message = f"{error['param']}: {message}"
    name = GOOGLE_STATUSES.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    return {"error": {"code": status, "message": message, "status": name}}
