"""RJSON: parse JSON as models really write it (JSON5-isms, Python literals, raw newlines,
truncated endings), falling back from strict `json` to named repairs to JSON5 (`pyjson5`)."""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import pyjson5

# Tool arguments nest a handful of levels. 128 is far beyond any real call, yet deep input
# is refused before it reaches the parsers (json, pyjson5) and the recursive code
# that later walks and re-serialises the value (schema coercion, json.dumps).
MAX_NESTING_DEPTH = 128

# Characters one response may send through the relaxed path (repairs, then JSON5), which
# runs on the event loop. That path costs ~0.3 µs per character (bench/parsers.py; up to
# ~1 µs for text that needs every repair), so this bounds a response's relaxed work to
# ~0.3-1 s of CPU however it is written, while a response holding a 200 KB file write that
# needs repair still fits five times over.
RELAXED_PARSE_BUDGET_CHARS = 1_000_000
# Strict parses are charged to the same budget, in the same characters, at what they cost
# beside the relaxed path: each parse's fixed cost (~1.5 µs of Python around `json.loads`; a
# million one-character values took seconds) as a few characters, and each character as a
# fraction of one (structure-heavy strict JSON costs ~0.1 µs per character, a string-heavy
# file write a hundredth of that). A 4 MB strict file write takes half the budget.
PARSE_CHARGE_CHARS = 8
STRICT_CHARS_PER_CHARGED_CHAR = 8


class RelaxedJSONError(ValueError):
    """The text is not JSON, not JSON5, and no repair made it so."""


class RelaxedParseBudget:
    """What is left of one response's parse budget, in characters of relaxed parsing
    (strict parses are charged what they cost in those: see PARSE_CHARGE_CHARS)."""

    __slots__ = ("remaining",)

    def __init__(self, chars: int = RELAXED_PARSE_BUDGET_CHARS) -> None:
        self.remaining = chars

    def spend_strict(self, chars: int) -> None:
        """Charge a strict parse of `chars` characters, or raise RelaxedJSONError."""
        self._spend(PARSE_CHARGE_CHARS + chars // STRICT_CHARS_PER_CHARGED_CHAR, "read")

    def spend_relaxed(self, chars: int) -> None:
        """Charge a relaxed parse of `chars` characters, or raise RelaxedJSONError."""
        self._spend(chars, "repair")

    def _spend(self, chars: int, what: str) -> None:
        if chars > self.remaining:
            raise RelaxedJSONError(
                f"this response's parse budget ({self.remaining} characters left)"
                f" is too small to {what} it"
            )
        self.remaining -= chars


# The one string-aware scanner. Every character belongs to exactly one token, so joining
# the tokens rebuilds the text. Strings may be single- or double-quoted (JSON5) and may run
# to the end of the text unclosed; comments are recognised so quotes or brackets inside them
# count for nothing.
_TOKEN = re.compile(
    r"""
    (?P<string>
        (?P<quote>["'])
        [^"'\\]* (?: (?: \\[\s\S]? | (?!(?P=quote))["'] ) [^"'\\]* )*
        (?P<closed>(?P=quote))?
    )
    | (?P<comment> //[^\n]* | /\*[\s\S]*?(?:\*/|\Z) )
    | (?P<open> [\[{] )
    | (?P<close> [\]}] )
    | (?P<code> [^"'/\[\]{}]+ | / )
    """,
    re.VERBOSE,
)
_CLOSER = {"[": "]", "{": "}"}


def _walk(text: str) -> Iterator[tuple[re.Match[str], list[str]]]:
    """Each token of `text`, with the closers still owed after it (innermost last).

    The list is shared and updated in place; copy it to keep it past the next step.
    """
    owed: list[str] = []
    for token in _TOKEN.finditer(text):
        if token.lastgroup == "open":
            owed.append(_CLOSER[token[0]])
            if len(owed) > MAX_NESTING_DEPTH:
                raise RelaxedJSONError(f"nested deeper than {MAX_NESTING_DEPTH} levels")
        elif token.lastgroup == "close" and owed:
            # Which closer it is does not matter: a mismatch is left for the parser to reject.
            owed.pop()
        yield token, owed


def _check_nesting(text: str) -> None:
    # Fewer openers than the limit cannot nest past it; skip the scan on the common path.
    if text.count("[") + text.count("{") <= MAX_NESTING_DEPTH:
        return
    deque(_walk(text), maxlen=0)  # walking is the check: it raises past the limit


def _rewrite(text: str, kind: str, transform: Callable[[str], str]) -> str:
    """`text` with `transform` applied to every token of one kind (e.g. "string")."""
    return "".join(
        transform(token[0]) if token.lastgroup == kind else token[0]
        for token in _TOKEN.finditer(text)
    )


_QUOTE_OR_ESCAPE = re.compile(r'\\[\s\S]|"')
_BLANKS = re.compile(r"[ \t\r\n]*")
_AFTER_STRING = frozenset(",}]:")


def _repair_inner_quotes(text: str) -> str:
    """`"say "hi" now"`: inside a double-quoted string, a `"` that is not followed (after
    whitespace) by `,` `}` `]` `:` or the end is a quote in the text, not the string's end
    (the same rule the streaming lexer applies)."""
    pieces: list[str] = []
    in_string, copied = False, 0
    for found in _QUOTE_OR_ESCAPE.finditer(text):
        if found.group() != '"':
            continue
        if not in_string:
            in_string = True
            continue
        after = _BLANKS.match(text, found.end())
        assert after is not None  # the pattern matches the empty string
        if after.end() == len(text) or text[after.end()] in _AFTER_STRING:
            in_string = False
            continue
        pieces += (text[copied : found.start()], '\\"')
        copied = found.end()
    return "".join(pieces) + text[copied:]


_VALID_ESCAPE = frozenset('"\\/bfnrt')
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|[\s\S]?)")


