"""Calls written off the protocol's format, as small models write them: the whole answer
(modulo whitespace) is call objects `{"name": <declared tool>, "arguments": {...}}` (one
after another, `;` between several as Llama 3.x writes custom tools, or in a JSON array),
or the calls of a dialect that has no marker of its own (`dialect.AnswerForm`: a Python
list of calls), bare, in one code fence, or inside one stray tag such as `<tool_response>`.
Anything else around them (prose before or after) makes the answer text, and it is
released as soon as it shows: prose after the calls streams, it is not held to the end.

Objects that name no declared tool alone are text; beside one that does (a small model
wrote `Write` between two tools it made up), they are what the model meant to do, and the
declared call is read (`emit_call_objects`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ..base import UnknownTools
from ..lenient.call_objects import CallObjectError, calls_in_json
from ..lenient.json_values import TopLevelReader
from ..lenient.relaxed_json import (
    RelaxedJSONError,
    RelaxedParseBudget,
    strip_code_fence,
)
from ..lenient.tool_names import DeclaredTools
from ..parts import ErrorKind
from .call_hold import MAX_HELD_CHARS
from .commit_policy import CallContext
from .dialect_forms import AnswerForm, could_name, resolve_tool_name

# Longer than any tag name a model wraps an answer in; a longer `<...` is prose.
MAX_WRAPPER_TAG_CHARS = 64
# Blank lines, a tag and a fence line come before the first object, so it begins within
# this many characters or the answer is prose (and re-reading a growing start on every delta
# would not stay linear). Where it begins counts, not how long the first delta is: a whole
# answer arrives as one delta.
MAX_ANSWER_HEAD_CHARS = 1024
_WRAPPER_OPEN = re.compile(rf"<([A-Za-z_][\w.:-]{{0,{MAX_WRAPPER_TAG_CHARS}}})>")
_FENCE_OPEN = re.compile(r"```[\w.+-]*[ \t]*\n")
_TAG_HEAD = re.compile(r"<(?:[A-Za-z_][\w.:-]*)?")
_FENCE_HEAD = re.compile(r"```[\w.+-]*[ \t]*")
_FENCE = "```"
_VALUE_OPENERS = ("{", "[")  # a call object, or an array of them
_SEPARATORS = re.compile(r"[\s,;]*")  # between call objects, as `parse_json_values` splits them
# Only the two keys real models use here: a bare object with other keys is more likely
# an answer in JSON than a call.
_ARGUMENTS_KEYS = frozenset({"arguments", "parameters"})


Calls = list[tuple[str, dict[str, Any]]]


def fenced_call_objects(text: str, budget: RelaxedParseBudget) -> Calls | None:
    """The calls a code fence of JSON holds (`text`, its fence lines included) when it holds
    call objects alone (as the whole answer must, see OffProtocolAnswer), else None. Their
    names are as written: `emit_call_objects` decides on them."""
    try:
        return calls_in_json(
            text.strip(), complete_only=True, budget=budget, required_keys=_ARGUMENTS_KEYS
        )
    except CallObjectError:
        return None


def emit_call_objects(ctx: CallContext, calls: Calls, original: str) -> bool:
    """Emit the calls a stretch of call objects written off the protocol holds (`original`,
    the whole answer or a fence), if one of them names a declared tool; False leaves the
    stretch text. Objects naming no declared tool alone are text (an answer in JSON that
    looks like calls, or calls to tools of another prompt), with an `unknown_tool` record
    saying why no call came of them. Beside a declared call they are calls the model meant,
    handled as UNKNOWN_TOOLS says of undeclared calls: forwarded (the agent tells the model
    the tool does not exist), or, under `text`, left out of the calls with the record
    holding their names, while the declared calls go out."""
    unknown = [name for name, _ in calls if name not in ctx.tools]
    if unknown:
        names = ", ".join(unknown)
        if len(unknown) == len(calls):
            ctx.error(ErrorKind.UNKNOWN_TOOL, f"call objects to unknown tools: {names}", original)
            return False
        if ctx.unknown_tools is UnknownTools.CALL:
            message = f"unknown tool beside declared calls, forwarded: {names}"
        else:
            message = f"unknown tool beside declared calls, left out: {names}"
            calls = [(name, arguments) for name, arguments in calls if name in ctx.tools]
        ctx.error(ErrorKind.UNKNOWN_TOOL, message, original)
    ctx.complete_calls(calls, original)
    return True


class OffProtocolAnswer:
    """The start of an answer, held while it may still be off-protocol call objects.
    `feed` says whether it still may; `calls` reads it once the output has ended."""

    def __init__(
        self,
        declared: DeclaredTools,
        is_call_tag: Callable[[str], bool],
        forms: Sequence[AnswerForm] = (),
    ) -> None:
        self._declared = declared
        self._is_call_tag = is_call_tag  # the protocol's own call at the start: not ours
        self._forms = forms
        self._form: AnswerForm | None = None  # the dialect of the calls, None for objects
        self._head = ""  # the answer until its first object is found (a few characters)
        self._rest: list[str] = []  # what follows, kept in pieces: a long answer is held
        self._rest_chars = 0
        self._json_start: int | None = None  # where in `_head` the first object begins
        self._values = TopLevelReader()  # what lies between the objects, from the first on
        # What may end the answer after its objects: the fence's and the tag's closings.
        self._closing = ""
        self._closing_seen: str | None = None  # its non-blank text so far, once it began

    @property
    def text(self) -> str:
        return self._head + "".join(self._rest)

    @property
    def too_long(self) -> bool:
        """Held past MAX_HELD_CHARS: the answer is no longer held, whatever it is."""
        return self._rest_chars > MAX_HELD_CHARS

    def feed(self, text: str) -> bool:
        if self._json_start is not None:
            self._rest.append(text)
            self._rest_chars += len(text)
            return not self.too_long and self._follow_json(text)
        self._head += text
        if self._find_json_start():
            assert self._json_start is not None
            return self._follow_json(self._head[self._json_start :])
        return len(self._head) <= MAX_ANSWER_HEAD_CHARS and self._may_still_open()

    def calls(self, budget: RelaxedParseBudget) -> Calls | None:
        """The calls the whole answer is, or None when it is not only calls. A dialect's
        calls name declared tools alone; call objects' names are as written (see
        `emit_call_objects`)."""
        if self._json_start is None:
            return None
        try:
            budget.spend_calls()  # as the tag that opens a call is
        except RelaxedJSONError:
            return None
        inner = self.text.strip()
        wrapper = _WRAPPER_OPEN.match(inner)
        if wrapper:
            closing = f"</{wrapper.group(1)}>"
            if not inner.endswith(closing):
                return None
            inner = inner[wrapper.end() : -len(closing)].strip()
        try:
            if self._form is not None:
                return self._declared_calls(self._form.read(strip_code_fence(inner), budget))
            return calls_in_json(
                inner, complete_only=True, budget=budget, required_keys=_ARGUMENTS_KEYS
            )
        except CallObjectError:
            return None

    def _declared_calls(
        self, calls: list[tuple[str, dict[str, Any]]]
    ) -> list[tuple[str, dict[str, Any]]] | None:
        """The calls with their tools' declared names, or None when one names none."""
        declared = []
        for written, arguments in calls:
            name = resolve_tool_name(written, self._declared)
            if name is None:
                return None
            declared.append((name, arguments))
        return declared

    def _find_json_start(self) -> bool:
        """Find where the JSON begins (after an optional tag and fence); False if unknown yet."""
        text = self._head[:MAX_ANSWER_HEAD_CHARS]
        position = len(text) - len(text.lstrip())
        closing = ""
        if text.startswith("<", position):
            if self._is_call_tag(text[position:]):
                return False
            wrapper = _WRAPPER_OPEN.match(text, position)
            if wrapper is None:
                return False
            closing = f"</{wrapper.group(1)}>"
            position = wrapper.end()
            position += len(text[position:]) - len(text[position:].lstrip())
        if text.startswith(_FENCE, position):
            fence = _FENCE_OPEN.match(text, position)
            if fence is None:
                return False
            closing = _FENCE + closing
            position = fence.end()
            position += len(text[position:]) - len(text[position:].lstrip())
        # A dialect's calls first: its beginning is the more specific (a Python list of
        # calls begins with `[` too), and while one may still grow there, wait for it.
        for form in self._forms:
            begins = form.begins.match(text, position)
            name = begins.groupdict().get("name") if begins else None
            if begins and (name is None or resolve_tool_name(name, self._declared)):
                # The calls' JSON (or list) begins at the group `body` where a word leads.
                start = begins.start("body") if "body" in form.begins.groupindex else position
                self._json_start, self._closing, self._form = start, closing, form
                return True
        if text.startswith(_VALUE_OPENERS, position):
            if text.startswith("[", position) and self._may_begin(text[position:]):
                return False  # `[` and perhaps a tool's name: a Python list of calls, or JSON
            self._json_start, self._closing = position, closing
            return True
        return False

    def _may_begin(self, body: str) -> bool:
        """Whether the answer's body so far may still grow into a dialect's calls."""
        for form in self._forms:
            head = form.head.fullmatch(body)
            name = head.groupdict().get("name") if head else None
            if head and (name is None or could_name(name, self._declared.sorted_keys())):
                return True
        return False

    def _may_still_open(self) -> bool:
        """Whether the start seen so far can still grow into an opening of call objects."""
        rest = self._head.lstrip()
        if not rest or rest.startswith(_VALUE_OPENERS) or self._may_begin(rest):
            return True
        if rest[0] == "<":
            if self._is_call_tag(rest):
                return False
            wrapper = _WRAPPER_OPEN.match(rest)
            if wrapper is None:
                return len(rest) <= MAX_WRAPPER_TAG_CHARS + 1 and bool(_TAG_HEAD.fullmatch(rest))
            rest = rest[wrapper.end() :].lstrip()
            if not rest or self._may_begin(rest):
                return True
        if _FENCE.startswith(rest):
            return True
        if rest.startswith(_FENCE):
            fence = _FENCE_OPEN.match(rest)
            if fence is None:
                return bool(_FENCE_HEAD.fullmatch(rest))  # its info line is still coming
            body = rest[fence.end() :].lstrip()
            return not body or self._may_begin(body)
        return False

    def _follow_json(self, new: str) -> bool:
        """False once the answer cannot be only calls: what follows the objects is more
        than their closing. Whether the objects parse as calls (a relaxed body), and name a
        declared tool, is decided when the output ends: a later object may name one."""
        try:
            between = self._values.feed(new)
        except RelaxedJSONError:
            return False  # nested too deep for any call to be read from it
        return all(self._may_follow(kind, token) for kind, token in between)

    def _may_follow(self, kind: str, token: str) -> bool:
        """Whether a token between the top-level values leaves the answer only calls: more
        objects, separators and comments may come, then the closing and blanks alone (what
        `calls` accepts; a top-level string or stray bracket is a value and no call)."""
        if kind != "code":
            return self._closing_seen is None and kind in ("open", "comment")
        if self._closing_seen is None:
            separators = _SEPARATORS.match(token)
            assert separators is not None  # the pattern matches the empty string
            token = token[separators.end() :]
            if not token:
                return True
            self._closing_seen = ""
        self._closing_seen += "".join(token.split())
        return self._closing.startswith(self._closing_seen)
