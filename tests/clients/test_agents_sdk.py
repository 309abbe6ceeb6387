"""The OpenAI Agents SDK, which speaks the Responses API, running an agent with one function
tool against the proxy: the model's call is executed and its result answered in text."""

from __future__ import annotations

import asyncio

from agents import (
    Agent,
    ModelSettings,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI
from servers import MODEL, Proxy
from upstream_server import WEATHER_CALL, Reply, ScriptedUpstream

set_tracing_disabled(True)  # traces would otherwise be exported to OpenAI


def test_agent_runs_its_function_tool_and_answers_with_the_result(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool
) -> None:
    asked: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        asked.append(city)
        return f"sunny in {city}"

    upstream.script(Reply(WEATHER_CALL["json-mix"]), Reply("It is sunny in Paris."))
    client = AsyncOpenAI(base_url=proxy.url + "/v1", api_key="unused")
    agent = Agent(
        name="weather",
        instructions="Answer weather questions with the tool.",
        model=OpenAIResponsesModel(model=MODEL, openai_client=client),
        model_settings=ModelSettings(temperature=0),
        tools=[get_weather],
    )

    final_output = asyncio.run(_run(agent, "What is the weather in Paris?", stream))

    assert final_output == "It is sunny in Paris."
    assert asked == ["Paris"]
    first, second = upstream.chat_requests
    assert "tools" not in first.json and "tools" not in second.json
    assert "Answer weather questions" in first.json["messages"][0]["content"]
    assert "sunny in Paris" in second.json["messages"][-1]["content"]


async def _run(agent: Agent, question: str, stream: bool) -> object:
    if not stream:
        return (await Runner.run(agent, question)).final_output
    result = Runner.run_streamed(agent, question)
    async for _event in result.stream_events():
        pass
    return result.final_output
