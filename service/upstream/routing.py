"""Model routes: a client-facing model name mapped to an upstream, its model name, its text
protocol and its API key, loaded from a TOML or JSON routes file.

    [routes.coder]                      # TOML; JSON is {"routes": {"coder": {...}}}
    base_url = "http://gpu-box:8001/v1" # default: UPSTREAM_BASE_URL
    model = "qwen2.5-coder-7b"          # default: the client-facing name
    protocol = "morph-xml"              # default: TOOL_PROTOCOL
    api_key_env = "CODER_API_KEY"       # default: UPSTREAM_API_KEY, see below
    native_tools = true                 # default: UPSTREAM_NATIVE_TOOLS
    structured_output = true            # default: UPSTREAM_STRUCTURED_OUTPUT
    call_repair_retries = 0             # default: CALL_REPAIR_RETRIES
    single_call = true                  # default: SINGLE_CALL
    aliases = ["claude-coder"]          # more names it answers to, listed in /v1/models
    response_schema = "tokenizer_config.json"  # the model's call format, from its schema
    response_template = "tokenizer_config.json"  # or from its response template
    format = {open = "<call {name}>", arguments = "json", close = "</call>"}  # or written here

A route's `format` (a call format described as data, `protocols.described_dialect`),
`response_schema` and `response_template` (each a path, from the routes file's folder, to the
model's `tokenizer_config.json` or a JSON file of its own, or given as a table) are read by
that route's parsers beside the dialects every route reads.

A route without `api_key_env` gets UPSTREAM_API_KEY only when its base_url has the default
upstream's origin (scheme, host and port): that key is never sent to another server.

Every route is checked as the file is loaded, once at start: a field, type, protocol or URL
the proxy cannot use stops the command, naming the route, the field, the value and what it
accepts.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import SecretStr

from protocols import (
    FormatError,
    Protocol,
    described_dialect,
    get_protocol,
    protocol_names,
    schema_dialect,
    template_dialect,
)

from ..settings import unknown_protocol, upstream_url_problem

# Each field a route may hold, and the type of its value.
ROUTE_FIELDS: dict[str, type | tuple[type, ...]] = {
    "base_url": str,
    "model": str,
    "protocol": str,
    "api_key_env": str,
    "native_tools": bool,
    "structured_output": bool,
    "call_repair_retries": int,
    "single_call": bool,
    "aliases": list,
    "format": dict,
    "response_schema": (str, dict),
    "response_template": (str, dict),
}
# How a field's type is said in an error.
TYPE_NAMES: dict[type | tuple[type, ...], str] = {
    bool: "true or false",
    str: "a string",
    int: "a whole number, 0 or more",
    list: "a list of names",
    dict: "a table",
    (str, dict): "a path to a JSON file or a table",
}


class RoutesFileError(ValueError):
    """The routes file is unreadable or malformed; the proxy refuses to start. The message
    says what is wrong in the file; its reader names the file."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where one request goes and how its tools are written."""

    base_url: str
    model: str | None  # replaces the request's `model` when set
    protocol_name: str
    api_key: SecretStr | None
    # The upstream calls tools itself: tools go to it as sent, its calls come back as its
    # own, and calls it leaves in its text are still parsed out of it.
    native_tools: bool = False
    # It takes `response_format` with a JSON schema, so a forced call is asked for by schema.
    structured_output: bool = False
    # Times an answer whose calls fail their tools' schemas is asked for again (0: never).
    call_repair_retries: int = 0
    # A client that says nothing of parallel calls gets one call an answer, as with
    # `parallel_tool_calls: false`: the prompt asks for one, the answer ends after it.
    single_call: bool = False
    # The model's own call formats (`format`, `response_schema`), read by its parsers alone.
    dialects: tuple[type, ...] = ()
    # Parsed once: httpx parses a URL given as text on every request (~12 µs).
    chat_url: httpx.URL = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "chat_url", httpx.URL(f"{self.base_url}/chat/completions"))


class Router:
    """Picks the target for a request's `model`; unrouted models go to the default target.
    Every target's protocol is a registered one (the settings and `load_routes` check).

    >>> router.target_for("coder").base_url
    'http://gpu-box:8001/v1'
    """

    def __init__(self, default: Target, routes: Mapping[str, Target]) -> None:
        self.default = default
        self._routes = dict(routes)
        self._protocols = {
            name: get_protocol(name)
            for name in {default.protocol_name, *(t.protocol_name for t in routes.values())}
        }

    @property
    def route_names(self) -> list[str]:
        return list(self._routes)

    def target_for(self, model: object) -> Target:
        if isinstance(model, str):
            return self._routes.get(model, self.default)
        return self.default

    def protocol_for(self, target: Target) -> Protocol:
        return self._protocols[target.protocol_name]