def _fix_escape(escape: re.Match[str]) -> str:
    follower = escape[1]
    is_unicode_escape = len(follower) == len("u0041")
    if is_unicode_escape or follower in _VALID_ESCAPE:
        return escape[0]
    if follower == "'":
        return "'"  # a Python habit: \' means ' in every language that has it
    if not follower:
        return escape[0]  # a dangling backslash at a cut-off end; closing handles it
    return "\\\\" + follower


def _repair_invalid_escapes(text: str) -> str:
    """`"C:\\Users"`, `"\\d+"`: a backslash that starts no JSON escape is a literal one."""

    def fix(string: str) -> str:
        return _ESCAPE.sub(_fix_escape, string) if string[0] == '"' else string

    return _rewrite(text, "string", fix)


_ESCAPED_CONTROL = {code: json.dumps(chr(code))[1:-1] for code in range(0x20)}


def _repair_control_characters(text: str) -> str:
    """Raw newlines, tabs and other control characters inside strings, escaped.

    Runs after the escape repair, so no backslash can precede one of them any more.
    """
    return _rewrite(text, "string", lambda string: string.translate(_ESCAPED_CONTROL))


# Not before a colon: `{None: 1}` is a valid JSON5 key named "None".
_PYTHON_LITERAL = re.compile(r"\b(True|False|None)\b(?!\s*:)")
_JSON_LITERAL = {"True": "true", "False": "false", "None": "null"}


def _repair_python_literals(text: str) -> str:
    """`True`, `False`, `None` outside strings, as JSON's `true`, `false`, `null`."""
    return _rewrite(
        text, "code", lambda code: _PYTHON_LITERAL.sub(lambda m: _JSON_LITERAL[m[1]], code)
    )


def _terminated(token: re.Match[str]) -> str:
    """The last token of a cut-off text, closed so that closers can follow it."""
    text = token[0]
    if token.lastgroup == "string" and token["closed"] is None:
        trailing_backslashes = len(text) - len(text.rstrip("\\"))
        if trailing_backslashes % 2:
            text = text[:-1]  # the escape it began was cut off
        return text + token["quote"]
    if token.lastgroup == "comment" and text.startswith("//"):
        return text + "\n"
    if token.lastgroup == "comment" and not (len(text) >= 4 and text.endswith("*/")):
        return text + "*/"
    return text


def _repair_unclosed_brackets(text: str) -> str:
    """A cut-off ending: the final string closed, then every open bracket, innermost first."""
    final_step = deque(_walk(text), maxlen=1)
    if not final_step:
        return text
    last, owed = final_step[0]
    return text[: last.start()] + _terminated(last) + "".join(reversed(owed))


_TRAILING_COMMA = re.compile(r",(\s*)\Z")


def _repair_trailing_commas(text: str) -> str:
    """`[1, 2,]`: a comma right before a closer, dropped (JSON5 allows it, strict JSON not)."""
    pieces: list[str] = []
    previous_kind: str | None = None
    for token in _TOKEN.finditer(text):
        if token.lastgroup == "close" and previous_kind == "code":
            pieces[-1] = _TRAILING_COMMA.sub(r"\1", pieces[-1])
        pieces.append(token[0])
        previous_kind = token.lastgroup
    return "".join(pieces)


