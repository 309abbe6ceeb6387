"""A call format described as data, compiled into a dialect: the built-in rows of the dialect
table (`dialects/table.py`), a format written in a routes file for a model of one's own, and
one read from a model's `response_schema` all use this vocabulary, read by the one streaming
machinery (`tag_loop`, `dialect_forms`) with no code of their own.

    {"open": "<tool_call>{name}\\n", "arguments": "key-value", "close": "</tool_call>",
     "key_value": "<arg_key>{key}</arg_key> <arg_value>{value}</arg_value>"}

Text flows until an open tag; a call is held from it to its close and read whole
(`delimited_call`), but for JSON, which ends itself: a call whose arguments (or call objects)
are JSON ends where the JSON does, the close tags after it belonging to it (`json_body`), so
its arguments may stream as they are written.

Keys (a format is a mapping of them; `forms`, a list of mappings, gives several open forms
whose keys override the format's):

- `open`: the open tag, or a list of them (tried in order), as a template: text as written,
  `{name}` the tool's name, `{id}` a call id (letters, digits, `_`, `-`), a space any blanks
  (none too), a line break a line break (spaces or tabs before it), `{?text}` text that may
  be left out, `{{` and `}}` braces. It begins with text (its marker) and either ends in text
  or, where it ends in the name or blanks, the arguments' beginning must follow.
- `arguments`: how they are written (`call_reading.Arguments`): `json`, `key-value`,
  `tagged-values`, `python`, `python-list`.
- `close`: what ends a call (one of a list); required but for JSON, after which it is
  optional. `section_close`: for JSON, the close of a section of calls that may follow.
  `close_optional`: the output's end may stand for a missing close.
- `call`: where the open tag names no tool, one call of the section it opens, a template of
  `{name}` and `{arguments}` (and `{server}`, a namespace the tool may be declared under);
  `key_value`: one argument, a template of `{key}` and `{value}` (and `{type}`, the value's
  type as written); both may hold `{?text}`, and what they find must be all the text holds,
  blanks aside. `value`: how a value is written (`call_reading.Value`); `quote`: the string
  delimiter of tagged values; `json_calls`: JSON call objects may stand there too;
  `call_objects`: how they name their tool (`call_reading.CallObjects`).
- `begins`: what must follow the open tag (one of a list), where the arguments' kind says
  too little (`[` for a list where an object would be another format's).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..registry import register
from .call_reading import Arguments, CallObjects, CallReading, Value
from .commit_policy import CallContext
from .delimited_call import DelimitedBody, delimited
from .dialect_forms import (
    MAX_NAME_CHARS,
    Dialect,
    OpenForm,
    Piece,
    ScannerFactory,
    blanks,
    followed_by,
    heads,
    literal,
    open_form,
    tool_name,
)
from .json_body import JsonBody, JsonBodyCall

KEYS = frozenset(
    {
        "open",
        "arguments",
        "close",
        "section_close",
        "close_optional",
        "call",
        "key_value",
        "value",
        "quote",
        "json_calls",
        "call_objects",
        "begins",
        "forms",
    }
)
# The characters of a tool's name (and of its namespace) and of an argument's key inside a
# body, blanks around them dropped.
_NAME_CHARS = rf"[\w.\-/]{{1,{MAX_NAME_CHARS}}}"
_BODY_WORDS = {
    "name": _NAME_CHARS,
    "server": _NAME_CHARS,
    "key": r"[^<>\n\"]{1,128}?",
}
_ID_CHARS = r"[\w\-]"
# A template's pieces: a placeholder, an optional part's start or end, a line break with
# the spaces around it, blanks, or text.
_TEMPLATE_TOKEN = re.compile(
    r"\{\{|\}\}|\{\?|\{(?P<placeholder>\w*)\}|\}|[ \t]*\n[ \t]*|[ \t]+|[^{} \t\n]+"
)


class FormatError(ValueError):
    """A format's description the proxy cannot use: `key` names the key, the message says
    what is wrong with its value."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key, self.problem = key, problem


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "text", "blank", "line", a placeholder's name, or "optional"
    text: str = ""
    inner: tuple[_Token, ...] = ()


