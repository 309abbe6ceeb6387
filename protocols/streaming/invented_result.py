"""A result the model writes for the call it just made (`<tool_result>...</tool_result>`,
`<tool_response>...</tool_response>`, FunctionGemma's `<start_function_response>...`) is not
the assistant's words: the agent runs the call and sends the real result. Left in the
answer, a client would show the user a made-up result as the model's reply, and send it
back in the history as if the assistant had said it. So a result block right after a call
is dropped from the answer, with an `invented_result` error record holding its text. A
block that holds a call is no result but a wrapper around calls, and a block cut off by the
output's end stays text, as does one that goes on past MAX_HELD_CHARS (a `hold_limit`
record): it is held until its closing, and nothing held may outgrow the read-ahead."""

from __future__ import annotations

import re
from collections.abc import Callable

from ..parts import ErrorKind
from .call_hold import MAX_HELD_CHARS
from .commit_policy import CallContext, CallScanner
from .dialect_forms import prefixes
from .marker_scan import partial_token_start

# The tags that open a result block, and the tag that closes each.
_CLOSINGS = {
    "tool_result": "</tool_result>",
    "tool_response": "</tool_response>",
    "start_function_response": "<end_function_response>",
}
_OPENING = re.compile(rf"<({'|'.join(_CLOSINGS)})(?:\s[^<>]{{0,256}})?>")
# The beginning of one, still being written.
_OPENING_HEAD = re.compile(
    rf"<(?:(?:{'|'.join(_CLOSINGS)})(?:\s[^<>]{{0,256}})?|{prefixes(*_CLOSINGS)})?"
)


def result_after_call(text: str, ended: bool) -> tuple[int, re.Match[str] | None, bool]:
    """Right after a call: where a result block's opening begins in `text` (after blanks),
    the opening once whole (None while it is not), and whether one may still come (False:
    the text after the call is something else)."""
    start = len(text) - len(text.lstrip())
    opening = _OPENING.match(text, start)
    if opening is not None:
        return start, opening, True
    head = text[start:]
    may_come = not ended and (not head or _OPENING_HEAD.fullmatch(head) is not None)
    return start, None, may_come


def result_block(
    ctx: CallContext, text: str, ended: bool, holds_call: Callable[[str], bool]
) -> tuple[InventedResult | None, str] | None:
    """Right after a call: the scanner of the result block `text` opens and the text after
    its opening, or no scanner and `text` when none follows; None while one may still."""
    start, opening, may_come = result_after_call(text, ended)
    if opening is not None:
        return InventedResult(ctx, text[:start], opening, holds_call), text[opening.end() :]
    return None if may_come else (None, text)


class InventedResult(CallScanner):
    """The result block after its opening, to its closing: dropped (see the module), or,
    when it holds a call (`holds_call`), handed back to be read as text and calls."""

    def __init__(
        self,
        ctx: CallContext,
        blanks: str,
        opening: re.Match[str],
        holds_call: Callable[[str], bool],
    ) -> None:
        # The blanks before the opening go with the block: layout when it is dropped.
        self._ctx, self._blanks, self._opening = ctx, blanks, opening.group()
        self._closing = _CLOSINGS[opening.group(1)]
        self._holds_call = holds_call
        self._body: list[str] = []
        self._body_chars = 0
        self._held = ""  # the body's end, which may still become the closing

    def consume(self, text: str) -> str | None:
        text, self._held = self._held + text, ""
        end = text.find(self._closing)
        if end == -1:
            safe = partial_token_start(text, (self._closing,))
            self._body.append(text[:safe])
            self._body_chars += safe
            self._held = text[safe:]
            if self._body_chars <= MAX_HELD_CHARS:
                return None
            message = f"a result block held past {MAX_HELD_CHARS} characters: it is text"
            self._ctx.error(ErrorKind.HOLD_LIMIT, message, self._opening)
            self.finish()
            return ""
        body = "".join(self._body) + text[:end]
        rest = text[end + len(self._closing) :]
        if self._holds_call(body):
            self._ctx.out.text(self._blanks + self._opening)
            return body + self._closing + rest
        original = self._opening + body + self._closing

        def dropped() -> None:
            self._ctx.error(
                ErrorKind.INVENTED_RESULT,
                "the model wrote a result for its own call: dropped, the agent sends the real one",
                original,
            )

        self._ctx.out.invented_result(self._blanks + original, dropped)
        return rest

    def finish(self) -> None:
        self._ctx.out.text(self._blanks + self._opening + "".join(self._body) + self._held)
