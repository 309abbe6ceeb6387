"""The reasoning blocks models write, and the state of the one the text is in.

No call is read inside a think block. A call open tag there holds the rest of the block:
until the block's close tag (the tag was thought about, and is think text) or the output's
end (the model forgot the close tag, and what was held is its answer). What is held comes
as pieces, with the last characters that could begin the close tag, so holding a long
block costs linear time; past MAX_HELD_CHARS the hold is given up and the rest of the
block is think text."""

from __future__ import annotations

import re

from .call_hold import MAX_HELD_CHARS

# Each open tag with the one close tag that ends its block: `<think>` (DeepSeek-R1, Qwen3
# and most), Seed-OSS's `<seed:think>`, Kimi K3's think channel and K2 Horizon's three
# (SGLang `k2_v3`).
THINK_TAGS: dict[str, str] = {
    "<think>": "</think>",
    "<seed:think>": "</seed:think>",
    "<|open|>think<|sep|>": "<|close|>think<|sep|>",
    "<ifm|think>": "</ifm|think>",
    "<ifm|think_fast>": "</ifm|think_fast>",
    "<ifm|think_faster>": "</ifm|think_faster>",
}
THINK_OPEN = re.compile("|".join(map(re.escape, THINK_TAGS)))
_LONGEST_THINK_OPEN = max(map(len, THINK_TAGS))


def think_tag_ends(before: str, text: str, block: ThinkBlock | None) -> bool:
    """Whether `text`, after `before`, holds the tag that changes where the text stands:
    the close tag of the block it is in, or, outside one, an open tag."""
    if block is not None:
        return block.close in before[1 - len(block.close) :] + text
    return THINK_OPEN.search(before[1 - _LONGEST_THINK_OPEN :] + text) is not None


class ThinkBlock:
    """The think block the text is in: its close tag, and the call tag it may hold."""

    __slots__ = ("_chars", "_pieces", "_seam", "close", "given_up", "held_from")

    def __init__(self, opening: str) -> None:
        self.close = THINK_TAGS[opening]
        # From a call open tag on: how much of the loop's pending text was searched for the
        # close tag (None while no call tag is held).
        self.held_from: int | None = None
        self.given_up = False  # the hold passed MAX_HELD_CHARS: the rest is think text
        self._pieces: list[str] = []
        self._seam = ""
        self._chars = 0

    @property
    def holding(self) -> bool:
        return self.held_from is not None

    def hold_from(self, pending: str) -> None:
        """The loop's pending text, from the call tag on, holds no close tag: it is held."""
        self.held_from = self._chars = len(pending)
        self._seam = pending[1 - len(self.close) :]

    def keep(self, text: str) -> bool:
        """While a call tag is held: keep `text` if no close tag ends in it (False: it, with
        what was kept, is to be read again)."""
        seam = self._seam + text
        if self.close in seam:
            return False
        self._pieces.append(text)
        self._seam = seam[1 - len(self.close) :]
        self._chars += len(text)
        return True

    @property
    def too_long(self) -> bool:
        return self._chars > MAX_HELD_CHARS

    def kept(self) -> str:
        """What was kept, given back once."""
        kept, self._pieces, self._seam = "".join(self._pieces), [], ""
        return kept

    def give_up(self) -> None:
        self.held_from, self.given_up = None, True
