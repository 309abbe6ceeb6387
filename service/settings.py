"""Every knob of the proxy, read from environment variables (no prefix); the CLI writes its
flags into the same variables so that every uvicorn worker sees one configuration."""

from __future__ import annotations

import difflib
import logging
import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from protocols import (
    SMALL_CALL_CHARS,
    ArgumentsMode,
    ParserOptions,
    UnknownTools,
    protocol_names,
)

from .observability import DebugMode, HighlightStyle, LogFormat, LogLevel

logger = logging.getLogger(__name__)
# A warning about an environment variable whose value was replaced by the default carries the
# variable's name in this log record attribute: the CLI removes that variable before starting
# workers, so each warning is given once, not again by every process that reads the settings.
SETTING_RECORD_KEY = "setting"

MEBIBYTE = 1024 * 1024
# Generous for long agent histories (Roo Code sends whole files back as tool results), yet
# small enough that one request cannot make the proxy buffer an unbounded body.
DEFAULT_MAX_REQUEST_BYTES = 10 * MEBIBYTE
# One event-stream line carries one chunk, a few hundred bytes of delta; 8 MiB is far above
# any real chunk, yet bounds what an upstream that never sends a line break costs.
DEFAULT_UPSTREAM_MAX_LINE_BYTES = 8 * MEBIBYTE
# A whole non-streamed answer, decompressed: room for long outputs with logprobs, while a
# gzip bomb (200 KB inflating to 200 MB) stops here. A streamed Responses answer is held
# whole too (its last events carry every item), so its stream is bounded the same.
DEFAULT_UPSTREAM_MAX_BODY_BYTES = 64 * MEBIBYTE
# Server limits, enforced before a request reaches the app. A request head (line plus
# headers) past 64 KiB is refused: real clients send a few KiB, nginx allows 32 KiB.
DEFAULT_SERVER_MAX_HEADER_BYTES = 64 * 1024
# A client has this long to send its whole head, from connecting or from its request's first
# byte: nginx's client_header_timeout is 60 s; a healthy client needs milliseconds.
DEFAULT_SERVER_HEADER_TIMEOUT = 30.0
# And this long for its body once the head is in: 10 MiB at 1 Mbit/s takes 84 s.
DEFAULT_SERVER_BODY_TIMEOUT = 120.0
# An idle keep-alive connection is closed after this long (uvicorn's own default).
DEFAULT_SERVER_KEEP_ALIVE_TIMEOUT = 5.0
# A streamed answer's write that a client has not taken for this long (the socket's buffers
# full: megabytes waiting) means a client that stopped reading; its answer is abandoned and
# the upstream connection it held goes back to the pool. A reading client takes every write
# in milliseconds; 30 s leaves room for a stalled network before a pool slot is written off.
DEFAULT_SERVER_SEND_TIMEOUT = 30.0
DEFAULT_PROTOCOL = "json-mix"
# A model that answered a forced call in prose is shown its answer and asked once more: most
# write the call when told; a second refusal is the model's answer, not a slip, and each
# retry costs a whole upstream answer.
DEFAULT_FORCED_CALL_RETRIES = 1
# A call whose arguments do not follow its tool's schema is sent as written with an error
# record unless asked for: clients declare properties required that their own examples leave
# out (Roo Code's strict read_file requires mode, offset, limit and indentation and shows
# `{ path: 'src/app.ts' }`), and asking again for them cost a second upstream answer on
# nearly every such call. Told what is wrong, a model mostly fixes it: a route or deployment
# whose tools' schemas say what they mean turns it on.
DEFAULT_CALL_REPAIR_RETRIES = 0
# Hosts a server binds to for "every interface"; the proxy can't dial them, so it calls its
# own embedded demo upstream over loopback instead.
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::", "[::]"})
DEMO_MOUNT_PATH = "/demo"
# Responses kept for `previous_response_id` and `item_reference`: an agent's conversation
# names the answer just before it, so an hour and a thousand answers cover many concurrent
# conversations; what they take is bounded by the byte budget below.
DEFAULT_RESPONSE_STORE_SIZE = 1024
DEFAULT_RESPONSE_STORE_TTL_SECONDS = 3600.0
# Each entry holds its whole conversation, serialized (about its request's size): 64 MiB keeps
# the latest turn of a hundred-odd long agent conversations, or six at the request limit,
# and leaves the manifests' 512 MiB proxy container room for the requests in flight, which
# take several times their JSON as Python objects.
DEFAULT_RESPONSE_STORE_MAX_BYTES = 64 * MEBIBYTE
# Redis answers in well under a millisecond; one that has not connected or answered in a
# second is down or stuck, and the request is better off with a 503 than waiting.
DEFAULT_RESPONSE_STORE_TIMEOUT = 1.0
STORE_URL_SCHEMES = ("redis://", "rediss://", "unix://")
# Agent turns stream for minutes; a rollout waits this long for open answers before it cuts
# them. The manifests' terminationGracePeriodSeconds is sized from it.
DEFAULT_DRAIN_TIMEOUT = 300
# What Kubernetes writes into `<SERVICE>_PORT` for every Service in the namespace (service
# links): a Service named `proxy` or `metrics` sets PROXY_PORT or METRICS_PORT to this.
SERVICE_LINK = re.compile(r"(tcp|udp|sctp)://[^/\s]+:\d+")
UPSTREAM_URL_SCHEMES = ("http", "https")
# Endpoints the proxy adds to an upstream base URL itself: a base URL ending in one (a
# pasted request URL) would have every request sent to `.../chat/completions/chat/completions`.
API_ENDPOINTS = ("/chat/completions", "/completions", "/responses", "/messages", "/models")


