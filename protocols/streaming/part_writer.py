"""The writer a parser hands its parts to during one feed: it groups contiguous text into
text blocks and holds back layout (`call_shell`), so the parts it gives out keep the
accounting rule of `parts`."""

from __future__ import annotations

from ..parts import Part, TextDelta, TextEnd, TextStart
from .call_shell import CallShell


class PartWriter:
    """Collects parts for one feed, grouping contiguous text into one text block.

    Whitespace-only text next to calls is layout (the line breaks around a call), and so is
    the empty shell of a fence or wrapper tag the calls were written in (see call_shell):
    held until text that is not layout follows, and dropped if a call or the end comes
    first. Clients would otherwise show it as a message of its own. An output with no call
    at all has no layout: a whole answer that is only whitespace (or a lone fence) is its
    text."""

    __slots__ = ("_block", "_blocks", "_called", "_parts", "_shell")

    def __init__(self) -> None:
        self._parts: list[Part] = []
        self._block: str | None = None
        self._blocks = 0
        self._shell = CallShell()  # the text outside blocks, while it may be layout
        self._called = False  # a call part was written: what is held beside it is layout

    def text(self, text: str) -> None:
        if not text:
            return
        block = self._block
        if block is None:
            released = self._shell.feed(text)
            if not released:
                return
            text, block = released, self._open_block()
        self._parts.append(TextDelta(block, text))

    def marker(self, part: Part) -> None:
        """A part that sits inside the text flow (think markers) without closing it; text
        held as layout before it is text after all."""
        self._release(self._shell.flush())
        self._parts.append(part)

    def _release(self, held: str) -> None:
        if held:
            block = self._block if self._block is not None else self._open_block()
            self._parts.append(TextDelta(block, held))

    def _open_block(self) -> str:
        self._block = f"text_{self._blocks}"
        self._blocks += 1
        self._parts.append(TextStart(self._block))
        return self._block

    def _close_block(self) -> None:
        if self._block is not None:
            self._parts.append(TextEnd(self._block))
            self._block = None

    def call_part(self, part: Part) -> None:
        self._release(self._shell.before_call())
        self._close_block()
        self._called = True
        self._parts.append(part)

    def end(self) -> None:
        """The output ended: what is held is layout (dropped) only if a call was written;
        other held text is text."""
        self._release(self._shell.finish() if self._called else self._shell.flush())
        self._close_block()

    def take(self) -> list[Part]:
        parts, self._parts = self._parts, []
        return parts
