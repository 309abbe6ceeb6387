"""The parser contract, for every protocol: nothing lost, the same calls and text for any
chunking, well-formed part sequences in both argument modes, no exceptions on any text,
text released as soon as it cannot become a tag, think blocks never parsed for calls,
linear work on long outputs, and call segments that point into the text."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parser_harness import (
    CHUNKINGS,
    GROWTH,
    MAX_WORK_RATIO,
    MODES,
    PROTOCOL_NAMES,
    TOOLS,
    Chunks,
    Result,
    check_contract,
    cut_off_outputs,
    fragments,
    rendered_outputs,
    run,
    sample_call,
    text_handed_over,
)

from protocols import (
    ArgumentsMode,
    ParserOptions,
    TextDelta,
    ThinkEnd,
    ThinkStart,
    ToolCall,
    get_protocol,
)

JSON_CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
XML_CALL = "<get_weather><city>Paris</city></get_weather>"
QWEN_CALL = (
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
    "</tool_call>"
)
CALLS = {protocol: sample_call(protocol) for protocol in PROTOCOL_NAMES}

# Every registered protocol's own renderings, then (for the protocols written so far)
# outputs of every shape each protocol meets, by name: well-formed ones (calls and text that
# parse without an error in either mode) and broken or cut-off ones.
WELL_FORMED: dict[str, dict[str, str]] = {
    "json-mix": {
        "plain-text": "Just text, no calls at all. a < b > c",
        "calls-amid-text": "Before " + JSON_CALL + " between " + JSON_CALL + " after",
        "layout": '<tool_call>\n{"name": "search", "arguments": {"query": "x", "limit": 3}}\n'
        "</tool_call>",
        "relaxed": "<tool_call>{'name': 'read_file', arguments: {path: 'a.py',},}</tool_call>",
        "array": '<tool_call>[{"name": "get_time"}, {"name": "read_file", "arguments": "{}"}]'
        "</tool_call>",
        "two-objects": '<tool_call>{"name": "get_time"}\n{"name": "get_time"}</tool_call>',
        "fence": '<tool_call>```json\n{"name": "get_time"}\n```</tool_call>',
        "wrong-close": '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
        "</tool_response>",
        "second-start": '<tool_call>{"name": "get_time"}\n' + JSON_CALL,
        "escapes": '<tool_call>{"name": "write_file", "arguments": {"path": "a", "content":'
        ' "<tool_call> \\"q\\" \\u00e9 \\ud83d\\ude00"}}</tool_call>',
        "unknown-tool": '<tool_call>{"name": "launch_rocket", "arguments": {"when": "now"}}'
        "</tool_call>",
        "think": "<think>maybe " + JSON_CALL + "</think>" + JSON_CALL,
        "think-unclosed": "<think>never closed " + JSON_CALL,
        "no-end-tag": '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}',
        "partial-tag-at-end": "Hello <tool_",
        "unicode": '東京 😀 e\u0301 <tool_call>{"name": "get_weather", "arguments":'
        ' {"city": "東京"}}</tool_call> 😀',
    },
    "morph-xml": {
        "plain-text": "Just text, no calls at all. a < b > c <div>x</div>",
        "calls-amid-text": "Before " + XML_CALL + " between " + XML_CALL + " after",
        "layout": '<search id="1">\n  <query>a < b & c</query>\n  <limit>3</limit>\n</search>',
        "empty-calls": "<get_time/> <get_time /> <get_time></get_time>",
        "coerced": "<configure><count>3</count><tags>a</tags><tags>b</tags><sizes><item>1</item>"
        "<item>2</item></sizes><options><depth>1</depth></options></configure>",
        "cdata": "<write_file><path>a</path><content><![CDATA[x </write_file> y]]></content>"
        "</write_file>",
        "nested-same-name": "<write_file><path>a</path><content><write_file>in</write_file>"
        "</content></write_file>",
        "multi-line": "<write_file><path>a</path><content>\n  line 1\n  line 2\n  </content>"
        "</write_file>",
        "think": "<think>maybe " + XML_CALL + "</think>" + XML_CALL,
        "think-unclosed": "<think>never closed " + XML_CALL,
        "no-end-tag": "<search><query>x</query>",
        "partial-tag-at-end": "Use <read_fi",
        "undeclared-tool": "<launch_rocket><when>now</when></launch_rocket>",
        "unicode": "東京 😀 e\u0301 <get_weather><city>東京 😀</city></get_weather> 😀",
    },
    "qwen3-coder": {
        "plain-text": "Just text, no calls at all. a < b > c <function> <tool_call> x",
        "calls-amid-text": "Before " + QWEN_CALL + " between " + QWEN_CALL + " after",
        "unwrapped": "<function=search>\n<parameter=query>\na < b & c\n</parameter>\n"
        "<parameter=limit>\n3\n</parameter>\n</function> done",
        "inline-values": "<tool_call><function=search><parameter=query>x</parameter>"
        "<parameter=limit>3</parameter></function></tool_call>",
        "coerced": "<function=configure>\n<parameter=count>\n3\n</parameter>\n"
        '<parameter=tags>\n["a", "b"]\n</parameter>\n<parameter=options>\n{"depth": 1}\n'
        "</parameter>\n</function>",
        "raw-markup-value": "<tool_call>\n<function=write_file>\n<parameter=content>\n"
        "<div>x</div> &amp; </write_file> <tool_call> </tool_call>\n\n</parameter>\n"
        "</function>\n</tool_call>",
        "missing-parameter-ends": "<function=write_file>\n<parameter=path>\na\n"
        "<parameter=content>\nb\n</function>",
        "no-arguments": "<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
        "think": "<think>maybe " + QWEN_CALL + "</think>" + QWEN_CALL,
        "think-unclosed": "<think>never closed " + QWEN_CALL,
        "no-end-tag": "<tool_call>\n<function=search>\n<parameter=query>\nx\n</parameter>\n",
        "partial-tag-at-end": "Use <tool_call>\n<function=rea",
        "undeclared-tool": "<function=launch_rocket>\n<parameter=when>\nnow\n</parameter>\n"
        "</function>",
        "unicode": "東京 😀 e\u0301 <function=get_weather><parameter=city>東京 😀</parameter>"
        "</function> 😀",
    },
}
BROKEN: dict[str, dict[str, str]] = {
    "json-mix": {
        "not-json": "<tool_call>not json</tool_call> then text",
        "bad-value": '<tool_call>{"name": "get_weather", "arguments": {"city": ]]]}</tool_call>',
        "duplicate-keys": '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris",'
        ' "city": "Rome"}}</tool_call>',
        "cut-off": '<tool_call>{"name": "get_weather", "arguments": {"city": "Par',
        "cut-off-before-name": '<tool_call>{"na',
    },
    "morph-xml": {
        "duplicate-string-tag": "<write_file><path>a</path><path>b</path></write_file>",
        "cut-off-argument": "<search><query>x</query><limit>5",
        "cut-off-string": "<write_file><content>half written",
        "cut-off-cdata": "<write_file><content><![CDATA[abc</content>",
    },
    "qwen3-coder": {
        "no-function-name": "<tool_call>\n<function=>\n</function>\n</tool_call>",
        "repeated-parameter": "<function=write_file><parameter=path>a</parameter>"
        "<parameter=path>b</parameter></function>",
        "cut-off-value": "<tool_call>\n<function=write_file>\n<parameter=content>\nhalf",
        "cut-off-tag": "<tool_call>\n<function=search>\n<parameter=query>\nx\n</param",
    },
}
RENDERED = {protocol: rendered_outputs(protocol) for protocol in PROTOCOL_NAMES}
CUT_OFF = {protocol: cut_off_outputs(protocol) for protocol in PROTOCOL_NAMES}
CORPUS: dict[str, list[str]] = {
    protocol: [
        *texts.values(),
        *CUT_OFF[protocol].values(),
        *WELL_FORMED.get(protocol, {}).values(),
        *BROKEN.get(protocol, {}).values(),
    ]
    for protocol, texts in RENDERED.items()
}


def _cases(*groups: dict[str, dict[str, str]]) -> list[Any]:
    return [
        pytest.param(protocol, text, id=f"{protocol}-{name}")
        for group in groups
        for protocol, texts in group.items()
        for name, text in texts.items()
    ]


CASES = _cases(RENDERED, WELL_FORMED, CUT_OFF, BROKEN)


@pytest.mark.parametrize(("protocol", "source"), CASES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_contract_holds_for_every_output_shape(
    protocol: str, source: str, mode: ArgumentsMode, chunks: Chunks
) -> None:
    check_contract(run(protocol, source, chunks=chunks, mode=mode))


@pytest.mark.parametrize(("protocol", "source"), CASES)
@pytest.mark.parametrize("mode", MODES)
def test_one_char_chunks_give_the_same_calls_and_text_as_one_piece(
    protocol: str, source: str, mode: ArgumentsMode
) -> None:
    whole = run(protocol, source, mode=mode)
    assert run(protocol, source, chunks=1, mode=mode).signature() == whole.signature()


@pytest.mark.parametrize(("protocol", "source"), CASES)
def test_parse_is_the_atomic_stream_parser(protocol: str, source: str) -> None:
    # Up to how text deltas are split: a whole text of prose comes as one delta.
    parts = get_protocol(protocol).parse(source, TOOLS)
    atomic = run(protocol, source, mode=ArgumentsMode.ATOMIC)
    assert _text_joined(map(_without_ids, parts)) == _text_joined(map(_without_ids, atomic.parts))


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_a_whole_text_of_prose_is_parsed_as_that_very_text(protocol: str) -> None:
    # Kept as the parser's pieces of a few hundred characters and then joined, 60 MiB of
    # prose took twice its size more. This one is read in several feeds.
    prose = "Just prose, written at length.\n" * 5000

    parts = get_protocol(protocol).parse(prose, TOOLS)

    deltas = [part for part in parts if isinstance(part, TextDelta)]
    assert len(deltas) == 1 and deltas[0].text is prose


@pytest.mark.parametrize(("protocol", "source"), _cases(RENDERED, WELL_FORMED))
def test_both_modes_agree_on_well_formed_outputs(protocol: str, source: str) -> None:
    atomic = run(protocol, source, mode=ArgumentsMode.ATOMIC)
    incremental = run(protocol, source)
    assert atomic.errors == incremental.errors == []
    assert incremental.call_values == atomic.call_values
    assert incremental.text == atomic.text


def _text_joined(parts: Iterable[Any]) -> list[Any]:
    """`parts`, each run of text deltas of one text as one delta."""
    joined: list[Any] = []
    for part in parts:
        if isinstance(part, TextDelta) and joined and isinstance(joined[-1], TextDelta):
            joined[-1] = TextDelta(part.id, joined[-1].text + part.text)
        else:
            joined.append(part)
    return joined


def _without_ids(part: Any) -> Any:
    if isinstance(part, ToolCall):
        return (part.name, part.arguments, part.input, part.original)
    return part


@st.composite
def corpus_with_cuts(draw: st.DrawFn) -> tuple[str, str, list[int]]:
    protocol = draw(st.sampled_from(PROTOCOL_NAMES))
    source = draw(st.sampled_from(CORPUS[protocol]))
    cuts = draw(st.lists(st.integers(0, len(source)), max_size=12))
    return protocol, source, cuts


@settings(max_examples=150, deadline=None)
@given(case=corpus_with_cuts(), mode=st.sampled_from(MODES))
def test_random_chunking_gives_the_same_calls_and_text(
    case: tuple[str, str, list[int]], mode: ArgumentsMode
) -> None:
    protocol, source, cuts = case
    chunked = run(protocol, source, chunks=cuts, mode=mode)
    check_contract(chunked)
    assert chunked.signature() == run(protocol, source, mode=mode).signature()


FRAGMENTS = [
    "<tool_call>",
    "</tool_call>",
    "<tool_",
    "</tool_response>",
    "</function>",
    "{",
    "}",
    "[",
    "]",
    '"name"',
    '"arguments"',
    ": ",
    ", ",
    '"get_weather"',
    '"city"',
    '"',
    "\\",
    "'",
    "True",
    "12",
    "```json\n",
    "```",
    "<think>",
    "</think>",
    "<seed:think>",
    "</seed:think>",
    "<|open|>think<|sep|>",
    "<|close|>think<|sep|>",
    "<get_weather>",
    "</get_weather>",
    "<city>",
    "</city>",
    "<write_file>",
    "</write_file>",
    "<content>",
    "</content>",
    "<get_time/>",
    '<search id="1">',
    "<item>",
    "<![CDATA[",
    "<function=get_weather>",
    "<function=write_file>",
    "<parameter=city>",
    "<parameter=content>",
    "</parameter>",
    "]]>",
    "<",
    "</",
    ">",
    "&",
    " ",
    "\n",
    "Paris",
    "漢字",
    "😀",
    "e\u0301",
    # Dialects' markers and what follows them (see protocols/dialects/).
    "[TOOL_CALLS]",
    "get_weather",
    "[ARGS]",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁sep｜>",
    "<｜tool▁call▁end｜>",
    "<|tool_call_begin|>functions.get_weather:0",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    "<|channel|>commentary to=functions.get_weather ",
    "<|message|>",
    "<|call|>",
    "<|python_tag|>",
    "<|tool_call|>",
    '<invoke name="get_weather">',
    '<parameter name="city">',
    "</invoke>",
    "<arg_key>city</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "```tool_code\n",
    "[get_weather(",
    'city="Paris")',
    "]",
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pieces=st.lists(st.sampled_from(FRAGMENTS), max_size=40),
    cuts=st.lists(st.integers(0, 400), max_size=10),
    protocol=st.sampled_from(PROTOCOL_NAMES),
    mode=st.sampled_from(MODES),
)
def test_text_built_from_tag_fragments_keeps_the_contract_for_any_chunking(
    pieces: list[str], cuts: list[int], protocol: str, mode: ArgumentsMode
) -> None:
    source = "".join(pieces)
    cuts = [cut for cut in cuts if cut <= len(source)]
    chunked = run(protocol, source, chunks=cuts, mode=mode)
    check_contract(chunked)
    assert chunked.signature() == run(protocol, source, mode=mode).signature()


@settings(max_examples=100, deadline=None)
@given(
    source=st.text(max_size=300),
    chunk=st.integers(1, 8),
    protocol=st.sampled_from(PROTOCOL_NAMES),
    mode=st.sampled_from(MODES),
)
def test_arbitrary_text_never_raises_and_loses_nothing(
    source: str, chunk: int, protocol: str, mode: ArgumentsMode
) -> None:
    check_contract(run(protocol, source, chunks=chunk, mode=mode))


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


# Keys `configure` declares are coerced by their schema (a `name` of false arrives as
# "false"); hypothesis draws string constants from the code under test, so it finds them.
CONFIGURE_PROPERTIES = next(tool for tool in TOOLS if tool.name == "configure").parameters[
    "properties"
]
UNDECLARED_KEYS = st.text(max_size=8).filter(lambda key: key not in CONFIGURE_PROPERTIES)


@settings(max_examples=100, deadline=None)
@given(
    arguments=st.dictionaries(UNDECLARED_KEYS, JSON_VALUES, max_size=5),
    ascii_only=st.booleans(),
    cuts=st.lists(st.integers(0, 2000), max_size=10),
    mode=st.sampled_from(MODES),
)
def test_any_json_arguments_arrive_unchanged_for_any_chunking(
    arguments: dict[str, Any], ascii_only: bool, cuts: list[int], mode: ArgumentsMode
) -> None:
    body = json.dumps({"name": "configure", "arguments": arguments}, ensure_ascii=ascii_only)
    source = f"<tool_call>{body}</tool_call>"
    result = run("json-mix", source, chunks=cuts, mode=mode)
    check_contract(result)
    assert result.call_values == [("configure", arguments)]
    assert result.text == ""


@pytest.mark.parametrize(
    ("protocol", "fed", "released"),
    [
        pytest.param("json-mix", "Hello <tool_", "Hello ", id="json-mix-partial-start-tag"),
        pytest.param("json-mix", "Hello <", "Hello ", id="json-mix-lone-lt-at-end"),
        pytest.param("json-mix", "a < b and c", "a < b and c", id="json-mix-lt-in-prose"),
        pytest.param("json-mix", "x <tool_cal", "x ", id="json-mix-all-but-last-char"),
        pytest.param("json-mix", "x <tool-call> y", "x <tool-call> y", id="json-mix-other-tag"),
        pytest.param("json-mix", "x </tool_call>.", "x </tool_call>.", id="json-mix-stray-end"),
        # A `>` at the end may begin Functionary's `>>>` route.
        pytest.param("json-mix", "x </tool_call>", "x </tool_call", id="functionary-route"),
        pytest.param("json-mix", "I think <thi", "I think ", id="json-mix-partial-think"),
        pytest.param("morph-xml", "<div>Hello</div>\n", "<div>Hello</div>\n", id="morph-xml-html"),
        pytest.param("morph-xml", "Use <read_fi", "Use ", id="morph-xml-partial-tool-name"),
        pytest.param("morph-xml", "Use <read_file", "Use ", id="morph-xml-name-without-gt"),
        pytest.param("morph-xml", 'Use <search id="', "Use ", id="morph-xml-open-attributes"),
        pytest.param("morph-xml", "a < b", "a < b", id="morph-xml-lt-in-prose"),
        pytest.param("morph-xml", "x <read_filex", "x <read_filex", id="morph-xml-longer-name"),
        # Where a text block would begin, a fence line or a tag on a line of its own may be
        # the empty shell around calls that follow (dropped with them): held till it shows.
        pytest.param("morph-xml", "```xml\n", "", id="fence-line-before-calls"),
        pytest.param("morph-xml", "<tool_result>\n ", "", id="wrapper-tag-before-calls"),
        pytest.param("morph-xml", "<read_filex", "", id="wrapper-tag-or-not-yet"),
        pytest.param("morph-xml", "<tool_result>\nHi", "<tool_result>\nHi", id="no-shell"),
        # A fence's opening line is held until its first line shows whether it holds calls.
        pytest.param("json-mix", "Hi\n```python", "Hi\n", id="fence-after-prose"),
        pytest.param("json-mix", "Hi\n```python\nx", "Hi\n```python\nx", id="code-after-prose"),
        # A bare fence may still be Gemma's ```tool_code block (a dialect): held till it shows.
        pytest.param("json-mix", "Hi\n```", "Hi\n", id="fence-may-be-tool-code"),
        pytest.param("morph-xml", "x <rea", "x ", id="morph-xml-short-prefix"),
        pytest.param("morph-xml", "x <div", "x <div", id="morph-xml-undeclared-prefix"),
        pytest.param("qwen3-coder", "Hi <tool_call>\n", "Hi ", id="qwen3-coder-wrapper"),
        pytest.param("qwen3-coder", "Hi <tool_call>\n<func", "Hi ", id="qwen3-coder-partial"),
        pytest.param("qwen3-coder", "Hi <function=rea", "Hi ", id="qwen3-coder-unwrapped-name"),
        pytest.param("qwen3-coder", "<tool_call> x", "<tool_call> x", id="qwen3-coder-no-function"),
        pytest.param("qwen3-coder", "a <function b", "a <function b", id="qwen3-coder-prose"),
    ],
)
def test_text_is_released_at_once_except_a_possible_open_tag(
    protocol: str, fed: str, released: str
) -> None:
    # An answer's start is held while it may be off-protocol call objects: tested apart.
    parser = get_protocol(protocol).stream_parser(
        TOOLS, options=ParserOptions(off_protocol_calls=False)
    )
    assert _text(parser.feed(fed)) == released
    assert _text(parser.finish()) == fed[len(released) :]


def _text(parts: list[Any]) -> str:
    return "".join(part.text for part in parts if isinstance(part, TextDelta))


@pytest.mark.parametrize(("protocol", "call"), CALLS.items())
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_calls_inside_think_blocks_stay_text(
    protocol: str, call: str, mode: ArgumentsMode, chunks: Chunks
) -> None:
    source = f"<think>I could write {call} here.</think>Now: {call}"
    result = run(protocol, source, chunks=chunks, mode=mode)
    assert result.call_values == [("get_weather", {"city": "Paris"})]
    assert result.text == f"I could write {call} here.Now: "
    markers = [p for p in result.parts if isinstance(p, ThinkStart | ThinkEnd)]
    assert markers == [ThinkStart("<think>"), ThinkEnd("</think>")]
    check_contract(result)


@pytest.mark.parametrize(("protocol", "call"), CALLS.items())
def test_unclosed_think_block_ends_with_an_empty_think_end(protocol: str, call: str) -> None:
    # A call in it would be a call (see test_unclosed_think.py): only part of one here.
    partial = call[: len(call) // 2]
    result = run(protocol, f"<think>still thinking {partial}", chunks=1)
    assert result.calls == []
    assert result.text == f"still thinking {partial}"
    markers = [p for p in result.parts if isinstance(p, ThinkStart | ThinkEnd)]
    assert markers == [ThinkStart("<think>"), ThinkEnd("")]
    check_contract(result)


def _big_call(protocol: str, rows: int = 3500) -> tuple[str, dict[str, Any]]:
    content = "".join(f'row {i}: a < b && "quoted" \\ é 😀\n' for i in range(rows))
    arguments = {"path": "big.txt", "content": content}
    return get_protocol(protocol).render_call("write_file", arguments), arguments


def _fed_one_char_at_a_time(protocol: str, source: str, mode: ArgumentsMode) -> tuple[Result, int]:
    """The run of `source` fed one character at a time, and the text handed over at the
    parser's seams meanwhile."""
    with text_handed_over() as handed:
        result = run(protocol, source, chunks=1, mode=mode)
        return result, handed()


