"""A model's `response_template` (Hugging Face's declarative response parsing, which vLLM reads
with `--tool-call-parser response_template`) read as a call format: its `tool_calls` field
says where a call opens (`open`, or `open_pattern` capturing the tool's `name`) and closes
(`close`), how its content is written (`content`: `json`, or `xml-inline` tags of a key and
a value) and where the tool's name and arguments are (`transform`):

    "tool_calls": {"open_pattern": "<tool_call>\\\\s*<function=(?P<name>\\\\w+)>",
                   "close": "</tool_call>", "content": "xml-inline", ...,
                   "transform": {"function": {"name": "{name}", "arguments": "{content}"}}}

It compiles into the forms a described format compiles into (`described_format`): an open
tag the stream can find (literal text, blanks and the name, nothing else), text flowing
until it, a call held to its close and read whole, or streamed where it is JSON call objects.
The other fields (thinking, content) are not read: the proxy knows think blocks itself. What
cannot be read so is refused at start, naming the key and saying why."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..lenient.call_objects import ARGUMENT_KEYS, NAME_KEYS
from .call_reading import Arguments, CallReading, Value
from .described_format import FormatError, compile_forms, strings_of, template_form
from .dialect_forms import Dialect, OpenForm
from .response_schema import BLANK_PATTERNS, literal_prefix

ROOT = "response_template"
FIELD = f"{ROOT}.fields.tool_calls"
# The tool's name, captured by the open pattern: one group of characters, no nesting.
_NAME_GROUP = re.compile(r"\(\?P<name>[^()]+\)")
# A placeholder of a transform: the whole string, a path into what the content holds.
_PLACEHOLDER = re.compile(r"\{(\w+(?:\.\w+)*)\}")


def _template_text(text: str) -> str:
    """Literal text written as an open template (braces doubled)."""
    return text.replace("{", "{{").replace("}", "}}")


def _open_template(regex: str, key: str) -> str:
    """An `open_pattern` as an open template: its literal text, blanks, the name group."""
    template, at = [], 0
    while at < len(regex):
        text, end = literal_prefix(regex, at)
        blank = next((b for b in BLANK_PATTERNS if regex.startswith(b, at)), None)
        group = _NAME_GROUP.match(regex, at)
        if text:
            template.append(_template_text(text))
        elif blank is not None:
            template.append(" ")
            end = at + len(blank)
        elif group is not None and "{name}" not in template:
            template.append("{name}")
            end = group.end()
        else:
            raise FormatError(
                key,
                f"at {regex[at : at + 24]!r}: a stream finds an open tag of literal text, blanks"
                " (\\s*) and one (?P<name>...) group, nothing else",
            )
        at = end
    return "".join(template)


def _opens(field: Mapping[str, Any]) -> tuple[tuple[str, ...], bool]:
    """The field's open tags as templates, and whether they name the tool."""
    if "open_pattern" in field:
        pattern = field["open_pattern"]
        if not isinstance(pattern, str):
            raise FormatError(f"{FIELD}.open_pattern", "must be a regular expression")
        template = _open_template(pattern, f"{FIELD}.open_pattern")
        return (template,), "{name}" in template
    if "open" not in field:
        raise FormatError(FIELD, "has no open or open_pattern: where a call opens is not said")
    return tuple(map(_template_text, strings_of(field["open"], f"{FIELD}.open"))), False


def _closes(field: Mapping[str, Any]) -> tuple[str, ...]:
    if "close_pattern" in field:
        pattern = field["close_pattern"]
        text, end = literal_prefix(pattern, 0) if isinstance(pattern, str) else ("", 0)
        if not text or end != len(pattern):
            raise FormatError(f"{FIELD}.close_pattern", "a call must close with literal text")
        return (text,)
    if "close" not in field:
        raise FormatError(FIELD, "has no close: a call read from a stream must close")
    return strings_of(field["close"], f"{FIELD}.close")