def upstream_url_problem(url: str) -> str | None:
    """What is wrong with `url` as an upstream's base URL, said with what is accepted; None if
    it is one."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in UPSTREAM_URL_SCHEMES or not parts.hostname:
        example = f"http://{url.split('://')[-1]}" if url else "http://127.0.0.1:8001/v1"
        return f"not an http:// or https:// URL with a host; accepted: a base URL like {example}"
    path = parts.path.rstrip("/")
    endpoint = next((end for end in API_ENDPOINTS if path.endswith(end)), None)
    if endpoint is not None:
        base = url.rstrip("/").removesuffix(endpoint)
        return (
            f"ends in the endpoint {endpoint}, which the proxy adds itself; accepted: the "
            f"API's base URL ({base})"
        )
    return None


def unknown_protocol(name: str) -> str:
    """Why `name` is not a protocol, with the registered ones (and the likely one)."""
    known = protocol_names()
    close = difflib.get_close_matches(name.lower().replace("_", "-"), known, n=1)
    guess = f" (did you mean {close[0]!r}?)" if close else ""
    return f"not a protocol{guess}; accepted: {', '.join(known)}"


class HostedTools(StrEnum):
    """What /v1/responses does with tools OpenAI's servers run (web search, file search, code
    interpreter...): a text-only upstream cannot run them, and agents such as Codex send them
    by default."""

    DROP = "drop"  # left out of what the model sees, counted in a metric, noted in the trace
    REJECT = "reject"  # a 400 naming the tool, for deployments that want clients told


class ReasoningField(StrEnum):
    """The field of a chat message (and of a streamed delta) that carries the reasoning:
    vLLM, DeepSeek and most clients read `reasoning_content`; OpenRouter-style clients and
    OpenAI's gpt-oss checks read `reasoning`."""

    REASONING_CONTENT = "reasoning_content"
    REASONING = "reasoning"
    BOTH = "both"

    @property
    def fields(self) -> tuple[str, ...]:
        if self is ReasoningField.BOTH:
            return (ReasoningField.REASONING_CONTENT.value, ReasoningField.REASONING.value)
        return (self.value,)


