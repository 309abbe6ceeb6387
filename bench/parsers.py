"""Parser throughput: MB/s per protocol on prose, one 200 KB file write and 100 small calls,
fed in 1- and 16-character deltas, the cost of one word-sized prose delta (the most common
feed of a long answer), plus a scaling row (10x the input should cost ~10x), the longest
stall hostile model output causes (budget: 100 ms per 100 KB), and what reading a flood of
each dialect's calls, openings or inner tags costs as a whole answer and streamed, beyond
prose of the same length (bound: ANSWER_CPU_BOUND_SECONDS).

    python bench/parsers.py [--quick]

Times are the parsing thread's CPU time: a busy machine that preempts the process does not
show up as a stall.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from protocols import ToolSpec, get_protocol, protocol_names

TOOLS = [
    ToolSpec(
        "write_to_file",
        "Write a file",
        {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        },
    ),
    ToolSpec(
        "read_file",
        "Read a file",
        {
            "type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
        },
    ),
]
SOURCE_LINE = 'def handler(request):  # <div class="x"> & a < b\n    return {"ok": True}\n'


def prose(size: int) -> str:
    sentence = "The quick brown fox considers a < b and writes plain text. "
    return (sentence * (size // len(sentence) + 1))[:size]


def file_write(protocol: str, size: int) -> str:
    content = (SOURCE_LINE * (size // len(SOURCE_LINE) + 1))[:size]
    return "I'll write it.\n" + get_protocol(protocol).render_call(
        "write_to_file", {"path": "src/app.py", "content": content}
    )


def small_calls(protocol: str, count: int) -> str:
    render = get_protocol(protocol).render_call
    return "".join(
        f"Reading file {i}.\n" + render("read_file", {"path": f"src/m{i}.py", "limit": i})
        for i in range(count)
    )


def throughput(protocol: str, text: str, step: int) -> float:
    """MB/s of feeding `text` in `step`-character deltas, best of a few runs."""
    best = float("inf")
    for _ in range(3):
        parser = get_protocol(protocol).stream_parser(TOOLS)
        started = time.thread_time()
        for i in range(0, len(text), step):
            parser.feed(text[i : i + step])
        parser.finish()
        best = min(best, time.thread_time() - started)
    return len(text.encode()) / best / 1e6


# Words as a model streams them: 4-8 characters, none of which can begin a tag.
PROSE_DELTAS = (" Sun", " rises", " over", " the", " quiet", " hills.")


def prose_delta_cost(protocol: str, feeds: int, opening: str = "") -> float:
    """Microseconds per feed of PROSE_DELTAS after `opening`, best of a few runs."""
    deltas = PROSE_DELTAS * (feeds // len(PROSE_DELTAS))
    best = float("inf")
    for _ in range(3):
        parser = get_protocol(protocol).stream_parser(TOOLS)
        parser.feed(opening + "Well,")  # decides the answer's start: it is not a call
        started = time.thread_time()
        for delta in deltas:
            parser.feed(delta)
        best = min(best, time.thread_time() - started)
    return best / len(deltas) * 1e6


# The parser runs on the event loop: no single feed or finish may hold it longer than this
# per 100 KB of model output (every other stream and /healthz wait meanwhile).
STALL_BUDGET_MS_PER_100KB = 100.0
STALL_INPUT_CHARS = 100_000


def hostile_outputs(protocol: str, size: int = STALL_INPUT_CHARS) -> dict[str, str]:
    """Model output that is costly to read: about `size` characters each, in every
    protocol."""
    numbers = ", ".join(f"{i}.5" for i in range(4_000))  # a ~20 KB call
    relaxed = "<tool_call>{name: 'write_to_file', arguments: {path: 'a', content: [%s]}}"
    count = max(size // len(numbers), 1)
    call_object = '{"name": "read_file", "arguments": {"path": "a"}}'  # off the protocol
    return {
        "relaxed JSON calls": (relaxed % numbers + "</tool_call>\n") * count,
        "one relaxed call": relaxed % ", ".join([numbers] * count) + "</tool_call>",
        "'<' storm": "<" * size,
        "call object, then prose": call_object + "\n" + prose(size),
        "call object, then 1 1 1": call_object + " 1" * (size // 2),
        "number-array argument": get_protocol(protocol).render_call(
            "write_to_file", {"path": "a", "content": list(range(size // 6))}
        ),
    }


# Declares object and array arguments, which the XML protocols parse as nested elements.
OBJECT_TOOL = ToolSpec(
    "put",
    "Store data",
    {
        "type": "object",
        "properties": {"data": {"type": "object"}, "items": {"type": "array"}},
    },
)


def hostile_structures(size: int = STALL_INPUT_CHARS) -> dict[str, tuple[str, str]]:
    """Nested arguments that are costly to read, about `size` characters each: label ->
    (protocol, text), called with OBJECT_TOOL."""
    distinct_tags = "".join(f"<t{i}>v</t{i}>" for i in range(size // 17))
    children = "<b>1</b>" * (size // 8)
    members = {f"key{i}": f"value {i}" for i in range(size // 22)}
    qwen = get_protocol("qwen3-coder")
    xml_parameter = "<tool_call>\n<function=put>\n<parameter=data>\n%s\n</parameter>\n</function>"
    return {
        "distinct child tags": ("morph-xml", f"<put><data>{distinct_tags}</data></put>"),
        "distinct argument tags": ("morph-xml", f"<put>{distinct_tags}</put>"),
        "object of many children": ("morph-xml", f"<put><data>{children}</data></put>"),
        "object parameter": ("qwen3-coder", qwen.render_call("put", {"data": members})),
        "XML in object parameter": ("qwen3-coder", xml_parameter % children),
    }


# Many declared tools (MCP servers bring hundreds), and text full of one name's prefix.
MANY_TOOLS = [ToolSpec(f"tool_{i:04d}") for i in range(3000)]
STORM_TAG = "<tool_0001"


def longest_stall(protocol: str, text: str, step: int, tools: list[ToolSpec] = TOOLS) -> float:
    """Seconds of the longest single feed or finish over `text` in `step`-character deltas."""
    parser = get_protocol(protocol).stream_parser(tools)
    longest = 0.0
    for i in range(0, len(text), step):
        started = time.thread_time()
        parser.feed(text[i : i + step])
        longest = max(longest, time.thread_time() - started)
    started = time.thread_time()
    parser.finish()
    return max(longest, time.thread_time() - started)


def stall_report(size: int) -> None:
    print(f"\nlongest stall, ms per 100 KB (budget {STALL_BUDGET_MS_PER_100KB:.0f}), whole text")
    print(f"of {size // 1000} KB fed at once and in 16-character deltas")
    for protocol in protocol_names():
        for label, text in hostile_outputs(protocol, size).items():
            stall_row(protocol, label, text, TOOLS)
    for label, (protocol, text) in hostile_structures(size).items():
        stall_row(protocol, label, text, [OBJECT_TOOL])
    storm = STORM_TAG * (size // len(STORM_TAG))
    stall_row("morph-xml", "3,000 tools, '<name' storm", storm, MANY_TOOLS)


def stall_row(protocol: str, label: str, text: str, tools: list[ToolSpec]) -> None:
    stall = max(longest_stall(protocol, text, step, tools) for step in (len(text), 16))
    per_100kb = stall * 1000 / (len(text) / 100_000)
    verdict = "ok" if per_100kb <= STALL_BUDGET_MS_PER_100KB else "OVER"
    print(f"{protocol:<10} {label:<24} {per_100kb:>8.1f} ms  {verdict}")


# Reading one answer, however it is written, costs about 2 s of CPU at most beyond what
# prose of the same length does: the parse budget pays for so much work, and the rest of
# the answer is read as text (docs/security.md). An honest answer of 20,000 small calls
# takes 0.6 to 0.9 s; a flood of FLOOD_CHARS holds more than the budget pays for, and its
# worst (~30,000 valid dialect calls) measured up to 1.8 s on a shared 2-core machine while
# the test suite ran beside it.
ANSWER_CPU_BOUND_SECONDS = 2.0
FLOOD_CHARS = 2_000_000

# Per dialect (and Morph-XML, which is no dialect): one call to `read_file`, its opening,
# and an argument or tag inside it a flood repeats (the shapes that cost most before: an
# opening repeated, a tag repeated inside one call).
DIALECT_FLOODS = {
    "hermes": (
        '<tool_call>{"name": "read_file", "arguments": {"path": "a.py"}}</tool_call>',
        '<tool_call>{"name": "read_file", "arguments": {',
        '"path": "a.py", ',
    ),
    "morph-xml": ("<read_file><path>a.py</path></read_file>", "<read_file>", "<path>a.py</path>"),
    "qwen3-coder": (
        "<tool_call>\n<function=read_file>\n<parameter=path>\na.py\n</parameter>\n"
        "</function>\n</tool_call>",
        "<tool_call>\n<function=read_file>\n",
        "<parameter=path>\n",
    ),
    "glm": (
        "<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a.py</arg_value>\n</tool_call>",
        "<tool_call>read_file\n",
        "<arg_key>",
    ),
    "invoke": (
        '<invoke name="read_file">\n<parameter name="path">a.py</parameter>\n</invoke>',
        '<invoke name="read_file">',
        '<parameter name="path">',
    ),
    "deepseek": (
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n"
        '```json\n{"path": "a.py"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n",
        "<｜tool▁call▁begin｜>",
    ),
    "kimi-k2": (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0"
        '<|tool_call_argument_begin|>{"path": "a.py"}<|tool_call_end|><|tool_calls_section_end|>',
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0"
        "<|tool_call_argument_begin|>",
        "<|tool_call_begin|>",
    ),
    "llama3": (
        '<|python_tag|>{"name": "read_file", "parameters": {"path": "a.py"}}',
        "<|python_tag|>{",
        "<|python_tag|>",
    ),
    "mistral": (
        '[TOOL_CALLS]read_file[ARGS]{"path": "a.py"}',
        "[TOOL_CALLS]read_file[ARGS]",
        "[ARGS]",
    ),
    "harmony": (
        "<|start|>assistant<|channel|>commentary to=functions.read_file <|constrain|>json"
        '<|message|>{"path": "a.py"}<|call|>',
        "<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>",
        "<|channel|>",
    ),
    "granite": (
        '<|tool_call|>[{"name": "read_file", "arguments": {"path": "a.py"}}]',
        "<|tool_call|>[",
        '{"name": "read_file", ',
    ),
    "gemma": (
        '```tool_code\nread_file(path="a.py")\n```\n',
        "```tool_code\n",
        'read_file(path="a.py")\n',
    ),
    "pythonic": ('[read_file(path="a.py")]', "[read_file(", 'read_file(path="a.py"), '),
    "cohere": (
        '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "read_file", "parameters":'
        ' {"path": "a.py"}}]<|END_ACTION|>',
        "<|START_ACTION|>[",
        '{"tool_call_id": "0", ',
    ),
    "dsml": (
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="read_file">\n'
        '<｜DSML｜parameter name="path" string="true">a.py</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="read_file">\n',
        '<｜DSML｜parameter name="path" string="false">1</｜DSML｜parameter>\n',
    ),
    "functionary": ('all\nLet me check.\n>>>read_file\n{"path": "a.py"}', ">>>read_file\n{", ">>>"),
    "gemma4": (
        '<|tool_call>call:read_file{path:<|"|>a.py<|"|>}<tool_call|>',
        "<|tool_call>call:read_file{",
        'path:<|"|>a.py<|"|>,',
    ),
    "hunyuan": (
        '<tool_calls>[{"name": "read_file", "arguments": {"path": "a.py"}}]</tool_calls>',
        "<tool_calls>[",
        '{"name": "read_file", ',
    ),
    "kimi-k3": (
        '<|open|>tools<|sep|><|open|>call tool="read_file" index="1"<|sep|>'
        '<|open|>argument key="path" type="string"<|sep|>a.py<|close|>argument<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|>",
        '<|open|>tools<|sep|><|open|>call tool="read_file" index="1"<|sep|>',
        '<|open|>argument key="path" type="string"<|sep|>',
    ),
    "minimax-m3": (
        ']<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="read_file">]<]minimax[>[<path>'
        "a.py]<]minimax[>[</path>]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>",
        ']<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="read_file">',
        "]<]minimax[>[<path>",
    ),
    "phi4-mini": (
        'functools[{"name": "read_file", "arguments": {"path": "a.py"}}]',
        "functools[",
        '{"name": "read_file", ',
    ),
    "python-list": (
        '<|tool_call_start|>[read_file(path="a.py")]<|tool_call_end|>',
        "<|tool_call_start|>[",
        'read_file(path="a.py"), ',
    ),
    "seed-oss": (
        "<seed:tool_call>\n<function=read_file>\n<parameter=path>a.py</parameter>\n"
        "</function>\n</seed:tool_call>",
        "<seed:tool_call>\n<function=read_file>\n",
        "<parameter=path>",
    ),
    "step3": (
        "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>"
        '<steptml:invoke name="read_file">\n<steptml:parameter name="path">a.py'
        "</steptml:parameter>\n</steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
        "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>"
        '<steptml:invoke name="read_file">\n',
        '<steptml:parameter name="path">',
    ),
    "gigachat": (
        '<｜GCML｜tool_calls>\n<｜GCML｜invoke name="read_file">\n'
        '<｜GCML｜parameter name="path" string="true">a.py</｜GCML｜parameter>\n'
        "</｜GCML｜invoke>\n</｜GCML｜tool_calls>",
        '<｜GCML｜tool_calls>\n<｜GCML｜invoke name="read_file">\n',
        '<｜GCML｜parameter name="path" string="false">1</｜GCML｜parameter>\n',
    ),
    "k2-horizon": (
        "<ifm|tool_calls><ifm|tool_call>read_file<ifm|arg_key>path</ifm|arg_key>"
        "<ifm|arg_value>a.py</ifm|arg_value></ifm|tool_call></ifm|tool_calls>",
        "<ifm|tool_calls><ifm|tool_call>read_file",
        "<ifm|arg_key>path</ifm|arg_key><ifm|arg_value>a.py</ifm|arg_value>",
    ),
    "xingchen": (
        "<tool_call>read_file<param_key>path</param_key><param_value>a.py</param_value>"
        "</tool_call>",
        "<tool_call>read_file<param_key>",
        "<param_key>path</param_key><param_value>a.py</param_value>",
    ),
    "plamo": (
        "<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>"
        "<|plamo:begin_tool_name:plamo|>read_file<|plamo:end_tool_name:plamo|>"
        '<|plamo:begin_tool_arguments:plamo|>{"path": "a.py"}<|plamo:end_tool_arguments:plamo|>'
        "<|plamo:end_tool_request:plamo|><|plamo:end_tool_requests:plamo|>",
        "<|plamo:begin_tool_requests:plamo|>",
        "<|plamo:begin_tool_request:plamo|>",
    ),
    "apertus": (
        '<|tools_prefix|>[{"read_file": {"path": "a.py"}}]<|tools_suffix|>',
        "<|tools_prefix|>[",
        '{"read_file": {"path": "a.py"}}, ',
    ),
    "longcat": (
        '<longcat_tool_call>{"name": "read_file", "arguments": {"path": "a.py"}}'
        "</longcat_tool_call>",
        "<longcat_tool_call>{",
        '"path": "a.py", ',
    ),
    "dots": (
        '<dots_function_call><invoke name="read_file"><parameter name="path">a.py</parameter>'
        "</invoke></dots_function_call>",
        '<dots_function_call><invoke name="read_file">',
        '<parameter name="path">a.py</parameter>',
    ),
    "intern-s1": (
        '<|action_start|><|plugin|>{"name": "read_file", "parameters": {"path": "a.py"}}'
        "<|action_end|>",
        "<|action_start|><|plugin|>{",
        "<|plugin|>",
    ),
    "nemotron": (
        '<TOOLCALL>[{"name": "read_file", "arguments": {"path": "a.py"}}]</TOOLCALL>',
        "<TOOLCALL>[",
        '{"name": "read_file", ',
    ),
    "sarashina": (
        "<|tool_calls|>[{'name': 'read_file', 'arguments': {'path': 'a.py'}}]",
        "<|tool_calls|>[",
        "{'name': 'read_file', ",
    ),
    "minicpm4": (
        '<function name="read_file"><param name="path">a.py</param></function>',
        '<function name="read_file">',
        '<param name="path">a.py</param>',
    ),
    "iquest": (
        "<iquest_tool_call>read_file<arg_key>path</arg_key><arg_value>a.py</arg_value>"
        "</iquest_tool_call>",
        "<iquest_tool_call>read_file",
        "<arg_key>path</arg_key><arg_value>a.py</arg_value>",
    ),
    "mirothinker": (
        "<use_mcp_tool><server_name>files</server_name><tool_name>read_file</tool_name>"
        '<arguments>{"path": "a.py"}</arguments></use_mcp_tool>',
        "<use_mcp_tool><server_name>",
        "<server_name>files</server_name>",
    ),
    "cwm": (
        '<tool: function>\nread_file {"path": "a.py"}\n</tool>',
        "<tool: function>\n",
        "<tool: function>",
    ),
}


def dialect_floods(size: int) -> dict[str, str]:
    """'dialect: shape' -> ~`size` characters of it, for every dialect."""
    floods = {}
    for dialect, (call, opening, inner) in DIALECT_FLOODS.items():
        floods[f"{dialect}: calls"] = (call + "\n") * (size // (len(call) + 1))
        floods[f"{dialect}: openings"] = opening * (size // len(opening))
        floods[f"{dialect}: inner tags"] = opening + inner * (size // len(inner))
    return floods


def reading_cpu(protocol: str, text: str, step: int) -> float:
    """Seconds of CPU reading `text` fed in `step`-character deltas takes."""
    parser = get_protocol(protocol).stream_parser(TOOLS)
    started = time.thread_time()
    for i in range(0, len(text), step):
        parser.feed(text[i : i + step])
    parser.finish()
    return time.thread_time() - started


def flood_report(size: int) -> None:
    print(f"\nreading a {size // 1000} KB flood, s of CPU beyond prose of that length")
    print(f"(bound {ANSWER_CPU_BOUND_SECONDS} s), whole and in 16-character deltas, worst protocol")
    prose_cpu = {
        protocol: {step: reading_cpu(protocol, prose(size), step) for step in (size, 16)}
        for protocol in protocol_names()
    }
    for label, text in dialect_floods(size).items():
        whole, protocol = max(
            (reading_cpu(protocol, text, len(text)) - prose_cpu[protocol][size], protocol)
            for protocol in protocol_names()
        )
        streamed = reading_cpu(protocol, text, 16) - prose_cpu[protocol][16]
        verdict = "ok" if max(whole, streamed) <= ANSWER_CPU_BOUND_SECONDS else "OVER"
        print(f"{label:<24} {protocol:<12} {whole:>6.2f} {streamed:>6.2f}  s  {verdict}")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--quick", action="store_true", help="smaller inputs, for a smoke run")
    quick = options.parse_args().quick
    size = 5_000 if quick else 200_000
    cases: dict[str, Callable[[str], str]] = {
        "prose, no calls": lambda _: prose(size),
        f"{size // 1000} KB write_to_file": lambda p: file_write(p, size),
        "100 small calls": lambda p: small_calls(p, 100),
    }
    width = max(len("protocol"), *map(len, protocol_names()))
    print(f"{'protocol':<{width}} {'input':<24} {'1-char MB/s':>12} {'16-char MB/s':>13}")
    for protocol in protocol_names():
        for label, make in cases.items():
            text = make(protocol)
            one, sixteen = throughput(protocol, text, 1), throughput(protocol, text, 16)
            print(f"{protocol:<{width}} {label:<24} {one:>12.2f} {sixteen:>13.2f}")
    feeds = 2_000 if quick else 100_000
    print(f"\nprose deltas of 4-8 characters, µs/feed ({feeds} feeds): outside and in <think>")
    for protocol in protocol_names():
        outside = prose_delta_cost(protocol, feeds)
        thinking = prose_delta_cost(protocol, feeds, opening="<think>")
        print(f"{protocol:<{width}} {outside:>6.2f} µs {thinking:>9.2f} µs")
    print("\nscaling (file write, 16-char deltas): seconds for 1x and 10x the input")
    for protocol in protocol_names():
        base = file_write(protocol, size // 10)
        big = file_write(protocol, size)
        t1 = len(base.encode()) / throughput(protocol, base, 16) / 1e6
        t10 = len(big.encode()) / throughput(protocol, big, 16) / 1e6
        ratio = f"ratio {t10 / t1:.1f} (10 = linear)"
        print(f"{protocol:<{width}} 1x {t1:.4f}s  10x {t10:.4f}s  {ratio}")
    stall_report(20_000 if quick else STALL_INPUT_CHARS)
    flood_report(2_000 if quick else FLOOD_CHARS)


if __name__ == "__main__":
    main()
