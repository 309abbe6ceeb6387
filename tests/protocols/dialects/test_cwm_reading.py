"""CWM's blocks: a command line (no JSON after the tool's name) is read as the `command`
argument only for a tool whose schema has one, since the key is not what the model wrote;
for any other tool the block stays text, with an error record."""

from __future__ import annotations

import pytest
from parser_harness import PROTOCOL_NAMES, TOOLS, check_contract, run

from protocols import ErrorKind, ToolSpec

TERMINAL = ToolSpec(
    "terminal",
    "Run a shell command.",
    {"type": "object", "properties": {"command": {"type": "string"}}},
)
COMMAND = '<tool: function>\nterminal find . -name "*.py" |\n  xargs grep -n "def main"\n</tool>'


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_a_command_line_is_the_command_of_a_tool_that_takes_one(protocol: str) -> None:
    for chunks in (None, 1, 7):
        result = run(protocol, COMMAND, chunks=chunks, tools=(*TOOLS, TERMINAL))
        check_contract(result)
        command = 'find . -name "*.py" |\n  xargs grep -n "def main"'
        assert result.call_values == [("terminal", {"command": command})]


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_a_command_line_for_a_tool_without_a_command_stays_text(protocol: str) -> None:
    text = COMMAND.replace("terminal", "search")
    result = run(protocol, text, tools=(*TOOLS, TERMINAL))
    check_contract(result)
    assert (result.call_values, result.text) == ([], text)
    assert result.error_kinds == [ErrorKind.MALFORMED_JSON]
