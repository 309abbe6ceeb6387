"""Meta's Code World Model ("cursor-style" tool tags): a block whose first word is the tool's
name, the rest its arguments as JSON, or a command line:

    <tool: function>
    read_file {"path": "src/app.py"}
    </tool>
    <tool: function>
    terminal find . -name "*.py"
    </tool>

The tag's label is not read. Checked against vLLM's `cwm` tool parser, which wraps any text
that is no JSON as `{"command": text}`: a key the model did not write, so the proxy reads it
so only for a tool whose schema has a `command` string, and keeps the block text otherwise.
Read whole once the block closes (`delimited_call`)."""

from __future__ import annotations

from typing import Any

from ..lenient.call_objects import CallObjectError
from ..lenient.relaxed_json import RelaxedJSONError, RelaxedParseBudget, parse_relaxed_json
from ..lenient.tool_names import DeclaredTools
from ..registry import register
from ..streaming.commit_policy import CallContext, CallScanner
from ..streaming.delimited_call import DelimitedBody, DelimitedCall
from ..streaming.dialect_forms import Dialect, Piece, blanks, literal, open_form, resolve_tool_name

END = "</tool>"
_LABEL = Piece(r"[^>\s]{1,64}", r"[^>\s]{0,64}", first=r"[^>\s]")


def _read(
    tools: DeclaredTools, body: str, _name: str, budget: RelaxedParseBudget
) -> list[tuple[str, dict[str, Any]]]:
    first, _, later = body.strip().partition("\n")
    name, *after = first.split(maxsplit=1) or [""]
    rest = "\n".join(part for part in (*after, later) if part.strip()).strip()
    if not rest:
        return [(name, {})]
    if rest[:1] in ("{", "["):
        try:
            arguments = parse_relaxed_json(rest, complete_only=True, budget=budget)
        except RelaxedJSONError:
            arguments = None
        if isinstance(arguments, dict):
            return [(name, arguments)]
    return [(name, {"command": _command(tools, name, rest)})]


def _command(tools: DeclaredTools, name: str, text: str) -> str:
    """`text` as the `command` argument of the tool `name`, where its schema has one."""
    declared = resolve_tool_name(name, tools)
    schema = tools.parameters[declared] if declared else {}
    command = schema.get("properties", {}).get("command")
    if not isinstance(command, dict) or command.get("type") != "string":
        raise CallObjectError(f"{name!r} takes no command line: its arguments are no JSON object")
    return text


def _call(ctx: CallContext, open_tag: str, name: str) -> CallScanner:
    tools = ctx.tools
    body = DelimitedBody(
        ends=(END,), read=lambda text, tag, budget: _read(tools, text, tag, budget)
    )
    return DelimitedCall(ctx, open_tag, name, body)


@register("cwm")
class Cwm(Dialect):
    forms = (open_form("<tool:", [blanks(), _LABEL, blanks(), literal(">")], _call),)
