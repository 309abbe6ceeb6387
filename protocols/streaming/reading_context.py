"""Where a call form stands in the answer, as a careful reader sees it: the precision rule.

A call is an action an agent executes, so a call form counts only where the model wrote it
to act. `ReadingContext` follows the answer's structure outside calls (lines, code fences,
inline code, comments, diff hunks, the prose since the message began, elements of a
document left open) and the request it answers (the lines its tool results hold), and
gives the verdict on a call form about to be read:

- TEXT: it is shown, not written to act: inside inline code or a comment; on a line of
  quoted material, by its marker (`> `, `43:`, `src/a.py:43:`, a numbered listing, a log
  line's timestamp or level, a diff's `+`/`-`, a transcript's speaker label after prose);
  inside a document element left open (`<config>` on a line of its own, outside any fence);
  in a fence that already holds anything but calls; or presented as an example ("for
  example", "e.g.", "looks like", "the syntax is" ... on its line before it, or on the
  prose line before its line or its fence).
- CALL: where a message would begin (the start, after a call or a think block), or at the
  start of a line after prose.
- HOLD_LINE: after prose on its own line ("Sure! <tool_call>..."): a call, unless the
  sentence goes on after it, on its line or the next ("write <tool_call>...</tool_call>
  and the server runs it"); or where its line may be one read in a tool result, until the
  line shows whether it is.
- HOLD_FENCE: first in a fence: a call if the fence holds only calls and, when prose came
  before the fence, nothing but calls follows it (a fence between explanations is an
  example; a fence that ends the answer is the answer), unless the prose before it or the
  line after it announces the model's own action ("Let me read it:", "When it comes back
  I'll summarise it").

Held calls are decided by the part writer (`call_hold`), from the same context. Every
verdict depends only on the text before the form, so any chunking gives the same."""

from __future__ import annotations

import re
from enum import Enum, auto

from ..quoted_lines import NO_QUOTED_LINES, QuotedLines

# The end of a line that matters: the prose before a call form and a quoted line's prefix
# lie in it, a fence line is shorter. A longer line keeps its tail.
MAX_LINE_CHARS = 256
# Document elements left open deeper than this are not followed (the call stays text).
MAX_OPEN_ELEMENTS = 32

