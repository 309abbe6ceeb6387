"""Shared helpers for the protocol parser tests: the declared tools, a runner that feeds a
text to a stream parser in given chunks and collects what comes out, and a checker for the
parser contract (text blocks, call part sequences, accounting, ids).

>>> result = run("json-mix", 'Hi <tool_call>{"name": "get_time"}</tool_call>', chunks=1)
>>> result.text, result.call_values
('Hi ', [('get_time', {})])
"""

from __future__ import annotations

import functools
import importlib
import inspect
import itertools
import json
import pkgutil
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

import protocols
from protocols import (
    SMALL_CALL_CHARS,
    ArgumentsMode,
    ErrorKind,
    ParseError,
    ParserOptions,
    Part,
    Protocol,
    QuotedLines,
    TextDelta,
    TextEnd,
    TextStart,
    ThinkEnd,
    ThinkStart,
    ToolCall,
    ToolCallDelta,
    ToolCallStart,
    ToolCallUnfinished,
    ToolSpec,
    UnknownTools,
    get_protocol,
    protocol_names,
)
from protocols.lenient.relaxed_json import RELAXED_PARSE_BUDGET_CHARS

# Every registered protocol: a protocol file added to the package is tested with no edit here.
PROTOCOL_NAMES = tuple(protocol_names())
MODES = (ArgumentsMode.INCREMENTAL, ArgumentsMode.ATOMIC)
# How a text is fed: whole, one character at a time, and in pieces of five.
CHUNKINGS = (
    pytest.param(None, id="whole"),
    pytest.param(1, id="1-char"),
    pytest.param(5, id="5-char"),
)


def _object(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


STRING: dict[str, Any] = {"type": "string"}

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("get_weather", "Current weather for a city.", _object(city=STRING, unit=STRING)),
    ToolSpec("read_file", "Read a file.", _object(path=STRING)),
    ToolSpec("write_file", "Write a file.", _object(path=STRING, content=STRING)),
    ToolSpec("search", "Search the web.", _object(query=STRING, limit={"type": "integer"})),
    ToolSpec("get_time", "The current time.", {"type": "object", "properties": {}}),
    ToolSpec(
        "configure",
        "Set options of every JSON type.",
        _object(
            name=STRING,
            count={"type": "integer"},
            ratio={"type": "number"},
            enabled={"type": "boolean"},
            tags={"type": "array", "items": STRING},
            sizes={"type": "array", "items": {"type": "integer"}},
            options=_object(depth={"type": "integer"}, mode=STRING),
            nested=_object(
                inner=_object(flag={"type": "boolean"}, values={"type": "array"}),
            ),
        ),
    ),
)

Chunks = int | Sequence[int] | None


def split(text: str, chunks: Chunks = None) -> list[str]:
    """`text` cut into pieces: None keeps it whole, an int gives pieces of that many
    characters, a sequence of offsets cuts at each of them."""
    if chunks is None:
        return [text]
    if isinstance(chunks, int):
        return [text[i : i + chunks] for i in range(0, len(text), chunks)] or [""]
    cuts = [0, *sorted(set(chunks)), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(cuts) if b > a] or [""]


def offsets(pieces: Sequence[str]) -> list[int]:
    """The cut offsets that split `"".join(pieces)` back into `pieces`."""
    cuts, total = [], 0
    for piece in pieces[:-1]:
        total += len(piece)
        cuts.append(total)
    return cuts


def fragments(parts: Sequence[Part]) -> str:
    """The call argument fragments among `parts`, joined."""
    return "".join(part.arguments for part in parts if isinstance(part, ToolCallDelta))


