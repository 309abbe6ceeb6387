"""toolcall-proxy beside a bare re-parse relay (`bare_relay.py`: FastAPI + httpx, every SSE
chunk decoded and re-encoded, nothing else), both in front of the same instant canned
upstream, in one run. Requests carry a tool, so the proxy parses. Printed: what each adds
over the upstream alone, and the proxy's ratio to the relay.

    python bench/versus_relay.py [--workers 1] [--rounds 5] [--repeat 40] [--long-chunks 2000]
        [--concurrency 64] [--warm-up 20]

Each server runs in its own process (the proxy through its own command, so `--workers`
is the real thing); the client shares the machine, so compare within one run only. The
measurements go in rounds, each target in turn within a round, so a slower spell of a
shared machine falls on both; each row shows the median over rounds, and the median of
the rounds' own ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
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
WARM_UP_REQUESTS = 20
CONCURRENT_STREAMS = 64
RAW_READ_BYTES = 64 * 1024


def body(*, stream: bool, prose_chunks: int = 0) -> bytes:
    """A tool-carrying request; `prose_chunks` lengthens the canned stream (as max_tokens)."""
    request: dict[str, object] = {"model": "bench", "messages": MESSAGES, "tools": TOOLS}
    if stream:
        request["stream"] = True
    if prose_chunks:
        request["max_tokens"] = prose_chunks
    return json.dumps(request).encode()


async def stream_seconds(
    client: httpx.AsyncClient, payload: bytes, *, whole: bool = False
) -> float:
    """Seconds to the first body byte, or with `whole` to the end of the stream."""
    started = time.perf_counter()
    first = None
    async with client.stream("POST", CHAT_PATH, content=payload, headers=HEADERS) as response:
        async for _ in response.aiter_raw():
            first = first or time.perf_counter() - started
    return time.perf_counter() - started if whole or first is None else first


async def post_seconds(client: httpx.AsyncClient, payload: bytes) -> float:
    started = time.perf_counter()
    response = await client.post(CHAT_PATH, content=payload, headers=HEADERS)
    response.raise_for_status()
    return time.perf_counter() - started


def add_warm_up_option(options: argparse.ArgumentParser) -> None:
    """`--warm-up`: the pairs `warm_up` sends each server before it is measured."""
    options.add_argument(
        "--warm-up", type=int, default=WARM_UP_REQUESTS, help="stream and answer pairs first"
    )


async def warm_up(target: Server, pairs: int) -> None:
    """`pairs` times a short stream and a whole answer."""
    async with httpx.AsyncClient(base_url=target.url, timeout=60, verify=CLIENT_TLS) as client:
        for _ in range(pairs):
            await stream_seconds(client, body(stream=True))
            await post_seconds(client, body(stream=False))


async def sequential(target: Server, repeat: int, long_chunks: int) -> dict[str, float]:
    """One request at a time: medians of the short answer's first byte, whole stream and
    non-stream answer, and of a `long_chunks`-chunk stream; the server's CPU seconds per
    short and per long stream and per non-stream answer."""
    async with httpx.AsyncClient(base_url=target.url, timeout=60, verify=CLIENT_TLS) as client:
        short = body(stream=True)
        long = body(stream=True, prose_chunks=long_chunks)
        whole = body(stream=False)
        cpu: dict[str, float] = {}

        async def timed(name: str, count: int, one: Callable[[], Awaitable[float]]) -> float:
            before = target.cpu_seconds()
            seconds = [await one() for _ in range(count)]
            cpu[name] = (target.cpu_seconds() - before) / count
            return statistics.median(seconds)

        first_bytes = [await stream_seconds(client, short) for _ in range(repeat)]
        return {
            "first_byte": statistics.median(first_bytes),
            "short_stream": await timed(
                "short_cpu", repeat, lambda: stream_seconds(client, short, whole=True)
            ),
            "non_stream": await timed("post_cpu", repeat, lambda: post_seconds(client, whole)),
            "long_stream": await timed(
                "long_cpu", max(repeat // 20, 3), lambda: stream_seconds(client, long, whole=True)
            ),
        } | cpu


async def raw_stream(url: str, payload: bytes) -> None:
    """One request over its own connection, read to the end. Plain asyncio rather than
    httpx: with 64 streams in flight an httpx client would be the bottleneck being measured."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    head = (
        f"POST {CHAT_PATH} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n"
    )
    writer.write(head.encode() + payload)
    status_line = await reader.readline()
    if b" 200 " not in status_line:
        raise RuntimeError(f"{url} answered {status_line!r}")
    while await reader.read(RAW_READ_BYTES):
        pass
    writer.close()
    await writer.wait_closed()


