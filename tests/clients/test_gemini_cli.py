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
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from node_projects import install, path_with_node
from servers import StartProxy
from upstream_server import Reply, ScriptedUpstream

from protocols import get_protocol, protocol_names

PROJECT = Path(__file__).parent / "gemini_cli"
GEMINI = PROJECT / "node_modules" / ".bin" / "gemini"
GEMINI_PAGE = Path(__file__).parents[2] / "docs" / "gemini.md"
# A bound, not a wait: a hung run fails the test instead of stalling the suite.
GEMINI_TIMEOUT_SECONDS = 90
# What the documented environment points at, replaced by the served proxy.
DOCUMENTED_URL = "http://127.0.0.1:8000"
MODEL = "qwen2.5-coder-7b"
CONTENT = "hi-from-the-model"
EXPORT = re.compile(r"^export (?P<name>[A-Z_]+)=(?P<value>\S+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def gemini_installed() -> None:
    install(PROJECT, GEMINI)


@pytest.fixture
def refused_proxy() -> Iterator[str]:
    """An HTTP proxy address that refuses connections: a port bound here, never listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


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

    run = subprocess.run(
        [
            str(GEMINI),
            "-p",
            "Write it.",
            "-m",
            MODEL,
            "--yolo",
            "--skip-trust",
            "--output-format",
            "json",
        ],
        cwd=work,
        env=gemini_environment(variables, proxy.url, home, refused_proxy),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=GEMINI_TIMEOUT_SECONDS,
        check=False,
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


def gemini_environment(
    variables: dict[str, str], proxy_url: str, home: Path, refused_proxy: str
) -> dict[str, str]:
    """Gemini CLI's whole environment: the documented variables pointed at the served proxy,
    its own home, and HTTP proxies that refuse connections for anything but loopback."""
    proxies = {name: refused_proxy for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")}
    loopback = "127.0.0.1,localhost"
    return {
        "PATH": path_with_node(),
        "HOME": str(home),
        **variables,
        "GOOGLE_GEMINI_BASE_URL": proxy_url,
        **proxies,
        **{name.lower(): value for name, value in proxies.items()},
        "NO_PROXY": loopback,
        "no_proxy": loopback,
    }
