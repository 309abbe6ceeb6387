"""The empty shell models wrap their calls in: a code fence (```` ```xml ````) or a wrapper tag
(`<tool_result>`) on a line of its own before the calls, and its closing after them (on
their last line or the next). Once
the calls are taken out, the shell holds nothing, and a client would show it as a message
(```` ```xml\\n\\n``` ````): it is layout, dropped like the line breaks around calls.

`CallShell` follows the text outside text blocks (where the writer holds layout): what may
still be layout or a shell is held, and released as text as soon as it cannot be. A shell is
recognised only where a text block would begin (at the start of the output or right after a
call, modulo whitespace), so a fence after prose stays with it, its closing too. A wrapper
tag is a shell only before the first call: models wrap all their calls in one, and a tag
between two calls (`<tool_callx>`, a lookalike) is text, not the opening of a second."""

from __future__ import annotations

import re
from enum import Enum, auto

# A shell's opening line, whole: a fence line, or a tag with its attributes.
_OPENING = re.compile(r"```[\w.+-]*[ \t]*|<([A-Za-z_][\w.:-]*)(?:\s[^<>]*)?>[ \t]*")
# A beginning of one.
_OPENING_START = re.compile(
    r"`{1,2}|```[\w.+-]*[ \t]*|<(?:[A-Za-z_][\w.:-]*(?:\s[^<>]*)?(?:>[ \t]*)?)?"
)
# Longer than any fence line or wrapper tag a model writes; a longer line is prose.
MAX_OPENING_CHARS = 320
_FENCE = "```"
_BLANKS = " \t\r\n"


class _Phase(Enum):
    LAYOUT = auto()  # blanks only, so far
    OPENING = auto()  # an opening line being written
    OPENED = auto()  # blanks after a whole opening line
    CLOSING = auto()  # after calls in a shell: its closing being written
    CLOSED = auto()  # the closing whole, waiting for what follows it


class CallShell:
    """Text outside text blocks, held while it may be layout or a shell around calls.

    `feed` returns the text to release as the start of a text block (None: all is held);
    `before_call` what to release before a call (a shell's opening is dropped); `finish`
    and `flush` what to release at the end of the output and before a think marker."""

    __slots__ = ("_called", "_closing", "_held", "_line", "_line_start", "_matched", "_phase")

    def __init__(self) -> None:
        self._held: list[str] = []  # what was fed and is neither released nor dropped
        self._phase = _Phase.LAYOUT
        self._line_start = True  # the layout so far ends at the start of a line
        self._line = ""  # the opening line so far
        self._closing: str | None = None  # the open shell's closing, after its calls
        self._matched = 0  # how much of the closing was written
        self._called = False  # a call came: no wrapper tag opens a shell any more

    def feed(self, text: str) -> str | None:
        if self._phase is _Phase.LAYOUT and self._closing is None and not self._held:
            first = text[:1]
            if first not in _BLANKS and (first not in "<`" or not self._line_start):
                return text  # prose right after a call: the common case, at once
        start = 0  # where the text not yet dropped begins
        position = 0
        while position < len(text):
            phase = self._phase
            if phase is _Phase.LAYOUT or phase is _Phase.OPENED:
                blank = position + _blank_run(text, position)
                self._line_start = self._line_start or "\n" in text[position:blank]
                position = blank
                if position == len(text):
                    break
                if phase is _Phase.OPENED:
                    return self._release(text, start)  # not a call after the opening
                if self._closing is not None:
                    self._phase, self._matched = _Phase.CLOSING, 0
                elif self._line_start and text[position] in "<`":
                    self._phase, self._line = _Phase.OPENING, ""
                else:
                    return self._release(text, start)
            elif phase is _Phase.OPENING:
                end = text.find("\n", position)
                end = len(text) if end == -1 else end
                self._line += text[position:end]
                position = end
                if len(self._line) > MAX_OPENING_CHARS or not _OPENING_START.fullmatch(self._line):
                    return self._release(text, start)
                if position < len(text):  # the line ended
                    if not _OPENING.fullmatch(self._line):
                        return self._release(text, start)
                    self._phase = _Phase.OPENED
            elif phase is _Phase.CLOSING:
                closing = self._closing or ""
                rest = closing[self._matched :]
                taken = _shared_prefix_length(text, position, rest)
                self._matched += taken
                position += taken
                if self._matched < len(closing):
                    if position < len(text):
                        return self._release(text, start)  # not the closing after all
                    break
                self._phase = _Phase.CLOSED
            else:  # CLOSED: a fence's closing must end its line
                if self._closing == _FENCE and text[position] not in _BLANKS:
                    return self._release(text, start)
                self._drop()
                start = position
                self._line_start = False
        self._held.append(text[start:])
        return None

    def before_call(self) -> str:
        """What is held before a call: dropped if it is layout, a shell's whole opening or a
        closing (then released as ""), else released as text."""
        phase, called = self._phase, self._called
        self._line_start, self._called = True, True
        if phase is _Phase.LAYOUT and not self._held:  # a call right after text or a call
            return ""
        closing = None
        if phase is _Phase.OPENED:
            opening = _OPENING.fullmatch(self._line)
            assert opening is not None  # a whole opening line was seen
            tag = opening.group(1)
            if tag is not None and called:
                return self.flush()
            closing = _FENCE if tag is None else f"</{tag}>"
            self._drop()
        elif phase is _Phase.LAYOUT:
            closing = self._closing  # calls one after another in an open shell
            self._drop()
        elif phase is _Phase.CLOSED:
            self._drop()
        released = self.flush()
        self._closing = None if released else closing
        return released

    def finish(self) -> str:
        """What is held at the end of the output: dropped if it is layout or a closing."""
        if self._phase in (_Phase.LAYOUT, _Phase.CLOSED):
            self._drop()
        return self.flush()

    def flush(self) -> str:
        """Everything held, as text; the shell, if one was open, is left."""
        held = "".join(self._held)
        self._drop()
        self._closing = None
        return held

    def _release(self, text: str, start: int) -> str:
        self._held.append(text[start:])
        return self.flush()

    def _drop(self) -> None:
        self._held = []
        if self._phase is _Phase.CLOSED:
            self._closing = None
        self._phase = _Phase.LAYOUT
        self._line = ""


def _blank_run(text: str, position: int) -> int:
    """How many blank characters `text` has from `position` on."""
    return len(text) - position - len(text[position:].lstrip(_BLANKS))


def _shared_prefix_length(text: str, position: int, expected: str) -> int:
    length = 0
    while (
        length < len(expected)
        and position + length < len(text)
        and text[position + length] == expected[length]
    ):
        length += 1
    return length
