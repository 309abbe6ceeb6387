"""Calling the proxy's Gemini API with the official google-genai SDK, as Gemini CLI's own
SDK does (the key in `x-goog-api-key`, every path under the API version), streamed or not,
checking what clients rely on: one candidate, the same `responseId` and `modelVersion` in
every response, the finish reason and `usageMetadata` on the last one only."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from google import genai
from google.genai import types
from servers import MODEL, TIME_TOOL, WEATHER_TOOL, Proxy

# A bound, not synchronisation: a broken proxy fails its test instead of hanging it.
CLIENT_TIMEOUT_MS = 10_000
PROXY_KEY = "proxy-key"
# Each way Google's clients send their key, as httpx request arguments.
KEY_FORMS = [
    {"headers": {"x-goog-api-key": PROXY_KEY}},
    {"params": {"key": PROXY_KEY}},
    {"headers": {"authorization": f"Bearer {PROXY_KEY}"}},
]
KEY_FORM_NAMES = ["x-goog-api-key", "query", "bearer"]


def declaration(tool: dict[str, Any]) -> types.FunctionDeclaration:
    """A chat tool as the Gemini API declares it, its JSON schema as Gemini CLI sends it."""
    function = tool["function"]
    return types.FunctionDeclaration(
        name=function["name"],
        description=function["description"],
        parameters_json_schema=function["parameters"],
    )


WEATHER = declaration(WEATHER_TOOL)
TIME = declaration(TIME_TOOL)
TOOLS = [types.Tool(function_declarations=[WEATHER, TIME])]
QUESTION = types.Content(role="user", parts=[types.Part(text="What is the weather in Paris?")])


@contextmanager
def gemini_client(
    proxy: Proxy,
    api_key: str = "test",
    *,
    api_version: str = "v1beta",
    headers: dict[str, str] | None = None,
) -> Iterator[genai.Client]:
    """The SDK pointed at the proxy, retrying nothing, sending `headers` with every request."""
    options = types.HttpOptions(
        base_url=proxy.url, api_version=api_version, timeout=CLIENT_TIMEOUT_MS, headers=headers
    )
    with genai.Client(api_key=api_key, http_options=options) as client:
        yield client


@dataclass(frozen=True)
class Answer:
    """A Gemini answer as the client assembled it, streamed or not."""

    text: str
    thoughts: str
    calls: list[types.FunctionCall]
    finish_reason: types.FinishReason | None
    usage: types.GenerateContentResponseUsageMetadata | None
    content: types.Content  # the model's turn, as a client sends it back in the history
    responses: list[types.GenerateContentResponse]

    @property
    def called(self) -> list[tuple[str | None, Any]]:
        return [(call.name, call.args) for call in self.calls]


def generate(
    proxy: Proxy,
    stream: bool,
    *,
    contents: list[types.Content] | None = None,
    model: str = MODEL,
    headers: dict[str, str] | None = None,
    **config: Any,
) -> Answer:
    """`generate_content` or `generate_content_stream` with this config, assembled."""
    asked = types.GenerateContentConfig(**config)
    with gemini_client(proxy, headers=headers) as client:
        if stream:
            responses = list(
                client.models.generate_content_stream(
                    model=model, contents=contents or [QUESTION], config=asked
                )
            )
        else:
            responses = [
                client.models.generate_content(
                    model=model, contents=contents or [QUESTION], config=asked
                )
            ]
    return answer_of(responses)


def answer_of(responses: list[types.GenerateContentResponse]) -> Answer:
    """The answer the responses add up to, checking the rules clients rely on."""
    assert responses
    assert len({(r.response_id, r.model_version) for r in responses}) == 1
    parts: list[types.Part] = []
    for at, response in enumerate(responses):
        [candidate] = response.candidates or []
        assert candidate.index == 0 and candidate.content and candidate.content.role == "model"
        last = at == len(responses) - 1
        assert (candidate.finish_reason is not None) == last, "the finish reason comes last"
        assert (response.usage_metadata is not None) == last, "the usage comes last"
        for part in candidate.content.parts or ():
            merged = parts[-1] if parts else None
            if (
                merged is not None
                and part.text is not None
                and merged.text is not None
                and bool(part.thought) == bool(merged.thought)
            ):
                parts[-1] = merged.model_copy(update={"text": merged.text + part.text})
            else:
                parts.append(part)
    parts = [part for part in parts if part.text != ""]  # the last response's empty text
    calls = [part.function_call for part in parts if part.function_call is not None]
    assert len({call.id for call in calls}) == len(calls), "call ids are unique"
    final = responses[-1]
    return Answer(
        text="".join(part.text or "" for part in parts if not part.thought),
        thoughts="".join(part.text or "" for part in parts if part.thought),
        calls=calls,
        finish_reason=final.candidates[0].finish_reason if final.candidates else None,
        usage=final.usage_metadata,
        content=types.Content(role="model", parts=parts),
        responses=responses,
    )
