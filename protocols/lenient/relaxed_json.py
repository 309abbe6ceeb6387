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

# What one response may spend on reading calls, which runs on the event loop, in characters
# of relaxed parsing (repairs, then JSON5): ~0.3 µs each (bench/parsers.py; up to ~1 µs for
# text that needs every repair). The other work is charged in the same characters, at about
# a microsecond each (see the charges below), so a response's reading stays within ~2 s
# of CPU however it is written (bench/parsers.py's floods: 1.8 s at most on a busy shared
# 2-core machine). 20,000 small calls, the most an honest answer holds, are charged 0.9 to
# 1.3 million and take 0.6 to 0.9 s. A 200 KB file write that needs repair fits seven
# times over.
RELAXED_PARSE_BUDGET_CHARS = 1_500_000
# Each parse's fixed cost (~1.5 µs of Python around `json.loads`; a million one-character
# values took seconds while parses were free). Reading text strictly the first time is
# charged nothing more: `json.loads` reads it in C, once, at a fraction of what receiving it
# cost, so an answer that is simply big costs what its size does (a 50 MB file write was cut
# while every strict character was charged, and 20,000 small calls became 7,812).
PARSE_CHARGE_CHARS = 8
# Text read again, which a model can make as long as the answer (a string argument the schema
# wants as an array, read as JSON; the forced call's search for an object from each `{`), is
# charged by its length as well: one character for every 8 it reads (structure-heavy strict
# JSON costs ~0.1 µs a character).
STRICT_CHARS_PER_CHARGED_CHAR = 8
# Each call the parser reads: the tag that opens it, its scanner, its parts (~40 µs of
# Python beside its parse and its arguments, bench/parsers.py). A flood of call tags is
# bounded by this, where each tag cost the same work whether it became a call or text: past
# the budget, the rest of the answer is text.
CALL_CHARGE_CHARS = 40
# Each line the part writer holds but a call's: one that may open a code fence, until it
# shows whether it does, and each held after it (~3 to 5 µs of Python beside reading the
# line, which a model makes every other character: 2 MB of "\n`" cost 5.6 s uncharged, of
# "\n```\n" 3.1 s). Past the budget the rest of the output is text, held no more and
# followed no more.
HOLD_CHARGE_CHARS = 8
# Each argument read on its own, by each reader that reads it (a parameter tag of Morph-XML,
# Qwen3-Coder, GLM, `<invoke>`; a JSON value the streaming lexer follows, which it does
# only for a call that may stream or whose tag it must place): ~3 to 5 µs of
# Python. One call holding a flood of them is bounded by this.
ARGUMENT_CHARGE_CHARS = 4
# A call whose arguments have begun to stream may finish on credit, this much past the
# budget: its final reading costs a parse or a few arguments, and a call already sent in
# part must not end unfinished because an earlier part of the answer spent the budget.
STREAMED_CALL_CREDIT_CHARS = CALL_CHARGE_CHARS
# Following a call as it streams (the lexer, the XML argument stream) only makes it stream
# sooner: it stops before the budget drops below this, which its final reading may need.
FOLLOWING_FLOOR_CHARS = CALL_CHARGE_CHARS


class RelaxedJSONError(ValueError):
    """The text is not JSON, not JSON5, and no repair made it so."""


