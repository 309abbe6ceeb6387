"""The Codex CLI (`codex exec`), which speaks only the Responses API to a custom provider,
run unchanged through the proxy in front of the scripted upstream, with the provider block
docs/clients.md shows: it creates a file with the tool its defaults offer the model (the
shell for a model name it does not know, the free-form `apply_patch` for an OpenAI one, or
for a local one given the recipe's model catalog, and in code mode JavaScript that calls
them), reads it back with the shell, and reports what it holds.

The locked package is installed into tests/clients/codex with `npm ci` on first use (the npm
registry is the only network this needs), and run with the test extra's node. Codex itself
reaches nothing but loopback: its home is a temporary folder, its analytics, update check and
plugin sync are off, and any other HTTP it tried would go to a proxy that refuses
connections."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from node_projects import install, offline_environment
from processes import run_to_the_end
from servers import StartProxy
from upstream_server import Reply, ScriptedUpstream

from protocols import get_protocol
from service.responses.connection import ConnectionMemory

# On one worker: another would wait on the first's install (npm ci) to share it.
pytestmark = pytest.mark.xdist_group("codex")

PROJECT = Path(__file__).parent / "codex"
CODEX = PROJECT / "node_modules" / ".bin" / "codex"
CLIENTS_PAGE = Path(__file__).parents[2] / "docs" / "clients.md"
# What the documented provider block points at, replaced by the served proxy and the model.
DOCUMENTED_URL = "http://127.0.0.1:8000/v1"
DOCUMENTED_MODEL = 'model = "qwen2.5-coder-7b"'
KEY_VARIABLE = "TOOLCALL_PROXY_API_KEY"
# Where the recipe's config.toml names its model catalog, replaced by the test's own file.
DOCUMENTED_CATALOG = "/home/you/.codex/local-models.json"
# What docs/clients.md says turns code mode on, in a model's catalog entry.
CODE_MODE_KEY, CODE_MODE = "tool_mode", "code_mode_only"
# Only for the test run: no prompts, no sandbox (CI runners may not allow one), and nothing
# that reaches the network: analytics, the update check and the plugin marketplace's sync
# (a `git ls-remote` of github.com, seen with strace) are off. Top-level keys go before the
# documented block, tables after it.
TEST_KEYS = """approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
"""
TEST_TABLES = """
[analytics]
enabled = false

[features]
plugins = false
"""
CONTENT = "hi-from-the-model"
HTTP, WEBSOCKET = "http", "websocket"
# Codex opens a WebSocket to a custom provider that says it takes one.
WEBSOCKET_KEY = "supports_websockets = true\n"


@pytest.fixture(scope="module")
def codex_installed() -> None:
    install(PROJECT, CODEX)


def documented_provider_block() -> str:
    """The config.toml block of the Codex section of docs/clients.md."""
    page = CLIENTS_PAGE.read_text()
    found = re.search(r"^## Codex\n.*?^```toml\n(.*?)^```", page, re.MULTILINE | re.DOTALL)
    assert found, "docs/clients.md has a toml block under its Codex heading"
    block = found[1]
    assert block.count(DOCUMENTED_URL) == 1 and block.count(DOCUMENTED_MODEL) == 1
    return block


def shell(command: str, workdir: Path) -> dict[str, str]:
    return {"cmd": command, "workdir": str(workdir)}


def pieces(text: str, size: int = 40) -> list[str]:
    """The model's text streamed in chunks, so calls arrive split across them."""
    return [text[at : at + size] for at in range(0, len(text), size)]


