"""Gemma: calls as Python code in a ```tool_code block, as Google's function-calling prompts
for Gemma ask (results go back in a ```tool_output block):

    ```tool_code
    get_weather(city="Paris")
    ```

Checked against Google's Gemma function-calling guides. The block is read whole once it
closes (`lenient.python_calls`); it holds calls of declared tools only, or it is text."""

from __future__ import annotations

from ..lenient.call_objects import CallObjectError
from ..lenient.python_calls import pythonic_calls
from ..parts import ErrorKind
from ..registry import register
from ..streaming.commit_policy import CallContext, CallScanner
from ..streaming.dialect_forms import (
    Dialect,
    Piece,
    literal,
    open_form,
    resolve_tool_name,
)
from ..streaming.marker_scan import partial_token_start

FENCE = "```"


class _ToolCodeCall(CallScanner):
    """A tool_code block's body, up to its closing fence."""

    def __init__(self, ctx: CallContext, open_tag: str) -> None:
        self._ctx, self._open_tag = ctx, open_tag
        self._body: list[str] = []
        self._held = ""  # the end of the body, which may still become the closing fence

    def consume(self, text: str) -> str | None:
        text, self._held = self._held + text, ""
        end = text.find(FENCE)
        if end == -1:
            safe = partial_token_start(text, (FENCE,))
            self._body.append(text[:safe])
            self._held = text[safe:]
            return None
        self._body.append(text[:end])
        self._complete(self._open_tag + "".join(self._body) + FENCE)
        return text[end + len(FENCE) :]

    def finish(self) -> None:
        self._ctx.cut_off_call(None, self._open_tag + "".join(self._body) + self._held)

    def _complete(self, original: str) -> None:
        ctx = self._ctx
        try:
            calls = pythonic_calls("".join(self._body), ctx.relaxed_budget, one_list=False)
        except CallObjectError as error:
            ctx.fall_back_to_text(ErrorKind.MALFORMED_JSON, str(error), original)
            return
        named = [(resolve_tool_name(name, ctx.tools), arguments) for name, arguments in calls]
        unknown = [name for (name, _), (known, _) in zip(calls, named, strict=True) if not known]
        if unknown:
            message = f"unknown tool: {', '.join(unknown)}"
            ctx.fall_back_to_text(ErrorKind.UNKNOWN_TOOL, message, original)
            return
        ctx.complete_calls([(name or "", arguments) for name, arguments in named], original)


@register("gemma")
class Gemma(Dialect):
    forms = (
        open_form(
            FENCE,
            [literal("tool_code"), Piece(r"[ \t]*\n", r"[ \t]*")],
            lambda ctx, open_tag, _name: _ToolCodeCall(ctx, open_tag),
        ),
    )