def load_routes(path: Path, default: Target) -> dict[str, Target]:
    """Routes from a `.toml` or `.json` file, each under its name and its aliases; fields a
    route omits come from `default`."""
    try:
        text = path.read_text(encoding="utf-8")
        document = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, ValueError) as exc:
        raise RoutesFileError(f"cannot be read: {exc}") from exc
    routes = document.get("routes") if isinstance(document, dict) else None
    if not isinstance(routes, dict):
        raise RoutesFileError("expected a top-level 'routes' table")
    named: dict[str, Target] = {}
    for name, entry in routes.items():
        target = _route(name, entry, default, path.parent)
        for alias in (name, *entry.get("aliases", ())):
            if alias in named or (alias != name and alias in routes):
                raise RoutesFileError(f"route {name!r}: {alias!r} already names another route")
            named[alias] = target
    return named


def _route(name: str, entry: Any, default: Target, folder: Path) -> Target:
    if not isinstance(entry, dict):
        raise RoutesFileError(f"route {name!r}: expected a table")
    unknown = set(entry) - ROUTE_FIELDS.keys()
    if unknown:
        raise RoutesFileError(
            f"route {name!r}: unknown fields {sorted(unknown)}; accepted: {', '.join(ROUTE_FIELDS)}"
        )
    for key, value in entry.items():
        if not _of_type(value, ROUTE_FIELDS[key]):
            kind = TYPE_NAMES[ROUTE_FIELDS[key]]
            raise RoutesFileError(f"route {name!r}: {key} = {value!r}: {key} must be {kind}")
    problem = _route_problem(entry)
    if problem is not None:
        raise RoutesFileError(f"route {name!r}: {problem}")
    base_url = entry.get("base_url", default.base_url).rstrip("/")
    api_key = default.api_key if _origin(base_url) == _origin(default.base_url) else None
    if "api_key_env" in entry:
        env_name = entry["api_key_env"]
        if env_name not in os.environ:
            raise RoutesFileError(f"route {name!r}: environment variable {env_name} is not set")
        api_key = SecretStr(os.environ[env_name])
    return Target(
        base_url=base_url,
        model=entry.get("model", name),
        protocol_name=entry.get("protocol", default.protocol_name),
        api_key=api_key,
        native_tools=entry.get("native_tools", default.native_tools),
        structured_output=entry.get("structured_output", default.structured_output),
        call_repair_retries=entry.get("call_repair_retries", default.call_repair_retries),
        single_call=entry.get("single_call", default.single_call),
        dialects=_dialects(name, entry, folder),
    )


def _dialects(name: str, entry: dict[str, Any], folder: Path) -> tuple[type, ...]:
    """The route's own call formats, each checked whole: a problem names the key."""
    dialects: list[type] = []
    if "format" in entry:
        try:
            dialects.append(described_dialect(name, entry["format"]))
        except FormatError as error:
            raise RoutesFileError(f"route {name!r}: format.{error}") from None
    for key, dialect in (
        ("response_schema", schema_dialect),
        ("response_template", template_dialect),
    ):
        if key in entry:
            try:  # its keys are named from the key on
                dialects.append(dialect(name, _document(key, entry[key], folder)))
            except FormatError as error:
                raise RoutesFileError(f"route {name!r}: {error}") from None
    return tuple(dialects)


def _document(key: str, value: str | dict[str, Any], folder: Path) -> dict[str, Any]:
    """A response_schema or response_template given inline, or the JSON file (a
    tokenizer_config.json) it names."""
    if isinstance(value, dict):
        return {key: value}
    path = folder / value
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FormatError(key, f"{str(path)!r} cannot be read: {exc}") from None
    if not isinstance(document, dict):
        raise FormatError(key, f"{str(path)!r} holds no JSON object")
    return document


def _of_type(value: Any, kind: type | tuple[type, ...]) -> bool:
    """Whether a route's value is of its field's type: a whole number 0 or more, a list of
    non-empty names."""
    if type(value) not in (kind if isinstance(kind, tuple) else (kind,)):
        return False
    if isinstance(value, int) and not isinstance(value, bool):
        return value >= 0
    if isinstance(value, list):
        return all(isinstance(name, str) and name for name in value)
    return True


def _route_problem(entry: dict[str, Any]) -> str | None:
    """What is wrong with a route's protocol or base_url, naming the field and its value."""
    protocol = entry.get("protocol")
    if protocol is not None and protocol not in protocol_names():
        return f"protocol = {protocol!r}: {unknown_protocol(protocol)}"
    url = entry.get("base_url")
    problem = None if url is None else upstream_url_problem(url)
    return None if problem is None else f"base_url = {url!r}: {problem}"


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme.lower(), parts.hostname, port
