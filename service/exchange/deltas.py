"""Parser parts as the engine's deltas (text, reasoning, a call's start, more of its
arguments): the one mapping that streamed and whole answers both go through."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from protocols import (
    FreeFormInputStream,
    Part,
    TextDelta,
    ThinkEnd,
    ThinkStart,
    ToolCall,
    ToolCallDelta,
    ToolCallStart,
    ToolCallUnfinished,
    ToolSpec,
    free_form_input,
    new_call_id,
)

from ..upstream import CallFragment
from .events import CallDelta, CallKind, CallStart, ContentDelta, Delta, ReasoningDelta

logger = logging.getLogger(__name__)

FUNCTION: CallKind = "function"
CUSTOM: CallKind = "custom"
STOP = "stop"  # the finish reason of a text that ended by itself
# An upstream names each call in its first fragment. The arguments of one it has not named
# are held until it does; past this many characters it never will, and they are let go
# (200 MB of a call never named were held, and never sent: there was nothing to call).
MAX_UNNAMED_ARGUMENTS_CHARS = 64 * 1024
# A call identical to one made earlier in the answer (the same tool, the same arguments) is
# not sent again; after this many such repeats the answer ends. A 1.5B model in an agent
# loop wrote 68 calls made of 2 distinct ones in one answer, which pushed the agent's next
# prompt past the model's context; a model that repeats itself three times goes on doing so.
REPEATS_BEFORE_END = 3


class EndReason:
    """Why an answer ended before the model's output did (see `DeltaMapper.ended`)."""

    SINGLE_CALL = "single_call"  # one call was allowed, and it was made
    REPEATED_CALLS = "repeated_calls"  # REPEATS_BEFORE_END calls repeated earlier ones
    INVENTED_RESULT = "invented_result"  # the model wrote a result for its own call


@dataclass(slots=True)
class _NativeCall:
    """A call the upstream made itself, as its fragments arrive."""

    id: str
    kind: CallKind
    held: list[str] = field(default_factory=list)  # arguments sent before its name
    held_chars: int = 0
    dropped: bool = False


