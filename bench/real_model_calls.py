"""How well a real model calls tools with the proxy's prompts: 42 fixed tasks (one call;
the same tool several times, "parallel"; several tools at once; no tool needed; a turn
after a tool result) sent to a model server (the proxy's own rewritten request) or through
the proxy (what reached the client), each answer scored as BFCL's checker does: the calls
must be exactly the expected ones (any order), each argument of its schema's type, none
undeclared, the expected values present. A task's verdict is

  correct   the expected calls, or plain text where no tool is needed;
  wrong     calls, but not the expected ones (named: missing, extra, a wrong value ...);
  text      no call where one was due (off-protocol call shapes in it are named);
  call      a call where none was due.

Raw answers go to a JSONL file, so a newer parser can re-score them without the model:

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
import math
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from protocols import ToolCall, ToolSpec, get_protocol
from service.exchange import parse_chat_request, rewrite_request

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "calls.jsonl"
# Enough for the longest expected answer (three calls, or a short script in write_file);
# an answer running past it is cut off, which the verdict shows.
MAX_TOKENS = 300
SEED = 7
# A cold 1.5B model on two shared cores needs ~1 min for a prompt plus 300 tokens.
REQUEST_TIMEOUT_S = 600.0
SYSTEM = "You are a helpful assistant. Use the tools when they help."


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
    _tool(
        "calculate_bmi",
        "Body mass index of a person.",
        {
            "weight": {"type": "number", "description": "in kilograms"},
            "height": {"type": "number", "description": "in meters"},
        },
        ["weight", "height"],
    ),
    # BFCL's geodistance.find: OpenAI names cannot hold a dot, so clients write `_`.
    _tool(
        "geodistance_find",
        "Distance between two cities.",
        {
            "origin": _STRING,
            "destination": _STRING,
            "unit": {"type": "string", "enum": ["miles", "km"]},
        },
        ["origin", "destination"],
    ),
    _tool(
        "convert_currency",
        "Convert an amount of money from one currency to another.",
        {
            "amount": {"type": "number"},
            "from_currency": {"type": "string", "description": "ISO code, e.g. USD"},
            "to_currency": {"type": "string", "description": "ISO code, e.g. EUR"},
        },
        ["amount", "from_currency", "to_currency"],
    ),
    _tool(
        "get_stock_price",
        "Latest price of a stock.",
        {"symbol": {"type": "string", "description": "ticker symbol, e.g. AAPL"}},
        ["symbol"],
    ),
    _tool(
        "math_factorial",
        "The factorial of a whole number.",
        {"number": {"type": "integer"}},
        ["number"],
    ),
]


class _Any:
    """An expected argument whose value may be anything but empty."""

    def __repr__(self) -> str:
        return "ANY"


ANY = _Any()
# What an expected argument must be: ANY; a number (equal); a text the value must contain,
# case aside; or a tuple of such texts, one of which it must contain.
Expected = _Any | int | float | str | tuple[str, ...]


@dataclass(frozen=True)
class Task:
    name: str
    category: str  # simple, parallel, multiple, none, after-result
    messages: list[dict[str, Any]]
    calls: tuple[tuple[str, dict[str, Expected]], ...] = ()  # empty: a plain text answer


def _ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]


def _after(question: str, tool: str, arguments: dict[str, Any], result: str) -> list[Any]:
    """A conversation where the model called `tool` and its result came back."""
    call = {"name": tool, "arguments": json.dumps(arguments)}
    return [
        *_ask(question),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": call}],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": result},
    ]


def _task(name: str, question: str, *calls: tuple[str, dict[str, Expected]]) -> Task:
    if not calls:
        return Task(name, "none", _ask(question))
    several = len(calls) > 1
    category = "simple"
    if several:
        category = "parallel" if len({tool for tool, _ in calls}) == 1 else "multiple"
    return Task(name, category, _ask(question), calls)


def _weather(city: str, **more: Expected) -> tuple[str, dict[str, Expected]]:
    return ("get_weather", {"city": city, **more})


def _bmi(weight: float, height: float) -> tuple[str, dict[str, Expected]]:
    return ("calculate_bmi", {"weight": weight, "height": height})


def _distance(origin: str, destination: str, unit: str) -> tuple[str, dict[str, Expected]]:
    return ("geodistance_find", {"origin": origin, "destination": destination, "unit": unit})


def _convert(amount: float, source: Expected, target: Expected) -> tuple[str, Any]:
    return ("convert_currency", {"amount": amount, "from_currency": source, "to_currency": target})


def _stock(symbol: Expected) -> tuple[str, dict[str, Expected]]:
    return ("get_stock_price", {"symbol": symbol})


def _path(tool: str, path: str) -> tuple[str, dict[str, Expected]]:
    return (tool, {"path": path})


_USD, _EUR = ("usd", "dollar"), ("eur",)
_CALC = "def add(a, b):\n    return a - b\n"
_UTIL = "def double(x):\n    retrun 2 * x\n"
TASKS = [
    # One call.
    _task("weather", "What's the weather in Paris right now?", _weather("paris")),
    _task("read_file", "Show me what is in src/main.py.", _path("read_file", "src/main.py")),
    _task(
        "write_file",
        "Create hello.txt containing exactly: Hello, world!",
        ("write_file", {"path": "hello.txt", "content": "hello, world!"}),
    ),
    _task(
        "write_script",
        "Write fib.py, a Python script printing the first 10 Fibonacci numbers.",
        ("write_file", {"path": "fib.py", "content": ANY}),
    ),
    _task(
        "search_limit",
        "Search the web for 'rust borrow checker', only the top 3 results.",
        ("search", {"query": "borrow checker", "limit": 3}),
    ),
    _task(
        "edit",
        "In src/calc.py, replace `return a - b` with `return a + b`.",
        ("edit_file", {"path": "src/calc.py", "old_string": "a - b", "new_string": "a + b"}),
    ),
    _task(
        "follow_up",
        "I want to deploy my app. Ask me which platform I want, suggesting Vercel, Netlify"
        " and Fly.io.",
        ("ask_followup_question", {"question": ANY, "suggestions": ANY}),
    ),
    _task(
        "weather_unit",
        "How warm is it in Oslo, in fahrenheit?",
        _weather("oslo", unit="fahrenheit"),
    ),
    _task(
        "bmi",
        "What is the BMI of someone who weighs 70 kg and is 1.75 m tall?",
        _bmi(70, 1.75),
    ),
    _task(
        "distance",
        "How far is it from Boston to New York, in miles?",
        _distance("boston", "new york", "miles"),
    ),
    _task(
        "distance_km",
        "What is the distance between Paris and Berlin in km?",
        _distance("paris", "berlin", "km"),
    ),
    _task("currency", "Convert 100 US dollars to euros.", _convert(100, _USD, _EUR)),
    _task("stock", "What is Apple's stock price right now?", _stock("aapl")),
    _task(
        "factorial", "Compute the factorial of 7 with the tool.", ("math_factorial", {"number": 7})
    ),
    _task(
        "search_news",
        "Find recent news about the James Webb telescope.",
        ("search", {"query": "webb"}),
    ),
    _task(
        "read_config",
        "Open config/settings.yaml for me.",
        _path("read_file", "config/settings.yaml"),
    ),
    # The same tool several times.
    _task(
        "weather_two",
        "What's the weather like in Tokyo and in Madrid?",
        _weather("tokyo"),
        _weather("madrid"),
    ),
    _task(
        "bmi_two",
        "Calculate the BMI of two people: one weighs 80 kg and is 1.80 m tall, the other"
        " weighs 60 kg and is 1.65 m tall.",
        _bmi(80, 1.8),
        _bmi(60, 1.65),
    ),
    _task(
        "read_two",
        "Show me both README.md and setup.py.",
        _path("read_file", "readme.md"),
        _path("read_file", "setup.py"),
    ),
    _task(
        "stocks_three",
        "Get the stock prices of Microsoft, Alphabet and Amazon.",
        _stock("msft"),
        _stock(("googl", "goog")),
        _stock("amzn"),
    ),
    _task(
        "factorial_two",
        "Use the tool to compute the factorials of 5 and of 10.",
        ("math_factorial", {"number": 5}),
        ("math_factorial", {"number": 10}),
    ),
    _task(
        "distance_two",
        "In km: how far is London from Paris, and how far is London from Rome?",
        _distance("london", "paris", "km"),
        _distance("london", "rome", "km"),
    ),
    _task(
        "currency_two",
        "Convert 50 euros to Japanese yen, and 50 euros to British pounds.",
        _convert(50, _EUR, ("jpy", "yen")),
        _convert(50, _EUR, ("gbp", "pound")),
    ),
    _task(
        "search_two",
        "Search the web for 'python asyncio tutorial' and for 'rust tokio tutorial'.",
        ("search", {"query": "asyncio"}),
        ("search", {"query": "tokio"}),
    ),
    # Several tools at once.
    _task(
        "weather_and_stock",
        "Tell me the weather in Berlin and the stock price of Tesla (TSLA).",
        _weather("berlin"),
        _stock("tsla"),
    ),
    _task(
        "read_and_search",
        "Read src/app.py, and search the web for 'fastapi middleware'.",
        _path("read_file", "src/app.py"),
        ("search", {"query": "fastapi middleware"}),
    ),
    _task(
        "bmi_and_factorial",
        "Compute the BMI for 90 kg and 1.9 m, and the factorial of 6.",
        _bmi(90, 1.9),
        ("math_factorial", {"number": 6}),
    ),
    _task(
        "currency_and_weather",
        "Convert 20 US dollars to euros, and tell me the weather in Rome.",
        _convert(20, _USD, _EUR),
        _weather("rome"),
    ),
    _task(
        "distance_and_weather",
        "How far is Madrid from Lisbon in km, and what's the weather in Lisbon?",
        _distance("madrid", "lisbon", "km"),
        _weather("lisbon"),
    ),
    _task(
        "write_and_read",
        "Create notes.txt containing 'buy milk', and show me todo.txt.",
        ("write_file", {"path": "notes.txt", "content": "buy milk"}),
        _path("read_file", "todo.txt"),
    ),
    # No tool needed.
    _task("no_tool", "In one sentence: what does Python's zip() do?"),
    _task("greeting", "Hi! Who are you?"),
    _task("capital", "What is the capital of France?"),
    _task("one_liner", "Show me a Python one-liner that reverses a string."),
    _task("arithmetic", "What is 12 + 30?"),
    _task("explain_bmi", "In two sentences, what does the body mass index measure?"),
    _task("author", "Who wrote Romeo and Juliet?"),
    _task("thanks", "Thanks, that's all for today."),
    # A turn after a tool result.
    Task(
        "after_result",
        "after-result",
        _after(
            "The add function in src/calc.py is wrong. Fix it.",
            "read_file",
            {"path": "src/calc.py"},
            _CALC,
        ),
        (("edit_file", {"path": "src/calc.py", "old_string": "a - b", "new_string": "a + b"}),),
    ),
    Task(
        "after_typo",
        "after-result",
        _after("Fix the typo in src/util.py.", "read_file", {"path": "src/util.py"}, _UTIL),
        (("edit_file", {"path": "src/util.py", "old_string": "retrun", "new_string": "return"}),),
    ),
    Task(
        "after_weather",
        "after-result",
        _after(
            "What's the weather in Paris?",
            "get_weather",
            {"city": "Paris"},
            '{"temperature": 18, "unit": "celsius", "sky": "sunny"}',
        ),
    ),
    Task(
        "after_bmi",
        "after-result",
        _after(
            "What's my BMI? I weigh 70 kg and I'm 1.75 m tall.",
            "calculate_bmi",
            {"weight": 70, "height": 1.75},
            "22.9",
        ),
    ),
]
TOOL_SPECS = [ToolSpec.from_openai(tool) for tool in TOOLS]
TOOL_NAMES = [spec.name for spec in TOOL_SPECS]
SCHEMAS = {spec.name: spec.parameters for spec in TOOL_SPECS}
CATEGORIES = ("simple", "parallel", "multiple", "after-result", "none")


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
            verdict, detail = classify(record)
            print(f"{task.name:20} {verdict:8} {detail[:60]:60} {record['seconds']:6}s", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return records


def task_named(name: str) -> Task | None:
    return next((task for task in TASKS if task.name == name), None)


def classify(record: dict[str, Any]) -> tuple[str, str]:
    """(verdict, detail): verdict is correct, wrong, text or call (see the module's
    docstring); detail names what was wrong, or the off-protocol shapes of a text answer."""
    task = task_named(record["task"])
    assert task is not None, record["task"]
    calls = _calls(record)
    if not task.calls:
        return (
            ("call", "called " + ", ".join(name for name, _ in calls))
            if calls
            else (
                "correct",
                "",
            )
        )
    if not calls:
        return "text", "+".join(off_protocol_shapes(record["text"], task.calls[0][0]))
    faults = call_faults(calls, task.calls)
    return ("wrong", "; ".join(faults)) if faults else ("correct", "")


def call_faults(
    calls: Sequence[tuple[str, Any]], expected: Sequence[tuple[str, Mapping[str, Expected]]]
) -> list[str]:
    """What keeps `calls` from being exactly the `expected` ones (in any order); [] if
    nothing does. Each call is first checked against its tool's schema."""
    faults = []
    unmatched = list(expected)
    for name, arguments in calls:
        schema_faults = _schema_faults(name, arguments)
        if schema_faults:
            faults += [f"{name}: {fault}" for fault in schema_faults]
            continue
        match = next(
            (
                want
                for want in unmatched
                if want[0] == name and not _value_faults(arguments, want[1])
            ),
            None,
        )
        if match is not None:
            unmatched.remove(match)
            continue
        same_tool = [want for want in unmatched if want[0] == name]
        if same_tool:
            faults += [f"{name}: {fault}" for fault in _value_faults(arguments, same_tool[0][1])]
        else:
            faults.append(f"extra call {name}")
    faults += [f"missing call {name}" for name, _ in unmatched]
    return faults


