"""The proxy as a sidecar beside a CPU model server that takes every core: the bare relay
(`bare_relay.py`) and toolcall-proxy in front of the same instant canned upstream, in one
run, each in turn under the same load while busy processes (`while True: pass`, one per core)
hold every core.

    python bench/contention.py [--streams 64] [--seconds 60] [--client-timeout 30]
        [--tokens 256] [--busy N] [--proxy-max-connections N]

Per server: `--streams` keep-alive clients each send streamed tool-carrying chat requests
(`--tokens` chunks of prose before the canned tool call), one after another, for `--seconds`;
a request is over when its stream ends with `[DONE]` (completed), at `--client-timeout`
seconds (timed out: the client closes its connection) or on anything else (failed). req/s is
completed requests over the seconds from the first request to the last answer.

After each server's load: its upstream connections still open (the sockets of the server's
processes to the upstream's port that it has not closed, ESTABLISHED or CLOSE_WAIT), the
proxy's own `streams_in_progress` gauge, then a probe: one more stream, with a 10 s timeout,
which must answer; then the connections still held. A pool whose connections were all checked
out and never returned answers no one; short of that, they are counted so:

- first a bounded settle (`--settle`), until the upstream, which closes a keep-alive
  connection after 5 s idle (uvicorn's default), has closed every connection it answered:
  each is then readable on the server's side (its FIN, or bytes, unread);
- the probe passes through the server's httpx pool, which closes every idle connection that
  is readable or idle past its keep-alive expiry (5 s, httpx's default, and the proxy's);
- so a connection still readable after the probe is one the pool holds as in use: checked
  out and never returned ("held after probe"; the relay holds none).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Literal

import httpx
from proxy import (
    CLIENT_TLS,
    Server,
    canned_upstream_command,
    free_port,
    process_tree,
    proxy_command,
    relay_command,
    server,
    stop,
)
from versus_relay import CHAT_PATH, HEADERS, body

from service.settings import Settings

Outcome = Literal["completed", "timed out", "failed"]
# The relay's pool: httpx's default Limits(max_connections=100) (it passes none).
RELAY_POOL_MAX = 100
PROBE_TIMEOUT_SECONDS = 10.0
SETTLE_POLL_SECONDS = 0.25
# Bytes kept from the end of a stream, enough to hold its last event.
TAIL_BYTES = 64
# A busy process checks its deadline (and that this benchmark still runs) after this many
# empty iterations: a few milliseconds of plain `pass`.
BUSY_SPINS = 100_000
BUSY_LOOP = """\
import os, time
parent, end = os.getppid(), time.monotonic() + {seconds}
while time.monotonic() < end and os.getppid() == parent:
    for _ in range({spins}):
        pass
"""
# /proc/net/tcp states: connections the server has not closed on its side.
ESTABLISHED, CLOSE_WAIT = "01", "08"
SOCKET_LINK = re.compile(r"socket:\[(\d+)\]")
GAUGE = "toolcall_proxy_streams_in_progress"


@dataclass
class Load:
    """What one server's load came to."""

    counts: dict[Outcome, int] = field(
        default_factory=lambda: {"completed": 0, "timed out": 0, "failed": 0}
    )
    failures: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.counts["completed"] / self.seconds if self.seconds else 0.0


@dataclass(frozen=True)
class Sockets:
    """A server's TCP connections to the upstream that it has not closed."""

    open: int
    readable: int  # of which holding bytes or the upstream's FIN that it has not read


@dataclass
class AfterLoad:
    """A server's state once its load is over."""

    settled: Sockets  # before the probe
    in_progress: float | None  # the proxy's streams_in_progress gauge; None for the relay
    probe: Outcome
    probe_seconds: float
    held: int  # connections still readable after the probe: checked out, never returned


async def one_stream(
    client: httpx.AsyncClient, payload: bytes, timeout: float
) -> tuple[Outcome, str]:
    """One streamed request read to its end, the whole of it bounded by `timeout`; with a
    failure, what it was."""
    try:
        async with (
            asyncio.timeout(timeout),
            client.stream("POST", CHAT_PATH, content=payload, headers=HEADERS) as response,
        ):
            tail = b""
            async for chunk in response.aiter_raw():
                tail = (tail + chunk)[-TAIL_BYTES:]
    except (TimeoutError, httpx.TimeoutException):
        return "timed out", ""
    except httpx.HTTPError as error:
        return "failed", type(error).__name__
    if response.status_code != 200:
        return "failed", f"status {response.status_code}"
    if not tail.rstrip().endswith(b"data: [DONE]"):
        return "failed", "no [DONE] at the end"
    return "completed", ""