class DeltaMapper:
    """One choice's parts as deltas; call indexes dense from 0 in the order calls start. A
    call to a free-form tool is a `custom` call, its arguments sent as the text they carry.
    Adjacent texts of one kind among the parts of one step are one delta.

    With `native` (an upstream that calls tools itself), the upstream's own calls are
    relayed as their fragments come (`native`), and the calls parsed out of its text are
    rescued: held, and sent after them when the choice ends (`rescued`), so their indexes
    follow the upstream's, streamed or not.

    A parsed call identical to an earlier one is not sent again (`on_repeated_call`), and
    the answer ends (`ended`: nothing after it is sent, and a stream stops reading the
    upstream) after the first call made when `single_call`, or at the REPEATS_BEFORE_END-th
    repeat. The calls after the end are counted as dropped when `single_call`.

    >>> mapper = DeltaMapper(think_as_reasoning=False, single_call=False)
    >>> mapper.deltas([TextDelta("t1", "Hi"), ToolCall("call_1", "f", "{}", {}, "...")])
    [ContentDelta(text='Hi', ...), CallStart(index=0, call_id='call_1', ...), CallDelta(...)]
    """

    def __init__(
        self,
        *,
        think_as_reasoning: bool,
        single_call: bool,
        tools: Sequence[ToolSpec] = (),
        native: bool = False,
        on_call: Callable[[str], None] | None = None,
        on_dropped_call: Callable[[str], None] | None = None,
        on_rescued_call: Callable[[str], None] | None = None,
        on_repeated_call: Callable[[str], None] | None = None,
        choice: int = 0,
    ) -> None:
        self._choice = choice
        self._think_as_reasoning = think_as_reasoning
        self._single_call = single_call
        self._free_form = frozenset(tool.name for tool in tools if tool.free_form)
        self._native = native
        self._on_call = on_call  # told each completed call's name
        self._on_dropped_call = on_dropped_call
        self._on_rescued_call = on_rescued_call
        self._on_repeated_call = on_repeated_call
        self._made: set[tuple[str, str]] = set()  # (name, arguments) of the parsed calls sent
        self._repeats = 0
        self.ended: str | None = None  # why the answer ended early (`EndReason`), if it did
        self._in_think = False
        self._indexes: dict[str, int] = {}  # call id -> index, for every call whose start went out
        self._inputs: dict[str, FreeFormInputStream] = {}  # free-form call id -> its text so far
        self._dropped: set[str] = set()
        self._native_calls: dict[object, _NativeCall] = {}  # by the upstream's index (or id)
        self._last_native: object = None
        self._rescued: list[ToolCall] = []  # parsed out of a native upstream's text, held
        self.completed_calls = 0
        self.unfinished_call = False
        self.relayed_calls = 0  # the upstream's own calls sent

    def deltas(self, parts: Sequence[Part]) -> list[Delta]:
        if len(parts) == 1 and type(part := parts[0]) is TextDelta and self.ended is None:
            # The common streamed step: one run of text.
            kind = ReasoningDelta if self._in_think else ContentDelta
            return [kind(part.text, self._choice)] if part.text else []
        out = _StepDeltas(self._choice)
        # A call whose start, arguments and end come in one step (a small call, sent whole)
        # is read at its end: whether it repeats an earlier one is known only then.
        ended = {part.id for part in parts if isinstance(part, ToolCall)}
        whole = {part.id for part in parts if isinstance(part, ToolCallStart) and part.id in ended}
        for part in parts:
            if self.ended is not None:
                if isinstance(part, ToolCall) and self.ended is EndReason.SINGLE_CALL:
                    self._dropped_call(part.name)
                continue
            if isinstance(part, TextDelta):
                out.text(ReasoningDelta if self._in_think else ContentDelta, part.text)
            elif isinstance(part, ThinkStart | ThinkEnd):
                if self._think_as_reasoning:
                    self._in_think = isinstance(part, ThinkStart)
                else:  # clients such as Roo Code read them in the content
                    out.text(ContentDelta, part.tag)
            elif isinstance(part, ToolCallStart):
                if part.id not in whole and self._admit(part.id, part.name):
                    out.append(self._call_start(part.id, part.name))
            elif isinstance(part, ToolCallDelta):
                index = self._indexes.get(part.id)
                if index is not None and part.id not in whole:
                    out.extend(self._call_text(part.id, part.arguments))
            elif isinstance(part, ToolCall):
                if self._native:
                    self._rescued.append(part)
                elif not self._repeated(part):
                    out.extend(self._complete(part))
                    if self._single_call and part.id in self._indexes:
                        self.ended = EndReason.SINGLE_CALL
            elif isinstance(part, ToolCallUnfinished) and part.id in self._indexes:
                self.unfinished_call = True
        return out.deltas()

    def native(self, fragments: Iterable[CallFragment]) -> list[Delta]:
        """The upstream's own calls, relayed under this answer's indexes: each starts once
        its name is known, and its arguments go out as they come."""
        out: list[Delta] = []
        for fragment in fragments:
            call = self._native_call(fragment)
            if call.dropped:
                continue
            index = self._indexes.get(call.id)
            if index is None:
                if fragment.name is None:
                    self._hold(call, fragment.text)
                    continue
                if not self._admit(call.id, fragment.name):
                    call.dropped = True
                    continue
                self.relayed_calls += 1
                self._completed(fragment.name)
                index = self._indexes[call.id]
                out.append(CallStart(index, call.id, fragment.name, call.kind, self._choice))
                call.held.append(fragment.text)
                text, call.held = "".join(call.held), []
            else:
                text = fragment.text
            if text:
                out.append(CallDelta(index, text, self._choice))
        return out

    def _hold(self, call: _NativeCall, text: str) -> None:
        """Keep arguments of a call not named yet, while it still may be."""
        call.held.append(text)
        call.held_chars += len(text)
        if call.held_chars > MAX_UNNAMED_ARGUMENTS_CHARS:
            call.held, call.dropped = [], True
            logger.warning("the upstream sent a tool call without a name; not sent")

    def _native_call(self, fragment: CallFragment) -> _NativeCall:
        """The upstream call this fragment belongs to: by its index; without one, a new
        call when it carries a new id, else the last call."""
        key: object = fragment.index
        if key is None:
            last = self._native_calls.get(self._last_native)
            new_id = fragment.id is not None and (last is None or fragment.id != last.id)
            key = ("id", fragment.id) if new_id else self._last_native
        call = self._native_calls.get(key)
        if call is None:
            call_id = fragment.id
            if call_id is None or call_id in self._indexes or call_id in self._dropped:
                call_id = new_call_id()
            kind = CUSTOM if fragment.kind == CUSTOM else FUNCTION
            call = self._native_calls[key] = _NativeCall(call_id, kind)
        self._last_native = key
        return call

    def rescued(self) -> list[Delta]:
        """The calls parsed out of a native upstream's text, after its own: the choice ended.
        A call of its own that never got a name is not sent (there is nothing to call)."""
        held, self._rescued = self._rescued, []
        out: list[Delta] = []
        for call in held:
            deltas = self._complete(call)
            if deltas and self._on_rescued_call is not None:
                self._on_rescued_call(call.name)
            out.extend(deltas)
        for native in self._native_calls.values():
            if native.id not in self._indexes and not native.dropped:
                logger.warning("the upstream sent a tool call without a name; not sent")
        return out

    def _repeated(self, call: ToolCall) -> bool:
        """Whether `call` repeats one made earlier in the answer: then, unless it streamed
        (its start went out), it is not sent. The answer ends at the last repeat allowed."""
        key = (call.name, call.arguments)
        if key not in self._made:
            self._made.add(key)
            return False
        self._repeats += 1
        if self._repeats >= REPEATS_BEFORE_END:
            self.ended = EndReason.REPEATED_CALLS
        if self._on_repeated_call is not None:
            self._on_repeated_call(call.name)
        return call.id not in self._indexes

    def _complete(self, call: ToolCall) -> list[Delta]:
        streamed = call.id in self._indexes  # incremental: its start and fragments went out
        if not streamed and (call.id in self._dropped or not self._admit(call.id, call.name)):
            return []
        self._completed(call.name)
        deltas = [] if streamed else [self._call_start(call.id, call.name)]
        index, reader = self._indexes[call.id], self._inputs.get(call.id)
        if reader is not None:  # a custom call: the text its fragments did not carry yet
            rest = free_form_input(call.input)[reader.sent_chars :]
            deltas += [CallDelta(index, rest, self._choice)] if rest else []
        elif not streamed:
            deltas.append(CallDelta(index, call.arguments, self._choice))
        return deltas

    def _call_start(self, call_id: str, name: str) -> Delta:
        kind = FUNCTION
        if name in self._free_form:
            kind = CUSTOM
            self._inputs[call_id] = FreeFormInputStream()
        return CallStart(self._indexes[call_id], call_id, name, kind, self._choice)

    def _call_text(self, call_id: str, fragment: str) -> list[Delta]:
        """A streamed call's next argument fragment, as the text it adds for a custom call."""
        reader = self._inputs.get(call_id)
        if reader is not None:
            fragment = reader.feed(fragment)
        return [CallDelta(self._indexes[call_id], fragment, self._choice)] if fragment else []

    def _dropped_call(self, name: str) -> None:
        if self._on_dropped_call is not None:
            self._on_dropped_call(name)

    def _completed(self, name: str) -> None:
        self.completed_calls += 1
        if self._on_call is not None:
            self._on_call(name)

    def _admit(self, call_id: str, name: str) -> bool:
        """Give the call the next index, or drop it when only one call is allowed."""
        if self._single_call and self._indexes:
            self._dropped.add(call_id)
            self._dropped_call(name)
            return False
        self._indexes[call_id] = len(self._indexes)
        return True


