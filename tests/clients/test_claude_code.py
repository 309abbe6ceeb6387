"""Claude Code (`claude -p`), which speaks only Anthropic's Messages API, run unchanged through
the proxy in front of the scripted upstream, with the environment docs/messages-api.md
shows: it creates a file with its Write tool, reads it back with Read, and reports what it
holds.

The locked package is installed into tests/clients/claude_code with `npm ci` on first use
(the npm registry is the only network this needs; the package's native binary comes from its
platform package there). Claude Code itself reaches nothing but loopback: its home is a
temporary folder, its nonessential traffic (telemetry, error reports, the update check) is
off, and any other HTTP it tried would go to a proxy that refuses connections. Where strace
works, the run is traced and every internet connection it opened must be to 127.0.0.1. It runs
with the test extra's node."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from node_projects import install, offline_environment
from observability import caught_logs
from processes import run_to_the_end
from servers import StartProxy
from upstream_server import Reply, ScriptedUpstream, Verbatim

from protocols import get_protocol

# On one worker: another would wait on the first's install (npm ci) to share it.
pytestmark = pytest.mark.xdist_group("claude-code")

PROJECT = Path(__file__).parent / "claude_code"
CLAUDE = PROJECT / "node_modules" / ".bin" / "claude"
MESSAGES_PAGE = Path(__file__).parents[2] / "docs" / "messages-api.md"
# What the documented environment points at, replaced by the served proxy.
DOCUMENTED_URL = "http://127.0.0.1:8000"
EXPORT = re.compile(r"^export ([A-Z_]+)=(\S+)$", re.MULTILINE)
# Only for the test run: no update check, no telemetry (the documented variable turns off
# the rest of what is not the model's traffic).
TEST_VARIABLES = {"DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1"}
CONTENT = "hi-from-the-model"
STRACE = shutil.which("strace")
JSON_TYPE = {"content-type": "application/json"}
ACCESS_LOGGER = "toolcall_proxy.access"
CONNECT = re.compile(r"connect\(\d+, \{sa_family=AF_INET6?, sin6?_port=htons\(\d+\), (.*?)\}")


@pytest.fixture(scope="module")
def claude_installed() -> None:
    install(PROJECT, CLAUDE)


def documented_environment() -> dict[str, str]:
    """The variables the Claude Code section of docs/messages-api.md exports."""
    page = MESSAGES_PAGE.read_text()
    found = re.search(r"^## Claude Code\n.*?^```sh\n(.*?)^```", page, re.MULTILINE | re.DOTALL)
    assert found, "docs/messages-api.md has a sh block under its Claude Code heading"
    variables = dict(EXPORT.findall(found[1]))
    assert variables.get("ANTHROPIC_BASE_URL") == DOCUMENTED_URL
    return variables


def strace_works() -> bool:
    """Whether this machine lets strace trace a child (containers may forbid ptrace)."""
    if STRACE is None:
        return False
    trial = subprocess.run([STRACE, "-f", "-e", "trace=connect", "true"], capture_output=True)
    return trial.returncode == 0


@pytest.mark.parametrize("protocol", ["json-mix", "morph-xml"])
def work_and_home(tmp_path: Path) -> tuple[Path, Path]:
    """Claude Code's working directory and its own home, both empty."""
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    return work, home


