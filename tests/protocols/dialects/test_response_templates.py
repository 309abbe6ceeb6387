"""A model's `response_template` (`response_template`): the tool_calls field of the templates
in `template_corpus/` read by their cases in every protocol, both argument modes and four
chunkings; the shapes of public templates compiled; and what a stream cannot read refused,
naming the key and saying why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from corpus_cases import Case, check_alike, corpus
from parser_harness import PROTOCOL_NAMES, run

from protocols import FormatError, template_dialect

FOLDER = Path(__file__).parent / "template_corpus"
DIALECTS = {
    path.stem: template_dialect(path.stem, json.loads(path.read_text("utf-8")))
    for path in FOLDER.glob("*.json")
}
CASES = corpus(FOLDER)


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_response_templates_calls_are_read_in_every_protocol_mode_and_chunking(
    case: Case, protocol: str
) -> None:
    check_alike(case, protocol, dialects=(DIALECTS[case.group],))


def test_every_template_has_cases_and_one_that_stays_text() -> None:
    for name in DIALECTS:
        cases = [case for case in CASES if case.group == name]
        assert len(cases) >= 3, name
        assert any(not case.expects("calls", "morph-xml") for case in cases), name


def _template(**tool_calls: Any) -> dict[str, Any]:
    return {"response_template": {"start_anchor": "<a>", "fields": {"tool_calls": tool_calls}}}


NAMED = {"function": {"name": "{name}", "arguments": "{content}"}}


@pytest.mark.parametrize(
    ("tool_calls", "opens"),
    [
        # Hermes-like (SmolLM3, ERNIE): call objects in literal tags.
        pytest.param(
            {
                "open": "<tc>",
                "close": "</tc>",
                "content": "json",
                "transform": {"function": "{content}"},
            },
            ["<tc>"],
            id="call-objects",
        ),
        # Gemma 4: the name in the pattern, the arguments in its value syntax.
        pytest.param(
            {
                "open_pattern": r"<\|tc>call:(?P<name>\w+)",
                "close": "<tc|>",
                "content": "json",
                "content_args": {"unquoted_keys": True, "string_delims": [["<q>", "<q>"]]},
                "transform": NAMED,
            },
            ["<|tc>"],
            id="value-syntax",
        ),
        # Inkling-like objects named `name` and `args`; several open tags.
        pytest.param(
            {
                "open": ["<do>", "<act>"],
                "close": "</do>",
                "content": "json",
                "transform": {
                    "function": {"name": "{content.name}", "arguments": "{content.args}"}
                },
            },
            ["<do>", "<act>"],
            id="content-paths",
        ),
    ],
)
def test_public_template_shapes_compile_to_their_open_tags(
    tool_calls: dict[str, Any], opens: list[str]
) -> None:
    assert [form.marker for form in template_dialect("t", _template(**tool_calls)).forms] == opens


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_a_templates_format_is_read_only_by_the_parsers_it_is_given_to(protocol: str) -> None:
    text = '<|DO|>[{"tool_name": "get_weather", "parameters": {"city": "Paris"}}]<|/DO|>'
    assert run(protocol, text).call_values == []
    given = run(protocol, text, dialects=(DIALECTS["own-actions"],))
    assert given.call_values == [("get_weather", {"city": "Paris"})]


@pytest.mark.parametrize(
    ("document", "key", "why"),
    [
        pytest.param({"response_template": {"fields": {}}}, "tool_calls", "missing", id="no-calls"),
        pytest.param({"chat_template": "..."}, "fields", "missing", id="no-template"),
        pytest.param(_template(close="</c>", content="json"), "tool_calls", "opens", id="no-open"),
        pytest.param(_template(open="<c>", content="json"), "tool_calls", "close", id="no-close"),
        # gpt-oss: what comes between the name and the message is a pattern, not text.
        pytest.param(
            _template(
                open_pattern=r"<\|channel\|>commentary to=functions\.(?P<name>\w+).*?<\|message\|>",
                close="<|call|>",
                content="json",
                transform=NAMED,
            ),
            "open_pattern",
            "literal text",
            id="pattern-between",
        ),
        pytest.param(
            _template(open="<c>", close_pattern=r"</c>|$", content="json"),
            "close_pattern",
            "literal",
            id="close-pattern",
        ),
        pytest.param(
            _template(open="<c>", close="</c>", content="json", transform=NAMED),
            "transform",
            "lacks",
            id="name-not-captured",
        ),
        pytest.param(
            _template(
                open="<c>",
                close="</c>",
                content="json",
                transform={"function": {"name": "{content.tool}", "arguments": "{content.body}"}},
            ),
            "transform",
            "no shape",
            id="unknown-keys",
        ),
        pytest.param(
            _template(open="<c>", close="</c>", content="kv-lines"),
            "content",
            "json",
            id="kv-lines",
        ),
        pytest.param(
            _template(
                open_pattern=r"<c name=(?P<name>\w+)>",
                close="</c>",
                content="xml-inline",
                content_args={"tag_pattern": r"<(?P<key>\w+)>"},
                transform=NAMED,
            ),
            "tag_pattern",
            "groups",
            id="no-value-group",
        ),
    ],
)
def test_a_template_that_cannot_be_streamed_is_refused_saying_why(
    document: dict[str, Any], key: str, why: str
) -> None:
    with pytest.raises(FormatError) as raised:
        template_dialect("bad", document)
    assert raised.value.key.endswith(key)
    assert why in raised.value.problem
