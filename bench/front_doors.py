"""What each front door costs the proxy: the same upstream stream (`--chunks` chunks of prose,
then a sentence and one tool call) asked for through chat completions, the Responses API,
the Messages API and the Gemini API, streamed, in one run. Printed: the proxy process's CPU
per streamed request for each door, and each door's ratio to chat's.

    python bench/front_doors.py [--rounds 5] [--repeat 40] [--chunks 200] [--warm-up 20]

The doors take turns request by request, each first as often as the others, so a slower
spell of a shared machine falls on all of them; each row shows the median over rounds and the
median of the rounds' own ratios. A stream counts only if it ended as its API ends a whole
answer (`[DONE]`, `response.completed`, `message_stop`, Gemini's `finishReason`) and held the
call: a door that fails cannot look fast.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from dataclasses import dataclass

import httpx
from proxy import (
    CLIENT_TLS,
    MESSAGES,
    TOOLS,
    Server,
    canned_upstream_command,
    free_port,
    proxy_command,
    server,
)

HEADERS = {"content-type": "application/json"}
WARM_UP_REQUESTS = 20
# The goal: no front door costs the proxy more than this much of chat's CPU per stream.
GOAL_RATIO = 1.05
FUNCTION = TOOLS[0]["function"]


@dataclass(frozen=True)
class Door:
    """A front door: where it is asked, how its streamed request is written, and the text that
    its stream's last event and its tool call hold."""

    name: str
    route: str  # the `route` label of the proxy's requests_total
    path: str
    body: dict[str, object]
    ends_with: bytes
    call: bytes
    # Where a whole answer is asked for, for a door whose path, not a field, says whether it
    # streams (Gemini's `:generateContent` and `:streamGenerateContent`).
    whole_path: str | None = None

    def request(self, *, stream: bool) -> tuple[str, dict[str, object]]:
        """The path and body asking for a streamed answer, or a whole one."""
        if self.whole_path is None:
            return self.path, {**self.body, "stream": stream}
        return (self.path if stream else self.whole_path), self.body


def doors(chunks: int) -> list[Door]:
    """The four doors, each asking for a `chunks`-chunk stream (the canned upstream reads
    the chat request's max_tokens as its length) with the one tool declared its own way."""
    return [
        Door(
            "chat completions",
            "chat",
            "/v1/chat/completions",
            {"model": "bench", "messages": MESSAGES, "tools": TOOLS, "max_tokens": chunks},
            b"data: [DONE]\n\n",
            b'"name":"get_weather"',
        ),
        Door(
            "Responses",
            "responses",
            "/v1/responses",
            {
                "model": "bench",
                "input": MESSAGES[0]["content"],
                "tools": [{"type": "function", **FUNCTION}],
                "max_output_tokens": chunks,
            },
            b"event: response.completed\n",
            b'"name":"get_weather"',
        ),
        Door(
            "Messages",
            "messages",
            "/v1/messages",
            {
                "model": "bench",
                "messages": MESSAGES,
                "tools": [
                    {
                        "name": FUNCTION["name"],
                        "description": FUNCTION["description"],
                        "input_schema": FUNCTION["parameters"],
                    }
                ],
                "max_tokens": chunks,
            },
            b"event: message_stop\n",
            b'"name":"get_weather"',
        ),
        Door(
            "Gemini",
            "gemini",
            "/v1beta/models/bench:streamGenerateContent?alt=sse",
            {
                "contents": [{"role": "user", "parts": [{"text": MESSAGES[0]["content"]}]}],
                "tools": [
                    {
                        "functionDeclarations": [
                            {
                                "name": FUNCTION["name"],
                                "description": FUNCTION["description"],
                                "parametersJsonSchema": FUNCTION["parameters"],
                            }
                        ]
                    }
                ],
                "generationConfig": {"maxOutputTokens": chunks},
            },
            b'"finishReason":"STOP"',
            b'"name":"get_weather"',
            "/v1beta/models/bench:generateContent",
        ),
    ]


async def streamed(client: httpx.AsyncClient, door: Door) -> None:
    """One streamed request through `door`, read to its end and checked."""
    path, body = door.request(stream=True)
    payload = json.dumps(body).encode()
    async with client.stream("POST", path, content=payload, headers=HEADERS) as response:
        body = b"".join([chunk async for chunk in response.aiter_raw()])
    if response.status_code != 200 or door.call not in body or door.ends_with not in body:
        raise RuntimeError(f"{door.name} answered {response.status_code}: {body[-300:]!r}")


