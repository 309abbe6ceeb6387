"""Morph-XML arguments as they stream: canonical JSON fragments of a call's arguments,
read from its body as it arrives, with the layout trim RXML applies at the end."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .coerce import coerce_by_schema, declared_types, is_string_schema
from .json_stream import canonical_string
from .relaxed_xml import RelaxedXMLError, parse_xml_arguments
from .streaming import partial_token_start, unclosed_tag_start

# Attributes models put on a tool's tag (`<search id="1">`) are short; a `<name` followed by
# more than this without `>` is prose, and holding it back longer would stall the text.
MAX_OPEN_TAG_CHARS = 256
CDATA_START, CDATA_END = "<![CDATA[", "]]>"

_ARGUMENT_TAG = re.compile(r"<(/?)([^\W\d][\w.:-]*)(?:\s[^<>]*)?(/?)>")
# Scalars are final once their tag closes; arrays may still grow by a repeated tag.
_FINAL_AT_CLOSE = frozenset({"integer", "number", "boolean", "null", "object"})


class XmlArgumentStream:
    """Canonical JSON fragments of a Morph-XML call's arguments, as its body streams in:
    a string argument's text (CDATA sections included) as it arrives, a scalar or object
    once its tag closes. Anything it cannot be sure of (a repeated tag, an array, markup
    inside a non-string value) stops it; the call's arguments are then completed from the
    final parse."""

    def __init__(self, schema: Mapping[str, Any], tool_name: str) -> None:
        self._tool_name = tool_name
        properties = schema.get("properties")
        self._properties: Mapping[str, Any] = properties if isinstance(properties, Mapping) else {}
        self.healthy = True
        self.started = False
        self._pending = ""
        self._seen: set[str] = set()
        self._key: str | None = None
        self._depth = 0
        self._text: _LayoutTrim | None = None  # set while a string argument streams
        self._in_cdata = False
        self._raw: list[str] = []

    @property
    def name(self) -> str | None:
        return self._tool_name if self.started else None

    def feed(self, text: str) -> list[str]:
        out: list[str] = []
        text = self._pending + text
        self._pending = ""
        position = 0
        while self.healthy:
            if self._in_cdata:
                position = self._cdata(text, position, out)
                if self._in_cdata:
                    break
                continue
            found = _ARGUMENT_TAG.search(text, position)
            end = found.start() if found else len(text)
            markup = text.find("<!", position, end) if self._key is not None else -1
            if markup != -1:
                if self._text is None or not text.startswith(CDATA_START, markup):
                    self.healthy = False  # a comment, or CDATA in a non-string value
                    break
                self._content(text[position:markup], out)
                out.append(canonical_string(self._text.enter_cdata()))
                self._in_cdata = True
                position = markup + len(CDATA_START)
                continue
            if found is None:
                bracket = unclosed_tag_start(text, MAX_OPEN_TAG_CHARS, position)
                end, self._pending = bracket, text[bracket:]
                self._content(text[position:end], out)
                break
            self._content(text[position:end], out)
            self._tag(found, out)
            position = found.end()
        return out

    def _cdata(self, text: str, position: int, out: list[str]) -> int:
        """Send a CDATA section's text as it is; returns where reading goes on."""
        end = text.find(CDATA_END, position)
        if end == -1:
            safe = position + partial_token_start(text[position:], (CDATA_END,))
            out.append(canonical_string(text[position:safe]))
            self._pending = text[safe:]
            return len(text)
        out.append(canonical_string(text[position:end]))
        self._in_cdata = False
        return end + len(CDATA_END)

    def _content(self, text: str, out: list[str]) -> None:
        if self._text is not None:
            out.append(canonical_string(self._text.feed(text)))
        elif self._key is not None:
            self._raw.append(text)

    def _tag(self, tag: re.Match[str], out: list[str]) -> None:
        closing, name, self_closing = tag.group(1), tag.group(2), tag.group(3)
        if self._key is None:
            if not closing:
                self._open(name, tag.group(), bool(self_closing), out)
            return
        if name == self._key and not self_closing:
            self._depth += -1 if closing else 1
            if self._depth == 0:
                self._close(out)
                return
        self._content(tag.group(), out)

    def _open(self, key: str, tag: str, self_closing: bool, out: list[str]) -> None:
        schema = self._properties.get(key)
        if key in self._seen or not isinstance(schema, Mapping):
            self.healthy = False
            return
        is_string = is_string_schema(schema)
        if not is_string and not _FINAL_AT_CLOSE.intersection(declared_types(schema)):
            self.healthy = False
            return
        self._seen.add(key)
        out.append(("{" if not self.started else ", ") + f'"{canonical_string(key)}": ')
        self.started = True
        self._key, self._depth, self._raw = key, 1, [tag]
        if is_string:
            self._text = _LayoutTrim()
            out.append('"')
        if self_closing:
            self._close(out)

    def _close(self, out: list[str]) -> None:
        key, self._key = self._key or "", None
        if self._text is not None:
            out.append(canonical_string(self._text.finish()) + '"')
            self._text = None
            return
        element = "".join(self._raw) + f"</{key}>"
        schema = self._properties[key]
        try:
            value = parse_xml_arguments(element, {"properties": {key: schema}})[key]
        except (RelaxedXMLError, KeyError):
            self.healthy = False
            return
        out.append(json.dumps(coerce_by_schema(value, schema), ensure_ascii=False))


class _LayoutTrim:
    """Streams a string argument's text with the layout trim `parse_xml_arguments` applies
    at the end: a one-line value is stripped; a multi-line one loses a blank first line and
    the indentation after its last line break. So the first line is held until a line break
    shows the value is multi-line, and trailing whitespace until text follows it."""

    def __init__(self) -> None:
        self._cdata_seen = False
        self._head: list[str] | None = []  # the first line(s), while undecided
        self._head_has_text = False
        self._head_broken = False  # a line break followed the first text
        self._whitespace = ""

    def feed(self, text: str) -> str:
        if self._head is not None:
            self._head.append(text)
            if not self._shows_multiline(text):
                return ""
            head = "".join(self._head)
            self._head = None
            core = head.lstrip()
            leading = head[: len(head) - len(core)]
            text = leading[leading.find("\n") + 1 :] + core
        body = text.rstrip()
        if not body:
            self._whitespace += text
            return ""
        out = self._whitespace + body
        self._whitespace = text[len(body) :]
        return out

    def _shows_multiline(self, text: str) -> bool:
        """Whether text now follows a line break that followed the first text."""
        if not self._head_has_text:
            text = text.lstrip()
            if not text:
                return False
            self._head_has_text = True
        if self._head_broken:
            return bool(text.strip())
        line_break = text.find("\n")
        if line_break == -1:
            return False
        self._head_broken = True
        return bool(text[line_break + 1 :].strip())

    def enter_cdata(self) -> str:
        """A CDATA section begins. From here on the value is kept as written, except the
        whitespace before its first and after its last section: what was held is due."""
        self._cdata_seen = True
        if self._head is not None:
            held, self._head = "".join(self._head).lstrip(), None
        else:
            held = self._whitespace
        self._whitespace = ""
        return held

    def finish(self) -> str:
        if self._cdata_seen:
            return ""
        if self._head is not None:
            return "".join(self._head).strip()
        trailing = self._whitespace
        return trailing[: trailing.rfind("\n") + 1] if "\n" in trailing else trailing