async def concurrent_rate(
    target: Server, requests: int, prose_chunks: int, in_flight: int = CONCURRENT_STREAMS
) -> tuple[float, float]:
    """Streams per second with `in_flight` streams at a time, and server CPU ms per stream."""
    url = target.url
    payload = body(stream=True, prose_chunks=prose_chunks)

    async def worker(count: int) -> None:
        for _ in range(count):
            await raw_stream(url, payload)

    await asyncio.gather(*(worker(1) for _ in range(in_flight)))  # warm up
    share = max(requests // in_flight, 1)
    cpu_before = target.cpu_seconds()
    started = time.perf_counter()
    await asyncio.gather(*(worker(share) for _ in range(in_flight)))
    elapsed = time.perf_counter() - started
    streams = share * in_flight
    return streams / elapsed, (target.cpu_seconds() - cpu_before) / streams * 1e3


def peak_rss_mb(process: Server) -> float:
    """The largest peak resident size among the server process and its workers."""
    peaks = []
    for pid in process.process_tree():
        status = Path(f"/proc/{pid}/status").read_text()
        peaks += [int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM")]
    return max(peaks) / 1024


def requests_counted(url: str) -> float:
    """The proxy's chat `requests_total` summed over its label sets (and workers)."""
    text = httpx.get(f"{url}/metrics", verify=CLIENT_TLS).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("toolcall_proxy_requests_total{") and 'route="chat"' in line
    )


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--workers", type=int, default=1, help="proxy worker processes")
    options.add_argument("--rounds", type=int, default=5, help="measurement rounds")
    options.add_argument("--repeat", type=int, default=40, help="requests per row and round")
    options.add_argument("--long-chunks", type=int, default=2000, help="per-chunk row's length")
    options.add_argument(
        "--concurrent-requests", type=int, default=640, help="streams per concurrent round"
    )
    options.add_argument(
        "--concurrency", type=int, default=CONCURRENT_STREAMS, help="streams in flight at once"
    )
    options.add_argument(
        "--concurrent-chunks", type=int, default=200, help="prose chunks per concurrent stream"
    )
    add_warm_up_option(options)
    args = options.parse_args()
    ports = {name: free_port() for name in ("upstream", "proxy", "relay")}
    with (
        tempfile.TemporaryDirectory() as metrics_dir,
        server(canned_upstream_command(ports["upstream"]), ports["upstream"]) as upstream,
    ):
        proxy_env = {"UPSTREAM_BASE_URL": f"{upstream.url}/v1", "ACCESS_LOG": "false"}
        if args.workers > 1:
            proxy_env["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
        relay_env = {"BARE_RELAY_UPSTREAM": f"{upstream.url}/v1"}
        with (
            server(proxy_command(ports["proxy"], args.workers), ports["proxy"], proxy_env) as proxy,
            server(relay_command(ports["relay"]), ports["relay"], relay_env) as relay,
        ):
            targets = {"upstream": upstream, "proxy": proxy, "relay": relay}
            counted_before = requests_counted(proxy.url)
            for target in targets.values():
                asyncio.run(warm_up(target, args.warm_up))
            rounds = []
            for _ in range(args.rounds):
                results = {
                    name: asyncio.run(sequential(target, args.repeat, args.long_chunks))
                    for name, target in targets.items()
                }
                rates = {
                    name: asyncio.run(
                        concurrent_rate(
                            targets[name],
                            args.concurrent_requests,
                            args.concurrent_chunks,
                            args.concurrency,
                        )
                    )
                    for name in ("proxy", "relay")
                }
                rounds.append((results, rates))
            rss = {"proxy": peak_rss_mb(proxy), "relay": peak_rss_mb(relay)}
            counted = requests_counted(proxy.url) - counted_before
    report(args, rounds, rss, counted)


Row = tuple[str, float, float]


def round_rows(
    args: argparse.Namespace,
    results: dict[str, dict[str, float]],
    rates: dict[str, tuple[float, float]],
) -> list[Row]:
    """One round's rows: (label, proxy's value, relay's value)."""
    long_chunks = args.long_chunks

    def added(name: str, key: str) -> float:
        return results[name][key] - results["upstream"][key]

    # The long stream is the short answer plus `long_chunks` prose chunks: the difference
    # over those chunks is the cost of one more chunk, as wall time added to the upstream's
    # and as the server's own CPU time (steadier: the stages of a stream overlap in time).
    def wall_per_chunk(name: str) -> float:
        return (added(name, "long_stream") - added(name, "short_stream")) / long_chunks * 1e6

    def cpu_per_chunk(name: str) -> float:
        return (results[name]["long_cpu"] - results[name]["short_cpu"]) / long_chunks * 1e6

    return [
        ("added per streamed chunk (µs)", wall_per_chunk("proxy"), wall_per_chunk("relay")),
        ("server CPU per chunk (µs)", cpu_per_chunk("proxy"), cpu_per_chunk("relay")),
        *(
            (label, added("proxy", key) * 1e3, added("relay", key) * 1e3)
            for label, key in (
                ("time to first byte added (ms)", "first_byte"),
                ("non-stream added (ms)", "non_stream"),
            )
        ),
        *(
            (label, results["proxy"][key] * 1e3, results["relay"][key] * 1e3)
            for label, key in (
                ("server CPU per short stream (ms)", "short_cpu"),
                ("server CPU per non-stream (ms)", "post_cpu"),
            )
        ),
        (f"{args.concurrency} concurrent streams (req/s)", rates["proxy"][0], rates["relay"][0]),
        ("  server CPU per stream (ms)", rates["proxy"][1], rates["relay"][1]),
    ]


def report(
    args: argparse.Namespace,
    rounds: list[tuple[dict[str, dict[str, float]], dict[str, tuple[float, float]]]],
    rss: dict[str, float],
    counted: float,
) -> None:
    per_round = [round_rows(args, results, rates) for results, rates in rounds]
    print(
        f"proxy workers {args.workers}; {args.rounds} rounds of {args.repeat} sequential "
        f"requests per row, a {args.long_chunks}-chunk stream for the per-chunk rows, "
        f"{args.concurrency} concurrent streams of {args.concurrent_chunks} chunks + the answer"
    )
    print(f"{'':<34} {'toolcall-proxy':>15} {'bare relay':>11} {'ratio':>7}  ratio per round")
    for row, label in enumerate(label for label, _, _ in per_round[0]):
        proxy_values = [rows[row][1] for rows in per_round]
        relay_values = [rows[row][2] for rows in per_round]
        ratios = [rows[row][1] / rows[row][2] for rows in per_round]
        print(
            f"{label:<34} {statistics.median(proxy_values):>15.2f} "
            f"{statistics.median(relay_values):>11.2f} {statistics.median(ratios):>6.2f}x  "
            + " ".join(f"{ratio:.2f}" for ratio in ratios)
        )
    ratio = rss["proxy"] / rss["relay"]
    print(f"{'peak RSS (MB)':<34} {rss['proxy']:>15.2f} {rss['relay']:>11.2f} {ratio:>6.2f}x")
    upstream = [results["upstream"] for results, _ in rounds]

    def upstream_ms(key: str) -> float:
        return statistics.median(result[key] for result in upstream) * 1e3

    print(
        f"upstream alone: first byte {upstream_ms('first_byte'):.2f} ms, non-stream "
        f"{upstream_ms('non_stream'):.2f} ms, long stream {upstream_ms('long_stream'):.1f} ms"
    )
    print(f"proxy requests_total grew by {counted:.0f} (summed over its workers)")


if __name__ == "__main__":
    main()