@dataclass(frozen=True)
class Result:
    """What one parser run produced."""

    source: str
    mode: ArgumentsMode
    parts: list[Part]
    errors: list[ParseError]
    # Parts returned by each feed() (finish() last), to check what was released when.
    batches: list[list[Part]]

    @property
    def text(self) -> str:
        """All TextDelta text, in order."""
        return "".join(part.text for part in self.parts if isinstance(part, TextDelta))

    @property
    def calls(self) -> list[ToolCall]:
        return [part for part in self.parts if isinstance(part, ToolCall)]

    @property
    def call_values(self) -> list[tuple[str, Any]]:
        """(name, input) of every complete call."""
        return [(call.name, call.input) for call in self.calls]

    @property
    def unfinished(self) -> list[ToolCallUnfinished]:
        return [part for part in self.parts if isinstance(part, ToolCallUnfinished)]

    @property
    def error_kinds(self) -> list[ErrorKind]:
        return [error.kind for error in self.errors]

    @property
    def reconstructed(self) -> str:
        """Text, think tags and call originals, in order: must equal `source`."""
        pieces = []
        for part in self.parts:
            if isinstance(part, TextDelta):
                pieces.append(part.text)
            elif isinstance(part, ThinkStart | ThinkEnd):
                pieces.append(part.tag)
            elif isinstance(part, ToolCall | ToolCallUnfinished):
                pieces.append(part.original)
        return "".join(pieces)

    def deltas(self, call_id: str) -> list[str]:
        """The argument fragments streamed for one call."""
        return [
            part.arguments
            for part in self.parts
            if isinstance(part, ToolCallDelta) and part.id == call_id
        ]

    def signature(self) -> tuple[str, list[tuple[str, str, Any, str]], list[ErrorKind]]:
        """What must not depend on chunking: text, calls (without ids) and error kinds."""
        calls = [(call.name, call.arguments, call.input, call.original) for call in self.calls]
        return self.text, calls, self.error_kinds


def protocol_of(protocol: str | Protocol) -> Protocol:
    return get_protocol(protocol) if isinstance(protocol, str) else protocol


def sample_call(protocol: str | Protocol) -> str:
    """get_weather(city="Paris") as `protocol` renders it: a call any protocol parses."""
    return protocol_of(protocol).render_call("get_weather", {"city": "Paris"})


def rendered_outputs(protocol: str | Protocol) -> dict[str, str]:
    """Well-formed outputs built from the protocol's own rendering, by name: what every
    protocol, a new one too, is tested on before its hand-written cases."""
    call = sample_call(protocol)
    return {
        "rendered-call": call,
        "rendered-calls-amid-text": f"Before {call} between {call} after",
        "rendered-call-after-think": f"<think>maybe {call}</think>{call}",
    }


