"""What Claude Code's gateway protocol asks of the Messages door, through the official
Anthropic SDK: its attribution block kept out of the model's prompt, an upstream's refusal of
a request beyond its context said in Anthropic's words (which Claude Code's recovery reads),
an upstream's Retry-After kept, the session a request belongs to in the access line."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest
from messages_client import create, message_params
from observability import caught_logs
from servers import Proxy
from upstream_server import Reply, ScriptedUpstream, Verbatim

ATTRIBUTION = {
    "type": "text",
    "text": "x-anthropic-billing-header: cc_version=2.1.332.fc5; cc_entrypoint=sdk-cli;",
}
SYSTEM = {"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}
JSON_TYPE = {"content-type": "application/json"}
ACCESS_LOGGER = "toolcall_proxy.access"


@pytest.mark.parametrize(
    ("system", "sent"),
    [
        ([ATTRIBUTION, SYSTEM], "You are terse."),
        ([ATTRIBUTION], None),
        # Only a block of its own standing first is the attribution, as Anthropic's API
        # reads it: anywhere else, or inside a string, it is the client's text.
        ([SYSTEM, ATTRIBUTION], f"You are terse.\n{ATTRIBUTION['text']}"),
        (ATTRIBUTION["text"] + "\nYou are terse.", ATTRIBUTION["text"] + "\nYou are terse."),
        (
            [{**ATTRIBUTION, "text": "x-anthropic-billing"}, SYSTEM],
            "x-anthropic-billing\nYou are terse.",
        ),
    ],
    ids=["first", "alone", "second", "in-a-string", "a-prefix-of-it"],
)
def test_claude_codes_attribution_block_is_left_out_of_the_prompt(
    upstream: ScriptedUpstream, proxy: Proxy, system: Any, sent: str | None
) -> None:
    upstream.script(Reply("Hello."))

    create(proxy, False, system=system)

    messages = upstream.chat_requests[0].json["messages"]
    systems = [message["content"] for message in messages if message["role"] == "system"]
    assert systems == ([] if sent is None else [sent])


def test_a_malformed_system_block_after_the_attribution_is_named_by_its_place(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        create(proxy, False, system=[ATTRIBUTION, SYSTEM, {"type": "image"}])

    assert refused.value.body["error"]["message"].startswith("system[2]:")  # type: ignore[index]
    assert upstream.requests == []


VLLM = "This model's maximum context length is 16384 tokens. However, you requested 8192"
VLLM += " output tokens and your prompt contains at least 12000 input tokens, for a total of"
VLLM += " at least 20192 tokens. (parameter=input_tokens, value=12000)"
VLLM_PROMPT = "This model's maximum context length is 16384 tokens. However, you requested 0"
VLLM_PROMPT += " output tokens and your prompt contains at least 20000 input tokens, for a total"
VLLM_PROMPT += " of at least 20000 tokens."
VLLM_0_10 = "'max_tokens' or 'max_completion_tokens' is too large: 8192. This model's maximum"
VLLM_0_10 += " context length is 16384 tokens and your request has 12000 input tokens"
VLLM_0_10 += " (8192 > 16384 - 12000)."
VLLM_0_10_PROMPT = "This model's maximum context length is 16384 tokens. However, your request"
VLLM_0_10_PROMPT += " has 20000 input tokens. Please reduce the length of the input messages."
VLLM_OLD = "This model's maximum context length is 16384 tokens. However, you requested 20192"
VLLM_OLD += " tokens (12000 in the messages, 8192 in the completion). Please reduce the length"
VLLM_OLD += " of the messages or completion."
LLAMA_CPP = "request (20000 tokens) exceeds the available context size (16384 tokens), try"
LLAMA_CPP += " increasing it"
LLAMA_CPP_OLD = "the request exceeds the available context size, try increasing it"
TOO_MANY = "input length and `max_tokens` exceed context limit: 12000 + 8192 > 16384, decrease"
TOO_MANY += " input length or `max_tokens` and try again"
TOO_LONG = "prompt is too long: 20000 tokens > 16384 maximum"


@pytest.mark.parametrize(
    ("error", "said"),
    [
        ({"message": VLLM, "type": "BadRequestError", "param": "input_tokens"}, TOO_MANY),
        ({"message": VLLM_PROMPT, "type": "BadRequestError"}, TOO_LONG),
        ({"message": VLLM_0_10, "type": "BadRequestError"}, TOO_MANY),
        ({"message": VLLM_0_10_PROMPT, "type": "BadRequestError"}, TOO_LONG),
        ({"message": VLLM_OLD, "type": "BadRequestError"}, TOO_MANY),
        ({"message": LLAMA_CPP, "type": "exceed_context_size_error"}, TOO_LONG),
        (
            {"message": LLAMA_CPP_OLD, "n_prompt_tokens": 20000, "n_ctx": 16384},
            TOO_LONG,
        ),
    ],
    ids=[
        "vllm",
        "vllm-prompt",
        "vllm-0.10",
        "vllm-0.10-prompt",
        "vllm-old",
        "llama.cpp",
        "llama.cpp-old",
    ],
)
def test_a_request_beyond_the_upstreams_context_is_refused_in_anthropics_words(
    upstream: ScriptedUpstream, proxy: Proxy, stream: bool, error: dict[str, Any], said: str
) -> None:
    upstream.script(Verbatim(json.dumps({"error": error}).encode(), status=400, headers=JSON_TYPE))

    with pytest.raises(anthropic.BadRequestError) as refused:
        create(proxy, stream)

    assert refused.value.body == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": said},
    }


@pytest.mark.parametrize(
    ("status", "error"),
    [
        # no numbers to give
        (400, {"message": "This model's maximum context length is exceeded."}),
        (400, {"message": LLAMA_CPP_OLD}),
        (400, {"message": LLAMA_CPP_OLD, "n_prompt_tokens": 100, "n_ctx": 16384}),
        # the wording, but not a refusal of the request
        (500, {"message": VLLM}),
    ],
    ids=["no-numbers", "llama.cpp-no-fields", "llama.cpp-fits", "a-500"],
)
def test_other_errors_keep_the_upstreams_words(
    upstream: ScriptedUpstream, proxy: Proxy, status: int, error: dict[str, Any]
) -> None:
    upstream.script(
        Verbatim(json.dumps({"error": error}).encode(), status=status, headers=JSON_TYPE)
    )

    with pytest.raises(anthropic.APIStatusError) as refused:
        create(proxy, False)

    assert refused.value.status_code == status
    assert refused.value.body["error"]["message"] == error["message"]  # type: ignore[index]


def test_the_upstreams_retry_after_is_kept(upstream: ScriptedUpstream, proxy: Proxy) -> None:
    busy = {"error": {"message": "too many requests", "type": "rate_limit"}}
    headers = {**JSON_TYPE, "retry-after": "7"}
    upstream.script(Verbatim(json.dumps(busy).encode(), status=429, headers=headers))

    with pytest.raises(anthropic.RateLimitError) as refused:
        create(proxy, True)

    assert refused.value.response.headers["retry-after"] == "7"
    assert refused.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    upstream.script(Verbatim(json.dumps(busy).encode(), status=503, headers=headers))
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    answer = proxy.http.post("/v1/chat/completions", json=chat)
    assert answer.status_code == 503 and answer.headers["retry-after"] == "7"


@pytest.mark.parametrize(
    ("sent", "logged"),
    [
        ("cb738127-126a-48f5-bf71-71290b84e7cc", "cb738127-126a-48f5-bf71-71290b84e7cc"),
        ("has spaces", None),
        (None, None),
    ],
    ids=["named", "unsafe", "none"],
)
def test_the_session_claude_code_names_is_in_the_access_line(
    upstream: ScriptedUpstream, proxy: Proxy, sent: str | None, logged: str | None
) -> None:
    upstream.script(Reply("Hello."))
    headers = {} if sent is None else {"x-claude-code-session-id": sent}

    with caught_logs(ACCESS_LOGGER) as access:
        proxy.http.post("/v1/messages", json=message_params(), headers=headers)

    [line] = access.messages
    assert line.endswith(f" session={logged}") if logged else "session=" not in line
    assert upstream.chat_requests[0].headers.get("x-claude-code-session-id") == sent


def test_claude_codes_startup_probe_is_refused_at_once(
    upstream: ScriptedUpstream, proxy: Proxy
) -> None:
    """`HEAD /api/hello` warms Claude Code's connection; its gateway page lets a gateway
    refuse it."""
    answer = proxy.http.head("/api/hello")

    assert answer.status_code == 404
    assert upstream.requests == []