async def load(target: Server, args: argparse.Namespace) -> Load:
    """`args.streams` keep-alive clients sending one stream after another until
    `args.seconds` are over (at most `args.max_requests` in all); each stream is bounded by
    the client timeout, so the whole load ends by `seconds + client_timeout`."""
    payload = body(stream=True, prose_chunks=args.tokens)
    result = Load()
    budget = args.max_requests
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = started + args.seconds

    async def client_loop() -> None:
        nonlocal budget
        async with httpx.AsyncClient(
            base_url=target.url,
            timeout=args.client_timeout,
            limits=httpx.Limits(max_connections=1),
            verify=CLIENT_TLS,
        ) as client:
            while loop.time() < deadline and budget > 0:
                budget -= 1
                outcome, failure = await one_stream(client, payload, args.client_timeout)
                result.counts[outcome] += 1
                if failure:
                    result.failures[failure] += 1

    await asyncio.gather(*(client_loop() for _ in range(args.streams)))
    result.seconds = loop.time() - started
    return result


def upstream_sockets(target: Server, upstream_port: int) -> Sockets:
    """The TCP connections of `target`'s processes to `upstream_port` that they have not
    closed, and how many of them are readable (from /proc: each socket of the processes' file
    descriptors, found by inode in the network namespace's tables; its rx_queue counts the
    bytes not yet read, and the peer's FIN as one more until it is read)."""
    inodes = set()
    for pid in process_tree(target.pid):
        for descriptor in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):  # closed meanwhile
                if found := SOCKET_LINK.fullmatch(os.readlink(descriptor)):
                    inodes.add(found[1])
    open_, readable = 0, 0
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{target.pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            remote, state, queues, inode = fields[2], fields[3], fields[4], fields[9]
            ours = inode in inodes and int(remote.rsplit(":", 1)[1], 16) == upstream_port
            if ours and state in (ESTABLISHED, CLOSE_WAIT):
                open_ += 1
                readable += int(queues.split(":")[1], 16) > 0  # rx_queue
    return Sockets(open_, readable)


def streams_in_progress(target: Server) -> float | None:
    """The proxy's gauge of SSE answers being sent; None where there is no such metric."""
    try:
        text = httpx.get(
            f"{target.url}/metrics", timeout=PROBE_TIMEOUT_SECONDS, verify=CLIENT_TLS
        ).text
    except httpx.HTTPError:
        return None
    values = [float(line.split()[-1]) for line in text.splitlines() if line.startswith(GAUGE)]
    return sum(values) if values else None


async def after_load(
    target: Server, upstream_port: int, args: argparse.Namespace, *, has_gauge: bool
) -> AfterLoad:
    """Up to `args.settle` seconds for the upstream to close the connections it answered
    (every open one readable), the state then, one probe stream, and what is held after it."""
    loop = asyncio.get_running_loop()
    settled_by = loop.time() + args.settle
    settled = upstream_sockets(target, upstream_port)
    while settled.readable < settled.open and loop.time() < settled_by:
        await asyncio.sleep(SETTLE_POLL_SECONDS)
        settled = upstream_sockets(target, upstream_port)
    in_progress = streams_in_progress(target) if has_gauge else None
    async with httpx.AsyncClient(
        base_url=target.url, timeout=PROBE_TIMEOUT_SECONDS, verify=CLIENT_TLS
    ) as client:
        started = loop.time()
        probe, _ = await one_stream(
            client, body(stream=True, prose_chunks=args.tokens), PROBE_TIMEOUT_SECONDS
        )
        probe_seconds = loop.time() - started
    held = upstream_sockets(target, upstream_port).readable
    return AfterLoad(settled, in_progress, probe, probe_seconds, held)


@contextlib.contextmanager
def busy_processes(count: int, seconds: float) -> Iterator[list[int]]:
    """`count` processes spinning in plain Python loops until the block ends (each also
    stops by itself after `seconds`, or once this process is gone)."""
    code = BUSY_LOOP.format(seconds=seconds, spins=BUSY_SPINS)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            processes.append(subprocess.Popen([sys.executable, "-c", code]))
        yield [process.pid for process in processes]
    finally:
        for process in processes:
            stop(process)


def _stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds through every `finally`: servers, busy loops


def main() -> None:
    options = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    options.add_argument("--streams", type=int, default=64, help="concurrent clients")
    options.add_argument("--seconds", type=float, default=60, help="load per server")
    options.add_argument("--client-timeout", type=float, default=30, help="per request")
    options.add_argument("--tokens", type=int, default=256, help="prose chunks per answer")
    options.add_argument(
        "--busy", type=int, default=os.cpu_count() or 1, help="busy processes (default: cores)"
    )
    options.add_argument(
        "--settle",
        type=float,
        default=10,
        help="seconds at most for the upstream to close its idle connections (it does at 5)",
    )
    options.add_argument(
        "--max-requests", type=int, default=100_000, help="requests per server at the most"
    )
    options.add_argument(
        "--proxy-max-connections",
        type=int,
        default=Settings.model_fields["upstream_max_connections"].default,
        help="the proxy's UPSTREAM_MAX_CONNECTIONS (default: the proxy's own default)",
    )
    args = options.parse_args()
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    ports = {name: free_port() for name in ("upstream", "relay", "proxy")}
    with server(canned_upstream_command(ports["upstream"]), ports["upstream"]) as upstream:
        proxy_env = {
            "UPSTREAM_BASE_URL": f"{upstream.url}/v1",
            "UPSTREAM_MAX_CONNECTIONS": str(args.proxy_max_connections),
            "ACCESS_LOG": "false",
        }
        relay_env = {"BARE_RELAY_UPSTREAM": f"{upstream.url}/v1"}
        with (
            server(relay_command(ports["relay"]), ports["relay"], relay_env) as relay,
            server(proxy_command(ports["proxy"]), ports["proxy"], proxy_env) as proxy,
        ):
            targets = {
                "bare relay": (relay, RELAY_POOL_MAX, False),
                "toolcall-proxy": (proxy, args.proxy_max_connections, True),
            }
            # Each busy process outlives the whole run's bound by a margin, no more.
            run_bound = len(targets) * (
                args.seconds + args.client_timeout + args.settle + PROBE_TIMEOUT_SECONDS
            )
            results = {}
            with busy_processes(args.busy, run_bound + 60):
                for name, (target, _, has_gauge) in targets.items():
                    measured = asyncio.run(load(target, args))
                    state = asyncio.run(
                        after_load(target, ports["upstream"], args, has_gauge=has_gauge)
                    )
                    results[name] = (measured, state)
    report(args, {name: pool for name, (_, pool, _) in targets.items()}, results)


def report(
    args: argparse.Namespace, pools: dict[str, int], results: dict[str, tuple[Load, AfterLoad]]
) -> None:
    print(
        f"{os.cpu_count()} cores, {args.busy} busy processes; per server: {args.streams} "
        f"keep-alive clients streaming {args.tokens}-token tool-call answers for "
        f"{args.seconds:g} s ({args.client_timeout:g} s client timeout), then up to "
        f"{args.settle:g} s to settle and one probe stream ({PROBE_TIMEOUT_SECONDS:g} s timeout)"
    )
    print(
        f"{'server':<15} {'completed':>9} {'timed out':>9} {'failed':>6} {'req/s':>7} "
        f"{'vs relay':>8} {'streams in progress':>19} {'upstream conns open / pool':>26}  "
        f"{'probe after load':<21} {'held after probe':>16}"
    )
    relay_completed = results["bare relay"][0].counts["completed"]
    for name, (measured, state) in results.items():
        counts = measured.counts
        ratio = f"{counts['completed'] / relay_completed:.2f}x" if relay_completed else "-"
        in_progress = "-" if state.in_progress is None else f"{state.in_progress:.0f}"
        connections = f"{state.settled.open} / {pools[name]}"
        probe = "yes" if state.probe == "completed" else f"no ({state.probe})"
        probe += f" {state.probe_seconds:.2f} s"
        print(
            f"{name:<15} {counts['completed']:>9} {counts['timed out']:>9} "
            f"{counts['failed']:>6} {measured.rate:>7.2f} {ratio:>8} {in_progress:>19} "
            f"{connections:>26}  {probe:<21} {state.held:>16}"
        )
    for name, (measured, _) in results.items():
        if measured.failures:
            kinds = ", ".join(f"{count} {kind}" for kind, count in measured.failures.items())
            print(f"{name} failed: {kinds}")
    proxy_load, proxy_state = results["toolcall-proxy"]
    met = (
        proxy_load.counts["completed"] >= 0.9 * relay_completed
        and proxy_load.counts["timed out"] == 0
        and proxy_state.probe == "completed"
        and proxy_state.held == 0
    )
    print(
        "proxy >= 0.9x the relay's completed, 0 timed out, the probe answered and no upstream "
        f"connection held after it: {'met' if met else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
