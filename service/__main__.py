"""The `toolcall-proxy` command: flags over environment variables, a startup banner, uvicorn."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence

import uvicorn
from pydantic import ValidationError

from protocols import protocol_names

from .app import build_router
from .metrics import reset_multiprocess_dir
from .routing import RoutesFileError
from .settings import Settings

# Each flag overrides the environment variable it is written into (every worker reads it).
FLAG_VARIABLES = {
    "upstream": "UPSTREAM_BASE_URL",
    "protocol": "TOOL_PROTOCOL",
    "host": "PROXY_HOST",
    "port": "PROXY_PORT",
    "routes": "ROUTES_FILE",
}
LOG_LEVELS = ["critical", "error", "warning", "info", "debug", "trace"]
EXIT_BAD_CONFIGURATION = 2
# The banner's sample request: one tool, a question that calls for it.
SAMPLE_REQUEST = {
    "model": "demo",
    "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            },
        }
    ],
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="toolcall-proxy",
        description="OpenAI-compatible proxy that gives text-only models native tool calls. "
        "Every setting is also an environment variable; flags override them.",
    )
    parser.add_argument(
        "--upstream",
        help="upstream base URL, e.g. http://127.0.0.1:8001/v1 "
        "[UPSTREAM_BASE_URL; unset: the embedded demo upstream]",
    )
    parser.add_argument(
        "--protocol",
        choices=protocol_names(),
        help="text protocol for tools [TOOL_PROTOCOL; default json-mix]",
    )
    parser.add_argument("--host", help="address to listen on [PROXY_HOST; default 127.0.0.1]")
    parser.add_argument("--port", type=int, help="port to listen on [PROXY_PORT; default 8000]")
    parser.add_argument("--routes", help="routes file, TOML or JSON [ROUTES_FILE]")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument(
        "--log-level", choices=LOG_LEVELS, default="info", help="uvicorn log level (default info)"
    )
    return parser.parse_args(argv)


def banner(settings: Settings) -> str:
    """What a newcomer needs: where the proxy listens, what it talks to, a request to try."""
    base = f"http://{settings.proxy_host}:{settings.proxy_port}/v1"
    lines = [f"toolcall-proxy: OpenAI API at {base} (protocol {settings.tool_protocol})"]
    if settings.uses_demo_upstream:
        lines.append(
            f"upstream: the embedded DEMO upstream at {settings.effective_upstream_url} "
            "(rule-based, not a model; set UPSTREAM_BASE_URL or --upstream for a real one)"
        )
    else:
        lines.append(f"upstream: {settings.effective_upstream_url}")
    auth = " -H 'Authorization: Bearer <one of PROXY_API_KEYS>'" if settings.proxy_api_keys else ""
    sample = shlex.quote(json.dumps(SAMPLE_REQUEST, separators=(",", ":")))
    lines.append("try:")
    lines.append(
        f"  curl -s {base}/chat/completions -H 'Content-Type: application/json'{auth} -d {sample}"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    for flag, variable in FLAG_VARIABLES.items():
        value = getattr(args, flag)
        if value is not None:
            os.environ[variable] = str(value)
    try:
        settings = Settings()
        build_router(settings)  # a bad routes file stops the command here, not in each worker
    except (ValidationError, RoutesFileError) as error:
        print(f"toolcall-proxy: bad configuration:\n{error}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_CONFIGURATION) from None
    print(banner(settings), flush=True)
    reset_multiprocess_dir()
    uvicorn.run(
        "service.app:app_from_environment",
        factory=True,
        host=settings.proxy_host,
        port=settings.proxy_port,
        workers=args.workers,
        log_level=args.log_level,
        # The proxy's own access line carries more (request id, model, calls); one is enough.
        access_log=not settings.access_log,
        loop="auto",
        http="auto",
    )


if __name__ == "__main__":
    main()