# A long call's rows, and a long output's characters, fed one at a time, and a GROWTH-th of
# them: the work counted for both shows a parser whose work per character grows with the
# text so far (feeding 100 KB one character at a time showed it only by taking long).
LONG_CALL_ROWS = 400  # 13 to 15 KB
LONG_OUTPUT_CHARS = 4_000


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("mode", MODES)
def test_a_long_call_fed_one_char_at_a_time_costs_linear_work(
    protocol: str, mode: ArgumentsMode
) -> None:
    work = []
    for rows in (LONG_CALL_ROWS // GROWTH, LONG_CALL_ROWS):
        source, arguments = _big_call(protocol, rows)
        result, handed = _fed_one_char_at_a_time(protocol, source, mode)
        assert result.call_values == [("write_file", arguments)]
        check_contract(result)
        work.append(handed)
    assert work[1] < work[0] * MAX_WORK_RATIO


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_a_100kb_string_argument_streams_in_many_fragments(protocol: str) -> None:
    source, arguments = _big_call(protocol)
    assert len(arguments["content"]) > 100_000
    result = run(protocol, source, chunks=997)
    assert result.call_values == [("write_file", arguments)]
    with_fragments = [batch for batch in result.batches if fragments(batch)]
    assert len(with_fragments) > len(source) // 997 // 2
    check_contract(result)


@pytest.mark.parametrize(
    ("protocol", "before", "unit"),
    [
        pytest.param("json-mix", "", "<", id="json-mix-many-lt"),
        pytest.param("json-mix", "<think>", "x", id="json-mix-long-think"),
        pytest.param(
            "json-mix", '<tool_call>{"name": "get_time"} </', "a", id="json-mix-open-close"
        ),
        pytest.param("json-mix", "<tool_call>", "no json ", id="json-mix-long-bad-body"),
        pytest.param("morph-xml", "<search ", "x", id="morph-xml-long-open-tag"),
        pytest.param("morph-xml", "<write_file><content>", "< ", id="morph-xml-many-lt-in-value"),
        pytest.param("morph-xml", "<configure><options>", "<a>", id="morph-xml-deep-object"),
        pytest.param("qwen3-coder", "", "<tool_call>", id="qwen3-coder-many-wrappers"),
        pytest.param("qwen3-coder", "", "<function=", id="qwen3-coder-many-opens"),
        pytest.param(
            "qwen3-coder",
            "<function=write_file><parameter=content>",
            "</param\n",
            id="qwen3-coder-many-partial-ends",
        ),
        pytest.param("qwen3-coder", "<function=get_time></function>", " ", id="qwen3-coder-gap"),
    ],
)
def test_long_pathological_outputs_fed_one_char_at_a_time_cost_linear_work(
    protocol: str, before: str, unit: str
) -> None:
    work = []
    for chars in (LONG_OUTPUT_CHARS // GROWTH, LONG_OUTPUT_CHARS):
        result, handed = _fed_one_char_at_a_time(
            protocol, before + unit * (chars // len(unit)), ArgumentsMode.INCREMENTAL
        )
        check_contract(result)
        work.append(handed)
    assert work[1] < work[0] * MAX_WORK_RATIO


@pytest.mark.parametrize(("protocol", "source"), CASES)
def test_segments_are_non_empty_call_texts_at_their_offsets(protocol: str, source: str) -> None:
    segments = get_protocol(protocol).extract_tool_call_segments(source, TOOLS)
    calls = run(protocol, source, mode=ArgumentsMode.ATOMIC).calls
    assert all(segment.text for segment in segments), segments
    assert "".join(s.text for s in segments) == "".join(c.original for c in calls)
    for segment in segments:
        assert source[segment.start : segment.end] == segment.text


def test_segments_of_a_text_with_two_calls() -> None:
    source = "ab\n" + XML_CALL + "\ncd\n" + XML_CALL
    segments = get_protocol("morph-xml").extract_tool_call_segments(source, TOOLS)
    first = 3
    second = first + len(XML_CALL) + 4
    assert [(s.start, s.end) for s in segments] == [
        (first, first + len(XML_CALL)),
        (second, second + len(XML_CALL)),
    ]


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("mode", MODES)
def test_call_ids_are_unique_across_many_calls(protocol: str, mode: ArgumentsMode) -> None:
    result = run(protocol, CALLS[protocol] * 50, chunks=7, mode=mode)
    ids = [c.id for c in result.calls]
    assert len(ids) == 50
    assert len(set(ids)) == 50
    assert all(call_id.startswith("call_") for call_id in ids)
