"""Gemini CLI (`gemini -p`), which speaks only the Gemini API, run unchanged through the proxy
in front of the scripted upstream, with the environment and settings docs/gemini.md shows: it
writes a file with its `write_file` tool, reads it back with `read_file`, and reports what it
holds, for every protocol.

The locked package is installed into tests/clients/gemini_cli with `npm ci` on first use (the
npm registry is the only network this needs), and run with the test extra's node. Gemini CLI
itself reaches nothing but loopback: its home is a temporary folder, its auto-update, usage
statistics and telemetry are off, and any other HTTP it tried would go to a proxy that
refuses connections."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from node_projects import install, offline_environment
from processes import run_to_the_end
from servers import StartProxy
from upstream_server import Reply, ScriptedUpstream

from protocols import get_protocol, protocol_names

# On one worker: another would wait on the first's install (npm ci) to share it.
pytestmark = pytest.mark.xdist_group("gemini-cli")

PROJECT = Path(__file__).parent / "gemini_cli"
GEMINI = PROJECT / "node_modules" / ".bin" / "gemini"
GEMINI_PAGE = Path(__file__).parents[2] / "docs" / "gemini.md"
# What the documented environment points at, replaced by the served proxy.
DOCUMENTED_URL = "http://127.0.0.1:8000"
MODEL = "qwen2.5-coder-7b"
CONTENT = "hi-from-the-model"
EXPORT = re.compile(r"^export (?P<name>[A-Z_]+)=(?P<value>\S+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def gemini_installed() -> None:
    install(PROJECT, GEMINI)


def documented_setup() -> tuple[dict[str, str], dict[str, object]]:
    """The variables and the settings.json of the Gemini CLI section of docs/gemini.md."""
    page = GEMINI_PAGE.read_text()
    section = re.search(r"^## Gemini CLI\n(.*?)^## ", page, re.MULTILINE | re.DOTALL)
    assert section, "docs/gemini.md has a Gemini CLI section"
    shell = re.search(r"^```sh\n(.*?)^```", section[1], re.MULTILINE | re.DOTALL)
    settings = re.search(r"^```json\n(.*?)^```", section[1], re.MULTILINE | re.DOTALL)
    assert shell and settings, "the section shows the variables and the settings"
    variables = {found["name"]: found["value"] for found in EXPORT.finditer(shell[1])}
    assert variables["GOOGLE_GEMINI_BASE_URL"] == DOCUMENTED_URL
    assert "--skip-trust" in shell[1]
    return variables, json.loads(settings[1])


def pieces(text: str, size: int = 40) -> list[str]:
    """The model's text streamed in chunks, so calls arrive split across them."""
    return [text[at : at + size] for at in range(0, len(text), size)]


@pytest.mark.parametrize("protocol", protocol_names())
def test_gemini_cli_writes_a_file_and_reads_it_back_through_the_proxy(
    gemini_installed: None,
    upstream: ScriptedUpstream,
    start_proxy: StartProxy,
    refused_proxy: str,
    tmp_path: Path,
    protocol: str,
) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    (home / ".gemini").mkdir(parents=True)
    target = work / "hello.txt"
    proxy = start_proxy(tool_protocol=protocol)
    variables, settings = documented_setup()
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    render = get_protocol(protocol).render_call
    write = render("write_file", {"file_path": str(target), "content": CONTENT})
    read = render("read_file", {"file_path": str(target)})
    done = f"DONE: {target} contains {CONTENT}"
    upstream.script(
        Reply(*pieces(f"I'll create the file.\n{write}")),
        Reply(*pieces(f"Now let me read it back.\n{read}")),
        Reply(*pieces(done)),
    )

    command = [str(GEMINI), "-p", "Write it.", "-m", MODEL, "--yolo", "--skip-trust"]
    run = run_to_the_end(
        [*command, "--output-format", "json"],
        cwd=work,
        env=offline_environment(
            home, refused_proxy, {**variables, "GOOGLE_GEMINI_BASE_URL": proxy.url}
        ),
        stdin=subprocess.DEVNULL,
    )

    assert run.returncode == 0, run.stdout + run.stderr
    assert target.read_text() == CONTENT
    assert json.loads(run.stdout)["response"].strip() == done
    first, second, third = (asked.json for asked in upstream.chat_requests)
    assert first["stream"] is True and "tools" not in first
    assert first["model"] == MODEL
    declared = first["messages"][0]["content"]
    assert "write_file" in declared and "read_file" in declared
    assert CONTENT in json.dumps(third["messages"][-1]), "the read result went back to the model"
    assert len(second["messages"]) < len(third["messages"])