async def one_round(proxy: Server, front_doors: list[Door], repeat: int) -> dict[str, float]:
    """The proxy's CPU milliseconds per streamed request through each door: `repeat` times
    one request through each door in turn, one at a time, each request's CPU read on its own
    so that a slower spell of the machine falls on every door alike. Each door goes first as
    often as the others: what a request leaves the proxy to do after its last byte falls on
    the next one (chat measured after chat cost 0.97x the first)."""
    cpu = dict.fromkeys((door.name for door in front_doors), 0.0)
    async with httpx.AsyncClient(base_url=proxy.url, timeout=60, verify=CLIENT_TLS) as client:
        for turn in range(repeat):
            first = turn % len(front_doors)
            for door in [*front_doors[first:], *front_doors[:first]]:
                before = proxy.cpu_seconds()
                await streamed(client, door)
                cpu[door.name] += proxy.cpu_seconds() - before
    return {name: seconds / repeat * 1e3 for name, seconds in cpu.items()}


async def warm_up(proxy: Server, door: Door, requests: int) -> None:
    async with httpx.AsyncClient(base_url=proxy.url, timeout=60, verify=CLIENT_TLS) as client:
        for _ in range(requests):
            await streamed(client, door)


def requests_counted(url: str) -> dict[str, float]:
    """The proxy's `requests_total` by route."""
    counted: dict[str, float] = {}
    for line in httpx.get(f"{url}/metrics", verify=CLIENT_TLS).text.splitlines():
        if line.startswith("toolcall_proxy_requests_total{"):
            route = line.split('route="', 1)[1].split('"', 1)[0]
            counted[route] = counted.get(route, 0) + float(line.rsplit(" ", 1)[1])
    return counted


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--rounds", type=int, default=5, help="measurement rounds")
    options.add_argument("--repeat", type=int, default=40, help="streams per door and round")
    options.add_argument("--chunks", type=int, default=200, help="prose chunks per stream")
    options.add_argument(
        "--warm-up", type=int, default=WARM_UP_REQUESTS, help="streams per door first"
    )
    args = options.parse_args()
    upstream_port, proxy_port = free_port(), free_port()
    with server(canned_upstream_command(upstream_port), upstream_port) as upstream:
        proxy_env = {"UPSTREAM_BASE_URL": f"{upstream.url}/v1", "ACCESS_LOG": "false"}
        with server(proxy_command(proxy_port), proxy_port, proxy_env) as proxy:
            counted_before = requests_counted(proxy.url)
            front_doors = doors(args.chunks)
            for door in front_doors:
                asyncio.run(warm_up(proxy, door, args.warm_up))
            rounds = [
                asyncio.run(one_round(proxy, front_doors, args.repeat)) for _ in range(args.rounds)
            ]
            counted = requests_counted(proxy.url)
    print(
        f"{args.rounds} rounds of {args.repeat} streams per door, one at a time, the doors in "
        f"turn; each stream "
        f"{args.chunks} chunks of prose, then a sentence and one tool call"
    )
    print(f"{'front door':<18} {'proxy CPU ms per stream':>24} {'vs chat':>8}  ratio per round")
    chat = front_doors[0].name
    worst = 0.0
    for door in front_doors:
        ratios = [cpu[door.name] / cpu[chat] for cpu in rounds]
        ratio = statistics.median(ratios)
        worst = max(worst, ratio)
        print(
            f"{door.name:<18} {statistics.median(cpu[door.name] for cpu in rounds):>24.2f} "
            f"{ratio:>7.2f}x  " + " ".join(f"{each:.2f}" for each in ratios)
        )
    sent = args.warm_up + args.rounds * args.repeat
    for door in front_doors:
        grew = counted.get(door.route, 0) - counted_before.get(door.route, 0)
        print(f"proxy requests_total{{route={door.route!r}}} grew by {grew:.0f} of {sent}")
    verdict = "met" if worst <= GOAL_RATIO else "NOT met"
    print(f"every front door within {GOAL_RATIO:.2f}x chat's CPU per stream: {verdict}")


if __name__ == "__main__":
    main()