def _schema_faults(name: str, arguments: Any) -> list[str]:
    """A call's faults against its tool's declaration: undeclared tool or argument, a value
    of another type than the schema's, a required argument missing."""
    schema = SCHEMAS.get(name)
    if schema is None:
        return ["undeclared tool"]
    if not isinstance(arguments, dict):
        return ["arguments are not an object"]
    properties = schema["properties"]
    faults = [f"undeclared argument {key}" for key in arguments if key not in properties]
    faults += [
        f"{key} is {type(value).__name__}, not {properties[key]['type']}"
        for key, value in arguments.items()
        if key in properties and not _has_type(value, properties[key]["type"])
    ]
    faults += [f"{key} missing" for key in schema["required"] if key not in arguments]
    return faults


def _has_type(value: Any, kind: str) -> bool:
    if kind in ("number", "integer"):
        return (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and (kind == "number" or float(value).is_integer())
        )
    return isinstance(value, {"string": str, "array": list, "object": dict}[kind])


def _value_faults(arguments: Mapping[str, Any], expected: Mapping[str, Expected]) -> list[str]:
    return [
        f"{key}={arguments.get(key)!r}, want {want!r}"
        for key, want in expected.items()
        if not _matches(arguments.get(key), want)
    ]


def _matches(value: Any, want: Expected) -> bool:
    if value in (None, "", [], {}):
        return False
    if isinstance(want, _Any):
        return True
    if isinstance(want, int | float):
        return isinstance(value, int | float) and math.isclose(value, want)
    options = (want,) if isinstance(want, str) else want
    return isinstance(value, str) and any(option in value.lower() for option in options)


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


