"""The writer a parser hands its parts to during one feed: it groups contiguous text into
text blocks, holds back layout (`call_shell`), and follows where the text stands
(`reading_context`), holding calls whose reading the text after them decides (`call_hold`),
so the parts it gives out keep the accounting rule of `parts`."""

from __future__ import annotations

from collections.abc import Callable

from ..lenient.relaxed_json import RelaxedJSONError, RelaxedParseBudget
from ..parts import (
    ErrorKind,
    OnError,
    ParseError,
    Part,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkEnd,
    ThinkStart,
    ToolCall,
    ToolCallDelta,
    ToolCallStart,
    ToolCallUnfinished,
)
from ..quoted_lines import NO_QUOTED_LINES, QuotedLines
from .call_hold import MAX_HELD_CHARS, CallHold, HeldResult, Outcome, Phase
from .call_shell import CallShell
from .reading_context import ReadingContext, Verdict

# Reads a fence of JSON held after prose as call objects and emits them: False when it
# holds none (see `off_protocol.FencedCallObjects`).
FencedCalls = Callable[[str], bool]


class PartWriter:
    """Collects parts for one feed, grouping contiguous text into one text block.

    Whitespace-only text next to calls is layout (the line breaks around a call), and so is
    the empty shell of a fence or wrapper tag the calls were written in (see call_shell):
    held until text that is not layout follows, and dropped if a call or the end comes
    first. Clients would otherwise show it as a message of its own. An output with no call
    at all has no layout: a whole answer that is only whitespace (or a lone fence) is its
    text.

    Held calls (see `begin_call`) arrive whole (atomic); in `incremental` mode they are
    sent as a start, one fragment and the call, once they are decided."""

    __slots__ = (
        "_after_end",
        "_block",
        "_blocks",
        "_budget",
        "_called",
        "_hold",
        "_incremental",
        "_on_error",
        "_parts",
        "_run",
        "_run_of",
        "_shell",
        "budget_spent",
        "context",
        "ended",
        "fenced_calls",
    )

    def __init__(
        self,
        on_error: OnError,
        budget: RelaxedParseBudget,
        *,
        incremental: bool = False,
        quoted_lines: QuotedLines = NO_QUOTED_LINES,
    ) -> None:
        self._on_error = on_error
        self._budget = budget
        # The parse budget could not pay for a call or a hold: the rest of the output is text.
        self.budget_spent = False
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
        self._incremental = incremental
        self.context = ReadingContext(quoted_lines)
        self._hold: CallHold | None = None
        self.fenced_calls: FencedCalls | None = None
        # A result the model invented for its call was dropped: the answer ended there, and
        # what the parser reads after it is kept here, not written (see `after_end`).
        self.ended = False
        self._after_end: list[str] = []

    def begin_call(self, opening: str) -> Verdict:
        """A call form begins after the text written so far with `opening`, its open tag:
        its verdict. TEXT: its open tag is to be written as text; HOLD_*: the call is to be
        read whole (atomic) and handed to `call_part`, which holds it until it is decided."""
        if self.ended:
            return Verdict.TEXT  # written as text, which goes after the end
        verdict = self.context.verdict(opening)
        hold = self._hold
        if hold is not None:
            outcome = hold.call(verdict)
            if outcome is Outcome.WAIT:
                return verdict
            self._decide(outcome)
            if self.ended:
                return Verdict.TEXT
        if verdict is Verdict.CALL:
            self.context.called()
        elif verdict is not Verdict.TEXT:
            phase = Phase.LINE if verdict is Verdict.HOLD_LINE else Phase.FENCE
            self._hold = CallHold(
                self.context, phase, read_json=False, pay_line=self._paid, opening=opening
            )
        return verdict

    def text(self, text: str) -> None:
        while text:
            if self.ended:
                self._after_end.append(text)
                return
            hold = self._hold
            if hold is not None:
                taken, outcome = hold.text(text)
                if outcome is Outcome.WAIT:
                    return
                self._decide(outcome)
                text = text[taken:]
                continue
            if self.budget_spent:  # all the rest is text: where it stands decides nothing
                self._write_text(text)
                return
            start = self.context.fence_opening_at(text)
            if start == -1:
                self.context.feed(text)
                self._write_text(text)
                return
            if start:
                self.context.feed(text[:start])
                self._write_text(text[:start])
                text = text[start:]
            if not self._paid(text.partition("\n")[0]):
                continue
            self._hold = CallHold(
                self.context,
                Phase.OPENING,
                read_json=self.fenced_calls is not None,
                pay_line=self._paid,
            )

    def budget_refused(self, error: RelaxedJSONError, original: str) -> None:
        """The parse budget cannot pay for what begins here (a call's tag, `original`, or a
        line that may open a fence): it and the rest of the output are text, one record."""
        if not self.budget_spent:
            self.budget_spent = True
            message = f"{error}: the rest is text"
            self._on_error(ParseError(ErrorKind.PARSE_BUDGET, message, original))

    def _paid(self, line: str) -> bool:
        """Charge the parse budget for holding `line`, a line that may open a fence or one
        held after it; False (and the rest of the output is text) when it cannot pay."""
        try:
            self._budget.spend_hold()
        except RelaxedJSONError as error:
            self.budget_refused(error, line)
            return False
        return True

    def marker(self, part: Part) -> None:
        """A part that sits inside the text flow (think markers) without closing it; text
        held as layout before it is text after all."""
        if self.ended:
            self._after_end.append(_record_text(part))
            return
        if self._hold is not None:
            self._decide(self._hold.end())
        self.context.message_begins()
        self._release(self._shell.flush())
        self._add(part)

    def call_part(self, part: Part) -> None:
        if self.ended:
            self._after_end.append(_record_text(part))
            return
        if self._hold is not None:
            self._hold.part(part)
            return
        self._write_call_part(part)

    def invented_result(self, text: str, dropped: Callable[[], None]) -> None:
        """A result block the model wrote right after its call: dropped (`dropped` records
        it) once that call is a call. After a held call it waits for the hold's verdict,
        and is read as the text it is (a fence holding a call and its result is a
        transcript)."""
        if self.ended:
            self._after_end.append(text)
            return
        if self._hold is None:
            dropped()
            self.ended = True
            return
        self.context.feed(text)
        self._hold.part(HeldResult(text, dropped))

    def after_end(self, text: str) -> None:
        """Text read after the answer ended (see `ended`): kept for its record."""
        self._after_end.append(text)

    def take_after_end(self) -> str:
        """What was read after the answer ended, once: the parser records it."""
        text, self._after_end = "".join(self._after_end), []
        return text

    def whole_call(self, call: ToolCall) -> None:
        """A call decided whole, none of it sent yet: in `incremental` mode it is sent as a
        start, one fragment and the call."""
        if self.ended:
            self._after_end.append(call.original)
            return
        if self._hold is not None:
            self._hold.part(call)
            return
        self._write_whole_call(call)

    def end(self) -> None:
        """The output ended: what is held is layout (dropped) only if a call was written;
        other held text is text."""
        if self._hold is not None:
            self._decide(self._hold.end())
        self._release(self._shell.finish() if self._called else self._shell.flush())
        self._close_block()

    @property
    def held_chars(self) -> int:
        """The characters the hold holds (none without one)."""
        return self._hold.held_chars if self._hold is not None else 0

    def held_call_given_up(self, original: str) -> None:
        """The call being read whole in the hold took it past MAX_HELD_CHARS undecided: what
        the hold holds is text, and so is the call's text so far (`original`)."""
        if self._hold is not None:
            self._decide(Outcome.TEXT)
        self.text(original)

    def take(self) -> list[Part]:
        run_of = self._run_of
        if run_of is not None and not self._run and not self._parts:
            self._run_of = None
            return [run_of]  # the common feed: one delta of text
        self._end_run()
        parts, self._parts = self._parts, []
        return parts

    def _decide(self, outcome: Outcome) -> None:
        """End the hold: its calls are calls (the text held is their layout), or all it
        holds is text, or it is a fence of JSON to read."""
        hold, self._hold = self._hold, None
        assert hold is not None
        if outcome is Outcome.CALLS:
            self.context.called()
            for record in hold.records:
                if self.ended:  # after a result the model invented: not its answer
                    self._after_end.append(_record_text(record))
                elif isinstance(record, HeldResult):
                    record.dropped()
                    self.ended = True
                elif not isinstance(record, str):
                    self._write_whole_call(record)
            if self.ended:
                self._after_end.append(hold.tail)
            else:
                self._write_text(hold.tail)
            return
        if outcome is Outcome.JSON:
            original = "".join(record for record in hold.records if isinstance(record, str))
            assert self.fenced_calls is not None  # only then is a fence of JSON held
            if self.fenced_calls(original):
                self.context.called()
                self._write_text(hold.tail)
                return
        if outcome is Outcome.TOO_LONG:
            message = f"held past {MAX_HELD_CHARS} characters undecided: what it holds is text"
            self._on_error(ParseError(ErrorKind.HOLD_LIMIT, message, hold.opening()))
        for record in hold.records:
            if isinstance(record, str):
                self._write_text(record)
            elif isinstance(record, ToolCall):
                self._write_text(record.original)
            elif isinstance(record, HeldResult):
                self._write_text(record.text)
        self._write_text(hold.tail)

    def _write_whole_call(self, part: Part) -> None:
        if self._incremental and isinstance(part, ToolCall):
            self._write_call_part(ToolCallStart(part.id, part.name))
            self._add(ToolCallDelta(part.id, part.arguments))
        self._write_call_part(part)

    def _write_text(self, text: str) -> None:
        if not text:
            return
        block = self._block
        if block is None:
            released = self._shell.feed(text)
            if not released:
                return
            text, block = released, self._open_block()
        self._add(TextDelta(block, text))

    def _write_call_part(self, part: Part) -> None:
        self._release(self._shell.before_call())
        self._close_block()
        self._called = True
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


def _record_text(record: str | Part | HeldResult) -> str:
    """The model's text a held record (or a part written after the end) stands for."""
    if isinstance(record, str):
        return record
    if isinstance(record, HeldResult):
        return record.text
    if isinstance(record, ThinkStart | ThinkEnd):
        return record.tag
    return record.original if isinstance(record, ToolCall | ToolCallUnfinished) else ""
