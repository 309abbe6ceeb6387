"""Formats described as data (`described_format`): the ones a routes file writes for a model
of one's own (`described_corpus/formats.toml`), each read by its cases in every protocol,
both argument modes and four chunkings, alike whole and streamed; and what a description the
proxy cannot use is told, naming its key."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from corpus_cases import Case, check_alike, corpus
from hypothesis import given, settings
from hypothesis import strategies as st
from parser_harness import MODES, PROTOCOL_NAMES, check_contract, run

from protocols import ArgumentsMode, FormatError, described_dialect, schema_dialect

FOLDER = Path(__file__).parent / "described_corpus"
FORMATS: dict[str, Any] = tomllib.loads((FOLDER / "formats.toml").read_text("utf-8"))["formats"]
DIALECTS = {name: described_dialect(name, description) for name, description in FORMATS.items()}
CASES = corpus(FOLDER)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_described_format_is_read_in_every_protocol_mode_and_chunking(
    case: Case, protocol: str
) -> None:
    check_alike(case, protocol, dialects=(DIALECTS[case.group],))


def test_every_described_format_has_cases_and_one_that_stays_text() -> None:
    for name in FORMATS:
        cases = [case for case in CASES if case.group == name]
        assert len(cases) >= 3, name
        assert any(not case.expects("calls", "morph-xml") for case in cases), name


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_a_routes_format_is_read_only_by_the_parsers_it_is_given_to(protocol: str) -> None:
    text = '<call name="get_weather"><arg name="city">Paris</arg></call>'
    assert run(protocol, text).call_values == []
    given = run(protocol, text, dialects=(DIALECTS["own-tags"],))
    assert given.call_values == [("get_weather", {"city": "Paris"})]


TAGS = {"open": '<c n="{name}">', "arguments": "key-value", "close": "</c>"}


@pytest.mark.parametrize(
    ("description", "key"),
    [
        pytest.param({"arguments": "json"}, "open", id="no-open"),
        pytest.param({"open": "<c>"}, "arguments", id="no-arguments"),
        pytest.param({"open": "<c>", "arguments": "yaml"}, "arguments", id="unknown-arguments"),
        pytest.param({**TAGS, "colour": "red"}, "colour", id="unknown-key"),
        pytest.param({**TAGS, "open": "{name}>"}, "open", id="open-begins-with-a-name"),
        pytest.param({**TAGS, "open": "<c {tool}>"}, "open", id="unknown-placeholder"),
        pytest.param({**TAGS, "open": "<c {?x>"}, "open", id="optional-never-closed"),
        pytest.param({**TAGS, "open": '<c n="{name}'}, "open", id="name-ends-the-tag"),
        pytest.param(TAGS, "key_value", id="key-value-without-its-template"),
        pytest.param({**TAGS, "key_value": "<k>{key}</k>"}, "key_value", id="no-value"),
        pytest.param({**TAGS, "key_value": "<k>{key}</k>{value}"}, "key_value", id="value-last"),
        pytest.param({**TAGS, "key_value": "<{key}>{value}</>", "close": 3}, "close", id="close"),
        pytest.param(
            {
                "open": "<cs>",
                "arguments": "key-value",
                "close": "</cs>",
                "key_value": "<{key}>{value}</>",
            },
            "call",
            id="section-without-its-call",
        ),
        pytest.param(
            {**TAGS, "arguments": "python", "close_optional": "yes"}, "close_optional", id="flag"
        ),
        pytest.param({"open": "<c>", "arguments": "json", "forms": []}, "forms", id="no-forms"),
    ],
)
def test_a_description_the_proxy_cannot_use_names_its_key(
    description: dict[str, Any], key: str
) -> None:
    with pytest.raises(FormatError) as raised:
        described_dialect("bad", description)
    assert raised.value.key == key


SCHEMAS = Path(__file__).parent / "schema_corpus"
SCHEMA_DIALECTS = {
    path.stem: schema_dialect(path.stem, json.loads(path.read_text("utf-8")))
    for path in SCHEMAS.glob("*.json")
}
SCHEMA_CASES = corpus(SCHEMAS)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("case", SCHEMA_CASES, ids=[case.id for case in SCHEMA_CASES])
def test_a_response_schemas_calls_are_read_in_every_protocol_mode_and_chunking(
    case: Case, protocol: str
) -> None:
    check_alike(case, protocol, dialects=(SCHEMA_DIALECTS[case.group],))


def _schema(tool_calls: dict[str, Any]) -> dict[str, Any]:
    return {"response_schema": {"type": "object", "properties": {"tool_calls": tool_calls}}}


ITEM = {
    "type": "object",
    "properties": {"name": {"x-regex": "^(\\w+)"}, "arguments": {"x-parser": "json"}},
}


@pytest.mark.parametrize(
    ("document", "key", "why"),
    [
        pytest.param(
            {"response_schema": {"properties": {}}}, "tool_calls", "missing", id="no-calls"
        ),
        pytest.param(_schema({"items": ITEM}), "tool_calls", "opens", id="no-regex"),
        pytest.param(
            _schema({"x-regex-iterator": "(.*?)</c>", "items": ITEM}),
            "x-regex-iterator",
            "open with",
            id="no-open",
        ),
        pytest.param(
            _schema({"x-regex-iterator": "<c>(.*?)", "items": ITEM}),
            "x-regex-iterator",
            "close with",
            id="no-close",
        ),
        pytest.param(
            _schema({"x-regex-iterator": "<c>(.*)</c>", "items": ITEM}),
            "x-regex-iterator",
            "as little",
            id="greedy",
        ),
        pytest.param(
            _schema(
                {
                    "x-regex-iterator": "<c>(.*?)</c>",
                    "items": {"properties": {"name": {}, "arguments": {}}},
                }
            ),
            "name",
            "no x-regex",
            id="no-name-regex",
        ),
        pytest.param(
            _schema(
                {"x-regex-iterator": "<c>(.*?)</c>", "items": {**ITEM, "x-regex-substitutions": []}}
            ),
            "x-regex-substitutions",
            "not read",
            id="substitutions",
        ),
        pytest.param(
            _schema(
                {
                    "x-regex-iterator": "<c>(.*?)</c>",
                    "items": {"properties": {"name": {"x-regex": "("}, "arguments": {}}},
                }
            ),
            "x-regex",
            "no regular expression",
            id="bad-regex",
        ),
    ],
)
def test_a_schema_that_cannot_be_streamed_is_refused_saying_why(
    document: dict[str, Any], key: str, why: str
) -> None:
    with pytest.raises(FormatError) as raised:
        schema_dialect("bad", document)
    assert raised.value.key.endswith(key)
    assert why in raised.value.problem


OWN = {**DIALECTS, **SCHEMA_DIALECTS}


@settings(max_examples=200, deadline=None)
@given(data=st.data(), mode=st.sampled_from(MODES))
def test_a_format_given_as_data_reads_alike_however_its_stream_is_cut(
    data: st.DataObject, mode: ArgumentsMode
) -> None:
    case = data.draw(st.sampled_from([*CASES, *SCHEMA_CASES]))
    protocol = data.draw(st.sampled_from(PROTOCOL_NAMES))
    cuts = data.draw(st.lists(st.integers(0, len(case.output)), max_size=12))
    own = (OWN[case.group],)
    chunked = run(protocol, case.output, chunks=cuts, mode=mode, dialects=own)
    check_contract(chunked)
    assert chunked.signature() == run(protocol, case.output, mode=mode, dialects=own).signature()
