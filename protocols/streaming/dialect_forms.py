"""Dialects: the call formats models were trained on or drift into, other than the one the
route's protocol prompts for (DeepSeek's tool tokens, Mistral's `[TOOL_CALLS]`, Kimi's
sections...). Every protocol's stream parser recognises them, so a model that answers in its
own format still makes calls. Each dialect is one module in `protocols/dialects/`, registered
by name with the open tags it writes; the tag loop (`tag_loop`) looks for all of them with
one search, and hands each call to the dialect's scanner under the commit policy.

A dialect's call counts only when it names a declared tool: an undeclared name stays text.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from ..base import ParserOptions
from ..lenient.relaxed_json import RelaxedParseBudget
from ..lenient.tool_names import DeclaredTools, name_key
from ..registry import Registered
from .commit_policy import CallContext, CallScanner
from .trie_pattern import names_pattern

# A name written with the namespace OpenAI's formats put tools in (`functions.get_weather`).
NAMESPACE = "functions."
# Between a namespace and a tool's name, as MCP clients name their tools (`server__tool`).
NAMESPACE_SEPARATOR = "__"
# An open tag still being written that has grown longer than this is prose, not a tag.
MAX_DIALECT_OPEN_CHARS = 512

# Makes the scanner of a call: (context, the open tag's text, the tool it names or "").
ScannerFactory = Callable[[CallContext, str, str], CallScanner | None]


@dataclass(frozen=True, slots=True)
class OpenForm:
    """One way a dialect opens a call: the literal it begins with, the whole open tag (its
    group `name` the tool, when the tag names it), what from the marker on may still grow
    into the tag, and the scanner of the call's body.

    The tag must end in something it requires (a literal, a lookahead), so that no longer
    text would match it otherwise: a stream and a whole text then read it alike."""

    marker: str
    pattern: re.Pattern[str]
    head: re.Pattern[str]
    scanner: ScannerFactory
    # What may follow the marker (blanks, then the first character of what decides the
    # form), as a pattern: one cheap match rules the form out where it cannot be.
    next: str = ""


@dataclass(frozen=True, slots=True)
class AnswerForm:
    """A dialect with no marker of its own: it counts only when the whole answer is its
    calls (modulo blanks, and one code fence or one stray tag around them), read by the
    off-protocol answer (`off_protocol`). `begins` matches where such an answer begins (its
    group `name` the first tool, which must be declared), `head` what may still grow into
    that, and `read` gives the calls of the whole answer, or raises CallObjectError."""

    begins: re.Pattern[str]
    head: re.Pattern[str]
    read: Callable[[str, RelaxedParseBudget], list[tuple[str, dict[str, Any]]]]


class Dialect(Registered):
    """A call format, as the open forms it writes (tried in order at one position), or as
    the form of a whole answer when it has no marker."""

    registered: ClassVar[dict[str, type[Dialect]]] = {}
    forms: ClassVar[tuple[OpenForm, ...]] = ()
    answer: ClassVar[AnswerForm | None] = None


@dataclass
class DialectModules:
    """What registers the dialects: importing their modules. The package names it (the
    dialects are the layer above this one), and it runs with the first look at the dialects,
    a parser's, not with the protocols' import, of which it was a fifth: a worker serving
    requests without tools never needs them."""

    importer: Callable[[], object] = lambda: None
    imported: bool = False

    def register(self) -> None:
        if not self.imported:
            self.importer()
            self.imported = True


DIALECT_MODULES = DialectModules()


def dialect_names() -> list[str]:
    DIALECT_MODULES.register()
    return list(Dialect.registered)


def answer_forms() -> tuple[AnswerForm, ...]:
    """The whole-answer forms of every registered dialect."""
    DIALECT_MODULES.register()
    return _answer_forms(tuple(Dialect.registered))


@functools.lru_cache(maxsize=8)
def _answer_forms(registered: tuple[str, ...]) -> tuple[AnswerForm, ...]:
    return tuple(
        form for name in registered if (form := Dialect.registered[name].answer) is not None
    )


def own_dialects(options: ParserOptions) -> tuple[type[Dialect], ...]:
    """The route's own dialects `options` carry (dialect classes, which `base`, below this
    layer, names as registered classes)."""
    return cast(tuple[type[Dialect], ...], options.dialects)


def resolve_tool_name(written: str, declared: Collection[str]) -> str | None:
    """The declared tool a dialect's call names: as written, or without the `functions.`
    namespace or any other dotted prefix (Kimi writes `functions.get_weather:0`), or any
    namespace before `__` (`server__tool`, as MCP clients name their tools). With
    `DeclaredTools`, another spelling of a declared name counts too (`tool_names`): the
    name is returned as written, and the call made under the declared one says so."""
    candidates = (
        written,
        written.removeprefix(NAMESPACE),
        written.rpartition(".")[2],
        written.rpartition(NAMESPACE_SEPARATOR)[2],
    )
    for candidate in candidates:
        if candidate in declared:
            return candidate
    return None


def could_name(partial: str, sorted_keys: Sequence[str]) -> bool:
    """Whether `partial` may still grow into a name `resolve_tool_name` accepts;
    `sorted_keys` are the declared names' `name_key`s, sorted (`DeclaredTools.sorted_keys`)."""
    if NAMESPACE.startswith(partial) or "." in partial:
        return True  # a namespace, or a dotted prefix the last segment decides
    key = name_key(partial)
    following = bisect.bisect_left(sorted_keys, key)
    return following < len(sorted_keys) and sorted_keys[following].startswith(key)


