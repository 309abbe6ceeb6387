"""What the proxy adds to a request against the upstream itself, as gateways are compared:
one request at a time, on an instant upstream (`canned_upstream.py`), the same request sent
straight to it and through the proxy, turn about, in one run.

    python bench/added_latency.py [--requests 400] [--starts 5]

Printed: p50 and p99 added (ms) for a whole answer and a streamed one (to its first byte and
to its end), with a tool (the proxy renders and parses) and without (it relays); what the
proxy says it added (`toolcall_proxy_overhead_seconds`, mean); the time from starting the
command to `/readyz` answering 200; the proxy's resident memory idle after start and after
the run. Numbers from a shared machine are noisy: compare within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import time
from pathlib import Path

import httpx
from proxy import MESSAGES, TOOLS, canned_upstream_command, free_port, proxy_command, server

CHAT_PATH = "/v1/chat/completions"
HEADERS = {"content-type": "application/json"}
WARM_UP_REQUESTS = 20
READY_POLL_SECONDS = 0.005  # start-up, not a measurement: how often /readyz is asked
READY_WITHIN_SECONDS = 30
Sample = tuple[float, float]  # seconds to the first body byte, and to the end


def payload(*, stream: bool, tools: bool) -> bytes:
    request: dict[str, object] = {"model": "bench", "messages": MESSAGES, "stream": stream}
    if tools:
        request["tools"] = TOOLS
    return json.dumps(request).encode()


async def timed(client: httpx.AsyncClient, body: bytes) -> Sample:
    started = time.perf_counter()
    first = None
    async with client.stream("POST", CHAT_PATH, content=body, headers=HEADERS) as response:
        response.raise_for_status()
        async for _ in response.aiter_raw():
            first = first or time.perf_counter() - started
    end = time.perf_counter() - started
    return (first or end, end)


async def added(upstream: str, proxy: str, requests: int) -> dict[str, dict[str, float]]:
    """Per case, p50 and p99 (ms) of the proxy's time less the upstream's, each taken over
    the same number of requests sent turn about."""
    cases = {
        f"{mode} {'with' if tools else 'without'} tools": payload(stream=stream, tools=tools)
        for mode, stream in (("whole", False), ("streamed", True))
        for tools in (True, False)
    }
    rows: dict[str, dict[str, float]] = {}
    async with (
        httpx.AsyncClient(base_url=upstream, timeout=30) as straight,
        httpx.AsyncClient(base_url=proxy, timeout=30) as through,
    ):
        for body in cases.values():
            for _ in range(WARM_UP_REQUESTS):
                await timed(straight, body)
                await timed(through, body)
        for name, body in cases.items():
            direct: list[Sample] = []
            proxied: list[Sample] = []
            for _ in range(requests):
                direct.append(await timed(straight, body))
                proxied.append(await timed(through, body))
            rows[name] = {
                f"{label} {point}": (quantile(proxied, at, point) - quantile(direct, at, point))
                * 1e3
                for label, at in (("first byte", 0), ("end", 1))
                for point in ("p50", "p99")
            }
    return rows


def quantile(samples: list[Sample], at: int, point: str) -> float:
    values = sorted(sample[at] for sample in samples)
    if point == "p50":
        return statistics.median(values)
    return statistics.quantiles(values, n=100, method="inclusive")[98]


def cold_start_seconds(upstream: str) -> float:
    """Seconds from starting the command to /readyz answering 200."""
    port = free_port()
    env = {"UPSTREAM_BASE_URL": f"{upstream}/v1"}
    started = time.perf_counter()
    process = subprocess.Popen(
        proxy_command(port),
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while time.perf_counter() - started < READY_WITHIN_SECONDS:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    return time.perf_counter() - started
            except httpx.TransportError:
                pass
            time.sleep(READY_POLL_SECONDS)
        raise RuntimeError("the proxy was not ready in time")
    finally:
        process.terminate()
        process.wait()


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    [kb] = [line.split()[1] for line in status.splitlines() if line.startswith("VmRSS")]
    return int(kb) / 1024


def overhead_mean_ms(proxy: str) -> float:
    """The proxy's own account: `toolcall_proxy_overhead_seconds` sum over count, in ms."""
    values = {"sum": 0.0, "count": 0.0}
    for line in httpx.get(f"{proxy}/metrics").text.splitlines():
        for kind in values:
            if line.startswith(f"toolcall_proxy_overhead_seconds_{kind}{{"):
                values[kind] += float(line.rsplit(" ", 1)[1])
    return values["sum"] / max(values["count"], 1) * 1e3


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--requests", type=int, default=400, help="requests per case and side")
    options.add_argument("--starts", type=int, default=5, help="cold starts to /readyz")
    args = options.parse_args()
    upstream_port, proxy_port = free_port(), free_port()
    with server(canned_upstream_command(upstream_port), upstream_port) as upstream:
        starts = [cold_start_seconds(upstream.url) for _ in range(args.starts)]
        env = {"UPSTREAM_BASE_URL": f"{upstream.url}/v1", "ACCESS_LOG": "false"}
        with server(proxy_command(proxy_port), proxy_port, env) as proxy:
            idle = rss_mb(proxy.pid)
            rows = asyncio.run(added(upstream.url, proxy.url, args.requests))
            told = overhead_mean_ms(proxy.url)
            after = rss_mb(proxy.pid)
    columns = ["first byte p50", "first byte p99", "end p50", "end p99"]
    print(f"{'added ms, c=1':<28}" + "".join(f"{column:>16}" for column in columns))
    for name, row in rows.items():
        print(f"{name:<28}" + "".join(f"{row[column]:>16.2f}" for column in columns))
    print(f"proxy's own account (overhead_seconds mean): {told:.2f} ms")
    print(f"cold start to /readyz: median {statistics.median(starts):.2f} s of {len(starts)}")
    print(f"RSS: idle {idle:.1f} MB, after the run {after:.1f} MB")


if __name__ == "__main__":
    main()