# Applied in this order, each on the result of the last. Inner quotes come first, so that
# every later repair sees the strings where they really end. Escapes come before control
# characters so that a backslash before a raw newline stays a literal backslash; commas come
# after closing so that a list cut off after a comma (`[1, 2,`) parses.
REPAIRS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("inner_quotes", _repair_inner_quotes),
    ("invalid_escapes", _repair_invalid_escapes),
    ("control_characters", _repair_control_characters),
    ("python_literals", _repair_python_literals),
    ("unclosed_brackets", _repair_unclosed_brackets),
    ("trailing_commas", _repair_trailing_commas),
)
# For text that must already be whole: closing a cut-off end would pass a half-written value
# off as a finished one.
_REPAIRS_FOR_COMPLETE_TEXT = tuple(
    (name, repair) for name, repair in REPAIRS if repair is not _repair_unclosed_brackets
)

# The language tag after an opening fence: ```json, ```json5, ```JSON, or none.
_FENCE_INFO = re.compile(r"[\w.+-]*[ \t]*")
_FENCE = "```"


def strip_code_fence(text: str) -> str:
    """The body of a markdown code fence around the whole text, or the text unchanged.

    A fence whose closing line is missing (output cut off) still counts.
    """
    stripped = text.strip()
    if not stripped.startswith(_FENCE):
        return text
    first_line_end = stripped.find("\n")
    if first_line_end == -1 or not _FENCE_INFO.fullmatch(stripped[len(_FENCE) : first_line_end]):
        return text
    body = stripped[first_line_end + 1 :]
    return body.removesuffix(_FENCE)


def _loads_json5(text: str) -> Any:
    try:
        return pyjson5.loads(text)
    # Any failure just means "not JSON5" (pyjson5 raises its own ValueError subclasses).
    except Exception as error:
        raise RelaxedJSONError(str(error)) from error


def parse_relaxed_json(
    text: str, *, complete_only: bool = False, budget: RelaxedParseBudget | None = None
) -> Any:
    """One JSON value, as relaxed as models write it.

    Tried in order: strict `json`; each repair in `REPAIRS`, cumulatively, parsed strictly;
    then JSON5 on the text as written and on the fully repaired text. With `complete_only`,
    a value cut off before its end is rejected instead of closed. The parse is charged to
    `budget` (a default-sized one of its own when none is given), strict reading and
    relaxed reading each, and refused when it does not fit.
    """
    budget = budget or RelaxedParseBudget()
    text = strip_code_fence(text)
    _check_nesting(text)
    budget.spend_strict(len(text))
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        strict_error = str(error)
    budget.spend_relaxed(len(text))
    repaired = text
    applied: list[str] = []
    for name, repair in _REPAIRS_FOR_COMPLETE_TEXT if complete_only else REPAIRS:
        candidate = repair(repaired)
        if candidate == repaired:
            continue
        repaired = candidate
        applied.append(name)
        try:
            return json.loads(repaired)
        except (ValueError, RecursionError):
            pass
    for candidate in dict.fromkeys((text, repaired)):
        try:
            return _loads_json5(candidate)
        except RelaxedJSONError:
            pass
    raise RelaxedJSONError(
        f"not JSON ({strict_error}); repairs applied: {', '.join(applied) or 'none'}; "
        "JSON5 also failed"
    )


_WORD = re.compile(r"[^\s,;]+")  # a value written as code, between separators (`;`: Llama's)


