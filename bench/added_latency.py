"""What the proxy adds to a request against the upstream itself, as gateways are compared,
in one table from one run: every front door (chat completions, Responses, Messages, Gemini), with a
tool (the proxy renders and parses) and without, whole answers and streams, one request at
a time and at 10 and 64 in flight; beside them the bare FastAPI + httpx relay
(`bare_relay.py`), the floor of any proxy written with these parts. Below the table: cold
start to `/readyz`, resident memory idle and under the most streams in flight, what the
proxy says it added (`toolcall_proxy_overhead_seconds`) and the machine's load average.

    python bench/added_latency.py [--requests 200] [--chunks 100] [--starts 5]
        [--concurrency 1,10,64] [--warm-up 10]

Whole answers: p50 and p99 of the time to the answer's end, the proxy's less the upstream's
when it is asked the same chat request straight. Streams: the same for the time to the
first token (the first text of the answer, not the stream's first bytes), and the median
per-chunk gap (the time from the first token to the end over the stream's chunks), both
against the upstream's own stream. `--chunks` lengthens each stream with that many chunks
of prose before the canned answer. The upstream (`canned_upstream.py`) answers at once,
writing each chunk of a stream on its own.

Each row sends `--requests` to the upstream straight and as many to the server measured,
turn about: one request at a time, request by request; more at a time, in turns of
TURN_REQUESTS requests per client. Added p50 and p99 are taken over all of a row's samples.
On a shared machine compare the rows of one run, and read the load average printed below:
numbers from a loaded machine are upper bounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from front_doors import doors
from proxy import (
    CLIENT_TLS,
    MESSAGES,
    TOOLS,
    Server,
    canned_upstream_command,
    free_port,
    proxy_command,
    relay_command,
    server,
)

CHAT_PATH = "/v1/chat/completions"
HEADERS = {"content-type": "application/json"}
WARM_UP_REQUESTS = 10
TURN_REQUESTS = 5  # per client, in each turn with several requests in flight
# A connection idle longer than this is not reused: shorter than the servers' keep-alive
# timeout (uvicorn's 5 s), so none is reused just as its server closes it (the other side's
# turn can last that long with 64 streams in flight).
CLIENT_KEEPALIVE_SECONDS = 2.0
READY_POLL_SECONDS = 0.005  # start-up, not a measurement: how often /readyz is asked
READY_WITHIN_SECONDS = 30
RSS_POLL_SECONDS = 0.05
# The first text of the canned answer: prose, or the sentence before its call.
FIRST_TOKENS = (b"Sun ", b"Let ")
ANSWER_CHUNKS = 36  # the canned answer's chunks after the prose (role, text, call, finish)


@dataclass(frozen=True)
class Sample:
    """One request: seconds to its first token (streams) and to its end."""

    first_token: float
    end: float


@dataclass(frozen=True)
class Case:
    """One row: a request through `server` beside the same chat request to the upstream."""

    name: str
    path: str
    body: bytes
    direct: bytes  # the chat request the upstream is asked straight
    stream: bool
    relay: bool = False  # through the bare relay rather than the proxy


def cases(chunks: int) -> list[Case]:
    """Every front door with a tool and without, whole and streamed, then the bare relay."""
    rows = []
    for stream in (False, True):
        mode = "streamed" if stream else "whole"
        direct: dict[str, object] = {"model": "bench", "messages": MESSAGES, "stream": stream}
        if stream and chunks:
            direct["max_tokens"] = chunks
        for door in doors(chunks):  # a whole answer is the canned one, whatever its length
            for tools in (True, False):
                path, body = door.request(stream=stream)
                if not tools:
                    body = {key: value for key, value in body.items() if key != "tools"}
                label = f"{door.name}, {mode}, {'with' if tools else 'no'} tool"
                rows.append(Case(label, path, _json(body), _json(direct), stream))
        relayed = {**direct, "tools": TOOLS}
        rows.append(
            Case(f"bare relay, {mode}", CHAT_PATH, _json(relayed), _json(direct), stream, True)
        )
    return rows


def _json(body: dict[str, object]) -> bytes:
    return json.dumps(body).encode()


async def timed(client: httpx.AsyncClient, path: str, body: bytes) -> Sample:
    started = time.perf_counter()
    first_token = None
    seen = b""
    async with client.stream("POST", path, content=body, headers=HEADERS) as response:
        response.raise_for_status()
        async for data in response.aiter_raw():
            if first_token is None:
                seen += data
                if any(token in seen for token in FIRST_TOKENS):
                    first_token = time.perf_counter() - started
    end = time.perf_counter() - started
    return Sample(end if first_token is None else first_token, end)


async def turn(client: httpx.AsyncClient, path: str, body: bytes, concurrency: int) -> list[Sample]:
    """`concurrency` requests in flight, each client sending its share one after another."""
    each = 1 if concurrency == 1 else TURN_REQUESTS

    async def one_client() -> list[Sample]:
        return [await timed(client, path, body) for _ in range(each)]

    clients = await asyncio.gather(*[one_client() for _ in range(concurrency)])
    return [sample for samples in clients for sample in samples]


async def measured(
    upstream: str, target: str, case: Case, concurrency: int, requests: int, warm_up: int
) -> tuple[list[Sample], list[Sample]]:
    """The upstream's samples and the target's, `requests` of each, taken turn about after
    `warm_up` requests to each."""
    limits = httpx.Limits(max_connections=concurrency, keepalive_expiry=CLIENT_KEEPALIVE_SECONDS)
    direct: list[Sample] = []
    through: list[Sample] = []

    def client(url: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=url, limits=limits, timeout=60, verify=CLIENT_TLS)

    async with client(upstream) as straight, client(target) as proxied:
        for _ in range(warm_up):
            await timed(straight, CHAT_PATH, case.direct)
            await timed(proxied, case.path, case.body)
        while len(through) < requests:
            direct += await turn(straight, CHAT_PATH, case.direct, concurrency)
            through += await turn(proxied, case.path, case.body, concurrency)
    return direct, through


def added_ms(direct: list[Sample], through: list[Sample], stream: bool) -> tuple[float, float]:
    """p50 and p99 added (ms): to the first token for a stream, to the end for a whole answer."""

    def at(samples: list[Sample], point: int) -> float:
        values = sorted(s.first_token if stream else s.end for s in samples)
        if point == 50:
            return statistics.median(values)
        return statistics.quantiles(values, n=100, method="inclusive")[point - 1]

    return (at(through, 50) - at(direct, 50)) * 1e3, (at(through, 99) - at(direct, 99)) * 1e3


def gap_added_us(direct: list[Sample], through: list[Sample], chunks: int) -> float:
    """The median per-chunk gap of the target's streams less the upstream's (µs)."""

    def gap(samples: list[Sample]) -> float:
        return statistics.median((s.end - s.first_token) / chunks for s in samples)

    return (gap(through) - gap(direct)) * 1e6


def cold_start_seconds(upstream: str) -> float:
    """Seconds from starting the command to /readyz answering 200."""
    seconds, process = cold_start_process(upstream, free_port())
    process.terminate()
    process.wait()
    return seconds


def cold_start_process(
    upstream: str, port: int, env: dict[str, str] | None = None
) -> tuple[float, subprocess.Popen[bytes]]:
    """Start the proxy on `port` (`env` over this one's): the seconds from the command to
    /readyz answering 200, and the process, still running, for its caller to end."""
    env = {"UPSTREAM_BASE_URL": f"{upstream}/v1", **(env or {})}
    url = f"http://127.0.0.1:{port}/readyz"
    with httpx.Client(timeout=1, verify=CLIENT_TLS) as client:
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
                    if client.get(url).status_code == 200:
                        return time.perf_counter() - started, process
                except httpx.TransportError:
                    pass
                time.sleep(READY_POLL_SECONDS)
            raise RuntimeError("the proxy was not ready in time")
        except BaseException:
            process.terminate()
            process.wait()
            raise


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    [kb] = [line.split()[1] for line in status.splitlines() if line.startswith("VmRSS")]
    return int(kb) / 1024


@contextmanager
def peak_rss(pid: int, every: float = RSS_POLL_SECONDS) -> Iterator[list[float]]:
    """The largest resident size `pid` is seen at while the block runs (in the list), looked
    at `every` so many seconds."""
    peak = [rss_mb(pid)]
    done = threading.Event()

    def watch() -> None:
        while not done.wait(every):
            peak[0] = max(peak[0], rss_mb(pid))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield peak
    finally:
        done.set()
        watcher.join()


def overhead_mean_ms(proxy: str) -> float:
    """The proxy's own account: `toolcall_proxy_overhead_seconds` sum over count, in ms."""
    values = {"sum": 0.0, "count": 0.0}
    for line in httpx.get(f"{proxy}/metrics", verify=CLIENT_TLS).text.splitlines():
        for kind in values:
            if line.startswith(f"toolcall_proxy_overhead_seconds_{kind}{{"):
                values[kind] += float(line.rsplit(" ", 1)[1])
    return values["sum"] / max(values["count"], 1) * 1e3


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--requests", type=int, default=200, help="requests per row and side")
    options.add_argument("--chunks", type=int, default=100, help="prose chunks per stream")
    options.add_argument("--starts", type=int, default=5, help="cold starts to /readyz")
    options.add_argument("--concurrency", default="1,10,64", help="requests in flight")
    options.add_argument(
        "--warm-up", type=int, default=WARM_UP_REQUESTS, help="requests per row and side first"
    )
    args = options.parse_args()
    levels = [int(level) for level in args.concurrency.split(",")]
    load_before = load_average()
    ports = {name: free_port() for name in ("upstream", "proxy", "relay")}
    with server(canned_upstream_command(ports["upstream"]), ports["upstream"]) as upstream:
        starts = [cold_start_seconds(upstream.url) for _ in range(args.starts)]
        proxy_env = {"UPSTREAM_BASE_URL": f"{upstream.url}/v1", "ACCESS_LOG": "false"}
        relay_env = {"BARE_RELAY_UPSTREAM": f"{upstream.url}/v1"}
        with (
            server(proxy_command(ports["proxy"]), ports["proxy"], proxy_env) as proxy,
            server(relay_command(ports["relay"]), ports["relay"], relay_env) as relay,
        ):
            idle = rss_mb(proxy.pid)
            rows, under_streams = table(upstream, proxy, relay, levels, args)
            told = overhead_mean_ms(proxy.url)
    report(rows, levels)
    print(f"proxy's own account (overhead_seconds mean): {told:.2f} ms")
    print(f"cold start to /readyz: median {statistics.median(starts):.2f} s of {len(starts)}")
    print(f"RSS: idle {idle:.1f} MB, under {max(levels)} streams {under_streams:.1f} MB")
    print(f"load average: {load_before} before, {load_average()} after")


Row = dict[str, float]


def table(
    upstream: Server, proxy: Server, relay: Server, levels: list[int], args: argparse.Namespace
) -> tuple[dict[str, Row], float]:
    """Each case's added figures at each level; and the proxy's peak resident size while
    the most streams were in flight through it."""
    rows: dict[str, Row] = {}
    under_streams = 0.0
    chunks = args.chunks + ANSWER_CHUNKS
    for case in cases(args.chunks):
        target = relay if case.relay else proxy
        row = rows[case.name] = {}
        for level in levels:
            with peak_rss(proxy.pid) as peak:
                direct, through = asyncio.run(
                    measured(upstream.url, target.url, case, level, args.requests, args.warm_up)
                )
            if case.stream and level == max(levels) and not case.relay:
                under_streams = max(under_streams, peak[0])
            row[f"{level} p50"], row[f"{level} p99"] = added_ms(direct, through, case.stream)
            if case.stream and level == 1:
                row["gap"] = gap_added_us(direct, through, chunks)
    return rows, under_streams


def report(rows: dict[str, Row], levels: list[int]) -> None:
    columns = [f"{level} {point}" for level in levels for point in ("p50", "p99")]
    print(
        "added against the upstream itself: ms to a whole answer's end, or to a stream's "
        "first token; per-chunk gap added, µs, one stream at a time"
    )
    header = "".join(f"{'c=' + column:>10}" for column in columns)
    print(f"{'':<38}{header}{'gap µs':>10}")
    for name, row in rows.items():
        values = "".join(f"{row[column]:>+10.2f}" for column in columns)
        gap = f"{row['gap']:>+10.1f}" if "gap" in row else ""
        print(f"{name:<38}{values}{gap}")


if __name__ == "__main__":
    main()
