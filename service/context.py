"""What every endpoint shares for the app's lifetime: settings, the upstream client, the
model router, the metrics, the parser debug mode and the parser options, plus the upstream
headers a request gets."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import HTTPConnection, Request

from protocols import ParserOptions

from .observability import ParserDebug, ProxyMetrics
from .settings import Settings
from .upstream import Router, Target, Upstream
from .wire import (
    API_KEY_HEADER,
    GOOGLE_API_KEY_HEADER,
    HeaderPairs,
    client_authorization,
    upstream_authorization,
    upstream_headers,
)


def context_of(request: HTTPConnection) -> ProxyContext:
    """The app's context, made in its lifespan."""
    context: ProxyContext = request.app.state.context
    return context


@dataclass(frozen=True, slots=True)
class ProxyContext:
    settings: Settings
    upstream: Upstream
    router: Router
    metrics: ProxyMetrics
    debug: ParserDebug | None  # None: DEBUG_PARSER_MW=off
    parser_options: ParserOptions

    def headers_for(self, request: Request, target: Target, *, relay: bool) -> HeaderPairs:
        """The client's headers as the upstream should see them, with the right key."""
        headers = request.headers
        api_key = headers.get(API_KEY_HEADER) or headers.get(GOOGLE_API_KEY_HEADER)
        client = client_authorization(headers.get("authorization"), api_key)
        authorization = upstream_authorization(
            target.api_key, client, client_key_is_ours=bool(self.settings.proxy_api_keys)
        )
        return upstream_headers(request.headers.items(), authorization, relay=relay)