def table(records: Sequence[dict[str, Any]]) -> str:
    """One row per label x protocol x model x route: over the tasks that need a call, how many
    got exactly the right calls, other calls, or text; over those that need none, how many
    got a call; then the right answers per category, and the shapes of the calls written
    off the protocol in text answers. Records of tasks no longer defined are left out."""
    rows: dict[tuple[str, ...], Counter[str]] = defaultdict(Counter)
    shapes: dict[tuple[str, ...], Counter[str]] = defaultdict(Counter)
    for record in records:
        task = task_named(record["task"])
        if task is None:
            continue
        key = _row(record)
        verdict, detail = classify(record)
        due = "due" if task.calls else "not due"
        rows[key][due] += 1
        rows[key][f"{due} {verdict}"] += 1
        rows[key][f"{task.category} total"] += 1
        if verdict == "correct":
            rows[key][f"{task.category} correct"] += 1
        if verdict == "text" and detail:
            shapes[key][detail] += 1
    lines = [
        "| prompt | protocol | model | route | calls correct | wrong calls"
        " | text where a call was due | call where none was due | "
        + " | ".join(CATEGORIES)
        + " | off-protocol shapes in text |",
        "|---|---|---|---|---|---|---|---|" + "---|" * len(CATEGORIES) + "---|",
    ]
    for key, counts in rows.items():
        due, not_due = counts["due"], counts["not due"]
        per_category = " | ".join(
            f"{counts[f'{category} correct']}/{counts[f'{category} total']}"
            for category in CATEGORIES
        )
        shape_list = ", ".join(f"{shape} {n}" for shape, n in shapes[key].most_common())
        lines.append(
            f"| {' | '.join(key)} | {counts['due correct']}/{due} | {counts['due wrong']}/{due}"
            f" | {counts['due text']}/{due} | {counts['not due call']}/{not_due}"
            f" | {per_category}"
            f" | {shape_list} |"
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