# Phrases that present what follows as an example rather than an action (English; models
# explain in it). Phrases, not nouns: "a sample config", "the example from the bug report",
# "a syntax error" say nothing about the call that follows them.
_PRESENTING = re.compile(
    r"\bfor (?:example|instance)\b|\be\.g\.(?!\w)|\blooks? like\b|\blike (?:this|so)\b"
    r"|\bsuch as\b|\b(?:syntax|format|template) (?:is|looks|would be)\b"
    r"|\bexamples?(?: (?:calls?|usage|request))?\s*:"
    r"|\b(?:here(?:'s| is| are)|as|see) (?:an |the |some )?examples?\b"
    r"|^\W*(?:examples?|usage)\W*$",
    re.IGNORECASE,
)
# Words with which the model announces its own action ("Let me read it:", "When it comes
# back I'll summarise it"): a fence of calls beside them holds what it does. "Let me know"
# asks the user, and ends explanations.
_ACTING = re.compile(
    r"\b(?:I'll|I will|I'm going to|I am going to|let's|let me(?! know))\b", re.IGNORECASE
)
# What comes before a call form on a line of quoted output: a Markdown quote, grep's
# `43:`, `path:43:` or `43-`, a numbered listing's `  10\t` or `10 |`.
_QUOTED = re.compile(
    r"\s*(?:(?:>[ \t]?)+|(?:[^\s:]+:)?\d+[:\-][ \t]?|\d+(?:\t| *[|│] ?))"
    # a diff's added or removed line: the mark, then the line as it was
    r"|[+\-]"
    # a log line: a timestamp or a level where it begins, whatever follows on it
    r"|[ \t]*\[?(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\d\d:\d\d:\d\d"
    r"|(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|FATAL|CRITICAL)\b).*"
)
# A speaker's label where a line begins (`Assistant: `): a transcript, once it follows
# prose or another label. An answer that begins with one alone is the model's own turn.
_SPEAKER = re.compile(
    r"[ \t]*(?:\*\*)?(?:User|Assistant|System|Human|AI|Model|Tool|Bot|Agent)(?:\*\*)?"
    r"[ \t]*:(?:\*\*)?[ \t]*"
)
# A hunk's header, which makes a diff of the lines after it (context lines begin with a
# blank), and a line that goes on with one.
_HUNK = re.compile(r"@@ [^@]* @@.*|diff --git .*|(?:---|\+\+\+) \S.*")
_IN_HUNK = re.compile(r"[ +\-\\]")
_HUNK_FIRST = frozenset("@d-+")
# A fence's opening line: the fence, then the language as models write it (one word).
_FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})([\w.+#-]*)[ \t]*")
# A line so far that may still grow into one.
_FENCE_HEAD = re.compile(r" {0,3}(?:`{1,2}|~{1,2}|(?:`{3,}|~{3,})[\w.+#-]*[ \t]*)")
_FENCE_AFTER_BREAK = re.compile(r"\n {0,3}[`~]")
_BACKTICKS = re.compile(r"`+")
# Tags a call is wrapped in on its own line (`<result><tool_call>...`): not prose.
_TAGS = re.compile(r"\s*(?:<[A-Za-z_][\w.:-]*(?:\s[^<>]*)?>\s*)+")


def _growing(*units: str) -> str:
    """A pattern for any prefix of `units` (patterns) in a row, each unit whole or absent."""
    pattern = ""
    for unit in reversed(units):
        pattern = f"(?:{unit}{pattern})?"
    return pattern


# What may follow a call on its line and leave it a call: the closing of such tags (or of a
# channel of special tokens, as Kimi K3 ends its message: `<|close|>message<|sep|>`),
# blanks, and a closing still being written.
_CLOSINGS = re.compile(
    r"[ \t]*(?:(?:</[A-Za-z_][\w.:-]*[ \t]*>|<\|close\|>\w{1,32}<\|sep\|>)[ \t]*)*"
    r"(?:<(?:/[\w.:-]*|\|"
    + _growing(*"close", r"\|", ">", r"\w{0,32}", "<", r"\|", *"sep", r"\|")
    + r")?)?"
)
# A line that is an element's opening tag alone, or its closing tag alone.
_LONE_OPEN = re.compile(r"<([A-Za-z_][\w.:-]*)(?:\s[^<>]*)?(?<!/)>")
_CLOSE = re.compile(r"</([A-Za-z_][\w.:-]*)\s*>")
# Elements models wrap their calls in (a shell, not a document), and HTML's void elements,
# which never close.
_WRAPPER_WORDS = re.compile(
    r"tool|function|call|invoke|action|response|answer|result|output|think|reason", re.I
)
_VOID = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)


def announces_action(text: str) -> bool:
    """Whether `text` has the model announce its own action ("I'll", "let me" ...)."""
    return _ACTING.search(text) is not None


def closings_only(text: str) -> bool:
    """Whether `text`, after a call on its line, is only the closing of tags around the
    call so far (see `_CLOSINGS`)."""
    return _CLOSINGS.fullmatch(text) is not None


class Verdict(Enum):
    CALL = auto()
    TEXT = auto()
    HOLD_LINE = auto()
    HOLD_FENCE = auto()


class Fence:
    """An open code fence: its closing, whether it has held only blanks (and calls), and
    whether prose came before it (then what follows it decides too)."""

    __slots__ = ("acting", "closing", "intro", "pure", "shown")

    def __init__(self, marker: str, intro: bool, shown: bool) -> None:
        self.closing = marker
        self.intro = intro
        self.shown = shown  # introduced as an example
        self.acting = False  # introduced by the model's own action
        self.pure = True

    def closed_by(self, line: str) -> bool:
        stripped = line.strip()
        return (
            stripped.startswith(self.closing)
            and not stripped.strip(self.closing[0])
            and len(line) - len(line.lstrip(" ")) <= 3
        )


class ReadingContext:
    """Follows the answer's text outside calls (`feed`), calls made (`called`) and message
    boundaries (`message_begins`), and gives the verdict on a call form (`verdict`)."""

    __slots__ = (
        "_comment",
        "_elements",
        "_fence",
        "_hunk",
        "_last_prose",
        "_line_chars",
        "_line_text",
        "_pieces",
        "_prose",
        "_ticks",
        "quoted_lines",
    )

    def __init__(self, quoted_lines: QuotedLines = NO_QUOTED_LINES) -> None:
        self.quoted_lines = quoted_lines  # the lines of the request's tool results
        # The current line so far, in pieces (joined, and cut to its last MAX_LINE_CHARS
        # characters, when it is read: a stream fed a character at a time copies nothing).
        self._pieces: list[str] = []
        self._line_chars = 0  # its length
        self._line_text = False  # it holds something other than blanks
        self._ticks = 0  # the backtick run that opened inline code on this line, 0 outside
        self._fence: Fence | None = None
        self._prose = False  # non-blank text since the message began
        self._last_prose = ""  # the last line of it
        self._elements: list[str] = []  # document elements left open, outside fences
        self._comment = False  # inside an HTML/XML comment (`<!--` not yet closed)
        self._hunk = False  # on the lines of a diff's hunk

    @property
    def fence(self) -> Fence | None:
        return self._fence

    @property
    def line_has_text(self) -> bool:
        return self._line_text

    def line_so_far(self) -> str:
        """The current line so far (its last MAX_LINE_CHARS characters)."""
        return self._line()

    @property
    def after_prose(self) -> bool:
        return self._prose

    @property
    def sentence_ended(self) -> bool:
        """The prose before, on this line, ends a sentence or announces what follows (`.`,
        `!`, `?`, `:`)."""
        return self._line_text and self._line().rstrip()[-1:] in (".", "!", "?", ":")

    @property
    def at_line_start(self) -> bool:
        """Outside a fence, the current line so far is at most three spaces: a fence's
        opening line may begin here."""
        return self._fence is None and self._line_chars <= 3 and not self._line_text

    @property
    def fence_may_open(self) -> bool:
        """Outside a fence, the current line so far may still grow into a fence's opening."""
        return (
            self._fence is None
            and self._line_chars <= MAX_LINE_CHARS
            and _FENCE_HEAD.fullmatch(self._line()) is not None
        )

    def fence_opening_at(self, text: str) -> int:
        """Where in `text` (to come next) a line begins that may open a fence, or -1."""
        if self._fence is not None or ("`" not in text and "~" not in text):
            return -1
        if self.at_line_start and text[: 4 - self._line_chars].lstrip(" ")[:1] in ("`", "~"):
            return 0
        found = _FENCE_AFTER_BREAK.search(text)
        return -1 if found is None else found.start() + 1

    def verdict(self, opening: str) -> Verdict:
        """The verdict on a call form that begins right after the text fed so far, with
        `opening` (its open tag)."""
        line = self._line()
        if self._ticks or _comment_open_after(line, self._comment):
            return Verdict.TEXT
        if self._line_text and (_QUOTED.fullmatch(line) or (self._hunk and line == " ")):
            return Verdict.TEXT
        fence = self._fence
        if fence is not None:
            if not fence.pure or fence.shown or self._line_text:
                return Verdict.TEXT
            return Verdict.HOLD_FENCE
        if self._elements:
            return Verdict.TEXT
        if self._line_text and _SPEAKER.fullmatch(line) is not None:
            return Verdict.TEXT if self._prose else Verdict.CALL
        prose_before = self._line_text and _TAGS.fullmatch(line) is None
        intro = line if prose_before else self._last_prose
        if intro and _PRESENTING.search(intro):
            return Verdict.TEXT
        if prose_before or self.quoted_lines.may_quote(line, opening):
            return Verdict.HOLD_LINE  # held until its line shows whether it is one read
        return Verdict.CALL

    def called(self) -> None:
        """A call was made: a message may begin after it."""
        self._prose, self._last_prose = False, ""
        self._elements.clear()

    def message_begins(self) -> None:
        """A think block began or ended: what follows is read afresh."""
        self._pieces, self._line_chars, self._line_text, self._ticks = [], 0, False, 0
        self._fence = None
        self.called()

    def _line(self) -> str:
        """The current line so far (its last MAX_LINE_CHARS characters)."""
        if len(self._pieces) != 1:
            self._pieces = ["".join(self._pieces)[-MAX_LINE_CHARS:]]
        return self._pieces[0]

    def feed(self, text: str) -> None:
        if "\n" not in text:  # the common delta: part of a line
            self._extend_line(text)
            return
        start = 0
        while True:
            end = text.find("\n", start)
            self._extend_line(text[start:] if end == -1 else text[start:end])
            if end == -1:
                return
            self._end_line()
            start = end + 1

    def finish(self) -> None:
        """The output ended: its last line is complete."""
        if self._line_chars:
            self._end_line()

    def _extend_line(self, piece: str) -> None:
        if not piece:
            return
        if "`" in piece and self._fence is None:
            self._follow_backticks(piece)
        if not self._line_text and not piece.isspace():
            self._line_text = True
        self._pieces.append(piece)
        self._line_chars += len(piece)
        if len(self._pieces) > MAX_LINE_CHARS:
            self._line()  # joined now and then, so the pieces stay few

    def _follow_backticks(self, piece: str) -> None:
        """Inline code spans on this line: a run of backticks opens one, the same run closes
        it. A run of three or more where a line begins is a fence, not inline code."""
        blank_before = not self._line_text
        for run in _BACKTICKS.finditer(piece):
            ticks = len(run.group())
            at_line_start = blank_before and not piece[: run.start()].strip()
            if self._ticks == 0:
                if not (ticks >= 3 and at_line_start):
                    self._ticks = ticks
            elif self._ticks == ticks:
                self._ticks = 0

    def _end_line(self) -> None:
        line, chars, fence = self._line(), self._line_chars, self._fence
        self._pieces, self._line_chars, self._line_text, self._ticks = [], 0, False, 0
        opening = _FENCE_LINE.fullmatch(line) if chars <= MAX_LINE_CHARS else None
        if fence is not None:
            if fence.closed_by(line):
                self._fence = None
                if not fence.pure:
                    self._prose = True  # a block of code or text is part of the message
            elif fence.pure and opening is not None and opening.group(2).strip():
                # A fence of calls left unclosed, and a new one opened (```python): the
                # calls' fence ends there.
                self._fence = Fence(opening.group(1), intro=False, shown=False)
            elif line.strip():
                fence.pure = False
            return
        if opening is not None:
            marker = opening.group(1)
            shown = self._prose and bool(_PRESENTING.search(self._last_prose))
            self._fence = Fence(marker, self._prose, shown)
            self._fence.acting = announces_action(self._last_prose)
            return
        if self._comment or "<!--" in line:
            self._comment = _comment_open_after(line, self._comment)
        if line[:1] in _HUNK_FIRST and _HUNK.fullmatch(line):
            self._hunk = True
        elif self._hunk and _IN_HUNK.match(line) is None:
            self._hunk = False
        stripped = line.strip()
        if stripped:
            self._prose, self._last_prose = True, line
            self._follow_elements(stripped)

    def _follow_elements(self, line: str) -> None:
        opened = _LONE_OPEN.fullmatch(line)
        if opened is not None:
            name = opened.group(1)
            if (
                name.lower() not in _VOID
                and not _WRAPPER_WORDS.search(name)
                and len(self._elements) < MAX_OPEN_ELEMENTS
            ):
                self._elements.append(name)
            return
        if not self._elements or "</" not in line:
            return
        # Closed wherever its close tag stands: a line may go on after it.
        for closed in _CLOSE.finditer(line):
            if closed.group(1) in self._elements:
                del self._elements[self._elements.index(closed.group(1)) :]


def _comment_open_after(line: str, open_before: bool) -> bool:
    """Whether an HTML/XML comment is open after `line`, given whether one was before it."""
    if not open_before and "<!--" not in line:
        return False
    at, comment_open = 0, open_before
    while True:
        found = line.find("-->" if comment_open else "<!--", at)
        if found == -1:
            return comment_open
        at = found + (3 if comment_open else 4)
        comment_open = not comment_open
