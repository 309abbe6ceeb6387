"""The parser of an answer offered no tools when its think blocks are wanted apart: it can
call nothing, so it reads only the think blocks (`THINK_TAGS`, found where the tag loop
finds them) and gives every other character out as text, as soon as it cannot begin a tag."""

from __future__ import annotations

from ..base import StreamParser
from ..parts import Part, TextDelta, ThinkEnd, ThinkStart
from .think_tags import THINK_TAGS

TEXT_ID = "text"


class ThinkBlocks(StreamParser):
    """Text and think blocks: `ThinkStart`, the block's text, `ThinkEnd` (with "" when the
    answer ended inside one). Only a suffix that could still begin the tag awaited is held
    back, so each feed costs its own text plus a tag's length.

    >>> parser = ThinkBlocks()
    >>> parser.feed("<think>hm</thi") + parser.feed("nk>Hi")
    [ThinkStart('<think>'), TextDelta('text', 'hm'), ThinkEnd('</think>'), TextDelta(..., 'Hi')]
    """

    def __init__(self) -> None:
        self._close: str | None = None  # the close tag of the block the text is in
        self._held = ""  # a suffix that may begin the tag awaited

    def feed(self, text: str) -> list[Part]:
        parts: list[Part] = []
        text, self._held = self._held + text, ""
        at = 0  # read up to here: a position, so that many tags in one feed stay linear
        while True:
            tag, start = self._next_tag(text, at)
            if tag is None:
                keep = _partial_tag(text, at, self._awaited())
                self._text(parts, text[at : len(text) - keep])
                self._held = text[len(text) - keep :]
                return parts
            self._text(parts, text[at:start])
            if self._close is None:
                parts.append(ThinkStart(tag))
                self._close = THINK_TAGS[tag]
            else:
                parts.append(ThinkEnd(tag))
                self._close = None
            at = start + len(tag)

    def finish(self) -> list[Part]:
        parts: list[Part] = []
        self._text(parts, self._held)
        self._held = ""
        if self._close is not None:
            parts.append(ThinkEnd(""))
            self._close = None
        return parts

    def _awaited(self) -> tuple[str, ...]:
        return tuple(THINK_TAGS) if self._close is None else (self._close,)

    def _next_tag(self, text: str, at: int) -> tuple[str | None, int]:
        """The first awaited tag in `text` from `at`, and where it starts."""
        found = [(text.find(tag, at), tag) for tag in self._awaited()]
        at, tag = min(((at, tag) for at, tag in found if at != -1), default=(-1, None))
        return tag, at

    @staticmethod
    def _text(parts: list[Part], text: str) -> None:
        if text:
            parts.append(TextDelta(TEXT_ID, text))


def _partial_tag(text: str, at: int, tags: tuple[str, ...]) -> int:
    """The length of the longest suffix of `text[at:]` that begins one of `tags` but is not
    one."""
    longest = max(len(tag) for tag in tags) - 1
    for size in range(min(longest, len(text) - at), 0, -1):
        suffix = text[-size:]
        if any(tag.startswith(suffix) for tag in tags):
            return size
    return 0