def cut_off_outputs(protocol: str | Protocol) -> dict[str, str]:
    """Outputs that end inside a rendered call, as a model stopped by max_tokens writes."""
    call = sample_call(protocol)
    return {"rendered-call-cut-off": "Sure. " + call[: len(call) // 2]}


def run(
    protocol: str | Protocol,
    text: str,
    *,
    chunks: Chunks = None,
    mode: ArgumentsMode = ArgumentsMode.INCREMENTAL,
    tools: Sequence[ToolSpec] = TOOLS,
    unknown_tools: UnknownTools = UnknownTools.CALL,
    small_call_chars: int = SMALL_CALL_CHARS,
    relaxed_parse_budget_chars: int = RELAXED_PARSE_BUDGET_CHARS,
    tool_results: Sequence[str] = (),
    dialects: tuple[type, ...] = (),
) -> Result:
    """Feed `text` to a fresh stream parser in `chunks` (see `split`), then finish.
    `small_call_chars=0` streams every call at once (as a large one streams);
    `tool_results`: what the request's tool results said; `dialects`: a route's own."""
    errors: list[ParseError] = []
    options = ParserOptions(
        mode=mode,
        unknown_tools=unknown_tools,
        small_call_chars=small_call_chars,
        relaxed_parse_budget_chars=relaxed_parse_budget_chars,
        quoted_lines=QuotedLines.of(tool_results),
        dialects=dialects,
    )
    parser = protocol_of(protocol).stream_parser(tools, options=options, on_error=errors.append)
    batches = [parser.feed(piece) for piece in split(text, chunks)]
    batches.append(parser.finish())
    parts = [part for batch in batches for part in batch]
    return Result(text, mode, parts, errors, batches)


# The methods a text is handed to whole, each under the parameter name `text`: each
# reader's `feed`, each call scanner's `consume`, the text the tag loop looks for tags in.
SEAMS = frozenset({"feed", "consume", "_locate"})
# How much longer the longer of two texts compared for work is, and how much more work than
# that linear reading may take (piece boundaries fall differently; a square would be 16x).
GROWTH = 4
MAX_WORK_RATIO = 6.0


@functools.cache
def _seam_methods() -> list[tuple[type, str, int]]:
    """(class, method name, position of its `text` argument) of every SEAMS method defined in
    `protocols`: each module of the package imported, each class of its own looked through."""
    found = []
    for info in pkgutil.walk_packages(protocols.__path__, "protocols."):
        module = importlib.import_module(info.name)
        for owner in vars(module).values():
            if not (isinstance(owner, type) and owner.__module__ == module.__name__):
                continue
            for name in SEAMS & vars(owner).keys():
                parameters = list(inspect.signature(vars(owner)[name]).parameters)
                if "text" in parameters:
                    found.append((owner, name, parameters.index("text")))
    return found


@contextmanager
def text_handed_over() -> Iterator[Callable[[], int]]:
    """Within the block, the characters of text handed over at the SEAMS are counted, each
    seam method counting what it is handed while it runs (a profile hook on every call cost
    the parser several times its work); the block is given the count so far. Handing the
    rest of the text on at every tag, or searching a held text again from its start at every
    delta, counts the square of the text.

    >>> with text_handed_over() as handed:
    ...     run("json-mix", text, chunks=1)
    >>> handed()
    """
    total = 0

    def counting(method: Callable[..., Any], at: int) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            nonlocal total
            handed = args[at] if at < len(args) else kwargs.get("text")
            total += len(handed) if isinstance(handed, str) else 0
            return method(*args, **kwargs)

        return counted

    with pytest.MonkeyPatch.context() as patch:
        for owner, name, at in _seam_methods():
            patch.setattr(owner, name, counting(vars(owner)[name], at))
        yield lambda: total


def check_contract(result: Result) -> None:
    """Assert the parser contract for one run: nothing lost, well-formed text blocks, call
    part sequences fitting the mode, arguments that are the JSON of `input`, unique ids."""
    _check_nothing_lost(result)
    _check_text_blocks(result.parts)
    _check_calls(result)


# Layout: blanks, and the empty shell calls were written in (fence lines, wrapper tags, the
# close of a channel of special tokens).
LAYOUT = re.compile(
    r"\s*(?:(?:```[\w.+-]*|</?[A-Za-z_][\w.:-]*(?:\s[^<>]*)?>|<\|close\|>\w+<\|sep\|>)\s*)*"
)
FENCE_LINE = re.compile(r"^ {0,3}```", re.MULTILINE)
# A result the model wrote for its own call, dropped with an `invented_result` record.
INVENTED = re.compile(
    r"\s*<(tool_result|tool_response)\b[^<>]*>.*?</\1>\s*"
    r"|\s*<start_function_response>.*?<end_function_response>\s*",
    re.DOTALL,
)


def _check_nothing_lost(result: Result) -> None:
    """The parts rebuild the source, less layout: a run of blanks and shell lines may be
    missing only between (the start or a call) and (a call, text or the end), or between
    text and a call when it opens a code fence (the fence holds only calls), and never in
    an output with no call."""
    source, position, after_text = result.source, 0, False
    pieces: list[tuple[bool, str]] = []  # (is text, piece)
    for part in result.parts:
        if isinstance(part, TextDelta):
            pieces.append((True, part.text))
        elif isinstance(part, ThinkStart | ThinkEnd):
            pieces.append((True, part.tag))
        elif isinstance(part, ToolCall | ToolCallUnfinished):
            pieces.append((False, part.original))
    for is_text, piece in pieces:
        if piece and (not after_text or not is_text):
            start = source.find(piece, position)
            assert start >= position, f"{piece[:80]!r} not found"
            dropped = source[position:start]
            assert LAYOUT.fullmatch(dropped) or _invented(result, dropped), f"dropped: {dropped!r}"
            assert not (after_text and dropped) or FENCE_LINE.search(dropped), dropped
            position = start
        assert source.startswith(piece, position), (position, piece[:80], source[position:][:80])
        position += len(piece)
        after_text = is_text if piece else after_text
    rest = source[position:]
    called = any(not is_text for is_text, _piece in pieces)  # with no call, no layout
    assert not rest or (
        called and not after_text and (LAYOUT.fullmatch(rest) or _invented(result, rest))
    ), f"lost: {rest[:80]!r}"


def _invented(result: Result, dropped: str) -> bool:
    """Whether `dropped` is results the model invented after a call, each with its record."""
    originals = [e.original for e in result.errors if e.kind is ErrorKind.INVENTED_RESULT]
    # The answer ended at the first: what followed it has a record of its own, the last.
    if len(originals) > 1 and dropped.endswith(originals[-1]):
        dropped = dropped[: -len(originals[-1])]
    return bool(INVENTED.fullmatch(dropped)) and all(o in dropped for o in originals[:1])


def _check_text_blocks(parts: Sequence[Part]) -> None:
    open_block: str | None = None
    seen: set[str] = set()
    for part in parts:
        if isinstance(part, TextStart):
            assert open_block is None, f"text block {part.id} opened inside {open_block}"
            assert part.id not in seen, f"text block id {part.id} reused"
            open_block = part.id
            seen.add(part.id)
        elif isinstance(part, TextDelta):
            assert part.id == open_block, f"text delta outside its block: {part}"
            assert part.text, "empty text delta"
        elif isinstance(part, TextEnd):
            assert part.id == open_block, f"text end without its start: {part}"
            open_block = None
        elif not isinstance(part, ThinkStart | ThinkEnd):
            assert open_block is None, f"{type(part).__name__} inside open text block"
    assert open_block is None, "text block left open after finish()"


def _check_calls(result: Result) -> None:
    ids = [part.id for part in result.parts if isinstance(part, ToolCall | ToolCallUnfinished)]
    assert len(ids) == len(set(ids)), f"call ids not unique: {ids}"
    assert all(call_id.startswith("call_") for call_id in ids), ids
    for call in result.calls:
        assert json.loads(call.arguments) == call.input, call
    if result.mode is ArgumentsMode.ATOMIC:
        streamed = [p for p in result.parts if isinstance(p, ToolCallStart | ToolCallDelta)]
        assert not streamed, f"incremental parts in atomic mode: {streamed}"
        assert not result.unfinished, "ToolCallUnfinished in atomic mode"
        return
    current: ToolCallStart | None = None
    fragments: list[str] = []
    for part in result.parts:
        if isinstance(part, ToolCallStart):
            assert current is None, f"call {part.id} started inside call {current}"
            current, fragments = part, []
        elif isinstance(part, ToolCallDelta):
            assert current is not None and part.id == current.id, f"stray delta {part}"
            fragments.append(part.arguments)
        elif isinstance(part, ToolCall | ToolCallUnfinished):
            assert current is not None and part.id == current.id, f"{part} without its start"
            assert part.name == current.name
            if isinstance(part, ToolCall):
                assert "".join(fragments) == part.arguments, (fragments, part.arguments)
            current = None
        else:
            assert current is None, f"{part} inside call {current}"
    assert current is None, f"call {current} never ended"
