"""Where the tag loop finds a call form (`tag_loop`): the parse budget is charged for it (once
it cannot pay, the rest of the output is text), the part writer gives its verdict (a call,
text, or held until the text after it decides: `reading_context`), and its scanner is
opened through the context that verdict asks for."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..base import ArgumentsMode, UnknownTools
from ..lenient.relaxed_json import RelaxedJSONError
from .commit_policy import CallContext, CallScanner
from .dialect_forms import OpenForm
from .reading_context import Verdict

# A complete open tag: (start, end, the tool it names, the dialect's form or None for the
# protocol's own tag). A plain tuple: one is made for every call, on the stream's hot path.
Open = tuple[int, int, str, "OpenForm | None"]
# The protocol's scanner for a call its own tag opens (see TagStreamParser._open_call).
OpenOwnCall = Callable[[CallContext, str, str], "CallScanner | None"]


class CallOpening:
    """Opens the calls of one output, each through one of its contexts: the protocol's own
    or a dialect's (whose calls name declared tools only, whatever UNKNOWN_TOOLS says), and
    of each the one a held call is read whole through."""

    __slots__ = (
        "_ctx",
        "_dialect_ctx",
        "_held_ctx",
        "_held_dialect_ctx",
        "reads_held_call",
    )

    def __init__(self, ctx: CallContext) -> None:
        self._ctx = ctx
        self._dialect_ctx = ctx.with_unknown_tools(UnknownTools.TEXT)
        self._held_ctx = dataclasses.replace(ctx, mode=ArgumentsMode.ATOMIC)
        self._held_dialect_ctx = dataclasses.replace(self._dialect_ctx, mode=ArgumentsMode.ATOMIC)
        # The last call opened is read whole, held until the text after it decides.
        self.reads_held_call = False

    def open(self, text: str, call: Open, open_own: OpenOwnCall) -> tuple[CallScanner | None, str]:
        """Write the text before `call`, found in `text`, and begin it: the scanner that
        reads on (None when the form is text, or its tag alone was the call) and the text
        to read next."""
        start, end, name, form = call
        out = self._ctx.out
        out.text(text[:start])
        # Charged before its verdict: a call form shown as text costs its tag, one held
        # is read whole, and a hold must not begin for a call the budget cannot pay.
        try:
            self._ctx.relaxed_budget.spend_calls()
        except RelaxedJSONError as error:
            out.budget_refused(error, text[start:end])
            return None, text[start:]
        verdict = out.begin_call(text[start:end])
        held = verdict is not Verdict.CALL
        self.reads_held_call = held and verdict is not Verdict.TEXT
        scanner = None
        if verdict is Verdict.TEXT:  # shown, not written to act: its open tag is text
            out.text(text[start:end])
        elif form is None:
            scanner = open_own(self._held_ctx if held else self._ctx, text[start:end], name)
        else:
            ctx = self._held_dialect_ctx if held else self._dialect_ctx
            scanner = form.scanner(ctx, text[start:end], name)
        return scanner, text[end:]