class _StepDeltas:
    """The deltas of one step, adjacent texts of one kind made one delta, joined once when
    the run ends: joined onto the delta before each time, a whole answer of
    `</seed:think><seed:think>x` (a text between every two tags) cost the square, 18 s for
    2 MB."""

    __slots__ = ("_choice", "_kind", "_out", "_texts")

    def __init__(self, choice: int) -> None:
        self._choice = choice
        self._out: list[Delta] = []
        self._kind: type[ContentDelta | ReasoningDelta] | None = None  # of the run of texts
        self._texts: list[str] = []

    def text(self, kind: type[ContentDelta | ReasoningDelta], text: str) -> None:
        if not text:
            return
        if kind is not self._kind:
            self._end_texts()
            self._kind = kind
        self._texts.append(text)

    def append(self, delta: Delta) -> None:
        self._end_texts()
        self._out.append(delta)

    def extend(self, deltas: Iterable[Delta]) -> None:
        for delta in deltas:
            self.append(delta)

    def deltas(self) -> list[Delta]:
        self._end_texts()
        return self._out

    def _end_texts(self) -> None:
        if self._texts:
            assert self._kind is not None
            self._out.append(self._kind("".join(self._texts), self._choice))
            self._texts = []
        self._kind = None


def finish_reason(upstream_reason: str | None, mapper: DeltaMapper) -> str:
    """ "length" for a call cut off by the token limit (any of the upstream's own calls may
    be), "tool_calls" when calls were made, else the upstream's own reason ("stop" for a
    "tool_calls" whose calls were none)."""
    if upstream_reason == "length" and (mapper.unfinished_call or mapper.relayed_calls):
        return "length"
    if mapper.completed_calls:
        return "tool_calls"
    if upstream_reason == "tool_calls":
        return STOP
    return upstream_reason or STOP
