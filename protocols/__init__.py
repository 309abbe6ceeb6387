"""Sans-IO tool-call text protocols: render tools into prompts, parse model text into calls."""

import importlib

from .base import (
    SMALL_CALL_CHARS,
    ArgumentsMode,
    ParserOptions,
    Protocol,
    Segment,
    StreamParser,
    UnknownProtocolError,
    UnknownTools,
    get_protocol,
    protocol_names,
)
from .formats import (  # noqa: F401  (registers the protocols)
    json_mix,
    morph_xml,
    qwen3_coder,
)
from .formats.forced_call import (
    ForcedReply,
    forced_call_schema,
    read_forced_call,
    render_forced_call_correction,
    render_forced_call_prompt,
)
from .formats.free_form import FREE_FORM_INPUT, FreeFormInputStream, free_form_input, free_form_tool
from .lenient.relaxed_json import RelaxedParseBudget, nested_deeper_than, parse_relaxed_json
from .lenient.schema_check import CheckBudget, SchemaCheck, argument_problems
from .parts import (
    ErrorKind,
    OnError,
    ParseError,
    Part,
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
)
from .quoted_lines import QuotedLines
from .streaming.commit_policy import new_call_id
from .streaming.described_format import FormatError, described_dialect
from .streaming.dialect_forms import DIALECT_MODULES
from .streaming.response_schema import schema_dialect
from .streaming.response_template import template_dialect
from .streaming.think_blocks import ThinkBlocks

DIALECT_MODULES.importer = lambda: importlib.import_module(".dialects", __name__)

__all__ = [
    "FREE_FORM_INPUT",
    "SMALL_CALL_CHARS",
    "ArgumentsMode",
    "CheckBudget",
    "ErrorKind",
    "ForcedReply",
    "FormatError",
    "FreeFormInputStream",
    "OnError",
    "ParseError",
    "ParserOptions",
    "Part",
    "Protocol",
    "QuotedLines",
    "RelaxedParseBudget",
    "SchemaCheck",
    "Segment",
    "StreamParser",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ThinkBlocks",
    "ThinkEnd",
    "ThinkStart",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallStart",
    "ToolCallUnfinished",
    "ToolSpec",
    "UnknownProtocolError",
    "UnknownTools",
    "argument_problems",
    "described_dialect",
    "forced_call_schema",
    "free_form_input",
    "free_form_tool",
    "get_protocol",
    "nested_deeper_than",
    "new_call_id",
    "parse_relaxed_json",
    "protocol_names",
    "read_forced_call",
    "render_forced_call_correction",
    "render_forced_call_prompt",
    "schema_dialect",
    "template_dialect",
]