def _tokens(template: str, key: str) -> tuple[_Token, ...]:
    """A template's tokens, an optional part's nested in it."""
    stack: list[list[_Token]] = [[]]
    for found in _TEMPLATE_TOKEN.finditer(template):
        token = found.group()
        if token in ("{{", "}}"):
            stack[-1].append(_Token("text", token[0]))
        elif token == "{?":
            stack.append([])
        elif token == "}":
            if len(stack) == 1:
                raise FormatError(key, "a } that closes nothing (write }} for a brace)")
            inner = tuple(stack.pop())
            stack[-1].append(_Token("optional", inner=inner))
        elif found.group("placeholder") is not None:
            stack[-1].append(_Token(found.group("placeholder")))
        elif "\n" in token:
            stack[-1].append(_Token("line"))
        elif not token.strip():
            stack[-1].append(_Token("blank"))
        else:
            stack[-1].append(_Token("text", token))
    if len(stack) != 1:
        raise FormatError(key, "a {? that is never closed")
    merged: list[_Token] = []
    for piece in stack[0]:  # text runs as one piece
        if piece.kind == "text" and merged and merged[-1].kind == "text":
            merged[-1] = _Token("text", merged[-1].text + piece.text)
        else:
            merged.append(piece)
    return tuple(merged)


def _open_pieces(tokens: Sequence[_Token], key: str, *, inside: bool = False) -> list[Piece]:
    pieces = []
    for token in tokens:
        if token.kind == "text":
            pieces.append(literal(token.text))
        elif token.kind == "blank":
            pieces.append(blanks())
        elif token.kind == "line":
            pieces.append(Piece(r"[ \t]*\n", r"[ \t]*"))
        elif token.kind == "name" and not inside:
            pieces.append(tool_name())
        elif token.kind == "id":
            pieces.append(Piece(f"{_ID_CHARS}{{1,64}}", f"{_ID_CHARS}{{0,64}}", first=_ID_CHARS))
        elif token.kind == "optional":
            inner = _open_pieces(token.inner, key, inside=True)
            pieces.append(Piece(f"(?:{''.join(piece.pattern for piece in inner)})?", heads(inner)))
        else:
            where = " inside {?...}" if token.kind == "name" else ""
            raise FormatError(key, f"{{{token.kind}}}{where} is no placeholder of an open tag")
    return pieces


def _body_pattern(
    template: str,
    key: str,
    groups: tuple[str, str],
    extras: tuple[str, ...] = (),
    *,
    objects: bool = False,
) -> re.Pattern[str]:
    """A call's or an argument's template as a pattern with the two named `groups`, and any
    of the `extras` it holds; with `objects`, a JSON call object may stand where the name and
    the arguments would (the name is then empty)."""
    tokens = _tokens(template, key)
    pattern = re.compile(_body_regex(tokens, key, groups, extras, objects), re.DOTALL)
    missing = [group for group in groups if group not in pattern.groupindex]
    if missing or len(pattern.groupindex) != len(set(pattern.groupindex)):
        raise FormatError(key, f"must hold {{{groups[0]}}} and {{{groups[1]}}} once each")
    if not tokens or tokens[0].kind != "text":
        raise FormatError(key, "must begin with text")
    return pattern


def _body_regex(
    tokens: Sequence[_Token],
    key: str,
    groups: tuple[str, str],
    extras: tuple[str, ...],
    objects: bool = False,
) -> str:
    parts = []
    for at, token in enumerate(tokens):
        if token.kind == "text":
            parts.append(re.escape(token.text))
        elif token.kind in ("blank", "line"):
            parts.append(r"\s*")
        elif token.kind == "optional":
            parts.append(f"(?:{_body_regex(token.inner, key, groups, extras)})?")
        elif token.kind in _BODY_WORDS and token.kind in (*groups, *extras):
            word = rf"\s*(?P<{token.kind}>{_BODY_WORDS[token.kind]})\s*"
            parts.append(rf"(?:{word}|\s*(?=\{{))" if objects and token.kind == "name" else word)
        elif token.kind in (*groups, *extras):  # to the text after it, or the end
            last = at == len(tokens) - 1
            if last and token.kind in ("value", "type"):
                raise FormatError(
                    key, f"{{{token.kind}}} must be followed by the text that ends it"
                )
            parts.append(f"(?P<{token.kind}>.*)" if last else f"(?P<{token.kind}>.*?)")
        else:
            raise FormatError(key, f"{{{token.kind}}} is no placeholder here")
    return "".join(parts)


def strings_of(value: Any, key: str) -> tuple[str, ...]:
    """A string, or a non-empty list of them, as a tuple; FormatError naming `key` else."""
    values = (value,) if isinstance(value, str) else value
    if not isinstance(values, list | tuple) or not values:
        raise FormatError(key, "must be a string or a non-empty list of strings")
    if not all(isinstance(text, str) and text for text in values):
        raise FormatError(key, "must be a string or a non-empty list of strings")
    return tuple(values)


