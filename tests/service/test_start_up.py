"""A worker's start imports what a request without tools needs, and leaves the rest to the
first request that needs it: the dialects with the first parser, jsonschema with the first
call checked against its schema. Run in fresh processes, as a worker starts."""

from __future__ import annotations

import json
import subprocess
import sys

BUILD_APP = (
    "from service.app import create_app\n"
    "from service.settings import Settings\n"
    "create_app(Settings(upstream_base_url='http://127.0.0.1:9/v1'))\n"
)
LATER = ("protocols.dialects", "jsonschema", "referencing")


def loaded_after(code: str) -> dict[str, bool]:
    """Which of LATER a fresh process has imported once `code` has run."""
    report = f"import sys, json\nprint(json.dumps({{m: m in sys.modules for m in {LATER!r}}}))\n"
    ran = subprocess.run(
        [sys.executable, "-c", code + report], capture_output=True, text=True, check=True
    )
    return dict(json.loads(ran.stdout.splitlines()[-1]))


def test_a_worker_starts_without_the_dialects_or_jsonschema() -> None:
    assert loaded_after(BUILD_APP) == dict.fromkeys(LATER, False)


def test_the_first_parser_finds_a_dialects_call_and_the_first_check_runs() -> None:
    """Mistral's `[TOOL_CALLS]` is no part of json-mix: only a registered dialect reads it."""
    code = BUILD_APP + (
        "from protocols import ToolSpec, argument_problems, get_protocol\n"
        "tool = ToolSpec('get_weather', parameters={'type': 'object',"
        " 'properties': {'city': {'type': 'string'}}})\n"
        "parts = get_protocol('json-mix').parse("
        '\'[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]\','
        " [tool])\n"
        "[call] = [part for part in parts if type(part).__name__ == 'ToolCall']\n"
        "assert call.input == {'city': 'Paris'}, parts\n"
        "assert argument_problems({'city': 5}, tool.parameters) == "
        "[\"city: 5 is not of type 'string'\"]\n"
    )

    assert loaded_after(code) == dict.fromkeys(LATER, True)
