"""What OpenTelemetry costs: the proxy with tracing off (no OTEL_* set), on (every request
sampled and exported over OTLP/HTTP to a local sink that takes and drops it), and on with
message content captured, each in front of the same instant canned upstream, in one run.

    python bench/tracing.py [--rounds 5] [--repeat 40] [--starts 5] [--baseline DIR]
        [--warm-up 20]

`--baseline DIR` adds the proxy whose code is in DIR (a checkout of an earlier commit, say)
as one more variant, tracing off: so "off" is measured against the code before it, in the
same run.

Printed per variant: milliseconds per tool-carrying request at one request at a time (the
median over rounds of each round's median), whole and streamed, and the proxy's own CPU
milliseconds per request; then the CPU time a fresh process takes to import the app and
build it. Variants take turns within each round, so a slower spell of a shared machine falls on
all of them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
from collections.abc import Awaitable, Callable
from contextlib import ExitStack

import httpx
from proxy import (
    CLIENT_TLS,
    HERE,
    UVICORN,
    Server,
    canned_upstream_command,
    free_port,
    proxy_command,
    server,
)
from versus_relay import add_warm_up_option, body, post_seconds, stream_seconds, warm_up

SINK = ["--factory", "otlp_sink:create_app", "--app-dir", str(HERE)]
CAPTURE = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
# CPU time to import the app and build it in a fresh process (a worker's start, less
# uvicorn's): steadier than wall time on a shared machine.
BUILD_APP = (
    "import time; started = time.process_time()\n"
    "from service.app import create_app\n"
    "from service.settings import Settings\n"
    "create_app(Settings(upstream_base_url='http://127.0.0.1:9/v1'))\n"
    "print(time.process_time() - started)\n"
)


def variants(sink: str, baseline: str | None) -> dict[str, dict[str, str]]:
    """Each variant's environment on top of the proxy's own."""
    on = {"OTEL_EXPORTER_OTLP_ENDPOINT": sink, "OTEL_TRACES_SAMPLER": "always_on"}
    earlier = {} if baseline is None else {"baseline": {"PYTHONPATH": baseline}}
    return earlier | {"off": {}, "on": on, "on + content": on | CAPTURE}


async def one_round(target: Server, repeat: int) -> dict[str, float]:
    """Medians (ms) of a whole and a streamed answer, and CPU ms of the proxy per request."""
    async with httpx.AsyncClient(base_url=target.url, timeout=60, verify=CLIENT_TLS) as client:
        results: dict[str, float] = {}

        async def timed(name: str, one: Callable[[], Awaitable[float]]) -> None:
            before = target.cpu_seconds()
            seconds = [await one() for _ in range(repeat)]
            results[f"{name} cpu"] = (target.cpu_seconds() - before) / repeat * 1e3
            results[name] = statistics.median(seconds) * 1e3

        whole, streamed = body(stream=False), body(stream=True)
        await timed("whole", lambda: post_seconds(client, whole))
        await timed("streamed", lambda: stream_seconds(client, streamed, whole=True))
        return results


def build_seconds(env: dict[str, str], starts: int) -> float:
    """Median CPU seconds to import and build the app in a fresh process."""
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", BUILD_APP],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for _ in range(starts)
    ]
    return statistics.median(runs)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--rounds", type=int, default=5, help="measurement rounds")
    options.add_argument("--repeat", type=int, default=40, help="requests per row and round")
    options.add_argument("--starts", type=int, default=5, help="fresh processes per variant")
    options.add_argument("--baseline", help="a directory holding earlier code of the proxy")
    add_warm_up_option(options)
    args = options.parse_args()
    upstream_port, sink_port = free_port(), free_port()
    with ExitStack() as stack:
        upstream = stack.enter_context(
            server(canned_upstream_command(upstream_port), upstream_port)
        )
        sink = stack.enter_context(server([*UVICORN, *SINK, "--port", str(sink_port)], sink_port))
        base = {"UPSTREAM_BASE_URL": f"{upstream.url}/v1", "ACCESS_LOG": "false"}
        targets = {}
        for name, env in variants(sink.url, args.baseline).items():
            port = free_port()
            targets[name] = stack.enter_context(server(proxy_command(port), port, base | env))
            asyncio.run(warm_up(targets[name], args.warm_up))
        rounds = [
            {name: asyncio.run(one_round(target, args.repeat)) for name, target in targets.items()}
            for _ in range(args.rounds)
        ]
        builds = {
            name: build_seconds(os.environ | env, args.starts)
            for name, env in variants(sink.url, args.baseline).items()
        }
    report(rounds, builds)


def report(rounds: list[dict[str, dict[str, float]]], builds: dict[str, float]) -> None:
    columns = ["whole", "streamed", "whole cpu", "streamed cpu"]
    print(f"{'ms per request, c=1':<22}" + "".join(f"{column:>14}" for column in columns))
    for name in rounds[0]:
        cells = [statistics.median(r[name][column] for r in rounds) for column in columns]
        print(f"{name:<22}" + "".join(f"{cell:>14.2f}" for cell in cells))
    print(f"{'import + build, CPU s':<22}" + "".join(f"{builds[n]:>14.3f}" for n in builds))
    print(f"{'':<22}" + "".join(f"{n:>14}" for n in builds))


if __name__ == "__main__":
    main()