@pytest.mark.parametrize(
    ("protocol", "model", "writer", "transport"),
    [
        ("json-mix", "qwen2.5-coder-7b", "exec_command", HTTP),
        ("morph-xml", "qwen2.5-coder-7b", "exec_command", HTTP),
        ("json-mix", "gpt-5.5", "apply_patch", HTTP),
        ("morph-xml", "gpt-5.5", "apply_patch", HTTP),
        ("json-mix", "gpt-5.5", "apply_patch", WEBSOCKET),
    ],
    ids=[
        "json-mix-unknown-model",
        "morph-xml-unknown-model",
        "json-mix-openai-model",
        "morph-xml-openai-model",
        "json-mix-openai-model-websocket",
    ],
)
def test_codex_creates_a_file_and_reads_it_back_through_the_proxy(
    codex_installed: None,
    upstream: ScriptedUpstream,
    start_proxy: StartProxy,
    refused_proxy: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    protocol: str,
    model: str,
    writer: str,
    transport: str,
) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    (home / ".codex").mkdir(parents=True)
    target = work / "hello.txt"
    proxy = start_proxy(tool_protocol=protocol)
    config = documented_provider_block().replace(DOCUMENTED_URL, proxy.url + "/v1")
    config = config.replace(DOCUMENTED_MODEL, f'model = "{model}"')
    if transport == WEBSOCKET:  # in the provider's table, which the documented block ends in
        config += WEBSOCKET_KEY
    (home / ".codex" / "config.toml").write_text(TEST_KEYS + config + TEST_TABLES)
    websocket_turns = turns_on_websockets(monkeypatch)
    render = get_protocol(protocol).render_call
    if writer == "apply_patch":  # the free-form tool: a patch, raw
        patch = f"*** Begin Patch\n*** Add File: {target}\n+{CONTENT}\n*** End Patch\n"
        write = render("apply_patch", {"input": patch})
        written = CONTENT + "\n"  # a patch's added lines end with a line break
    else:
        write = render("exec_command", shell(f"printf '%s' '{CONTENT}' > '{target}'", work))
        written = CONTENT
    read = render("exec_command", shell(f"cat '{target}'", work))
    done = script_write_read_done(upstream, write, read, target)

    run = run_codex(work, home, refused_proxy)

    assert run.returncode == 0, run.stdout + run.stderr
    assert target.read_text() == written
    messages = [event["item"]["text"] for event in agent_events(run.stdout, "agent_message")]
    assert messages[-1] == done
    first, second, third = (asked.json for asked in upstream.chat_requests)
    assert first["stream"] is True and "tools" not in first
    declared = first["messages"][0]["content"]
    assert '{"name": "exec_command"' in declared and "web_search" not in declared
    if writer == "apply_patch":
        assert '{"name": "apply_patch"' in declared and "Lark grammar" in declared
        assert '{"name": "tool_search"' in declared
    else:  # the sub-agent tools Codex sends as a namespace, each offered by its own name
        assert '{"name": "spawn_agent"' in declared
    assert CONTENT in third["messages"][-1]["content"], "the read result went back to the model"
    assert len(second["messages"]) < len(third["messages"])
    # On a WebSocket Codex warms the connection up first (`generate: false`, which asks the
    # upstream nothing: it got the three requests above), then takes its three turns.
    assert len(websocket_turns) == (4 if transport == WEBSOCKET else 0)


def script_write_read_done(upstream: ScriptedUpstream, write: str, read: str, target: Path) -> str:
    """The model's three turns, streamed in pieces: it writes, it reads, it says what it read
    (returned)."""
    done = f"DONE: {target} contains {CONTENT}"
    upstream.script(
        Reply(*pieces(f"I'll create the file.\n{write}")),
        Reply(*pieces(f"Now let me read it back.\n{read}")),
        Reply(*pieces(done)),
    )
    return done


def run_codex(work: Path, home: Path, refused_proxy: str) -> subprocess.CompletedProcess[str]:
    """`codex exec` in `work`, with `home`'s .codex, asked to write the file."""
    return run_to_the_end(
        [str(CODEX), "exec", "--skip-git-repo-check", "--json", "-C", str(work), "Write it."],
        cwd=work,
        env=offline_environment(
            home, refused_proxy, {"CODEX_HOME": str(home / ".codex"), KEY_VARIABLE: "unused"}
        ),
        stdin=subprocess.DEVNULL,
    )