class DialectSearch:
    """Every open form of a set of dialects, searched with one pattern of their markers.

    Text with no marker character costs one set test in the tag loop, and text with some,
    one scan of this pattern whatever the number of dialects (a marker still being written
    at the end is found by the loop's own search, `marker_scan`)."""

    def __init__(self, dialects: Sequence[type[Dialect]]) -> None:
        forms = [form for dialect in dialects for form in dialect.forms]
        markers = {form.marker for form in forms}
        # A trie, longest marker first: a `<` costs one try per next character, not per marker.
        self._markers = re.compile(names_pattern(markers))
        # The forms to try where a marker is found: those of every marker it begins with.
        self._forms_at = {
            marker: [form for form in forms if marker.startswith(form.marker)] for marker in markers
        }
        # The longer markers each marker begins (`<function` of `<function_calls>`): where the
        # shorter is found at the end of the text, the longer may still be being written.
        self._longer = {
            marker: [other for other in markers if other != marker and other.startswith(marker)]
            for marker in markers
        }
        # Where a marker is found, whether any of its forms may open there: one match.
        self._viable_at = {
            marker: re.compile(
                "|".join(
                    [
                        *(f"(?:{re.escape(form.marker)}{form.next})" for form in forms_here),
                        *(
                            rf"(?:{re.escape(marker)}(?:{prefixes(longer[len(marker) :])})\Z)"
                            for longer in self._longer[marker]
                        ),
                    ]
                )
            )
            for marker, forms_here in self._forms_at.items()
        }
        self.first_chars = frozenset(marker[0] for marker in markers)
        # A marker still being written at the end of the text: one search of the last few
        # characters, from the first that may begin one.
        self.markers = frozenset(markers)
        self._longest_marker = max(map(len, markers), default=0)

    def may_open(self, text: str, hit: re.Match[str]) -> bool:
        """Whether a tag of the marker `hit` found may open there, now or as text comes."""
        return self._viable_at[hit.group()].match(text, hit.start()) is not None

    def examine(
        self,
        text: str,
        hit: re.Match[str],
        search: Callable[[str, int, int], re.Match[str] | None],
        limit: int,
        heads_until: int,
        tools: DeclaredTools,
    ) -> tuple[tuple[int, int, str, OpenForm] | None, int | None, int, int]:
        """One pass over the markers from `hit` to `limit`, found by `search` (the tag
        loop's, `marker_scan.MarkerScan`, which also finds where a token being written at
        the end of the text begins).

        Returns the first complete open tag naming a declared tool, as (start, end, the
        tool, or "" when its body names tools, form); where the first tag up to
        `heads_until` (and before that one) that may still become one begins; how much of
        the text holds no marker that can ever open a tag (as far as this pass looked); and
        where a token being written at the end begins (len(text) when none does, or the
        pass stopped before the end). Only the last MAX_DIALECT_OPEN_CHARS characters may
        hold a tag still being written (and none once the output has ended: the caller
        passes `heads_until` -1)."""
        end = min(len(text), limit + self._longest_marker)
        unfinished: int | None = None
        ruled_out = -1  # set once a marker may still open, as far as this pass knows
        found: re.Match[str] | None = hit
        while found is not None and found.start() <= limit:
            start, marker = found.start(), found.group()
            forms = self._forms_at.get(marker)
            if forms is None:  # no marker: a token being written at the end
                return None, unfinished, start if ruled_out == -1 else ruled_out, start
            if self._viable_at[marker].match(text, start) is not None:
                for form in forms:
                    tag = form.pattern.match(text, start)
                    if tag is None:
                        continue
                    written = tag.groupdict().get("name")
                    if written is None:
                        return (start, tag.end(), "", form), unfinished, start, len(text)
                    name = resolve_tool_name(written, tools)
                    if name is not None:
                        return (start, tag.end(), name, form), unfinished, start, len(text)
                # Patterns failed: is a tag of its forms still being written there?
                if len(text) - start > MAX_DIALECT_OPEN_CHARS:
                    pass  # longer than any: ruled out
                elif start > heads_until or unfinished is not None:
                    ruled_out = start if ruled_out == -1 else ruled_out  # not looked at
                elif self._unfinished_at(text, start, marker, tools):
                    unfinished = start
                    ruled_out = start if ruled_out == -1 else ruled_out
            found = search(text, found.end(), end)
        return None, unfinished, len(text) if ruled_out == -1 else ruled_out, len(text)

    def _unfinished_at(self, text: str, start: int, marker: str, tools: DeclaredTools) -> bool:
        """Whether a tag of one of the marker's forms, or a longer marker, is being written
        from `start`."""
        rest = len(text) - start
        if any(
            rest < len(longer) and text.startswith(longer[:rest], start)
            for longer in self._longer[marker]
        ):
            return True
        for form in self._forms_at[marker]:
            head = form.head.fullmatch(text, start)
            if head is not None:
                written = head.groupdict().get("name")
                if written is None or could_name(written, tools.sorted_keys()):
                    return True
        return False


