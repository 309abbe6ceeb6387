"""The Vercel AI SDK 6's default OpenAI provider (`openai(model)`, the Responses API) against
the proxy, run with node: generateText and streamText with a tool executed between two steps.

The locked packages are installed into tests/clients/ai_sdk with `npm ci` on first use (the
npm registry is the only network this needs), and run with the test extra's node."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from node_projects import NODE, install
from observability import scrape
from processes import run_to_the_end
from servers import StartProxy
from upstream_server import WEATHER_CALL, Reply, ScriptedUpstream

from service.settings import DEFAULT_RESPONSE_STORE_SIZE

# On one worker: another would wait on the first's install (npm ci) to share it.
pytestmark = pytest.mark.xdist_group("ai-sdk")

PROJECT = Path(__file__).parent / "ai_sdk"
SCRIPT = PROJECT / "weather_agent.mjs"
STORE_EVENTS = "toolcall_proxy_response_store_events_total"


@pytest.fixture(scope="module")
def ai_sdk_installed() -> None:
    install(PROJECT, PROJECT / "node_modules" / "ai")


@pytest.mark.parametrize(
    ("mode", "store_size", "replicas"),
    [
        ("generate", DEFAULT_RESPONSE_STORE_SIZE, 1),
        ("stream", DEFAULT_RESPONSE_STORE_SIZE, 1),
        # `store: false` needs no response store: what works behind replicas with none.
        ("stateless", 0, 1),
        # Two proxies sharing one Redis: the second step's item_reference lands on the other.
        ("generate", DEFAULT_RESPONSE_STORE_SIZE, 2),
        ("stream", DEFAULT_RESPONSE_STORE_SIZE, 2),
    ],
)
def test_ai_sdk_executes_the_tool_and_answers_in_a_second_step(
    ai_sdk_installed: None,
    upstream: ScriptedUpstream,
    start_proxy: StartProxy,
    request: pytest.FixtureRequest,
    mode: str,
    store_size: int,
    replicas: int,
) -> None:
    shared = {"response_store_url": request.getfixturevalue("redis_url")} if replicas > 1 else {}
    proxies = [start_proxy(response_store_size=store_size, **shared) for _ in range(replicas)]
    upstream.script(Reply("Let me check.", WEATHER_CALL["json-mix"]), Reply("Sunny in Paris."))

    run = run_to_the_end(
        [str(NODE), str(SCRIPT), mode],
        cwd=PROJECT,
        env={**os.environ, "PROXY_URL": ",".join(proxy.url + "/v1" for proxy in proxies)},
    )

    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["text"] == "Sunny in Paris."
    assert result["finishReason"] == "stop"
    first, second = result["steps"]
    assert first["toolCalls"] == [{"toolName": "get_weather", "input": {"city": "Paris"}}]
    assert first["toolResults"] == [{"toolName": "get_weather", "output": "sunny in Paris"}]
    assert second["toolCalls"] == []
    asked_first, asked_second = upstream.chat_requests
    assert "tools" not in asked_first.json and "tools" not in asked_second.json
    # With `store` on (the AI SDK's default) the second step sends the first step's text as an
    # item_reference, which the proxy's store resolved; either way it is back in the history.
    history = asked_second.json["messages"]
    assert [message["role"] for message in history] == ["system", "user", "assistant", "user"]
    assert "Let me check." in history[2]["content"] and "Paris" in history[2]["content"]
    assert "sunny in Paris" in history[3]["content"]
    if replicas > 1:  # the step on the second proxy found the first step's items in Redis
        assert scrape(proxies[1].http).value(STORE_EVENTS, event="hit") > 0
