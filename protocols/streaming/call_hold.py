"""Calls held until it is known whether they were written to act or shown (see
`reading_context`): a call after prose on its line, until the line goes on or ends; calls in
a code fence, until the fence shows whether it holds only calls and, after prose, whether
anything but calls follows it. A fence's opening line is held from its start until the
fence's first content shows whether it holds calls, so that a fence of calls is their shell
(layout) wherever it stands; a fence of JSON after prose is held until the output ends or
other text follows, then read as call objects.

`CallHold` records what arrives while it holds (text, call parts) and tells when it is
decided and how; the part writer then replays the records: as calls (the text held is
their layout), or as text (each call as its original text).

A hold writes nothing to the client while it lasts, so nothing it holds slows the upstream's
read (the service reads ahead of a client only as far as events wait for it): past
MAX_HELD_CHARS it gives up, and what it holds is text."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, auto

from ..parts import Part, ToolCall
from .reading_context import (
    MAX_LINE_CHARS,
    Fence,
    ReadingContext,
    Verdict,
    announces_action,
    closings_only,
)

# The most characters any hold of the parser keeps before it gives up and what it holds is
# text (a HOLD_LIMIT record): the service's read-ahead of a client (1 MiB of events), so a
# held answer costs what an answer read ahead does. A JSON fence after prose or a think
# block holding a call tag, held to the end, otherwise held the whole answer: a 300 MB
# firehose grew the proxy by 1.5 GB with a client that never read.
MAX_HELD_CHARS = 1024 * 1024


class Phase(Enum):
    OPENING = auto()  # a line that may become a fence's opening line
    FENCE_START = auto()  # a fence opened: blank lines so far
    FENCE = auto()  # in a fence, after a call: blank lines so far
    JSON = auto()  # in a fence opened after prose whose content began with `{` or `[`
    LINE = auto()  # after a call that followed prose on its line: blanks so far
    NEXT_LINE = auto()  # that call ended its line, not its sentence: the next line's blanks
    AFTER = auto()  # after a fence of calls that followed prose: blanks so far
    AFTER_JSON = auto()  # after a fence of JSON: blanks so far
    AFTER_LINE = auto()  # the line of prose after such a fence, so far


class Outcome(Enum):
    WAIT = auto()
    CALLS = auto()
    TEXT = auto()
    JSON = auto()  # the held text is a fence to be read as call objects
    TOO_LONG = auto()  # it holds more than MAX_HELD_CHARS: all it holds is text


@dataclass(frozen=True, slots=True)
class HeldResult:
    """A result block the model wrote right after a held call: dropped (`dropped` records
    it) if the call is decided a call, its text if the call was shown (a transcript)."""

    text: str
    dropped: Callable[[], None]


# Text written (by the loop or a scanner), a call part, or a result block after a call.
Record = str | Part | HeldResult


class CallHold:
    """What is held and the phase that decides it."""

    __slots__ = (
        "_after",
        "_after_fence",
        "_between_sentences",
        "_context",
        "_fence",
        "_line_start",
        "_pay_line",
        "_quoted_from",
        "_read_json",
        "held_chars",
        "phase",
        "records",
        "tail",
    )

    def __init__(
        self,
        context: ReadingContext,
        phase: Phase,
        *,
        read_json: bool,
        pay_line: Callable[[str], bool],
        opening: str = "",
    ) -> None:
        self._context = context
        # Charges the parse budget for a line held (given its text): False when it cannot
        # pay, and the rest of the output is text. A line after a call is paid by the call.
        self._pay_line = pay_line
        self._read_json = read_json  # a fence of JSON after prose may hold calls
        self._fence: Fence | None = context.fence  # the fence the held calls are in
        self.phase = phase
        self.records: list[Record] = []
        # Text taken last that follows the calls as text when they are decided calls (the
        # line that opened a new fence after them).
        self.tail = ""
        self.held_chars = 0  # the text and the calls' originals held
        self._line_start = 0  # the record the current line begins at
        self._after = ""  # in LINE: what followed the last call on its line so far
        # In LINE: the prose before the first call ended a sentence, so its line break ends
        # the call's too.
        self._between_sentences = context.sentence_ended or not context.line_has_text
        # In LINE: the line before the first call, when the line may be one the model read
        # in a tool result (then it is quoted, not a call).
        before = context.line_so_far()
        quoted = phase is Phase.LINE and context.quoted_lines.may_quote(before, opening)
        self._quoted_from = before if quoted else None
        # In AFTER_LINE: what the fence is if the line announces the model's own action.
        self._after_fence = Outcome.CALLS

    def has_calls(self) -> bool:
        return any(isinstance(record, ToolCall) for record in self.records)

    def call(self, verdict: Verdict) -> Outcome:
        """A call form begins, with `verdict`: WAIT to hold it too, else how the hold ends
        first (the form is then read as its verdict says)."""
        if self.too_long:
            return Outcome.TOO_LONG
        phase = self.phase
        if verdict is Verdict.HOLD_FENCE and phase in (Phase.FENCE_START, Phase.FENCE):
            self.phase, self._fence = Phase.FENCE, self._context.fence
            return Outcome.WAIT
        if verdict is Verdict.HOLD_LINE and phase is Phase.LINE:
            return Outcome.WAIT
        if phase is Phase.LINE or phase is Phase.AFTER:
            return Outcome.CALLS  # another call where a line or a message begins
        if phase is Phase.NEXT_LINE:
            self._untake_line()
            return Outcome.CALLS
        if phase is Phase.AFTER_LINE:
            return self._after_line_decided()
        return Outcome.TEXT  # the held text or fence is followed by a call: not calls alone

    @property
    def too_long(self) -> bool:
        return self.held_chars > MAX_HELD_CHARS

    def opening(self) -> str:
        """What the hold began with: the line that may open a fence, or its first call."""
        first = self.records[0] if self.records else ""
        return first.original if isinstance(first, ToolCall) else str(first)

    def part(self, part: Part | HeldResult) -> None:
        if isinstance(part, ToolCall):
            self.held_chars += len(part.original)
        elif isinstance(part, HeldResult):
            self.held_chars += len(part.text)
        self.records.append(part)
        self._line_start = len(self.records)
        self._after = ""

    def text(self, text: str) -> tuple[int, Outcome]:
        """Take `text` while the hold lasts: how much of it was taken, and the outcome
        (WAIT: all of it was taken, and the hold goes on)."""
        taken = 0
        while taken < len(text):
            if self.too_long:
                return taken, Outcome.TOO_LONG
            phase = self.phase
            if phase is Phase.LINE:
                rest = text[taken:]
                line_end = rest.find("\n")
                piece = rest if line_end == -1 else rest[:line_end]
                after = self._after + piece
                if len(after) > MAX_LINE_CHARS or not closings_only(after.rstrip("\r")):
                    # Prose after the call: a new sentence, or the call was shown in one.
                    prose = after.lstrip(" \t")
                    if prose == after or not prose[:1].isupper():
                        return taken, Outcome.TEXT
                    self._untake_line()  # the text after the calls starts the next sentence
                    return taken, Outcome.CALLS
                self._after = after
                self._take(piece)
                taken += len(piece)
                if line_end != -1:
                    if self._between_sentences:
                        return taken, self._line_calls()
                    # The call ended its line, not its sentence: the next line may go on
                    # with it ("write <call>\nand wait for the result").
                    self._line_start = len(self.records)
                    self._take("\n")
                    taken += 1
                    self.phase = Phase.NEXT_LINE
                continue
            if phase is Phase.NEXT_LINE:
                rest = text[taken:]
                run = len(rest) - len(rest.lstrip(" \t"))
                if run:
                    self._take(rest[:run])
                    taken += run
                    continue
                if rest[0].islower():
                    return taken, Outcome.TEXT  # the sentence goes on: the call was in it
                self._untake_line()
                return taken, self._line_calls()
            if phase is Phase.AFTER_LINE:
                rest = text[taken:]
                line_end = rest.find("\n")
                piece = rest if line_end == -1 else rest[:line_end]
                self._take(piece)
                taken += len(piece)
                if line_end != -1 or self._after_line_chars() > MAX_LINE_CHARS:
                    return taken, self._after_line_decided()
                continue
            if phase in (Phase.AFTER, Phase.AFTER_JSON):
                rest = text[taken:]
                run = len(rest) - len(rest.lstrip(" \t\r\n"))
                if run:
                    self._take(rest[:run])
                    taken += run
                elif phase is Phase.AFTER and rest[0] in "`~" and self._context.at_line_start:
                    self.phase = Phase.OPENING  # another fence, perhaps of calls
                elif phase is Phase.AFTER_JSON and self._fence is not None and self._fence.acting:
                    return taken, Outcome.JSON  # "I will call the tool for both:" + the fence
                else:
                    # Prose after the fence: an explanation (the fence was an example), or
                    # the model saying what it does next ("When it comes back I'll...").
                    self._after_fence = Outcome.JSON if phase is Phase.AFTER_JSON else Outcome.CALLS
                    self._line_start = len(self.records)
                    self.phase = Phase.AFTER_LINE
                continue
            end = text.find("\n", taken)
            end = len(text) if end == -1 else end + 1
            line = text[taken:end]
            self._take(line)
            taken = end
            ended = text[end - 1] == "\n"
            if ended and phase not in (Phase.OPENING, Phase.FENCE) and not self._pay_line(line):
                return taken, Outcome.TEXT
            outcome = self._line_taken(ended)
            if ended:
                self._line_start = len(self.records)
            if outcome is not Outcome.WAIT:
                return taken, outcome
        return taken, Outcome.WAIT

    def end(self) -> Outcome:
        """The output ended, or a think block begins: the hold ends here."""
        self._context.finish()
        if self.too_long:
            return Outcome.TOO_LONG
        phase, fence = self.phase, self._context.fence
        if phase is Phase.JSON:
            return Outcome.JSON if fence is None else Outcome.TEXT  # unclosed: no call
        if phase is Phase.AFTER_JSON:
            return Outcome.JSON
        if phase is Phase.AFTER_LINE:
            return self._after_line_decided()
        if phase in (Phase.LINE, Phase.NEXT_LINE):
            return self._line_calls()
        if phase is Phase.FENCE and fence is not None and not fence.pure:
            return Outcome.TEXT
        return Outcome.CALLS if self.has_calls() else Outcome.TEXT

    def _line_calls(self) -> Outcome:
        """The line of the held calls ended: they are calls, unless the line is one the
        model read in a tool result."""
        if self._quoted_from is None:
            return Outcome.CALLS
        written = "".join(
            record if isinstance(record, str) else record.original
            for record in self.records
            if isinstance(record, str | ToolCall)
        )
        line = self._quoted_from + written.partition("\n")[0]
        return Outcome.TEXT if self._context.quoted_lines.quotes(line) else Outcome.CALLS

    def _after_line_chars(self) -> int:
        return sum(len(str(record)) for record in self.records[self._line_start :])

    def _after_line_decided(self) -> Outcome:
        """The prose line after a fence of calls (or JSON) that followed prose, so far: the
        fence holds the model's action if the line announces one."""
        line = "".join(str(record) for record in self.records[self._line_start :])
        if not announces_action(line):
            return Outcome.TEXT
        self._untake_line()
        return self._after_fence

    def _untake_line(self) -> None:
        """What was taken of the current line after the calls is text after them (`tail`)."""
        self.tail = "".join(str(piece) for piece in self.records[self._line_start :])
        del self.records[self._line_start :]

    def _take(self, text: str) -> None:
        self._context.feed(text)
        self.records.append(text)
        self.held_chars += len(text)

    def _line_taken(self, ended: bool) -> Outcome:
        """The outcome after a piece of a line was taken (`ended`: with its line break)."""
        context, phase = self._context, self.phase
        fence = context.fence
        if phase is Phase.OPENING:
            if not ended:
                return Outcome.WAIT if context.fence_may_open else Outcome.TEXT
            if fence is None:
                return Outcome.TEXT
            self.phase = Phase.FENCE_START
            return Outcome.WAIT
        if phase is Phase.FENCE_START:
            if not context.line_has_text and not (ended and fence is not None and not fence.pure):
                return Outcome.WAIT
            if (
                self._read_json
                and not self.has_calls()
                and fence is not None
                and fence.intro
                and not fence.shown
                and str(self.records[-1]).lstrip()[:1] in ("{", "[")
            ):
                self.phase, self._fence = Phase.JSON, fence
                return Outcome.WAIT
            return Outcome.TEXT
        if phase is Phase.JSON:
            if fence is None:
                self.phase = Phase.AFTER_JSON
            return Outcome.WAIT
        # Phase.FENCE, after a call: decided at the end of each line
        if not ended:
            return Outcome.WAIT
        intro = self._fence is not None and self._fence.intro and not self._fence.acting
        if fence is not None and fence is not self._fence:  # this line opened a new fence
            if intro:
                return Outcome.TEXT
            self._untake_line()
            return Outcome.CALLS
        if fence is not None:
            return Outcome.WAIT if fence.pure else Outcome.TEXT
        if intro:
            self.phase = Phase.AFTER  # after prose: what follows the fence decides
            return Outcome.WAIT
        return Outcome.CALLS
