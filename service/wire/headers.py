"""Which headers cross the proxy, each way, and which `Authorization` the upstream gets."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import SecretStr

# RFC 9110 section 7.6.1: connection-specific headers are never forwarded by a proxy.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# The headers the Anthropic SDKs and Google's (Gemini CLI, google-genai) send their key in,
# beside `Authorization: Bearer`.
API_KEY_HEADER = "x-api-key"
GOOGLE_API_KEY_HEADER = "x-goog-api-key"
# Google's clients name themselves in this header; curl users of the Gemini API send their key
# as this query parameter instead of the header.
GOOGLE_CLIENT_HEADER = "x-goog-api-client"
GOOGLE_KEY_PARAMETER = "key"
# Set by the proxy itself for the upstream hop (host, length and encoding follow the body
# that is actually sent; authorization follows `upstream_authorization`, which reads the
# client's key from either header).
NOT_FORWARDED_UPSTREAM = HOP_BY_HOP | {
    "host",
    "content-length",
    "accept-encoding",
    "authorization",
    API_KEY_HEADER,
    GOOGLE_API_KEY_HEADER,
}
# The proxy's server adds its own.
NOT_FORWARDED_DOWNSTREAM = HOP_BY_HOP | {"date", "server"}
# Asked of the upstream when the client named no encoding: raw bytes go back unchanged,
# so they must be in an encoding the client is known to accept.
IDENTITY = "identity"

HeaderPairs = list[tuple[str, str]]


def client_authorization(authorization: str | None, api_key: str | None) -> str | None:
    """The client's key as an `Authorization` value: as it sent it, or its `x-api-key` (or
    `x-goog-api-key`) as a bearer token (the upstream speaks OpenAI's API, whose key is a
    bearer token)."""
    if authorization is None and api_key:
        return f"Bearer {api_key.strip()}"
    return authorization


def upstream_authorization(
    api_key: SecretStr | None, client_authorization: str | None, *, client_key_is_ours: bool
) -> str | None:
    """The configured upstream key; else the client's own, unless it is the proxy's key."""
    if api_key is not None:
        return f"Bearer {api_key.get_secret_value()}"
    if client_key_is_ours:
        return None
    return client_authorization


def upstream_headers(
    client_headers: Iterable[tuple[str, str]], authorization: str | None, *, relay: bool
) -> HeaderPairs:
    """Headers for the upstream request. `relay`: the answer goes back byte for byte, so it
    must come in an encoding the client accepts; otherwise the proxy decodes it itself."""
    client_headers = list(client_headers)
    pairs = _end_to_end(client_headers, NOT_FORWARDED_UPSTREAM)
    if authorization is not None:
        pairs.append(("authorization", authorization))
    if relay:
        accepted = [v for k, v in client_headers if k.lower() == "accept-encoding"]
        pairs.append(("accept-encoding", accepted[0] if accepted else IDENTITY))
    return pairs


def downstream_headers(upstream_headers: Iterable[tuple[str, str]]) -> HeaderPairs:
    return _end_to_end(list(upstream_headers), NOT_FORWARDED_DOWNSTREAM)


def _end_to_end(headers: list[tuple[str, str]], not_forwarded: frozenset[str]) -> HeaderPairs:
    """`headers` less `not_forwarded` and those their `Connection` header names."""
    dropped = not_forwarded | connection_options(headers)
    return [(k, v) for k, v in headers if k.lower() not in dropped]


def connection_options(headers: Iterable[tuple[str, str]]) -> frozenset[str]:
    """The header names a `Connection` header lists: hop-by-hop too (RFC 9110 7.6.1)."""
    return frozenset(
        option.strip().lower()
        for name, value in headers
        if name.lower() == "connection"
        for option in value.split(",")
    )
