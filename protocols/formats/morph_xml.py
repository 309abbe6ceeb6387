"""Morph-XML: the tool's name is the tag and each argument a child tag, as in
`<read_file><path>a.py</path></read_file>`. Only declared tool names open a call.

A tool tag mentioned in prose is not a call: one right after a backtick (inline code), or
one followed on its line by prose rather than a line break or a tag; this is decided at the
first non-blank character after the open tag. A tool whose one required parameter takes a
string may be called with its value bare (`<bash>python3 hello.py</bash>`), the call alone
on its line: text after its tag waits for the tool's close tag and the line's end.
Arguments written as attributes of the tool tag (`<write_file path="a" content="b"/>`) count
when they name declared parameters; child elements next to them that name no declared
parameter are dropped, with an error record."""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..base import ArgumentsMode, ParserOptions, Protocol, StreamParser
from ..lenient.coerce import coerce_by_schema
from ..lenient.json_text import json_text
from ..lenient.relaxed_xml import (
    DuplicateStringTagError,
    arguments_are_complete,
    bare_value_parameter,
    parse_xml_calls,
)
from ..lenient.xml_values import LIST_MEMBER, RelaxedXMLError, layout_trimmed
from ..parts import ErrorKind, OnError, ToolSpec
from ..registry import register
from ..streaming.commit_policy import ArgumentSender, CallContext, CallScanner
from ..streaming.marker_scan import partial_token_start, unclosed_tag_start
from ..streaming.reading_context import MAX_LINE_CHARS
from ..streaming.tag_loop import HeldOpen, TagStreamParser
from ..streaming.trie_pattern import names_pattern
from ..streaming.xml_stream import CDATA_END, CDATA_START, MAX_OPEN_TAG_CHARS, XmlArgumentStream
from .prompting import tools_prompt


@register("morph-xml")
class MorphXmlProtocol(Protocol):
    def render_tools(self, tools: Sequence[ToolSpec], *, single_call: bool = False) -> str:
        return tools_prompt(
            tools,
            self.render_call,
            how_to_call="To call a tool, write an XML element named after the tool with one"
            " child element per argument",
            rules=[
                "Write each argument as a child element, not as an attribute.",
                "Write values as they are, without escaping; every character between the tags"
                " is kept. Write a one-line value right between its tags"
                " (<path>src/app.py</path>); start a multi-line value on the line after its"
                " open tag. Only the line break right after an open tag and the indentation"
                " before a close tag on its own line are layout.",
                "If a value contains its own or the tool's closing tag, wrap the whole value"
                f" in {CDATA_START} ... {CDATA_END}.",
                "Write a list as <item> elements inside the argument's element, an object"
                " as nested elements.",
            ],
            results_in="a <tool_result> element",
            single_call=single_call,
            reminder="Write every call exactly as in the example: the tool's element with one"
            " child element per argument (never attributes), never inside a ``` code block.",
        )

    def render_call(self, name: str, arguments: Any) -> str:
        if not isinstance(arguments, Mapping):
            arguments = {"arguments": arguments}
        inner = "".join(
            _render_argument(name, key, value)
            if isinstance(value, str)
            else _render_element(key, value)
            for key, value in arguments.items()
        )
        return f"<{name}>\n{inner}</{name}>"

    def render_result(self, name: str, call_id: str, content: str) -> str:
        return (
            f"<tool_result tool={_attribute(name)} call_id={_attribute(call_id)}>\n"
            f"{content}\n</tool_result>"
        )

    def _new_parser(
        self, tools: Sequence[ToolSpec], options: ParserOptions, on_error: OnError | None
    ) -> StreamParser:
        return _MorphXmlParser(tools, options, on_error)


def _attribute(value: str) -> str:
    """`value` as a quoted XML attribute. (xml.sax.saxutils.quoteattr would do, but importing
    it loads urllib.request, socket and ssl into a package that must stay free of I/O.)"""
    escaped = value.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
    for char, reference in (("\n", "&#10;"), ("\r", "&#13;"), ("\t", "&#9;")):
        escaped = escaped.replace(char, reference)
    return f'"{escaped}"'


def _render_argument(tool: str, key: str, text: str) -> str:
    """A string argument: kept raw (a multi-line value from the line after its open tag)
    unless raw text would not read back the same, then wrapped whole in CDATA."""
    written = "\n" + text if "\n" in text else text
    unreadable = (CDATA_START, f"<{key}", f"</{key}", f"<{tool}", f"</{tool}")
    if any(marker in text for marker in unreadable) or layout_trimmed(written) != text:
        written = _cdata(text)
    return f"<{key}>{written}</{key}>\n"


