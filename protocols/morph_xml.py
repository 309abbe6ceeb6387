"""Morph-XML: the tool's name is the tag and each argument a child tag, as in
`<read_file><path>a.py</path></read_file>`. Only declared tool names open a call."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .base import ArgumentsMode, ParserOptions, Protocol, StreamParser
from .coerce import coerce_by_schema
from .parts import ErrorKind, ToolSpec
from .prompting import tools_prompt
from .registry import register
from .relaxed_xml import (
    DuplicateStringTagError,
    RelaxedXMLError,
    arguments_are_complete,
    parse_xml_arguments,
)
from .streaming import (
    ArgumentSender,
    CallContext,
    CallScanner,
    TagStreamParser,
    partial_token_start,
    unclosed_tag_start,
)
from .xml_stream import CDATA_END, CDATA_START, MAX_OPEN_TAG_CHARS, XmlArgumentStream


@register("morph-xml")
class MorphXmlProtocol(Protocol):
    def render_tools(self, tools: Sequence[ToolSpec], *, single_call: bool = False) -> str:
        return tools_prompt(
            tools,
            self.render_call,
            how_to_call="To call a tool, write an XML element named after the tool with one"
            " child element per argument",
            rules=[
                "Write text values as they are, without escaping. If a value contains the"
                f" tool's closing tag, wrap it in {CDATA_START} ... {CDATA_END}.",
                "Write a list as <item> elements inside the argument's element, an object"
                " as nested elements.",
            ],
            results_in="a <tool_result> element",
            single_call=single_call,
        )

    def render_call(self, name: str, arguments: Any) -> str:
        if not isinstance(arguments, Mapping):
            arguments = {"arguments": arguments}
        inner = "".join(_render_element(key, value) for key, value in arguments.items())
        return f"<{name}>\n{inner}</{name}>"

    def render_result(self, name: str, call_id: str, content: str) -> str:
        return (
            f"<tool_result tool={_attribute(name)} call_id={_attribute(call_id)}>\n"
            f"{content}\n</tool_result>"
        )

    def _new_parser(self, tools: Sequence[ToolSpec], options: ParserOptions) -> StreamParser:
        return _MorphXmlParser(tools, options)


def _attribute(value: str) -> str:
    """`value` as a quoted XML attribute. (xml.sax.saxutils.quoteattr would do, but importing
    it loads urllib.request, socket and ssl into a package that must stay free of I/O.)"""
    escaped = value.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
    for char, reference in (("\n", "&#10;"), ("\r", "&#13;"), ("\t", "&#9;")):
        escaped = escaped.replace(char, reference)
    return f'"{escaped}"'


def _render_element(key: str, value: Any) -> str:
    if isinstance(value, Mapping):
        inner = "".join(_render_element(k, v) for k, v in value.items())
        return f"<{key}>{inner}</{key}>\n"
    if isinstance(value, list):
        items = "".join(_render_element("item", item).rstrip("\n") for item in value)
        return f"<{key}>{items}</{key}>\n"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f"<{key}>{_cdata(text) if _needs_cdata(text) else text}</{key}>\n"


def _needs_cdata(text: str) -> bool:
    """Whether a value written raw would not read back the same: markup (which could
    close a tag or be parsed when nested) or edge whitespace (which the layout trim drops)."""
    return "<" in text or "&" in text or "]]>" in text or text != text.strip()


def _cdata(text: str) -> str:
    # `]]>` cannot appear inside a section: end the section after `]]` and start a new one.
    return CDATA_START + text.replace(CDATA_END, "]]" + CDATA_END + CDATA_START + ">") + CDATA_END


class _MorphXmlParser(TagStreamParser):
    def __init__(self, tools: Sequence[ToolSpec], options: ParserOptions) -> None:
        super().__init__(tools, options)
        # Longest names first, so `<read_file>` is never taken for a tool named `read`.
        names = sorted(self._ctx.tools, key=len, reverse=True)
        alternatives = "|".join(map(re.escape, names))
        self._opening = re.compile(rf"<({alternatives})(?:\s[^<>]*)?/?>") if names else None

    def _find_open(self, text: str) -> tuple[int, int, str] | None:
        found = self._opening.search(text) if self._opening else None
        return (found.start(), found.end(), found.group(1)) if found else None

    def _partial_open_start(self, text: str) -> int:
        start = unclosed_tag_start(text, MAX_OPEN_TAG_CHARS)
        if start == len(text):
            return start
        tail = text[start + 1 :]
        name = re.match(r"[\w.:-]*", tail)
        assert name is not None  # the pattern matches the empty string
        if name.end() == len(tail):
            could_open = any(tool.startswith(name.group()) for tool in self._ctx.tools)
        else:
            could_open = name.group() in self._ctx.tools and tail[name.end()] in " \t\r\n/"
        return start if could_open else len(text)

    def _open_call(self, open_tag: str, name: str) -> CallScanner | None:
        if open_tag.endswith("/>"):
            arguments = coerce_by_schema({}, self._ctx.tools[name].parameters)
            self._ctx.complete_call(name, arguments, open_tag)
            return None
        return _MorphCall(self._ctx, open_tag, self._ctx.tools[name])


class _MorphCall(CallScanner):
    """One call's body, up to the close tag that matches its open tag. Same-name tags
    nested inside it are balanced, and CDATA sections are skipped."""

    def __init__(self, ctx: CallContext, open_tag: str, tool: ToolSpec) -> None:
        self._ctx, self._open_tag, self._tool = ctx, open_tag, tool
        name = re.escape(tool.name)
        self._tags = re.compile(rf"{re.escape(CDATA_START)}|<{name}(?:\s[^<>]*)?/?>|</{name}\s*>")
        self._depth = 1
        self._in_cdata = False
        self._body: list[str] = []
        self._held = ""
        self._arguments = (
            XmlArgumentStream(tool.parameters, tool.name)
            if ctx.mode is ArgumentsMode.INCREMENTAL
            else None
        )
        self._sender = ArgumentSender(ctx)

    def consume(self, text: str) -> str | None:
        text = self._held + text
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
        body = "".join(self._body)
        original = self._open_tag + body + self._held
        complete = not self._held and arguments_are_complete(body)
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
        try:
            arguments = coerce_by_schema(parse_xml_arguments(body, schema), schema)
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
        ctx.complete_call(self._tool.name, arguments, original, streamed=self._sender.call)
        return True
