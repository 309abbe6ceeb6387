"""Morph-XML arguments as they stream: canonical JSON fragments of a call's arguments,
read from its body as it arrives, with the layout rule RXML applies at the end."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from ..lenient.coerce import coerce_by_schema, declared_types, is_string_schema
from ..lenient.json_text import json_text
from ..lenient.relaxed_json import RelaxedParseBudget
from ..lenient.xml_values import RelaxedXMLError, ValueLayout, parse_xml_value
from .json_stream import canonical_string
from .marker_scan import partial_token_start, unclosed_tag_start

# Attributes models put on a tool's tag (`<search id="1">`) are short; a `<name` followed by
# more than this without `>` is prose, and holding it back longer would stall the text.
MAX_OPEN_TAG_CHARS = 256
CDATA_START, CDATA_END = "<![CDATA[", "]]>"

_ARGUMENT_TAG = re.compile(r"<(/?)([^\W\d][\w.:-]*)(?:\s[^<>]*)?(/?)>")
# Patterns for parameter names kept compiled: the parameters of the tools in use fit many
# times over.
MAX_CACHED_PATTERNS = 1024
# Scalars are final once their tag closes; arrays may still grow by a repeated tag.
_FINAL_AT_CLOSE = frozenset({"integer", "number", "boolean", "null", "object"})


@functools.lru_cache(maxsize=MAX_CACHED_PATTERNS)
def _same_name_tags(key: str) -> re.Pattern[str]:
    """`_ARGUMENT_TAG` for one name (its groups alike). Only declared parameter names get
    here, so the cache holds the parameters of the tools in use."""
    return re.compile(rf"<(/?)({re.escape(key)})(?:\s[^<>]*)?(/?)>")


class XmlArgumentStream:
    """Canonical JSON fragments of a Morph-XML call's arguments, as its body streams in:
    a string argument's text as it arrives, a scalar or object once its tag closes. A
    string that begins with a CDATA section is taken to be wrapped whole by CDATA (markers
    dropped); text after its last section stops the stream. Anything it cannot be sure of
    (a repeated tag, an array, markup inside a non-string value) stops it; the call's
    arguments are then completed from the final parse."""

    def __init__(
        self, schema: Mapping[str, Any], tool_name: str, budget: RelaxedParseBudget
    ) -> None:
        self._tool_name = tool_name
        self._budget = budget  # what following arguments, and coercing them, is charged to
        properties = schema.get("properties")
        self._properties: Mapping[str, Any] = properties if isinstance(properties, Mapping) else {}
        self.healthy = True
        self.started = False
        self._pending = ""
        self._seen: set[str] = set()
        self._key: str | None = None
        self._depth = 0
        self._text: ValueLayout | None = None  # set while a string argument streams
        self._in_cdata = False
        self._whole_cdata = False  # the string argument is CDATA sections alone, so far
        # A string argument's leading whitespace, held until it shows whether CDATA wraps
        # the value (then it is layout) or text follows (then the layout rule decides).
        self._blank_head: str | None = None
        self._raw: list[str] = []
        # Each non-string argument's (name, raw inner text) and the value it parsed to, so the final
        # parse need not parse it again.
        self.parsed_values: dict[tuple[str, str], Any] = {}

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
            # Inside an argument only its own name's tags matter (they nest); skipping the
            # rest at C speed keeps markup-heavy values (HTML, nested objects) cheap.
            tags = _ARGUMENT_TAG if self._key is None else _same_name_tags(self._key)
            found = tags.search(text, position)
            end = found.start() if found else len(text)
            markup = text.find("<!", position, end) if self._key is not None else -1
            if markup != -1:
                if self._text is None or not text.startswith(CDATA_START, markup):
                    self.healthy = False  # a comment, or CDATA in a non-string value
                    break
                self._content(text[position:markup], out)
                if self._blank_head is not None:
                    self._whole_cdata, self._blank_head = True, None
                elif self._whole_cdata:
                    self.healthy = False  # text between sections: the markers are text
                    break
                else:
                    self._content(CDATA_START, out)
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
        """Send a CDATA section's text (as it is when sections wrap the value, else with its
        markers, as value text); returns where reading goes on."""
        end = text.find(CDATA_END, position)
        if end == -1:
            safe = position + partial_token_start(text[position:], (CDATA_END,))
            self._cdata_text(text[position:safe], out)
            self._pending = text[safe:]
            return len(text)
        self._cdata_text(text[position:end], out)
        if not self._whole_cdata:
            self._content(CDATA_END, out)
        self._in_cdata = False
        return end + len(CDATA_END)

    def _cdata_text(self, text: str, out: list[str]) -> None:
        if self._whole_cdata:
            out.append(canonical_string(text))
        else:
            self._content(text, out)

    def _content(self, text: str, out: list[str]) -> None:
        if self._text is None:
            if self._key is not None:
                self._raw.append(text)
        elif self._blank_head is not None and not text.strip():
            self._blank_head += text
        elif not self._whole_cdata:
            if self._blank_head is not None:
                text, self._blank_head = self._blank_head + text, None
            out.append(canonical_string(self._text.feed(text)))
        elif text.strip():
            self.healthy = False  # text after the sections: the markers are part of the value

    def _tag(self, tag: re.Match[str], out: list[str]) -> None:
        closing, name, self_closing = tag.group(1), tag.group(2), tag.group(3)
        if self._key is None:
            if closing:
                return
            if not self._budget.spend_following():
                self.healthy = False  # the call is read whole at its end instead
                return
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
            self._text, self._whole_cdata, self._blank_head = ValueLayout(), False, ""
            out.append('"')
        if self_closing:
            self._close(out)

    def _close(self, out: list[str]) -> None:
        key, self._key = self._key or "", None
        if self._text is not None:
            rest = "" if self._whole_cdata else self._text.feed(self._blank_head or "")
            rest += "" if self._whole_cdata else self._text.finish()
            out.append(canonical_string(rest) + '"')
            self._text = None
            return
        inner = "".join(self._raw[1:])
        schema = self._properties[key]
        try:
            value = parse_xml_value(inner, schema)
        except RelaxedXMLError:
            self.healthy = False
            return
        self.parsed_values[key, inner] = value
        out.append(json_text(coerce_by_schema(value, schema, self._budget)))