def test_claude_code_creates_a_file_and_reads_it_back_through_the_proxy(
    claude_installed: None,
    upstream: ScriptedUpstream,
    start_proxy: StartProxy,
    refused_proxy: str,
    tmp_path: Path,
    protocol: str,
) -> None:
    work, home = work_and_home(tmp_path)
    target = work / "hello.txt"
    proxy = start_proxy(tool_protocol=protocol)
    documented = documented_environment()
    render = get_protocol(protocol).render_call
    done = f"DONE: {target} contains {CONTENT}"
    upstream.script(
        Reply(
            "I'll create the file.\n",
            render("Write", {"file_path": str(target), "content": CONTENT}),
        ),
        Reply("Now let me read it back.\n", render("Read", {"file_path": str(target)})),
        Reply(done),
    )
    command = [str(CLAUDE), "-p", "Write hello.txt, then read it back."]
    # Headless as root it refuses --dangerously-skip-permissions; this is what works.
    command += ["--permission-mode", "acceptEdits", "--allowedTools", "Write", "Read"]
    command += ["--output-format", "json"]
    trace = tmp_path / "connections.txt"
    if strace_works():
        assert STRACE is not None
        command = [STRACE, "-f", "-qq", "-e", "trace=connect", "-o", str(trace), *command]

    with caught_logs(ACCESS_LOGGER) as access:
        run = run_to_the_end(
            command,
            cwd=work,
            env=offline_environment(
                home,
                refused_proxy,
                {**documented, "ANTHROPIC_BASE_URL": proxy.url, **TEST_VARIABLES},
            ),
            stdin=subprocess.DEVNULL,
        )

    assert run.returncode == 0, run.stdout + run.stderr
    assert target.read_text() == CONTENT
    result = json.loads(run.stdout)
    assert result["result"] == done and result["is_error"] is False
    first, second, third = (asked.json for asked in upstream.chat_requests)
    assert first["stream"] is True and "tools" not in first
    assert first["model"] == documented["ANTHROPIC_MODEL"]
    assert first["max_tokens"] == int(documented["CLAUDE_CODE_MAX_OUTPUT_TOKENS"])
    declared = first["messages"][0]["content"]
    assert "Write" in declared and "Read" in declared
    assert "x-anthropic-billing-header" not in json.dumps(first), (
        "its attribution block is left out"
    )
    assert CONTENT in json.dumps(third["messages"][-1]), "the read result went back to the model"
    assert len(second["messages"]) < len(third["messages"])
    asked = [line for line in access.messages if '"POST /v1/messages"' in line]
    assert len(asked) == 3, access.messages
    assert all(line.endswith(f" session={result['session_id']}") for line in asked)
    if trace.exists():
        addresses = set(CONNECT.findall(trace.read_text()))
        assert addresses and all("127.0.0.1" in address for address in addresses), addresses


def test_claude_code_discovers_the_models_and_uses_a_routed_alias(
    claude_installed: None,
    upstream: ScriptedUpstream,
    start_proxy: StartProxy,
    refused_proxy: str,
    tmp_path: Path,
) -> None:
    """With gateway model discovery on, Claude Code lists the proxy's models (Anthropic's
    shape, which keeps only `claude…` ids), and a route's `claude-…` alias reaches the local
    model the route names."""
    work, home = work_and_home(tmp_path)
    routes = tmp_path / "routes.toml"
    routes.write_text('[routes.qwen-coder]\naliases = ["claude-local-coder"]\n')
    proxy = start_proxy(routes_file=routes)
    upstream.script(Reply("DONE"))
    discovery = {"CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY": "1"}
    environment = {**documented_environment(), "ANTHROPIC_BASE_URL": proxy.url}
    command = [str(CLAUDE), "-p", "Say DONE.", "--model", "claude-local-coder"]

    run = run_to_the_end(
        [*command, "--output-format", "json"],
        cwd=work,
        env=offline_environment(
            home, refused_proxy, {**environment, **TEST_VARIABLES, **discovery}
        ),
        stdin=subprocess.DEVNULL,
    )

    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["result"] == "DONE"
    assert [asked.path for asked in upstream.requests] == ["/v1/models", "/v1/chat/completions"]
    assert upstream.chat_requests[0].json["model"] == "qwen-coder"


def test_claude_code_asks_again_with_fewer_tokens_when_the_upstream_context_is_too_small(
    claude_installed: None,
    upstream: ScriptedUpstream,
    start_proxy: StartProxy,
    refused_proxy: str,
    tmp_path: Path,
) -> None:
    """vLLM refuses a prompt plus `max_tokens` beyond its context in its own words; the proxy
    says it in Anthropic's, which Claude Code reads to ask again at once with a `max_tokens`
    that fits (the context less the prompt and a margin of 1,000)."""
    work, home = work_and_home(tmp_path)
    proxy = start_proxy()
    refusal = {
        "error": {
            "message": "This model's maximum context length is 16384 tokens. However, you"
            " requested 8192 output tokens and your prompt contains at least 12000 input"
            " tokens, for a total of at least 20192 tokens. Please reduce the length of the"
            " input prompt or the number of requested output tokens."
            " (parameter=input_tokens, value=12000)",
            "type": "BadRequestError",
            "param": "input_tokens",
            "code": 400,
        }
    }
    upstream.script(
        Verbatim(json.dumps(refusal).encode(), status=400, headers=JSON_TYPE), Reply("DONE")
    )
    environment = {**documented_environment(), "ANTHROPIC_BASE_URL": proxy.url}

    run = run_to_the_end(
        [str(CLAUDE), "-p", "Say DONE.", "--output-format", "json"],
        cwd=work,
        env=offline_environment(home, refused_proxy, {**environment, **TEST_VARIABLES}),
        stdin=subprocess.DEVNULL,
    )

    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["result"] == "DONE"
    refused, answered = (asked.json for asked in upstream.chat_requests)
    assert refused["max_tokens"] == 8192
    assert answered["max_tokens"] == 16384 - 12000 - 1000
