"""The Gemini API's routes served on the proxy: its models, and (under `/v1/`, where OpenAI's
clients list models too) which API a request to a shared path speaks."""

from __future__ import annotations

from starlette.requests import Request

from ..wire import GOOGLE_API_KEY_HEADER, GOOGLE_CLIENT_HEADER, GOOGLE_KEY_PARAMETER


def asks_gemini(request: Request) -> bool:
    """Whether a request to a path both APIs have (`GET /v1/models`) comes from a Gemini API
    client: Google's SDKs and Gemini CLI send `x-goog-api-client` and `x-goog-api-key`,
    curl users the `key` parameter."""
    headers = request.headers
    return (
        GOOGLE_CLIENT_HEADER in headers
        or GOOGLE_API_KEY_HEADER in headers
        or GOOGLE_KEY_PARAMETER in request.query_params
    )
