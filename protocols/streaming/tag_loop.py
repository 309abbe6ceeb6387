"""The loop the tag parsers share: text outside calls, held-back tag prefixes, think blocks,
off-protocol answers and dialects; each call is handed to the protocol's (or the dialect's)
scanner, which works under the commit policy (`commit_policy`)."""

from __future__ import annotations

import functools
import re
from abc import abstractmethod
from collections.abc import Sequence
from typing import ClassVar, Protocol

from ..base import ArgumentsMode, ParserOptions, StreamParser
from ..lenient.relaxed_json import RelaxedParseBudget
from ..lenient.tool_names import DeclaredTools
from ..parts import (
    ErrorKind,
    OnError,
    ParseError,
    Part,
    ThinkEnd,
    ThinkStart,
    ToolSpec,
)
from .call_hold import MAX_HELD_CHARS
from .call_opening import CallOpening, Open
from .commit_policy import CallContext, CallScanner
from .dialect_forms import (
    Dialect,
    DialectSearch,
    answer_forms,
    dialect_names,
    dialect_search,
    own_dialects,
)
from .invented_result import InventedResult, result_block
from .marker_scan import MarkerScan, marker_scan, partial_token_start
from .off_protocol import OffProtocolAnswer, emit_call_objects, fenced_call_objects
from .part_writer import PartWriter
from .reading_context import MAX_LINE_CHARS
from .think_tags import THINK_OPEN, THINK_TAGS, ThinkBlock, think_tag_ends

# The most text one step of the loop reads. A whole answer (and an upstream chunk of
# megabytes) is read in pieces of this size, as a stream would deliver it: every call found
# hands the rest of its piece on as a new string, so reading all of it at once made each tag
# cost the length of the whole rest (128 KB of `<tool_call>{` took over a minute), while a
# piece bounds that to a few microseconds. Any chunking reads alike, so the parts are the same.
FEED_PIECE_CHARS = 512


class HeldOpen(Protocol):
    """A held-back suffix that begins with an open tag still being written, followed as more
    text arrives, so that a long one (a tag whose attributes carry a file) is not searched
    again from its start on every delta."""

    def extend(self, text: str) -> bool:
        """Follow `text`, appended to the suffix: True while the tag is still unfinished (and
        nothing after its start can be decided), False once it ended or cannot be a tag."""


# What `_locate` finds: the open tag, or None; where the text is to be held back from; and
# how much of it holds no dialect tag.
Located = tuple[Open | None, int, int]