class Settings(BaseSettings):
    """The proxy's configuration. `Settings()` reads the environment; tests pass fields."""

    # An error names the setting, never its value: some hold keys or a password in a URL.
    model_config = SettingsConfigDict(
        case_sensitive=False, extra="ignore", hide_input_in_errors=True
    )

    upstream_base_url: str | None = Field(
        default=None, description="upstream OpenAI API base URL, e.g. http://127.0.0.1:8001/v1"
    )
    upstream_api_key: SecretStr | None = None
    tool_protocol: str = DEFAULT_PROTOCOL
    proxy_host: str = "127.0.0.1"
    proxy_port: int = Field(default=8000, ge=0, le=65535)
    upstream_connect_timeout: float = Field(default=10.0, gt=0)
    upstream_read_timeout: float = Field(default=300.0, gt=0)
    upstream_total_timeout: float = Field(default=600.0, gt=0)
    upstream_max_connections: int = Field(default=100, ge=1)
    upstream_max_line_bytes: int = Field(default=DEFAULT_UPSTREAM_MAX_LINE_BYTES, ge=1)
    upstream_max_body_bytes: int = Field(default=DEFAULT_UPSTREAM_MAX_BODY_BYTES, ge=1)
    server_max_header_bytes: int = Field(default=DEFAULT_SERVER_MAX_HEADER_BYTES, ge=1024)
    server_header_timeout: float = Field(default=DEFAULT_SERVER_HEADER_TIMEOUT, gt=0)
    server_body_timeout: float = Field(default=DEFAULT_SERVER_BODY_TIMEOUT, gt=0)
    server_keep_alive_timeout: float = Field(default=DEFAULT_SERVER_KEEP_ALIVE_TIMEOUT, gt=0)
    server_send_timeout: float = Field(default=DEFAULT_SERVER_SEND_TIMEOUT, gt=0)
    # Unset: every request is taken. A cap sheds load with a 503 (Retry-After) that clients
    # retry, rather than queueing behind an upstream that is already full; idle connections
    # and health probes take no place.
    server_max_concurrency: int | None = Field(
        default=None, ge=1, description="requests in flight per worker, probes aside; beyond: 503"
    )
    proxy_api_keys: Annotated[tuple[SecretStr, ...], NoDecode] = ()
    routes_file: Path | None = None
    max_request_bytes: int = Field(default=DEFAULT_MAX_REQUEST_BYTES, ge=1)
    think_as_reasoning: bool = False
    chat_reasoning_field: ReasoningField = ReasoningField.REASONING_CONTENT
    tool_arguments_streaming: ArgumentsMode = ArgumentsMode.INCREMENTAL
    unknown_tools: UnknownTools = UnknownTools.CALL
    # Calls with arguments under this many characters are sent once decided (see
    # protocols.base.SMALL_CALL_CHARS for why 1 KiB); 0 streams every call at once.
    small_call_chars: int = Field(default=SMALL_CALL_CHARS, ge=0)
    off_protocol_calls: bool = Field(
        default=True, description="read an answer that is only call JSON objects as calls"
    )
    upstream_native_tools: bool = Field(
        default=False, description="the upstream calls tools itself: pass them through"
    )
    upstream_structured_output: bool = Field(
        default=False, description="the upstream takes response_format with a JSON schema"
    )
    forced_call_retries: int = Field(
        default=DEFAULT_FORCED_CALL_RETRIES,
        ge=0,
        description="times a forced call that did not come is asked for again",
    )
    call_repair_retries: int = Field(
        default=DEFAULT_CALL_REPAIR_RETRIES,
        ge=0,
        description="times an answer whose calls fail their schema is asked for again",
    )
    single_call: bool = Field(
        default=False,
        description="one call an answer for clients that do not send parallel_tool_calls",
    )
    metrics_port: int | None = Field(
        default=None, ge=1, le=65535, description="serve /metrics here, not on the API port"
    )
    metrics_host: str | None = Field(default=None, description="default: PROXY_HOST")
    proxy_workers: int = Field(default=1, ge=1, description="uvicorn worker processes")
    drain_timeout: int = Field(
        default=DEFAULT_DRAIN_TIMEOUT, ge=0, description="seconds open answers get at shutdown"
    )
    log_level: LogLevel = LogLevel.INFO
    access_log: bool = True
    log_format: LogFormat = LogFormat.TEXT
    response_store_size: int = Field(
        default=DEFAULT_RESPONSE_STORE_SIZE, ge=0, description="0: /v1/responses keeps nothing"
    )
    response_store_ttl_seconds: float = Field(default=DEFAULT_RESPONSE_STORE_TTL_SECONDS, gt=0)
    response_store_max_bytes: int = Field(default=DEFAULT_RESPONSE_STORE_MAX_BYTES, ge=0)
    # A password may be in it (redis://:password@host): kept out of reprs and logs.
    response_store_url: SecretStr | None = Field(
        default=None, description="redis:// (or rediss://, unix://): a store replicas share"
    )
    response_store_timeout: float = Field(default=DEFAULT_RESPONSE_STORE_TIMEOUT, gt=0)
    hosted_tools: HostedTools = HostedTools.DROP
    debug_parser_mw: DebugMode = DebugMode.OFF
    debug_parser_mw_style: HighlightStyle = HighlightStyle.BG

    @field_validator("tool_protocol")
    @classmethod
    def _known_protocol(cls, name: str) -> str:
        if name not in protocol_names():
            raise ValueError(unknown_protocol(name))
        return name

    @field_validator("upstream_base_url")
    @classmethod
    def _upstream_url(cls, url: str | None) -> str | None:
        problem = None if url is None else upstream_url_problem(url)
        if problem is not None:
            raise ValueError(problem)
        return url

    @field_validator("proxy_api_keys", mode="before")
    @classmethod
    def _split_keys(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(key.strip() for key in value.split(",") if key.strip())
        return value

    @field_validator("debug_parser_mw", "debug_parser_mw_style", mode="before")
    @classmethod
    def _known_debug_option(cls, value: object, info: ValidationInfo) -> object:
        """A debugging aid must not stop the proxy: an unknown value is warned about and
        replaced by the default."""
        field = cls.model_fields[str(info.field_name)]
        allowed = [member.value for member in type(field.default)]
        if isinstance(value, str) and value.lower() in allowed:
            return value.lower()
        logger.warning(
            "%s=%r is not one of %s; using %s",
            str(info.field_name).upper(),
            value,
            ", ".join(allowed),
            field.default.value,
            extra={SETTING_RECORD_KEY: str(info.field_name).upper()},
        )
        return field.default

    @field_validator("proxy_port", "metrics_port", mode="before")
    @classmethod
    def _service_link_is_unset(cls, value: object, info: ValidationInfo) -> object:
        """A Kubernetes service link is not a port the proxy was given: it is ignored (with a
        warning, since enableServiceLinks: false is the real fix), not a reason to exit."""
        if isinstance(value, str) and SERVICE_LINK.fullmatch(value.strip()):
            field = cls.model_fields[str(info.field_name)]
            logger.warning(
                "%s=%r looks like a Kubernetes service link, not a port; using %s "
                "(set enableServiceLinks: false in the pod spec)",
                str(info.field_name).upper(),
                value,
                field.default,
                extra={SETTING_RECORD_KEY: str(info.field_name).upper()},
            )
            return field.default
        return value

    @field_validator("upstream_base_url", "response_store_url", mode="before")
    @classmethod
    def _empty_url_is_unset(cls, value: object) -> object:
        return value or None

    @field_validator("response_store_url")
    @classmethod
    def _store_url_scheme(cls, url: SecretStr | None) -> SecretStr | None:
        if url is not None and not url.get_secret_value().startswith(STORE_URL_SCHEMES):
            raise ValueError(f"accepted: a URL starting with {', '.join(STORE_URL_SCHEMES)}")
        return url

    @property
    def uses_demo_upstream(self) -> bool:
        return self.upstream_base_url is None

    @property
    def effective_upstream_url(self) -> str:
        """The configured upstream, or the embedded demo upstream served by this proxy."""
        if self.upstream_base_url is not None:
            return self.upstream_base_url.rstrip("/")
        host = "127.0.0.1" if self.proxy_host in WILDCARD_HOSTS else self.proxy_host
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"http://{host}:{self.proxy_port}{DEMO_MOUNT_PATH}/v1"

    @property
    def effective_metrics_host(self) -> str:
        return self.metrics_host or self.proxy_host

    def parser_options(self) -> ParserOptions:
        """The parser options the settings give, built once when the app starts
        (`ProxyContext.parser_options`) and handed whole to every parser."""
        return ParserOptions(
            mode=self.tool_arguments_streaming,
            unknown_tools=self.unknown_tools,
            small_call_chars=self.small_call_chars,
            off_protocol_calls=self.off_protocol_calls,
        )


def configuration_errors(error: ValidationError) -> list[str]:
    """Each setting pydantic refused, as one line naming its variable, its value (unless it may
    hold a secret) and what it accepts."""
    lines = []
    for problem in error.errors(include_url=False):
        name = str(problem["loc"][0]) if problem["loc"] else ""
        field = Settings.model_fields.get(name)
        secret = field is not None and "SecretStr" in str(field.annotation)
        value = "(not shown: it may hold a secret)" if secret else repr(problem.get("input"))
        message = problem["msg"].removeprefix("Value error, ").replace("Input should", "should")
        lines.append(f"{name.upper()}={value}: {message}")
    return lines