class TopLevelReader:
    """`_split_values`' view of a text as it streams: the `_TOKEN` tokens that lie between
    top-level values, as (kind, text) with kind a `_TOKEN` group name. An `open` token starts
    a value; what lies inside values is not reported; a string or comment is reported at its
    start, by its opening characters alone. Each character is looked at once, so following a
    stream costs linear time. Raises RelaxedJSONError past MAX_NESTING_DEPTH, as `_walk` does.
    """

    __slots__ = ("_comment_end", "_depth", "_escaped", "_quote", "_slash", "_star")

    def __init__(self) -> None:
        self._depth = 0  # brackets open
        self._quote: str | None = None  # inside a string this quote ends
        self._escaped = False  # that string's last character so far was a backslash
        self._comment_end: str | None = None  # inside a comment this ends ("\n" or "*/")
        self._star = False  # that block comment's last character so far was a `*`
        self._slash = False  # the text so far ended with a `/` that may begin a comment

    def feed(self, text: str) -> list[tuple[str, str]]:
        tokens: list[tuple[str, str]] = []
        if self._slash:
            text, self._slash = "/" + text, False
        position = 0
        while position < len(text):
            if self._quote is not None:
                position = self._in_string(text, position)
            elif self._comment_end is not None:
                position = self._in_comment(text, position)
            else:
                position = self._in_code(text, position, tokens)
        return tokens

    def _in_string(self, text: str, position: int) -> int:
        if self._escaped:
            self._escaped = False
            return position + 1
        run = _STRING_RUN[self._quote or '"'].match(text, position)
        assert run is not None  # the pattern matches the empty string
        position = run.end()
        if position == len(text):
            return position
        if text[position] == "\\":  # it escapes the next character, whatever that is
            if position + 1 == len(text):
                self._escaped = True
                return len(text)
            return position + 2
        self._quote = None
        return position + 1

    def _in_comment(self, text: str, position: int) -> int:
        end_mark = self._comment_end or ""
        if end_mark == "\n":  # a line comment ends before its line break, which is code
            end = text.find("\n", position)
            if end == -1:
                return len(text)
            self._comment_end = None
            return end
        if self._star and text.startswith("/", position):
            end = position
        else:
            end = text.find(end_mark, position)
            if end == -1:
                self._star = text.endswith("*")
                return len(text)
            end += 1
        self._comment_end, self._star = None, False
        return end + 1

    def _in_code(self, text: str, position: int, tokens: list[tuple[str, str]]) -> int:
        top = self._depth == 0
        run = _CODE_RUN.match(text, position)
        assert run is not None  # the pattern matches the empty string
        if run.end() > position:
            if top:
                tokens.append(("code", run.group()))
            return run.end()
        char = text[position]
        if char in "\"'":
            self._quote = char
            kind = "string"
        elif char == "/":
            follower = text[position + 1 : position + 2]
            if not follower:
                self._slash = True
                return position + 1
            if follower in "/*":
                self._comment_end = "\n" if follower == "/" else "*/"
                char += follower
                kind = "comment"
            else:
                kind = "code"
        elif char in "[{":
            self._depth += 1
            if self._depth > MAX_NESTING_DEPTH:
                raise RelaxedJSONError(f"nested deeper than {MAX_NESTING_DEPTH} levels")
            kind = "open"
        elif self._depth:
            self._depth -= 1
            return position + 1
        else:
            kind = "close"  # a stray closer: a value of its own, for the parser to reject
        if top:
            tokens.append((kind, char))
        return position + len(char)


# The runs `TopLevelReader` takes in one step: code up to a token's first character, and a
# string's characters up to its quote or a backslash.
_CODE_RUN = re.compile(r"""[^"'/\[\]{}]*""")
_STRING_RUN = {quote: re.compile(rf"[^{quote}\\]*") for quote in "\"'"}


def _split_values(text: str) -> Iterator[str]:
    """The source of each top-level value, cut at whitespace, commas and comments between."""
    value_start: int | None = None  # where the open bracket of the current value is
    for token, owed in _walk(text):
        kind = token.lastgroup
        if value_start is not None:
            if not owed:
                yield text[value_start : token.end()]
                value_start = None
        elif kind == "open":
            value_start = token.start()
        elif kind == "code":
            # One by one: the parses stop at the budget, the words need not all be cut first.
            yield from (word[0] for word in _WORD.finditer(token[0]))
        elif kind != "comment":
            yield token[0]  # a string, or a stray closer for the parser to reject
    if value_start is not None:
        yield text[value_start:]  # cut off; parse_relaxed_json closes it unless complete_only


def parse_json_values(
    text: str, *, complete_only: bool = False, budget: RelaxedParseBudget | None = None
) -> list[Any]:
    """Every JSON value in `text` (`{..}{..}`, one per line, comma-separated), each relaxed.

    Raises RelaxedJSONError when any part fails to parse (with `complete_only`, when the last
    one is cut off) or there is no value at all. All the parses are charged to one budget.
    """
    budget = budget or RelaxedParseBudget()
    values = [
        parse_relaxed_json(source, complete_only=complete_only, budget=budget)
        for source in _split_values(strip_code_fence(text))
    ]
    if not values:
        raise RelaxedJSONError("no JSON value in the text")
    return values