def _render_element(key: str, value: Any) -> str:
    """A value nested in an object or list, or a non-string argument: read back through
    XML, so markup is wrapped in CDATA."""
    if isinstance(value, Mapping):
        inner = "".join(_render_element(k, v) for k, v in value.items())
        return f"<{key}>{inner}</{key}>\n"
    if isinstance(value, list):
        items = "".join(_render_element(LIST_MEMBER, item).rstrip("\n") for item in value)
        return f"<{key}>{items}</{key}>\n"
    text = value if isinstance(value, str) else json_text(value)
    written = "\n" + text if "\n" in text else text
    markup = "<" in text or "&" in text or "]]>" in text
    return f"<{key}>{_cdata(written) if markup else written}</{key}>\n"


def _cdata(text: str) -> str:
    # `]]>` cannot appear inside a section: end the section after `]]` and start a new one.
    return CDATA_START + text.replace(CDATA_END, "]]" + CDATA_END + CDATA_START + ">") + CDATA_END


# An attribute list, quoted values whole (they may hold `>`); its unfinished prefix; and
# what outside a quoted value ends the list or opens a value.
_ATTRIBUTES = r"""(?:[^<>"']|"[^"]*"|'[^']*')*"""
_ATTRIBUTES_PREFIX = re.compile(rf"""{_ATTRIBUTES}(?:"[^"]*|'[^']*)?""")
_ATTRIBUTES_STOP = re.compile(r"""[<>"']""")
_ATTRIBUTE = re.compile(r"""([^\s=/<>"']+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
# Arguments written as attributes (`<write_file path="a" content="..."/>`) can make an open
# tag long; a `<tool ` followed by more than this without `>` is prose, and holding it back
# longer would stall the text.
MAX_ATTRIBUTES_CHARS = 4096
# XML's character and predefined entity references, as attribute values use them.
_REFERENCE = re.compile(r"&(?:#(\d{1,7})|#x([0-9A-Fa-f]{1,6})|(amp|lt|gt|quot|apos));")
_PREDEFINED_ENTITIES = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
_INLINE_CODE = "`"
_LAYOUT = " \t\r\n"


class _AttributesFollower:
    """A tool's open tag whose attributes are still being written, followed delta by delta:
    the quote it is inside and its length so far are kept, so each delta costs its own
    length (a 60 KB tag fed one character at a time was read again whole on every delta,
    10 s). It goes on while the text is what `_ATTRIBUTES_PREFIX` accepts within
    MAX_ATTRIBUTES_CHARS."""

    __slots__ = ("_length", "_quote")

    def __init__(self, length: int) -> None:
        self._length = length
        self._quote = ""  # the quote an attribute value is open in, "" outside one

    def extend(self, text: str) -> bool:
        self._length += len(text)
        if self._length > MAX_ATTRIBUTES_CHARS:
            return False  # prose: `_partial_attributes_start` no longer holds it
        position = 0
        while True:
            if self._quote:
                end = text.find(self._quote, position)
                if end == -1:
                    return True
                self._quote, position = "", end + 1
                continue
            found = _ATTRIBUTES_STOP.search(text, position)
            if found is None:
                return True
            if found.group() in "<>":
                return False  # the tag ended, or a `<` made it prose
            self._quote, position = found.group(), found.end()


class _MorphXmlParser(TagStreamParser):
    _tag_chars = TagStreamParser._tag_chars | {_INLINE_CODE}  # a backtick ending a feed is held
    # A tool tag with attributes still being written, and the backtick before it.
    _longest_partial_open = MAX_ATTRIBUTES_CHARS + 1
    _follows_held = True

    def __init__(
        self, tools: Sequence[ToolSpec], options: ParserOptions, on_error: OnError | None
    ) -> None:
        super().__init__(tools, options, on_error)
        # Sorted, so that whether any name begins with a prefix is one binary search.
        self._names = sorted(self._ctx.tools)
        self._opening, self._opening_head = _opening_patterns(tuple(self._names))
        self._body_tags: dict[str, re.Pattern[str]] = {}  # per tool, compiled once

    def _find_open(self, text: str) -> tuple[int, int, str] | None:
        opening = self._opening
        found = opening.search(text) if opening else None
        while found is not None:
            # Right after a backtick the tag is quoted as inline code; a backtick ending one
            # feed is held (`_partial_open_start`), so it is seen here with the tag. A tag
            # longer than a stream holds back is prose, whole or streamed.
            start = found.start()
            if (start == 0 or text[start - 1] != _INLINE_CODE) and (
                found.end() - start <= MAX_ATTRIBUTES_CHARS + 1
            ):
                return start, found.end(), found.group(1)
            found = opening.search(text, start + 1) if opening else None
        return None

    def _partial_open_start(self, text: str) -> int:
        start = min(self._partial_tag_start(text), self._partial_attributes_start(text))
        if start == len(text):
            return len(text) - 1 if text.endswith(_INLINE_CODE) else start
        return start - 1 if start and text[start - 1] == _INLINE_CODE else start

    def _partial_tag_start(self, text: str) -> int:
        """A `<` still followed by a tool name being written, or by nothing yet."""
        start = unclosed_tag_start(text, MAX_OPEN_TAG_CHARS)
        if start == len(text):
            return start
        tail = text[start + 1 :]
        name = re.match(r"[\w.:-]*", tail)
        assert name is not None  # the pattern matches the empty string
        if name.end() == len(tail):
            following = bisect.bisect_left(self._names, name.group())
            could_open = following < len(self._names) and self._names[following].startswith(
                name.group()
            )
        else:
            could_open = name.group() in self._ctx.tools and tail[name.end()] in " \t\r\n/"
        return start if could_open else len(text)

    def _partial_attributes_start(self, text: str) -> int:
        """The first tool open tag whose attributes are still being written (their quoted
        values may hold `<` or `>`, which `_partial_tag_start` cannot see past)."""
        if self._opening_head is None:
            return len(text)
        window = max(0, len(text) - MAX_ATTRIBUTES_CHARS)
        for head in self._opening_head.finditer(text, window):
            start = head.start()
            quoted = start > 0 and text[start - 1] == _INLINE_CODE  # never a call: `_find_open`
            if not quoted and _ATTRIBUTES_PREFIX.fullmatch(text, head.end()):
                return start
        return len(text)

    def _follow_held(self, held: str) -> HeldOpen | None:
        head = self._opening_head.match(held) if self._opening_head else None
        if head is None:
            return None
        follower = _AttributesFollower(head.end())
        return follower if follower.extend(held[head.end() :]) else None

    def _open_call(self, ctx: CallContext, open_tag: str, name: str) -> CallScanner | None:
        tool = ctx.tools[name]
        attributes = _attribute_arguments(open_tag, tool)
        if open_tag.endswith("/>"):
            arguments = coerce_by_schema(attributes, tool.parameters, ctx.relaxed_budget)
            ctx.complete_call(name, arguments, open_tag)
            return None
        body_tags = self._body_tags.get(name)
        if body_tags is None:
            escaped = re.escape(name)
            body_tags = re.compile(
                rf"{re.escape(CDATA_START)}|<{escaped}(?:\s{_ATTRIBUTES})?/?>|</{escaped}\s*>"
            )
            self._body_tags[name] = body_tags
        return _MorphCall(ctx, open_tag, tool, attributes, body_tags)


@functools.lru_cache(maxsize=64)
def _opening_patterns(
    names: tuple[str, ...],
) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """A tool's open tag, and its head before the attributes, for the tools `names` (sorted):
    built once for a set of tools, not for every request (the names' trie cost more than
    the rest of a parser's start). Longer names are tried first, so `<read_file>` is never
    taken for a tool named `read`."""
    if not names:
        return None, None
    pattern = names_pattern(names)
    return re.compile(rf"<({pattern})(?:\s{_ATTRIBUTES})?/?>"), re.compile(rf"<{pattern}\s")


def _attribute_arguments(open_tag: str, tool: ToolSpec) -> dict[str, Any]:
    """The open tag's attributes that name declared parameters, XML entities resolved."""
    properties = tool.parameters.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    attributes = open_tag[len(tool.name) + 1 :]
    arguments: dict[str, Any] = {}
    for found in _ATTRIBUTE.finditer(attributes):
        key, double_quoted, single_quoted = found.groups()
        value = double_quoted if double_quoted is not None else single_quoted
        if key in properties:
            arguments[key] = _REFERENCE.sub(_resolve_reference, value)
    return arguments


def _resolve_reference(found: re.Match[str]) -> str:
    decimal, hexadecimal, name = found.groups()
    if name:
        return _PREDEFINED_ENTITIES[name]
    code = int(decimal) if decimal else int(hexadecimal, 16)
    return chr(code) if 0 < code <= 0x10FFFF else found.group()


class _MorphCall(CallScanner):
    """One call's body, up to the close tag that matches its open tag. Same-name tags
    nested inside it are balanced, and CDATA sections are skipped. Until its first
    non-blank character shows otherwise, the open tag may still be prose."""

    def __init__(
        self,
        ctx: CallContext,
        open_tag: str,
        tool: ToolSpec,
        attributes: dict[str, Any],
        body_tags: re.Pattern[str],
    ) -> None:
        self._ctx, self._open_tag, self._tool = ctx, open_tag, tool
        self._attributes = attributes
        self._tags = body_tags
        self._decided = False
        self._line_broken = False  # a line break came before the first non-blank character
        # Text followed the tag on its line, and the tool takes a bare value: the close tag
        # ending this line makes it a call (what `_held` was searched for it so far, and
        # where in `_held` the close tag ends once found).
        self._bare_searched: int | None = None
        self._bare_closed: int | None = None
        self._depth = 1
        self._in_cdata = False
        self._body: list[str] = []
        self._held = ""
        streams = ctx.mode is ArgumentsMode.INCREMENTAL and not attributes
        self._arguments = (
            XmlArgumentStream(tool.parameters, tool.name, ctx.relaxed_budget) if streams else None
        )
        self._sender = ArgumentSender(ctx)

    def consume(self, text: str) -> str | None:
        if not self._decided:
            return self._decide(text)
        text = self._held + text
        if not self._in_cdata and "<" not in text:  # the common delta: all body, no tag
            self._absorb(text)
            self._held = ""
            return None
        scanned = 0
        while True:
            if self._in_cdata:
                end = text.find(CDATA_END, scanned)
                if end == -1:
                    self._hold(text, scanned, (CDATA_END,))
                    return None
                self._absorb(text[scanned : end + len(CDATA_END)])
                scanned = end + len(CDATA_END)
                self._in_cdata = False
                continue
            found = self._tags.search(text, scanned)
            if found is None:
                self._hold(text, scanned, (CDATA_START,))
                return None
            tag = found.group()
            if tag.startswith("</"):
                self._depth -= 1
                if self._depth == 0:
                    self._absorb(text[scanned : found.start()])
                    self._complete(tag)
                    return text[found.end() :]
            elif tag == CDATA_START:
                self._in_cdata = True
            elif not tag.endswith("/>"):
                self._depth += 1
            self._absorb(text[scanned : found.end()])
            scanned = found.end()

    def _decide(self, text: str) -> str | None:
        """Before the first non-blank character: a `<` or an earlier line break makes this a
        call; prose on the tag's line makes the tag text, and the text is read again,
        unless it may be the tool's bare value (`_decide_bare`)."""
        if self._bare_searched is not None:
            return self._decide_bare(text)
        first = len(text) - len(text.lstrip(_LAYOUT))
        self._line_broken = self._line_broken or "\n" in text[:first]
        self._held += text
        if first == len(text):
            return None
        if text[first] == "<" or self._line_broken:
            return self._open_body()
        if bare_value_parameter(self._tool.parameters) is not None:
            self._bare_searched = 0
            return self._decide_bare("")
        return self._prose()

    def _decide_bare(self, text: str) -> str | None:
        """Text after the tag on its line, for a tool that takes a bare value: the tool's
        close tag, then the line's end (or another tag), makes it a call (`<bash>ls</bash>`);
        the line ending first, prose after the close tag (`<bash>ls</bash> lists them`), or
        a line longer than a line's length, makes the tag prose. A bare value says less
        than an argument element: the call stands alone on its line."""
        assert self._bare_searched is not None
        self._held += text
        if len(self._held) > MAX_LINE_CHARS:
            return self._prose()
        if self._bare_closed is None:
            close = f"</{self._tool.name}>"
            start = max(0, self._bare_searched - len(close) + 1)
            found = self._held.find(close, start)
            line_end = self._held.find("\n", start)
            if found == -1 or -1 < line_end < found:
                if line_end != -1:
                    return self._prose()
                self._bare_searched = len(self._held)
                return None
            self._bare_closed = found + len(close)
        after = self._held[self._bare_closed :].lstrip(" \t\r")
        if not after:
            return None
        if after[0] not in "\n<":
            return self._prose()
        return self._open_body()

    def _open_body(self) -> str | None:
        """The tag opens a call: what was held is its body."""
        self._decided = True
        held, self._held = self._held, ""
        return self.consume(held)

    def _prose(self) -> str:
        """The tag was prose: it is text, and what followed it is read again."""
        self._decided = True
        held, self._held = self._held, ""
        self._ctx.out.text(self._open_tag)
        return held

    def _hold(self, text: str, scanned: int, tokens: tuple[str, ...]) -> None:
        """Absorb what is certain, keep a suffix that could still become a tag."""
        rest = text[scanned:]
        safe = partial_token_start(rest, tokens)
        if not self._in_cdata:
            # Any `<` without its `>` yet may still become this tool's open or close tag.
            safe = min(safe, unclosed_tag_start(rest, MAX_OPEN_TAG_CHARS))
        self._absorb(rest[:safe])
        self._held = rest[safe:]

    def finish(self) -> None:
        if self._bare_searched is not None and not self._decided:
            if self._bare_closed is None:
                # The output ended on the tag's line before its close tag: prose.
                self._ctx.out.text(self._open_tag + self._held)
                return
            # The output ended right after it: a call, and the blanks after it text.
            self._ctx.out.text(self._open_body() or "")
            return
        if not self._decided:  # the output ended with the open tag: no prose follows it
            self._decided, held, self._held = True, self._held, ""
            self.consume(held)
        body = "".join(self._body)
        original = self._open_tag + body + self._held
        try:
            complete = not self._held and arguments_are_complete(body, self._ctx.relaxed_budget)
        except RelaxedXMLError:
            complete = False
        if complete and self._parse(body, original, reject_invalid=False):
            return
        self._ctx.cut_off_call(self._sender.call, original)

    def _absorb(self, text: str) -> None:
        if text:
            self._body.append(text)
            if self._arguments is not None:
                self._sender.feed(self._arguments, text)

    def _complete(self, close_tag: str) -> None:
        body = "".join(self._body)
        self._parse(body, self._open_tag + body + close_tag, reject_invalid=True)

    def _parse(self, body: str, original: str, *, reject_invalid: bool) -> bool:
        """Emit the call `body` holds; False if it does not parse. An invalid body is
        rejected as a call (see CallContext.reject_call) only with `reject_invalid`;
        otherwise nothing is emitted and the caller decides."""
        ctx, schema = self._ctx, self._tool.parameters
        stream = self._arguments
        try:
            calls = [
                (self._tool.name, self._with_attributes(children, original))
                for children in parse_xml_calls(
                    body, schema, stream.parsed_values if stream else None, ctx.relaxed_budget
                )
            ]
        except RelaxedXMLError as error:
            if not reject_invalid:
                return False
            kind = (
                ErrorKind.DUPLICATE_STRING_TAG
                if isinstance(error, DuplicateStringTagError)
                else ErrorKind.MALFORMED_XML
            )
            ctx.reject_call(self._sender.call, kind, str(error), original)
            return True
        ctx.complete_calls(calls, original, streamed=self._sender.call)
        return True

    def _with_attributes(self, children: dict[str, Any], original: str) -> dict[str, Any]:
        """Attribute arguments joined by the child elements that name declared parameters;
        other children beside attributes are not arguments (recorded as an error). Without
        attributes, an undeclared child passes as an argument (the tool tells the model),
        except `<item>`: the prompt's list member, misplaced, is dropped alike."""
        properties = self._tool.parameters.get("properties")
        declared = properties if isinstance(properties, Mapping) else {}
        if self._attributes:
            twice = [key for key in children if key in self._attributes]
            if twice:
                raise DuplicateStringTagError(f"{twice} given both as attribute and as element")
        stray = [
            key
            for key in children
            if key not in declared and (self._attributes or key == LIST_MEMBER)
        ]
        if not stray:
            return {**self._attributes, **children}
        beside = " beside attribute arguments" if self._attributes else ""
        self._ctx.error(
            ErrorKind.MALFORMED_XML, f"child elements {stray}{beside} name no parameter", original
        )
        return {**self._attributes, **{k: v for k, v in children.items() if k not in stray}}
