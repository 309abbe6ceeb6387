"""The writer a parser hands its parts to during one feed: it groups contiguous text into
text blocks and holds back layout (`call_shell`), so the parts it gives out keep the
accounting rule of `parts`."""

from __future__ import annotations

from ..parts import Part, TextDelta, TextEnd, TextStart, ToolCallDelta
from .call_shell import CallShell


class PartWriter:
    """Collects parts for one feed, grouping contiguous text into one text block.

    Whitespace-only text next to calls is layout (the line breaks around a call), and so is
    the empty shell of a fence or wrapper tag the calls were written in (see call_shell):
    held until text that is not layout follows, and dropped if a call or the end comes
    first. Clients would otherwise show it as a message of its own. An output with no call
    at all has no layout: a whole answer that is only whitespace (or a lone fence) is its
    text."""

    __slots__ = ("_block", "_blocks", "_called", "_parts", "_run", "_run_of", "_shell")

    def __init__(self) -> None:
        self._parts: list[Part] = []
        self._block: str | None = None
        self._blocks = 0
        self._shell = CallShell()  # the text outside blocks, while it may be layout
        self._called = False  # a call part was written: what is held beside it is layout
        # The text of one block, or the argument fragments of one call, written one after
        # another in this feed: given out as one part (a whole answer or a large delta is
        # read in small pieces, each of which adds a little).
        self._run: list[str] = []
        self._run_of: TextDelta | ToolCallDelta | None = None  # the run's first part

    def text(self, text: str) -> None:
        if not text:
            return
        block = self._block
        if block is None:
            released = self._shell.feed(text)
            if not released:
                return
            text, block = released, self._open_block()
        self._add(TextDelta(block, text))

    def marker(self, part: Part) -> None:
        """A part that sits inside the text flow (think markers) without closing it; text
        held as layout before it is text after all."""
        self._release(self._shell.flush())
        self._add(part)

    def _release(self, held: str) -> None:
        if held:
            block = self._block if self._block is not None else self._open_block()
            self._add(TextDelta(block, held))

    def _open_block(self) -> str:
        self._block = f"text_{self._blocks}"
        self._blocks += 1
        self._add(TextStart(self._block))
        return self._block

    def _close_block(self) -> None:
        if self._block is not None:
            self._add(TextEnd(self._block))
            self._block = None

    def call_part(self, part: Part) -> None:
        self._release(self._shell.before_call())
        self._close_block()
        self._called = True
        self._add(part)

    def _add(self, part: Part) -> None:
        run_of = self._run_of
        if run_of is not None and type(part) is type(run_of) and part.id == run_of.id:
            self._run.append(part.text if isinstance(part, TextDelta) else part.arguments)
            return
        self._end_run()
        if isinstance(part, TextDelta | ToolCallDelta):
            self._run_of = part
        else:
            self._parts.append(part)

    def _end_run(self) -> None:
        run_of, self._run_of = self._run_of, None
        if run_of is None:
            return
        if self._run:
            if isinstance(run_of, TextDelta):
                run_of = TextDelta(run_of.id, "".join((run_of.text, *self._run)))
            else:
                run_of = ToolCallDelta(run_of.id, "".join((run_of.arguments, *self._run)))
            self._run = []
        self._parts.append(run_of)

    def end(self) -> None:
        """The output ended: what is held is layout (dropped) only if a call was written;
        other held text is text."""
        self._release(self._shell.finish() if self._called else self._shell.flush())
        self._close_block()

    def take(self) -> list[Part]:
        self._end_run()
        parts, self._parts = self._parts, []
        return parts
