"""The loop the tag parsers share: text outside calls, held-back tag prefixes, think blocks
and off-protocol answers; each call is handed to the protocol's scanner, which works under
the commit policy (`commit_policy`)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Protocol

from .base import ParserOptions, StreamParser
from .commit_policy import CallContext, CallScanner
from .off_protocol import OffProtocolAnswer
from .parts import (
    ParseError,
    Part,
    PartWriter,
    ThinkEnd,
    ThinkStart,
    ToolSpec,
)
from .relaxed_json import RelaxedParseBudget
from .tool_names import DeclaredTools


def partial_token_start(text: str, tokens: Sequence[str]) -> int:
    """Where a suffix of `text` that could still grow into one of `tokens` begins
    (len(text) when there is none). Only that suffix has to be held back."""
    start = len(text)
    for token in tokens:
        # A partial token is shorter than the token and begins with its first character.
        index = text.find(token[0], max(0, len(text) - len(token) + 1))
        while index != -1 and index < start:
            if token.startswith(text[index:]):
                start = index
                break
            index = text.find(token[0], index + 1)
    return start


def unclosed_tag_start(text: str, window: int, start: int = 0) -> int:
    """Where the last `<` of `text[start:]` begins if no `>` follows it yet and it lies within
    the last `window` characters (a longer run is prose, not a tag); else len(text)."""
    bracket = text.rfind("<", max(start, len(text) - window))
    return bracket if bracket != -1 and ">" not in text[bracket:] else len(text)


THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


class HeldOpen(Protocol):
    """A held-back suffix that begins with an open tag still being written, followed as more
    text arrives, so that a long one (a tag whose attributes carry a file) is not searched
    again from its start on every delta."""

    def extend(self, text: str) -> bool:
        """Follow `text`, appended to the suffix: True while the tag is still unfinished (and
        nothing after its start can be decided), False once it ended or cannot be a tag."""


class TagStreamParser(StreamParser):
    """The loop every tag protocol shares: text outside calls flows out at once (holding back
    only a suffix that could still become an open tag), `<think>` blocks are never parsed
    for calls, and each call is handed to the protocol's CallScanner.

    Each feed touches only the new text plus a held-back suffix no longer than an open
    tag, so the whole stream is linear in its length."""

    # The characters a think tag, a call open tag or a held-back suffix begins with
    # (protocols add theirs): text holding none of them is text, in a think block or out.
    _tag_chars: frozenset[str] = frozenset("<")
    # The longest suffix `_partial_open_start` can hold back: an open tag that begins further
    # from the end than this cannot lie inside one still being written.
    _longest_partial_open: int = 256

    def __init__(self, tools: Sequence[ToolSpec], options: ParserOptions) -> None:
        self._ctx = CallContext(
            out=PartWriter(),
            tools=DeclaredTools(tools),
            on_error=options.on_error or _ignore_error,
            mode=options.mode,
            unknown_tools=options.unknown_tools,
            relaxed_budget=RelaxedParseBudget(options.relaxed_parse_budget_chars),
            small_call_chars=options.small_call_chars,
        )
        self._pending = ""
        self._call: CallScanner | None = None
        self._in_think = False
        # Inside a think block from a call open tag on: how much of `_pending` has been
        # searched for `</think>` (None while no call tag is held).
        self._held_think_call: int | None = None
        # What came after that while no `</think>` did: kept as pieces, with the last
        # characters that could begin one, so holding a long block costs linear time.
        self._held_pieces: list[str] = []
        self._held_seam = ""
        # The held-back suffix `_pending`, while it is an open tag still being written.
        self._held_open: HeldOpen | None = None
        # The answer's start while it may still be call objects written off the protocol.
        self._answer = (
            OffProtocolAnswer(self._ctx.tools, self._opens_call)
            if options.off_protocol_calls
            else None
        )

    @abstractmethod
    def _find_open(self, text: str) -> tuple[int, int, str] | None:
        """The earliest complete call open tag in `text`: (start, end, tool name)."""

    @abstractmethod
    def _partial_open_start(self, text: str) -> int:
        """Where a suffix that could still become a call open tag begins, else len(text)."""

    @abstractmethod
    def _open_call(self, open_tag: str, name: str) -> CallScanner | None:
        """A scanner for the call this tag opens; None when the tag alone was the call."""

    def _follow_held(self, held: str) -> HeldOpen | None:
        """A follower for a held-back suffix that is an open tag still being written, when
        the protocol can follow one delta by delta (see HeldOpen); None re-reads it."""
        return None

    def feed(self, text: str) -> list[Part]:
        if self._answer is not None:
            if self._answer.feed(text):
                return self._ctx.out.take()
            text, self._answer = self._answer.text, None  # not off-protocol calls: read it
        if self._held_think_call is not None:
            seam = self._held_seam + text
            if THINK_CLOSE not in seam:
                self._held_pieces.append(text)
                self._held_seam = seam[1 - len(THINK_CLOSE) :]
                return self._ctx.out.take()
            text = self._take_held_pieces() + text
        if self._held_open is not None:
            if self._held_open_goes_on(text):
                self._pending += text
                return self._ctx.out.take()
            self._held_open = None
        self._pending += text
        self._advance()
        return self._ctx.out.take()

    def _held_open_goes_on(self, text: str) -> bool:
        """Whether the held open tag is still unfinished after `text`. A think tag in it ends
        the wait: outside calls, think tags are found wherever they are."""
        assert self._held_open is not None
        think_tag = THINK_CLOSE if self._in_think else THINK_OPEN
        seam = self._pending[1 - len(think_tag) :] + text
        return think_tag not in seam and self._held_open.extend(text)

    def finish(self) -> list[Part]:
        out = self._ctx.out
        if self._answer is not None:
            answer, self._answer = self._answer, None
            calls = answer.calls(self._ctx.relaxed_budget)
            if calls is not None:
                self._ctx.complete_calls(calls, answer.text)
                return out.take()
            self._pending += answer.text
            self._advance()
        if self._in_think and self._held_think_call is not None:
            # The output ended in a think block holding a call: the model forgot `</think>`.
            self._pending += self._take_held_pieces()
            out.marker(ThinkEnd(""))
            self._in_think = False
            self._held_think_call = None
            self._advance()
        if self._call is not None:
            self._call.finish()
            self._call = None
        out.text(self._pending)
        self._pending = ""
        if self._in_think:
            out.marker(ThinkEnd(""))
            self._in_think = False
        out.end()
        return out.take()

    def _take_held_pieces(self) -> str:
        held, self._held_pieces, self._held_seam = "".join(self._held_pieces), [], ""
        return held

    def _opens_call(self, text: str) -> bool:
        found = self._find_open(text)
        return found is not None and found[0] == 0

    def _find_call(self, text: str) -> tuple[int, int, str] | None:
        """The earliest complete open tag in `text`, unless an open tag still being written
        begins before it (a tool tag whose quoted attribute holds another): that one decides
        first, so that any chunking reads the text alike."""
        call = self._find_open(text)
        if (
            call is not None
            and len(text) - call[0] < self._longest_partial_open
            and self._partial_open_start(text) < call[0]
        ):
            return None
        return call

    def _hold(self, text: str, safe: int) -> None:
        """Emit `text` up to `safe`; hold back the rest (it may still become a tag)."""
        self._ctx.out.text(text[:safe])
        self._pending = text[safe:]
        self._held_open = self._follow_held(self._pending) if self._pending else None

    def _advance(self) -> None:
        while self._pending:
            if self._call is not None:
                rest = self._call.consume(self._pending)
                if rest is None:
                    self._pending = ""
                    return
                self._call = None
                self._pending = rest
            elif self._tag_chars.isdisjoint(self._pending):
                # All that is held back (a partial tag, a call tag in a think block) begins
                # with a tag character, so this is text: the common prose delta's one scan.
                self._ctx.out.text(self._pending)
                self._pending = ""
            elif self._in_think:
                if not self._advance_in_think():
                    return
            elif not self._advance_outside():
                return

    def _advance_in_think(self) -> bool:
        """Emit think text up to `</think>`; False when more text is needed. A call open tag
        inside the block holds the rest until `</think>` (then it was text) or the end of the
        output (then it is a call)."""
        out, text = self._ctx.out, self._pending
        scan_from = max(0, (self._held_think_call or 0) - len(THINK_CLOSE) + 1)
        end = text.find(THINK_CLOSE, scan_from)
        if self._held_think_call is None:
            call = self._find_call(text[: end if end != -1 else len(text)])
            if call is not None:
                out.text(text[: call[0]])
                self._pending = text = text[call[0] :]
                end = text.find(THINK_CLOSE)
                self._held_think_call = 0
        if end == -1:
            if self._held_think_call is not None:
                self._held_think_call = len(text)
                self._held_seam = text[1 - len(THINK_CLOSE) :]
                return False
            safe = min(partial_token_start(text, (THINK_CLOSE,)), self._partial_open_start(text))
            self._hold(text, safe)
            return False
        out.text(text[:end])
        out.marker(ThinkEnd(THINK_CLOSE))
        self._in_think = False
        self._held_think_call = None
        self._pending = text[end + len(THINK_CLOSE) :]
        return True

    def _advance_outside(self) -> bool:
        """Emit text up to the next think or call open tag; False when more text is needed."""
        out, text = self._ctx.out, self._pending
        call = self._find_call(text)
        think = text.find(THINK_OPEN, 0, call[0] if call else len(text))
        if think != -1:
            out.text(text[:think])
            out.marker(ThinkStart(THINK_OPEN))
            self._in_think = True
            self._pending = text[think + len(THINK_OPEN) :]
            return True
        if call is not None:
            start, end, name = call
            out.text(text[:start])
            self._call = self._open_call(text[start:end], name)
            self._pending = text[end:]
            return True
        safe = min(self._partial_open_start(text), partial_token_start(text, (THINK_OPEN,)))
        self._hold(text, safe)
        return False


def _ignore_error(error: ParseError) -> None:
    pass