@functools.lru_cache(maxsize=64)
def dialect_search(
    excluded: frozenset[str], registered: tuple[str, ...], own: tuple[type[Dialect], ...] = ()
) -> DialectSearch | None:
    """The search for a route's `own` dialects and every registered dialect but `excluded`
    (a protocol's own format), built once per set. `registered` is `tuple(dialect_names())`,
    so a dialect registered later gets a search of its own. A route's own go first: where
    one begins as a registered one does, the model's declared format reads it."""
    dialects = [*own, *(Dialect.registered[name] for name in registered if name not in excluded)]
    return DialectSearch(dialects) if dialects else None


def prefixes(*tokens: str) -> str:
    """A pattern for any non-empty prefix of the tokens (for heads of open tags)."""
    alternatives = {re.escape(token[:end]) for token in tokens for end in range(1, len(token) + 1)}
    return "|".join(sorted(alternatives, key=len, reverse=True))


# The characters of a tool name in an open tag, and how long one may be.
NAME_CHARS = r"[\w.\-/]"
MAX_NAME_CHARS = 128
# Blanks models put between the pieces of an open tag (a line break, a few spaces).
MAX_BLANKS = 64


@dataclass(frozen=True, slots=True)
class Piece:
    """A piece of an open tag: its pattern in the whole tag, and `partial`, a pattern for
    any of its prefixes (the empty one too), for a head that ends inside it. The piece that
    names the tool is the group `name` of the tag (and of the head, while being written).
    `first` is a pattern for its first character when it cannot be empty ("" when it can),
    and `blank` says it is a run of blanks."""

    pattern: str
    partial: str
    names_tool: bool = False
    first: str = ""
    blank: bool = False


def literal(text: str) -> Piece:
    return Piece(re.escape(text), f"(?:{prefixes(text)})?", first=re.escape(text[0]))


def optional(text: str) -> Piece:
    return Piece(f"(?:{re.escape(text)})?", f"(?:{prefixes(text)})?")


def blanks(limit: int = MAX_BLANKS) -> Piece:
    run = rf"\s{{0,{limit}}}"
    return Piece(run, run, blank=True)


def tool_name(chars: str = NAME_CHARS) -> Piece:
    return Piece(
        f"{chars}{{1,{MAX_NAME_CHARS}}}",
        f"(?P<name>{chars}{{0,{MAX_NAME_CHARS}}})",
        names_tool=True,
        first=chars,
    )


def followed_by(pattern: str, *tags: str) -> Piece:
    """What must come next, not part of the tag: `tags` its literal beginnings (for the
    head), or with none, `pattern` is one character."""
    first = f"[{re.escape(''.join({tag[0] for tag in tags}))}]" if tags else pattern
    return Piece(f"(?={pattern})", f"(?:{prefixes(*tags)})?" if tags else "", first=first)


def heads(pieces: Sequence[Piece]) -> str:
    """A pattern for any prefix of the pieces written one after another (the empty one too)."""
    head = ""
    for piece in reversed(pieces):
        head = f"(?:{piece.partial}|{piece.pattern}{head})"
    return head


def open_form(marker: str, pieces: Sequence[Piece], scanner: ScannerFactory) -> OpenForm:
    """The form whose tag is `marker` then `pieces`, its head built from the same pieces."""
    pattern = re.escape(marker) + "".join(
        f"(?P<name>{piece.pattern})" if piece.names_tool else piece.pattern for piece in pieces
    )
    head = heads(pieces)  # from the marker, which is found whole
    # Blanks, then the first piece that cannot be empty tells; if one can, anything may follow.
    leading = list(itertools.takewhile(lambda piece: piece.blank, pieces))
    deciding = pieces[len(leading)] if len(leading) < len(pieces) else None
    next_ = "".join(piece.pattern for piece in leading) + (
        rf"(?:{deciding.first}|\Z)" if deciding is not None and deciding.first else ""
    )
    return OpenForm(
        marker, re.compile(pattern), re.compile(re.escape(marker) + head), scanner, next_
    )