def _choice(value: Any, key: str, kinds: type[Arguments] | type[Value] | type[CallObjects]) -> Any:
    names = [kind.value for kind in kinds]
    if value not in names:
        raise FormatError(key, f"{value!r} is none of {', '.join(names)}")
    return kinds(value)


def _flag(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise FormatError(key, "must be true or false")
    return value


# What the body of each kind of arguments begins with, where the open tag must be followed
# by it: (a pattern for one character, or for a literal, and the literals).
_JSON_ARGUMENTS = (r"[{`]", ())  # the object, or the fence it is in
_JSON_CALLS = (r"[\[{]", ())
_LIST = (r"\[", ())


@dataclass(frozen=True, slots=True)
class _Form:
    """One open form's description, checked: the keys of its format and its own."""

    entries: Mapping[str, Any]

    def get(self, key: str, default: Any = None) -> Any:
        return self.entries.get(key, default)

    def compile(self) -> list[OpenForm]:
        unknown = set(self.entries) - KEYS
        if unknown:
            raise FormatError(
                sorted(unknown)[0], f"is no key of a format; keys: {', '.join(sorted(KEYS))}"
            )
        if "open" not in self.entries:
            raise FormatError("open", "is required: the tag a call opens with")
        if "arguments" not in self.entries:
            raise FormatError(
                "arguments", "is required: json, key-value, tagged-values, python or python-list"
            )
        arguments = _choice(self.get("arguments"), "arguments", Arguments)
        opens = strings_of(self.get("open"), "open")
        return [self._form(template, arguments) for template in opens]

    def _form(self, template: str, arguments: Arguments) -> OpenForm:
        marker, pieces, ends_in_text = _opening(template, "open")
        named = any(piece.names_tool for piece in pieces)
        keyed = _choice(self.get("call_objects", "named"), "call_objects", CallObjects)
        if (
            arguments is Arguments.JSON
            and "call" not in self.entries
            and keyed is CallObjects.NAMED
        ):
            if not (named and ends_in_text) or "begins" in self.entries:
                beginning = _JSON_ARGUMENTS if named else _JSON_CALLS
                pieces += self._followed(self._begins() or beginning, pieces)
            return open_form(marker, pieces, self._json(named))
        if named and not ends_in_text and "begins" not in self.entries:
            raise FormatError("open", f"{template!r} must end in text after the tool's name")
        reading = self._reading(arguments, named, keyed is CallObjects.KEYED)
        if "begins" in self.entries or (not named and arguments is not Arguments.PYTHON):
            pieces += self._followed(self._begins() or self._beginning(arguments, reading), pieces)
        if "close" not in self.entries:
            raise FormatError("close", "is required: what ends a call read whole")
        ends = strings_of(self.get("close"), "close")
        end_optional = _flag(self.get("close_optional", False), "close_optional")
        return open_form(marker, pieces, _read_whole(ends, reading, end_optional))

    @staticmethod
    def _followed(beginning: tuple[str, tuple[str, ...]], pieces: list[Piece]) -> list[Piece]:
        """Blanks (unless the tag ends in them), then what the body begins with."""
        pattern, tags = beginning
        lead = [] if pieces and pieces[-1].blank else [blanks()]
        return [*lead, followed_by(pattern, *tags)]

    def _begins(self) -> tuple[str, tuple[str, ...]] | None:
        """What the format says its body begins with (`begins`), if it says."""
        if "begins" not in self.entries:
            return None
        starts = strings_of(self.get("begins"), "begins")
        return "|".join(map(re.escape, starts)), starts

    def _beginning(self, arguments: Arguments, reading: CallReading) -> tuple[str, tuple[str, ...]]:
        if arguments is Arguments.PYTHON_LIST:
            return _LIST
        if reading.keyed:
            return _JSON_CALLS
        if reading.calls is None:
            raise FormatError("call", "is required where the open tag names no tool")
        starts = [_lead(self.get("call"))]
        if reading.json_calls:
            starts += ["[", "{"]
        return "|".join(map(re.escape, starts)), tuple(starts)

    def _json(self, named: bool) -> ScannerFactory:
        closers = [
            strings_of(self.get(key), key)
            for key in ("close", "section_close")
            if key in self.entries
        ]
        body = JsonBody(closers=tuple(closers), objects=not named)

        def scanner(ctx: CallContext, open_tag: str, name: str) -> JsonBodyCall:
            return JsonBodyCall(ctx, open_tag, name, body)

        return scanner

    def _reading(self, arguments: Arguments, named: bool, keyed: bool) -> CallReading:
        calls = None
        if "call" in self.entries:
            if named:
                raise FormatError("call", "is for a section whose open tag names no tool")
            call = self.get("call")
            if not isinstance(call, str):
                raise FormatError("call", "must be a string")
            calls = _body_pattern(
                call,
                "call",
                ("name", "arguments"),
                ("server",),
                objects=_flag(self.get("json_calls", False), "json_calls"),
            )
        pair = None
        if arguments is Arguments.KEY_VALUE:
            key_value = self.get("key_value")
            if not isinstance(key_value, str):
                raise FormatError("key_value", "is required for key-value arguments: a string")
            pair = _body_pattern(key_value, "key_value", ("key", "value"), ("type",))
        quote = self.get("quote", '"')
        if not isinstance(quote, str) or not quote:
            raise FormatError("quote", "must be a non-empty string")
        return CallReading(
            arguments=arguments,
            calls=calls,
            pair=pair,
            value=_choice(self.get("value", "text"), "value", Value),
            quote=quote,
            json_calls=_flag(self.get("json_calls", False), "json_calls"),
            keyed=keyed,
            exact=True,
        )


def _opening(template: str, key: str) -> tuple[str, list[Piece], bool]:
    """An open tag's marker, the pieces after it, and whether it ends in text."""
    tokens = _tokens(template, key)
    if not tokens or tokens[0].kind != "text":
        raise FormatError(key, f"{template!r} must begin with text, its marker")
    marker, rest = _marker(tokens[0].text)
    pieces = [literal(rest)] if rest else []
    pieces += _open_pieces(tokens[1:], key)
    return marker, pieces, bool(tokens[-1].kind == "text" and len(tokens) > 1)


def template_form(
    template: str, ends: tuple[str, ...], reading: CallReading, *, key: str
) -> OpenForm:
    """The form of calls that open with `template` (written as `open` is, the tool named in
    it, text after the name), run to one of `ends` and are read whole by `reading`; a
    problem with the template names `key`."""
    marker, pieces, ends_in_text = _opening(template, key)
    if not ends_in_text:
        raise FormatError(key, f"{template!r} must end in text after the tool's name")
    return open_form(marker, pieces, _read_whole(ends, reading, False))


def _read_whole(ends: tuple[str, ...], reading: CallReading, end_optional: bool) -> ScannerFactory:
    return delimited(DelimitedBody(ends=ends, read=reading.read, end_optional=end_optional))


def delimited_form(
    opening: str, ends: tuple[str, ...], reading: CallReading, *, end_optional: bool = False
) -> OpenForm:
    """The form of calls that open with the literal `opening`, run to one of `ends` and are
    read whole by `reading`."""
    marker, rest = _marker(opening)
    return open_form(
        marker, [literal(rest)] if rest else [], _read_whole(ends, reading, end_optional)
    )


def _marker(text: str) -> tuple[str, str]:
    """An open tag's marker, its first token (`<|start|>`, `[TOOL_CALLS]`), and the text
    after it: forms that begin alike share a marker, so that where it is found each of them
    is tried (a longer marker would rule the others out while their tags are written)."""
    close = {"<": ">", "[": "]"}.get(text[0])
    end = text.find(close) + 1 if close else 0
    return (text[:end], text[end:]) if end else (text, "")


def _lead(template: str) -> str:
    tokens = _tokens(template, "call")
    return tokens[0].text


def compile_forms(description: Mapping[str, Any]) -> tuple[OpenForm, ...]:
    """The open forms a format's description gives; raises FormatError naming the key."""
    if not isinstance(description, Mapping):
        raise FormatError("format", "must be a table of keys")
    forms = description.get("forms")
    if forms is None:
        return tuple(_Form(description).compile())
    if not isinstance(forms, list) or not forms or not all(isinstance(f, Mapping) for f in forms):
        raise FormatError("forms", "must be a non-empty list of tables")
    shared = {key: value for key, value in description.items() if key != "forms"}
    return tuple(form for own in forms for form in _Form({**shared, **own}).compile())


def described_dialect(name: str, description: Mapping[str, Any]) -> type[Dialect]:
    """A dialect class for the format `description` describes, not registered: a route's
    own format is read by that route's parsers alone (`ParserOptions.dialects`)."""
    return type(
        f"Described[{name}]", (Dialect,), {"name": name, "forms": compile_forms(description)}
    )


def register_described(name: str, description: Mapping[str, Any]) -> type[Dialect]:
    """Registers the dialect `description` describes under `name`, as a module's would be."""
    return register(name)(described_dialect(name, description))
