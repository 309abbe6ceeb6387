"""Calls whose body runs to an end token and is read whole there, for formats whose
arguments are not worth following as they stream: a section of calls in a format of its own
(DeepSeek's DSML, Kimi K3's channels, MiniMax M3's prefixed XML), a Python list of calls
(LFM2, Llama 4, Gemma's `tool_code`), a call in Gemma 4's own value syntax. The format gives
its end tokens and a reader of the body; the body's calls must name declared tools."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..lenient.call_objects import CallObjectError
from ..lenient.relaxed_json import RelaxedJSONError, RelaxedParseBudget
from ..lenient.xml_values import RelaxedXMLError
from ..parts import ErrorKind
from .commit_policy import CallContext, CallScanner
from .dialect_forms import ScannerFactory, resolve_tool_name
from .marker_scan import partial_token_start

# Reads a body (the text between the open tag and the end token), given the tool the open
# tag names ("" when the body names its tools): the calls it holds (none: the body is
# text), or CallObjectError.
BodyReader = Callable[[str, str, RelaxedParseBudget], list[tuple[str, dict[str, Any]]]]


@dataclass(frozen=True, slots=True)
class DelimitedBody:
    """A format's body: the tokens that end it (the first found ends the call, and belongs
    to it), its reader, and whether the output's end may stand for a missing end token."""

    ends: tuple[str, ...]
    read: BodyReader
    end_optional: bool = False


class DelimitedCall(CallScanner):
    """The body of one call (or one section of calls) after its open tag, up to its end."""

    def __init__(self, ctx: CallContext, open_tag: str, name: str, body: DelimitedBody) -> None:
        self._ctx, self._open_tag, self._name, self._format = ctx, open_tag, name, body
        self._body: list[str] = []
        self._held = ""  # the end of the body, which may still become an end token

    def consume(self, text: str) -> str | None:
        text, self._held = self._held + text, ""
        found = [(index, end) for end in self._format.ends if (index := text.find(end)) != -1]
        if not found:
            safe = partial_token_start(text, self._format.ends)
            self._body.append(text[:safe])
            self._held = text[safe:]
            return None
        index, end = min(found)
        self._body.append(text[:index])
        self._complete(self._open_tag + "".join(self._body) + end)
        return text[index + len(end) :]

    def finish(self) -> None:
        original = self._open_tag + "".join(self._body) + self._held
        if self._format.end_optional:
            self._body.append(self._held)
            self._complete(original)
        else:
            self._ctx.cut_off_call(None, original)

    def _complete(self, original: str) -> None:
        ctx, body = self._ctx, "".join(self._body)
        try:
            ctx.relaxed_budget.spend_parse()
            calls = self._format.read(body, self._name, ctx.relaxed_budget)
        except (CallObjectError, RelaxedJSONError, RelaxedXMLError) as error:
            ctx.fall_back_to_text(ErrorKind.MALFORMED_JSON, str(error), original)
            return
        if not calls:
            ctx.fall_back_to_text(ErrorKind.MALFORMED_JSON, "no call in the body", original)
            return
        named = [(resolve_tool_name(name, ctx.tools), arguments) for name, arguments in calls]
        unknown = [name for (name, _), (known, _) in zip(calls, named, strict=True) if not known]
        if unknown:
            message = f"unknown tool: {', '.join(unknown)}"
            ctx.fall_back_to_text(ErrorKind.UNKNOWN_TOOL, message, original)
            return
        ctx.complete_calls([(name or "", arguments) for name, arguments in named], original)


def delimited(body: DelimitedBody) -> ScannerFactory:
    """The scanner factory of an open form whose calls run to `body`'s end."""

    def scanner(ctx: CallContext, open_tag: str, name: str) -> CallScanner:
        return DelimitedCall(ctx, open_tag, name, body)

    return scanner
