"""The `toolcall-proxy` command: flags over environment variables, a startup banner, uvicorn."""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys
from collections.abc import Sequence

import uvicorn
from pydantic import ValidationError

from protocols import protocol_names

from .app import build_router
from .observability import (
    LOGGER_NAME,
    LogFormat,
    LogLevel,
    configure_logging,
    held_records,
    otel,
    prepare_multiprocess_dir,
)
from .server_limits import server_options
from .settings import SETTING_RECORD_KEY, Settings, configuration_errors
from .upstream import RoutesFileError

# Each flag overrides the environment variable it is written into (every worker reads it).
FLAG_VARIABLES = {
    "upstream": "UPSTREAM_BASE_URL",
    "protocol": "TOOL_PROTOCOL",
    "host": "PROXY_HOST",
    "port": "PROXY_PORT",
    "routes": "ROUTES_FILE",
    "workers": "PROXY_WORKERS",
    "log_level": "LOG_LEVEL",
}
EXIT_BAD_CONFIGURATION = 2
STARTUP_LOGGER = f"{LOGGER_NAME}.startup"
DEMO_MODEL = "demo"
# The banner's stand-in for a real upstream's model name, which only the upstream knows.
REAL_MODEL_PLACEHOLDER = "MODEL"
# The banner's sample request: one tool, a question that calls for it.
SAMPLE_REQUEST = {
    "model": DEMO_MODEL,
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
    return build_parser().parse_args(argv)


def build_parser() -> argparse.ArgumentParser:
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
    parser.add_argument("--workers", type=int, help="worker processes [PROXY_WORKERS; default 1]")
    parser.add_argument(
        "--log-level",
        choices=[level.value for level in LogLevel],
        help="level of every log line, access lines included [LOG_LEVEL; default info]",
    )
    return parser


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
    model = DEMO_MODEL if settings.uses_demo_upstream else REAL_MODEL_PLACEHOLDER
    sample = shlex.quote(json.dumps({**SAMPLE_REQUEST, "model": model}, separators=(",", ":")))
    lines.append(
        "try:" if settings.uses_demo_upstream else f"try ({model}: a model {base}/models lists):"
    )
    lines.append(
        f"  curl -s {base}/chat/completions -H 'Content-Type: application/json'{auth} -d {sample}"
    )
    return "\n".join(lines)


def report_bad_configuration(problems: Sequence[str]) -> None:
    """Why the command will not start, one line per problem. The settings could not be read,
    so LOG_FORMAT is looked at directly: a log pipeline that reads JSON must get this as JSON
    too."""
    flags = {variable: flag for flag, variable in FLAG_VARIABLES.items()}
    lines = []
    for problem in problems:
        variable = problem.partition("=")[0]
        flag = flags.get(variable)
        lines.append(problem if flag is None else f"{problem} (flag --{flag.replace('_', '-')})")
    text = "\n".join(f"  {line}" for line in lines)
    if os.environ.get("LOG_FORMAT", "").strip().lower() == LogFormat.JSON:
        configure_logging(LogFormat.JSON, LogLevel.INFO)
        logging.getLogger(STARTUP_LOGGER).error("bad configuration:\n%s", text)
    else:
        print(f"toolcall-proxy: bad configuration:\n{text}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    for flag, variable in FLAG_VARIABLES.items():
        value = getattr(args, flag)
        if value is not None:
            os.environ[variable] = str(value)
    with held_records() as warnings:  # written once logging is set up from the settings
        try:
            settings = Settings()
            build_router(settings)  # a bad routes file stops the command here, not in each worker
            otel.signals(os.environ)  # so does an OTLP protocol no exporter here speaks
        except ValidationError as error:
            report_bad_configuration(configuration_errors(error))
            raise SystemExit(EXIT_BAD_CONFIGURATION) from None
        except RoutesFileError as error:
            report_bad_configuration([f"ROUTES_FILE={str(settings.routes_file)!r}: {error}"])
            raise SystemExit(EXIT_BAD_CONFIGURATION) from None
        except otel.OpenTelemetryConfigError as error:
            report_bad_configuration([str(error)])
            raise SystemExit(EXIT_BAD_CONFIGURATION) from None
    log_config = configure_logging(settings.log_format, settings.log_level)
    for record in warnings:
        logging.getLogger(record.name).handle(record)
        # The value was replaced by its default: the workers read the default, silently.
        os.environ.pop(getattr(record, SETTING_RECORD_KEY, ""), None)
    if settings.log_format is LogFormat.JSON:
        logging.getLogger(STARTUP_LOGGER).info(banner(settings))
    else:
        print(banner(settings), flush=True)
    prepare_multiprocess_dir()
    uvicorn.run(
        "service.app:app_from_environment",
        factory=True,
        host=settings.proxy_host,
        port=settings.proxy_port,
        workers=settings.proxy_workers,
        log_level=settings.log_level.number,
        log_config=log_config,
        # The proxy's access line carries more (request id, model, calls) and never a query
        # string; uvicorn's own is never written, ACCESS_LOG=false means no access lines.
        access_log=False,
        timeout_graceful_shutdown=settings.drain_timeout,
        loop="auto",
        **server_options(settings),
    )


if __name__ == "__main__":
    main()
