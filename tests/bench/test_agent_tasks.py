"""The real-agent benchmark (bench/agent_tasks.py) measures what it says: each task's check
fails on the files the agent starts from and passes once the task is done, and a run drives
Pi itself through the proxy, reading the model's turns, the calls the client got and the
parse errors from the proxy's own log. A scripted model stands in for the real one."""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from node_projects import install
from processes import run_to_the_end
from upstream_server import Reply, ScriptedUpstream, rendered_calls

BENCH = Path(__file__).resolve().parents[2] / "bench"
# One worker runs this module's tests: the first to need Pi installs it (npm ci), and any
# other worker that needed it too would only wait on the install's lock meanwhile.
pytestmark = pytest.mark.xdist_group("pi")


def _script_module(name: str) -> ModuleType:
    """A bench/ script as a module, importing its siblings; bench/ leaves sys.path again, where
    its modules would shadow the tests' own of the same names (layers.py)."""
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))


agent_tasks = _script_module("agent_tasks")

TASKS = {task.name: task for task in agent_tasks.TASKS}


def _write(name: str, text: str) -> Callable[[Path], None]:
    return lambda work: (work / name).write_text(text)


# Each task done as the agent should do it, and what it then says.
SOLUTIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    "hello": (_write("hello.py", "print('hello world')\n"), "It printed: hello world"),
    "bugfix": (_write("calc.py", "def add(a, b):\n    return a + b\n"), "Fixed."),
    "rename": (
        lambda work: [
            (work / name).write_text((work / name).read_text().replace("get_name", "get_user_name"))
            for name in ("util.py", "main.py")
        ],
        "Renamed.",
    ),
    "config": (_write("port.txt", "8123\n"), "Done."),
    "append": (_write("notes.txt", "first\nsecond\nthird\n"), "Done."),
    "count": (_write("count.txt", "4"), "There are 4."),
    "version": (lambda work: None, "The version is 2.7.1."),
}


@pytest.mark.parametrize("name", sorted(TASKS))
def test_a_task_is_checked_undone_then_done(name: str, tmp_path: Path) -> None:
    task = TASKS[name]
    agent_tasks.lay_out(task, tmp_path)
    assert task.check(tmp_path, "I could not do it.") is not None

    solve, answer = SOLUTIONS[name]
    solve(tmp_path)
    assert task.check(tmp_path, answer) is None


def test_every_task_has_a_solution_here() -> None:
    assert set(SOLUTIONS) == set(TASKS)


@pytest.fixture(scope="module")
def pi() -> None:
    install(agent_tasks.PI_PROJECT, agent_tasks.PI)


@pytest.mark.usefixtures("pi")
@pytest.mark.parametrize("api", ["chat", "messages"])
def test_pi_does_a_task_through_the_proxy_and_the_log_gives_each_turn(
    upstream: ScriptedUpstream, upstream_url: str, tmp_path: Path, api: str
) -> None:
    upstream.script(
        Reply(rendered_calls("read", {"path": "config.json"})["json-mix"]),
        Reply(rendered_calls("write", {"path": "port.txt", "content": "8123"})["json-mix"]),
        Reply("Done: port.txt holds 8123."),
    )
    out = tmp_path / "runs.jsonl"
    arguments = ("--protocol", "json-mix", "--api", api, "--only", "config", "--out", str(out))
    bench = [sys.executable, str(BENCH / "agent_tasks.py"), "--upstream", upstream_url]
    finished = run_to_the_end([*bench, *arguments])
    assert finished.returncode == 0, finished.stderr

    (run,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert (run["task"], run["passed"], run["cause"]) == ("config", True, None), run["output"]
    assert [(turn["sent"], turn["parsed"]) for turn in run["turns"]] == [
        (1, ['read {"path": "config.json"}']),
        (1, ['write {"path": "port.txt", "content": "8123"}']),
        (0, []),
    ]
    assert '"content": "8123"' in run["turns"][1]["text"]
    assert "| run | json-mix | " + api + " | 1/1 | 3 | 2 | 0/0/0 |" in finished.stdout
    # The model was asked in the proxy's prompt, Pi's tools in it.
    assert "tools" not in upstream.chat_requests[0].json


@pytest.mark.usefixtures("pi")
def test_a_call_the_proxy_could_not_read_fails_the_run_as_the_proxy_s(
    upstream: ScriptedUpstream, upstream_url: str, tmp_path: Path
) -> None:
    upstream.script(Reply('<tool_call>\n{"name": "write", "arguments": {"path": </tool_call>'))
    out = tmp_path / "runs.jsonl"
    bench = [sys.executable, str(BENCH / "agent_tasks.py"), "--upstream", upstream_url]
    finished = run_to_the_end([*bench, "--only", "config", "--out", str(out)])
    assert finished.returncode == 0, finished.stderr

    (run,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert (run["passed"], run["cause"], run["problem"]) == (False, "proxy", "port.txt missing")
    assert run["turns"][0]["errors"][0].startswith("malformed_json:")
    assert "- run json-mix chat config: proxy, port.txt missing" in finished.stdout


@pytest.mark.usefixtures("pi")
def test_a_run_counts_the_calls_the_client_got_beside_those_read(
    upstream: ScriptedUpstream, upstream_url: str, tmp_path: Path
) -> None:
    read = rendered_calls("read", {"path": "config.json"})["json-mix"]
    guessed_write = rendered_calls("write", {"path": "port.txt", "content": "8080"})["json-mix"]
    upstream.script(Reply(read + "\n" + guessed_write), Reply("The port is 8123."))
    out = tmp_path / "runs.jsonl"
    bench = [sys.executable, str(BENCH / "agent_tasks.py"), "--upstream", upstream_url]
    finished = run_to_the_end(
        [*bench, "--only", "config", "--out", str(out)], env={**os.environ, "SINGLE_CALL": "true"}
    )
    assert finished.returncode == 0, finished.stderr

    (run,) = [json.loads(line) for line in out.read_text().splitlines()]
    first = run["turns"][0]
    assert (first["sent"], len(first["parsed"])) == (1, 2)  # one call an answer
    assert (run["passed"], run["cause"]) == (False, "model")
