"""The routes file's fields that say what an upstream does itself: `native_tools` and
`structured_output`, booleans that default to the settings' values; and every field checked
as the file is loaded, a value the proxy cannot use named with what it accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.upstream import RoutesFileError, Target, load_routes

DEFAULT = Target(
    base_url="http://127.0.0.1:8001/v1",
    model=None,
    protocol_name="json-mix",
    api_key=None,
    native_tools=False,
    structured_output=True,
)


def routes(tmp_path: Path, text: str) -> dict[str, Target]:
    path = tmp_path / "routes.toml"
    path.write_text(text)
    return load_routes(path, DEFAULT)


def test_a_route_says_what_its_upstream_does_and_takes_the_rest_from_the_default(
    tmp_path: Path,
) -> None:
    loaded = routes(tmp_path, "[routes.native]\nnative_tools = true\n[routes.plain]\n")

    assert (loaded["native"].native_tools, loaded["native"].structured_output) == (True, True)
    assert (loaded["plain"].native_tools, loaded["plain"].structured_output) == (False, True)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        pytest.param('native_tools = "yes"', "native_tools must be true or false", id="bool"),
        pytest.param("model = 3", "model must be a string", id="string"),
        pytest.param(
            'protocol = "xml"',
            "route 'odd': protocol = 'xml': not a protocol; accepted: ",
            id="protocol",
        ),
        pytest.param(
            'base_url = "gpu-box:8001/v1"',
            "route 'odd': base_url = 'gpu-box:8001/v1': not an http:// or https:// URL",
            id="url-without-scheme",
        ),
        pytest.param(
            'base_url = "http://gpu-box:8001/v1/chat/completions/"',
            r"ends in the endpoint /chat/completions, .* \(http://gpu-box:8001/v1\)",
            id="url-of-an-endpoint",
        ),
        pytest.param(
            'format = {open = "<c>", arguments = "yaml"}',
            r"route 'odd': format\.arguments: 'yaml' is none of json, key-value",
            id="format",
        ),
        pytest.param(
            'format = {open = "<c {tool}>", arguments = "json"}',
            r"route 'odd': format\.open: \{tool\} is no placeholder of an open tag",
            id="format-placeholder",
        ),
        pytest.param(
            'response_schema = "missing.json"',
            r"route 'odd': response_schema: '.*missing\.json' cannot be read",
            id="schema-file",
        ),
        pytest.param(
            'response_schema = {properties = {tool_calls = {x-regex-iterator = "(.*?)</c>"}}}',
            r"route 'odd': response_schema\.properties\.tool_calls\.x-regex-iterator: a call "
            "must open with literal text",
            id="schema-unstreamable",
        ),
        pytest.param(
            'response_template = "missing.json"',
            r"route 'odd': response_template: '.*missing\.json' cannot be read",
            id="template-file",
        ),
        pytest.param(
            'response_template = {fields = {tool_calls = {open = "<c>", content = "json"}}}',
            r"route 'odd': response_template\.fields\.tool_calls: has no close",
            id="template-unstreamable",
        ),
        pytest.param("format = 3", "format must be a table", id="format-type"),
        pytest.param(
            'modle = "x"',
            r"unknown fields \['modle'\]; accepted: base_url, model, protocol",
            id="unknown-field",
        ),
    ],
)
def test_a_field_the_proxy_cannot_use_stops_it(tmp_path: Path, entry: str, message: str) -> None:
    with pytest.raises(RoutesFileError, match=message):
        routes(tmp_path, f"[routes.odd]\n{entry}\n")