class RelaxedParseBudget:
    """What is left of one response's parse budget, in characters of relaxed parsing (the
    other work is charged what it costs in those: see PARSE_CHARGE_CHARS and after). Each
    `spend_*` raises RelaxedJSONError when what is left cannot pay for it."""

    __slots__ = ("credit", "remaining")

    def __init__(self, chars: int = RELAXED_PARSE_BUDGET_CHARS) -> None:
        self.remaining = chars
        self.credit = 0  # how far past the budget a call being streamed may go to finish

    def spend_parse(self) -> None:
        """Charge a parse of text read for the first time."""
        self._spend(PARSE_CHARGE_CHARS, "read")

    def spend_reread(self, chars: int) -> None:
        """Charge a strict parse of `chars` characters that were read once already."""
        self._spend(PARSE_CHARGE_CHARS + chars // STRICT_CHARS_PER_CHARGED_CHAR, "read")

    def spend_relaxed(self, chars: int) -> None:
        """Charge a relaxed parse of `chars` characters."""
        self._spend(chars, "repair")

    def spend_calls(self, count: int = 1) -> None:
        """Charge reading `count` calls, refused unless FOLLOWING_FLOOR_CHARS are left for
        their reading too (a call whose tag was paid for is not then refused its parse)."""
        self._spend(CALL_CHARGE_CHARS * count + FOLLOWING_FLOOR_CHARS, "read another call")
        self.remaining += FOLLOWING_FLOOR_CHARS

    def spend_hold(self) -> None:
        """Charge holding a line that may open a code fence."""
        self._spend(HOLD_CHARGE_CHARS, "hold another line")

    def spend_argument(self) -> None:
        """Charge reading one argument."""
        self._spend(ARGUMENT_CHARGE_CHARS, "read another argument")

    def spend_following(self) -> bool:
        """Charge following one argument as a call streams, if that leaves the call's final
        reading what it may need (FOLLOWING_FLOOR_CHARS); False, charging nothing, if not."""
        if self.remaining - ARGUMENT_CHARGE_CHARS < FOLLOWING_FLOOR_CHARS:
            return False
        self.remaining -= ARGUMENT_CHARGE_CHARS
        return True

    def _spend(self, chars: int, what: str) -> None:
        if chars > self.remaining + self.credit:
            raise RelaxedJSONError(
                f"this response's parse budget ({max(self.remaining, 0)} characters left)"
                f" is too small to {what}"
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


def walk_tokens(text: str) -> Iterator[tuple[re.Match[str], list[str]]]:
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
    deque(walk_tokens(text), maxlen=0)  # walking is the check: it raises past the limit


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
    final_step = deque(walk_tokens(text), maxlen=1)
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


class NotStrict:
    """What `strict_value` gives for text that is not one strict JSON value."""

    __slots__ = ("error",)

    def __init__(self, error: str) -> None:
        self.error = error


def strict_value(text: str, budget: RelaxedParseBudget) -> Any:
    """The one strict JSON value `text` holds, or NotStrict. Charged a parse; refused past
    MAX_NESTING_DEPTH (counted on the value: walking the text instead cost a second read
    of it, 1.2 s for a 12 MB file write of source code full of braces)."""
    budget.spend_parse()
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as error:
        return NotStrict(str(error))
    if nested_deeper_than(value, MAX_NESTING_DEPTH):
        raise RelaxedJSONError(f"nested deeper than {MAX_NESTING_DEPTH} levels")
    return value


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether containers in `value` (decoded JSON) nest more than `limit` levels: one look
    at each, a level at a time, with no recursion (~4 ms a MB of JSON that is all small
    objects, a fifth of what decoding it took)."""
    level = [value] if type(value) is dict or type(value) is list else []
    for _ in range(limit):
        if not level:
            return False
        deeper = []
        for container in level:
            for child in container.values() if type(container) is dict else container:
                if type(child) is dict or type(child) is list:
                    deeper.append(child)
        level = deeper
    return bool(level)


def parse_relaxed_json(
    text: str, *, complete_only: bool = False, budget: RelaxedParseBudget | None = None
) -> Any:
    """One JSON value, as relaxed as models write it.

    Tried in order: strict `json`; each repair in `REPAIRS`, cumulatively, parsed strictly;
    then JSON5 on the text as written and on the fully repaired text. With `complete_only`,
    a value cut off before its end is rejected instead of closed. The parse is charged to
    `budget` (a default-sized one of its own when none is given): the strict try its fixed
    cost, relaxed reading by its length; it is refused when that does not fit.
    """
    budget = budget or RelaxedParseBudget()
    text = strip_code_fence(text)
    value = strict_value(text, budget)
    if not isinstance(value, NotStrict):
        return value
    strict_error = value.error
    _check_nesting(text)
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
