"""MiroThinker's MCP call names its server and its tool apart; MCP clients (Roo Code, Cline)
declare such a tool as `server__tool`. The call is made to the tool as declared: under its
server where it is declared so, by its own name where that is how it is declared."""

from __future__ import annotations

import pytest
from parser_harness import PROTOCOL_NAMES, STRING, check_contract, run

from protocols import ToolSpec

CALL = (
    "<use_mcp_tool>\n<server_name>weather</server_name>\n<tool_name>get_forecast</tool_name>\n"
    '<arguments>\n{"city": "Paris"}\n</arguments>\n</use_mcp_tool>'
)
SCHEMA = {"type": "object", "properties": {"city": STRING}}


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("declared", ["weather__get_forecast", "get_forecast"])
def test_an_mcp_call_is_made_to_the_tool_as_declared(protocol: str, declared: str) -> None:
    tools = (ToolSpec(declared, "The forecast.", SCHEMA),)
    for chunks in (None, 1, 7):
        result = run(protocol, CALL, chunks=chunks, tools=tools)
        check_contract(result)
        assert result.call_values == [(declared, {"city": "Paris"})]


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_an_mcp_call_under_another_server_is_not_that_servers_tool(protocol: str) -> None:
    tools = (ToolSpec("calendar__get_forecast", "Another server's tool.", SCHEMA),)
    result = run(protocol, CALL, tools=tools)
    check_contract(result)
    assert (result.call_values, result.text) == ([], CALL)