class TagStreamParser(StreamParser):
    """The loop every tag protocol shares: text outside calls flows out at once (holding back
    only a suffix that could still become an open tag), think blocks (`THINK_TAGS`) are
    never parsed for calls, and each call is handed to the protocol's CallScanner, or to a dialect's
    (`dialect_forms`): calls written in another model's format count too, for declared tools.

    Each feed touches only the new text plus a held-back suffix no longer than an open
    tag, so the whole stream is linear in its length."""

    # The dialects that are this protocol's own format (read by its own scanner).
    _native_dialects: ClassVar[frozenset[str]] = frozenset()

    # The characters a think tag, a call open tag or a held-back suffix begins with
    # (protocols add theirs): text holding none of them is text, in a think block or out.
    _tag_chars: frozenset[str] = frozenset("<")
    # The longest suffix `_partial_open_start` can hold back that may hold a complete open
    # tag (Morph-XML's tag with quoted attributes): an open tag that begins further from the
    # end than this cannot lie inside one still being written. Tags that cannot hold one: 0.
    _longest_partial_open: int = 0

    def __init__(
        self,
        tools: Sequence[ToolSpec],
        options: ParserOptions,
        on_error: OnError | None,
        open_tokens: Sequence[str] = (),
    ) -> None:
        """`open_tokens`: literal open tags of the protocol, whose beginnings at the end of
        the text are held back by the loop itself (see `_partial_open_start`)."""
        on_error = on_error or _ignore_error
        budget = RelaxedParseBudget(options.relaxed_parse_budget_chars)
        incremental = options.mode is ArgumentsMode.INCREMENTAL
        self._ctx = CallContext(
            out=PartWriter(
                on_error, budget, incremental=incremental, quoted_lines=options.quoted_lines
            ),
            tools=DeclaredTools(tools),
            on_error=on_error,
            mode=options.mode,
            unknown_tools=options.unknown_tools,
            relaxed_budget=budget,
            small_call_chars=options.small_call_chars,
        )
        self._call_opening = CallOpening(self._ctx)
        self._dialects, self._tag_chars, self._outside, self._insides = _machinery(
            type(self), tuple(open_tokens), tuple(dialect_names()), own_dialects(options)
        )
        self._declared = self._ctx.tools
        # How much of the held-back `_pending` was searched for dialect tags and holds none
        # (a marker none of whose tags can open there never will: its text only grows).
        self._searched = 0
        self._ended = False  # the output has ended (finish)
        self._pending = ""
        self._call: CallScanner | None = None
        self._after_call = False  # a call just ended: a result the model invents may follow
        self._think: ThinkBlock | None = None  # the think block the text is in
        # The text of a call read whole in a hold (see part_writer), from its open tag on,
        # while it lasts: past MAX_HELD_CHARS with what the hold holds, it is given up.
        self._held_call: list[str] | None = None
        self._held_call_chars = 0
        # The held-back suffix `_pending`, while it is an open tag still being written.
        self._held_open: HeldOpen | None = None
        # The answer's start while it may still be call objects written off the protocol.
        self._answer = (
            OffProtocolAnswer(self._ctx.tools, self._opens_call, answer_forms())
            if options.off_protocol_calls
            else None
        )
        if options.off_protocol_calls:
            self._ctx.out.fenced_calls = self._fenced_calls

    @abstractmethod
    def _find_open(self, text: str) -> tuple[int, int, str] | None:
        """The earliest complete call open tag in `text`: (start, end, tool name)."""

    @abstractmethod
    def _partial_open_start(self, text: str) -> int:
        """Where a suffix that could still become a call open tag begins, else len(text).
        The beginnings of `open_tokens` are the loop's to find."""

    @abstractmethod
    def _open_call(self, ctx: CallContext, open_tag: str, name: str) -> CallScanner | None:
        """A scanner for the call this tag opens, working through `ctx`; None when the tag
        alone was the call."""

    # Whether `_follow_held` may follow a held-back suffix (Morph-XML's tags can be long).
    _follows_held: ClassVar[bool] = False

    def _follow_held(self, held: str) -> HeldOpen | None:
        """A follower for a held-back suffix that is an open tag still being written, when
        the protocol can follow one delta by delta (see HeldOpen); None re-reads it."""
        return None

    def feed(self, text: str) -> list[Part]:
        if self._is_prose_between_tags(text):
            self._ctx.out.text(text)  # what `_read` comes to for it, with one scan
        else:
            self._read(text)
        return self._ctx.out.take()

    def _is_prose_between_tags(self, text: str) -> bool:
        """Whether `text` is text as it stands: nothing is held back or open before it (a
        call, a tag's beginning, a hold of the answer's or a think block's start), and it
        holds no character a tag begins with. The common streamed delta."""
        think = self._think
        return (
            not self._pending
            and self._call is None
            and self._answer is None
            and not self._after_call
            and (think is None or not think.holding)
            and not self._ctx.out.ended
            and len(text) <= FEED_PIECE_CHARS
            and self._tag_chars.isdisjoint(text)
        )

    def _read(self, text: str) -> None:
        for start in range(0, len(text), FEED_PIECE_CHARS):
            self._read_piece(text[start : start + FEED_PIECE_CHARS])

    @property
    def ended(self) -> bool:
        return self._ctx.out.ended

    def _read_piece(self, text: str) -> None:
        if self._ctx.out.ended:  # not the model's answer: kept for its record, not read
            self._ctx.out.after_end(text)
            return
        answer = self._answer
        if answer is not None:
            if not answer.feed(text):
                held, self._answer = answer.text, None  # not off-protocol calls: read it
                if answer.too_long:
                    message = f"an answer held past {MAX_HELD_CHARS} characters: it is text"
                    self._ctx.error(ErrorKind.HOLD_LIMIT, message, held[:MAX_LINE_CHARS])
                self._read(held)
            return
        think = self._think
        if think is not None and think.holding:
            if think.keep(text):
                if think.too_long:
                    self._give_up_think_hold(think)
                return
            text = think.kept() + text
        if self._held_open is not None:
            if self._held_open_goes_on(text):
                self._pending += text
                return
            self._held_open = None
        self._pending += text
        self._advance()

    def _held_open_goes_on(self, text: str) -> bool:
        """Whether the held open tag is still unfinished after `text`. A think tag in it ends
        the wait: outside calls, think tags are found wherever they are."""
        assert self._held_open is not None
        ends = think_tag_ends(self._pending, text, self._think)
        return not ends and self._held_open.extend(text)

    def finish(self) -> list[Part]:
        out = self._ctx.out
        if self._answer is not None:
            answer, self._answer = self._answer, None
            calls = answer.calls(self._ctx.relaxed_budget)
            if calls is not None and emit_call_objects(self._ctx, calls, answer.text):
                out.end()
                return out.take()
            self._read(answer.text)
        if self._think is not None and self._think.holding:
            self._end_think_holding_call(self._think)
        self._ended = True  # what is held back can grow no more: it is read as it is
        self._advance()
        if self._think is not None and self._think.holding:  # a call tag at the very end
            self._end_think_holding_call(self._think)
            self._advance()
        if self._call is not None:
            self._call.finish()
            self._call = None
        out.text(self._pending)
        self._pending = ""
        if self._think is not None:
            out.marker(ThinkEnd(""))
            self._think = None
        out.end()
        after = out.take_after_end()
        if after.strip():
            self._ctx.error(
                ErrorKind.INVENTED_RESULT,
                "the answer ended at the result the model wrote for its call: what followed it,"
                " built on that result, is dropped",
                after,
            )
        return out.take()

    def _end_think_holding_call(self, think: ThinkBlock) -> None:
        """The output ended in a think block holding a call: the model forgot its close tag.
        What was held from the call tag on is read as the answer, in pieces."""
        held = self._pending + think.kept()
        self._pending = ""
        self._ctx.out.marker(ThinkEnd(""))
        self._think = None
        self._read(held)

    def _give_up_think_hold(self, think: ThinkBlock) -> None:
        """The think block held a call tag past MAX_HELD_CHARS, neither closed nor ended:
        what it holds is think text, and so is the rest of the block."""
        held = self._pending + think.kept()
        message = f"a think block held a call past {MAX_HELD_CHARS} characters: it is text"
        self._ctx.error(ErrorKind.HOLD_LIMIT, message, held[:MAX_LINE_CHARS].split("\n")[0])
        think.give_up()
        self._pending = held
        self._advance()

    def _fenced_calls(self, original: str) -> bool:
        """Emit the calls a fence of JSON after prose holds (see `call_hold`), if it does."""
        calls = fenced_call_objects(original, self._ctx.relaxed_budget)
        return calls is not None and emit_call_objects(self._ctx, calls, original)

    def _opens_call(self, text: str) -> bool:
        call, _, _ = self._locate(text, self._outside, 0)
        return call is not None and call[0] == 0

    def _locate(self, text: str, scan: MarkerScan, searched: int) -> Located:
        """The first complete open tag in `text`, the protocol's or a dialect's; or None,
        where a suffix that may still become one (or a token of `scan`) begins, len(text)
        when none may, and how much of the text holds no dialect tag (`text[:searched]`
        is known to hold none)."""
        own = self._find_open(text)
        hit = scan.search(text, searched)  # the common case (no marker): this one search
        while hit is not None and hit.group() in scan.markers:
            dialects = self._dialects
            assert dialects is not None  # markers come from the dialects
            if dialects.may_open(text, hit):
                return self._locate_with_dialects(text, scan, own, hit)
            # No tag of its may open there, ever (JSON-mix's own `<tool_call>{`, the same
            # tag then `<function=` in Qwen3-Coder): it is text, or the own tag.
            if own is not None and hit.start() >= own[0]:
                break
            hit = scan.search(text, hit.end())
        if own is not None:
            call = (own[0], own[1], own[2], None)
            if not self._longest_partial_open:
                return call, len(text), 0
            return self._unless_inside_one_unfinished(text, call)
        tail = hit.start() if hit is not None else len(text)  # a token begun at the end
        return None, min(tail, self._partial_open_start(text)), tail

    def _locate_with_dialects(
        self, text: str, scan: MarkerScan, own: tuple[int, int, str] | None, hit: re.Match[str]
    ) -> Located:
        """`_locate` where a dialect's marker was found (`hit`).

        At one position a dialect's tag goes first (it is the more specific: a `<tool_call>`
        followed by `<function=` is Qwen3-Coder's even in JSON-mix), and no tag is taken
        while one still being written begins before it: that one decides first, so that
        any chunking reads the text alike."""
        assert self._dialects is not None
        # Tags still being written matter before the own tag, or before the own tag still
        # being written (the text is held from there anyway).
        if own is not None:
            limit, waiting = own[0], len(text)
            heads_until = limit
        else:
            limit, waiting = len(text), self._partial_open_start(text)
            heads_until = waiting - 1
        found, unfinished, ruled_out, tail = self._dialects.examine(
            text, hit, scan.search, limit, -1 if self._ended else heads_until, self._declared
        )
        call: Open | None = found
        if call is None and own is not None:
            call = (own[0], own[1], own[2], None)
        if call is not None:
            if unfinished is not None:  # it begins before the call (or where the own one does)
                return None, min(unfinished, self._partial_open_start(text)), 0
            return self._unless_inside_one_unfinished(text, call)
        waiting = min(waiting, tail, len(text) if unfinished is None else unfinished)
        return None, waiting, min(ruled_out, tail)

    def _unless_inside_one_unfinished(self, text: str, call: Open) -> Located:
        """`call`, unless an open tag still being written begins before it."""
        if self._ended or len(text) - call[0] > self._longest_partial_open:
            return call, len(text), 0
        if self._tag_chars.isdisjoint(text[len(text) - self._longest_partial_open : call[0]]):
            return call, len(text), 0  # no tag begins before it: none is being written
        waiting = self._partial_open_start(text)
        return (call, len(text), 0) if waiting >= call[0] else (None, waiting, 0)

    def _hold(self, text: str, safe: int, ruled_out: int) -> None:
        """Emit `text` up to `safe`; hold back the rest (it may still become a tag). The
        next search of the held text for dialect tags starts after `ruled_out`."""
        if safe:
            self._ctx.out.text(text[:safe])
            text = text[safe:]
        self._pending = text
        self._searched = ruled_out - safe if ruled_out > safe else 0
        if self._follows_held:
            self._held_open = self._follow_held(text) if text else None

    def _advance(self) -> None:
        while self._pending:
            if self._ctx.out.ended:
                self._ctx.out.after_end(self._pending)
                self._pending = ""
            elif self._call is not None:
                rest = self._call.consume(self._pending)
                if rest is None:
                    if self._held_call is not None:
                        self._follow_held_call(self._pending)
                    self._pending = ""
                    return
                self._held_call = None
                self._after_call = not isinstance(self._call, InventedResult)
                self._call = None
                self._pending = rest
            elif self._after_call:
                # A result block the model invents for its call is dropped.
                after = result_block(self._ctx, self._pending, self._ended, self._holds_call)
                if after is None:
                    return  # more text is needed to tell
                self._call, self._pending = after
                self._after_call = False
            elif self._ctx.out.budget_spent or self._tag_chars.isdisjoint(self._pending):
                # All that is held back (a partial tag, a call tag in a think block) begins
                # with a tag character, so this is text: the common prose delta's one scan.
                self._ctx.out.text(self._pending)
                self._pending = ""
            elif self._think is not None:
                if not self._advance_in_think(self._think):
                    return
            elif not self._advance_outside():
                return

    def _follow_held_call(self, text: str) -> None:
        """The held call read on through `text`: given up once it and what its hold holds
        pass MAX_HELD_CHARS, its text and the hold's then text."""
        held = self._held_call
        assert held is not None
        held.append(text)
        self._held_call_chars += len(text)
        out = self._ctx.out
        if self._held_call_chars + out.held_chars > MAX_HELD_CHARS:
            self._call = self._held_call = None
            message = f"a held call passed {MAX_HELD_CHARS} characters undecided: it is text"
            self._ctx.error(ErrorKind.HOLD_LIMIT, message, held[0])
            out.held_call_given_up("".join(held))

    def _holds_call(self, text: str) -> bool:
        return self._locate(text, self._outside, 0)[0] is not None

    def _advance_in_think(self, think: ThinkBlock) -> bool:
        """Emit think text up to the block's close tag; False when more text is needed. A
        call open tag inside the block holds the rest (see `think_tags`)."""
        out, text, close = self._ctx.out, self._pending, think.close
        scan_from = max(0, (think.held_from or 0) - len(close) + 1)
        end = text.find(close, scan_from)
        waiting, ruled_out = len(text), 0
        if think.given_up:
            waiting = partial_token_start(text, (close,))
        elif think.held_from is None:
            searched, self._searched = self._searched, 0
            call, waiting, ruled_out = self._locate(
                text[: end if end != -1 else len(text)], self._insides[close], searched
            )
            if call is not None:
                out.text(text[: call[0]])
                self._pending = text = text[call[0] :]
                end = text.find(close)
                think.held_from = 0
        if end == -1:
            if think.holding:
                think.hold_from(text)
                return False
            self._hold(text, waiting, ruled_out)
            return False
        out.text(text[:end])
        out.marker(ThinkEnd(close))
        self._think = None
        self._pending = text[end + len(close) :]
        return True

    def _advance_outside(self) -> bool:
        """Emit text up to the next think or call open tag; False when more text is needed."""
        out, text = self._ctx.out, self._pending
        searched, self._searched = self._searched, 0  # valid once: `_pending` changes
        call, waiting, ruled_out = self._locate(text, self._outside, searched)
        think = THINK_OPEN.search(text, 0, call[0] if call else len(text))
        if think is not None:
            out.text(text[: think.start()])
            out.marker(ThinkStart(think.group()))
            self._think = ThinkBlock(think.group())
            self._pending = text[think.end() :]
            return True
        if call is not None:
            self._call, self._pending = self._call_opening.open(text, call, self._open_call)
            if self._call is not None and self._call_opening.reads_held_call:
                open_tag = text[call[0] : call[1]]
                self._held_call, self._held_call_chars = [open_tag], len(open_tag)
            return True
        self._hold(text, waiting, ruled_out)
        return False


@functools.lru_cache(maxsize=64)
def _machinery(
    parser: type[TagStreamParser],
    open_tokens: tuple[str, ...],
    registered: tuple[str, ...],
    own: tuple[type[Dialect], ...],
) -> tuple[DialectSearch | None, frozenset[str], MarkerScan, dict[str, MarkerScan]]:
    """What every parser of a class (and of a route's `own` dialects) shares, built once
    (`registered` being the dialects registered, a dialect registered later gets its own):
    the search of the dialects that
    are not the protocol's own format; the characters any tag begins with; and the search
    for a dialect's marker, or a suffix that may still become one, a think tag or an open
    tag, outside think blocks and in each kind of them (by its close tag)."""
    dialects = dialect_search(parser._native_dialects, registered, own)
    markers = dialects.markers if dialects is not None else frozenset()
    first_chars = dialects.first_chars if dialects is not None else frozenset()
    return (
        dialects,
        parser._tag_chars | first_chars,
        marker_scan(markers, frozenset({*THINK_TAGS, *open_tokens})),
        {
            close: marker_scan(markers, frozenset({close, *open_tokens}))
            for close in THINK_TAGS.values()
        },
    )


def _ignore_error(error: ParseError) -> None:
    pass