def turns_on_websockets(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the responses the proxy (served in this process) answers on a WebSocket,
    as they are answered: each is its connection's latest."""
    answered: list[str] = []
    keep = ConnectionMemory.keep

    def kept(memory: ConnectionMemory, owner: str, response: Any, inputs: Any) -> None:
        answered.append(response["id"])
        keep(memory, owner, response, inputs)

    monkeypatch.setattr(ConnectionMemory, "keep", kept)
    return answered


def agent_events(stdout: str, item_type: str) -> list[dict[str, Any]]:
    """`codex exec --json`'s completed items of one type, in order."""
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return [
        event
        for event in events
        if event.get("type") == "item.completed" and event["item"].get("type") == item_type
    ]


def documented_catalog_recipe() -> tuple[str, dict[str, Any]]:
    """The config.toml and the model catalog of docs/clients.md's recipe for a model Codex
    does not know."""
    page = CLIENTS_PAGE.read_text()
    found = re.search(
        r"^### A model Codex does not know\n.*?^```toml\n(.*?)^```.*?^```json\n(.*?)^```",
        page,
        re.MULTILINE | re.DOTALL,
    )
    assert found, "docs/clients.md's recipe has a toml block, then a json block"
    config, catalog = found[1], json.loads(found[2])
    assert config.count(DOCUMENTED_URL) == 1 and config.count(DOCUMENTED_CATALOG) == 1
    return config, catalog


@pytest.mark.parametrize("code_mode", [False, True], ids=["tools", "code-mode"])
def test_codex_with_the_documented_catalog_patches_a_file_for_a_model_it_did_not_know(
    codex_installed: None,
    upstream: ScriptedUpstream,
    start_proxy: StartProxy,
    refused_proxy: str,
    tmp_path: Path,
    code_mode: bool,
) -> None:
    """The recipe's catalog gives a local model name `apply_patch`, the free-form tool; in
    code mode the model's one tool is `exec`, whose JavaScript calls `tools.apply_patch` and
    `tools.exec_command`."""
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    (home / ".codex").mkdir(parents=True)
    target = work / "hello.txt"
    proxy = start_proxy()
    config, catalog = documented_catalog_recipe()
    if code_mode:
        assert f'"{CODE_MODE_KEY}": "{CODE_MODE}"' in CLIENTS_PAGE.read_text()
        catalog["models"][0][CODE_MODE_KEY] = CODE_MODE
    catalog_path = home / ".codex" / "local-models.json"
    catalog_path.write_text(json.dumps(catalog))
    config = config.replace(DOCUMENTED_URL, proxy.url + "/v1")
    config = config.replace(DOCUMENTED_CATALOG, str(catalog_path))
    (home / ".codex" / "config.toml").write_text(TEST_KEYS + config + TEST_TABLES)
    render = get_protocol("json-mix").render_call
    patch = f"*** Begin Patch\n*** Add File: {target}\n+{CONTENT}\n*** End Patch\n"
    if code_mode:
        write = render("exec", {"input": f"await tools.apply_patch({json.dumps(patch)});"})
        script = f"text(await tools.exec_command({json.dumps(shell(f'cat {target}', work))}));"
        read = render("exec", {"input": script})
    else:
        write = render("apply_patch", {"input": patch})
        read = render("exec_command", shell(f"cat '{target}'", work))
    done = script_write_read_done(upstream, write, read, target)

    run = run_codex(work, home, refused_proxy)

    assert run.returncode == 0, run.stdout + run.stderr
    assert target.read_text() == CONTENT + "\n"
    messages = [event["item"]["text"] for event in agent_events(run.stdout, "agent_message")]
    assert messages[-1] == done
    first, _, third = (asked.json for asked in upstream.chat_requests)
    declared = first["messages"][0]["content"]
    assert declared.startswith(catalog["models"][0]["base_instructions"])
    if code_mode:
        assert '{"name": "exec"' in declared and "declare const tools" in declared
        assert '{"name": "apply_patch"' not in declared
    else:
        assert '{"name": "apply_patch"' in declared and "Lark grammar" in declared
    assert CONTENT in third["messages"][-1]["content"], "the read result went back to the model"
