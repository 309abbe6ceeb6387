"""Proxy overhead: the same requests sent straight to a canned upstream and through the
proxy in front of it, in one run, as milliseconds per request and as a ratio.

The upstream answers instantly (no model), so the numbers isolate what the proxy adds.
Each server runs in its own process so the client does not share a GIL with them; the
proxy's own CPU time per request is reported too (steadier than wall time on a busy box).

    python bench/proxy.py [--requests 200] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx

HERE = Path(__file__).resolve().parent
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
UVICORN = [sys.executable, "-m", "uvicorn", "--log-level", "warning"]
# How long a server has to stop once asked before it is killed.
STOP_SECONDS = 10
# Between two looks at a starting server.
POLL_SECONDS = 0.05
# Every client here shares one TLS context: each new httpx client would otherwise load the CA
# bundle again (about 40 ms of CPU), though the benchmarks speak plain HTTP.
CLIENT_TLS = ssl.create_default_context()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    url: str
    pid: int

    def cpu_seconds(self) -> float:
        """CPU time the process and its children (the workers, when there are several) have
        used, every thread of each (Linux scheduler statistics, in nanoseconds: steadier than
        wall time on a busy machine, finer than clock ticks)."""
        threads = [thread for pid in self.process_tree() for thread in _threads(pid)]
        return sum(int((thread / "schedstat").read_text().split()[0]) for thread in threads) / 1e9

    def process_tree(self) -> list[int]:
        """The process and its children."""
        return process_tree(self.pid)


def process_tree(pid: int) -> list[int]:
    """`pid` and its children."""
    pids = [pid]
    for thread in _threads(pid):
        pids += [int(child) for child in (thread / "children").read_text().split()]
    return pids


def _threads(pid: int) -> list[Path]:
    return list(Path(f"/proc/{pid}/task").iterdir())


def canned_upstream_command(port: int, *, burst: bool = False) -> list[str]:
    """The instant canned upstream (`canned_upstream.py`) served on `port`; with `burst`, one
    that writes each stream whole, at once."""
    factory = "canned_upstream:create_burst_app" if burst else "canned_upstream:create_app"
    upstream = ["--factory", factory, "--app-dir", str(HERE)]
    return [*UVICORN, *upstream, "--port", str(port)]


def relay_command(port: int) -> list[str]:
    """The bare FastAPI + httpx relay (`bare_relay.py`) served on `port`; its upstream is
    the `BARE_RELAY_UPSTREAM` environment variable."""
    relay = ["--factory", "bare_relay:create_app", "--app-dir", str(HERE)]
    return [*UVICORN, *relay, "--port", str(port)]


def proxy_command(port: int, workers: int = 1) -> list[str]:
    """The proxy through its own command, so `--workers` is the real thing."""
    service = [sys.executable, "-m", "service", "--log-level", "warning"]
    return [*service, "--port", str(port), "--workers", str(workers)]


@contextmanager
def server(
    command: list[str], port: int, env: dict[str, str] | None = None, log: IO[str] | None = None
) -> Iterator[Server]:
    """Run a server process until the block ends; yields it once it answers. Its output goes
    to `log`, or nowhere."""
    process = subprocess.Popen(
        command,
        env={**os.environ, **(env or {})},
        stdout=log or subprocess.DEVNULL,
        stderr=log or subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        # Start-up, not a measurement: however long a loaded machine takes.
        with httpx.Client(base_url=url, verify=CLIENT_TLS) as client:
            while not answers(lambda: client.get("/healthz"), httpx.TransportError, process):
                time.sleep(POLL_SECONDS)
        yield Server(url, process.pid)
    finally:
        stop(process)


def answers(
    call: Callable[[], object], refused: type[Exception], process: subprocess.Popen[bytes]
) -> bool:
    """Whether a starting server answers `call` yet (False while it raises `refused`); one
    that exited instead ends the benchmark."""
    try:
        call()
        return True
    except refused:
        if process.poll() is not None:
            raise SystemExit(f"{process.args} exited with status {process.returncode}") from None
        return False


def stop(process: subprocess.Popen[bytes]) -> None:
    """Ask `process` to stop; one still running after STOP_SECONDS (a server draining its
    open answers, up to the proxy's DRAIN_TIMEOUT) is killed, and its children with it."""
    children = []
    with contextlib.suppress(OSError):  # gone already
        children = process_tree(process.pid)[1:]
    process.terminate()
    try:
        process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process.kill()
        process.wait()


async def measure(url: str, body: dict[str, object], requests: int, concurrency: int) -> float:
    """Mean milliseconds per request with `concurrency` requests in flight."""
    payload = json.dumps(body).encode()
    headers = {"content-type": "application/json"}
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(
        base_url=url, limits=limits, timeout=30, verify=CLIENT_TLS
    ) as client:

        async def one() -> None:
            if body.get("stream"):
                async with client.stream(
                    "POST", "/v1/chat/completions", content=payload, headers=headers
                ) as response:
                    async for _ in response.aiter_bytes():
                        pass
            else:
                (await client.post("/v1/chat/completions", content=payload, headers=headers))

        async def worker(count: int) -> None:
            for _ in range(count):
                await one()

        await worker(5)  # warm the connections
        started = time.perf_counter()
        share = requests // concurrency
        await asyncio.gather(*(worker(share) for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    return elapsed / (share * concurrency) * 1000


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--requests", type=int, default=200)
    options.add_argument("--concurrency", type=int, default=1)
    args = options.parse_args()
    upstream_port, proxy_port = free_port(), free_port()
    with server(canned_upstream_command(upstream_port), upstream_port) as upstream:
        proxy_env = {
            "UPSTREAM_BASE_URL": f"{upstream.url}/v1",
            "PROXY_PORT": str(proxy_port),
            "ACCESS_LOG": "false",
        }
        app_command = [*UVICORN, "--factory", "service.app:app_from_environment"]
        app_command += ["--port", str(proxy_port)]
        with server(app_command, proxy_port, proxy_env) as proxy:
            print(f"{args.requests} requests, {args.concurrency} in flight")
            print(
                f"{'case':<24} {'direct ms':>10} {'proxy ms':>10} {'ratio':>7}"
                f" {'added ms':>9} {'proxy CPU ms':>13}"
            )
            for label, body in {
                "no tools, non-stream": {"messages": MESSAGES},
                "no tools, stream": {"messages": MESSAGES, "stream": True},
                "tools, non-stream": {"messages": MESSAGES, "tools": TOOLS},
                "tools, stream": {"messages": MESSAGES, "tools": TOOLS, "stream": True},
            }.items():
                direct = asyncio.run(measure(upstream.url, body, args.requests, args.concurrency))
                cpu_before = proxy.cpu_seconds()
                proxied = asyncio.run(measure(proxy.url, body, args.requests, args.concurrency))
                cpu = (proxy.cpu_seconds() - cpu_before) / args.requests * 1000
                print(
                    f"{label:<24} {direct:>10.2f} {proxied:>10.2f}"
                    f" {proxied / direct:>7.2f} {proxied - direct:>9.2f} {cpu:>13.2f}"
                )


if __name__ == "__main__":
    main()