def _named_by_content(field: Mapping[str, Any], open_names: bool) -> bool:
    """Whether the content's call objects name the tools (else the open tag names it, and
    the content is its arguments), from the field's `transform`."""
    transform = field.get("transform")
    each = field.get("transform_each", False)
    if transform is None:
        return True  # the content is OpenAI's call objects
    function = transform.get("function") if isinstance(transform, Mapping) else None
    if function == "{content}" and not each:
        return True
    if isinstance(function, Mapping):
        name, arguments = function.get("name"), function.get("arguments")
        if (name, arguments) == ("{name}", "{content}") and not each:
            if not open_names:
                raise FormatError(f"{FIELD}.transform", "names {name}, which the open tag lacks")
            return False
        within = "" if each else "content."
        if _path(name, within) in NAME_KEYS and _path(arguments, within) in ARGUMENT_KEYS:
            return True
    raise FormatError(
        f"{FIELD}.transform",
        "is no shape the proxy reads: the open tag's name with {content} the arguments, or call"
        f" objects (their name under one of {', '.join(NAME_KEYS)}, their arguments under one"
        f" of {', '.join(ARGUMENT_KEYS)})",
    )


def _path(value: Any, within: str) -> str | None:
    """The key a transform's placeholder takes from a call object (`{content.name}`)."""
    found = _PLACEHOLDER.fullmatch(value) if isinstance(value, str) else None
    if found is None or not found.group(1).startswith(within):
        return None
    return found.group(1).removeprefix(within)


def _quote(arguments: Mapping[str, Any]) -> str | None:
    """The string delimiter of Gemma 4's value syntax, where the content arguments say so."""
    delimiters = arguments.get("string_delims")
    if delimiters is None:
        return None
    if (
        isinstance(delimiters, list)
        and len(delimiters) == 1
        and isinstance(delimiters[0], list)
        and len(set(delimiters[0])) == 1
        and isinstance(delimiters[0][0], str)
    ):
        return str(delimiters[0][0])
    raise FormatError(f"{FIELD}.content_args.string_delims", "one pair of the same delimiter")


def _key_value(arguments: Mapping[str, Any]) -> CallReading:
    """How `xml-inline` content is read: its tag pattern, each value as its parser says."""
    key = f"{FIELD}.content_args.tag_pattern"
    try:
        pair = re.compile(arguments["tag_pattern"], re.DOTALL)
    except (KeyError, TypeError, re.error) as error:
        raise FormatError(key, f"is no regular expression: {error}") from None
    if not {"key", "value"} <= pair.groupindex.keys():
        raise FormatError(key, "must have the groups key and value")
    parser = arguments.get("value_parser") or {}
    named = parser.get("name", "text") if isinstance(parser, Mapping) else ""
    value = {"json": Value.JSON, "text": Value.STRIPPED}.get(str(named))
    if value is None:
        raise FormatError(f"{FIELD}.content_args.value_parser", "is neither json nor text")
    return CallReading(arguments=Arguments.KEY_VALUE, pair=pair, value=value)


def template_forms(document: Mapping[str, Any]) -> tuple[OpenForm, ...]:
    """The open forms of the calls a `response_template` describes (given alone, or in the
    `tokenizer_config.json` that carries it); raises FormatError naming the key."""
    template = document if "fields" in document else document.get(ROOT)
    fields = template.get("fields") if isinstance(template, Mapping) else None
    if not isinstance(fields, Mapping):
        raise FormatError(f"{ROOT}.fields", "is missing: the template says nothing of calls")
    field = fields.get("tool_calls")
    if not isinstance(field, Mapping):
        raise FormatError(FIELD, "is missing: the template says nothing of calls")
    opens, open_names = _opens(field)
    closes = _closes(field)
    content = field.get("content", "text")
    arguments = field.get("content_args", {})
    if not isinstance(arguments, Mapping):
        raise FormatError(f"{FIELD}.content_args", "must be a table")
    by_content = _named_by_content(field, open_names)
    if content == "xml-inline" and not by_content:
        reading = _key_value(arguments)
        return tuple(template_form(t, closes, reading, key=f"{FIELD}.open") for t in opens)
    if content != "json":
        raise FormatError(
            f"{FIELD}.content", f"{content!r}: calls are read from json or xml-inline content"
        )
    quote = _quote(arguments)
    if by_content and quote is not None:
        raise FormatError(f"{FIELD}.content_args", "call objects must be JSON")
    description: dict[str, Any] = {"open": list(opens), "arguments": "json", "close": list(closes)}
    if quote is not None:
        description |= {"arguments": "tagged-values", "quote": quote, "begins": "{"}
    try:
        return compile_forms(description)
    except FormatError as error:
        raise FormatError(f"{FIELD}.{error.key}", error.problem) from None


def template_dialect(name: str, document: Mapping[str, Any]) -> type[Dialect]:
    """A dialect class for the calls `document` (a response_template) describes, not
    registered."""
    return type(f"Template[{name}]", (Dialect,), {"name": name, "forms": template_forms(document)})
