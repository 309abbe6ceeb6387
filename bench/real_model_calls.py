"""How often a real model calls tools in protocol: fixed tool-calling tasks sent to a model
server (the proxy's own rewritten request) or through the proxy (what reached the client),
each answer classified as

  in-protocol   the protocol's parser (or, through the proxy, the client's `tool_calls`)
                holds the expected tool with every expected argument;
  off-protocol  the expected call is there in another shape (bare or fenced JSON, a wrong
                tag, attributes instead of child elements, ...), named per answer;
  no-call       no call of the expected tool (the task that needs no tool: a call).

Raw answers go to a JSONL file, so a newer parser can re-classify them without the model:

    python bench/real_model_calls.py --upstream http://127.0.0.1:8090/v1 --protocol json-mix \\
        --label baseline [--out bench/results/calls.jsonl]
    python bench/real_model_calls.py --proxy http://127.0.0.1:8101/v1 --protocol json-mix ...
    python bench/real_model_calls.py --reclassify bench/results/calls.jsonl

Requests run one at a time at temperature 0 with a fixed seed; every task shares one tool
set, so the server prefills the tool prompt once per protocol.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from protocols import ToolCall, ToolSpec, get_protocol
from service.chat.request import parse_chat_request
from service.chat.rewrite import rewrite_request

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "calls.jsonl"
# Enough for the longest expected call (a short script in write_file) on a slow CPU model.
MAX_TOKENS = 300
SEED = 7
# A cold 1.5B model on two shared cores needs ~1 min for a prompt plus 300 tokens.
REQUEST_TIMEOUT_S = 600.0
SYSTEM = "You are a coding assistant. Use the tools when they help."


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> Any:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


_STRING = {"type": "string"}
TOOLS = [
    _tool(
        "get_weather",
        "Current weather for a city.",
        {"city": _STRING, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        ["city"],
    ),
    _tool("read_file", "Read a file of the project.", {"path": _STRING}, ["path"]),
    _tool(
        "write_file",
        "Write a file of the project, replacing it.",
        {"path": _STRING, "content": _STRING},
        ["path", "content"],
    ),
    _tool(
        "search",
        "Search the web.",
        {"query": _STRING, "limit": {"type": "integer", "description": "How many results"}},
        ["query"],
    ),
    _tool(
        "edit_file",
        "Replace one exact piece of text in a file.",
        {"path": _STRING, "old_string": _STRING, "new_string": _STRING},
        ["path", "old_string", "new_string"],
    ),
    _tool(
        "ask_followup_question",
        "Ask the user a question, with suggested answers to pick from.",
        {"question": _STRING, "suggestions": {"type": "array", "items": _STRING}},
        ["question", "suggestions"],
    ),
]


@dataclass(frozen=True)
class Task:
    name: str
    messages: list[dict[str, Any]]
    tool: str | None  # the expected tool; None: a plain text answer is right
    arguments: tuple[str, ...] = ()  # arguments the call must carry


def _ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]


_CALC = "def add(a, b):\n    return a - b\n"
TASKS = [
    Task("weather", _ask("What's the weather in Paris right now?"), "get_weather", ("city",)),
    Task("read_file", _ask("Show me what is in src/main.py."), "read_file", ("path",)),
    Task(
        "write_file",
        _ask("Create hello.txt containing exactly: Hello, world!"),
        "write_file",
        ("path", "content"),
    ),
    Task(
        "write_script",
        _ask("Write fib.py, a Python script printing the first 10 Fibonacci numbers."),
        "write_file",
        ("path", "content"),
    ),
    Task(
        "search_limit",
        _ask("Search the web for 'rust borrow checker', only the top 3 results."),
        "search",
        ("query", "limit"),
    ),
    Task(
        "edit",
        _ask("In src/calc.py, replace `return a - b` with `return a + b`."),
        "edit_file",
        ("path", "old_string", "new_string"),
    ),
    Task(
        "follow_up",
        _ask(
            "I want to deploy my app. Ask me which platform I want, suggesting Vercel,"
            " Netlify and Fly.io."
        ),
        "ask_followup_question",
        ("question", "suggestions"),
    ),
    Task(
        "weather_unit",
        _ask("How warm is it in Oslo, in fahrenheit?"),
        "get_weather",
        ("city", "unit"),
    ),
    Task(
        "after_result",
        [
            *_ask("The add function in src/calc.py is wrong. Fix it."),
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {
                            "name": "read_file",
                            "arguments": json.dumps({"path": "src/calc.py"}),
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": _CALC},
        ],
        "edit_file",
        ("path", "old_string", "new_string"),
    ),
    Task("no_tool", _ask("In one sentence: what does Python's zip() do?"), None),
]
TOOL_SPECS = [ToolSpec.from_openai(tool) for tool in TOOLS]
TOOL_NAMES = [spec.name for spec in TOOL_SPECS]


def client_request(task: Task) -> dict[str, Any]:
    return {
        "model": "model",
        "messages": task.messages,
        "tools": TOOLS,
        "tool_choice": "auto",
        "max_tokens": MAX_TOKENS,
        "temperature": 0,
        "seed": SEED,
        "stream": False,
    }


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    protocol = get_protocol(args.protocol)
    through_proxy = args.proxy is not None
    base_url = (args.proxy or args.upstream).rstrip("/")
    tasks = [task for task in TASKS if not args.tasks or task.name in args.tasks]
    records = []
    with httpx.Client(timeout=REQUEST_TIMEOUT_S) as http:
        for task in tasks:
            body = client_request(task)
            if not through_proxy:
                body = rewrite_request(
                    parse_chat_request(json.dumps(body).encode()), protocol, None
                )
            started = time.monotonic()
            reply = http.post(f"{base_url}/chat/completions", json=body)
            reply.raise_for_status()
            answer = reply.json()
            message = answer["choices"][0]["message"]
            record = {
                "label": args.label,
                "protocol": args.protocol,
                "via": "proxy" if through_proxy else "direct",
                "model": answer.get("model"),
                "task": task.name,
                "text": message.get("content") or "",
                "tool_calls": message.get("tool_calls") or [],
                "finish_reason": answer["choices"][0].get("finish_reason"),
                "completion_tokens": (answer.get("usage") or {}).get("completion_tokens"),
                "seconds": round(time.monotonic() - started, 1),
                "system_prompt": body["messages"][0]["content"] if not through_proxy else None,
            }
            records.append(record)
            verdict, shape = classify(record)
            print(f"{task.name:14} {verdict:12} {shape:28} {record['seconds']:6}s", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return records


def classify(record: dict[str, Any]) -> tuple[str, str]:
    """(verdict, detail): verdict is in-protocol, incomplete (in protocol, an expected
    argument missing), off-protocol, no-call, or text (right, for the no-tool task); detail
    names what the model wrote."""
    task = next(task for task in TASKS if task.name == record["task"])
    calls = _calls(record)
    if task.tool is None:
        return ("no-call", "called " + calls[0][0]) if calls else ("text", "")
    if any(name == task.tool and _has_arguments(args, task.arguments) for name, args in calls):
        return "in-protocol", ""
    shapes = off_protocol_shapes(record["text"], task.tool)
    if any(name == task.tool for name, _ in calls) and shapes[:1] != ["xml-attributes"]:
        missing = [name for name in task.arguments if not _has_arguments(calls[0][1], [name])]
        return "incomplete", "missing " + ",".join(missing)
    if shapes[:1] == ["json-declaration-echo"]:
        return "no-call", "echoed the tool's declaration"
    if shapes:
        return "off-protocol", "+".join(shapes)
    return "no-call", ("called " + calls[0][0]) if calls else ""


def _calls(record: dict[str, Any]) -> list[tuple[str, Any]]:
    """The calls the client got (through the proxy) or the parser finds (direct)."""
    if record["via"] == "proxy":
        found = []
        for call in record["tool_calls"]:
            try:
                arguments = json.loads(call["function"]["arguments"])
            except (ValueError, TypeError):
                arguments = None
            found.append((call["function"]["name"], arguments))
        return found
    parts = get_protocol(record["protocol"]).parse(record["text"], TOOL_SPECS)
    return [(part.name, part.input) for part in parts if isinstance(part, ToolCall)]


def _has_arguments(arguments: Any, names: Iterable[str]) -> bool:
    return isinstance(arguments, dict) and all(
        arguments.get(name) not in (None, "", [], {}) for name in names
    )


_FENCE = re.compile(r"```(\w*)[^\n]*\n(.*?)(?:```|$)", re.S)
_OPEN_TAG = re.compile(r"<([A-Za-z_][\w.-]*)[^<>]*>")


def off_protocol_shapes(text: str, tool: str) -> list[str]:
    """Names for the ways `text` writes a call of `tool` that the protocol does not read:
    the call's own shape, then where it sits (a fence, a wrapping tag, alone)."""
    name = re.escape(tool)
    patterns = {
        "json-name-arguments": rf'"name"\s*:\s*"{name}"\s*,\s*"arguments"',
        "json-name-parameters": rf'"name"\s*:\s*"{name}"\s*,\s*"parameters"',
        "json-declaration-echo": rf'"name"\s*:\s*"{name}"\s*,\s*"description"',
        "json-other-keys": rf'"(?:name|tool|function|tool_name)"\s*:\s*"{name}"',
        "json-keyed-by-name": rf'"{name}"\s*:\s*\{{',
        "xml-name-element": rf"<(?:name|tool|tool_name)>\s*{name}\s*</",
        "xml-attributes": rf"<{name}\s+[\w-]+\s*=",
        "xml-element": rf"<{name}\s*>",
        "function-syntax": rf"\b{name}\(",
    }
    found = [(shape, re.search(pattern, text)) for shape, pattern in patterns.items()]
    matches = [(shape, match) for shape, match in found if match]
    if not matches:
        return []
    shape, match = matches[0]
    where = [f"in-{lang or 'plain'}-fence" for lang, body in _FENCE.findall(text) if tool in body]
    before = text[: match.start()]
    wrappers = [
        tag
        for tag in _OPEN_TAG.findall(before)
        if tag not in TOOL_NAMES and f"</{tag}>" not in before
    ]
    where += [f"in-<{tag}>" for tag in dict.fromkeys(wrappers)]
    stripped = text.strip()
    whole = stripped.startswith(("{", "<", "`")) and stripped.endswith(("}", ">", "`"))
    where.append("whole-answer" if whole else "with-prose")
    return [shape, *dict.fromkeys(where)]


VERDICTS = ("in-protocol", "incomplete", "off-protocol", "no-call")


def table(records: Sequence[dict[str, Any]]) -> str:
    """One row per label x protocol x model x route: counts over the tasks that need a tool,
    and whether the no-tool task got a plain answer."""
    rows: dict[tuple[str, ...], Counter[str]] = defaultdict(Counter)
    shapes: dict[tuple[str, ...], Counter[str]] = defaultdict(Counter)
    for record in records:
        key = _row(record)
        verdict, shape = classify(record)
        no_tool = record["task"] == "no_tool"
        rows[key]["no-tool " + verdict if no_tool else verdict] += 1
        if verdict == "off-protocol":
            shapes[key][shape] += 1
    lines = [
        "| prompt | protocol | model | route | in-protocol | incomplete | off-protocol |"
        " no call | no-tool task in text | off-protocol shapes |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, counts in rows.items():
        needing = sum(counts[verdict] for verdict in VERDICTS)
        plain = counts["no-tool text"]
        shape_list = ", ".join(f"{shape} {n}" for shape, n in shapes[key].most_common())
        lines.append(
            f"| {' | '.join(key)} | "
            + " | ".join(f"{counts[verdict]}/{needing}" for verdict in VERDICTS)
            + f" | {plain}/{plain + counts['no-tool no-call']} | {shape_list} |"
        )
    return "\n".join(lines)


def _row(record: dict[str, Any]) -> tuple[str, ...]:
    return (record["label"], record["protocol"], _short(record["model"]), record["via"])


def _short(model: str | None) -> str:
    found = re.search(r"(\d+(?:\.\d+)?b)", model or "", re.I)
    return found.group(1) if found else str(model)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    route = parser.add_mutually_exclusive_group(required=True)
    route.add_argument("--upstream", help="model server base URL: send the rewritten request")
    route.add_argument("--proxy", help="proxy base URL: send the client's request")
    route.add_argument("--reclassify", type=Path, help="JSONL of earlier runs: table only")
    parser.add_argument("--protocol", default="json-mix")
    parser.add_argument("--label", default="current", help="names the prompt variant")
    parser.add_argument("--tasks", nargs="*", help="task names (default: all)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    if args.reclassify:
        with args.reclassify.open(encoding="utf-8") as lines:
            records = [json.loads(line) for line in lines if line.strip()]
    else:
        records = run(args)
    sys.stdout.write(table(records) + "\n")


if __name__ == "__main__":
    main()
